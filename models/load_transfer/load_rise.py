"""The shortest rise time of a force history and the refinement levels a convergence study needs for it.

Issue 33: the Kratos MPM - FE difference of the elastic stage is the energy the MPM step's particle-grid
transfers take (``kratos/transfer_energy.py`` reproduces it to 3 digits). It shrinks at first order
only once the steps resolve the load's rise. On the CFD wall loads (rise 3.1-4.0 us), the pair of levels
at 0.6 / 0.3 us steps gave orders 0.955 (AMRClaw, 5.1 steps per rise) and 1.07 (PyClaw, 6.6). The pair
at 0.3 / 0.15 us gave 1.05 and 1.21. The synthetic pulse has a 25 us rise, or 25 steps.
"""
from __future__ import annotations

import math

import numpy as np

MIN_STEPS_PER_RISE = 8.0  # steps of the coarser level of the measured pair within one rise time
MAX_LEVELS = 6


def rise_time(time: np.ndarray, force: np.ndarray) -> float:
    """max |F| / max |dF/dt| [s] of the piecewise-linear history (``time`` s, ``force`` N): the time
    the steepest segment takes to go from 0 to the peak. inf for a constant history."""
    t = np.asarray(time, dtype=np.float64)
    f = np.asarray(force, dtype=np.float64)
    if t.ndim != 1 or t.shape != f.shape or t.size < 2 or np.any(np.diff(t) < 0.0):
        raise ValueError("time, force: need matching 1-D arrays of >= 2 knots with non-decreasing time")
    dt = np.diff(t)
    df = np.diff(f)
    jump = (dt == 0.0) & (df != 0.0)
    if np.any(jump):  # a jump (repeated knot) has no finite rise time
        return 0.0
    ok = dt > 0.0
    slope = float(np.max(np.abs(df[ok] / dt[ok]))) if np.any(ok) else 0.0
    peak = float(np.max(np.abs(f)))
    return peak / slope if slope > 0.0 else math.inf


def study_levels(rise: float, dt0: float, levels: int, min_steps: float = MIN_STEPS_PER_RISE) -> int:
    """The number of levels (each halving the step of the previous, from ``dt0`` s) so that the coarser
    level of the finest pair takes >= ``min_steps`` steps within ``rise`` s; never fewer than ``levels``.
    ValueError when that needs more than MAX_LEVELS levels."""
    if not (dt0 > 0.0 and math.isfinite(dt0)):
        raise ValueError(f"dt0: must be a positive finite step in s, got {dt0!r}")
    if levels < 2:
        raise ValueError(f"levels: a study needs >= 2 levels, got {levels!r}")
    n = int(levels)
    while rise < min_steps * dt0 / 2 ** (n - 2):
        n += 1
        if n > MAX_LEVELS:
            raise ValueError(f"rise time {rise!r} s needs more than {MAX_LEVELS} levels from dt0 = {dt0!r} s")
    return n
