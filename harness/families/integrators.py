"""Adapter of the integrator family (seed 004): ROS2, CVODE and scipy on the stiff test set.

Adapters (``case.adapter``):

* ``run``            one integrator on one test problem: scd against the published /
                     closed-form reference, statistics, wall time. A solver failure is a
                     result (``success = 0``, scd NaN, reason in the info), never a crash.
* ``run_ft_effect``  ROS2 fixed step on a non-autonomous stiff problem with and without the
                     f_t term: both errors and their ratio.
* ``bench``          ros2_adaptive (analytic / sensitivity Jacobian) against scipy Radau and BDF
                     in the same run: wall-time ratios and ROS2's per-step overhead.

``work_precision(table, out_dir)`` aggregates a work-precision sweep (study kind
``work_precision``): table + plots of scd against nfev, njev, nlu and wall time.

case.params (``run``):
  problem:        name in models.integrators.problems (required)
  problem_params: dict of keyword arguments of the problem factory (optional)
  rtol:           overrides the integrator's rtol (adaptive integrators); atol = atol_ratio * rtol
  atol_ratio:     default: the problem's atol / rtol
  residual_jacobian / fd_options: passed to the integrator (``jacobian``: analytic|fd|sensitivity|auto)
"""
from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
from omegaconf import DictConfig, OmegaConf

from harness.core.configs import store_schema
from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.core.params import build
from harness.core.warmup import WarmUp
from harness.families.metric_kinds import INTEGRATORS as METRIC_KINDS  # noqa: F401 - read by the runner
from harness.metrics import library as M

log = logging.getLogger(__name__)


# -- integrator group schemas -----------------------------------------------------------------
# The defaults are the library's (``<Integrator>.defaults``): one set, shared by
# ``get(name)(...)`` and the config group (whose YAML files name only ``_target_``).
def _lib(cls_path: str, key: str):
    from models.integrators.registry import get

    return get(cls_path).defaults[key]


@dataclass
class ROS2Conf:
    """ROS2 fixed step: exactly one of h [s] and n_steps."""

    _target_: str = "models.integrators.rosenbrock.ROS2"
    h: Optional[float] = None
    n_steps: Optional[int] = None
    time_derivative: str = _lib("ros2", "time_derivative")  # auto | fd | none
    jacobian: str = "auto"  # auto | analytic | fd | sensitivity (residual form)
    fd_options: Optional[Dict[str, Any]] = None


@dataclass
class ROS2AdaptiveConf:
    """ROS2 with embedded error estimate and step control (tolerances per state by name)."""

    _target_: str = "models.integrators.rosenbrock.ROS2Adaptive"
    rtol: float = _lib("ros2_adaptive", "rtol")
    atol: float = _lib("ros2_adaptive", "atol")
    rtol_by_name: Optional[Dict[str, float]] = None
    atol_by_name: Optional[Dict[str, float]] = None
    h0: Optional[float] = None  # s; None = automatic starting step
    h_min: float = _lib("ros2_adaptive", "h_min")  # s
    h_max: float = _lib("ros2_adaptive", "h_max")  # s
    max_steps: int = _lib("ros2_adaptive", "max_steps")  # attempts
    safety: float = _lib("ros2_adaptive", "safety")
    fac_min: float = _lib("ros2_adaptive", "fac_min")
    fac_max: float = _lib("ros2_adaptive", "fac_max")
    time_derivative: str = _lib("ros2_adaptive", "time_derivative")
    kernel: str = _lib("ros2_adaptive", "kernel")  # auto: compiled stages for <= 32 states (numba) | lapack
    jacobian: str = "auto"
    fd_options: Optional[Dict[str, Any]] = None


@dataclass
class CVODEConf:
    """SUNDIALS CVODE BDF, dense linear solver (scikit-sundae)."""

    _target_: str = "models.integrators.sundials.CVODEBDF"
    rtol: float = _lib("cvode_bdf", "rtol")
    atol: float = _lib("cvode_bdf", "atol")
    atol_by_name: Optional[Dict[str, float]] = None
    max_num_steps: int = _lib("cvode_bdf", "max_num_steps")  # per output interval
    max_step: float = _lib("cvode_bdf", "max_step")  # s, 0 = unbounded
    first_step: float = _lib("cvode_bdf", "first_step")  # s, 0 = CVODE's estimate
    max_order: int = _lib("cvode_bdf", "max_order")
    output_mode: str = _lib("cvode_bdf", "output_mode")  # stop (exact outputs, counted steps) | interpolate (CV_NORMAL)
    jacobian: str = "auto"
    fd_options: Optional[Dict[str, Any]] = None


