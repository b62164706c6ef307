"""A tanker turning under 20 degrees of rudder in wind: track, heading and speed loss.

Run from the repository root:  python examples/vessel/turning_circle.py [VESSEL_FILE]
VESSEL_FILE defaults to the shipped models/vessel/data/tanker.yaml; give your own vessel-v1
file (absolute, or relative to the working directory) to turn your own ship. Saves the track to
outputs/examples/vessel_track.png.
"""
import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import models.integrators as integrators  # noqa: E402
from models.vessel import build_vessel  # noqa: E402

data_file = sys.argv[1] if len(sys.argv) > 1 else "models/vessel/data/tanker.yaml"
vessel = build_vessel(data_file, wind_speed=10.0, wind_direction=0.5,
                      demands={"rotation": {"main": [[0.0, 1.2]]},               # propeller 1/s
                               "rudder": {"rudder": [[0.0, 0.0], [10.0, 0.35]]}})  # rad, ramped over 10 s
# from 5 m/s ahead (body velocities u, v, w, p, q, r), outputs every 1 s for 300 s
res = vessel.simulate(integrators.get("cvode_bdf")(rtol=1e-8, atol=1e-10), 300.0, 1.0, nu0=[5.0, 0, 0, 0, 0, 0])
x, y, psi = res.q[:, 0], res.q[:, 1], res.q[:, 5]
speed = np.hypot(res.nu[:, 0], res.nu[:, 1])
turned = np.degrees(np.unwrap(psi) - psi[0])
print(f"{data_file}: success={res.success}, heading change {turned[-1]:.1f} deg in 300 s, "
      f"track extent {np.ptp(x):.0f} m North x {np.ptp(y):.0f} m East")
print(f"speed 5.00 m/s at the start, {speed[-1]:.2f} m/s at the end; wall time {res.wall_time:.2f} s")

out = Path(os.environ.get("HARNESS_OUTPUTS", "outputs")) / "examples"
out.mkdir(parents=True, exist_ok=True)
fig, ax = plt.subplots(figsize=(5, 5))
ax.plot(y, x)
ax.set(xlabel="East [m]", ylabel="North [m]", title="turning track", aspect="equal")
fig.tight_layout()
fig.savefig(out / "vessel_track.png", dpi=100)
print(f"figure: {out / 'vessel_track.png'}")
