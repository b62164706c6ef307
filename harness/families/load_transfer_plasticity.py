"""Adapter of the plasticity case of seed 000 (issue 15): an elasto-plastic Kratos MPM run under the
conservative point loads, enabled by the workflow only when every MVP gate passed.

Case: conf/case/load_transfer/kratos_plasticity.yaml. Law, runs and checks:
models/load_transfer/kratos/plasticity.py. The loads are a kratos-point-loads file handed over
(``case.params.loads_file``, e.g. by the seed-000 workflow) or, by default, the synthetic wall run
exported conservatively onto the body's top face (as the Kratos cases do). The run directory holds
the loads files, kratos.log and plasticity.png (energy terms; top response and residual).
"""
from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np
from omegaconf import DictConfig, OmegaConf

from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.core.params import case_params, check_rules
from harness.families.load_transfer_kratos import BodyParams, SourceParams
from harness.families.metric_kinds import KRATOS as METRIC_KINDS  # noqa: F401 - read by the runner

log = logging.getLogger(__name__)


@dataclass
class PlasticityParams:
    """case.params of the plasticity case."""

    body: BodyParams = field(default_factory=BodyParams)
    source: SourceParams = field(default_factory=SourceParams)
    loads_file: Optional[str] = None  # an existing kratos-point-loads file for this body's top face
    t_run: float = 1.2e-4  # s, past the source's end (free vibration after unloading)
    n_steps: int = 240  # steps of the coarsest level (dt = t_run / n_steps; <= 5e-7 s converges here)
    levels: int = 2  # time-step levels, each halving dt (observed order of the energy balance)
    full_levels: int = 3  # levels with HARNESS_FULL=1
    below_factor: float = 1.25  # yield stress of the below-yield run / elastic peak Tresca stress
    above_factor: float = 0.5  # yield stress of the above-yield runs / elastic peak Tresca stress
    friction_angle: float = 0.01  # rad (Kratos takes its sine): the Tresca limit of the Mohr-Coulomb law (0 gives NaN at first yield)
    grid_margin_rows: int = 1  # empty grid rows above the body
    fail_above: float = 0.02  # mapping-only abort threshold of the point-load process
    export_mode: str = "production"
    J_scale: float = 0.0  # N s


def _params(cfg: DictConfig) -> PlasticityParams:
    p = case_params(cfg, PlasticityParams)
    rules = [
        ("loads_file", p.loads_file is None or Path(p.loads_file).is_file(), "must be an existing kratos-point-loads file"),
        ("source.kind", p.source.kind in ("synthetic", "file"), "must be 'synthetic' or 'file'"),
        ("source.path", p.source.kind != "file" or (p.source.path is not None and Path(p.source.path).is_file()),
         "source.kind 'file' needs an existing wall-loads v1 file"),
        ("body.formulation", p.body.formulation == "axisymmetric", "must be 'axisymmetric' (conservative point loads)"),
        ("levels", p.levels >= 2, "must be >= 2 (observed order of the energy balance)"),
        ("full_levels", p.full_levels >= 2, "must be >= 2"),
        ("n_steps", p.n_steps >= 1, "must be >= 1"),
        ("grid_margin_rows", p.grid_margin_rows >= 0, "must be >= 0"),
    ]
    check_rules(p, rules)
    return p


