"""Adapters of the load-transfer file cases (issue 3): HDF5 contracts, extraction, debug map, shear,
export, and the export benchmark. Cases: conf/case/load_transfer/files/*.yaml, conf/case/bench/export.yaml.

Every case generates its own input files in the run directory (a synthetic quadtree wall run
stands in for Basilisk), so nothing binary lives in git.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
from omegaconf import MISSING, DictConfig, OmegaConf

from harness.core.configs import store_schema
from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.core.params import case_params
from harness.families.metric_kinds import LOAD_TRANSFER as METRIC_KINDS  # noqa: F401 - read by the runner
from harness.metrics import library as M

log = logging.getLogger(__name__)


@dataclass
class WallLoadsFileSourceConf:
    """A wall-loads HDF5 file (or a debug CSV) as the ring-pressure source of a case."""

    _target_: str = "models.load_transfer.contracts.wall_loads.load_history"
    path: str = MISSING  # {case_id}.wall-loads.v1.h5 (CSV: debug input only)
    mode: Optional[str] = None  # production | debug | null (the file's declared mode)
    unloaded_ends: bool = False


store_schema("source_wall_loads_file", WallLoadsFileSourceConf)


@dataclass
class SyntheticWall:
    """The synthetic quadtree wall run (models.load_transfer.extraction.synthetic_wall_run)."""

    length: float = 0.01  # m, R (wall radius = outer radial edge)
    n_rings: int = 40
    ring_seed: Optional[int] = None  # random (non-aligned) ring edges when set
    n_outputs: int = 41
    t_end: float = 4.0e-5  # s
    p0: float = 2.0e5  # Pa
    tau0: float = 50.0  # Pa
    p_ref: float = 1.0e5  # Pa
    min_level: int = 3
    max_level: int = 9


@dataclass
class FilesParams:
    """case.params of the file cases."""

    wall: SyntheticWall = field(default_factory=SyntheticWall)
    case_id: str = "synthetic-wall"
    # quadrature table (polar cells) of the target surface
    table_radius: Optional[float] = None  # m, default wall.length
    table_n_radial: int = 57
    table_n_theta: int = 48
    coarse_n_radial: int = 5  # a table too coarse for the 2 % gate (export case)
    # target (Kratos) time grid: n_steps steps of dt from t0
    t0: float = 1.0e-7
    dt: float = 3.3e-7
    n_steps: int = 100
    J_scale: float = 0.0
    shear: float = 80.0  # Pa, uniform ring shear of the shear case


@dataclass
class ExportBenchParams:
    """case.params of bench/export (reduced by default; full_* with HARNESS_FULL=1)."""

    n_t: int = 200
    n_r: int = 100
    n_c: int = 5_000
    full_n_t: int = 10_000
    full_n_r: int = 1_000
    full_n_c: int = 100_000
    n_theta: Optional[int] = None  # azimuthal cells of the polar table; default n_c // n_r (layers = rings)
    block_rows: Optional[int] = None  # time rows per streamed block at reduced size (None: ~32 MB blocks)
    full_block_rows: Optional[int] = None  # the same at full size
    point_loads: str = "sampled"  # sampled (polar table) | conservative (triangulated disk, 3 conditions per face)


def _params(cfg: DictConfig, schema) -> Any:
    p = case_params(cfg, schema)
    for name in ("table_n_radial", "table_n_theta", "n_steps"):
        if hasattr(p, name) and getattr(p, name) < 1:
            raise HarnessInputError(f"case.params.{name}: must be >= 1, got {getattr(p, name)}")
    return p


def _synthetic(p: FilesParams):
    from models.load_transfer.extraction import synthetic_wall_run

    w = p.wall
    for name, ok, rule in (("n_rings", w.n_rings >= 1, ">= 1"), ("n_outputs", w.n_outputs >= 2, ">= 2"),
                           ("length", w.length > 0, "> 0"), ("t_end", w.t_end > 0, "> 0"),
                           ("min_level", 0 <= w.min_level <= w.max_level <= 16, "0 <= min_level <= max_level <= 16")):
        if not ok:
            raise HarnessInputError(f"case.params.wall.{name}: must be {rule}, got {getattr(w, name)!r}")
    edges = None
    if w.ring_seed is not None:
        rng = np.random.default_rng(w.ring_seed)
        edges = np.sort(np.concatenate([[0.0, w.length], rng.uniform(0.0, w.length, w.n_rings - 1)]))
    try:
        return synthetic_wall_run(length=w.length, n_rings=w.n_rings, n_outputs=w.n_outputs, t_end=w.t_end, p0=w.p0,
                                  tau0=w.tau0, p_ref=w.p_ref, min_level=w.min_level, max_level=w.max_level,
                                  ring_edges=edges)
    except ValueError as exc:
        raise HarnessInputError(f"case.params.wall: {exc}") from exc


def _config_text(cfg: DictConfig) -> str:
    return OmegaConf.to_yaml(cfg, resolve=True)


def _write_source(cfg: DictConfig, ctx: RunContext, p: FilesParams, run=None, *, name: Optional[str] = None,
                  version: Optional[str] = None, extras=None) -> Path:
    from models.load_transfer.extraction import synthetic_metadata

    run = run or _synthetic(p)
    path = ctx.output_path(name or f"{p.case_id}.wall-loads.v1.h5")
    from models.load_transfer.contracts.wall_loads import write_wall_loads

    ex = run.extractor
    write_wall_loads(path, case_id=p.case_id, time=np.asarray(ex.times), radial_edges=ex.radial_edges,
                     pressure=np.vstack(ex.pressure), shear=None if version == "1.0.0" else np.vstack(ex.shear),
                     metadata=synthetic_metadata(run, command=" ".join(ctx_command(cfg))),
                     configuration=_config_text(cfg), configuration_name="case.yaml", version=version, extras=extras)
    return path


def ctx_command(cfg: DictConfig) -> List[str]:
    return ["python", "-m", "harness", f"+case={cfg.case.name}"]


def _quiet(ctx: RunContext, name: str, fn, *args) -> int:
    """Run a CLI main in-process; its stdout/stderr go to ``name`` in the run directory."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        rc = fn(*args)
    path = ctx.run_dir / name
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(f"$ {fn.__module__} {' '.join(map(str, args[0]))}\n{buf.getvalue()}(exit {rc})\n")
    if path.resolve() not in ctx.outputs:
        ctx.add_output(path)
    return rc


