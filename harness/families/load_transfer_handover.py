"""Adapters of the seed-000 workflow's operator and export stages (issue 15): they work on the
products of the earlier stages and write the products of the later ones.

- ``run_operator`` (conf/case/load_transfer/kratos_operator.yaml): the conservative operator of the
  Kratos top face (the annulus faces of the grid edges of ``case.params.body``, 2 conditions per
  face: the surface the export and Kratos use) for the rings of a wall-loads file
  (``case.params.source``: kind ``file`` with ``path``, as handed over by the workflow, or the
  synthetic wall run); writes ``kratos-top-face.operator.npz`` (models/load_transfer/kratos/handover.py)
  and gates its conservation (column sums = ring areas, force at every knot) at round-off.
- ``run_export`` (conf/case/load_transfer/kratos_export.yaml): exports the wall-loads file with the
  operator file's surface (``case.params.operator_file``; without one the operator is built here)
  into a kratos-point-loads 1.1 file, gates e_F / e_J of the mapping, checks that the written
  normal point forces are the operator applied to the ring pressures (``operator_mismatch``) and
  that the file validates.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

from omegaconf import DictConfig, OmegaConf

from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.core.params import case_params, check_rules
from harness.families.load_transfer_kratos import BodyParams, SourceParams
from harness.families.metric_kinds import KRATOS as METRIC_KINDS  # noqa: F401 - read by the runner

log = logging.getLogger(__name__)

OPERATOR_FILE = "kratos-top-face.operator.npz"


@dataclass
class HandoverParams:
    body: BodyParams = field(default_factory=BodyParams)
    source: SourceParams = field(default_factory=SourceParams)
    operator_file: Optional[str] = None  # export stage: the operator stage's product
    n_steps: int = 40  # export: target steps over the source span (the mapping gates are judged on them)
    export_mode: str = "production"
    fail_above: float = 0.02
    J_scale: float = 0.0


def _params(cfg: DictConfig) -> HandoverParams:
    p = case_params(cfg, HandoverParams)
    rules = [
        ("source.kind", p.source.kind in ("synthetic", "file"), "must be 'synthetic' or 'file'"),
        ("source.path", p.source.kind != "file" or (p.source.path is not None and Path(p.source.path).is_file()),
         "source.kind 'file' needs an existing wall-loads v1 file"),
        ("operator_file", p.operator_file is None or Path(p.operator_file).is_file(), "must be an existing operator file"),
        ("body.formulation", p.body.formulation == "axisymmetric", "must be 'axisymmetric' (annulus faces)"),
        ("n_steps", p.n_steps >= 1, "must be >= 1"),
    ]
    check_rules(p, rules)
    return p


def _body(p: HandoverParams):
    from models.load_transfer.fe.base import ElasticBody

    b = p.body
    try:
        return ElasticBody(radius=b.radius, height=b.height, E=b.E, nu=b.nu, rho=b.rho, nr=b.nr, nz=b.nz,
                           formulation=b.formulation)
    except ValueError as exc:
        raise HarnessInputError(f"case.params.body.{exc}") from exc


def _wall_loads(cfg: DictConfig, ctx: RunContext, p: HandoverParams, body) -> Path:
    """The wall-loads file: handed over (an input) or the synthetic wall run written here (an output)."""
    from models.load_transfer.kratos import workflow as W

    s = p.source
    if s.kind == "file":
        return ctx.add_input(s.path)
    src = W.SourceSpec(kind="synthetic", p0=s.p0, n_rings=s.n_rings, t_end=s.t_end, n_outputs=s.n_outputs,
                       p_ref=s.p_ref)
    return ctx.add_output(W.write_source(src, body, ctx.run_dir, "kratos-handover",
                                         configuration=OmegaConf.to_yaml(cfg, resolve=True)))


def _read_wall_loads(path: Path):
    from models.load_transfer.contracts.wall_loads import read_wall_loads

    try:
        return read_wall_loads(path)
    except ValueError as exc:  # ContractError: every violation named
        raise HarnessInputError(f"case.params.source.path: {exc}") from exc


def _build_operator(wl_path: Path, body):
    from models.load_transfer.kratos import workflow as W
    from models.load_transfer.kratos.handover import build_operator, sha256_file

    wl = _read_wall_loads(wl_path)
    table, faces = W.top_face_faces(body)
    return build_operator(table, faces, wl.radial_edges, sha256_file(wl_path)), wl


def run_operator(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    from models.load_transfer.face_loads import FaceTableError
    from models.load_transfer.kratos.handover import operator_checks, write_operator

    p = _params(cfg)
    body = _body(p)
    wl_path = _wall_loads(cfg, ctx, p, body)
    with ctx.stage("operator"):
        try:
            op, wl = _build_operator(wl_path, body)
        except (FaceTableError, ValueError) as exc:
            raise HarnessInputError(f"case.params: operator: {exc}") from exc
        metrics = operator_checks(op, wl.time, wl.pressure)
    path = write_operator(ctx.output_path(OPERATOR_FILE), op)
    info = {"operator_file": str(path), "surface_sha256": op.surface_sha256, "wall_loads_sha256": op.wall_loads_sha256,
            "nnz": int(op.W.nnz), "params": asdict(p)}
    return CaseResult(metrics=metrics, info=info)


def run_export(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    from models.load_transfer.contracts import validate_file
    from models.load_transfer.export import ExportInputError, MappingError
    from models.load_transfer.kratos.handover import (
        OperatorFileError,
        export_with_operator,
        read_operator,
    )
    from models.load_transfer.time_average import step_edges

    p = _params(cfg)
    body = _body(p)
    wl_path = _wall_loads(cfg, ctx, p, body)
    wl = _read_wall_loads(wl_path)
    with ctx.stage("operator"):
        if p.operator_file is not None:
            try:
                op = read_operator(ctx.add_input(p.operator_file))
            except OperatorFileError as exc:
                raise HarnessInputError(f"case.params.operator_file: {exc}") from exc
        else:
            op, _ = _build_operator(wl_path, body)
    t_end = float(wl.time[-1])
    edges = step_edges(float(wl.time[0]), (t_end - float(wl.time[0])) / p.n_steps, p.n_steps)
    edges[-1] = min(edges[-1], t_end)  # no step past the source's span (round-off)
    with ctx.stage("export"):
        try:
            ex, mismatch = export_with_operator(op, wl_path, edges, ctx.run_dir, mode=p.export_mode,
                                                fail_above=p.fail_above)
        except OperatorFileError as exc:
            raise HarnessInputError(f"case.params.operator_file: {exc}") from exc
        except (ExportInputError, ValueError) as exc:
            raise HarnessInputError(f"case.params: export: {exc}") from exc
        except MappingError as exc:  # refused: the gates fail the run
            log.error("%s", exc)
            return CaseResult(metrics={"e_F": exc.e_F, "e_J": exc.e_J, "export_refused": 1.0})
    out = ctx.add_output(ex.path)
    report = validate_file(out)
    metrics: Dict[str, Any] = {
        "e_F": float(ex.e_F), "e_J": float(ex.e_J), "operator_mismatch": mismatch,
        "area_sum_error": abs(ex.area_sum - ex.area_exact) / ex.area_exact, "export_column_error": ex.column_error,
        "violations": float(len(report.violations)),
    }
    info = {"kratos_loads_file": str(out), "operator_surface_sha256": op.surface_sha256, "n_steps": p.n_steps,
            "params": asdict(p)}
    return CaseResult(metrics=metrics, info=info)
