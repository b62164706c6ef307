"""Adapter of the vessel family (seed 002): six-DOF manoeuvring model on CVODE BDF.

``run`` dispatches on ``case.params.check``; every check compares the model with a closed
form (see models/vessel/reference.py). ``bench`` times a long manoeuvre with cvode_bdf and
scipy BDF on the same field in the same run.

case.params:
  check: frames | circle | spinning | surge_linear | surge_quadratic | heave_decay |
         rudder_ramp | propeller_lag | ema_step | static_wind | energy | cross_check |
         stateful_in_rhs
  sim:   t_end, dt (s, output and update interval), q0, nu0 (6 values), rotation0,
         rudder0 (per actuator), q_avg0, stateful (step|rhs), solve_mode
         (auto|whole|window|per_step), hold (linear|zoh), window (output steps), pass_tol (rad),
         max_passes
  plus check-specific fields documented in each function.
The vessel comes from the ``source`` group (conf/source/vessel_*.yaml), the integrator
from the ``integrator`` group; further integrators (cross_check, bench) from the registry.
"""
from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List

import numpy as np
from omegaconf import DictConfig, OmegaConf

from harness.core.configs import store_schema
from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.core.warmup import WarmUp
from harness.families.metric_kinds import VESSEL as METRIC_KINDS  # noqa: F401 - read by the runner
from harness.metrics import library as M

log = logging.getLogger(__name__)


@dataclass
class VesselSourceConf:
    """``source`` option of the vessel family: data file, loads, environment, demands (SI, rad)."""

    _target_: str = "models.vessel.build.build_vessel"
    data_file: str = "models/vessel/data/tanker.yaml"  # relative to the project root
    data_overrides: Dict[str, Any] = field(default_factory=dict)  # dotted keys of the data file
    forces: List[str] = field(default_factory=lambda: ["restoring", "linear_damping", "quadratic_damping",
                                                       "coriolis", "current", "wind", "propellers", "rudders",
                                                       "waves"])
    lag_form: str = "exp"  # exp: 1 - exp(-dt/tau) | seed: 1/(1 + tau/dt)
    ema_tau: float = 16.5  # s
    current_speed: float = 0.0  # m/s
    current_direction: float = 0.0  # rad, flows to (0 North, clockwise)
    wind_speed: float = 0.0  # m/s
    wind_direction: float = 0.0  # rad, comes from
    wave_amplitude: float = 0.0  # m
    wave_direction: float = 0.0  # rad, come from
    demands: Dict[str, Any] = field(default_factory=dict)  # rotation|azimuth|pitch_ratio|rudder -> {name: [[t, v]]}
    track_work: bool = False
    jacobian: str = "analytic"  # analytic: the compiled Jacobian to the integrators | none: their difference quotients


store_schema("source_vessel", VesselSourceConf)

SIM_KEYS = ("t_end", "dt", "q0", "nu0", "rotation0", "rudder0", "q_avg0", "stateful", "solve_mode", "hold", "window",
            "pass_tol", "max_passes")


# -- helpers ----------------------------------------------------------------------------------
def _params(cfg: DictConfig) -> Dict[str, Any]:
    p = OmegaConf.select(cfg, "case.params")
    out = OmegaConf.to_container(p, resolve=True) if isinstance(p, DictConfig) else p
    if not isinstance(out, dict):
        raise HarnessInputError("case.params: must be a mapping with at least `check`")
    return out


def _vessel(cfg: DictConfig, **changes: Any):
    """Instantiate the source; model errors become HarnessInputError naming the field."""
    from hydra.utils import instantiate

    from models.vessel.schema import VesselDataError

    if cfg.source is None or OmegaConf.select(cfg, "source._target_") is None:
        raise HarnessInputError("source: choose a vessel source (e.g. source=vessel_tanker)")
    try:
        return instantiate(cfg.source, _convert_="all", **changes)
    except Exception as exc:  # hydra wraps the model's error
        cause = exc
        while cause.__cause__ is not None:
            cause = cause.__cause__
        if isinstance(cause, (VesselDataError, ValueError, TypeError)):
            raise HarnessInputError(f"source: {cause}") from cause
        raise


def _integrator(cfg: DictConfig, **changes: Any):
    """Instantiate the integrator group's choice.

    ``case.params.solver`` holds the case's solver settings (the seed's: rtol 1e-8, atol 1e-10,
    max_num_steps 10,000); each is applied when the chosen integrator has that option, so
    any integrator of the group can be chosen (``integrator=scipy_radau``). Override them
    with ``case.params.solver.rtol=...``.
    """
    from hydra.utils import instantiate

    if cfg.integrator is None or OmegaConf.select(cfg, "integrator._target_") is None:
        raise HarnessInputError("integrator: choose an integrator option (e.g. integrator=cvode_bdf)")
    solver = OmegaConf.select(cfg, "case.params.solver")
    solver = OmegaConf.to_container(solver, resolve=True) if isinstance(solver, DictConfig) else (solver or {})
    if not isinstance(solver, dict):
        raise HarnessInputError("case.params.solver: must be a mapping of integrator options")
    kw = {k: v for k, v in solver.items() if k in cfg.integrator}
    kw.update(changes)
    try:
        return instantiate(cfg.integrator, **kw)
    except Exception as exc:
        raise HarnessInputError(f"integrator: {exc}") from exc


