"""Adapter of the 3-D Kratos load-transfer case (issue 15): conservative point loads on the
triangulated top surface of an MPM block, an off-axis bubble whose disk the surface covers only
partly, Kratos MPM 3-D against the scikit-fem hexahedral model of the same block.

Case: conf/case/load_transfer/kratos_3d.yaml. The run directory holds the wall-loads file, the
kratos-point-loads file (with its face table), kratos.log and ring_error.json.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import List, Optional

import numpy as np
from omegaconf import DictConfig, OmegaConf

from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.core.params import case_params
from harness.families.metric_kinds import KRATOS as METRIC_KINDS  # noqa: F401 - read by the runner
from harness.metrics import library as M

log = logging.getLogger(__name__)


@dataclass
class BlockParams:
    Lx: float = 0.02  # m
    Ly: float = 0.02  # m
    Lz: float = 0.01  # m
    E: float = 2.0e9  # Pa
    nu: float = 0.3
    rho: float = 1200.0  # kg/m^3
    nx: int = 4
    ny: int = 4
    nz: int = 2


@dataclass
class Kratos3DParams:
    block: BlockParams = field(default_factory=BlockParams)
    axis_origin: List[float] = field(default_factory=lambda: [0.013, 0.008])  # m, the bubble axis on the top face
    profile: str = "parabolic"  # analytic ring averages: uniform | parabolic
    p0: float = 1.0e4  # Pa
    r_max: float = 0.01  # m, last radial edge (the disk may leave the top face: partial coverage)
    n_rings: int = 40
    fail_above: float = 0.02
    fe_peer: Optional[str] = None  # "dolfinx": also solve the block with Debian's DOLFINx (own process)
    dolfinx_python: str = "/usr/bin/python3"


def _params(cfg: DictConfig) -> Kratos3DParams:
    p = case_params(cfg, Kratos3DParams)
    if len(p.axis_origin) != 2:
        raise HarnessInputError(f"case.params.axis_origin: must be [x, y] in m, got {p.axis_origin!r}")
    if not (0.0 <= p.axis_origin[0] <= p.block.Lx and 0.0 <= p.axis_origin[1] <= p.block.Ly):
        raise HarnessInputError(f"case.params.axis_origin: must lie on the top face [0, Lx] x [0, Ly], got "
                                f"{p.axis_origin!r}")
    if p.fe_peer not in (None, "dolfinx"):
        raise HarnessInputError(f"case.params.fe_peer: must be null or 'dolfinx', got {p.fe_peer!r}")
    if p.n_rings < 1 or not p.r_max > 0:
        raise HarnessInputError("case.params.n_rings, r_max: must be >= 1 and > 0")
    return p


def run(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    from models.load_transfer.contracts.wall_loads import write_wall_loads
    from models.load_transfer.export import (
        ExportInputError,
        MappingError,
        export_kratos_loads,
    )
    from models.load_transfer.face_loads import (
        face_condition_matrix,
        triangle_face_table,
    )
    from models.load_transfer.fe.skfem_block import solve_block_static, von_mises_3d
    from models.load_transfer.kratos.block3d import Block, run_block
    from models.load_transfer.kratos.builder import MPMSpec
    from models.load_transfer.kratos.loads import (
        LoadsFileError,
        MappingAbort,
        read_cartesian_loads,
    )
    from models.load_transfer.kratos.workflow import _rel_l2, match_gauss
    from models.load_transfer.sources import analytic_ring_history
    from models.load_transfer.time_average import exact_time_average, step_edges

    p = _params(cfg)
    try:
        block = Block(**asdict(p.block))
    except ValueError as exc:
        raise HarnessInputError(f"case.params.block.{exc}") from exc
    origin = tuple(float(v) for v in p.axis_origin)
    spec = MPMSpec(solver="static", dt=1.0, n_steps=1)
    out = ctx.run_dir
    with ctx.stage("export"):
        try:
            h = analytic_ring_history(r_max=p.r_max, n_rings=p.n_rings, profile=p.profile, p0=p.p0, pulse="constant",
                                      pulse_times=(0.0, 1.0))
        except ValueError as exc:
            raise HarnessInputError(f"case.params: {exc}") from exc
        wl = write_wall_loads(out, case_id="kratos3d", time=h.time, radial_edges=h.radial_edges, pressure=h.pressure,
                              shear=h.shear, mode="debug", configuration=OmegaConf.to_yaml(cfg, resolve=True),
                              metadata={"command": "models.load_transfer.sources.analytic_ring_history"})
        nodes, tris = block.top_triangles()
        table, faces = triangle_face_table(nodes, tris, axis_origin=origin)
        try:
            ex = export_kratos_loads(wl, table, step_edges(0.0, 1.0, 1), out, mode="debug", faces=faces,
                                     axis_origin=origin, partial_surface=True, fail_above=p.fail_above,
                                     metadata={"exporter_commit": "models.load_transfer.export",
                                               "command": "harness.families.load_transfer_kratos3d"})
        except ExportInputError as exc:
            raise HarnessInputError(f"case.params: export: {exc}") from exc
        except MappingError as exc:
            return CaseResult(metrics={"e_F": exc.e_F, "e_J": exc.e_J, "export_refused": 1.0})
    ctx.add_output(wl)
    ctx.add_output(ex.path)
    loads = read_cartesian_loads(ex.path)
    with ctx.stage("kratos"):
        try:
            mpm = run_block(block, spec, loads, fail_above=p.fail_above, log_path=out / "kratos.log")
        except LoadsFileError as exc:
            raise HarnessInputError(str(exc)) from exc
        except MappingAbort as exc:
            return CaseResult(metrics={"e_F": exc.e_F, "e_J": exc.e_J, "aborted_step": float(exc.step)})
    ctx.add_output(out / "kratos.log")
    with ctx.stage("fe"):
        f = exact_time_average(loads.time, loads.forces, step_edges(0.0, 1.0, 1))[0]
        fe = solve_block_static(block, loads.points, f)
    tol = 1e-9 * max(block.Lx, block.Ly, block.Lz)
    idx = match_gauss(mpm.x0, fe.x, tol)
    u_fe, w = fe.u[idx], fe.weight[idx]
    vm_k, vm_fe = von_mises_3d(mpm.stress), von_mises_3d(fe.stress[idx])
    r = mpm.records
    # the common-area rule: the rings' coverage by the surface, and the per-ring force error of W
    W = face_condition_matrix(faces, table[["x0", "y0", "z0"]].to_numpy(), h.radial_edges, axis_origin=origin,
                              r_map=ex.r_map)
    ring_areas = np.pi * np.diff(h.radial_edges**2)
    cols = np.asarray(W.sum(axis=0)).ravel()
    covered_fraction = cols / ring_areas
    ctx.write_json("ring_error.json", {"radial_edges": h.radial_edges, "covered_fraction": covered_fraction})
    F_disk = float(h.pressure[0] @ ring_areas)
    metrics = {
        "e_F": M.e_F(r["F_M"], r["F_B"]), "e_J": M.e_J(float(r["J_M"][-1]), float(r["J_B"][-1]), 0.0),
        "export_e_F": ex.e_F, "export_column_error": ex.column_error,
        "common_area_fraction": ex.area_sum / ex.area_exact,
        "F_B": float(r["F_B"][-1]), "F_disk": F_disk,
        "u_l2_rel_diff": _rel_l2(mpm.u, u_fe, w),
        "u_max_rel_diff": float(np.max(np.abs(mpm.u - u_fe)) / np.max(np.abs(u_fe))),
        "vm_l2_rel_diff": _rel_l2(vm_k, vm_fe, w),
        "u_max_norm": float(np.max(np.linalg.norm(mpm.u, axis=1))),
        "n_conditions": float(table.shape[0]), "n_outside": float(ex.n_outside),
    }
    info = {"kratos": mpm.info, "seconds": mpm.seconds, "axis_origin": list(origin), "point_loads": ex.point_loads,
            "params": asdict(p)}
    if p.fe_peer == "dolfinx":
        from models.load_transfer.fe.dolfinx_backend import DolfinxUnavailable
        from models.load_transfer.fe.dolfinx_backend import (
            solve_block_static as dolfinx_block,
        )

        with ctx.stage("dolfinx"):
            try:
                fd, dinfo = dolfinx_block(block, loads.points, f, python=p.dolfinx_python, workdir=out / "dolfinx")
            except DolfinxUnavailable as exc:
                raise HarnessInputError(f"case.params.{exc}") from exc
        jd = match_gauss(fe.x, fd.x, tol)
        ud = fd.u[jd]
        metrics["dolfinx_skfem_u_l2_rel_diff"] = _rel_l2(ud, fe.u, fe.weight)
        metrics["dolfinx_skfem_u_max_rel_diff"] = float(np.max(np.abs(ud - fe.u)) / np.max(np.abs(fe.u)))
        metrics["dolfinx_skfem_vm_l2_rel_diff"] = _rel_l2(von_mises_3d(fd.stress[jd]), von_mises_3d(fe.stress),
                                                          fe.weight)
        kd = match_gauss(mpm.x0, fd.x, tol)
        metrics["kratos_dolfinx_u_l2_rel_diff"] = _rel_l2(mpm.u, fd.u[kd], fd.weight[kd])
        info["dolfinx"] = dinfo
    return CaseResult(metrics=metrics, series={"F_B": r["F_B"].tolist(), "F_M": r["F_M"].tolist()}, info=info)