def _loads(cfg: DictConfig, ctx: RunContext, p: PlasticityParams, body):
    """The kratos-point-loads file of the run: handed over, or exported here (conservative)."""
    from models.load_transfer.export import ExportInputError, MappingError
    from models.load_transfer.kratos import workflow as W
    from models.load_transfer.kratos.builder import MPMSpec
    from models.load_transfer.kratos.loads import LoadsFileError, read_meridian_loads

    if p.loads_file is not None:
        path = Path(p.loads_file).resolve()
        ctx.add_input(path)
    else:
        s = p.source
        try:
            if s.kind == "file":
                wl = Path(s.path).resolve()
                ctx.add_input(wl)
            else:
                src = W.SourceSpec(kind="synthetic", p0=s.p0, n_rings=s.n_rings, t_end=s.t_end, n_outputs=s.n_outputs,
                                   p_ref=s.p_ref)
                wl = W.write_source(src, body, ctx.run_dir, "kratos-plasticity",
                                    configuration=OmegaConf.to_yaml(cfg, resolve=True))
                ctx.add_output(wl)
            table, faces = W.top_face_faces(body)
            from models.load_transfer.contracts.wall_loads import read_wall_loads

            t_src = float(read_wall_loads(wl).time[-1])
            grid = MPMSpec(solver="dynamic", dt=t_src / 50, n_steps=50)  # the export's gate steps: the source span
            ex = W.export_loads(wl, table, grid, ctx.run_dir, mode=p.export_mode, fail_above=p.fail_above, faces=faces)
        except (ExportInputError, ValueError, KeyError) as exc:
            raise HarnessInputError(f"case.params: export: {exc}") from exc
        except MappingError as exc:
            raise HarnessInputError(f"case.params: export refused the source (mapping error): {exc}") from exc
        path = ex.path
        ctx.add_output(path)
    try:
        return path, read_meridian_loads(path)
    except (LoadsFileError, ValueError) as exc:
        raise HarnessInputError(f"case.params.loads_file: {exc}") from exc


def run(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    from models.load_transfer.fe.base import ElasticBody
    from models.load_transfer.kratos import workflow as W
    from models.load_transfer.kratos.loads import LoadsFileError
    from models.load_transfer.kratos.plasticity import (
        PlasticitySpec,
        levels_of,
        run_plasticity,
    )

    p = _params(cfg)
    full = os.environ.get("HARNESS_FULL") == "1"
    b = p.body
    try:
        body = ElasticBody(radius=b.radius, height=b.height, E=b.E, nu=b.nu, rho=b.rho, nr=b.nr, nz=b.nz,
                           formulation=b.formulation)
    except ValueError as exc:
        raise HarnessInputError(f"case.params.body.{exc}") from exc
    with ctx.stage("loads"):
        path, loads = _loads(cfg, ctx, p, body)
    try:
        spec = PlasticitySpec(t_run=p.t_run, n_steps=tuple(levels_of(p.n_steps, p.full_levels if full else p.levels)),
                              below_factor=p.below_factor, above_factor=p.above_factor,
                              friction_angle=p.friction_angle, grid_margin_rows=p.grid_margin_rows)
    except ValueError as exc:
        raise HarnessInputError(f"case.params.{exc}") from exc
    table, _ = W.top_face_faces(body)
    with ctx.stage("kratos"):
        try:
            out = run_plasticity(body, loads, spec, table["tributary_area"].to_numpy(),
                                 log_path=ctx.run_dir / "kratos.log", J_scale=p.J_scale)
        except LoadsFileError as exc:
            raise HarnessInputError(f"case.params.loads_file: {exc}") from exc
        except ValueError as exc:
            raise HarnessInputError(f"case.params.{exc}") from exc
    ctx.add_output(ctx.run_dir / "kratos.log")
    _plot(ctx, out["series"])
    info: Dict[str, Any] = {**out["info"], "loads_file": str(path), "full_size": full, "params": asdict(p)}
    return CaseResult(metrics=out["metrics"], series=out["series"], info=info)


def _plot(ctx: RunContext, s: Dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.asarray(s["time"])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    for key, style in (("work", "k-"), ("kinetic", "b-"), ("elastic", "g-"), ("dissipation", "r-")):
        a1.plot(t, s[key], style, label=key)
    a1.plot(t, np.asarray(s["kinetic"]) + np.asarray(s["elastic"]) + np.asarray(s["dissipation"]), "k:",
            label="K + E + D")
    a1.set_xlabel("t [s]")
    a1.set_ylabel("energy [J]")
    a1.legend(fontsize=8)
    a2.plot(s["time_elastic_coarse"], s["response_elastic_coarse"], "k--", label="elastic (yield 1e30 Pa)")
    a2.plot(t, s["response"], "r-", label="above yield")
    a2.plot(t, s["u_residual"], "r:", label="residual (plastic strain)")
    a2.set_xlabel("t [s]")
    a2.set_ylabel("mean top u_z [m]")
    a2.legend(fontsize=8)
    fig.tight_layout()
    ctx.save_figure("plasticity.png", fig)
    plt.close(fig)