def _registry_integrator(spec: Any, where: str):
    """An integrator from the registry: ``{name: cvode_bdf, <options>}``."""
    import models.integrators as integrators

    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise HarnessInputError(f"{where}: must be a mapping with `name` and integrator options")
    opts = {k: v for k, v in spec.items() if k != "name"}
    try:
        return integrators.get(spec["name"])(**opts)
    except (KeyError, ValueError) as exc:
        raise HarnessInputError(f"{where}: {exc}") from exc


def _sim_args(params: Dict[str, Any], **override: Any) -> Dict[str, Any]:
    sim = dict(params.get("sim") or {})
    sim.update(override)
    unknown = sorted(set(sim) - set(SIM_KEYS))
    if unknown:
        raise HarnessInputError(f"case.params.sim.{unknown[0]}: unknown; known: {list(SIM_KEYS)}")
    for key in ("t_end", "dt"):
        v = sim.get(key)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
            raise HarnessInputError(f"case.params.sim.{key}: must be a number > 0 (s), got {v!r}")
    for key in ("q0", "nu0", "q_avg0"):
        v = sim.get(key)
        if v is not None and (not isinstance(v, list) or len(v) != 6):
            raise HarnessInputError(f"case.params.sim.{key}: must be a list of 6 numbers, got {v!r}")
    return sim


def _simulate(vessel, integ, sim: Dict[str, Any]):
    try:
        res = vessel.simulate(integ, **sim)
    except ValueError as exc:
        raise HarnessInputError(f"case.params.sim: {exc}") from exc
    return res


def _stats(prefix: str, res) -> Dict[str, float]:
    out = {f"{prefix}{k}": float(v) for k, v in res.stats.items()}
    out[f"{prefix}wall_time"] = float(res.wall_time)
    out[f"{prefix}success"] = float(res.success)
    return out


def _rel_max(err, scale: float) -> float:
    return float(np.max(np.abs(err)) / scale) if scale > 0 else float(np.max(np.abs(err)))


