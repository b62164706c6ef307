"""Adapter of the sliding-beam family (seed 003, issue 6).

Entry points (``case.adapter``):

* ``run``    – the sliding-beam case: full EB model vs the reduced model on a global POD
               basis (RMS errors, energy balance residuals, constraint violation, wall-time
               ratio measured in the same run);
* ``modal``  – natural frequencies vs closed forms (β_n L) or a fine conforming
               scikit-fem mesh, plus the scikit-fem cross-check on the same mesh;
* ``static`` – static deflections and support reactions vs closed forms;
* ``bench``  – benchmark: reduced vs full wall time (best of ``repeats``) and offline cost;
* ``exudyn_peer`` – the same beam, load and slider law on an ANCF cable with a sliding
               joint in Exudyn (optional peer), compared with the EB full and reduced models.

``snapshot_map`` is the study kind (``study.kind: snapshot_map``) that turns an
n_snap × r_snap multirun into an error map, a heat map and the best product.
"""
from __future__ import annotations

import io
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
from omegaconf import DictConfig

from harness.core.configs import store_schema
from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.core.params import build, case_params
from harness.core.warmup import WarmUp
from harness.families.metric_kinds import BEAM as METRIC_KINDS  # noqa: F401 - read by the runner
from harness.metrics import gates as G
from harness.metrics import library as Mx

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- group schemas
@dataclass
class BeamSourceConf:
    """A sliding-beam problem (models.beam.problem.make_problem); SI units."""

    _target_: str = "models.beam.problem.make_problem"
    length: float = 2.0  # m
    n_elements: int = 50
    youngs_modulus: float = 2.1e11  # Pa
    density: float = 7850.0  # kg/m³
    area: float = 1.0e-4  # m²
    second_moment: float = 2.0833333333333334e-10  # m⁴
    slider_kind: str = "none"  # none | fixed | sinusoidal | cosine_stroke
    slider_center: float = 0.0  # m (fixed position, or centre of the sinusoid)
    slider_amplitude: float = 0.0  # m
    slider_frequency: float = 0.0  # Hz
    slider_start: float = 0.0  # m (cosine stroke)
    slider_end: float = 0.0  # m
    slider_duration: float = 1.0  # s
    load_amplitudes: List[float] = field(default_factory=list)  # N (point) or N/m (uniform)
    load_frequencies: List[float] = field(default_factory=list)  # Hz
    load_position: Optional[float] = None  # m; null = uniform line load
    load_static: bool = False
    clamp: bool = True


@dataclass
class GlobalPODConf:
    """Global reduction basis by POD of eigenmode snapshots (models.beam.reduction)."""

    _target_: str = "models.beam.reduction.GlobalPODReductor"
    n_snap: int = 5
    r_snap: int = 6
    r_glob: int = 20
    s_min: Optional[float] = None  # m; null = slider range over the simulated time
    s_max: Optional[float] = None
    weight_exponent: float = 0.0  # pool columns scaled by (ω_1/ω_k)^p; 0 = the seed's plain POD


store_schema("source_beam", BeamSourceConf)
store_schema("operator_beam_pod", GlobalPODConf)


@dataclass
class SlidingParams:
    t_end: float = 2.0  # s
    dt: float = 5.0e-4  # s
    rho_inf: float = 0.85  # generalised-α spectral radius at infinity
    solver: str = "schur"  # schur | kkt
    figures: bool = True


@dataclass
class ModalParams:
    n_modes: int = 3
    reference: str = "closed_form"  # closed_form | skfem_fine
    beta_L: List[float] = field(default_factory=list)  # β_n L of the closed form
    skfem_elements: int = 400  # elements of the fine scikit-fem reference
    skfem_check: bool = True  # also compare with scikit-fem on the same nodes


@dataclass
class StaticParams:
    reference: str = "cantilever_tip"  # cantilever_tip | propped_uniform


@dataclass
class BenchParams:
    t_end: float = 2.0
    dt: float = 5.0e-4
    rho_inf: float = 0.85
    repeats: int = 3
    solvers: List[str] = field(default_factory=lambda: ["schur", "kkt"])
    blas_threads: int = 1  # BLAS threads during the timings (threadpoolctl), 0 = leave as is


