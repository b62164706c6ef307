"""A parabolic ring pressure transferred conservatively onto a triangle mesh of a disk.

Run from the repository root:  python examples/load_transfer/pressure_to_mesh.py
Prints the total nodal force against the closed form for three mesh resolutions and saves
the nodal loads of the finest mesh to outputs/examples/load_transfer_nodal.png.
"""
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from models.load_transfer import ConservativePressureOperator, analytic_ring_history, disk_mesh, exact_force  # noqa: E402

R, p0 = 0.05, 2.0e5  # m, Pa: p = p0 (1 - r^2/R^2)
history = analytic_ring_history(r_max=R, n_rings=40, profile="parabolic", p0=p0)
p_bar = history.pressure[0]  # exact ring averages at the first time knot, Pa
F_exact = exact_force("parabolic", p0, R)
for resolution in (4, 8, 16):
    surface = disk_mesh(radius=R, resolution=resolution, kind="tri")
    op = ConservativePressureOperator(surface, history.radial_edges)
    F = float(op.normal_force(p_bar))
    print(f"resolution {resolution:2d} ({surface.elements.shape[0]:4d} triangles): F = {F:.9e} N, "
          f"exact pi p0 R^2 / 2 = {F_exact:.9e} N, rel. error {abs(F / F_exact - 1):.1e}")

loads = op.nodal_pressure_loads(p_bar)  # N per node
out = Path(os.environ.get("HARNESS_OUTPUTS", "outputs")) / "examples"
out.mkdir(parents=True, exist_ok=True)
fig, ax = plt.subplots(figsize=(5, 4.4))
sc = ax.tripcolor(surface.nodes[:, 0], surface.nodes[:, 1], surface.elements, loads, shading="gouraud")
fig.colorbar(sc, label="nodal load [N]")
ax.set(xlabel="x [m]", ylabel="y [m]", title="conservative nodal loads", aspect="equal")
fig.tight_layout()
fig.savefig(out / "load_transfer_nodal.png", dpi=100)
print(f"figure: {out / 'load_transfer_nodal.png'}")
