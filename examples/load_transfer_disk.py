"""A user's script on the public models.load_transfer API: ring pressure onto a disk mesh.

:func:`disk_pressure_transfer` chains the library calls a user of the load-transfer model
would write (analytic ring history -> disk mesh -> conservative operator -> exact step
averages -> forces) and returns plain arrays, so that a generic case
(conf/case/examples/load_transfer_uniform.yaml) can check it from YAML alone. It mirrors
the inputs of the family case load_transfer/uniform_pressure, and the two must agree.
"""
from __future__ import annotations

from typing import Dict, Sequence

import numpy as np

from models.load_transfer.operator import ConservativePressureOperator
from models.load_transfer.sources import analytic_ring_history
from models.load_transfer.surfaces import disk_mesh
from models.load_transfer.time_average import exact_time_average, step_edges


def disk_pressure_transfer(*, p0: float, r_max: float, n_rings: int, resolution: int, dt: float, n_steps: int,
                           t0: float = 0.0, kind: str = "tri", cover: str = "circumscribe",
                           profile: str = "uniform", pulse: str = "constant",
                           pulse_times: Sequence[float] = (0.0, 1.0), amplitude: float = 1.0,
                           geometry_tolerance: float = 1e-12, quadrature_order: int = 8) -> Dict[str, np.ndarray]:
    """Transfer the analytic ring pressure (p0 [Pa] on n_rings rings of [0, r_max] m) onto a
    disk mesh of radius r_max and return, per target step [t_n, t_n+1] (t0, dt [s], n_steps):
    t_edges [s], dt [s], F_M [N] (normal force on the mesh) and F_B [N] (source force)."""
    history = analytic_ring_history(r_max=r_max, n_rings=n_rings, profile=profile, p0=p0, pulse=pulse,
                                    pulse_times=list(pulse_times), amplitude=amplitude)
    surface = disk_mesh(radius=r_max, resolution=resolution, kind=kind, cover=cover)
    operator = ConservativePressureOperator(surface, history.radial_edges, geometry_tolerance=geometry_tolerance,
                                            quadrature_order=quadrature_order)
    edges = np.asarray(step_edges(t0, dt, n_steps), dtype=np.float64)
    p_bar = exact_time_average(history.time, history.pressure, edges, unloaded_ends=history.unloaded_ends)
    return {"t_edges": edges, "dt": np.diff(edges), "F_M": operator.normal_force(p_bar),
            "F_B": operator.reference_force(p_bar)}