@dataclass
class ScipyIVPConf:
    """scipy.integrate Radau / BDF / LSODA (``_target_`` picks the method)."""

    _target_: str = "models.integrators.scipy_ivp.ScipyRadau"
    rtol: float = _lib("scipy_radau", "rtol")
    atol: float = _lib("scipy_radau", "atol")
    atol_by_name: Optional[Dict[str, float]] = None
    first_step: Optional[float] = None
    max_step: float = _lib("scipy_radau", "max_step")
    max_steps: int = _lib("scipy_radau", "max_steps")
    jacobian: str = "auto"
    fd_options: Optional[Dict[str, Any]] = None


store_schema("integrator_ros2", ROS2Conf)
store_schema("integrator_ros2_adaptive", ROS2AdaptiveConf)
store_schema("integrator_cvode", CVODEConf)
store_schema("integrator_scipy_ivp", ScipyIVPConf)

STAT_FIELDS = ("n_steps", "n_accepted", "n_rejected", "nfev", "njev", "nlu", "n_residual_solves")


# -- helpers ----------------------------------------------------------------------------------
def _params(cfg: DictConfig) -> Dict[str, Any]:
    p = OmegaConf.select(cfg, "case.params")
    if p is None:
        raise HarnessInputError("case.params: required (at least case.params.problem)")
    out = OmegaConf.to_container(p, resolve=True) if isinstance(p, DictConfig) else dict(p)
    if not isinstance(out, dict):
        raise HarnessInputError("case.params: must be a mapping")
    return out


def _problem(params: Dict[str, Any]):
    from models.integrators.problems import available_problems, get_problem

    name = params.get("problem")
    if not isinstance(name, str) or name not in available_problems():
        raise HarnessInputError(f"case.params.problem: must be one of {available_problems()}, got {name!r}")
    pp = params.get("problem_params") or {}
    if not isinstance(pp, dict):
        raise HarnessInputError("case.params.problem_params: must be a mapping")
    try:
        return get_problem(name, **pp)
    except (TypeError, ValueError) as exc:
        raise HarnessInputError(f"case.params.problem_params: {exc}") from exc


def _on_compiled_field(tp):
    """``tp`` with its problem's Python rhs and jac calling the compiled in-place field (the same
    numbers; ``InPlaceField.python_callables``), so that every solver of a timed comparison runs
    the same compiled field: scipy through the Python callables, CVODE and ROS2's compiled loop
    through the in-place forms. Unchanged when the problem has no compiled field."""
    import dataclasses

    from models.integrators.base import ODEProblem

    ode = tp.problem
    fast = getattr(ode, "inplace", None)
    if fast is None:
        return tp
    rhs, jac = fast.python_callables(ode.n)
    return dataclasses.replace(tp, problem=ODEProblem(rhs, ode.y0, ode.t_span, jac=jac, f_t=ode.f_t, names=ode.names,
                                                      autonomous=ode.autonomous, jac_band=ode.jac_band, inplace=fast))


def _integrator(node: DictConfig, tp, params: Dict[str, Any], **extra: Any):
    """Instantiate the integrator; adaptive tolerances from case.params.rtol when given."""

    if node is None or OmegaConf.select(node, "_target_") is None:
        raise HarnessInputError("integrator: choose an integrator option (e.g. integrator=ros2_adaptive)")
    kw: Dict[str, Any] = dict(extra)
    rtol = params.get("rtol")
    if rtol is not None:
        if "rtol" not in node:
            raise HarnessInputError("case.params.rtol: the chosen integrator has no rtol (fixed step)")
        rtol = float(rtol)
        if not (0 < rtol < 1):
            raise HarnessInputError(f"case.params.rtol: must be in (0, 1), got {rtol}")
        ratio = float(params.get("atol_ratio", tp.atol / tp.rtol))
        if not ratio > 0:
            raise HarnessInputError("case.params.atol_ratio: must be > 0")
        kw.update(rtol=rtol, atol=ratio * rtol)
    return build(node, "integrator", **kw)


