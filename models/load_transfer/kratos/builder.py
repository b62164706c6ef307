"""Kratos MPM model parts built from Python (``use_input_model_part``; no mdpa files).

The body [0, radius] x [0, height] (meridian plane: X = r, Y = z) is meshed with nr x nz
bilinear quadrilaterals in ``Initial_MPM_Material``; the background grid ``Background_Grid`` is
the same mesh (grid matching the body), so the material points generated at the 2 x 2 Gauss
points of the body elements sit at the Gauss points of the grid elements. Point loads: one grid
point condition per load point (a node of its own, outside the equation system), flagged BOUNDARY
with MPC_IS_NEUMANN, MATERIAL_POINTS_PER_CONDITION = 1 and POINT_LOAD = 0 before the solver is
initialised, so that Kratos turns each into an ``MPMParticlePointLoadCondition``. Supports:
u_y = 0 on Y = 0 and u_x = 0 on X = 0 (the axis), fixed on the grid nodes.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Dict, Tuple

import numpy as np

from ..fe.base import ElasticBody

log = logging.getLogger(__name__)

SOLVERS = ("static", "dynamic")
# "tresca": HenckyMCPlastic*Law, no dilatancy, friction ``friction_angle`` [rad] (0.01: the Tresca limit
# used by the plasticity stage, models/load_transfer/kratos/plasticity.py; at 0 the return mapping
# gives NaN at first yield). Kratos' J2 law (JohnsonCookThermalPlastic*) runs only explicitly and
# doubles the shear stress (see explicit_mpm.py and the README, "Plasticity").
LAWS = ("linear_elastic", "tresca")
LOAD_PART = "point_loads"
BODY_PART = "solid"
GRID_PART = "grid"


def check_stepping(dt: float, n_steps: int, law: str, laws: Tuple[str, ...] = LAWS) -> None:
    """ValueError unless dt [s] is positive and finite, n_steps >= 1 and law one of ``laws``."""
    if not (np.isfinite(dt) and dt > 0.0):
        raise ValueError(f"dt: must be a positive finite step in s, got {dt!r}")
    if int(n_steps) < 1:
        raise ValueError(f"n_steps: must be an integer >= 1, got {n_steps!r}")
    if law not in laws:
        raise ValueError(f"law: must be one of {laws}, got {law!r}")


@dataclass(frozen=True)
class MPMSpec:
    """What the Kratos run needs besides the body and the loads.

    solver: "static" (linear static steps) or "dynamic" (implicit Newmark, beta, gamma = 1/2).
    law: "linear_elastic" or "tresca" (``HenckyMCPlastic*Law``, dilatancy 0, cohesion
    yield_stress / 2, i.e. uniaxial yield stress ``yield_stress`` [Pa]);
    friction_angle [rad]: Kratos' INTERNAL_FRICTION_ANGLE, whose sine the MC yield criterion and flow
    rule take directly (0.01 rad = 0.57 deg: the Tresca limit within 2 %; at exactly 0 the law's
    return mapping gives NaN at first yield). grid_margin_rows: empty background-grid rows
    above the body, so that material points and load points on the top face that move up (free
    vibration) stay inside the grid (0: the grid matches the body).
    dt [s], n_steps, t0 [s]: the steps [t0 + n dt, t0 + (n + 1) dt]; end_time = t0 + (N - 1/2) dt.
    analysis_type: "linear" (one linear solve per step, no geometric stiffness) or "non_linear".
    """

    solver: str = "static"
    dt: float = 1.0
    n_steps: int = 1
    t0: float = 0.0
    analysis_type: str = "linear"
    newmark_beta: float = 0.25
    material_points_per_element: int = 4
    linear_solver: str = "skyline_lu_factorization"
    law: str = "linear_elastic"
    yield_stress: float = float("inf")
    friction_angle: float = 0.0
    grid_margin_rows: int = 0

    def __post_init__(self) -> None:
        if self.solver not in SOLVERS:
            raise ValueError(f"solver: must be one of {SOLVERS}, got {self.solver!r}")
        check_stepping(self.dt, self.n_steps, self.law)
        if self.law == "tresca" and not (np.isfinite(self.yield_stress) and self.yield_stress > 0.0):
            raise ValueError("law: tresca needs a positive finite yield_stress [Pa]")
        if int(self.grid_margin_rows) < 0:
            raise ValueError(f"grid_margin_rows: must be an integer >= 0, got {self.grid_margin_rows!r}")
        if self.analysis_type not in ("linear", "non_linear"):
            raise ValueError(f"analysis_type: must be 'linear' or 'non_linear', got {self.analysis_type!r}")

    @property
    def end_time(self) -> float:
        """t0 + (N - 1/2) dt: the loop stops after exactly N steps despite round-off in TIME."""
        return float(self.t0 + (self.n_steps - 0.5) * self.dt)


def project_parameters(body: ElasticBody, spec: MPMSpec) -> Dict[str, Any]:
    """The ProjectParameters of the run (processes are attached in Python)."""
    return mpm_parameters(spec, 2, "load_transfer_mpm", axis_symmetric_flag=body.formulation == "axisymmetric")


def mpm_parameters(spec: MPMSpec, domain_size: int, problem_name: str, **solver_extra: Any) -> Dict[str, Any]:
    """The ProjectParameters of an implicit MPM run of ``spec`` in ``domain_size`` dimensions
    (``solver_extra``: further solver settings, e.g. the axisymmetric flag)."""
    solver: Dict[str, Any] = {
        "solver_type": "Static" if spec.solver == "static" else "Dynamic",
        "model_part_name": "MPM_Material", "domain_size": domain_size, "echo_level": 0,
        "analysis_type": spec.analysis_type, "time_stepping": {"time_step": float(spec.dt)},
        "grid_model_import_settings": {"input_type": "use_input_model_part"},
        "model_import_settings": {"input_type": "use_input_model_part"},
        "material_import_settings": {"materials_filename": ""},
        "consistent_mass_matrix": False,  # lumped nodal masses (the FE model uses the same)
        "linear_solver_settings": {"solver_type": spec.linear_solver},
        "problem_domain_sub_model_part_list": [], "processes_sub_model_part_list": [],
        **solver_extra,
    }
    if spec.analysis_type == "non_linear":  # Newton-Raphson on the residual
        solver.update({"convergence_criterion": "residual_criterion", "residual_relative_tolerance": 1e-8,
                       "residual_absolute_tolerance": 1e-9, "max_iteration": 50})
    if spec.solver == "dynamic":
        solver.update({"time_integration_method": "implicit", "scheme_type": "newmark",
                       "newmark_beta": float(spec.newmark_beta)})

    return {"problem_data": {"problem_name": problem_name, "parallel_type": "OpenMP", "echo_level": 0,
                             "start_time": float(spec.t0), "end_time": spec.end_time},
            "solver_settings": solver, "processes": {}, "output_processes": {}}


def parameters_json(body: ElasticBody, spec: MPMSpec) -> str:
    return json.dumps(project_parameters(body, spec))


def build_model_parts(K, MPM, model, body: ElasticBody, spec: MPMSpec, load_points: np.ndarray) -> Dict[str, int]:
    """Fill the grid, the body mesh and the point-load conditions (before Initialize)."""
    grid = model.GetModelPart("Background_Grid")
    init = model.GetModelPart("Initial_MPM_Material")
    xs, ys = body.grid_lines()
    nx, ny, m = body.nr, body.nz, int(spec.grid_margin_rows)
    if m:  # empty rows above the body (same spacing): the grid nodes of the body keep their ids
        ys = np.concatenate([ys, ys[-1] + (ys[1] - ys[0]) * np.arange(1, m + 1)])
    X, Y = np.meshgrid(xs, ys)  # node (i, j) -> id j (nx + 1) + i + 1
    coords = np.stack([X.ravel(), Y.ravel()], axis=1)
    ids = np.arange(1, coords.shape[0] + 1)
    jj, ii = np.meshgrid(np.arange(ny + m), np.arange(nx), indexing="ij")
    n0 = (jj * (nx + 1) + ii + 1).ravel()
    conn = np.stack([n0, n0 + 1, n0 + nx + 2, n0 + nx + 1], axis=1)  # counter-clockwise
    n_body_nodes, n_body_elems = (nx + 1) * (ny + 1), nx * ny
    laws = {("linear_elastic", "axisymmetric"): MPM.LinearElasticIsotropicAxisym2DLaw,
            ("linear_elastic", "plane_strain"): MPM.LinearElasticIsotropicPlaneStrain2DLaw,
            ("tresca", "axisymmetric"): MPM.HenckyMCPlasticAxisym2DLaw,
            ("tresca", "plane_strain"): MPM.HenckyMCPlasticPlaneStrain2DLaw}
    law = laws[(spec.law, body.formulation)]
    prop_grid = grid.GetProperties()[1]
    prop = init.GetProperties()[1]
    prop.SetValue(K.YOUNG_MODULUS, float(body.E))
    prop.SetValue(K.POISSON_RATIO, float(body.nu))
    prop.SetValue(K.DENSITY, float(body.rho))
    prop.SetValue(K.THICKNESS, 1.0)  # plane strain: per unit thickness; axisymmetric: 2 pi r is added by Kratos
    prop.SetValue(MPM.MATERIAL_POINTS_PER_ELEMENT, int(spec.material_points_per_element))
    if spec.law == "tresca":  # Mohr-Coulomb, zero dilatancy; zero friction: Tresca, uniaxial yield = 2 c
        mc = (("COHESION", 0.5 * float(spec.yield_stress)), ("INTERNAL_FRICTION_ANGLE", float(spec.friction_angle)),
              ("INTERNAL_DILATANCY_ANGLE", 0.0))
        for key, v in mc:
            prop.SetValue(K.KratosGlobals.GetVariable(key), v)
    prop.SetValue(K.CONSTITUTIVE_LAW, law())
    # Kratos' Python API creates entities one at a time (no bulk constructor)
    for i, (x, y) in zip(ids.tolist(), coords.tolist()):
        grid.CreateNewNode(i, x, y, 0.0)
        if i <= n_body_nodes:
            init.CreateNewNode(i, x, y, 0.0)
    for e, c in enumerate(conn.tolist(), start=1):
        grid.CreateNewElement("Element2D4N", e, c, prop_grid)
        if e <= n_body_elems:
            init.CreateNewElement("Element2D4N", e, c, prop)
    solid = init.CreateSubModelPart(BODY_PART)
    solid.AddNodes(ids[:n_body_nodes].tolist())
    solid.AddElements(list(range(1, n_body_elems + 1)))
    gpart = grid.CreateSubModelPart(GRID_PART)
    gpart.AddNodes(ids.tolist())
    gpart.AddElements(list(range(1, conn.shape[0] + 1)))
    loads = grid.CreateSubModelPart(LOAD_PART)
    pts = np.asarray(load_points, dtype=np.float64)
    first = int(ids[-1]) + 1
    zero = K.Vector([0.0, 0.0, 0.0])
    for k, (x, y) in enumerate(pts.tolist()):
        node = grid.CreateNewNode(first + k, x, y, 0.0)
        loads.AddNodes([node.Id])
        cond = loads.CreateNewCondition("PointCondition2D1N", k + 1, [node.Id], prop_grid)
        cond.Set(K.BOUNDARY, True)
        cond.SetValue(MPM.MPC_IS_NEUMANN, True)
        cond.SetValue(MPM.MATERIAL_POINTS_PER_CONDITION, 1)
        cond.SetValue(MPM.POINT_LOAD, zero)
    log.info("Kratos model parts: %d grid nodes, %d elements, %d point-load conditions", ids.size, conn.shape[0],
             pts.shape[0])
    return {"grid_nodes": int(ids.size), "elements": int(conn.shape[0]), "load_points": int(pts.shape[0])}


def fix_supports(K, model, body: ElasticBody) -> int:
    """u_y = 0 on Y = 0, u_x = 0 on X = 0, u_z = 0 everywhere on the grid nodes; count of fixed dofs."""
    grid = model.GetModelPart(f"Background_Grid.{GRID_PART}")
    tol = 1e-12 * max(body.radius, body.height)
    n = 0
    for node in grid.Nodes:
        node.Fix(K.DISPLACEMENT_Z)
        if node.X <= tol:
            node.Fix(K.DISPLACEMENT_X)
            node.SetSolutionStepValue(K.DISPLACEMENT_X, 0.0)
            n += 1
        if node.Y <= tol:
            node.Fix(K.DISPLACEMENT_Y)
            node.SetSolutionStepValue(K.DISPLACEMENT_Y, 0.0)
            n += 1
    return n
