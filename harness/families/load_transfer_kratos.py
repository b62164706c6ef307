"""Adapter of the Kratos load-transfer cases (issue 8): transferred loads in a real Kratos MPM
elastic case, cross-checked with the scikit-fem model of the same body.

Cases: conf/case/load_transfer/kratos_static.yaml, kratos_dynamic.yaml; study
conf/study/load_transfer/kratos_time_step.yaml. Every case writes its own source (wall-loads
v1), the surface quadrature table and the exported kratos-point-loads v1 file in the run
directory, then runs Kratos (OMP_NUM_THREADS=1, stdout in kratos.log) and the FE model.
The manifest info records the Kratos version, its applications and the thread count.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np
from omegaconf import DictConfig, OmegaConf

from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.core.params import case_params, check_rules
from harness.families.metric_kinds import KRATOS as METRIC_KINDS  # noqa: F401 - read by the runner
from harness.metrics import library as M

log = logging.getLogger(__name__)


@dataclass
class BodyParams:
    """The elastic cylinder (meridian rectangle [0, radius] x [0, height]) and its grid."""

    radius: float = 0.01  # m
    height: float = 0.02  # m
    E: float = 2.0e9  # Pa
    nu: float = 0.3
    rho: float = 1200.0  # kg/m^3
    nr: int = 4  # grid cells along r (= body elements: grid matching the body)
    nz: int = 8
    formulation: str = "axisymmetric"  # axisymmetric | plane_strain


@dataclass
class SourceParams:
    kind: str = "synthetic"  # analytic (constant, debug file) | synthetic (quadtree wall run, production file)
    # | file (an existing wall-loads v1 file at ``path``, e.g. handed over by the seed-000 workflow)
    path: Optional[str] = None
    profile: str = "parabolic"  # analytic only: uniform | parabolic
    p0: float = 2.0e5  # Pa
    n_rings: int = 40
    t_end: float = 5.0e-5  # s, source span (>= t_run)
    n_outputs: int = 51
    p_ref: float = 1.0e5  # Pa


@dataclass
class KratosParams:
    """case.params of the Kratos cases."""

    body: BodyParams = field(default_factory=BodyParams)
    source: SourceParams = field(default_factory=SourceParams)
    solver: str = "dynamic"  # static | dynamic
    t_run: float = 4.0e-5  # s, dynamic run span; dt = t_run / n_steps (static: one unit step)
    n_steps: int = 40
    levels: int = 1  # dynamic: >1 also runs the levels refined by 2 in nr, nz and n_steps
    richardson: bool = False  # also run 2 n_steps (same grid): peak_change, work_change
    full_scale: int = 2  # HARNESS_FULL=1: nr, nz and n_steps times this factor
    point_loads: str = "conservative"  # conservative (exact face integrals) | sampled (ring value x area)
    fe_backend: str = "skfem"
    fe_peer: Optional[str] = None  # "dolfinx": also solve with Debian's DOLFINx (system interpreter, own process)
    dolfinx_python: str = "/usr/bin/python3"  # the interpreter Debian's python3-dolfinx is installed for
    fail_above: float = 0.02  # mapping-only abort threshold of the point-load process
    export_mode: str = "production"  # production | debug (the analytic source is a debug file)
    J_scale: float = 0.0  # N s
    # an existing kratos-point-loads file for the level-0 body's top face (the seed-000 workflow's export
    # stage): level 0 reads it instead of exporting (finer levels export ``source`` onto their faces);
    # static runs apply its peak knot (largest |source force|) as the constant load
    loads_file: Optional[str] = None
    # dynamic: empty background-grid rows above the body, so that top-face load points that move up stay
    # inside the grid (a point that leaves it is erased by Kratos); 0: the grid matches the body
    grid_margin_rows: int = 0


def _params(cfg: DictConfig) -> KratosParams:
    p = case_params(cfg, KratosParams)
    rules = [
        ("solver", p.solver in ("static", "dynamic"), "must be 'static' or 'dynamic'"),
        ("n_steps", p.n_steps >= 1, "must be >= 1"),
        ("levels", p.levels >= 1, "must be >= 1"),
        ("full_scale", p.full_scale >= 1, "must be >= 1"),
        ("t_run", p.t_run > 0.0, "must be > 0 s"),
        ("fail_above", 0.0 < p.fail_above, "must be > 0"),
        ("export_mode", p.export_mode in ("production", "debug"), "must be 'production' or 'debug'"),
        ("point_loads", p.point_loads in ("conservative", "sampled"), "must be 'conservative' or 'sampled'"),
        ("fe_peer", p.fe_peer in (None, "dolfinx"), "must be null or 'dolfinx'"),
        ("point_loads", p.point_loads == "sampled" or p.body.formulation == "axisymmetric",
         "conservative point loads need body.formulation 'axisymmetric' (use 'sampled')"),
        ("source.kind", p.source.kind in ("analytic", "synthetic", "file"),
         "must be 'analytic', 'synthetic' or 'file'"),
        ("source.path", p.source.kind != "file" or (p.source.path is not None and Path(p.source.path).is_file()),
         "source.kind 'file' needs an existing wall-loads v1 file"),
        ("loads_file", p.loads_file is None or Path(p.loads_file).is_file(),
         "must be an existing kratos-point-loads file"),
        ("body.nr", p.body.nr >= 1, "must be >= 1"),
        ("body.nz", p.body.nz >= 1, "must be >= 1"),
        ("grid_margin_rows", p.grid_margin_rows >= 0, "must be >= 0"),
    ]
    check_rules(p, rules)
    if p.solver == "dynamic" and p.source.kind == "synthetic" and p.t_run > p.source.t_end:
        raise HarnessInputError(f"case.params.t_run: must be <= source.t_end = {p.source.t_end!r} s "
                                f"(no loads are extrapolated), got {p.t_run!r}")
    return p


def _body(bp: BodyParams, scale: int):
    from models.load_transfer.fe.base import ElasticBody

    try:
        return ElasticBody(radius=bp.radius, height=bp.height, E=bp.E, nu=bp.nu, rho=bp.rho, nr=bp.nr * scale,
                           nz=bp.nz * scale, formulation=bp.formulation)
    except ValueError as exc:
        raise HarnessInputError(f"case.params.body.{exc}") from exc


def _spec(p: KratosParams, n_steps: int):
    from models.load_transfer.kratos.builder import MPMSpec

    if p.solver == "static":
        return MPMSpec(solver="static", dt=1.0, n_steps=1, t0=0.0)
    return MPMSpec(solver="dynamic", dt=p.t_run / n_steps, n_steps=n_steps, t0=0.0,
                   grid_margin_rows=p.grid_margin_rows)


def _one_level(cfg, ctx: RunContext, p: KratosParams, body, n_steps: int, tag: str) -> Dict[str, Any]:
    """Export + Kratos + FE on one (grid, step) level; returns metrics, series and info."""
    from models.load_transfer.export import ExportInputError, MappingError
    from models.load_transfer.kratos import workflow as W
    from models.load_transfer.kratos.analysis import run_mpm
    from models.load_transfer.kratos.loads import (
        LoadsFileError,
        MappingAbort,
        read_meridian_loads,
    )
    from models.load_transfer.kratos.workflow import SourceSpec

    spec = _spec(p, n_steps)
    s = p.source
    src = SourceSpec(kind=s.kind, profile=s.profile, p0=s.p0, n_rings=s.n_rings,
                     t_end=s.t_end if s.kind == "synthetic" else 1.0, n_outputs=s.n_outputs, p_ref=s.p_ref)
    out = ctx.run_dir / tag
    out.mkdir(parents=True, exist_ok=True)
    case_id = f"kratos-{tag}"
    if p.loads_file is not None and tag == "level0":  # handed over (the workflow's export stage)
        ex, loads, table = _handed_over_loads(ctx, p, body, spec)
    else:
        with ctx.stage("export"):
            try:
                if s.kind == "file":  # handed over: read as is (the export validates it)
                    wl = Path(s.path)
                else:
                    wl = W.write_source(src, body, out, case_id, configuration=OmegaConf.to_yaml(cfg, resolve=True))
                if p.point_loads == "conservative":
                    table, faces = W.top_face_faces(body)
                else:
                    table, faces = W.top_face_table(body), None
                ex = W.export_loads(wl, table, spec, out, mode=p.export_mode, fail_above=p.fail_above, faces=faces)
            except (ExportInputError, ValueError) as exc:
                raise HarnessInputError(f"case.params: export: {exc}") from exc
            except MappingError as exc:  # the export refuses the file (mapping above fail_above): a failed case
                log.error("%s", exc)
                return {"aborted": {"e_F": exc.e_F, "e_J": exc.e_J, "export_refused": 1.0}}
        if s.kind == "file":  # a handed-over file is an input of the run, a written one an output
            ctx.add_input(wl)
        else:
            ctx.add_output(wl)
        ctx.add_output(ex.path)
        loads = read_meridian_loads(ex.path)
    with ctx.stage("kratos"):
        try:
            mpm = run_mpm(body, spec, loads, fail_above=p.fail_above, J_scale=p.J_scale,
                          log_path=out / "kratos.log")
        except LoadsFileError as exc:
            raise HarnessInputError(str(exc)) from exc
        except MappingAbort as exc:
            log.error("%s", exc)
            return {"aborted": {"e_F": exc.e_F, "e_J": exc.e_J, "aborted_step": float(exc.step)}}
    ctx.add_output(out / "kratos.log")
    tol = 1e-9 * max(body.radius, body.height)
    with ctx.stage("fe"):
        if spec.solver == "static":
            solver, fe = W.fe_static(body, loads, spec, p.fe_backend)
            cmp = W.compare_static(mpm, fe, tol)
        else:
            solver, fe = W.fe_dynamic(body, loads, spec, p.fe_backend)
            cmp = W.compare_dynamic(mpm, fe, solver.gauss_points(), table["tributary_area"].to_numpy(), tol)
    peer: Dict[str, Any] = {}
    if p.fe_peer == "dolfinx":
        with ctx.stage("dolfinx"):
            peer = _dolfinx_peer(p, body, loads, spec, mpm, fe, out, tol, fe_solver=solver)
        cmp.update(peer.pop("metrics"))
    r = mpm.records
    # the process records are on the Kratos steps with their actual lengths: trapezoid-free sums
    J_B, J_M = float(r["J_B"][-1]), float(r["J_M"][-1])
    metrics = {"e_F": M.e_F(r["F_M"], r["F_B"]), "e_J": M.e_J(J_M, J_B, p.J_scale), "export_e_F": ex.e_F,
               "export_e_J": ex.e_J, "J_B": J_B, "J_M": J_M, "steps": float(r["time"].size),
               "step_time_error": float(np.max(np.abs(r["dt"] - spec.dt)) / spec.dt),
               "area_sum_error": abs(ex.area_sum - ex.area_exact) / ex.area_exact,
               "export_column_error": ex.column_error, **cmp}
    series = {"time": r["time"], "F_B": r["F_B"], "F_M": r["F_M"], "J_B": r["J_B"], "J_M": r["J_M"],
              "work": r["work"]}
    if spec.solver == "dynamic":
        series["response"] = W.top_response(r["u_points"], table["tributary_area"].to_numpy())
        series["response_fe"] = W.top_response(fe.u_points[1:], table["tributary_area"].to_numpy())
    info = {"mpm": mpm.info, "seconds": mpm.seconds, "n_steps": n_steps, "dt": spec.dt, "nr": body.nr,
            "nz": body.nz, "fe_backend": p.fe_backend, "point_loads": ex.point_loads,
            "radial_edges": loads_edges(ex.path)}
    if peer:
        info["dolfinx"] = peer["info"]
    return {"metrics": metrics, "series": series, "info": info}


def _handed_over_loads(ctx: RunContext, p: KratosParams, body, spec):
    """(export record, loads, table) of the kratos-point-loads file ``p.loads_file`` (an input).

    The record carries what the export would report (e_F, e_J, face column error and point-load
    path from the file's metadata; the area sum of its conditions against pi r_map^2). A static run
    applies the file's peak knot (largest |source force|) as a constant load.
    """
    from types import SimpleNamespace

    from models.load_transfer.contracts.kratos_loads import read_kratos_loads
    from models.load_transfer.kratos import workflow as W
    from models.load_transfer.kratos.loads import LoadsFileError, read_meridian_loads

    path = ctx.add_input(p.loads_file)
    try:
        d = read_kratos_loads(path)
        loads = read_meridian_loads(path)
    except (LoadsFileError, ValueError, OSError) as exc:  # OSError: a file HDF5 cannot read (UnreadableFileError)
        raise HarnessInputError(f"case.params.loads_file: {exc}") from exc
    meta, attrs = d["metadata"], d["attrs"]
    if spec.solver == "dynamic" and p.levels > 1:  # the finer levels export ``source``: it must be the file's
        from models.load_transfer.contracts.wall_loads import sha256_file

        src_sha = sha256_file(p.source.path) if p.source.kind == "file" else None
        if src_sha != attrs.get("source_sha256"):
            raise HarnessInputError(
                f"case.params.loads_file: with levels > 1 the finer levels export case.params.source, which must be "
                f"the wall-loads file {path.name} was exported from (source.kind=file, SHA-256 "
                f"{str(attrs.get('source_sha256'))[:12]}...), got source.kind={p.source.kind!r}"
                + (f" with SHA-256 {src_sha[:12]}..." if src_sha else ""))
    r_map = float(attrs.get("r_map", body.radius))
    ex = SimpleNamespace(path=path, e_F=float(meta.get("e_F", float("nan"))), e_J=float(meta.get("e_J", float("nan"))),
                         area_sum=float(np.sum(d["conditions/tributary_area"])), area_exact=float(np.pi * r_map**2),
                         column_error=float(meta.get("face_column_error", float("nan"))),
                         point_loads=str(meta.get("point_loads", "?")))
    if spec.solver == "static":
        k = int(np.argmax(np.abs(loads.source_force)))
        loads = dataclasses.replace(loads, time=np.array([spec.t0, spec.t0 + spec.dt * spec.n_steps]),
                                    forces=np.repeat(loads.forces[k:k + 1], 2, axis=0),
                                    source_force=np.repeat(loads.source_force[k:k + 1], 2))
        log.info("static run on the peak knot %d (t = %.4g s) of %s", k, float(d["source/time"][k]), path.name)
    table = W.top_face_faces(body)[0] if p.point_loads == "conservative" else W.top_face_table(body)
    return ex, loads, table


def full_size() -> bool:
    """True under HARNESS_FULL=1 (full sizes)."""
    return os.environ.get("HARNESS_FULL") == "1"


def size_scale(full_scale: int) -> int:
    """The factor on nr, nz and n_steps: ``full_scale`` at full sizes, else 1."""
    return int(full_scale) if full_size() else 1


def run(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Static or dynamic Kratos case (see the module docstring); levels/richardson add runs."""
    p = _params(cfg)
    full = full_size()
    scale = size_scale(p.full_scale)
    base_steps = p.n_steps * scale
    levels = []
    for k in range(p.levels if p.solver == "dynamic" else 1):
        body = _body(p.body, scale * 2**k)
        lv = _one_level(cfg, ctx, p, body, base_steps * 2**k, f"level{k}")
        if "aborted" in lv:  # the point-load process stopped the run: e_F / e_J fail their gates
            from models.load_transfer.kratos.runtime import kratos_info

            return CaseResult(metrics=lv["aborted"], info={"aborted_level": k, "params": asdict(p),
                                                           "kratos": kratos_info()})
        levels.append(lv)
    fine = levels[-1]
    metrics = dict(fine["metrics"])
    metrics["e_F"] = max(lv["metrics"]["e_F"] for lv in levels)
    metrics["e_J"] = max(lv["metrics"]["e_J"] for lv in levels)
    info: Dict[str, Any] = {"kratos": fine["info"]["mpm"], "levels": [lv["info"] for lv in levels], "full_size": full,
                            "params": asdict(p)}
    if len(levels) > 1:
        for name in ("u_l2_rel_diff", "u_max_rel_diff", "vm_l2_rel_diff", "kratos_dolfinx_u_l2_rel_diff"):
            if name not in fine["metrics"]:
                continue
            seq = [lv["metrics"][name] for lv in levels]
            metrics[f"{name}_coarse"] = seq[0]
            metrics[f"{name}_order"] = M.observed_order(seq[-2], seq[-1], 2.0)
    if p.richardson and p.solver == "dynamic":
        body = _body(p.body, scale)
        half = _one_level(cfg, ctx, p, body, base_steps * 2, "richardson")
        base = levels[0]["metrics"]
        # the scikit-fem model on the same grid, steps and step loads: what the MPM adds
        for name, key in (("peak_change", "peak_response"), ("work_change", "external_work"),
                          ("peak_change_fe", "peak_response_fe"), ("work_change_fe", "external_work_fe")):
            metrics[name] = abs(base[key] - half["metrics"][key]) / abs(half["metrics"][key])
        info["richardson"] = half["info"]
    series = dict(fine["series"])
    _plot(ctx, series, p.solver)
    if p.body.formulation == "axisymmetric":
        _plot_rings(ctx, _body(p.body, scale), fine["info"]["radial_edges"], metrics)
    return CaseResult(metrics=metrics, series=series, info=info)


def _plot(ctx: RunContext, series: Dict[str, Any], solver: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.asarray(series["time"])
    fig, axes = plt.subplots(1, 2 if solver == "dynamic" else 1, figsize=(10 if solver == "dynamic" else 5, 3.6),
                             squeeze=False)
    ax = axes[0, 0]
    ax.plot(t, series["F_B"], "k-", label="source F_B")
    ax.plot(t, series["F_M"], "r--", label="applied F_M")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("force [N]")
    ax.legend()
    if solver == "dynamic":
        ax = axes[0, 1]
        ax.plot(t, series["response"], "r-", label="Kratos MPM")
        ax.plot(t, series["response_fe"], "k--", label="scikit-fem")
        ax.set_xlabel("t [s]")
        ax.set_ylabel("mean top u_z [m]")
        ax.legend()
    fig.tight_layout()
    ctx.save_figure("kratos_loads.png", fig)
    plt.close(fig)


def _dolfinx_peer(p: KratosParams, body, loads, spec, mpm, fe, out, tol: float, fe_solver=None) -> Dict[str, Any]:
    """The same body, material, mesh, element and step loads in DOLFINx: DOLFINx - scikit-fem and
    Kratos - DOLFINx differences (displacement L2 / max, von Mises L2; dynamic: also the peak
    response and the external work). Exchange files and the worker log in ``out/dolfinx``."""
    from models.load_transfer.fe.base import PointLoads, von_mises
    from models.load_transfer.fe.dolfinx_backend import (
        DolfinxSolver,
        DolfinxUnavailable,
    )
    from models.load_transfer.kratos import workflow as W

    try:
        dx = DolfinxSolver(body, python=p.dolfinx_python, workdir=out / "dolfinx")
    except DolfinxUnavailable as exc:
        raise HarnessInputError(f"case.params.{exc}") from exc
    m: Dict[str, float] = {}
    if spec.solver == "static":
        fd = dx.static(loads.points, W.step_forces(loads, spec)[-1])
        fs = fe
        kd = W.compare_static(mpm, fd, tol)
        m.update({f"kratos_dolfinx_{k}": v for k, v in kd.items() if k.endswith("rel_diff")})
        # force through each code: the applied force read back from Kratos against the support
        # reactions of the two FE models (equilibrium of the transferred load)
        F_applied = float(mpm.records["F_M"][-1])
        m["dolfinx_reaction_rel_diff"] = abs(dx.base_reaction - F_applied) / abs(F_applied)
        m["skfem_reaction_rel_diff"] = abs(fe_solver.base_reaction(fe_solver.u_static) - F_applied) / abs(F_applied)
    else:
        res = dx.dynamic(PointLoads(points=loads.points, forces=W.step_forces(loads, spec)), spec.dt,
                         beta=spec.newmark_beta)
        fd, fs = res.final, fe.final
        m["dolfinx_skfem_u_hist_rel_diff"] = W._rel_l2(res.u_points, fe.u_points)
        m["dolfinx_skfem_work_rel_diff"] = abs(res.work[-1] - fe.work[-1]) / abs(fe.work[-1])
        ik = W.match_gauss(mpm.x0, res.final.x, tol)  # Kratos - DOLFINx over the whole history
        u_k, u_d = mpm.u_hist, res.u_gauss[:, ik]
        m["kratos_dolfinx_u_l2_rel_diff"] = W._rel_l2(u_k.reshape(u_k.shape[0], -1), u_d.reshape(u_d.shape[0], -1))
    idx = W.match_gauss(fs.x, fd.x, tol)
    ud, vd = fd.u[idx], von_mises(fd.stress[idx])
    m["dolfinx_skfem_u_l2_rel_diff"] = W._rel_l2(ud, fs.u, fs.weight)
    m["dolfinx_skfem_u_max_rel_diff"] = float(np.max(np.abs(ud - fs.u)) / np.max(np.abs(fs.u)))
    m["dolfinx_skfem_vm_l2_rel_diff"] = W._rel_l2(vd, von_mises(fs.stress), fs.weight)
    m["dolfinx_u_l2_norm"] = float(np.sqrt(np.sum(fd.weight * np.sum(fd.u**2, axis=1))))
    m["dolfinx_vm_l2_norm"] = float(np.sqrt(np.sum(fd.weight * von_mises(fd.stress) ** 2)))
    return {"metrics": m, "info": dict(dx.info)}


def loads_edges(path) -> list:
    import h5py

    with h5py.File(path, "r") as f:
        return f["source/radial_edges"][()].tolist()


def _plot_rings(ctx: RunContext, body, radial_edges, metrics: Dict[str, float]) -> None:
    """Per-ring force error of the conservative and the sampled point loads (ring_error.png)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from models.load_transfer.kratos.workflow import ring_errors

    e = np.asarray(radial_edges)
    err = ring_errors(body, e)
    metrics["ring_error_max_conservative"] = float(np.max(np.abs(err["conservative"])))
    metrics["ring_error_max_sampled"] = float(np.max(np.abs(err["sampled"])))
    ctx.write_json("ring_error.json", {"radial_edges": e, **err})
    rc = 0.5 * (e[1:] + e[:-1])
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.plot(rc, err["sampled"], "o-", ms=3, label="sampled (ring value x tributary area)")
    ax.plot(rc, err["conservative"], "s-", ms=3, label="conservative (exact face integrals)")
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xlabel("ring centre r [m]")
    ax.set_ylabel("(F_i applied - F_i source) / F_i")
    ax.set_title("per-ring force error of the Kratos point loads (unit pressure)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    ctx.save_figure("ring_error.png", fig)
    plt.close(fig)


def _orders(h: np.ndarray, e: np.ndarray, prefix: str) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for i in range(len(h) - 1):
        out[f"observed_order_{prefix}_{i}_{i + 1}"] = M.observed_order(e[i], e[i + 1], h[i] / h[i + 1])
    if len(h) >= 2:
        out[f"observed_order_{prefix}"] = out[f"observed_order_{prefix}_{len(h) - 2}_{len(h) - 1}"]
    return out


def time_step(df, out_dir) -> Dict[str, Any]:
    """Study kind of conf/study/load_transfer/kratos_time_step: both responses at once.

    For the peak structural response and the external work: observed orders of the Richardson
    changes between levels, Roache's GCI of the values on the three finest levels, a plot.
    Verdict per response: the observed order (finest pair) inside its expected band passes (peak
    [1, 2]: Newmark is second order, the step-mean load applied at the step end and the
    material-point mapping of every step bring the MPM peak towards first order; work [0.5, 1.5]:
    first order, from the half-step lag of the step-mean load at the fixed end time); converging
    below or above the band (order > 0) warns; not converging (order <= 0 or NaN) fails.
    """
    from harness.metrics import gates as G

    ok = df[(df["status"] == "ok") & np.isfinite(df["parameter"])].sort_values("parameter")
    n = ok["parameter"].to_numpy(float)
    h = 1.0 / n  # coarse to fine
    metrics: Dict[str, float] = {}
    for tag, change in (("peak_fe", "peak_change_fe"), ("work_fe", "work_change_fe")):
        if change in ok:  # diagnostic, not judged: the FE model with the same grid, steps and loads
            metrics.update(_orders(h, ok[change].to_numpy(float), tag))
    for key, change in (("peak_response", "peak_change"), ("external_work", "work_change")):
        tag = "peak" if key == "peak_response" else "work"
        metrics.update(_orders(h, ok[change].to_numpy(float), tag))
        f = ok[key].to_numpy(float)
        if len(f) >= 3:
            try:
                g = M.gci(f[-1], f[-2], f[-3], h[-2] / h[-1], h[-3] / h[-2])
                metrics.update({f"gci_{tag}_{k}": v for k, v in g.as_dict().items()})
            except ValueError as exc:
                log.warning("time_step study: %s GCI not computed: %s", tag, exc)
    verdicts = []
    for tag, (lo, hi) in (("peak", (1.0, 2.0)), ("work", (0.5, 1.5))):
        p_obs = metrics.get(f"observed_order_{tag}", float("nan"))
        verdicts.append(G.PASS if lo <= p_obs <= hi else (G.WARN if p_obs > 0.0 else G.FAIL))
    _plot_study(ok, h, out_dir)
    return {"metrics": metrics, "verdict": G.worst(verdicts)}


def _plot_study(ok, h, out_dir) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from harness.core.figures import save

    fig, ax = plt.subplots(figsize=(5, 4))
    ax.loglog(h, ok["peak_change"], "o-", label="peak response change")
    ax.loglog(h, ok["work_change"], "s-", label="external work change")
    ax.loglog(h, ok["peak_change"].iloc[-1] * (h / h[-1]), "k:", label="slope 1")
    ax.loglog(h, ok["peak_change"].iloc[-1] * (h / h[-1]) ** 2, "k--", label="slope 2")
    ax.set_xlabel("dt (relative, 1/n_steps)")
    ax.set_ylabel("relative change dt -> dt/2")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    save(fig, out_dir / "time_step.png", dpi=110)
