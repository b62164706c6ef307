"""The six-DOF vessel: (M + A) nu' = sum F in the body frame, positions in the inertial frame.

State y (12,): q = (x North, y East, z down, roll, pitch, yaw) and body velocities
nu = (u, v, w, p, q, r). The field rotates surge and sway by yaw into the inertial frame;
roll, pitch and yaw rates are the body rates (small-angle approximation, as the seed).
With ``track_work`` a 13th state integrates the power nu . F of all loads (J).

Stateful updates -- position moving average, propeller lags, rudder rate limiter, RAO
motion deltas -- are applied once per output step outside the field
(``stateful="step"``), or, as the seed's loop does, at every field evaluation
(``stateful="rhs"``), which makes the result depend on the integrator's call count.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional

import numpy as np
import scipy.linalg

from models.vessel import compiled, stepping
from models.vessel.actuators import EMA_TAU, Schedule, ema_gain, ema_step, lag_gain, lag_step, rate_limit_step
from models.vessel.data import VesselData
from models.vessel.forces import FILTER_RAO_MOTION, FILTER_WAVE_FORCE, FORCE_MODELS, Environment, ForceModel, Inputs
from models.vessel.frames import kinematics, wrap_to_pi

log = logging.getLogger(__name__)

DOF = ("x", "y", "z", "roll", "pitch", "yaw")
VEL = ("u", "v", "w", "p", "q", "r")
STATEFUL_MODES = ("step", "rhs")
SOLVE_MODES = ("auto", "whole", "window", "per_step")
HOLDS = ("linear", "zoh")
JACOBIANS = ("analytic", "none")
_ONE_INTERVAL = np.array([0.0, 1.0])  # time knots of a single held input row


def invert_total_mass(total: np.ndarray) -> np.ndarray:
    """(M + A)^-1 by a Cholesky factorisation (M + A symmetric positive definite)."""
    factor = scipy.linalg.cho_factor(total, lower=True)
    inv = scipy.linalg.cho_solve(factor, np.eye(total.shape[0]))
    return 0.5 * (inv + inv.T)


@dataclass
class Demands:
    """Actuator demands as piecewise-constant schedules ``[[t, value], ...]`` per actuator name.

    rotation (1/s, clipped to +-max_rotation), azimuth (rad), pitch_ratio, rudder (rad,
    clipped to +-max_angle). A missing actuator keeps its initial value as demand.
    """

    rotation: Dict[str, Any] = field(default_factory=dict)
    azimuth: Dict[str, Any] = field(default_factory=dict)
    pitch_ratio: Dict[str, Any] = field(default_factory=dict)
    rudder: Dict[str, Any] = field(default_factory=dict)


@dataclass
class StepState:
    """What the once-per-output-step updates carry from one step to the next."""

    inputs: Inputs
    q_avg: np.ndarray  # (6,) moving average of the position
    wf_offset: np.ndarray  # (6,) accumulated first-order wave (RAO) motion, inertial
    q_rao_prev: np.ndarray  # (6,) RAO motion at the last update (body surge/sway, heave..yaw)
    rao_amp: np.ndarray  # (6,) filtered RAO amplitude x wave amplitude
    rao_phase: np.ndarray  # (6,)
    n_updates: int = 0
    chi: float = 0.0  # rad, relative wave heading set by the last update

    def copy(self) -> "StepState":
        """An independent copy (the arrays copied)."""
        return StepState(self.inputs.copy(), self.q_avg.copy(), self.wf_offset.copy(), self.q_rao_prev.copy(),
                         self.rao_amp.copy(), self.rao_phase.copy(), self.n_updates, self.chi)


@dataclass
class VesselResult:
    """Trajectory at the output times.

    t (k,) s; q (k, 6) total position (low-frequency state + wave motion); q_lf (k, 6)
    integrated position; nu (k, 6) body velocities; q_avg (k, 6); rotation, azimuth,
    pitch_ratio (k, n_prop); rudder (k, n_rud); work (k,) J when tracked; kinematics
    (dict of (k,) arrays); stats: summed integrator counters; wall_time s.
    """

    t: np.ndarray
    q: np.ndarray
    q_lf: np.ndarray
    nu: np.ndarray
    q_avg: np.ndarray
    rotation: np.ndarray
    azimuth: np.ndarray
    pitch_ratio: np.ndarray
    rudder: np.ndarray
    work: Optional[np.ndarray]
    kinematics: Dict[str, np.ndarray]
    stats: Dict[str, float]
    wall_time: float
    success: bool = True
    failure_reason: Optional[str] = None
    stateful_updates: int = 0
    chi: Optional[np.ndarray] = None  # (k,) relative wave heading used on the step ending at t


class Vessel:
    """A vessel in an environment with its enabled loads and actuator demands.

    data       : validated :class:`VesselData`
    forces     : names of the enabled load models (see ``forces.FORCE_MODELS``)
    environment: :class:`Environment`
    demands    : :class:`Demands`
    lag_form   : ``exp`` (alpha = 1 - exp(-dt/tau)) or ``seed`` (alpha = 1/(1 + tau/dt))
    ema_tau    : s, time constant of the position moving average
    track_work : integrate the power of all loads as a 13th state
    jacobian   : ``analytic`` -- the integrators get :meth:`jac` (compiled; analytic where the
                 loads are smooth, differences where a coefficient table makes them piecewise);
                 ``none`` -- they form their own (difference quotients of the field)
    """

    def __init__(self, data: VesselData, forces: Iterable[str] = FORCE_MODELS, environment: Optional[Environment] = None,
                 demands: Optional[Demands] = None, lag_form: str = "exp", ema_tau: float = EMA_TAU,
                 track_work: bool = False, jacobian: str = "analytic"):
        self.data = data
        self.env = environment or Environment()
        self.loads = ForceModel(data, forces, self.env)
        self.inv_total_mass = invert_total_mass(data.total_mass)
        lag_gain(1.0, 1.0, lag_form)  # validates the form
        if not ema_tau > 0:
            raise ValueError(f"ema_tau: must be > 0, got {ema_tau}")
        self.lag_form, self.ema_tau, self.track_work = lag_form, float(ema_tau), bool(track_work)
        if jacobian not in JACOBIANS:
            raise ValueError(f"jacobian: must be one of {JACOBIANS}, got {jacobian!r}")
        self.jacobian = jacobian
        self.demands = demands or Demands()
        self._schedules = self._build_schedules(self.demands)
        self._inputs: Optional[Inputs] = None
        self._rhs_step: Optional[Dict[str, Any]] = None  # set in stateful="rhs" mode
        self._track: Optional[_InputTrack] = None  # set in solve_mode="whole"
        self._inplace = None  # InPlaceField over the track buffers (see _problem)
        self._inplace_views = None  # its writable (base, slope, tg) track buffers
        self.n_state = 13 if self.track_work else 12

    # -- construction helpers -------------------------------------------------------------
    def _build_schedules(self, demands: Demands) -> Dict[str, List[Optional[Schedule]]]:
        props = [p.name for p in self.data.propellers]
        ruds = [r.name for r in self.data.rudders]
        out: Dict[str, List[Optional[Schedule]]] = {}
        for kind, names in (("rotation", props), ("azimuth", props), ("pitch_ratio", props), ("rudder", ruds)):
            table = getattr(demands, kind) or {}
            unknown = sorted(set(table) - set(names))
            if unknown:
                raise ValueError(f"demands.{kind}: unknown actuator(s) {unknown}; known: {names}")
            out[kind] = [Schedule(table[n], f"demands.{kind}.{n}") if n in table else None for n in names]
        return out

    def initial_inputs(self, rotation=None, rudder=None) -> Inputs:
        """Actuator states at t0: data defaults (pitch ratio, azimuth), rotation and rudder 0 unless given."""
        props, ruds = self.data.propellers, self.data.rudders
        rot = np.zeros(len(props)) if rotation is None else np.asarray(rotation, dtype=np.float64).reshape(len(props))
        rud = np.zeros(len(ruds)) if rudder is None else np.asarray(rudder, dtype=np.float64).reshape(len(ruds))
        return Inputs(rot, np.array([p.azimuth for p in props]), np.array([p.pitch_ratio for p in props]), rud)

    # -- the field ------------------------------------------------------------------------
    def accelerations(self, t: float, q: np.ndarray, nu: np.ndarray, inputs: Inputs) -> np.ndarray:
        """Body accelerations (M + A)^-1 sum F (6,)."""
        return self.inv_total_mass @ self.loads.total(t, q, nu, inputs)

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        """Field of the ODE with the inputs of the current output step (compiled, one call)."""
        if self._rhs_step is not None:
            self._update_in_rhs(t, y)
        elif self._track is not None:
            tr = self._track
            return compiled.field(t, y, tr.base, tr.slope, tr.t_grid, tr.linear, self.inv_total_mass,
                                  *self.loads.packed)
        row = self._inputs.row()[None, :]
        return compiled.field(t, y, row, row, _ONE_INTERVAL, False, self.inv_total_mass, *self.loads.packed)

    def jac(self, t: float, y: np.ndarray) -> np.ndarray:
        """Jacobian d(rhs)/dy (n, n) with the inputs :meth:`rhs` sees at t (compiled, one call)."""
        if self._track is not None and self._rhs_step is None:
            tr = self._track
            return compiled.jacobian(t, y, tr.base, tr.slope, tr.t_grid, tr.linear, self.inv_total_mass,
                                     *self.loads.packed)
        row = self._inputs.row()[None, :]
        return compiled.jacobian(t, y, row, row, _ONE_INTERVAL, False, self.inv_total_mass, *self.loads.packed)

    def kinetic_energy(self, nu: np.ndarray) -> np.ndarray:
        """0.5 nu^T (M + A) nu (J) for nu (k, 6)."""
        nu = np.atleast_2d(nu)
        return 0.5 * np.einsum("ki,ij,kj->k", nu, self.data.total_mass, nu)

    # -- once-per-step updates ------------------------------------------------------------
    def _demand(self, kind: str, t: float, current: np.ndarray) -> np.ndarray:
        return np.array([s(t) if s is not None else c for s, c in zip(self._schedules[kind], current)])

    def advance_actuators(self, inp: Inputs, t: float, dt: float, initial: Inputs) -> None:
        """Propeller lags and rudder rate limiter over one output step, demands taken at t (s)."""
        props, ruds = self.data.propellers, self.data.rudders
        if props:
            nmax = np.array([p.max_rotation for p in props])
            rot_d = np.clip(self._demand("rotation", t, initial.rotation), -nmax, nmax)
            inp.rotation = lag_step(inp.rotation, rot_d, lag_gain(dt, [p.rotation_time for p in props], self.lag_form))
            inp.azimuth = lag_step(inp.azimuth, self._demand("azimuth", t, initial.azimuth),
                                   lag_gain(dt, [p.azimuth_time for p in props], self.lag_form))
            inp.pitch_ratio = lag_step(inp.pitch_ratio, self._demand("pitch_ratio", t, initial.pitch_ratio),
                                       lag_gain(dt, [p.pitch_time for p in props], self.lag_form))
        if ruds:
            inp.rudder = rate_limit_step(inp.rudder, self._demand("rudder", t, initial.rudder),
                                         [r.rate_limit for r in ruds], dt, np.array([r.max_angle for r in ruds]))

    def advance_filters(self, st: StepState, dt: float, q_total: np.ndarray) -> None:
        """Moving average of the position over one output step, then the wave inputs it sets."""
        st.q_avg = ema_step(st.q_avg, q_total, ema_gain(dt, self.ema_tau))
        self._wave_inputs(st)
        st.n_updates += 1

    def _wave_inputs(self, st: StepState) -> None:
        zeta = self.env.wave_amplitude
        chi = wrap_to_pi(self.env.wave_direction - st.q_avg[5])
        famp, fph, ramp, rph = self.data.waves.at(chi)
        on = 1.0 if "waves" in self.loads.enabled else 0.0
        st.inputs.wave_force_amp = zeta * famp * FILTER_WAVE_FORCE * on
        st.inputs.wave_force_phase = fph
        st.rao_amp = zeta * ramp * FILTER_RAO_MOTION * on
        st.rao_phase = rph
        st.chi = chi

    def rao_motion(self, st: StepState, t: float) -> np.ndarray:
        """First-order wave motion (6,) at t from the current RAO amplitude and phase."""
        return st.rao_amp * np.cos(self.data.waves.frequency * t + st.rao_phase)

    def apply_rao(self, st: StepState, t: float, psi: float) -> None:
        """Add the RAO delta since the last update; surge and sway rotated by yaw psi (rad)."""
        q_new = self.rao_motion(st, t)
        d = q_new - st.q_rao_prev
        c, s = math.cos(psi), math.sin(psi)
        st.wf_offset[0] += c * d[0] - s * d[1]
        st.wf_offset[1] += s * d[0] + c * d[1]
        st.wf_offset[2:] += d[2:]
        st.q_rao_prev = q_new

    def _update_in_rhs(self, t: float, y: np.ndarray) -> None:
        """The seed's loop: every field call advances the stateful models by one output step."""
        ctx = self._rhs_step
        st: StepState = ctx["state"]
        q_total = y[:6] + st.wf_offset
        self.advance_actuators(st.inputs, t, ctx["dt"], ctx["initial"])
        self.advance_filters(st, ctx["dt"], q_total)
        self.apply_rao(st, t, q_total[5])
        self._inputs = st.inputs

    # -- simulation -----------------------------------------------------------------------
    def simulate(self, integrator: Any, t_end: float, dt: float, q0=None, nu0=None, t0: float = 0.0,
                 stateful: str = "step", solve_mode: str = "auto", hold: str = "linear", q_avg0=None,
                 rotation0=None, rudder0=None, max_passes: int = 20, pass_tol: float = 1.0e-9,
                 window: int = 20) -> VesselResult:
        """Integrate from t0 to t_end with output (and update) interval dt (s).

        integrator : object with ``solve(ODEProblem, t_eval) -> Solution`` (models.integrators)
        q0, nu0    : initial positions and body velocities (6,) (default 0)
        q_avg0     : initial moving average (default q0)
        rotation0, rudder0 : initial propeller rotation (1/s) and rudder angle (rad)
        stateful   : ``step`` -- the stateful models are updated once per output step,
                     outside the field; ``rhs`` -- the seed's loop: at every field call
                     (always one solve per output step, inputs as updated last)
        hold       : how the field sees the inputs between the updates at t_n and t_n+1:
                     ``linear`` -- interpolated between the two (continuous loads);
                     ``zoh`` -- the value after the update, held (the seed's order)
        solve_mode : ``per_step`` -- one solve per output step (integrator restarted);
                     ``whole`` -- one solve over the grid. The actuators do not depend
                     on the state and are updated first; the wave heading follows the
                     moving average of the yaw, so the whole-grid solve is repeated with
                     the headings of the previous pass until they change by less than
                     ``pass_tol`` rad (the causal fixed point: the ``per_step`` trajectory
                     up to the integrator tolerance; the passes grow with the horizon);
                     ``window`` -- the same on windows of ``window`` output steps, each
                     started from the headings extrapolated from the last window;
                     ``auto`` -- ``window`` when wave loads act, else ``whole``.
        """
        if stateful not in STATEFUL_MODES:
            raise ValueError(f"stateful: must be one of {STATEFUL_MODES}, got {stateful!r}")
        if solve_mode not in SOLVE_MODES:
            raise ValueError(f"solve_mode: must be one of {SOLVE_MODES}, got {solve_mode!r}")
        if hold not in HOLDS:
            raise ValueError(f"hold: must be one of {HOLDS}, got {hold!r}")
        if not (dt > 0 and t_end > t0):
            raise ValueError(f"dt: must be > 0 and t_end > t0, got dt={dt}, t0={t0}, t_end={t_end}")
        n_out = int(round((t_end - t0) / dt))
        if abs(n_out * dt - (t_end - t0)) > 1e-9 * max(1.0, t_end - t0):
            raise ValueError(f"t_end - t0 = {t_end - t0} s must be a whole number of output steps dt = {dt} s")
        t_grid = t0 + dt * np.arange(n_out + 1)
        y0 = np.zeros(self.n_state)
        if q0 is not None:
            y0[:6] = np.asarray(q0, dtype=np.float64)
        if nu0 is not None:
            y0[6:12] = np.asarray(nu0, dtype=np.float64)
        initial = self.initial_inputs(rotation0, rudder0)
        qa0 = y0[:6].copy() if q_avg0 is None else np.asarray(q_avg0, dtype=np.float64).reshape(6).copy()
        if solve_mode == "auto":
            waves_on = "waves" in self.loads.enabled and self.env.wave_amplitude > 0
            solve_mode = "window" if waves_on else "whole"
        start = time.perf_counter()
        stats: Dict[str, float] = {"nfev": 0, "njev": 0, "n_steps": 0, "n_solves": 0, "passes": 0}
        try:
            if stateful == "rhs" or solve_mode == "per_step":
                out = self._run_per_step(integrator, t_grid, y0, initial, qa0, stateful, hold, stats)
            else:
                out = self._run_whole(integrator, t_grid, y0, initial, qa0, hold, stats, max_passes, pass_tol,
                                      window if solve_mode == "window" else None)
        finally:
            self._rhs_step = None
            self._track = None
        rec, st, ok, reason, last = out
        wall = time.perf_counter() - start
        sl = slice(0, last + 1)
        q = rec["q_lf"][sl] + rec["wf"][sl]
        res = VesselResult(t_grid[sl], q, rec["q_lf"][sl], rec["nu"][sl], rec["q_avg"][sl], rec["rot"][sl],
                           rec["az"][sl], rec["pd"][sl], rec["rud"][sl],
                           rec["work"][sl] if self.track_work else None, kinematics(q, rec["nu"][sl]), stats, wall,
                           ok, reason, st.n_updates, rec["chi"][sl])
        if not ok:
            log.warning("vessel simulation failed: %s", reason)
        return res

    def _new_state(self, initial: Inputs, qa0: np.ndarray, t0: float) -> StepState:
        st = StepState(initial.copy(), qa0.copy(), np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6))
        self._wave_inputs(st)
        st.q_rao_prev = self.rao_motion(st, t0)
        return st

    def _records(self, n: int) -> Dict[str, np.ndarray]:
        n_p, n_r = len(self.data.propellers), len(self.data.rudders)
        shapes = {"q_lf": 6, "nu": 6, "wf": 6, "q_avg": 6, "rot": n_p, "az": n_p, "pd": n_p, "rud": n_r,
                  "wamp": 6, "wph": 6}
        rec = {k: np.full((n, w), np.nan) for k, w in shapes.items()}
        rec["work"] = np.full(n, np.nan)
        rec["chi"] = np.full(n, np.nan)
        return rec

    def _record(self, rec, i: int, y: Optional[np.ndarray], st: StepState) -> None:
        """Store the inputs (knot i) and, when given, the state at output i."""
        inp = st.inputs
        rec["q_avg"][i], rec["wf"][i], rec["chi"][i] = st.q_avg, st.wf_offset, st.chi
        rec["rot"][i], rec["az"][i], rec["pd"][i], rec["rud"][i] = inp.rotation, inp.azimuth, inp.pitch_ratio, inp.rudder
        rec["wamp"][i], rec["wph"][i] = inp.wave_force_amp, inp.wave_force_phase
        if y is not None:
            rec["q_lf"][i], rec["nu"][i] = y[:6], y[6:12]
            if self.track_work:
                rec["work"][i] = y[12]

    def _problem(self, y: np.ndarray, t_a: float, t_b: float):
        from models.integrators.base import ODEProblem

        jac = self.jac if self.jacobian == "analytic" else None
        inplace = self._inplace_field() if self._track is not None and self._rhs_step is None else None
        return ODEProblem(self.rhs, y, (t_a, t_b), jac=jac, names=self.state_names(), inplace=inplace)

    def _inplace_field(self):
        """:meth:`rhs` and :meth:`jac` as compiled in-place callables (what CVODE calls without a
        Python wrapper), reading the current input track from buffers that keep their identity
        from window to window (so the solver is set up once); larger buffers when a track outgrows them."""
        from models.integrators.base import InPlaceField

        tr = self._track
        n, width = tr.n, tr.base.shape[1]
        fast = self._inplace
        if fast is None or self._inplace_views[0].shape[0] < n or self._inplace_views[0].shape[1] != width:
            data, self._inplace_views = compiled.pack(n, width, self.inv_total_mass, *self.loads.packed)
            fast = self._inplace = InPlaceField(compiled.field_into,
                                                compiled.jacobian_into if self.jacobian == "analytic" else None, data)
        base, slope, tg = self._inplace_views
        base[:n], slope[:n], tg[:n + 1] = tr.base, tr.slope, tr.t_grid
        ib = fast.data[1]
        ib[0], ib[1] = n, 1 if tr.linear else 0
        return fast

    def _run_per_step(self, integrator, t_grid, y0, initial, qa0, stateful, hold, stats):
        n_out = t_grid.size - 1
        dt = t_grid[1] - t_grid[0]
        st = self._new_state(initial, qa0, t_grid[0])
        self._inputs = st.inputs
        rec = self._records(n_out + 1)
        self._record(rec, 0, y0, st)
        if stateful == "rhs":
            self._rhs_step = {"state": st, "dt": dt, "initial": initial}
        y, ok, reason, last = y0, True, None, 0
        for i in range(n_out):
            if stateful == "step":
                self.advance_actuators(st.inputs, t_grid[i], dt, initial)
                self.advance_filters(st, dt, y[:6] + st.wf_offset)
                self._record(rec, i + 1, None, st)
                self._track = _InputTrack(t_grid[i:i + 2], {k: rec[k][i:i + 2] for k in _KNOTS}, hold)
            sol = integrator.solve(self._problem(y, t_grid[i], t_grid[i + 1]), [t_grid[i + 1]])
            self._add_stats(stats, sol)
            if not sol.success:
                ok, reason = False, f"t={t_grid[i]:.6g} s: {sol.failure_reason}"
                break
            y = sol.y[-1]
            if stateful == "step":
                self.apply_rao(st, t_grid[i + 1], y[5] + st.wf_offset[5])
            self._record(rec, i + 1, y, st)
            last = i + 1
        stats["passes"] = 1
        return rec, st, ok, reason, last

    def _run_whole(self, integrator, t_grid, y0, initial, qa0, hold, stats, max_passes, pass_tol, window):
        """Whole-grid (or windowed) solves; see :meth:`simulate` (solve_mode whole / window)."""
        n_out = t_grid.size - 1
        dt = t_grid[1] - t_grid[0]
        rec = self._records(n_out + 1)
        # actuator knots (state independent): knot i+1 = after the update of step i
        st = self._new_state(initial, qa0, t_grid[0])
        self._record(rec, 0, y0, st)
        self._actuator_knots(rec, st, t_grid, dt, initial)
        waves_on = "waves" in self.loads.enabled and self.env.wave_amplitude > 0
        st = self._new_state(initial, qa0, t_grid[0])
        st.inputs = _inputs_at(rec, 0)
        y, ok, reason, a = y0.copy(), True, None, 0
        width = n_out if (window is None or not waves_on) else max(1, int(window))
        stats["windows"] = 0
        while a < n_out and ok:
            b = min(n_out, a + width)
            self._guess_wave_knots(rec, a, b)
            for p in range(max_passes):
                chi_used = rec["chi"][a + 1:b + 1].copy()
                self._track = _InputTrack(t_grid[a:b + 1], {k: rec[k][a:b + 1] for k in _KNOTS}, hold)
                sol = integrator.solve(self._problem(y, t_grid[a], t_grid[b]), t_grid[a:b + 1])
                self._add_stats(stats, sol)
                stats["passes"] += 1
                if not sol.success:
                    ok, reason = False, f"t in [{t_grid[a]:.6g}, {t_grid[b]:.6g}] s: {sol.failure_reason}"
                # once-per-step filters and RAO motion along the trajectory; they set the wave knots
                trial = st.copy()
                ys = sol.y
                last = a + len(ys) - 1
                self._filters_window(trial, rec, ys, a, last, t_grid, dt)
                change = float(np.max(np.abs(rec["chi"][a + 1:last + 1] - chi_used[:last - a]))) if last > a else 0.0
                if not ok or not waves_on or change <= pass_tol:
                    if waves_on:  # a wave-heading residual means nothing in calm water: not recorded
                        stats["chi_change"] = max(stats.get("chi_change", 0.0), change)
                    break
            else:
                ok, reason = False, f"wave headings did not settle to {pass_tol} rad in {max_passes} passes"
            stats["windows"] += 1
            st, y, a = trial, ys[-1].copy(), last
            if last < b:
                break
        return rec, st, ok, reason, a

    def _actuator_knots(self, rec, st: StepState, t_grid: np.ndarray, dt: float, initial: Inputs) -> None:
        """:meth:`advance_actuators` and the records of knots 1..n for every output step at once
        (the actuators do not depend on the state): demands sampled at t_0..t_n-1, then the lags
        and the rate limiter as compiled recurrences (:mod:`models.vessel.stepping`)."""
        n_out = t_grid.size - 1
        rows = slice(1, n_out + 1)
        rec["q_avg"][rows], rec["wf"][rows], rec["chi"][rows] = st.q_avg, st.wf_offset, st.chi
        rec["wamp"][rows], rec["wph"][rows] = st.inputs.wave_force_amp, st.inputs.wave_force_phase
        t = t_grid[:-1]
        props, ruds, inp = self.data.propellers, self.data.rudders, st.inputs

        def demand(kind, current):
            return np.column_stack([np.broadcast_to(s(t), t.shape) if s is not None else np.full(t.size, c)
                                    for s, c in zip(self._schedules[kind], current)]).astype(np.float64)

        if props:
            nmax = np.array([p.max_rotation for p in props])
            for kind, key, taus, d in (
                    ("rotation", "rot", [p.rotation_time for p in props],
                     np.clip(demand("rotation", initial.rotation), -nmax, nmax)),
                    ("azimuth", "az", [p.azimuth_time for p in props], demand("azimuth", initial.azimuth)),
                    ("pitch_ratio", "pd", [p.pitch_time for p in props], demand("pitch_ratio", initial.pitch_ratio))):
                out = np.empty((n_out, len(props)))
                stepping.lag_series(np.asarray(getattr(inp, kind), dtype=np.float64), np.ascontiguousarray(d),
                                    np.asarray(lag_gain(dt, taus, self.lag_form), dtype=np.float64), out)
                rec[key][rows] = out
        if ruds:
            out = np.empty((n_out, len(ruds)))
            stepping.rate_limit_series(np.asarray(inp.rudder, dtype=np.float64),
                                       np.ascontiguousarray(demand("rudder", initial.rudder)),
                                       np.array([r.rate_limit for r in ruds]) * dt,
                                       np.array([r.max_angle for r in ruds]), out)
            rec["rud"][rows] = out

    def _filters_window(self, st: StepState, rec, ys: np.ndarray, a: int, last: int, t_grid: np.ndarray,
                        dt: float) -> None:
        """:meth:`advance_filters`, :meth:`apply_rao` and the records for output steps a+1..last of
        a solved window (states ``ys``), in one compiled call (:mod:`models.vessel.stepping`)."""
        m = last - a
        if m <= 0:
            return
        waves = self.data.waves
        out = {k: np.empty((m, 6)) for k in ("q_avg", "wf", "wamp", "wph")}
        chi = np.empty(m)
        rao = np.empty((2, 6))
        ys = np.ascontiguousarray(ys, dtype=np.float64)
        stepping.filters_pass(ys, np.ascontiguousarray(t_grid[a + 1:last + 1]), ema_gain(dt, self.ema_tau),
                              float(self.env.wave_direction), float(self.env.wave_amplitude),
                              1.0 if "waves" in self.loads.enabled else 0.0, float(waves.frequency), waves.heading,
                              waves._stack, FILTER_WAVE_FORCE, FILTER_RAO_MOTION, st.q_avg, st.wf_offset,
                              st.q_rao_prev, out["q_avg"], out["wf"], out["wamp"], out["wph"], chi, rao)
        rows = slice(a + 1, last + 1)
        rec["q_avg"][rows], rec["wf"][rows], rec["chi"][rows] = out["q_avg"], out["wf"], chi
        rec["wamp"][rows], rec["wph"][rows] = out["wamp"], out["wph"]
        rec["q_lf"][rows], rec["nu"][rows] = ys[1:m + 1, :6], ys[1:m + 1, 6:12]
        if self.track_work:
            rec["work"][rows] = ys[1:m + 1, 12]
        st.inputs = _inputs_at(rec, last)
        st.rao_amp, st.rao_phase, st.chi = rao[0].copy(), rao[1].copy(), float(chi[-1])
        st.n_updates += m

    def _guess_wave_knots(self, rec, a: int, b: int) -> None:
        """Wave-heading knots a+1..b extrapolated linearly from the last two, and their wave inputs."""
        if not ("waves" in self.loads.enabled and self.env.wave_amplitude > 0):
            return
        slope = rec["chi"][a] - rec["chi"][a - 1] if a >= 1 else 0.0
        chi = rec["chi"][a] + slope * np.arange(1, b - a + 1)
        rec["chi"][a + 1:b + 1] = chi
        wamp, wph = np.empty((chi.size, 6)), np.empty((chi.size, 6))
        stepping.wave_knots(np.ascontiguousarray(chi, dtype=np.float64), self.data.waves.heading,
                            self.data.waves._stack, float(self.env.wave_amplitude), FILTER_WAVE_FORCE, wamp, wph)
        rec["wamp"][a + 1:b + 1], rec["wph"][a + 1:b + 1] = wamp, wph

    def state_names(self) -> List[str]:
        return list(DOF) + list(VEL) + (["work"] if self.track_work else [])

    @staticmethod
    def _add_stats(stats: Dict[str, float], sol: Any) -> None:
        s = sol.stats
        stats["nfev"] += s.nfev
        stats["njev"] += s.njev
        # an integrator that does not count its steps (CVODE in CV_NORMAL mode) gives NaN, not 0
        missing = "n_steps" in (sol.diagnostics or {}).get("not_reported", ())
        stats["n_steps"] += math.nan if missing else s.n_steps
        stats["n_solves"] += 1


