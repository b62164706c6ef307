"""A 3-D Kratos MPM block under conservative point loads on its top surface (issue 15).

The block [0, Lx] x [0, Ly] x [0, Lz] is meshed with nx x ny x nz trilinear hexahedra; the
background grid is the same mesh, so the 2 x 2 x 2 material points of each element sit at the
Gauss points of the grid element. Supports: u_z = 0 on z = 0 (frictionless base), u_x = 0 on
x = 0 and u_y = 0 on y = 0 (symmetry rollers), on the grid nodes. The top surface z = Lz is the
exposed face of the boundary material points' elements: each top quad is split into two
triangles, each carrying three point conditions at its interior quadrature points
(``face_loads.triangle_face_table``); their loads are the exact face integrals of the ring
averages (the conservative export), set through POINT_LOAD by the same PointLoadProcess as the
axisymmetric model.
"""
from __future__ import annotations

import json
import logging
import time as _time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .builder import BODY_PART, GRID_PART, LOAD_PART, MPMSpec, mpm_parameters
from .loads import MeridianLoads
from .runtime import captured_stdout, import_kratos, kratos_info, solution_steps

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Block:
    """Linear elastic block: sizes [m], E [Pa], nu, rho [kg/m^3], hexahedra nx x ny x nz."""

    Lx: float
    Ly: float
    Lz: float
    E: float
    nu: float
    rho: float
    nx: int
    ny: int
    nz: int

    def __post_init__(self) -> None:
        for name in ("Lx", "Ly", "Lz", "E", "rho"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0.0):
                raise ValueError(f"{name}: must be a positive finite number, got {v!r}")
        if not (-1.0 < self.nu < 0.5):
            raise ValueError(f"nu: must lie in (-1, 0.5), got {self.nu!r}")
        for name in ("nx", "ny", "nz"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name}: must be an integer >= 1, got {getattr(self, name)!r}")

    @property
    def lame(self) -> Tuple[float, float]:
        lam = self.E * self.nu / ((1.0 + self.nu) * (1.0 - 2.0 * self.nu))
        return lam, self.E / (2.0 * (1.0 + self.nu))

    def grid(self) -> Tuple[np.ndarray, np.ndarray]:
        """Nodes (N, 3) m (id - 1 = i + (nx+1) (j + (ny+1) k)) and hexahedra (Ne, 8) 0-based, Kratos order."""
        xs, ys, zs = (np.linspace(0.0, L, n + 1) for L, n in ((self.Lx, self.nx), (self.Ly, self.ny), (self.Lz, self.nz)))
        Z, Y, X = np.meshgrid(zs, ys, xs, indexing="ij")
        nodes = np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1)
        px, pxy = self.nx + 1, (self.nx + 1) * (self.ny + 1)
        k, j, i = np.meshgrid(np.arange(self.nz), np.arange(self.ny), np.arange(self.nx), indexing="ij")
        n0 = (i + px * j + pxy * k).ravel()
        hexa = np.stack([n0, n0 + 1, n0 + px + 1, n0 + px, n0 + pxy, n0 + pxy + 1, n0 + pxy + px + 1, n0 + pxy + px],
                        axis=1)
        return nodes, hexa

    def top_triangles(self) -> Tuple[np.ndarray, np.ndarray]:
        """The exposed top faces (z = Lz) of the top-layer elements, as ccw triangles: (nodes, tris)."""
        nodes, hexa = self.grid()
        top = hexa[-self.nx * self.ny:, 4:]  # the top face (ccw seen from +z) of the top layer
        tris = np.concatenate([top[:, [0, 1, 2]], top[:, [0, 2, 3]]])
        return nodes, tris


def project_parameters(spec: MPMSpec) -> Dict[str, Any]:
    return mpm_parameters(spec, 3, "load_transfer_mpm_3d")