def _t_edges(p: FilesParams) -> np.ndarray:
    return p.t0 + p.dt * np.arange(p.n_steps + 1)


# ----------------------------------------------------------------------------- round trip


def run_round_trip(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Write the synthetic extraction, read it back: bit-identical arrays, checksums, units, version,
    production metadata and the stored configuration with its hash."""
    import h5py

    from models.load_transfer.contracts import load_spec, validate_file
    from models.load_transfer.contracts.wall_loads import read_wall_loads
    from models.load_transfer.extraction import synthetic_metadata

    p: FilesParams = _params(cfg, FilesParams)
    with ctx.stage("extract"):
        run = _synthetic(p)
    with ctx.stage("write"):
        path = _write_source(cfg, ctx, p, run)
    with ctx.stage("read"):
        wl = read_wall_loads(path)
    ex = run.extractor
    written = {"time": np.asarray(ex.times), "radial_edges": ex.radial_edges, "pressure": np.vstack(ex.pressure),
               "shear": np.vstack(ex.shear)}
    back = {"time": wl.time, "radial_edges": wl.radial_edges, "pressure": wl.pressure, "shear": wl.shear}
    bit_mismatch = sum(int(not (a.dtype == np.float64 and a.tobytes() == back[k].tobytes()))
                       for k, a in written.items())
    spec = load_spec("wall-loads")
    missing_filters = 0
    wrong_units = 0
    with h5py.File(path, "r") as f:
        for name, item in spec.datasets.items():
            if "storage" in item and name in f:
                missing_filters += int(not f[name].fletcher32)
            if "unit" in item and name in f:
                wrong_units += int(f[name].attrs.get("unit") != item["unit"])
    meta_expected = synthetic_metadata(run, command=" ".join(ctx_command(cfg)))
    meta_mismatch = sum(int(wl.metadata.get(k) != v) for k, v in meta_expected.items())
    import hashlib

    conf_sha = hashlib.sha256((wl.configuration or "").encode()).hexdigest()
    report = validate_file(path)
    metrics = {
        "bit_mismatches": float(bit_mismatch),
        "violations": float(len(report.violations)),
        "missing_checksums": float(missing_filters),
        "wrong_units": float(wrong_units),
        "version_ok": float(wl.schema_version == spec.version),
        "metadata_mismatches": float(meta_mismatch),
        "configuration_hash_ok": float(conf_sha == wl.metadata.get("configuration_sha256")
                                       and wl.configuration == _config_text(cfg)),
        "e_F_closed": M.e_F(wl.force, run.force_exact),
        "e_J_closed": M.e_J(M.impulse(wl.time, wl.force), run.impulse_exact),
        "impulse_trapezoid_error": float(np.max(np.abs(wl.impulse - np.trapezoid(wl.pressure, wl.time, axis=0)))
                                         / np.max(np.abs(wl.impulse))),
    }
    info = {"file": path.name, "sha256": wl.sha256, "levels": sorted(ex.levels), "Nt": int(wl.time.size),
            "Nr": int(wl.radial_edges.size - 1)}
    return CaseResult(metrics=metrics, info=info)


# ----------------------------------------------------------------------------- versions


def _major_rejection(path) -> tuple:
    """(the exact message a 2.0.0 wall-loads file must get, the reader's actual message)."""
    from models.load_transfer.contracts import ContractError
    from models.load_transfer.contracts.wall_loads import read_wall_loads

    expected = (f"{path}: invalid wall-loads file: @schema_version: major_version: found '2.0.0'; expected major "
                f"version 1 (1.x); major version 2 needs an explicit migration")
    try:
        read_wall_loads(path)
        return expected, "accepted"
    except ContractError as exc:
        return expected, str(exc)


def run_read_versions(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Read a 1.0.0 file (no shear), a 1.1.0 file and a 1.2.0 file with an optional dataset the
    reader does not know (kept, not refused); reject a 2.0.0 file with the migration message."""
    from models.load_transfer.contracts.corrupt import make_bad_file
    from models.load_transfer.contracts.wall_loads import read_wall_loads

    p: FilesParams = _params(cfg, FilesParams)
    run = _synthetic(p)
    p10 = _write_source(cfg, ctx, p, run, name="v1_0.wall-loads.v1.h5", version="1.0.0")
    p11 = _write_source(cfg, ctx, p, run, name="v1_1.wall-loads.v1.h5")
    extra = np.linspace(290.0, 300.0, len(run.extractor.times))
    p12 = _write_source(cfg, ctx, p, run, name="v1_2.wall-loads.v1.h5", version="1.2.0",
                        extras={"fields/wall_temperature": extra})
    read = {}
    for key, path in (("1.0", p10), ("1.1", p11), ("1.2", p12)):
        read[key] = read_wall_loads(path)
    p20 = ctx.output_path("v2_0.wall-loads.v1.h5")
    make_bad_file(p11, p20, "major_version")
    expected, message = _major_rejection(p20)
    metrics = {
        "read_1_0": float(read["1.0"].schema_version == "1.0.0"),
        "read_1_1": float(read["1.1"].schema_version == "1.1.0"),
        "read_1_2": float(read["1.2"].schema_version == "1.2.0"),
        "shear_1_0_max": float(np.max(np.abs(read["1.0"].shear))),
        "pressure_1_0_vs_1_1": float(np.max(np.abs(read["1.0"].pressure - read["1.1"].pressure))),
        "unknown_dataset_kept": float(np.array_equal(read["1.2"].extras.get("fields/wall_temperature"), extra)),
        "reject_2_0_exact_message": float(message == expected),
    }
    ctx.write_json("messages.json", {"2.0.0": message})
    return CaseResult(metrics=metrics, info={"versions": sorted(read)})


def run_reject_major(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """A 2.0.0 file is rejected by the reader, the validator CLI and the export, naming the version."""
    from harness.tools.validate import main as validate_main
    from models.load_transfer.contracts.corrupt import make_bad_file
    from models.load_transfer.contracts.table import polar_quadrature_table
    from models.load_transfer.export import ExportInputError, export_kratos_loads

    p: FilesParams = _params(cfg, FilesParams)
    good = _write_source(cfg, ctx, p)
    bad = ctx.output_path("major2.wall-loads.v1.h5")
    make_bad_file(good, bad, "major_version")
    expected, msg = _major_rejection(bad)
    rc = _quiet(ctx, "validate.log", validate_main, [str(bad)])
    out_dir = ctx.run_dir / "export"
    try:
        export_kratos_loads(bad, polar_quadrature_table(radius=p.wall.length, n_radial=8, n_theta=8), _t_edges(p),
                            out_dir, metadata={"exporter_commit": "case", "command": "reject_major"})
        export_msg = "accepted"
    except ExportInputError as exc:
        export_msg = str(exc)
    left = list(out_dir.glob("*")) if out_dir.exists() else []
    metrics = {
        "reader_exact_message": float(msg == expected),
        "validator_exit_code": float(rc),
        "export_rejected": float(export_msg == expected),
        "export_files_left": float(len(left)),
    }
    ctx.write_json("messages.json", {"reader": msg, "export": export_msg})
    return CaseResult(metrics=metrics)


# ----------------------------------------------------------------------------- bad files


def run_bad_files(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Every bad-file kind (a generated corrupt file each) is rejected naming the path and rule; an
    interrupted write leaves neither the final nor a temporary file; a non-HDF5 file is unreadable."""
    from models.load_transfer.contracts import ContractError, UnreadableFileError
    from models.load_transfer.contracts.corrupt import BAD_KINDS, make_bad_file
    from models.load_transfer.contracts.wall_loads import (
        read_wall_loads,
        write_wall_loads,
    )

    p: FilesParams = _params(cfg, FilesParams)
    good = _write_source(cfg, ctx, p)
    bad_dir = ctx.run_dir / "bad"
    bad_dir.mkdir()
    results: Dict[str, Any] = {}
    missed = 0
    for kind, (_, (path, rule)) in BAD_KINDS.items():
        f = make_bad_file(good, bad_dir / f"{kind}.h5", kind)
        try:
            read_wall_loads(f)
            got, ok = "accepted", False
        except ContractError as exc:
            v = exc.report.violations[0]
            got, ok = str(exc), (v.path, v.rule) == (path, rule) and str(exc).startswith(f"{f}: invalid wall-loads")
        missed += int(not ok)
        results[kind] = {"expected": [path, rule], "message": got, "ok": ok}
    # not an HDF5 file at all
    junk = bad_dir / "not_hdf5.h5"
    junk.write_text("time,pressure\n0,1\n")
    try:
        read_wall_loads(junk)
        unreadable_ok = False
    except UnreadableFileError:
        unreadable_ok = True
    # interrupted write: an exception while the datasets are being written
    target_dir = ctx.run_dir / "interrupted"
    target_dir.mkdir()

    class Boom:
        def __array__(self, *a, **k):
            raise KeyboardInterrupt("simulated interruption during the write")

    interrupted = False
    try:
        write_wall_loads(target_dir, case_id="interrupted", time=[0.0, 1.0], radial_edges=[0.0, 1.0],
                         pressure=[[1.0], [2.0]], mode="debug", extras={"fields/late": Boom()})
    except KeyboardInterrupt:
        interrupted = True
    leftovers = sorted(x.name for x in target_dir.iterdir())
    ctx.write_json("bad_files.json", {"kinds": results, "interrupted_leftovers": leftovers})
    metrics = {
        "kinds": float(len(BAD_KINDS)),
        "missed_kinds": float(missed),
        "unreadable_rejected": float(unreadable_ok),
        "interrupted_raised": float(interrupted),
        "interrupted_leftovers": float(len(leftovers)),
    }
    return CaseResult(metrics=metrics, info={"kinds": sorted(BAD_KINDS)})


# ----------------------------------------------------------------------------- AMR extraction


def run_amr_extraction(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Quadtree wall with active leaves on several levels: ring areas exact, force and impulse equal
    the closed forms; counting parents with their children is caught by the area assertion."""
    from models.load_transfer.contracts.wall_loads import read_wall_loads
    from models.load_transfer.extraction import (
        ExtractionAreaError,
        WallLoadsExtractor,
        face_average,
    )

    p: FilesParams = _params(cfg, FilesParams)
    with ctx.stage("extract"):
        run = _synthetic(p)
    path = _write_source(cfg, ctx, p, run)
    wl = read_wall_loads(path)
    ex = run.extractor
    # independent reference: with ring edges on the coarsest face boundaries every ring is a union of
    # whole faces, so its average must equal the exact ring average of the continuous profile
    from models.load_transfer.extraction import synthetic_wall_run

    w = p.wall
    aligned = np.linspace(0.0, w.length, 2**w.min_level + 1)
    run_al = synthetic_wall_run(length=w.length, n_outputs=w.n_outputs, t_end=w.t_end, p0=w.p0, tau0=w.tau0,
                                p_ref=w.p_ref, min_level=w.min_level, max_level=w.max_level, ring_edges=aligned)
    R, p0 = run.length, run.p0
    ring_exact = p0 * (1.0 - (aligned[1:] ** 2 + aligned[:-1] ** 2) / (2.0 * R**2))
    p_al = np.vstack(run_al.extractor.pressure)
    ring_err = float(np.max(np.abs(p_al - run_al.amplitude[:, None] * ring_exact[None, :]))) / p0
    e = wl.radial_edges
    tree = run.trees[len(run.trees) // 2]
    r0, r1, _ = tree.faces(active_only=False)
    probe = WallLoadsExtractor(e, p_ref=ex.p_ref)
    try:
        probe.event(0.0, r0, r1, face_average(r0, r1, lambda r: np.pi * r**2))
        detected = 0.0
    except ExtractionAreaError as exc:
        detected = 1.0
        log.info("double counting detected: %s", exc)
    n_leaf_levels = min(len(t.levels) for t in run.trees)
    metrics = {
        "area_error": float(ex.max_area_error),
        "e_F_closed": M.e_F(wl.force, run.force_exact),
        "e_J_closed": M.e_J(M.impulse(wl.time, wl.force), run.impulse_exact),
        "ring_average_error": ring_err,
        "double_count_detected": detected,
        "min_leaf_levels": float(n_leaf_levels),
        "parents_in_tree": float(int((~tree.leaf).sum())),
    }
    return CaseResult(metrics=metrics, info={"levels": sorted(ex.levels), "faces_per_output":
                                             [int(t.leaf.sum()) for t in run.trees]})


# ----------------------------------------------------------------------------- shear


def run_shear_axis(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Shear f = tau A e_r on a polar table with a point on the axis: no NaN, null vector on the
    axis, zero net force by symmetry, radial sum tau (pi R^2 - A_axis); sliding wall: zero shear.
    With the conservative operator (when it provides shear_matrices): nodal shear without NaN."""
    from models.load_transfer.contracts.table import (
        polar_quadrature_table,
        validate_table,
    )
    from models.load_transfer.shear import (
        radial_unit_vectors,
        shear_nodal_forces,
        shear_point_forces,
    )

    p: FilesParams = _params(cfg, FilesParams)
    R = p.table_radius or p.wall.length
    qt = validate_table(polar_quadrature_table(radius=R, n_radial=p.table_n_radial, n_theta=p.table_n_theta))
    edges = np.linspace(0.0, R, p.wall.n_rings + 1)
    tau = np.full((2, edges.size - 1), p.shear)
    tau[1] = 0.0  # second time: sliding (free-slip) wall, tau = 0
    f = shear_point_forces(edges, tau, qt.coordinates, qt.areas)
    axis = np.hypot(qt.coordinates[:, 0], qt.coordinates[:, 1]) == 0.0
    er = radial_unit_vectors(qt.coordinates)
    total = p.shear * (np.pi * R**2 - float(qt.areas[axis].sum()))
    scale = p.shear * np.pi * R**2
    metrics = {
        "nan_count": float(np.count_nonzero(~np.isfinite(f))),
        "axis_points": float(axis.sum()),
        "axis_force": float(np.max(np.abs(f[0, axis]))) / scale if axis.any() else float("nan"),
        "net_shear": float(np.linalg.norm(f[0].sum(axis=0))) / scale,
        "radial_sum_error": abs(float(np.einsum("ak,ak->", f[0], er)) - total) / scale,
        "sliding_wall_shear": float(np.max(np.abs(f[1]))),
    }
    try:
        from models.load_transfer.operator import ConservativePressureOperator
        from models.load_transfer.surfaces import disk_mesh
    except ImportError:  # pragma: no cover - model library not present
        ConservativePressureOperator = None
    if ConservativePressureOperator is not None and hasattr(ConservativePressureOperator, "shear_matrices"):
        surf = disk_mesh(radius=R, resolution=8, kind="tri")
        op = ConservativePressureOperator(surf, edges)
        fn = shear_nodal_forces(op, tau)
        r_nodes = np.hypot(surf.nodes[:, 0] - surf.axis_origin[0], surf.nodes[:, 1] - surf.axis_origin[1])
        metrics["operator_nan_count"] = float(np.count_nonzero(~np.isfinite(fn)))
        metrics["operator_sliding_wall_shear"] = float(np.max(np.abs(fn[1])))
        metrics["operator_net_shear"] = float(np.linalg.norm(fn[0].sum(axis=0))) / scale
        metrics["operator_axis_nodes"] = float(np.count_nonzero(r_nodes == 0.0))
    return CaseResult(metrics=metrics, info={"n_points": qt.size})


# ----------------------------------------------------------------------------- debug map


def run_debug_map(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """map_axisymmetric_load on a table whose cells do not align with the rings: force and impulse
    restored on the target steps (analytic gate), per-ring error NOT zero (no local conservation)."""
    from models.load_transfer.contracts.table import (
        polar_quadrature_table,
        validate_table,
    )
    from models.load_transfer.contracts.wall_loads import read_wall_loads
    from models.load_transfer.debug_map import map_axisymmetric_load
    from models.load_transfer.time_average import exact_time_average

    p: FilesParams = _params(cfg, FilesParams)
    wl = read_wall_loads(_write_source(cfg, ctx, p))
    R = p.table_radius or p.wall.length
    qt = validate_table(polar_quadrature_table(radius=R, n_radial=p.table_n_radial, n_theta=p.table_n_theta))
    res = map_axisymmetric_load(wl.radial_edges, wl.pressure, qt.coordinates, qt.areas)
    te = _t_edges(p)
    F_M = exact_time_average(wl.time, res.pressure @ qt.areas, te)
    F_B = exact_time_average(wl.time, res.source_force, te)
    F_S = exact_time_average(wl.time, res.sampled_force, te)
    dt = np.diff(te)
    metrics = {
        "e_F": M.e_F(F_M, F_B),
        "e_J": M.e_J(float(F_M @ dt), float(F_B @ dt), p.J_scale),
        "e_F_sampled": M.e_F(F_S, F_B),
        "ring_error": res.ring_error(),
        "max_correction_rel": float(np.max(np.abs(res.correction))) / p.wall.p0,
    }
    return CaseResult(metrics=metrics, series={"F_M": F_M.tolist(), "F_B": F_B.tolist()})


# ----------------------------------------------------------------------------- export


def run_export(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """cavitation-kratos-export through the production gates: e_F, e_J of the mapping alone on the
    target grid; the written file is fully valid; a too-coarse table exits 1 leaving no file."""
    from harness.tools.export import main as export_main
    from models.load_transfer.contracts import validate_file
    from models.load_transfer.contracts.kratos_loads import read_kratos_loads
    from models.load_transfer.contracts.table import polar_quadrature_table

    p: FilesParams = _params(cfg, FilesParams)
    src = _write_source(cfg, ctx, p)
    ctx.add_input(src)
    R = p.table_radius or p.wall.length
    table = ctx.output_path("surface.csv")
    polar_quadrature_table(radius=R, n_radial=p.table_n_radial, n_theta=p.table_n_theta).to_csv(table, index=False)
    coarse = ctx.output_path("surface_coarse.parquet")
    polar_quadrature_table(radius=R, n_radial=p.coarse_n_radial, n_theta=p.table_n_theta).to_parquet(coarse)
    grid = ["--t0", repr(p.t0), "--dt", repr(p.dt), "--steps", str(p.n_steps), "--j-scale", repr(p.J_scale)]
    out_dir = ctx.run_dir / "kratos"
    with ctx.stage("export"):
        rc = _quiet(ctx, "export.log", export_main, [str(src), str(table), "--out", str(out_dir), *grid])
    produced = sorted(out_dir.glob("*.kratos-loads.v1.h5")) if out_dir.exists() else []
    if rc == 1:  # mapping-only error above 2 %: report the errors, the gates fail the run
        from models.load_transfer.export import MappingError, export_kratos_loads

        try:
            export_kratos_loads(src, table, _t_edges(p), ctx.run_dir / "kratos_retry", J_scale=p.J_scale,
                                metadata={"exporter_commit": "case", "command": "retry"})
            raise HarnessInputError("cavitation-kratos-export exited 1 but the export succeeds in-process")
        except MappingError as exc:
            nan = float("nan")
            return CaseResult(metrics={"e_F": exc.e_F, "e_J": exc.e_J, "export_exit_code": 1.0, "violations": nan,
                                       "area_sum_error": nan, "coarse_exit_code": nan, "coarse_files_left": nan})
    if rc != 0 or len(produced) != 1:
        raise HarnessInputError(f"cavitation-kratos-export exited {rc} on the table (files: {produced})")
    out = ctx.add_output(produced[0])
    data = read_kratos_loads(out)
    meta = data["metadata"]
    # independent check of the gate metrics from the written datasets with harness.metrics
    from models.load_transfer.time_average import exact_time_average

    te = p.t0 + p.dt * np.arange(p.n_steps + 1)
    F_M = exact_time_average(data["source/time"], data["diagnostics/target_force"], te)
    F_B = exact_time_average(data["source/time"], data["diagnostics/source_force"], te)
    dt = np.diff(te)
    coarse_dir = ctx.run_dir / "kratos_coarse"
    rc_coarse = _quiet(ctx, "export.log", export_main, [str(src), str(coarse), "--out", str(coarse_dir), *grid])
    left = list(coarse_dir.glob("*")) if coarse_dir.exists() else []
    report = validate_file(out)
    area = data["conditions/tributary_area"]
    metrics = {
        "e_F": M.e_F(F_M, F_B),
        "e_J": M.e_J(float(F_M @ dt), float(F_B @ dt), p.J_scale),
        "export_exit_code": float(rc),
        "e_F_export": float(meta["e_F"]),
        "e_J_export": float(meta["e_J"]),
        "violations": float(len(report.violations)),
        "area_sum_error": abs(float(area.sum()) - np.pi * R**2) / (np.pi * R**2),
        "coarse_exit_code": float(rc_coarse),
        "coarse_files_left": float(len(left)),
    }
    return CaseResult(metrics=metrics, series={"F_M": F_M.tolist(), "F_B": F_B.tolist()},
                      info={"n_conditions": int(area.size), "file": out.name})


# ----------------------------------------------------------------------------- benchmark


def bench_export(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Export Nt x Nr -> Nc (reduced; full 10,000 x 1,000 -> 100,000 with HARNESS_FULL=1): wall time
    ratio to a raw h5py write of the same arrays with the same filters and chunks (same run), peak
    traced memory (tracemalloc) vs the size of loads/point_force, and ru_maxrss."""
    import resource
    import tracemalloc

    import h5py

    from models.load_transfer.contracts.kratos_loads import chunk_rows, large_chunks
    from models.load_transfer.contracts.table import (
        polar_quadrature_table,
        validate_table,
    )
    from models.load_transfer.contracts.wall_loads import write_wall_loads
    from models.load_transfer.debug_map import point_rings, sample_ring_values
    from models.load_transfer.export import export_kratos_loads

    p: ExportBenchParams = _params(cfg, ExportBenchParams)
    full = os.environ.get("HARNESS_FULL") == "1"
    nt, nr, nc = (p.full_n_t, p.full_n_r, p.full_n_c) if full else (p.n_t, p.n_r, p.n_c)
    R = 0.01
    rng = np.random.default_rng(20261201)
    with ctx.stage("setup"):
        t = np.linspace(0.0, 1.0e-4, nt)
        edges = np.linspace(0.0, R, nr + 1)
        rc = 0.5 * (edges[1:] + edges[:-1])
        pressure = 1.0e5 * np.outer(np.sin(np.pi * t / t[-1]) ** 2, np.exp(-(rc / (0.4 * R)) ** 2))
        pressure *= 1.0 + 0.01 * rng.standard_normal(pressure.shape)
        src = write_wall_loads(ctx.run_dir / "bench.wall-loads.v1.h5", case_id="bench", time=t, radial_edges=edges,
                               pressure=pressure, mode="debug")
        faces = None
        if p.point_loads == "conservative":
            from models.load_transfer.face_loads import triangle_face_table
            from models.load_transfer.surfaces import disk_mesh

            mesh = disk_mesh(radius=R, resolution=max(1, int(round(np.sqrt(nc / 18.0)))))  # 6 n^2 triangles
            table, faces = triangle_face_table(mesh.nodes, mesh.elements)
            qt = validate_table(table)
        elif p.point_loads == "sampled":
            n_theta = p.n_theta or max(1, nc // nr)
            n_radial = max(1, int(round((nc - 1) / n_theta)))
            qt = validate_table(polar_quadrature_table(radius=R, n_radial=n_radial, n_theta=n_theta))
        else:
            raise HarnessInputError(f"case.params.point_loads: must be 'sampled' or 'conservative', got {p.point_loads!r}")
    te = np.linspace(t[0], t[-1], 2 * nt + 1)
    out_dir = ctx.run_dir / "kratos"
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    with ctx.stage("export"):
        c0 = time.perf_counter()
        res = export_kratos_loads(src, qt, te, out_dir, mode="debug", faces=faces,
                                  block_rows=p.full_block_rows if full else p.block_rows)
        t_export = time.perf_counter() - c0
    _, peak_export = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # reference: the same arrays written raw with h5py, same filters and chunks, same block rows
    rings = point_rings(qt.coordinates, edges)
    if faces is not None:
        from models.load_transfer.face_loads import face_condition_matrix

        conservative_W = face_condition_matrix(faces, qt.coordinates, edges, r_map=res.r_map).tocsr()
    an = qt.areas[:, None] * qt.normals
    rows = res.write.block_rows
    ref_path = ctx.run_dir / "raw_reference.h5"
    t_ref = 0.0
    with ctx.stage("raw_reference"):
        with h5py.File(ref_path, "w") as f:
            kw = dict(compression="gzip", shuffle=True, fletcher32=True)
            c0 = time.perf_counter()
            dp = f.create_dataset("loads/pressure_gauge", shape=(nt, qt.size), dtype="f8",
                                  chunks=large_chunks((nt, qt.size)), **kw)
            df = f.create_dataset("loads/point_force", shape=(nt, qt.size, 3), dtype="f8",
                                  chunks=large_chunks((nt, qt.size, 3)),
                                  **kw)
            for name, arr in (("source/time", t), ("source/radial_edges", edges), ("source/pressure_gauge", pressure),
                              ("conditions/ids", qt.ids), ("conditions/coordinates_initial", qt.coordinates),
                              ("conditions/tributary_area", qt.areas), ("conditions/outward_normal", qt.normals)):
                f.create_dataset(name, data=arr, chunks=large_chunks(arr.shape) if arr.ndim > 1 else True, **kw)
            t_ref += time.perf_counter() - c0
            dff = None
            if faces is not None:  # the face table and the exact face forces, as the export writes them
                from models.load_transfer.face_loads import face_ring_areas

                c0 = time.perf_counter()
                for name, arr in (("faces/vertices", faces.vertices), ("faces/condition_index", faces.condition_index)):
                    f.create_dataset(name, data=arr, chunks=True, **kw)
                dff = f.create_dataset("faces/force", shape=(nt, faces.size), dtype="f8",
                                       chunks=large_chunks((nt, faces.size)), **kw)
                t_ref += time.perf_counter() - c0
                WfT = face_ring_areas(faces.vertices, edges, r_map=res.r_map).T.tocsr()
            for s in range(0, nt, rows):
                if faces is None:
                    pb = sample_ring_values(pressure[s : s + rows], rings)  # data prepared outside the timer
                else:
                    pb = np.asarray(conservative_W @ pressure[s : s + rows].T).T / qt.areas
                fb = -pb[..., None] * an
                ffb = None if dff is None else pressure[s : s + rows] @ WfT
                c0 = time.perf_counter()
                dp[s : s + rows] = pb
                df[s : s + rows] = fb
                if dff is not None:
                    dff[s : s + rows] = ffb
                t_ref += time.perf_counter() - c0
            c0 = time.perf_counter()
        t_ref += time.perf_counter() - c0  # file close (flush) counted
    ref_path.unlink()
    out_size = res.path.stat().st_size
    point_force_bytes = nt * qt.size * 3 * 8
    metrics = {
        "export_seconds": t_export,
        "raw_h5py_seconds": t_ref,
        "ratio_to_raw_h5py": t_export / t_ref,
        "peak_traced_mb": peak_export / 2**20,
        "peak_over_point_force": peak_export / point_force_bytes,
        "maxrss_growth_mb": max(0, rss1 - rss0) / 1024.0,
        "maxrss_mb": rss1 / 1024.0,
        "point_force_mb": point_force_bytes / 2**20,
        "output_mb": out_size / 2**20,
        "e_F": res.e_F,
        "e_J": res.e_J,
        "conservative": float(res.point_loads == "conservative"),
    }
    res.path.unlink()  # the benchmark output is not an artifact (large)
    info = {"n_t": nt, "n_r": nr, "n_c": int(qt.size), "full_size": full, "block_rows": rows,
            "chunk_rows": chunk_rows(nt, qt.size * 3), "seconds": res.write.seconds}
    return CaseResult(metrics=metrics, info=info)