def _solve(integ, tp, ctx: Optional[RunContext] = None):
    try:
        if ctx is None:
            return integ.solve(tp.problem, tp.t_eval)
        with ctx.stage("solve"):
            return integ.solve(tp.problem, tp.t_eval)
    except ValueError as exc:  # bad options detected at solve time (names, tolerances)
        raise HarnessInputError(f"integrator: {exc}") from exc


def scd_end(sol, tp) -> float:
    """scd at the last output time over states (|y_ref| > scd_floor) and referenced z entries."""
    if not sol.success or len(sol.t) != len(tp.t_eval):
        return math.nan
    y_ref = tp.reference_at_end()
    y, yr = [sol.y[-1]], [y_ref]
    if tp.z_ref is not None and sol.z is not None:
        z_ref = np.asarray(tp.z_ref)
        z_ref = z_ref if z_ref.ndim == 1 else z_ref[-1]
        keep = np.isfinite(z_ref)
        y.append(sol.z[-1][keep])
        yr.append(z_ref[keep])
    y_all, yr_all = np.concatenate(y), np.concatenate(yr)
    keep = np.abs(yr_all) > tp.scd_floor
    return M.scd(y_all[keep], yr_all[keep])


def max_rel_error(sol, tp) -> float:
    """max over outputs and states of |y - y_ref| / max|y_ref| (problems with a full trajectory)."""
    y_ref = np.asarray(tp.y_ref)
    if not sol.success or y_ref.ndim != 2 or sol.y.shape != y_ref.shape:
        return math.nan
    return M.e_F(sol.y, y_ref)  # max |y - y_ref| / max |y_ref| over every state and output


def _codes() -> Dict[str, Dict[str, int]]:
    from models.integrators import available
    from models.integrators.problems import available_problems

    return {"integrator": {n: i for i, n in enumerate(available())},
            "problem": {n: i for i, n in enumerate(available_problems())}}


def _result_metrics(sol, tp, integ, wall: float) -> Dict[str, float]:
    st = sol.stats
    not_rep = set(sol.diagnostics.get("not_reported", []))
    m: Dict[str, float] = {k: (math.nan if k in not_rep else float(getattr(st, k))) for k in STAT_FIELDS}
    m.update(
        success=1.0 if sol.success else 0.0,
        scd=scd_end(sol, tp),
        max_rel_error=max_rel_error(sol, tp),
        y_end=float(np.asarray(sol.y, float)[-1].ravel()[0]) if np.size(sol.y) else math.nan,  # first component at t_end
        wall_time=wall,
        t_rhs=st.t_rhs,
        t_jac=st.t_jac,
    )
    if st.n_steps:
        m["overhead_per_step_us"] = (st.t_total - st.t_rhs - st.t_jac) / st.n_steps * 1e6
    rtol = getattr(integ, "options", {}).get("rtol")
    m["rtol"] = float(rtol) if rtol is not None else math.nan
    codes = _codes()
    m["integrator_id"] = float(codes["integrator"].get(integ.name, -1))
    m["problem_id"] = float(codes["problem"].get(tp.name, -1))
    return m