def build_model_parts(K, MPM, model, block: Block, load_points: np.ndarray) -> Dict[str, int]:
    grid = model.GetModelPart("Background_Grid")
    init = model.GetModelPart("Initial_MPM_Material")
    nodes, hexa = block.grid()
    ids = np.arange(1, nodes.shape[0] + 1)
    prop_grid = grid.GetProperties()[1]
    prop = init.GetProperties()[1]
    prop.SetValue(K.YOUNG_MODULUS, float(block.E))
    prop.SetValue(K.POISSON_RATIO, float(block.nu))
    prop.SetValue(K.DENSITY, float(block.rho))
    prop.SetValue(MPM.MATERIAL_POINTS_PER_ELEMENT, 8)
    prop.SetValue(K.CONSTITUTIVE_LAW, MPM.LinearElasticIsotropic3DLaw())
    for mp in (grid, init):  # the Kratos Python API creates entities one at a time
        for i, (x, y, z) in zip(ids.tolist(), nodes.tolist()):
            mp.CreateNewNode(i, x, y, z)
    conn = (hexa + 1).tolist()
    for e, c in enumerate(conn, start=1):
        grid.CreateNewElement("Element3D8N", e, c, prop_grid)
        init.CreateNewElement("Element3D8N", e, c, prop)
    solid = init.CreateSubModelPart(BODY_PART)
    solid.AddNodes(ids.tolist())
    solid.AddElements(list(range(1, len(conn) + 1)))
    gpart = grid.CreateSubModelPart(GRID_PART)
    gpart.AddNodes(ids.tolist())
    gpart.AddElements(list(range(1, len(conn) + 1)))
    loads = grid.CreateSubModelPart(LOAD_PART)
    first = int(ids[-1]) + 1
    zero = K.Vector([0.0, 0.0, 0.0])
    for k, (x, y, z) in enumerate(np.asarray(load_points, dtype=np.float64).tolist()):
        node = grid.CreateNewNode(first + k, x, y, z)
        loads.AddNodes([node.Id])
        cond = loads.CreateNewCondition("PointCondition3D1N", k + 1, [node.Id], prop_grid)
        cond.Set(K.BOUNDARY, True)
        cond.SetValue(MPM.MPC_IS_NEUMANN, True)
        cond.SetValue(MPM.MATERIAL_POINTS_PER_CONDITION, 1)
        cond.SetValue(MPM.POINT_LOAD, zero)
    return {"grid_nodes": int(ids.size), "elements": len(conn), "load_points": int(len(load_points))}


def fix_supports(K, model, block: Block) -> int:
    grid = model.GetModelPart(f"Background_Grid.{GRID_PART}")
    tol = 1e-12 * max(block.Lx, block.Ly, block.Lz)
    n = 0
    for node in grid.Nodes:
        for coord, var in ((node.X, K.DISPLACEMENT_X), (node.Y, K.DISPLACEMENT_Y), (node.Z, K.DISPLACEMENT_Z)):
            if coord <= tol:
                node.Fix(var)
                node.SetSolutionStepValue(var, 0.0)
                n += 1
    return n


@dataclass
class MPM3DResult:
    records: Dict[str, np.ndarray]
    x0: np.ndarray  # (Nmp, 3) m
    u: np.ndarray  # (Nmp, 3) m, final
    stress: np.ndarray  # (Nmp, 6) Pa (xx, yy, zz, xy, yz, xz)
    volume: np.ndarray
    info: Dict[str, Any]
    seconds: Dict[str, float]


def run_block(block: Block, spec: MPMSpec, loads: MeridianLoads, *, fail_above: float = 0.02, J_scale: float = 0.0,
              log_path: Optional[Path | str] = None) -> MPM3DResult:
    """Run the 3-D Kratos MPM model of ``block`` under the 3-D ``loads`` (read_cartesian_loads)."""
    K, MPM = import_kratos(log_path)

    from .process import gauss_values, point_load_analysis

    secs: Dict[str, float] = {}
    c0 = _time.perf_counter()
    tol = 1e-9 * max(block.Lx, block.Ly, block.Lz)

    _Analysis = point_load_analysis(loads, fail_above=fail_above, J_scale=J_scale, match_tol=tol)

    with captured_stdout(log_path):
        model = K.Model()
        stage = _Analysis(model, K.Parameters(json.dumps(project_parameters(spec))))
        sizes = build_model_parts(K, MPM, model, block, loads.points)
        stage.Initialize()
        fix_supports(K, model, block)
        mpm = model.GetModelPart("MPM_Material")
        pi = mpm.ProcessInfo
        x0 = gauss_values(mpm.Elements, MPM.MP_COORD, pi, 3)
        secs["setup"] = _time.perf_counter() - c0
        c1 = _time.perf_counter()
        n = sum(1 for _ in solution_steps(stage))
        stage.Finalize()
        secs["solve"] = _time.perf_counter() - c1
        u = gauss_values(mpm.Elements, MPM.MP_DISPLACEMENT, pi, 3)
        stress = gauss_values(mpm.Elements, MPM.MP_CAUCHY_STRESS_VECTOR, pi, 6)
        volume = gauss_values(mpm.Elements, MPM.MP_VOLUME, pi, 1)[:, 0]
    if n != spec.n_steps:
        raise RuntimeError(f"Kratos ran {n} steps, expected n_steps = {spec.n_steps}")
    info = dict(kratos_info(), **sizes, material_points=int(x0.shape[0]), steps=n, solver=spec.solver,
                formulation="3d")
    log.info("Kratos MPM 3-D %s run: %d steps, %d material points, %.2f s", spec.solver, n, x0.shape[0], secs["solve"])
    return MPM3DResult(records=stage.load_process.arrays(), x0=x0, u=u, stress=stress, volume=volume, info=info,
                       seconds=secs)
