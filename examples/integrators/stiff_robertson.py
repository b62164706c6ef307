"""The stiff ROBER kinetics solved by CVODE BDF and ROS2 (adaptive), against the reference.

Run from the repository root:  python examples/integrators/stiff_robertson.py
Prints the significant correct digits and the work of each integrator and saves the
concentrations over t = 0 .. 1e11 s to outputs/examples/robertson.png.
"""
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from models.integrators import get, get_problem  # noqa: E402

tp = get_problem("rober")
t_plot = np.concatenate([[0.0], np.logspace(-5, 11, 60)])
fig, ax = plt.subplots(figsize=(6, 4))
for name in ("cvode_bdf", "ros2_adaptive"):
    solver = get(name)(rtol=1e-6, atol=1e-10)  # every other option: get(name).defaults
    sol = solver.solve(tp.problem, tp.t_eval)
    y_ref = tp.reference_at_end()
    keep = np.abs(y_ref) > tp.scd_floor
    scd = -np.log10(np.max(np.abs(sol.y[-1][keep] - y_ref[keep]) / np.abs(y_ref[keep])))
    print(f"{name:14s} success={sol.success}  scd={scd:.2f}  steps={sol.stats.n_steps}  nfev={sol.stats.nfev}  "
          f"njev={sol.stats.njev}")
curve = get("cvode_bdf")(rtol=1e-6, atol=1e-10).solve(tp.problem, t_plot)
for k, style in zip(range(3), ("-", "--", ":")):
    scale = 1e4 if k == 1 else 1.0
    ax.semilogx(t_plot[1:], curve.y[1:, k] * scale, style, label=f"y{k + 1}" + (" x 1e4" if k == 1 else ""))
ax.set(xlabel="t [s]", ylabel="concentration", title="ROBER (Hairer & Wanner), CVODE BDF")
ax.legend(fontsize=7)
out = Path(os.environ.get("HARNESS_OUTPUTS", "outputs")) / "examples"
out.mkdir(parents=True, exist_ok=True)
fig.tight_layout()
fig.savefig(out / "robertson.png", dpi=100)
print(f"figure: {out / 'robertson.png'}")
