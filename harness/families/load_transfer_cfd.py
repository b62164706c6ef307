"""Adapters of the CFD source family of load transfer (issue 33): Clawpack blasts in r-z.

- ``run_rigid_wall`` (conf/case/load_transfer/cfd_rigid_wall*.yaml): the blast above a rigid wall
  on PyClaw (uniform grid) or AMRClaw (our Fortran application, compiled in the prepare step);
  the seed's extraction event at every output (leaf wall faces only, gauge p - p_ref, exact
  annular overlap areas, ring areas checked), the wall-loads v1.1 file with production metadata,
  and the checkpoint/restart check: a run stopped after ``restart_frame`` and restarted from its
  checkpoint must give the uninterrupted wall history to round-off (``restart_max_diff`` [Pa]).
- ``run_spherical`` (conf/case/load_transfer/cfd_spherical.yaml): the spherical verification
  against the 1-D spherical reference over >= 3 grids, observed order gated at first order.
- ``run_wall_convergence`` (conf/case/load_transfer/cfd_wall_convergence.yaml): the wall impulse
  and the peak wall force over three grids (ratio 2) with their GCI.

Sizes: the ``*_full`` parameters replace the reduced ones when HARNESS_FULL=1.
"""
from __future__ import annotations

import logging
import os
import shlex
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
from omegaconf import DictConfig, OmegaConf

from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.core.params import case_params, check_rules
from harness.families.metric_kinds import CFD as METRIC_KINDS  # noqa: F401 - read by the runner

log = logging.getLogger(__name__)


def full() -> bool:
    return os.environ.get("HARNESS_FULL") == "1"


@dataclass
class SetupParams:
    """models.load_transfer.cfd_setup.BlastSetup (SI)."""

    R0: float = 0.2  # m
    H: float = 0.5  # m
    pressure_ratio: float = 10.0
    density_ratio: float = 1.0
    gamma: float = 1.4
    p_ambient: float = 1.0e5  # Pa
    rho_ambient: float = 1.2  # kg/m^3
    r_max: float = 1.0  # m
    z_max: float = 1.0  # m


@dataclass
class AmrParams:
    """AMRClaw run (models.load_transfer.cfd_amrclaw.AmrConfig)."""

    base: int = 25  # base grid cells in r (square cells)
    base_full: int = 50
    levels: int = 3
    ratio: int = 2
    flag_threshold: float = 0.05  # flag where |grad p| dx / p_ambient exceeds this [-]
    regrid_interval: int = 2
    checkpoint_interval: int = 0  # checkpoint every this many steps of level 1 (0: only at restart_frame)


@dataclass
class CfdParams:
    setup: SetupParams = field(default_factory=SetupParams)
    solver: str = "pyclaw"  # pyclaw | amrclaw
    n_r: int = 50  # uniform grid cells in r
    n_r_full: int = 200
    grids: List[int] = field(default_factory=lambda: [25, 50, 100])  # studies, ratio 2
    grids_full: List[int] = field(default_factory=lambda: [100, 200, 400])
    t_end: float = 1.2e-3  # s
    n_outputs: int = 30
    n_rings: int = 20
    r_wall: float = 0.5  # m, outer radial edge of the wall loads
    restart_frame: Optional[int] = None  # stop after this output and restart from the checkpoint
    study_id: str = "cfd-rigid-wall"
    t_verify: float = 1.0e-3  # s, spherical verification time
    n_reference: int = 4000
    n_reference_full: int = 16000
    min_order: float = 0.8  # gate of the observed order (documented in the case)
    amr: AmrParams = field(default_factory=AmrParams)


def _params(cfg: DictConfig) -> CfdParams:
    p = case_params(cfg, CfdParams)
    rules = [
        ("solver", p.solver in ("pyclaw", "amrclaw"), "must be 'pyclaw' or 'amrclaw'"),
        ("n_r", p.n_r >= 4, "must be >= 4"),
        ("t_end", p.t_end > 0, "must be > 0"),
        ("n_outputs", p.n_outputs >= 2, "must be >= 2"),
        ("n_rings", p.n_rings >= 1, "must be >= 1"),
        ("r_wall", 0 < p.r_wall <= p.setup.r_max, "must be in (0, setup.r_max]"),
        ("restart_frame", p.restart_frame is None or 0 <= p.restart_frame < p.n_outputs, "must be in [0, n_outputs)"),
        ("grids", len(p.grids) >= 3 and all(b == 2 * a for a, b in zip(p.grids, p.grids[1:])),
         "must list >= 3 grids, each twice the previous"),
        ("amr.levels", p.amr.levels >= 1, "must be >= 1"),
        ("amr.ratio", p.amr.ratio in (2, 4), "must be 2 or 4"),
    ]
    check_rules(p, rules)
    return p


