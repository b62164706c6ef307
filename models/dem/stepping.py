"""Velocity Verlet with its array updates compiled and threaded, for a DEMSystem on the parallel path.

:class:`models.integrators.verlet.VelocityVerlet` does its updates in numpy on one core (about
4 ms of a 20 ms step at 100,000 spheres); this stepper does the same floating-point operations
in numba loops on the system's ``threads``, so its trajectory equals the numpy stepper's with the
same forces. Same contract: ``start(t0, q0, u0)`` then ``step(state)``; ``accel`` is called once
per step at the new time (the contact history advances inside it). Each step ends with one fused
pass: its kick, the next step's drift and the neighbour-list displacement check of the new
positions (kept in ``state.aux``), so a :meth:`~CompiledVelocityVerlet.step` is three parallel
passes (this, the pair slots, the gather) and a Python call.
:meth:`~CompiledVelocityVerlet.advance` takes many steps: those between two neighbour-list
builds in one compiled loop per thread (:mod:`models.dem.step_loop`), two passes a step (the
pair slots; the gather fused with the kick and drift), the threads staying in the loop and
meeting at a spin barrier (:mod:`models.dem.team`) instead of being woken for every pass.
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
        self._buf = None  # working arrays of advance()
        self._last = None  # (state, parity of its step) last returned by advance(): held in the working arrays

    def start(self, t0: float, q0, u0) -> VerletState:
        q = np.array(q0, dtype=np.float64)
        u = np.array(u0, dtype=np.float64)
        self.n_accel += 1
        self._buffers(q.shape)
        return VerletState(float(t0), q, u, self.system.accel(float(t0), q, u))

    def _buffers(self, shape) -> tuple:
        """Working arrays of :meth:`advance` (positions and accelerations by step parity, velocities,
        predictor), allocated and written once (page faults at the start, not inside the steps)."""
        if self._buf is None or self._buf[2].shape != tuple(shape):
            if self.system.walls:
                return None
            xbuf, abuf, v, vp = (np.empty((2,) + tuple(shape)), np.empty((2,) + tuple(shape)), np.empty(shape),
                                 np.empty(shape))
            for arr in (xbuf, abuf, v, vp):
                arr.fill(0.0)  # every page touched now, not inside the steps
            self._buf = (xbuf, abuf, v, vp)
            self._last = None
        return self._buf

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

    def advance(self, s: VerletState, n_steps: int) -> VerletState:
        """``n_steps`` steps from ``s``; the same trajectory, contacts, history and dissipated energy
        as that many :meth:`step` calls. Without walls the steps between two neighbour-list builds
        run in one compiled loop per thread (:mod:`models.dem.step_loop`, threads of
        :mod:`models.dem.team`); with walls (numpy wall forces) step by step.

        In place: the returned state's arrays are the stepper's working arrays (allocated by
        :meth:`start`), valid until the next :meth:`advance`; copy them to keep a state. Passing
        that state back continues without copying."""
        n_steps = int(n_steps)
        if self.system.walls or n_steps < 1:
            for _ in range(n_steps):
                s = self.step(s)
            return s
        return self._advance_compiled(s, n_steps)

    def _advance_compiled(self, s: VerletState, n_steps: int) -> VerletState:
        from models.dem import parallel as K
        from models.dem import team
        from models.dem.step_loop import verlet_steps

        system, h = self.system, self.dt
        N, nl = system.N, system.nlist
        xbuf, abuf, v, vp = self._buffers(s.x.shape)
        if self._last is not None and self._last[0] is s:  # continuing: the working arrays hold s
            k0 = self._last[1]
            disp2 = s.aux["disp2"]
        else:
            k0 = 0
            abuf[0] = s.a
            v[...] = s.v
            if "x_next" in s.aux:  # drift done by the previous step, with its displacement check
                xbuf[0] = s.aux["x_next"]
                vp[...] = s.aux["v_pred"]
                disp2 = s.aux["disp2"]
            else:
                K.drift(s.x, s.v, s.a, h, xbuf[0], vp)
                disp2 = None if nl.x_ref is None else float(K.max_displacement2(xbuf[0][:N], nl.x_ref, K.N_BLOCKS))
        n_threads = max(1, min(system.threads, _cores()))
        law_args = system._compiled_law_args()
        tang, mu_r = law_args[6], law_args[9]
        torque, rolling, planar = tang > 0 or mu_r > 0.0, mu_r > 0.0, system.dim == 2
        count_diss = not system.law.is_elastic or tang
        limit2 = (0.5 * nl.skin) ** 2
        sync = team.new_sync(2 * n_threads)  # a pair and a particle counter per thread (step_loop)
        t, done = s.t, 0
        while done < n_steps:
            x1 = xbuf[(k0 + done) % 2][:N]
            if nl.x_ref is None or disp2 > limit2:
                nl._build(x1)
                disp2 = 0.0
            st = system._par
            if st is None or st.n_builds != nl.n_builds:
                system._par = st = K.PairSlots.build(nl.pairs, N, nl.n_builds, st, None if st else system._hist_pp,
                                                     mu_r > 0.0)
            disp2_b = np.zeros(st.pbounds.size - 1)
            disp2_b[0] = disp2
            diss_steps = np.zeros((n_steps - done, st.bounds.size - 1))
            args = (limit2, xbuf, nl.x_ref, v, vp, abuf, system.radius, system.mass, system.inertia, system.g, planar,
                    st.pairs, st.bounds, st.pbounds, st.ptr, st.inc, h, *law_args, st.xi, st.f, st.c, st.mr, st.delta,
                    st.fn, st.fraw, st.on, st.diss_b, diss_steps, disp2_b, torque, rolling)
            sync[:] = 0
            if done == 0:  # zero steps: compiled (or loaded) before the threads start
                verlet_steps(0, 1, sync, k0, 0, *args)
            k = team.run_team(lambda tid: verlet_steps(tid, n_threads, sync, k0 + done, n_steps - done, *args),
                              n_threads, sync)
            if k < 0:
                raise RuntimeError("CompiledVelocityVerlet: the step loop was aborted")
            st.stale = True
            for row in np.sum(diss_steps[:k], axis=1) if count_diss else ():
                system.dissipated += float(row)  # step by step, as the per-step path adds
            for _ in range(k):
                t = t + h
            done += k
            self.n_accel += k
            disp2 = float(disp2_b.max())
        system._t_last = t
        k = k0 + done
        out = VerletState(t, xbuf[(k - 1) % 2], v, abuf[k % 2], s.step + n_steps,
                          {"x_next": xbuf[k % 2], "v_pred": vp, "disp2": disp2})
        self._last = (out, k % 2)
        return out

    def run(self, t0: float, q0, u0, n_steps: int) -> VerletState:
        """Start and take ``n_steps`` steps (:meth:`advance`)."""
        return self.advance(self.start(t0, q0, u0), n_steps)


def _cores() -> int:
    """Cores this process may run on (threads beyond them would only wait at the barriers)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