class _InputTrack:
    """Inputs between the knots of the output grid: linear interpolation or zero-order hold.

    On (t_i, t_i+1] the field sees knot_i + theta (knot_i+1 - knot_i), theta = (t - t_i)/dt
    (``linear``), or knot_i+1, the value after the update of step i (``zoh``).
    """

    def __init__(self, t_grid: np.ndarray, knots: Mapping[str, np.ndarray], hold: str):
        self.t_grid, self.linear = t_grid, hold == "linear"
        self.n = t_grid.size - 1
        self.t0, self.dt = float(t_grid[0]), float(t_grid[1] - t_grid[0])
        stacked = np.hstack([knots[name] for name in _KNOTS])
        self.base = stacked[:-1] if self.linear else stacked[1:]
        self.slope = np.diff(stacked, axis=0)
        widths = [knots[name].shape[1] for name in _KNOTS]
        self.cuts = np.cumsum([0] + widths)
        self._last = -1
        self._zoh: Optional[Inputs] = None
        self._tg = t_grid.tolist()

    def _split(self, row: np.ndarray) -> Inputs:
        c = self.cuts
        return Inputs(*(row[c[j]:c[j + 1]] for j in range(len(_KNOTS))))

    def at(self, t: float) -> Inputs:
        tg = self._tg
        i = int(math.ceil((t - self.t0) / self.dt)) - 1
        i = 0 if i < 0 else (self.n - 1 if i >= self.n else i)
        if i > 0 and t <= tg[i]:  # rounding at a knot: t_i belongs to the interval ending there
            i -= 1
        elif i < self.n - 1 and t > tg[i + 1]:
            i += 1
        if not self.linear:
            if i != self._last:
                self._zoh = self._split(self.base[i])
                self._last = i
            return self._zoh
        return self._split(self.base[i] + ((t - tg[i]) / self.dt) * self.slope[i])


_KNOTS = ("rot", "az", "pd", "rud", "wamp", "wph")


def _inputs_at(rec: Mapping[str, np.ndarray], i: int) -> Inputs:
    """The inputs of knot i as an :class:`Inputs` (copies)."""
    return Inputs(*(rec[k][i].copy() for k in _KNOTS))