@dataclass
class ExudynParams:
    t_end: float = 2.0
    dt: float = 5.0e-4
    rho_inf: float = 0.85
    newton_rtol: float = 1.0e-6
    classical_joint: bool = False  # Exudyn's classical sliding-joint formulation
    figures: bool = True


_params = case_params


def _positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise HarnessInputError(f"{name}: must be a finite number > 0, got {value!r}")


_build = build


def _guard(what: str):
    """Turn a model ValueError (bad value found while running) into HarnessInputError."""

    class _G:
        def __enter__(self):
            return self

        def __exit__(self, et, ev, tb):
            if et is not None and issubclass(et, ValueError) and not issubclass(et, HarnessInputError):
                raise HarnessInputError(f"{what}: {str(ev).splitlines()[0]}") from ev
            return False

    return _G()


def _fig(ctx: RunContext, name: str, fig) -> None:
    import matplotlib.pyplot as plt

    ctx.save_figure(name, fig)
    plt.close(fig)


def _npz(ctx: RunContext, name: str, **arrays) -> None:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    ctx.write_bytes(name, buf.getvalue())


def _violation(resp) -> float:
    """max_t |w(s(t))| / max_t,x |w| of a response (full or reduced)."""
    return float(np.max(np.abs(resp.slider_w))) / max(float(np.max(np.abs(resp.w))), 1e-300)


# ---------------------------------------------------------------- sliding case
def _sliding_setup(cfg: DictConfig, t_end: float, dt: float, who: str):
    """Problem (with a slider law), reductor and time grid of a sliding case; the slider
    law is checked to stay on the beam over the grid."""
    from models.beam.problem import time_grid

    problem = _build(cfg.source, "source")
    if problem.slider is None:
        raise HarnessInputError(f"source.slider_kind: {who} needs a slider law, got 'none'")
    reductor = _build(cfg.operator, "operator")
    with _guard("case.params"):
        t = time_grid(t_end, dt)
    with _guard("source"):
        problem.slider.check_on_beam(t, problem.beam.length)
    return problem, reductor, t