def _setup(p: CfdParams):
    from models.load_transfer.cfd_setup import BlastSetup

    s = BlastSetup(**asdict(p.setup))
    try:
        s.check()
    except ValueError as exc:
        raise HarnessInputError(f"case.params.setup.{exc}") from exc
    return s


def _edges(p: CfdParams) -> np.ndarray:
    return np.linspace(0.0, p.r_wall, p.n_rings + 1)


def _command() -> str:
    return " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])


def _history(ex) -> tuple:
    t = np.asarray(ex.times)
    P = np.vstack(ex.pressure)
    F = P @ ex.ring_areas
    return t, P, F


def _force_figure(path: Path, curves: Dict[str, tuple], title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for label, (t, F) in curves.items():
        ax.plot(np.asarray(t) * 1e3, np.asarray(F) * 1e-3, label=label)
    ax.set_xlabel("t [ms]")
    ax.set_ylabel("wall force F(t) [kN]")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _uniform(setup, p: CfdParams, n_r: int, **kw):
    from models.load_transfer.cfd_pyclaw import run_uniform

    return run_uniform(setup, n_r, p.t_end, p.n_outputs, _edges(p), **kw)


def _pyclaw_meta(setup, p: CfdParams, run, study_id: str) -> Dict[str, Any]:
    from models.load_transfer.cfd_export import production_metadata
    from models.load_transfer.cfd_pyclaw import clawpack_version, fortran_compiler, source_sha256

    return production_metadata(
        setup, run.extractor, solver=f"clawpack {clawpack_version()} pyclaw euler_4wave_2D uniform",
        application_sha256=source_sha256("cfd_setup", "cfd_pyclaw", "cfd_wall"), compiler=fortran_compiler(),
        command=_command(), delta_min=run.dr, levels=[1, 1], study_id=study_id,
        extra={"grid": [run.n_r, run.n_z], "time_steps": run.n_steps})


def run_rigid_wall(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """The rigid-wall blast, its wall-loads file and the checkpoint/restart check."""
    from models.load_transfer.cfd_export import write_cfd_wall_loads
    from models.load_transfer.contracts import validate_file
    from models.load_transfer.extraction import ExtractionAreaError

    p = _params(cfg)
    setup = _setup(p)
    config_text = OmegaConf.to_yaml(cfg, resolve=True)
    metrics: Dict[str, Any] = {}
    info: Dict[str, Any] = {"params": asdict(p), "full_size": full()}
    try:
        if p.solver == "amrclaw":
            from harness.families.load_transfer_cfd_amr import amr_rigid_wall

            run, meta, extra_metrics, extra_info = amr_rigid_wall(setup, p, ctx, _edges(p), _command(), full())
            metrics.update(extra_metrics)
            info.update(extra_info)
            ex = run.extractor
        else:
            n_r = p.n_r_full if full() else p.n_r
            with ctx.stage("cfd"):
                run = _uniform(setup, p, n_r, checkpoint_dir=ctx.run_dir)
            ex = run.extractor
            meta = _pyclaw_meta(setup, p, run, p.study_id)
            metrics["time_steps"] = float(run.n_steps)
            if p.restart_frame is not None:
                with ctx.stage("restart"):
                    stop_dir = ctx.run_dir / "interrupted"
                    stop_dir.mkdir(exist_ok=True)
                    first = _uniform(setup, p, n_r, checkpoint_dir=stop_dir, stop_after_frame=p.restart_frame)
                    resumed = _uniform(setup, p, n_r, restart=stop_dir / "checkpoint.npz")
                metrics.update(_restart_metrics(run, first, resumed))
            info["grid"] = [run.n_r, run.n_z]
    except ExtractionAreaError as exc:
        raise HarnessInputError(f"case.params: extraction: {exc}") from exc
    with ctx.stage("extract"):
        path = ctx.add_output(write_cfd_wall_loads(ctx.run_dir, ex, case_id="cfd-rigid-wall", metadata=meta,
                                                   configuration=config_text))
    report = validate_file(path)
    t, P, F = _history(ex)
    J = float(np.sum(np.diff(t) * 0.5 * (F[1:] + F[:-1])))
    metrics.update({"impulse": J, "force_peak": float(F.max()), "pressure_peak": float(P.max()),
                    "area_error_max": float(ex.max_area_error), "violations": float(len(report.violations)),
                    "nan_count": float(np.count_nonzero(~np.isfinite(P)))})
    _force_figure(ctx.output_path("wall_force.png"), {f"{p.solver}": (t, F)},
                  f"rigid-wall blast: R0={setup.R0} m, H={setup.H} m, p ratio {setup.pressure_ratio}")
    info.update({"wall_loads_file": str(path), "metadata": {k: meta[k] for k in ("basilisk_commit", "compiler", "levels",
                                                                                  "delta_min", "output_cadence")}})
    return CaseResult(metrics=metrics, series={"wall_force": F.tolist()}, info=info)


def _restart_metrics(run, first, resumed) -> Dict[str, float]:
    """Largest differences between the uninterrupted run and the stopped + restarted one: of the
    ring pressures relative to their maximum, and of the final conserved state relative to its."""
    ex = run.extractor
    a = np.vstack(ex.pressure)
    b = np.vstack(resumed.extractor.pressure)
    if a.shape != b.shape or not np.array_equal(np.asarray(ex.times), np.asarray(resumed.extractor.times)):
        return {"restart_max_diff": float("inf"), "restart_stopped": float(first.stopped)}
    scale = float(np.max(np.abs(a))) or 1.0
    dq = float(np.max(np.abs(resumed.q_final - run.q_final)) / np.max(np.abs(run.q_final)))
    return {"restart_max_diff": float(np.max(np.abs(a - b))) / scale, "restart_stopped": float(first.stopped),
            "restart_frames_before_stop": float(first.frames_done), "restart_state_diff": dq}


def run_spherical(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Spherical verification: 2-D r-z against 1-D spherical; observed order of the L1 error."""
    from models.load_transfer.cfd_verification import spherical_verification

    p = _params(cfg)
    setup = _setup(p)
    grids = p.grids_full if full() else p.grids
    n_ref = p.n_reference_full if full() else p.n_reference
    try:
        with ctx.stage("verification"):
            res = spherical_verification(setup, grids, p.t_verify, n_ref)
    except ValueError as exc:
        raise HarnessInputError(f"case.params.setup.{exc}") from exc
    metrics = res.metrics()
    metrics["order_deficit"] = max(0.0, p.min_order - metrics["observed_order_min"])
    _profile_figure(ctx.output_path("spherical_profile.png"), res, setup)
    info = {"grids": list(grids), "n_reference": n_ref, "orders": res.orders, "min_order": p.min_order,
            "params": asdict(p), "full_size": full()}
    return CaseResult(metrics=metrics, series={"l1_error": [g.l1_error for g in res.grids]}, info=info)


def _profile_figure(path: Path, res, setup) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    c = 0.5 * (res.reference.edges[1:] + res.reference.edges[:-1])
    ax.plot(c, (res.reference.pressure - setup.p_ambient) * 1e-3, "k-", lw=1.2, label="1-D spherical reference")
    for g in res.grids:
        ax.plot(g.centers_r, (g.pressure_row - setup.p_ambient) * 1e-3, ".-", ms=3, lw=0.8, label=f"r-z {g.n_r}^2")
    ax.set_xlim(0.0, min(setup.r_max, 1.0))
    ax.set_xlabel("distance from the centre [m]")
    ax.set_ylabel("overpressure [kPa]")
    ax.set_title(f"spherical verification at t = {res.t * 1e3:.3g} ms")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run_wall_convergence(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Wall impulse and peak wall force over three uniform grids (ratio 2): GCI of both. Each grid's
    wall-loads file is written with the study's id (``convergence_study_id``)."""
    from harness.metrics.library import gci
    from models.load_transfer.cfd_export import write_cfd_wall_loads

    p = _params(cfg)
    setup = _setup(p)
    grids = (p.grids_full if full() else p.grids)[-3:]
    J: List[float] = []
    Fp: List[float] = []
    curves = {}
    with ctx.stage("cfd"):
        for n in grids:
            run = _uniform(setup, p, n)
            meta = _pyclaw_meta(setup, p, run, p.study_id)
            ctx.add_output(write_cfd_wall_loads(ctx.run_dir / f"cfd-rigid-wall-{n}.wall-loads.v1.h5", run.extractor,
                                                case_id=f"cfd-rigid-wall-{n}", metadata=meta,
                                                configuration=OmegaConf.to_yaml(cfg, resolve=True)))
            t, _, F = _history(run.extractor)
            J.append(float(np.sum(np.diff(t) * 0.5 * (F[1:] + F[:-1]))))
            Fp.append(float(F.max()))
            curves[f"{n}^2"] = (t, F)
    metrics: Dict[str, float] = {}
    for name, vals in (("impulse", J), ("force_peak", Fp)):
        for n, v in zip(grids, vals):
            metrics[f"{name}_{n}"] = v
        try:
            g = gci(vals[2], vals[1], vals[0], 2.0, 2.0)
        except ValueError as exc:  # identical levels: no order
            log.warning("%s: %s", name, exc)
            continue
        metrics[f"{name}_order"] = g.p
        metrics[f"{name}_extrapolated"] = g.f_extrapolated
        metrics[f"{name}_gci_fine"] = g.gci_12
    _force_figure(ctx.output_path("wall_force_convergence.png"), curves, "wall force on three grids (PyClaw)")
    return CaseResult(metrics=metrics, info={"grids": list(grids), "study_id": p.study_id, "params": asdict(p),
                                             "full_size": full()})
