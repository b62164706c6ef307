"""A steel sphere hits a nylon sphere (Hertz contact of two materials): simulation vs closed form.

Run from the repository root:  python examples/dem/impact.py
Prints contact time, peak force and maximum overlap against Hertz theory and saves the force
history to outputs/examples/dem_impact.png ($HARNESS_OUTPUTS/examples if that is set).
"""
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from models.dem import ContactLaw, Material, binary_impact, elastic_reference, incidence_velocity  # noqa: E402

steel = Material(E=210e9, nu=0.29, density=7850.0)  # Pa, -, kg/m^3
nylon = Material(E=2.5e9, nu=0.40, density=1140.0)
law = ContactLaw("hertz")
R1, R2, v = 0.005, 0.007, 1.5  # m, m, m/s

result = binary_impact(steel, R1, nylon, R2, v_n=v, law=law, record=True)
ref, (E_star, R_star, m_star) = elastic_reference(steel, R1, nylon, R2, v, law)
print(f"effective properties: E* = {E_star:.4g} Pa, R* = {R_star:.4g} m, m* = {m_star:.4g} kg")
for name, unit in (("duration", "s"), ("max_force", "N"), ("max_overlap", "m")):
    sim, exact = getattr(result, name), getattr(ref, name)
    print(f"{name:12s} simulated {sim:.6e} {unit}   Hertz {exact:.6e} {unit}   rel. error {abs(sim / exact - 1):.1e}")

v_n, v_t = incidence_velocity(2.0, 45.0)
oblique = binary_impact(steel, R1, v_n=v_n, v_t=v_t, law=ContactLaw("hertz", tangential="mindlin", friction=0.3),
                        wall_material=nylon)
print(f"45 deg on a nylon wall, mu = 0.3: tangential restitution {oblique.tangential_restitution:.4f}, "
      f"rebound angle {oblique.rebound_angle_deg:.2f} deg")

out = Path(os.environ.get("HARNESS_OUTPUTS", "outputs")) / "examples"
out.mkdir(parents=True, exist_ok=True)
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(result.series["t"] * 1e6, result.series["force"], label="DEM (velocity Verlet)")
ax.axhline(ref.max_force, ls="--", c="k", lw=0.8, label="Hertz peak force")
ax.axvline(ref.duration * 1e6, ls=":", c="k", lw=0.8, label="Hertz contact time")
ax.set(xlabel="t [µs]", ylabel="normal force [N]", title="steel on nylon, 1.5 m/s")
ax.legend()
fig.tight_layout()
fig.savefig(out / "dem_impact.png", dpi=100)
print(f"figure: {out / 'dem_impact.png'}")
