"""Sliding beam: labelled modes of the full and the reduced (global POD) model, and a short run.

Run from the repository root:  python examples/beam/modes_and_reduction.py
Prints the lowest bending frequencies of both models and the tip RMS difference of a 0.5 s
simulation, and saves the tip histories to outputs/examples/beam_tip.png.
"""
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from models.beam import BeamSpec, GlobalPODReductor, LoadSpec, ProblemSpec, SliderSpec, make_problem, time_grid  # noqa: E402

spec = ProblemSpec(BeamSpec(length=2.0, n_elements=20, youngs_modulus=2.1e11, density=7850.0,
                            area=1e-4, second_moment=2e-10),
                   SliderSpec("sinusoidal", center=1.1, amplitude=0.6, frequency=1.0),
                   LoadSpec(amplitudes=(5.0,), frequencies=(3.0,), position=2.0))
problem = make_problem(spec)
t_end, dt = 0.5, 1e-3
basis = GlobalPODReductor(n_snap=5, r_snap=6, r_glob=20).build(problem, time_grid(t_end, dt))

full = problem.full_modes(6)  # every kind, labelled
print("full model, 6 lowest modes:", ", ".join(f"{f:.3f} Hz ({k})" for f, k in zip(full.frequencies_hz, full.kind)))
fb = problem.full_modes(4, kind="bending").frequencies_hz
rb = problem.reduced_modes(basis, 4, kind="bending").frequencies_hz
for i, (a, b) in enumerate(zip(fb, rb), 1):
    print(f"bending mode {i}: full {a:9.4f} Hz   reduced (r = {basis.r_glob}) {b:9.4f} Hz   rel. diff {b / a - 1:.2e}")

res_full = problem.simulate(t_end, dt)
res_red = problem.simulate(t_end, dt, basis=basis)
rms = np.sqrt(np.mean((res_red.tip - res_full.tip) ** 2)) / np.sqrt(np.mean(res_full.tip ** 2))
print(f"tip RMS difference reduced vs full over {t_end} s: {rms:.3e}")

out = Path(os.environ.get("HARNESS_OUTPUTS", "outputs")) / "examples"
out.mkdir(parents=True, exist_ok=True)
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(res_full.t, res_full.tip * 1e3, label=f"full ({problem.beam.ndof} DOF)")
ax.plot(res_red.t, res_red.tip * 1e3, "--", label=f"reduced (r = {basis.r_glob})")
ax.set(xlabel="t [s]", ylabel="tip deflection [mm]", title="sliding beam")
ax.legend()
fig.tight_layout()
fig.savefig(out / "beam_tip.png", dpi=100)
print(f"figure: {out / 'beam_tip.png'}")