def run(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Full vs reduced sliding beam (the seed's evolved case and its variants)."""
    p = _params(cfg, SlidingParams)
    _positive("case.params.t_end", p.t_end)
    _positive("case.params.dt", p.dt)
    if p.solver not in ("schur", "kkt"):
        raise HarnessInputError(f"case.params.solver: must be 'schur' or 'kkt', got {p.solver!r}")
    if not 0.0 <= p.rho_inf <= 1.0:
        raise HarnessInputError(f"case.params.rho_inf: must lie in [0, 1], got {p.rho_inf}")
    with ctx.stage("build"):
        problem, reductor, t = _sliding_setup(cfg, p.t_end, p.dt, "the sliding case")
    warm = WarmUp()
    with _blas_threads(1):  # the same single-threaded BLAS for both timings
        with ctx.stage("offline_basis"), _guard("operator"):
            basis = reductor.build(problem, t)
        with ctx.stage("jit_warmup"):  # compilation out of both timings (issue 17/18)
            _warm_up(warm, problem, p.dt, p.rho_inf, (p.solver,), basis)
        with ctx.stage("full_model"):
            full = problem.simulate(p.t_end, p.dt, p.rho_inf, p.solver)
        with ctx.stage("reduced_model"):
            red = problem.simulate(p.t_end, p.dt, p.rho_inf, p.solver, basis=basis)
    sig = basis.singular_values
    metrics = {
        "rms_error": Mx.relative_rms(red.w, full.w),
        "tip_rms_error": Mx.relative_rms(red.tip, full.tip),
        "energy_residual_full": full.energy_residual(),
        "energy_residual_reduced": red.energy_residual(),
        "tip_max_full_m": float(np.max(np.abs(full.tip))),  # solution quantity of dt refinement [m]
        "slider_violation_full": _violation(full),
        "slider_violation_reduced": _violation(red),
        "time_ratio": red.wall_time_s / full.wall_time_s,
        "full_time_s": full.wall_time_s,
        "reduced_time_s": red.wall_time_s,
        "offline_time_s": basis.offline_time_s,
        "n_dof_full": float(problem.beam.ndof),
        "r_glob": float(basis.r_glob),
        "n_snap": float(reductor.n_snap),
        "r_snap": float(reductor.r_snap),
        "snap_product": float(reductor.n_snap * reductor.r_snap),
        "pool_rank": float(basis.pool_rank),
        "sigma_rglob_over_sigma1": float(sig[basis.r_glob - 1] / sig[0]),
        "retained_sigma2": basis.retained_energy(),
        "max_tip_full_m": float(np.max(np.abs(full.tip))),
        "max_energy_full_J": float(np.max(full.energy)),
        "max_constraint_work_J": float(np.max(np.abs(full.W_constraint))),
        "n_steps": float(t.size - 1),
        **warm.metrics(),
    }
    log.info("beam: rms %.4g tip %.4g time ratio %.3g", metrics["rms_error"], metrics["tip_rms_error"],
             metrics["time_ratio"])
    with ctx.stage("records"):
        stride = max(1, (t.size - 1) // 400)
        _npz(ctx, "responses.npz", t=t, s=full.s, w_full=full.w, w_red=red.w,
             E_full=full.energy, E_red=red.energy, W_ext_full=full.W_ext, W_ext_red=red.W_ext,
             W_c_full=full.W_constraint, W_c_red=red.W_constraint, lam_full=full.lam, lam_red=red.lam,
             Psi=basis.Psi, singular_values=sig, snapshot_positions=basis.positions)
        if p.figures:
            _sliding_figures(ctx, full, red, basis)
    series = {"singular_value_decay": (sig / sig[0]).tolist(),
              "energy_residual_full": (full.residual[::stride] / max(full.energy.max(), 1e-300)).tolist(),
              "energy_residual_reduced": (red.residual[::stride] / max(full.energy.max(), 1e-300)).tolist()}
    info = {"snapshot_positions_m": basis.positions.tolist(),
            "snapshot_frequencies_hz": basis.snapshot_frequencies_hz.tolist(),
            "integrator": f"generalised-alpha (Arnold-Bruls), rho_inf={p.rho_inf}, solver={p.solver}",
            "full_stats": full.stats, "reduced_stats": red.stats}
    return CaseResult(metrics=metrics, series=series, info=info)


def _sliding_figures(ctx: RunContext, full, red, basis) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(3, 1, figsize=(7, 8), sharex=True)
    ax[0].plot(full.t, full.tip * 1e3, label="full EB")
    ax[0].plot(red.t, red.tip * 1e3, "--", label=f"reduced (r={basis.r_glob})")
    ax[0].set_ylabel("tip w [mm]")
    ax[0].legend()
    ax[1].plot(full.t, full.s, color="k")
    ax[1].set_ylabel("slider s [m]")
    ax[2].plot(full.t, full.energy, label="E full")
    ax[2].plot(red.t, red.energy, "--", label="E reduced")
    ax[2].plot(full.t, full.W_ext + full.W_constraint, ":", label="W_ext + W_c (full)")
    ax[2].set_ylabel("energy [J]")
    ax[2].set_xlabel("t [s]")
    ax[2].legend()
    _fig(ctx, "tip_and_energy.png", fig)
    fig, ax = plt.subplots(figsize=(5, 4))
    s = basis.singular_values
    ax.semilogy(np.arange(1, s.size + 1), s / s[0], "o-", ms=3)
    ax.axvline(basis.r_glob, color="r", ls="--", label=f"r_glob = {basis.r_glob}")
    ax.set_xlabel("index")
    ax.set_ylabel("σ_k / σ_1")
    ax.set_title("POD of the snapshot pool")
    ax.legend()
    _fig(ctx, "singular_values.png", fig)


# ---------------------------------------------------------------- modal verification
def modal(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Natural frequencies of the constrained beam vs closed form / fine scikit-fem."""
    p = _params(cfg, ModalParams)
    if p.n_modes < 1:
        raise HarnessInputError(f"case.params.n_modes: must be >= 1, got {p.n_modes}")
    from models.beam.modal import constrained_modes
    from models.beam.peer_skfem import bending_frequencies, mesh_with_nodes

    problem = _build(cfg.source, "source")
    beam = problem.beam
    pins = []
    if problem.slider is not None:
        s0 = float(problem.slider.position(np.array([0.0]))[0])
        with _guard("source"):
            problem.slider.check_on_beam(np.array([0.0]), beam.length)
        pins = [s0]
    with ctx.stage("eigen"):
        C = problem.constraint().matrix(pins[0] if pins else None)
        omega, _ = constrained_modes(beam.M, beam.K, C, p.n_modes)
    EI = beam.youngs_modulus * beam.second_moment
    rhoA = beam.density * beam.area
    c = math.sqrt(EI / rhoA)
    if p.reference == "closed_form":
        if len(p.beta_L) < p.n_modes:
            raise HarnessInputError(f"case.params.beta_L: needs {p.n_modes} values, got {len(p.beta_L)}")
        ref = (np.asarray(p.beta_L[: p.n_modes]) / beam.length) ** 2 * c
    elif p.reference == "skfem_fine":
        if p.skfem_elements < beam.n_elements:
            raise HarnessInputError(f"case.params.skfem_elements: must be >= {beam.n_elements}")
        with ctx.stage("skfem_reference"):
            ref = bending_frequencies(mesh_with_nodes(beam.length, p.skfem_elements, pins), EI, rhoA,
                                      pins, p.n_modes)
    else:
        raise HarnessInputError(f"case.params.reference: must be closed_form or skfem_fine, got {p.reference!r}")
    err = np.abs(omega / ref - 1.0)
    metrics = {f"freq_error_{k + 1}": float(e) for k, e in enumerate(err)}
    metrics["freq_error_max"] = float(err.max())
    metrics.update({f"freq_{k + 1}_hz": float(w / (2 * math.pi)) for k, w in enumerate(omega)})
    if p.skfem_check:
        with ctx.stage("skfem_same_mesh"):
            if pins and not np.any(np.isclose(beam.x_nodes, pins[0], rtol=0, atol=1e-12 * beam.length)):
                x = mesh_with_nodes(beam.length, beam.n_elements, pins)  # conforming mesh: node at s
            else:
                x = beam.x_nodes
            w_sk = bending_frequencies(x, EI, rhoA, pins, p.n_modes)
        metrics["skfem_freq_diff_max"] = float(np.max(np.abs(omega / w_sk - 1.0)))
    return CaseResult(metrics=metrics, info={"reference_rad_s": np.asarray(ref).tolist(),
                                             "omega_rad_s": omega.tolist(), "pins_m": pins})


# ---------------------------------------------------------------- static verification
def static(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Static deflection and reactions vs Euler–Bernoulli closed forms (exact at the nodes)."""
    p = _params(cfg, StaticParams)
    from models.beam.modal import static_solution

    problem = _build(cfg.source, "source")
    beam = problem.beam
    EI = beam.youngs_modulus * beam.second_moment
    L = beam.length
    x = beam.x_nodes
    amp = float(sum(problem.load.amplitudes))
    f = amp * problem.load.vector(beam)
    if p.reference == "cantilever_tip":
        if problem.slider is not None or problem.load.position is None or not math.isclose(problem.load.position, L):
            raise HarnessInputError("source: cantilever_tip needs slider_kind 'none' and load_position = length")
        C = problem.constraint().matrix(None)
        q, lam = static_solution(beam.K, C, f)
        w_ref = amp * x**2 * (3 * L - x) / (6 * EI)
        th_ref = amp * x * (2 * L - x) / (2 * EI)
        reactions = {"clamp_force": (-lam[1], -amp), "clamp_moment": (-lam[2], -amp * L)}
    elif p.reference == "propped_uniform":
        if problem.slider is None or problem.load.position is not None:
            raise HarnessInputError("source: propped_uniform needs a fixed slider at length and a uniform load")
        s = float(problem.slider.position(np.array([0.0]))[0])
        if not math.isclose(s, L):
            raise HarnessInputError(f"source.slider_center: propped_uniform needs the support at x = {L}, got {s}")
        C = problem.constraint().matrix(s)
        q, lam = static_solution(beam.K, C, f)
        w_ref = amp * x**2 * (3 * L**2 - 5 * L * x + 2 * x**2) / (48 * EI)
        th_ref = amp * x * (6 * L**2 - 15 * L * x + 8 * x**2) / (48 * EI)
        reactions = {"support_force": (-lam[-1], -3 * amp * L / 8), "clamp_force": (-lam[1], -5 * amp * L / 8),
                     "clamp_moment": (-lam[2], -amp * L**2 / 8)}
    else:
        raise HarnessInputError(f"case.params.reference: must be cantilever_tip or propped_uniform, got {p.reference!r}")
    w = q[beam.w_dofs]
    th = q[beam.w_dofs + 1]
    metrics = {"deflection_error": Mx.e_F(w, w_ref), "rotation_error": Mx.e_F(th, th_ref),
               "max_deflection_m": float(np.max(np.abs(w)))}
    for k, (got, want) in reactions.items():
        metrics[f"{k}_error"] = Mx.rel_error(got, want)
    return CaseResult(metrics=metrics)


def _warm_up(warm: WarmUp, problem, dt: float, rho_inf: float, solvers, basis) -> None:
    """Two steps of the full and the reduced model per solver: the compiled step loops
    (models.beam.genalpha) are compiled or loaded from the cache before any timing."""
    for solver in solvers:
        warm(problem.simulate, 2.0 * dt, dt, rho_inf, solver)
        if basis is not None:
            warm(problem.simulate, 2.0 * dt, dt, rho_inf, solver, basis=basis)


# ---------------------------------------------------------------- benchmark
def bench(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Reduced vs full online wall time on the same grid (best of ``repeats``), per solver."""
    p = _params(cfg, BenchParams)
    _positive("case.params.t_end", p.t_end)
    _positive("case.params.dt", p.dt)
    if p.repeats < 1:
        raise HarnessInputError(f"case.params.repeats: must be >= 1, got {p.repeats}")
    from models.beam.problem import time_grid

    problem = _build(cfg.source, "source")
    reductor = _build(cfg.operator, "operator")
    with _guard("case.params"):
        t = time_grid(p.t_end, p.dt)
    with _blas_threads(p.blas_threads) as n_threads:
        metrics = _bench_timings(ctx, p, problem, reductor, t)
    metrics["n_steps"] = float(t.size - 1)
    metrics["n_dof_full"] = float(problem.beam.ndof)
    metrics["blas_threads"] = float(n_threads)
    return CaseResult(metrics=metrics, info={"repeats": p.repeats, "solvers": list(p.solvers)})


def _bench_timings(ctx: RunContext, p: BenchParams, problem, reductor, t) -> Dict[str, float]:
    offline = []
    with ctx.stage("offline_basis"), _guard("operator"):
        for _ in range(p.repeats):
            basis = reductor.build(problem, t)
            offline.append(basis.offline_time_s)
    metrics: Dict[str, float] = {"offline_time_s": min(offline)}
    for solver in p.solvers:
        if solver not in ("schur", "kkt"):
            raise HarnessInputError(f"case.params.solvers: each must be 'schur' or 'kkt', got {solver!r}")
    warm = WarmUp()
    with ctx.stage("jit_warmup"):
        _warm_up(warm, problem, p.dt, p.rho_inf, tuple(p.solvers), basis)
    metrics.update(warm.metrics())
    for solver in p.solvers:
        tf, tr = [], []
        with ctx.stage(f"timing_{solver}"):
            for _ in range(p.repeats):  # interleaved so that machine load hits both alike
                full = problem.simulate(p.t_end, p.dt, p.rho_inf, solver)
                red = problem.simulate(p.t_end, p.dt, p.rho_inf, solver, basis=basis)
                tf.append(full.wall_time_s)
                tr.append(red.wall_time_s)
        metrics[f"full_time_s_{solver}"] = min(tf)
        metrics[f"reduced_time_s_{solver}"] = min(tr)
        metrics[f"time_ratio_{solver}"] = min(tr) / min(tf)
        metrics[f"rms_error_{solver}"] = Mx.relative_rms(red.w, full.w)
        metrics[f"offline_over_full_{solver}"] = min(offline) / min(tf)
    metrics["r_glob"] = float(basis.r_glob)
    return metrics


class _blas_threads:
    """Limit BLAS threads with threadpoolctl (if installed) for fair, less noisy timings."""

    def __init__(self, n: int):
        self.n, self._ctl = int(n), None

    def __enter__(self) -> int:
        if self.n <= 0:
            return 0
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            log.warning("threadpoolctl not installed: BLAS threads not limited")
            return 0
        self._ctl = threadpool_limits(limits=self.n, user_api="blas")
        return self.n

    def __exit__(self, *exc) -> bool:
        if self._ctl is not None:
            self._ctl.restore_original_limits()
        return False


# ---------------------------------------------------------------- study kind
def snapshot_map(df, out_dir: Path) -> Dict[str, Any]:
    """Error map over n_snap × r_snap (study.kind: snapshot_map): heat map and best product."""
    ok = df[(df["status"] == "ok")]
    for col in ("n_snap", "r_snap", "rms_error"):
        if col not in ok:
            raise ValueError(f"snapshot_map: the jobs did not report {col!r}")
    ns = np.unique(ok["n_snap"].to_numpy(float))
    rs = np.unique(ok["r_snap"].to_numpy(float))
    grid = np.full((ns.size, rs.size), np.nan)
    tip = np.full((ns.size, rs.size), np.nan)
    for _, row in ok.iterrows():
        i = int(np.searchsorted(ns, row["n_snap"]))
        j = int(np.searchsorted(rs, row["r_snap"]))
        grid[i, j] = row["rms_error"]
        tip[i, j] = row.get("tip_rms_error", np.nan)
    k = int(np.nanargmin(grid))
    bi, bj = np.unravel_index(k, grid.shape)
    best = {"best_rms_error": float(grid[bi, bj]), "best_tip_rms_error": float(tip[bi, bj]),
            "best_n_snap": float(ns[bi]), "best_r_snap": float(rs[bj]),
            "best_product": float(ns[bi] * rs[bj]), "worst_rms_error": float(np.nanmax(grid)),
            "n_cells": float(np.isfinite(grid).sum())}
    _plot_heatmap(ns, rs, grid, best, out_dir / "snapshot_heatmap.png")
    verdict = G.Band(pass_max=0.02, warn_max=0.02).judge(best["best_rms_error"])
    return {"metrics": best, "verdict": verdict}


def _plot_heatmap(ns, rs, grid, best, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    from harness.core.figures import save

    fig, ax = plt.subplots(figsize=(6, 4.5))
    pct = grid * 100.0
    im = ax.imshow(pct, origin="lower", cmap="viridis_r", aspect="auto",
                   norm=LogNorm(vmin=np.nanmin(pct), vmax=max(np.nanmax(pct), np.nanmin(pct) * 1.01)))
    ax.set_xticks(range(rs.size), [f"{int(r)}" for r in rs])
    ax.set_yticks(range(ns.size), [f"{int(n)}" for n in ns])
    for i in range(ns.size):
        for j in range(rs.size):
            if np.isfinite(grid[i, j]):
                ax.text(j, i, f"{100 * grid[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color="k" if pct[i, j] < 3.0 * np.nanmin(pct) else "w")
    ax.plot([rs.tolist().index(best["best_r_snap"])], [ns.tolist().index(best["best_n_snap"])], "rs",
            ms=22, mfc="none", mew=1.5)
    ax.set_xlabel("r_snap (modes per snapshot)")
    ax.set_ylabel("n_snap (slider positions)")
    ax.set_title(f"RMS error [%], r_glob fixed; best n_snap·r_snap = {best['best_product']:.0f}")
    fig.colorbar(im, ax=ax, label="RMS displacement error [%]")
    save(fig, path, dpi=110)


# ---------------------------------------------------------------- Exudyn ANCF peer
def exudyn_peer(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Same beam, load and slider law on an ANCF cable with a sliding joint (Exudyn)."""
    p = _params(cfg, ExudynParams)
    _positive("case.params.t_end", p.t_end)
    _positive("case.params.dt", p.dt)
    _positive("case.params.newton_rtol", p.newton_rtol)
    import importlib.util

    if importlib.util.find_spec("exudyn") is None:
        raise HarnessInputError("case beam/exudyn_ancf needs the optional peer 'exudyn' "
                                "(pip install exudyn)")
    from models.beam.peer_exudyn import simulate_ancf

    problem, reductor, t = _sliding_setup(cfg, p.t_end, p.dt, "the ANCF peer")
    with ctx.stage("offline_basis"), _guard("operator"):
        basis = reductor.build(problem, t)
    warm = WarmUp()
    with ctx.stage("jit_warmup"):
        _warm_up(warm, problem, p.dt, p.rho_inf, ("schur",), basis)
    with ctx.stage("full_model"):
        full = problem.simulate(p.t_end, p.dt, p.rho_inf)
    with ctx.stage("reduced_model"):
        red = problem.simulate(p.t_end, p.dt, p.rho_inf, basis=basis)
    with ctx.stage("ancf_exudyn"), _guard("source"):
        anc = simulate_ancf(problem, p.t_end, p.dt, p.rho_inf, p.newton_rtol, classical_joint=p.classical_joint)
    if anc.t.shape != t.shape or np.max(np.abs(anc.t - t)) > 1e-9 * p.t_end:
        raise RuntimeError(f"Exudyn output grid ({anc.t.size} samples) differs from the EB grid ({t.size})")
    Eref = float(np.max(anc.energy))
    metrics = {
        "tip_rms_ancf_vs_full": Mx.relative_rms(full.tip, anc.tip),
        "rms_ancf_vs_full": Mx.relative_rms(full.w, anc.w),
        "tip_rms_ancf_vs_reduced": Mx.relative_rms(red.tip, anc.tip),
        "rms_ancf_vs_reduced": Mx.relative_rms(red.w, anc.w),
        "tip_rms_reduced_vs_full": Mx.relative_rms(red.tip, full.tip),
        "energy_history_diff_full": float(np.max(np.abs(full.energy - anc.energy))) / Eref,
        "energy_history_diff_reduced": float(np.max(np.abs(red.energy - anc.energy))) / Eref,
        "energy_residual_ancf_drive": anc.energy_residual(),
        "energy_residual_ancf_normal": anc.energy_residual_normal(),
        "tangential_reaction_median_N": float(np.median(np.abs(anc.tangential_reaction))),
        "tangential_work_J": float(anc.W_constraint[-1] - anc.W_normal[-1]),
        "energy_residual_full": full.energy_residual(),
        "energy_residual_reduced": red.energy_residual(),
        "external_work_diff_full": abs(full.W_ext[-1] - anc.W_ext[-1]) / max(abs(anc.W_ext[-1]), 1e-300),
        "ancf_time_s": anc.wall_time_s,
        "full_time_s": full.wall_time_s,
        "reduced_time_s": red.wall_time_s,
        "time_ratio_reduced_vs_ancf": red.wall_time_s / anc.wall_time_s,
        "time_ratio_full_vs_ancf": full.wall_time_s / anc.wall_time_s,
        "max_tip_ancf_m": float(np.max(np.abs(anc.tip))),
        **warm.metrics(),
    }
    with ctx.stage("records"):
        _npz(ctx, "ancf_comparison.npz", t=t, tip_ancf=anc.tip, tip_full=full.tip, tip_red=red.tip,
             E_ancf=anc.energy, E_full=full.energy, E_red=red.energy, W_ext_ancf=anc.W_ext,
             W_c_ancf=anc.W_constraint, W_n_ancf=anc.W_normal, R_t_ancf=anc.tangential_reaction,
             sliding_coordinate=anc.sliding_coordinate)
        if p.figures:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
            ax[0].plot(t, anc.tip * 1e3, label="ANCF + sliding joint (Exudyn)")
            ax[0].plot(t, full.tip * 1e3, "--", label="EB full")
            ax[0].plot(t, red.tip * 1e3, ":", label=f"EB reduced (r={basis.r_glob})")
            ax[0].set_ylabel("tip w [mm]")
            ax[0].legend()
            ax[1].plot(t, anc.energy * 1e3, label="ANCF")
            ax[1].plot(t, full.energy * 1e3, "--", label="EB full")
            ax[1].plot(t, red.energy * 1e3, ":", label="EB reduced")
            ax[1].set_ylabel("E = T + U [mJ]")
            ax[1].set_xlabel("t [s]")
            ax[1].legend()
            _fig(ctx, "ancf_tip_energy.png", fig)
    return CaseResult(metrics=metrics, info={"exudyn_stats": anc.stats, "newton_rtol": p.newton_rtol,
                                             "classical_joint": p.classical_joint})
