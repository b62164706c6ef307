"""Velocity Verlet with its array updates compiled and threaded, for a DEMSystem on the parallel path.

:class:`models.integrators.verlet.VelocityVerlet` does its updates in numpy on one core (about
4 ms of a 20 ms step at 100,000 spheres); this stepper does the same floating-point operations
in numba prange loops (:func:`models.dem.parallel.drift`, :func:`models.dem.parallel.kick`) on
the system's ``threads``, so its trajectory equals the numpy stepper's with the same forces.
Same contract: ``start(t0, q0, u0)`` then ``step(state)``; ``accel`` is called once per step at
the new time (the contact history advances inside it). Each step ends with one fused pass: its
kick, the next step's drift and the neighbour-list displacement check of the new positions
(kept in ``state.aux``), so a step is three parallel passes (this, the pair slots, the gather).
"""
from __future__ import annotations

import numpy as np

from models.integrators.verlet import VerletState


class CompiledVelocityVerlet:
    """``x1 = x + v h + a h^2/2``, forces at (x1, v + a h), ``v1 = v + (a + a1) h/2``; h = system.dt (s)."""

    name = "velocity_verlet"

    def __init__(self, system) -> None:
        if system.backend != "parallel":
            raise ValueError(f"CompiledVelocityVerlet: needs a DEMSystem on the parallel backend, got {system.backend!r}")
        self.system = system
        self.dt = system.dt
        self.n_accel = 0

    def start(self, t0: float, q0, u0) -> VerletState:
        q = np.array(q0, dtype=np.float64)
        u = np.array(u0, dtype=np.float64)
        self.n_accel += 1
        return VerletState(float(t0), q, u, self.system.accel(float(t0), q, u))

    def step(self, s: VerletState) -> VerletState:
        from models.dem.parallel import drift, kick_drift, kick_drift_serial, use_threads

        h = self.dt
        system = self.system
        nw = use_threads(system.threads)
        if "x_next" in s.aux:  # drift done by the previous step's fused pass, with its displacement check
            x1, vp, disp2 = s.aux["x_next"], s.aux["v_pred"], s.aux["disp2"]
        else:
            x1 = np.empty_like(s.x)
            vp = np.empty_like(s.v)
            drift(s.x, s.v, s.a, h, x1, vp)
            disp2 = None
        t1 = s.t + h
        a1 = system._accel_parallel(t1, x1, vp, disp2)
        self.n_accel += 1
        # this step's kick and the next step's drift in one pass; the predictor's buffer is free now
        v1 = np.empty_like(s.v)
        x2 = np.empty_like(s.x)
        st = system._par
        disp2_b = np.empty(st.pbounds.size - 1)
        (kick_drift if nw > 1 else kick_drift_serial)(s.v, s.a, a1, h, x1, system.nlist.x_ref, v1, x2, vp, st.pbounds,
                                                       disp2_b)
        return VerletState(t1, x1, v1, a1, s.step + 1, {"x_next": x2, "v_pred": vp, "disp2": float(disp2_b.max())})

    def run(self, t0: float, q0, u0, n_steps: int) -> VerletState:
        """Start and take ``n_steps`` steps."""
        s = self.start(t0, q0, u0)
        for _ in range(int(n_steps)):
            s = self.step(s)
        return s