def _plot(ctx: RunContext, name: str, t, series: Dict[str, Any], ylabel: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for label, y in series.items():
        ax.plot(t, y, label=label)
    ax.set_xlabel("t [s]")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ctx.save_figure(name, fig)
    plt.close(fig)


def _result_json(ctx: RunContext, name: str, res) -> None:
    ctx.write_json(name, {"t": res.t, "q": res.q, "nu": res.nu, "q_avg": res.q_avg, "rotation": res.rotation,
                          "rudder": res.rudder, "sog": res.kinematics["sog"], "cog": res.kinematics["cog"],
                          "drift": res.kinematics["drift"], "stats": res.stats, "success": res.success,
                          "failure_reason": res.failure_reason})


# -- checks -----------------------------------------------------------------------------------
def check_frames(cfg, params, ctx) -> CaseResult:
    """Body <-> inertial round trip, drift = atan2(v, u), course = psi + drift, wrap to (-pi, pi].

    params: n_samples, seed, speed_max (m/s).
    """
    from models.vessel.frames import (
        body_to_inertial,
        inertial_to_body,
        kinematics,
        wrap_to_pi,
    )

    n = int(params.get("n_samples", 10000))
    rng = np.random.default_rng(int(params.get("seed", 7)))
    vmax = float(params.get("speed_max", 10.0))
    u, v = rng.uniform(-vmax, vmax, n), rng.uniform(-vmax, vmax, n)
    psi = rng.uniform(-4 * math.pi, 4 * math.pi, n)
    with ctx.stage("transform"):
        vn, ve = body_to_inertial(u, v, psi)
        u2, v2 = inertial_to_body(vn, ve, psi)
        q = np.zeros((n, 6))
        q[:, 5] = psi
        nu = np.zeros((n, 6))
        nu[:, 0], nu[:, 1] = u, v
        kin = kinematics(q, nu)
    speed = np.hypot(u, v)
    drift_ref = np.arctan2(v, u)
    cog_ref = np.mod(psi + drift_ref, 2 * math.pi)
    cog_err = np.abs(wrap_to_pi(kin["cog"] - cog_ref))
    a = np.linspace(-20.0, 20.0, 4001)
    w = wrap_to_pi(a)
    turns = (w - a) / (2 * math.pi)
    edges = wrap_to_pi(np.array([-math.pi, math.pi, 3 * math.pi, -3 * math.pi]))
    metrics = {
        "round_trip_error": float(np.max(np.hypot(u2 - u, v2 - v)) / vmax),
        "speed_error": float(np.max(np.abs(kin["sog"] - speed)) / vmax),
        "drift_error": float(np.max(np.abs(wrap_to_pi(kin["drift"] - drift_ref)))),
        "cog_error": float(np.max(cog_err)),
        "wrap_range_violation": float(np.sum((w <= -math.pi) | (w > math.pi))),
        "wrap_turns_error": float(np.max(np.abs(turns - np.round(turns)))),
        "wrap_edge_error": float(np.max(np.abs(edges - math.pi))),
    }
    return CaseResult(metrics, info={"n_samples": n})


def check_circle(cfg, params, ctx) -> CaseResult:
    """Constant surge U and yaw rate r without loads: circle of radius U/r (params.U, params.r)."""
    from models.vessel.reference import circle

    U, r = float(params.get("U", 5.0)), float(params.get("r", 0.01))
    sim = _sim_args(params, nu0=[U, 0.0, 0.0, 0.0, 0.0, r], q0=[0.0] * 6)
    vessel = _vessel(cfg, forces=[])
    with ctx.stage("simulate"):
        res = _simulate(vessel, _integrator(cfg), sim)
        _result_json(ctx, "trajectory.json", res)  # the trajectory figure and the report read it
    x, y, psi = circle(res.t, U, r)
    R = U / r
    radius = np.hypot(res.q[:, 0], res.q[:, 1] - R)
    metrics = {"position_error": _rel_max(np.hypot(res.q[:, 0] - x, res.q[:, 1] - y), R),
               "radius_error": _rel_max(radius - R, R),
               "yaw_error": M.max_abs_error(res.q[:, 5], psi),
               **_stats("", res)}
    _plot(ctx, "circle.png", res.q[:, 1], {"track": res.q[:, 0], "closed form": x}, "x North [m] vs y East")
    return CaseResult(metrics, info={"radius_m": R})


def check_spinning(cfg, params, ctx) -> CaseResult:
    """Equal surge and sway mass, Coriolis only, spinning: inertial velocity constant."""
    sim = _sim_args(params)
    vessel = _vessel(cfg)
    Mt = vessel.data.total_mass
    if abs(Mt[0, 0] - Mt[1, 1]) > 1e-12 * Mt[0, 0]:
        raise HarnessInputError("source.data_overrides: spinning check needs equal surge and sway mass (m + A11 = m + A22)")
    with ctx.stage("simulate"):
        res = _simulate(vessel, _integrator(cfg), sim)
        _result_json(ctx, "trajectory.json", res)  # the trajectory figure and the report read it
    k = res.kinematics
    nu0, q0 = np.asarray(sim["nu0"], float), np.asarray(sim.get("q0") or [0.0] * 6, float)
    c, s = math.cos(q0[5]), math.sin(q0[5])
    vn0, ve0 = c * nu0[0] - s * nu0[1], s * nu0[0] + c * nu0[1]
    V = math.hypot(vn0, ve0)
    t = res.t - res.t[0]
    metrics = {"inertial_velocity_error": _rel_max(np.hypot(k["vn"] - vn0, k["ve"] - ve0), V),
               "position_error": _rel_max(np.hypot(res.q[:, 0] - q0[0] - vn0 * t, res.q[:, 1] - q0[1] - ve0 * t),
                                          V * t[-1]),
               "yaw_rate_error": _rel_max(res.nu[:, 5] - nu0[5], abs(nu0[5])),
               "body_velocity_turned": float(abs(math.atan2(res.nu[-1, 1], res.nu[-1, 0]) - math.atan2(nu0[1], nu0[0]))),
               **_stats("", res)}
    return CaseResult(metrics, series={"vn": k["vn"].tolist(), "ve": k["ve"].tolist()})


def check_surge_linear(cfg, params, ctx) -> CaseResult:
    """Surge decay with linear damping only: u0 exp(-t/tau), tau = (m + A11)/B11 from the data."""
    from models.vessel.reference import surge_linear

    sim = _sim_args(params)
    vessel = _vessel(cfg, forces=["linear_damping"])
    tau = vessel.data.total_mass[0, 0] / vessel.data.linear_damping[0, 0]
    with ctx.stage("simulate"):
        res = _simulate(vessel, _integrator(cfg), sim)
        _result_json(ctx, "trajectory.json", res)  # the trajectory figure and the report read it
    u0 = float(sim["nu0"][0])
    u, x = surge_linear(res.t, u0, tau)
    slope = np.polyfit(res.t, np.log(res.nu[:, 0]), 1)[0]
    metrics = {"u_error": _rel_max(res.nu[:, 0] - u, u0), "x_error": _rel_max(res.q[:, 0] - x, x[-1]),
               "tau_error": abs(-1.0 / slope - tau) / tau, "tau_s": tau, **_stats("", res)}
    _plot(ctx, "surge_linear.png", res.t, {"model": res.nu[:, 0], "u0 exp(-t/tau)": u}, "u [m/s]")
    return CaseResult(metrics)


def check_surge_quadratic(cfg, params, ctx) -> CaseResult:
    """Surge decay with quadratic damping only: u0 / (1 + k u0 t), k = d11/(m + A11)."""
    from models.vessel.reference import surge_quadratic

    sim = _sim_args(params)
    vessel = _vessel(cfg, forces=["quadratic_damping"])
    k = vessel.data.quadratic_damping[0] / vessel.data.total_mass[0, 0]
    if k <= 0:
        raise HarnessInputError("source: quadratic_damping[0] must be > 0 for the quadratic surge decay check")
    with ctx.stage("simulate"):
        res = _simulate(vessel, _integrator(cfg), sim)
        _result_json(ctx, "trajectory.json", res)  # the trajectory figure and the report read it
    u0 = float(sim["nu0"][0])
    u, x = surge_quadratic(res.t, u0, k)
    metrics = {"u_error": _rel_max(res.nu[:, 0] - u, u0), "x_error": _rel_max(res.q[:, 0] - x, x[-1]),
               "k_per_m": k, **_stats("", res)}
    _plot(ctx, "surge_quadratic.png", res.t, {"model": res.nu[:, 0], "u0/(1+k u0 t)": u}, "u [m/s]")
    return CaseResult(metrics)


def _crossings(t, z):
    """Up-crossing times of z(t) through 0 (cubic-spline roots) and the local maxima (t, z)."""
    from scipy.interpolate import CubicSpline

    cs = CubicSpline(t, z)
    roots = cs.roots(extrapolate=False)
    d = cs.derivative()
    ups = np.array([r for r in roots if d(r) > 0])
    ext = d.roots(extrapolate=False)
    peaks = np.array([e for e in ext if cs(e, 2) < 0])
    return ups, peaks, cs(peaks)


def check_heave_decay(cfg, params, ctx) -> CaseResult:
    """Heave free decay: natural period 2 pi sqrt((m + A33)/K33) and damping ratio B33/(2 sqrt((m+A33) K33))."""
    from models.vessel.reference import damped_oscillator

    sim = _sim_args(params)
    vessel = _vessel(cfg, forces=["restoring", "linear_damping"])
    d = vessel.data
    ref_m, ref_c, ref_k = d.total_mass[2, 2], d.linear_damping[2, 2], d.restoring[2]
    z0 = float(sim["q0"][2])
    with ctx.stage("simulate"):
        res = _simulate(vessel, _integrator(cfg), sim)
        _result_json(ctx, "trajectory.json", res)  # the trajectory figure and the report read it
    ref = damped_oscillator(res.t, z0, ref_m, ref_c, ref_k)
    ups, pk_t, pk_z = _crossings(res.t, res.q[:, 2])
    if len(ups) < 2 or len(pk_t) < 2:
        raise HarnessInputError("case.params.sim.t_end: too short for two heave periods")
    Td = float(np.mean(np.diff(ups)))
    delta = float(np.mean(np.log(pk_z[:-1] / pk_z[1:])))
    zeta = delta / math.sqrt(4 * math.pi ** 2 + delta ** 2)
    Tn = Td * math.sqrt(1.0 - zeta ** 2)
    metrics = {"natural_period_error": abs(Tn - ref["natural_period"]) / ref["natural_period"],
               "damping_ratio_error": abs(zeta - ref["damping_ratio"]) / ref["damping_ratio"],
               "trajectory_error": _rel_max(res.q[:, 2] - ref["z"], abs(z0)),
               "natural_period_s": Tn, "damping_ratio": zeta, **_stats("", res)}
    _plot(ctx, "heave_decay.png", res.t, {"model": res.q[:, 2], "closed form": ref["z"]}, "z [m]")
    return CaseResult(metrics, info={"reference_natural_period_s": ref["natural_period"],
                                     "reference_damping_ratio": ref["damping_ratio"]})


def check_rudder_ramp(cfg, params, ctx) -> CaseResult:
    """Rudder rate limiter: ramp at the rate limit, demand clipped at max angle, no overshoot."""
    from models.vessel.reference import rate_limited

    sim = _sim_args(params)
    vessel = _vessel(cfg, forces=[])
    sched = cfg.source.demands.rudder
    name = vessel.data.rudders[0].name
    if name not in sched:
        raise HarnessInputError(f"source.demands.rudder.{name}: the rudder_ramp check needs a demand schedule")
    points = OmegaConf.to_container(sched[name])
    rud = vessel.data.rudders[0]
    with ctx.stage("simulate"):
        res = _simulate(vessel, _integrator(cfg), sim)
        _result_json(ctx, "trajectory.json", res)  # the trajectory figure and the report read it
    x0 = float((sim.get("rudder0") or [0.0])[0])
    ref = rate_limited(res.t, x0, points, rud.rate_limit, rud.max_angle)
    delta = res.rudder[:, 0]
    # ramp time to the first demand and overshoot beyond every held demand
    d1 = float(np.clip(points[0][1], -rud.max_angle, rud.max_angle))
    t_ramp = abs(d1 - x0) / rud.rate_limit
    dt = float(sim["dt"])
    reached = res.t[np.flatnonzero(delta == d1)]
    t_reach = float(reached[0]) if reached.size else math.inf
    expected_reach = math.ceil(t_ramp / dt - 1e-9) * dt + res.t[0]
    times = [p[0] for p in points] + [math.inf]
    over = 0.0
    for j, p in enumerate(points):
        dj = float(np.clip(p[1], -rud.max_angle, rud.max_angle))
        sel = (res.t >= times[j]) & (res.t <= times[j + 1])
        start = delta[sel][0] if sel.any() else dj
        sgn = math.copysign(1.0, dj - start) if dj != start else 1.0
        if sel.any():
            over = max(over, float(np.max(sgn * (delta[sel] - dj))))
    metrics = {"angle_error": float(np.max(np.abs(delta - ref))), "ramp_time_error": abs(t_reach - expected_reach),
               "overshoot": over, "max_abs_angle_excess": max(0.0, float(np.max(np.abs(delta)) - rud.max_angle)),
               "max_rate_excess": max(0.0, float(np.max(np.abs(np.diff(delta)) / dt)) - rud.rate_limit) / rud.rate_limit,
               "ramp_time_s": t_ramp}
    _plot(ctx, "rudder_ramp.png", res.t, {"rudder": delta, "closed form": ref}, "rudder angle [rad]")
    return CaseResult(metrics, series={"rudder": delta.tolist()})


def check_propeller_lag(cfg, params, ctx) -> CaseResult:
    """Propeller rotation and pitch lags to a step demand: 63.212 % at t = tau (exp form),
    and the seed's 1/(1 + tau/dt) form against its own closed form; their difference is logged."""
    from models.vessel.reference import first_order_lag

    sim = _sim_args(params)
    out: Dict[str, float] = {}
    series = {}
    dt = float(sim["dt"])
    for form in ("exp", "seed"):
        vessel = _vessel(cfg, forces=[], lag_form=form)
        prop = vessel.data.propellers[0]
        dem = OmegaConf.to_container(cfg.source.demands)
        try:
            n_d = float(dem["rotation"][prop.name][0][1])
            pd_d = float(dem["pitch_ratio"][prop.name][0][1])
        except (KeyError, IndexError, TypeError):
            raise HarnessInputError(f"source.demands: propeller_lag needs rotation and pitch_ratio steps for {prop.name!r}")
        with ctx.stage(f"simulate_{form}"):
            res = _simulate(vessel, _integrator(cfg), sim)
        n0 = float((sim.get("rotation0") or [0.0] * len(vessel.data.propellers))[0])
        n_ref = first_order_lag(res.t, n0, n_d, prop.rotation_time, dt, form)
        pd_ref = first_order_lag(res.t, prop.pitch_ratio, pd_d, prop.pitch_time, dt, form)
        i_tau = int(np.argmin(np.abs(res.t - prop.rotation_time)))
        if abs(res.t[i_tau] - prop.rotation_time) > 1e-9:
            raise HarnessInputError("case.params.sim.dt: the rotation time constant must be on the output grid")
        frac = (res.rotation[i_tau, 0] - n0) / (n_d - n0)
        out[f"fraction_at_tau_{form}"] = float(frac)
        out[f"rotation_error_{form}"] = _rel_max(res.rotation[:, 0] - n_ref, abs(n_d - n0))
        out[f"pitch_error_{form}"] = _rel_max(res.pitch_ratio[:, 0] - pd_ref, abs(pd_d - prop.pitch_ratio))
        series[f"rotation_{form}"] = res.rotation[:, 0].tolist()
    out["fraction_at_tau_error"] = abs(out["fraction_at_tau_exp"] - (-math.expm1(-1.0)))
    out["form_difference_at_tau"] = out["fraction_at_tau_exp"] - out["fraction_at_tau_seed"]
    _plot(ctx, "propeller_lag.png", res.t, {"exp": series["rotation_exp"], "seed": series["rotation_seed"]},
          "rotation [1/s]")
    return CaseResult(out, series=series)


def check_ema_step(cfg, params, ctx) -> CaseResult:
    """Moving average of a vessel at rest at q0 from q_avg0: q0 + (q_avg0 - q0) exp(-t/tau)."""
    from models.vessel.reference import ema_step

    sim = _sim_args(params)
    vessel = _vessel(cfg, forces=[])
    with ctx.stage("simulate"):
        res = _simulate(vessel, _integrator(cfg), sim)
        _result_json(ctx, "trajectory.json", res)  # the trajectory figure and the report read it
    q0 = np.asarray(sim["q0"], float)
    a0 = np.asarray(sim.get("q_avg0") or [0.0] * 6, float)
    ref = np.column_stack([ema_step(res.t - res.t[0], q0[i], a0[i], vessel.ema_tau) for i in range(6)])
    scale = float(np.max(np.abs(q0 - a0)))
    i_tau = int(np.argmin(np.abs(res.t - res.t[0] - vessel.ema_tau)))
    j = int(np.argmax(np.abs(q0 - a0)))
    metrics = {"ema_error": _rel_max(res.q_avg - ref, scale),
               "fraction_at_tau": float((res.q_avg[i_tau, j] - a0[j]) / (q0[j] - a0[j])),
               "fraction_time_s": float(res.t[i_tau] - res.t[0])}
    _plot(ctx, "ema_step.png", res.t, {"q_avg x": res.q_avg[:, 0], "closed form": ref[:, 0]}, "x [m]")
    return CaseResult(metrics)


def check_static_wind(cfg, params, ctx) -> CaseResult:
    """Static wind on a vessel at rest: head wind X = q Cx(0) A_F, beam wind Y = q Cy(pi/2) A_L,
    N = q Cn A_L L, q = rho_air V^2 / 2; the load is invariant under a common rotation of heading
    and wind direction. params: wind_speed (m/s), headings (rad)."""
    from models.vessel.forces import Environment, ForceModel

    V = float(params.get("wind_speed", 20.0))
    vessel = _vessel(cfg, forces=["wind"])
    d = vessel.data
    qd = 0.5 * d.rho_air * V * V
    tab = d.wind
    i90 = int(np.argmin(np.abs(tab.angle - math.pi / 2)))
    if abs(tab.angle[i90] - math.pi / 2) > 1e-12:
        raise HarnessInputError("source: wind table needs an entry at pi/2 for the beam-wind check")
    inputs = vessel.initial_inputs()
    zero = np.zeros(6)
    errs: Dict[str, List[float]] = {"head": [], "beam": [], "invariance": []}
    ref_head = np.array([qd * tab.cx[0] * tab.frontal_area, 0.0, 0.0, 0.0, 0.0, qd * tab.cn[0] * tab.lateral_area * tab.length])
    ref_beam = np.array([qd * tab.cx[i90] * tab.frontal_area, qd * tab.cy[i90] * tab.lateral_area, 0, 0, 0,
                         qd * tab.cn[i90] * tab.lateral_area * tab.length])
    for psi in params.get("headings", [0.0, 0.7, -2.0, 3.0]):
        q = np.zeros(6)
        q[5] = psi
        for kind, wdir, ref in (("head", psi, ref_head), ("beam", psi + math.pi / 2, ref_beam)):
            fm = ForceModel(d, ["wind"], Environment(wind_speed=V, wind_direction=wdir))
            F = fm.total(0.0, q, zero, inputs)
            errs[kind].append(M.e_F(F, ref))
    metrics = {"head_wind_error": max(errs["head"]), "beam_wind_error": max(errs["beam"]),
               "head_wind_X_N": float(ref_head[0]), "beam_wind_Y_N": float(ref_beam[1])}
    return CaseResult(metrics)


def check_energy(cfg, params, ctx) -> CaseResult:
    """Kinetic energy change against the integrated power of all loads (a work state), at the
    integrator group's tolerance and at params.rtol_fine: the balance is exact for the ODE,
    so its residual must shrink with the tolerance (reduction = coarse / fine)."""
    sim = _sim_args(params)
    vessel = _vessel(cfg, track_work=True)
    fine = float(params.get("rtol_fine", 1.0e-10))
    ratio = float(params.get("atol_ratio", 1.0e-2))
    metrics: Dict[str, float] = {}
    for label, kw in (("", {}), ("fine.", {"rtol": fine, "atol": fine * ratio})):
        with ctx.stage(f"simulate_{label or 'seed'}"):
            res = _simulate(vessel, _integrator(cfg, **kw), sim)
        T = vessel.kinetic_energy(res.nu)
        W = res.work - res.work[0]
        metrics[f"{label}energy_balance"] = M.energy_drift(T, W, E_scale=float(np.max(T)))
        metrics.update(_stats(label, res))
        if not label:
            metrics["work_range_J"] = float(np.ptp(W))
            _result_json(ctx, "trajectory.json", res)
            _plot(ctx, "energy.png", res.t, {"T - T0": T - T[0], "work": W}, "J")
            series = {"kinetic_energy": T.tolist(), "work": W.tolist()}
    metrics["balance_reduction"] = metrics["energy_balance"] / max(metrics["fine.energy_balance"], 1e-300)
    return CaseResult(metrics, series=series)


def check_cross_check(cfg, params, ctx) -> CaseResult:
    """The same manoeuvre with the integrator group's choice and the registry's others.

    params.others: list of {name, options...}; metric: largest horizontal position
    difference (m) to the first integrator, and relative to the track length.
    """
    sim = _sim_args(params)
    others = params.get("others") or []
    if not isinstance(others, list) or not others:
        raise HarnessInputError("case.params.others: must list at least one {name: ..., <options>}")
    runs = {}
    vessel = _vessel(cfg)
    integ0 = _integrator(cfg)
    main = getattr(integ0, "name", "main")
    with ctx.stage(f"simulate_{main}"):
        runs[main] = _simulate(vessel, integ0, sim)
    for i, spec in enumerate(others):
        integ = _registry_integrator(spec, f"case.params.others[{i}]")
        with ctx.stage(f"simulate_{spec['name']}"):
            runs[spec["name"]] = _simulate(vessel, integ, sim)
    ref = runs[main]
    track = float(np.sum(np.hypot(np.diff(ref.q[:, 0]), np.diff(ref.q[:, 1]))))
    metrics: Dict[str, float] = {}
    worst = 0.0
    for name, r in runs.items():
        metrics.update(_stats(f"{name}.", r))
        if name == main:
            continue
        if not r.success or r.t.size != ref.t.size:
            diff = math.inf
        else:
            diff = float(np.max(np.hypot(r.q[:, 0] - ref.q[:, 0], r.q[:, 1] - ref.q[:, 1])))
            metrics[f"{name}.max_yaw_diff"] = float(np.max(np.abs(r.q[:, 5] - ref.q[:, 5])))
        metrics[f"{name}.max_position_diff_m"] = diff
        worst = max(worst, diff)
    metrics["max_position_diff_m"] = worst
    metrics["max_position_diff_rel"] = worst / track if track > 0 else math.inf
    metrics["track_length_m"] = track
    _plot(ctx, "cross_check.png", ref.q[:, 1], {n: r.q[:, 0] for n, r in runs.items()}, "x North [m] vs y East")
    return CaseResult(metrics)


def check_stateful_in_rhs(cfg, params, ctx) -> CaseResult:
    """Stateful updates once per output step vs inside the field (the seed's loop), each at
    two integrator tolerances: the first does not depend on the integrator's call count,
    the second does. params.rtols: two rtol values (atol = rtol * atol_ratio)."""
    from models.vessel.reference import first_order_lag

    rtols = params.get("rtols", [1.0e-6, 1.0e-8])
    ratio = float(params.get("atol_ratio", 1.0e-2))
    vessel = _vessel(cfg)
    prop = vessel.data.propellers[0]
    dem = OmegaConf.to_container(cfg.source.demands)
    try:
        n_d = float(dem["rotation"][prop.name][-1][1])
        if len(dem["rotation"][prop.name]) != 1 or dem["rotation"][prop.name][0][0] != 0:
            raise ValueError
    except (KeyError, IndexError, TypeError, ValueError):
        raise HarnessInputError(f"source.demands.rotation.{prop.name}: needs one step [[0, n]] for this check")
    metrics: Dict[str, float] = {}
    runs = {}
    for mode in ("step", "rhs"):
        for k, rtol in enumerate(rtols):
            sim = _sim_args(params, stateful=mode)
            integ = _integrator(cfg, rtol=float(rtol), atol=float(rtol) * ratio)
            with ctx.stage(f"simulate_{mode}_{k}"):
                r = _simulate(vessel, integ, sim)
            runs[mode, k] = r
            n0 = float((sim.get("rotation0") or [0.0] * len(vessel.data.propellers))[0])
            n_ref = first_order_lag(r.t, n0, n_d, prop.rotation_time, float(sim["dt"]), vessel.lag_form)
            metrics[f"{mode}.{k}.nfev"] = float(r.stats["nfev"])
            metrics[f"{mode}.{k}.updates_per_step"] = r.stateful_updates / (r.t.size - 1)
            metrics[f"{mode}.{k}.rotation_error"] = _rel_max(r.rotation[:, 0] - n_ref, abs(n_d - n0))
    for mode in ("step", "rhs"):
        a, b = runs[mode, 0], runs[mode, 1]
        metrics[f"{mode}.tolerance_dependence_m"] = float(np.max(np.hypot(a.q[:, 0] - b.q[:, 0], a.q[:, 1] - b.q[:, 1])))
    metrics["rhs_over_step_dependence"] = (metrics["rhs.tolerance_dependence_m"]
                                           / max(metrics["step.tolerance_dependence_m"], 1e-300))
    metrics["mode_difference_m"] = float(np.max(np.hypot(runs["rhs", 1].q[:, 0] - runs["step", 1].q[:, 0],
                                                         runs["rhs", 1].q[:, 1] - runs["step", 1].q[:, 1])))
    _plot(ctx, "stateful_in_rhs.png", runs["step", 1].t,
          {f"{m} rtol={rtols[k]:g}": runs[m, k].rotation[:, 0] for m in ("step", "rhs") for k in (0, 1)},
          "propeller rotation [1/s]")
    return CaseResult(metrics)


CHECKS: Dict[str, Callable[[Any, Dict[str, Any], RunContext], CaseResult]] = {
    "frames": check_frames, "circle": check_circle, "spinning": check_spinning,
    "surge_linear": check_surge_linear, "surge_quadratic": check_surge_quadratic,
    "heave_decay": check_heave_decay, "rudder_ramp": check_rudder_ramp, "propeller_lag": check_propeller_lag,
    "ema_step": check_ema_step, "static_wind": check_static_wind, "energy": check_energy,
    "cross_check": check_cross_check, "stateful_in_rhs": check_stateful_in_rhs,
}


def run(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    params = _params(cfg)
    check = params.get("check")
    if check not in CHECKS:
        raise HarnessInputError(f"case.params.check: must be one of {sorted(CHECKS)}, got {check!r}")
    data_file = OmegaConf.select(cfg, "source.data_file")
    if data_file:
        from models.vessel.build import resolve_data_file

        path = resolve_data_file(data_file)
        if path.exists():
            ctx.add_input(path)
    return CHECKS[check](cfg, params, ctx)


def bench(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Simulated seconds per wall-clock second of a long manoeuvre, every load on: the
    integrator group's choice (cvode_bdf) and params.reference (scipy_bdf) on the same field,
    in the same run, best of params.repeats timings (interleaved; a solver whose timings so far
    took more than params.repeat_budget_s is timed no more); their ratio; and each one's largest
    horizontal position error against the main integrator at params.accuracy_reference tolerances
    (default rtol 1e-11)."""
    params = _params(cfg)
    sim = _sim_args(params)
    ref_spec = params.get("reference") or {"name": "scipy_bdf"}
    vessel = _vessel(cfg)
    span = float(sim["t_end"])
    metrics: Dict[str, float] = {"simulated_s": span}
    main = OmegaConf.select(cfg, "integrator._target_")
    pair = (("main", _integrator(cfg)), ("reference", _registry_integrator(ref_spec, "case.params.reference")))
    short = {**sim, "t_end": 2.0 * float(sim["dt"])}
    warm = WarmUp()
    for _, integ in pair:  # imports, JIT compilation and first-call costs out of the timing
        warm(_simulate, vessel, integ, short)
    metrics.update(warm.metrics())
    from harness.families.vessel_cost import Clocked
    from harness.families.vessel_cost import plot as plot_cost

    repeats = int(params.get("repeats", 1))
    budget = float(params.get("repeat_budget_s", 0.0))
    if repeats < 1 or not budget >= 0:
        raise HarnessInputError("case.params.repeats: must be >= 1 (and repeat_budget_s >= 0 s)")
    # best of `repeats`, main and reference interleaved; a solver whose timed runs so far took more
    # than repeat_budget_s is not run again (one timing of a long run is steady, one of a short is not)
    runs, curves, best, spent, count = {}, {}, {}, {}, {}
    for rep in range(repeats):
        for label, integ in pair:
            if rep > 0 and spent[label] > budget:
                continue
            clock = Clocked(integ)
            start = time.perf_counter()
            with ctx.stage(f"simulate_{label}"):
                r = _simulate(vessel, clock.start(), sim)
            wall = time.perf_counter() - start
            spent[label] = spent.get(label, 0.0) + wall
            count[label] = count.get(label, 0) + 1
            if wall < best.get(label, math.inf) or not r.success:
                best[label], runs[label] = wall, r
                curves[f"{label}: {integ.name}"] = clock.curve()
            if not r.success:
                spent[label] = math.inf  # a failed run is not repeated
    for label, r in runs.items():
        metrics[f"{label}.realtime_factor"] = span / best[label] if r.success else 0.0
        metrics[f"{label}.timed_runs"] = float(count[label])
        metrics.update(_stats(f"{label}.", r))
    metrics["speedup_vs_reference"] = metrics["main.realtime_factor"] / max(metrics["reference.realtime_factor"], 1e-300)
    metrics["jacobian_analytic"] = 1.0 if getattr(vessel, "jacobian", "none") == "analytic" else 0.0
    metrics["n_cores"] = float(os.cpu_count() or 1)
    metrics["threads"] = 1.0  # the field, the Jacobian and both solvers run on one thread
    ctx.write_bytes("cost_vs_simulated_time.png", plot_cost(curves))
    # what the speed buys: each trajectory against the main integrator at tight tolerances
    tight = params.get("accuracy_reference") or {"rtol": 1.0e-11, "atol": 1.0e-13}
    with ctx.stage("simulate_accuracy_reference"):
        exact = _simulate(vessel, _integrator(cfg, **tight), sim)
    metrics["accuracy_reference.success"] = float(exact.success)
    track = float(np.sum(np.hypot(*np.diff(exact.q[:, :2], axis=0).T)))
    metrics["track_length_m"] = track
    for label, r in runs.items():
        n = min(r.t.size, exact.t.size)
        err = float(np.max(np.hypot(*(r.q[:n, :2] - exact.q[:n, :2]).T)))
        metrics[f"{label}.max_position_error_m"] = err
        metrics[f"{label}.max_position_error_rel"] = err / max(track, 1e-300)
    return CaseResult(metrics, info={"main": main, "reference": ref_spec["name"]})