# -- adapters ---------------------------------------------------------------------------------
def run(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """One integrator on one test problem."""
    params = _params(cfg)
    tp = _problem(params)
    integ = _integrator(cfg.integrator, tp, params)
    warm = WarmUp()
    if integ.name == "ros2_adaptive":  # its compiled stage kernels: compiled / loaded before the timing
        warm(_warm_up_ros2, integ)
    start = time.perf_counter()
    sol = _solve(integ, tp, ctx)
    wall = time.perf_counter() - start
    metrics = _result_metrics(sol, tp, integ, wall)
    metrics.update(warm.metrics())
    if integ.name == "ros2":  # fixed step: the error constant e / h^2 is independent of the level
        t0, t1 = tp.problem.t_span
        h = float(integ.options["h"]) if integ.options["h"] is not None else (t1 - t0) / int(integ.options["n_steps"])
        metrics["h"] = h
        metrics["error_constant"] = metrics["max_rel_error"] / h ** 2
    if not sol.success:
        log.warning("integrators: %s on %s failed: %s", integ.name, tp.name, sol.failure_reason)
    ctx.write_json("solution.json", {"t": sol.t, "y": sol.y, "z": sol.z, "y_ref": tp.y_ref,
                                     "stats": sol.stats.as_dict(), "success": sol.success,
                                     "failure_reason": sol.failure_reason})
    info = {"integrator": integ.name, "problem": tp.name, "reference": tp.reference,
            "failure_reason": sol.failure_reason, "diagnostics": sol.diagnostics,
            "options": {k: v for k, v in integ.options.items() if k != "fd_options"}}
    return CaseResult(metrics=metrics, info=info)


def _warm_up_ros2(integ) -> None:
    """One solve of y' = -y (2 states, analytic J) with the integrator's class: the numba stage
    kernels of small systems (one specialisation for every size) compiled before any timing."""
    from models.integrators.base import ODEProblem

    tiny = ODEProblem(lambda t, y: -y, [1.0, 2.0], (0.0, 1.0e-3), jac=lambda t, y: -np.eye(2), autonomous=True)
    type(integ)(rtol=1e-6, atol=1e-8).solve(tiny, [0.0, 1.0e-3])


def run_ft_effect(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """ROS2 with and without f_t on the same grid: errors at every output and their ratio."""
    params = _params(cfg)
    tp = _problem(params)
    out: Dict[str, float] = {}
    for mode in ("auto", "none"):
        integ = _integrator(cfg.integrator, tp, params, time_derivative=mode)
        sol = _solve(integ, tp, ctx)
        key = "kept" if mode == "auto" else "dropped"
        out[f"success_{key}"] = 1.0 if sol.success else 0.0
        out[f"err_ft_{key}"] = max_rel_error(sol, tp)
        out[f"nfev_{key}"] = float(sol.stats.nfev)
    out["err_ratio_dropped_to_kept"] = out["err_ft_dropped"] / out["err_ft_kept"] if out["err_ft_kept"] > 0 else math.inf
    return CaseResult(metrics=out, info={"problem": tp.name, "reference": tp.reference})


def bench(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Wall-time ratios ROS2 / scipy Radau / BDF at equal tolerances, ROS2 per-step overhead.

    case.params: problems (list), rtols (list), repeats (int), tighten (int, default 2),
    ros2_loop (python | compiled: ROS2's whole loop compiled, and every solver of the comparison
    on the problem's compiled field, see :func:`_on_compiled_field`).
    For each (problem, rtol):
    ros2_adaptive with the analytic Jacobian and with the residual-form sensitivity
    Jacobian (the problem wrapped as R = z - f(t, y)), scipy Radau and BDF; best of
    ``repeats`` wall times after one untimed warm-up solve per variant (``jit_warmup``).
    Logged: ratio_ros2_to_radau_<p>_<rtol>, scd of each, and the
    overhead per step (time per step minus time in f and J) of ros2 with analytic J (with
    ``ros2_loop: compiled`` f and J run inside the compiled loop and are not timed apart: the
    whole time per step), and
    ratio_ros2_to_radau_equal_scd_<p>_<rtol>: ROS2's wall time at the loosest of rtol,
    rtol/10, ... that reaches Radau's scd, over Radau's (NaN if none does).
    """
    from models.integrators import get
    from models.integrators.base import ResidualProblem

    params = _params(cfg)
    problems = params.get("problems", ["hires", "rober", "pollu"])
    rtols = params.get("rtols", [1e-3, 1e-4])
    repeats = int(params.get("repeats", 3))
    if repeats < 1:
        raise HarnessInputError("case.params.repeats: must be >= 1")
    loop = params.get("ros2_loop", "python")
    if loop not in ("python", "compiled"):
        raise HarnessInputError(f"case.params.ros2_loop: must be python or compiled, got {loop!r}")
    ros2_variants = _ros2_variants(params)  # checked before anything runs
    prepare = _on_compiled_field if loop == "compiled" else (lambda tp: tp)
    metrics: Dict[str, float] = {"ros2_loop_compiled": 1.0 if loop == "compiled" else 0.0}
    rows: List[Dict[str, Any]] = []
    overheads, n_states = [], []
    warm = WarmUp()
    for pname in problems:
        tp = prepare(_problem({"problem": pname}))
        ode = tp.problem
        if isinstance(ode, ResidualProblem):
            raise HarnessInputError(f"case.params.problems: {pname} is residual-form; use ODE problems")
        res = ResidualProblem(lambda t, y, z, f=ode.rhs: z - f(t, y), ode.y0, ode.rhs(ode.t_span[0], ode.y0),
                              ode.t_span, jac_z=lambda t, y, z, n=ode.n: np.eye(n),
                              jac_y=lambda t, y, z, J=ode.jac: -J(t, y), jac_t=lambda t, y, z, n=ode.n: np.zeros(n),
                              names=ode.names, newton_tol=1e-13)
        from models.integrators.problems import TestProblem

        tp_res = TestProblem(tp.name, res, tp.t_eval, tp.y_ref, tp.reference, tp.scd_floor)
        for rtol in rtols:
            atol = tp.atol / tp.rtol * float(rtol)
            variants = {
                "ros2": (get("ros2_adaptive")(rtol=rtol, atol=atol, jacobian="analytic", loop=loop), tp),
                "ros2_sens": (get("ros2_adaptive")(rtol=rtol, atol=atol, jacobian="sensitivity"), tp_res),
                "radau": (get("scipy_radau")(rtol=rtol, atol=atol), tp),
                "bdf": (get("scipy_bdf")(rtol=rtol, atol=atol), tp),
            }
            walls: Dict[str, float] = {}
            for key, (integ, prob) in variants.items():
                warm(integ.solve, prob.problem, prob.t_eval)  # compiled ROS2 kernels out of the timing
                best, sol, best_stats = math.inf, None, None
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    sol = integ.solve(prob.problem, prob.t_eval)
                    wall = time.perf_counter() - t0
                    if wall < best:  # the overhead per step below comes from the fastest solve
                        best, best_stats = wall, sol.stats
                    if not sol.success:
                        break
                walls[key] = best if sol.success else math.nan
                tag = f"{pname}_{rtol:.0e}".replace("-0", "-")
                metrics[f"scd_{key}_{tag}"] = scd_end(sol, prob)
                metrics[f"wall_{key}_{tag}"] = walls[key]
                rows.append({"problem": pname, "rtol": rtol, "variant": key, "wall": walls[key],
                             "scd": metrics[f"scd_{key}_{tag}"], **{k: getattr(sol.stats, k) for k in STAT_FIELDS}})
                if key == "ros2" and sol.success and sol.stats.n_steps:
                    st = best_stats
                    ov = (st.t_total - st.t_rhs - st.t_jac) / st.n_steps * 1e6
                    metrics[f"overhead_us_{tag}"] = ov
                    overheads.append(ov)
                    n_states.append(ode.n)
            for ref in ("radau", "bdf"):
                metrics[f"ratio_ros2_to_{ref}_{tag}"] = walls["ros2"] / walls[ref]
            metrics[f"ratio_ros2_sens_to_ros2_{tag}"] = walls["ros2_sens"] / walls["ros2"]
            # at equal or better scd: tighten ROS2's rtol (x 1/10, up to `tighten` times) until it
            # reaches Radau's scd, and compare that wall time with Radau's
            target = metrics[f"scd_radau_{tag}"]
            ratio_eq, r2 = math.nan, float(rtol)
            for _ in range(int(params.get("tighten", 2)) + 1):
                integ = get("ros2_adaptive")(rtol=r2, atol=tp.atol / tp.rtol * r2, jacobian="analytic", loop=loop)
                best, sol = math.inf, None
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    sol = integ.solve(tp.problem, tp.t_eval)
                    best = min(best, time.perf_counter() - t0)
                if sol.success and scd_end(sol, tp) >= target:
                    ratio_eq = best / walls["radau"]
                    break
                r2 /= 10.0
            metrics[f"ratio_ros2_to_radau_equal_scd_{tag}"] = ratio_eq
            metrics[f"rtol_ros2_equal_scd_{tag}"] = r2 if math.isfinite(ratio_eq) else math.nan
    small = [o for o, n in zip(overheads, n_states) if n <= 20]
    metrics["overhead_per_step_us_max"] = max(small) if small else math.nan
    r3 = [v for k, v in metrics.items()
          if k.startswith("ratio_ros2_to_radau_") and k.endswith("_1e-3") and "equal_scd" not in k]
    metrics["ratio_ros2_to_radau_rtol1e-3_max"] = max(r3) if r3 else math.nan
    metrics.update(warm.metrics())
    wp_problems = params.get("wp_problems", [])
    if wp_problems:  # against CVODE at equal accuracy (harness.families.integrators_wp)
        from harness.families import integrators_wp as WP

        with ctx.stage("versus_cvode"):
            wp, wp_rows, curves = WP.versus_cvode(wp_problems, params.get("wp_rtols", [1e-2, 1e-3, 1e-4, 1e-5]),
                                                  repeats, lambda name: prepare(_problem({"problem": name})),
                                                  lambda name, **kw: get(name)(**kw), scd_end,
                                                  ros2_options={"loop": loop},
                                                  min_total_s=float(params.get("wp_min_total_s", 0.0)),
                                                  max_repeats=int(params.get("wp_max_repeats", repeats)),
                                                  ros2_variants=ros2_variants)
        metrics.update(wp)
        for level in WP.SCD_LEVELS[:2]:  # the regime where a one-step method should win (small problems)
            r = [v for k, v in wp.items() if k.startswith(f"ratio_ros2_to_cvode_scd{level:g}_")
                 and wp.get("n_states_" + k.split("_", 5)[-1], 0) < 100]
            metrics[f"ratio_ros2_to_cvode_scd{level:g}_small_max"] = max(r) if r else math.nan
        ctx.write_json("versus_cvode.json", wp_rows)
        ctx.write_bytes("work_precision_vs_cvode.png", WP.plot(curves))
    metrics["n_cores"] = float(os.cpu_count() or 1)
    metrics["threads"] = 1.0  # every solver on one thread (BLAS of these sizes included)
    ctx.write_json("bench.json", rows)
    return CaseResult(metrics=metrics, info={"problems": problems, "rtols": rtols, "repeats": repeats})


def _ros2_variants(params: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """case.params.wp_ros2_variants: label -> further ros2_adaptive options (a curve each)."""
    variants = params.get("wp_ros2_variants") or {}
    if not isinstance(variants, dict) or not all(isinstance(v, dict) for v in variants.values()):
        raise HarnessInputError("case.params.wp_ros2_variants: must map a label to a mapping of ros2_adaptive options")
    bad = [k for k in variants if k in ("ros2", "cvode") or not str(k).isidentifier() or "_" in str(k)]
    if bad:
        raise HarnessInputError(f"case.params.wp_ros2_variants: label {bad[0]!r} must be a word without '_', "
                                "other than ros2 and cvode")
    from models.integrators import get

    for label, opts in variants.items():
        try:  # the integrator's own check of its options
            get("ros2_adaptive")(**opts)
        except ValueError as exc:
            raise HarnessInputError(f"case.params.wp_ros2_variants.{label}: {exc}") from exc
    return {str(k): dict(v) for k, v in variants.items()}


# -- study aggregation ----------------------------------------------------------------------------
def work_precision(table, out_dir) -> Dict[str, Any]:
    """Work-precision aggregation of a sweep (integrator x problem x rtol).

    ``table``: the study table (one row per job; metrics scd, nfev, njev, nlu, wall_time,
    rtol, integrator_id, problem_id). Writes ``work_precision.csv`` and one PNG per
    problem (scd against nfev, njev, nlu and wall time, one line per integrator) into
    ``out_dir``; returns {"metrics": {...}, "verdict": ...}: per integrator and problem the
    best scd reached and the number of failed jobs. Failed jobs stay in the table.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from harness.core.atomic import atomic_write_text
    from harness.core.figures import save

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    codes = _codes()
    inv_i = {v: k for k, v in codes["integrator"].items()}
    inv_p = {v: k for k, v in codes["problem"].items()}
    df = table.copy()
    for col in ("scd", "nfev", "njev", "nlu", "wall_time", "rtol", "integrator_id", "problem_id", "success"):
        if col not in df:
            df[col] = math.nan
    df["integrator"] = [inv_i.get(int(v), "?") if np.isfinite(v) else "?" for v in df["integrator_id"]]
    df["problem"] = [inv_p.get(int(v), "?") if np.isfinite(v) else "?" for v in df["problem_id"]]
    cols = ["job", "case", "status", "verdict", "integrator", "problem", "rtol", "scd", "nfev", "njev", "nlu",
            "wall_time", "success"]
    wp = df[[c for c in cols if c in df]].sort_values(["problem", "integrator", "rtol"], ascending=[True, True, False])
    atomic_write_text(out_dir / "work_precision.csv", wp.to_csv(index=False))
    metrics: Dict[str, float] = {}
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour = {name: palette[i % len(palette)] for i, name in enumerate(sorted(set(wp["integrator"])))}
    for prob, g in wp.groupby("problem"):
        fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
        for ax, work in zip(axes, ("nfev", "njev", "nlu", "wall_time")):
            for integ, gi in g.groupby("integrator"):
                ok = gi[np.isfinite(gi["scd"]) & np.isfinite(gi[work])]
                if len(ok):  # a fixed colour per integrator (a panel may lack one that does not report)
                    ax.plot(ok[work], ok["scd"], "o-", color=colour[integ], label=integ)
            ax.set_xscale("log")
            ax.set_xlabel(work)
            ax.set_ylabel("scd")
            ax.grid(True, which="both", alpha=0.3)
        axes[0].legend(fontsize=7)
        fig.suptitle(f"work-precision: {prob}")
        save(fig, out_dir / f"work_precision_{prob}.png")
        for integ, gi in g.groupby("integrator"):
            finite = gi["scd"][np.isfinite(gi["scd"])]
            metrics[f"best_scd_{integ}_{prob}"] = float(finite.max()) if len(finite) else math.nan
            metrics[f"n_failed_{integ}_{prob}"] = float((gi["success"] != 1.0).sum())
    metrics["n_jobs"] = float(len(wp))
    metrics["n_failed_solves"] = float((wp["success"] != 1.0).sum()) if len(wp) else 0.0
    return {"metrics": metrics, "verdict": "pass"}


def run_descriptor(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Run a versioned model descriptor (YAML) and compare with a test problem's reference.

    case.params: descriptor (path, relative to the project root or absolute), reference
    (problem name whose y_ref at the descriptor's output times is the reference), and
    optional reference_params for the problem factory.
    """
    from models.integrators.descriptor import DescriptorError, load_descriptor

    params = _params(cfg)
    path = params.get("descriptor")
    if not isinstance(path, str):
        raise HarnessInputError("case.params.descriptor: required, a path to a descriptor YAML")
    p = Path(path)
    if not p.is_absolute():
        p = Path(__file__).resolve().parents[2] / p
    if not p.is_file():
        raise HarnessInputError(f"case.params.descriptor: file not found: {p}")
    ctx.add_input(p)
    try:
        desc = load_descriptor(p)
        problem, integ, t_eval = desc.build()
    except (DescriptorError, ValueError) as exc:
        raise HarnessInputError(str(exc)) from exc
    ref_params = dict(params.get("reference_params") or {})
    ref_params.setdefault("n_out", len(t_eval))
    tp = _problem({"problem": params.get("reference"), "problem_params": ref_params})
    if not np.allclose(tp.t_eval, t_eval, rtol=0, atol=1e-15 * max(1.0, float(t_eval[-1]))):
        raise HarnessInputError("case.params.reference: its output times differ from the descriptor's run.outputs")
    start = time.perf_counter()
    with ctx.stage("solve"):
        sol = integ.solve(problem, t_eval)
    wall = time.perf_counter() - start
    metrics = _result_metrics(sol, tp, integ, wall)
    metrics["descriptor_version"] = float(desc.version)
    ctx.write_json("solution.json", {"t": sol.t, "y": sol.y, "z": sol.z, "stats": sol.stats.as_dict(),
                                     "success": sol.success, "failure_reason": sol.failure_reason})
    return CaseResult(metrics=metrics, info={"descriptor": str(p), "version": desc.version, "integrator": integ.name,
                                             "failure_reason": sol.failure_reason, "diagnostics": sol.diagnostics})
