"""Explicit Kratos MPM run (central differences, USF) under conservative grid point forces, with
its energy balance: the route tried for the plasticity stage of issue 15 (see the README, "Plasticity").

Loads. The explicit scheme of KratosMPMApplication 10.4 cannot assemble ``MPMParticlePointLoadCondition``
("Base condition class is not able to assemble rRHS ... FORCE_RESIDUAL"), but grid load conditions
(``MPMGridPointLoadCondition2D1N``, an ``MPMGridBaseLoadCondition``) add their right-hand side to
FORCE_RESIDUAL. So every step the exact step mean of each point force of the kratos-point-loads file
is split onto the background-grid nodes of the element containing the point with that element's
bilinear shape functions (``P``; rows sum to one, so the nodal forces sum to the point forces to
round-off and each point's force stays on its element) and set as POINT_LOAD (total ring force in
N, no 2 pi r) of one grid condition per loaded node. The grid is fixed in space: the loads act at
the initial positions of the points. After the file's last knot the load is zero (free vibration).

Laws: "linear_elastic" (LinearElasticIsotropic*), "johnson_cook" (JohnsonCookThermalPlastic*Law,
B = C = 0, Taylor-Quinney 0: J2 perfect plasticity at yield stress A), "mohr_coulomb"
(HenckyMCPlastic*Law, cohesion yield_stress / 2, friction ``friction_angle`` [rad] (0.01: the
Tresca limit; at 0 the return mapping gives NaN), dilatancy 0). ``yield_stress = inf`` is the
law's own elastic response (A or 2 c = 1e30 Pa).

Energy terms per step, from Kratos' material-point output and the applied loads: external work
W = sum_n dt sum_i f_i . v_i (v_i: the grid VELOCITY after the step, the mid-step velocity that
moved the material points); kinetic K = sum_p 1/2 m_p |v_p|^2 (MP_MASS, MP_VELOCITY); stress work
S = sum_p V_p int sigma : d eps (MP_VOLUME, MP_CAUCHY_STRESS_VECTOR, MP_ALMANSI_STRAIN_VECTOR, the
element's accumulated strain increments; trapezoid in time); elastic E = sum_p V_p 1/2 sigma : C^-1 sigma
(isotropic compliance of E, nu); plastic dissipation D = S - E (= sum_p V_p int sigma : d eps_p for an
additive split with the isotropic elastic law; none of these laws exposes its plastic strain tensor).
Balance: W - K - E - D = W - K - S.
"""
from __future__ import annotations

import json
import logging
import math
import time as _time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np
from scipy import sparse

from ..fe.base import ElasticBody
from .energy import EnergyTracker, compliance_energy, tresca_stress, von_mises_stress  # noqa: F401 (re-exported)
from .builder import check_stepping
from .loads import MeridianLoads
from .runtime import captured_stdout, import_kratos, kratos_info

log = logging.getLogger(__name__)

LAWS = ("linear_elastic", "johnson_cook", "mohr_coulomb")
ELASTIC_YIELD = 1.0e30  # Pa: "infinite" yield stress of the elastic reference run
GRID_CONDITION = "MPMGridPointLoadCondition2D1N"


@dataclass(frozen=True)
class ExplicitSpec:
    """dt [s] (below the CFL limit :func:`cfl_dt`), n_steps, t0 [s]; law (see the module docstring),
    yield_stress [Pa] (uniaxial; inf = the law's elastic response), friction_angle [rad] (mohr_coulomb)."""

    dt: float
    n_steps: int
    yield_stress: float = math.inf
    law: str = "linear_elastic"
    t0: float = 0.0
    friction_angle: float = 0.01

    def __post_init__(self) -> None:
        check_stepping(self.dt, self.n_steps, self.law, LAWS)
        if not (self.yield_stress > 0.0):
            raise ValueError(f"yield_stress: must be > 0 Pa (inf: elastic), got {self.yield_stress!r}")

    @property
    def end_time(self) -> float:
        return float(self.t0 + (self.n_steps - 0.5) * self.dt)

    @property
    def yield_value(self) -> float:
        """The uniaxial yield stress handed to Kratos [Pa] (ELASTIC_YIELD for inf)."""
        return ELASTIC_YIELD if not np.isfinite(self.yield_stress) else float(self.yield_stress)


def cfl_dt(body: ElasticBody) -> float:
    """h_min / c_p [s]: the explicit stability bound of the grid (P-wave speed of E, nu, rho)."""
    lam, mu = body.lame
    c_p = math.sqrt((lam + 2.0 * mu) / body.rho)
    return min(body.radius / body.nr, body.height / body.nz) / c_p


def grid_shape_matrix(xs: np.ndarray, ys: np.ndarray, points: np.ndarray) -> sparse.csr_matrix:
    """(Np, Nn) bilinear shape functions of the structured grid (node id - 1 = j (nx + 1) + i) at ``points``.

    Points on an element edge belong to the lower-left element (the values agree on the edge);
    points outside the grid raise ValueError. Rows sum to one (partition of unity).
    """
    p = np.asarray(points, dtype=np.float64)
    nx, ny = xs.size - 1, ys.size - 1
    hx, hy = xs[-1] - xs[0], ys[-1] - ys[0]
    tol = 1e-9 * max(hx, hy)
    out = (p[:, 0] < xs[0] - tol) | (p[:, 0] > xs[-1] + tol) | (p[:, 1] < ys[0] - tol) | (p[:, 1] > ys[-1] + tol)
    if np.any(out):
        i = int(np.flatnonzero(out)[0])
        raise ValueError(f"point {i} at {p[i].tolist()} m lies outside the background grid")
    ix = np.clip(np.searchsorted(xs, p[:, 0], side="right") - 1, 0, nx - 1)
    iy = np.clip(np.searchsorted(ys, p[:, 1], side="right") - 1, 0, ny - 1)
    xi = (p[:, 0] - xs[ix]) / (xs[ix + 1] - xs[ix])
    eta = (p[:, 1] - ys[iy]) / (ys[iy + 1] - ys[iy])
    n0 = iy * (nx + 1) + ix
    cols = np.stack([n0, n0 + 1, n0 + nx + 2, n0 + nx + 1], axis=1)
    vals = np.stack([(1 - xi) * (1 - eta), xi * (1 - eta), xi * eta, (1 - xi) * eta], axis=1)
    rows = np.repeat(np.arange(p.shape[0]), 4)
    return sparse.csr_matrix((vals.ravel(), (rows, cols.ravel())), shape=(p.shape[0], (nx + 1) * (ny + 1)))


def step_mean_or_zero(loads: MeridianLoads, t0: float, t1: float):
    """Exact mean over [t0, t1] of the point forces (Nc, 2) N and of F_B (N); zero load after the
    file's last knot (the wall is unloaded once the source ends: free vibration, no extrapolation)."""
    t_last = float(loads.time[-1])
    if t0 >= t_last:
        return np.zeros_like(loads.forces[0]), 0.0
    if t1 <= t_last:
        return loads.step_average(t0, t1)
    f, fb = loads.step_average(t0, t_last)
    s = (t_last - t0) / (t1 - t0)
    return f * s, fb * s


@dataclass
class ExplicitResult:
    """Per-step records and final fields of one explicit run.

    records (Nsteps,): time [s], F_B, F_applied [N] (-sum of the applied nodal forces . n), work,
    kinetic, elastic, stress_work, dissipation [J] (:mod:`.energy`), response [m] (mean axial
    displacement of the loaded grid nodes, weighted by their share of the points), u_residual [m]
    (sum_p V_p eps_p,zz / top area, eps_p = eps - C^-1 sigma: the mean top displacement the plastic
    strain alone gives), eps_p_max (MP_EQUIVALENT_PLASTIC_STRAIN, johnson_cook only), sigma_eq_max [Pa]
    (Tresca for mohr_coulomb, von Mises otherwise). x0 (Nmp, 2) m, u_hist (Nsteps + 1, Nmp, 2) m,
    eps_p (Nmp,), stress (Nmp, 4) Pa (rr, zz, tt, rz), strain (Nmp, 4) (MP_ALMANSI_STRAIN_VECTOR: rr, zz,
    tt, gamma_rz), volume (Nmp,) m^3, all at the end.
    """

    records: Dict[str, np.ndarray]
    x0: np.ndarray
    u_hist: np.ndarray
    eps_p: np.ndarray
    stress: np.ndarray
    strain: np.ndarray
    volume: np.ndarray
    info: Dict[str, Any] = field(default_factory=dict)
    seconds: Dict[str, float] = field(default_factory=dict)


def _parameters(body: ElasticBody, spec: ExplicitSpec) -> str:
    solver = {"solver_type": "Dynamic", "model_part_name": "MPM_Material", "domain_size": 2, "echo_level": 0,
              "analysis_type": "linear", "time_stepping": {"time_step": float(spec.dt)},
              "time_integration_method": "explicit", "scheme_type": "central_difference", "stress_update": "usf",
              "grid_model_import_settings": {"input_type": "use_input_model_part"},
              "model_import_settings": {"input_type": "use_input_model_part"},
              "material_import_settings": {"materials_filename": ""},
              "axis_symmetric_flag": body.formulation == "axisymmetric", "consistent_mass_matrix": False,
              "problem_domain_sub_model_part_list": [], "processes_sub_model_part_list": []}
    return json.dumps({"problem_data": {"problem_name": "load_transfer_mpm_j2", "parallel_type": "OpenMP",
                                        "echo_level": 0, "start_time": float(spec.t0), "end_time": spec.end_time},
                       "solver_settings": solver, "processes": {}, "output_processes": {}})


def _material(K, MPM, prop, body: ElasticBody, spec: ExplicitSpec) -> None:
    prop.SetValue(K.YOUNG_MODULUS, float(body.E))
    prop.SetValue(K.POISSON_RATIO, float(body.nu))
    prop.SetValue(K.DENSITY, float(body.rho))
    prop.SetValue(K.THICKNESS, 1.0)
    prop.SetValue(MPM.MATERIAL_POINTS_PER_ELEMENT, 4)
    axi = body.formulation == "axisymmetric"
    if spec.law == "linear_elastic":
        prop.SetValue(K.CONSTITUTIVE_LAW, MPM.LinearElasticIsotropicAxisym2DLaw() if axi
                      else MPM.LinearElasticIsotropicPlaneStrain2DLaw())
        return
    G = K.KratosGlobals.GetVariable
    if spec.law == "mohr_coulomb":  # Hencky Mohr-Coulomb, friction -> 0, no dilatancy: Tresca, uniaxial yield 2 c
        for key, v in (("COHESION", 0.5 * spec.yield_value), ("INTERNAL_FRICTION_ANGLE", float(spec.friction_angle)),
                       ("INTERNAL_DILATANCY_ANGLE", 0.0)):
            prop.SetValue(G(key), float(v))
        prop.SetValue(K.CONSTITUTIVE_LAW, MPM.HenckyMCPlasticAxisym2DLaw() if axi else MPM.HenckyMCPlasticPlaneStrain2DLaw())
        return
    # Johnson-Cook (A + B eps^n)(1 + C ln(rate / rate0))(1 - T*^m) with B = C = 0 and Taylor-Quinney 0:
    # J2 perfect plasticity at yield stress A (the thermal factor is 1 when Taylor-Quinney is 0)
    for key, v in (("JC_PARAMETER_A", spec.yield_value), ("JC_PARAMETER_B", 0.0), ("JC_PARAMETER_C", 0.0),
                   ("JC_PARAMETER_n", 1.0), ("JC_PARAMETER_m", 1.0), ("REFERENCE_STRAIN_RATE", 1.0),
                   ("TAYLOR_QUINNEY_COEFFICIENT", 0.0), ("TEMPERATURE", 293.0), ("REFERENCE_TEMPERATURE", 293.0),
                   ("MELD_TEMPERATURE", 1.0e4), ("SPECIFIC_HEAT", 1.0e3)):
        prop.SetValue(G(key), float(v))
    prop.SetValue(K.CONSTITUTIVE_LAW, MPM.JohnsonCookThermalPlastic2DAxisymLaw() if axi
                  else MPM.JohnsonCookThermalPlastic2DPlaneStrainLaw())


def run_explicit(body: ElasticBody, spec: ExplicitSpec, loads: MeridianLoads, *,
                 log_path: Optional[Path | str] = None) -> ExplicitResult:
    """One explicit Kratos MPM run of ``body`` under ``loads`` (see the module docstring)."""
    K, MPM = import_kratos(log_path)
    from KratosMultiphysics.MPMApplication.mpm_analysis import MpmAnalysis

    from .process import gauss_values

    class _Analysis(MpmAnalysis):  # no processes: the loads are set by the step loop below
        def _CreateProcesses(self, parameter_name, initialization_order):
            return []

    secs: Dict[str, float] = {}
    c0 = _time.perf_counter()
    xs, ys = body.grid_lines()
    nx, ny = body.nr, body.nz
    X, Y = np.meshgrid(xs, ys)
    coords = np.stack([X.ravel(), Y.ravel()], axis=1)
    ids = np.arange(1, coords.shape[0] + 1)
    jj, ii = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
    n0 = (jj * (nx + 1) + ii + 1).ravel()
    conn = np.stack([n0, n0 + 1, n0 + nx + 2, n0 + nx + 1], axis=1)
    P = grid_shape_matrix(xs, ys, loads.points)  # (Nc, Nn)
    loaded = np.flatnonzero(np.asarray(abs(P).sum(axis=0)).ravel() > 0.0)  # grid nodes that carry a load
    Pl = P[:, loaded].toarray()  # (Nc, Nl)
    # the normal of a loaded node: the P-weighted mean of its points' normals (one face: the same)
    n_nodes = Pl.T @ loads.normals
    n_nodes /= np.linalg.norm(n_nodes, axis=1, keepdims=True)
    with captured_stdout(log_path):
        model = K.Model()
        stage = _Analysis(model, K.Parameters(_parameters(body, spec)))
        grid = model.GetModelPart("Background_Grid")
        init = model.GetModelPart("Initial_MPM_Material")
        prop_grid, prop = grid.GetProperties()[1], init.GetProperties()[1]
        _material(K, MPM, prop, body, spec)
        for mp in (grid, init):  # the Python API creates entities one at a time
            for i, (x, y) in zip(ids.tolist(), coords.tolist()):
                mp.CreateNewNode(i, x, y, 0.0)
        for e, c in enumerate(conn.tolist(), start=1):
            grid.CreateNewElement("Element2D4N", e, c, prop_grid)
            init.CreateNewElement("Element2D4N", e, c, prop)
        solid = init.CreateSubModelPart("solid")
        solid.AddNodes(ids.tolist())
        solid.AddElements(list(range(1, conn.shape[0] + 1)))
        gpart = grid.CreateSubModelPart("grid")
        gpart.AddNodes(ids.tolist())
        gpart.AddElements(list(range(1, conn.shape[0] + 1)))
        lpart = grid.CreateSubModelPart("grid_point_loads")
        node_ids = (loaded + 1).tolist()
        lpart.AddNodes(node_ids)
        zero = K.Array3([0.0, 0.0, 0.0])
        for k, nid in enumerate(node_ids, start=1):
            cond = lpart.CreateNewCondition(GRID_CONDITION, k, [nid], prop_grid)
            cond.SetValue(MPM.POINT_LOAD, zero)
        stage.Initialize()
        tol = 1e-12 * max(body.radius, body.height)
        for node in gpart.Nodes:
            node.Fix(K.DISPLACEMENT_Z)
            if node.X <= tol:
                node.Fix(K.DISPLACEMENT_X)
            if node.Y <= tol:
                node.Fix(K.DISPLACEMENT_Y)
        mpm = model.GetModelPart("MPM_Material")
        by_node = {c.GetNodes()[0].Id: c for c in mpm.Conditions}
        missing = [n for n in node_ids if n not in by_node]
        if missing:
            raise RuntimeError(f"Kratos did not carry the grid load conditions of nodes {missing[:5]} into MPM_Material")
        conds = [by_node[n] for n in node_ids]
        load_nodes = [grid.GetNode(n) for n in node_ids]
        pi = mpm.ProcessInfo
        x0 = gauss_values(mpm.Elements, MPM.MP_COORD, pi, 2)
        mass = gauss_values(mpm.Elements, MPM.MP_MASS, pi, 1)[:, 0]
        secs["setup"] = _time.perf_counter() - c0
        rec: Dict[str, list] = {k: [] for k in ("time", "F_B", "F_applied", "work", "response", "eps_p_max",
                                                "sigma_eq_max")}
        hist = [np.zeros_like(x0)]
        u_nodes_prev = np.zeros((loaded.size, 2))
        e_prev = np.zeros((x0.shape[0], 4))
        W, t_prev = 0.0, float(spec.t0)
        top_area = math.pi * body.radius**2 if body.formulation == "axisymmetric" else body.radius
        tracker = EnergyTracker(x0.shape[0], body.E, body.nu, top_area)
        areas = np.asarray(Pl.sum(axis=0)).ravel()  # response weights: the share of points per node
        c1 = _time.perf_counter()
        n = 0
        while stage.KeepAdvancingSolutionLoop():
            stage.time = stage._AdvanceTime()
            t1 = float(pi[K.TIME])
            f_pts, fb = step_mean_or_zero(loads, t_prev, t1)
            f_nodes = Pl.T @ f_pts  # (Nl, 2): conservative split (rows of P sum to one)
            for cond, f in zip(conds, f_nodes.tolist()):
                cond.SetValue(MPM.POINT_LOAD, K.Array3([f[0], f[1], 0.0]))
            applied = np.array([[c.GetValue(MPM.POINT_LOAD)[0], c.GetValue(MPM.POINT_LOAD)[1]] for c in conds])
            stage.InitializeSolutionStep()
            stage._GetSolver().SolveSolutionStep()
            stage.FinalizeSolutionStep()
            u = gauss_values(mpm.Elements, MPM.MP_DISPLACEMENT, pi, 2)
            v = gauss_values(mpm.Elements, MPM.MP_VELOCITY, pi, 2)
            s = gauss_values(mpm.Elements, MPM.MP_CAUCHY_STRESS_VECTOR, pi, 4)
            vol = gauss_values(mpm.Elements, MPM.MP_VOLUME, pi, 1)[:, 0]
            e = gauss_values(mpm.Elements, MPM.MP_ALMANSI_STRAIN_VECTOR, pi, 4)  # (rr, zz, tt, gamma_rz)
            tracker.update(mass, v, vol, s, e - e_prev)  # the element's accumulated strain: its increment
            e_prev = e
            eps_p = (gauss_values(mpm.Elements, MPM.MP_EQUIVALENT_PLASTIC_STRAIN, pi, 1)[:, 0] if spec.law == "johnson_cook"
                     else np.zeros_like(vol))
            # the grid velocity that moved the material points this step (central differences: the
            # mid-step velocity, Kratos' VELOCITY until the next Predict clears it)
            v_nodes = np.array([[nd.GetSolutionStepValue(K.VELOCITY_X), nd.GetSolutionStepValue(K.VELOCITY_Y)]
                                for nd in load_nodes])
            W += spec.dt * float(np.einsum("ij,ij->", applied, v_nodes))
            u_nodes = u_nodes_prev + spec.dt * v_nodes
            u_nodes_prev = u_nodes
            rec["time"].append(t1)
            rec["F_B"].append(fb)
            rec["F_applied"].append(float(-np.einsum("ij,ij->", applied, n_nodes)))
            rec["work"].append(W)
            rec["response"].append(float(u_nodes[:, 1] @ areas / areas.sum()))
            rec["eps_p_max"].append(float(eps_p.max()))
            rec["sigma_eq_max"].append(float(np.max(tresca_stress(s) if spec.law == "mohr_coulomb"
                                                    else von_mises_stress(s))))
            hist.append(u)
            t_prev = t1
            n += 1
        stage.Finalize()
        secs["solve"] = _time.perf_counter() - c1
    if n != spec.n_steps:
        raise RuntimeError(f"Kratos ran {n} steps, expected n_steps = {spec.n_steps}")
    info = dict(kratos_info(), material_points=int(x0.shape[0]), steps=n, dt=spec.dt, law=spec.law,
                yield_stress=spec.yield_stress, loaded_grid_nodes=int(loaded.size), grid_condition=GRID_CONDITION,
                scheme="explicit central_difference, usf", cfl=float(spec.dt / cfl_dt(body)))
    log.info("Kratos explicit MPM (%s) run: %d steps, %.2f s", spec.law, n, secs["solve"])
    records = {k: np.asarray(v, dtype=np.float64) for k, v in rec.items()}
    records.update({k: v for k, v in tracker.records().items() if k in ("kinetic", "elastic", "stress_work",
                                                                          "dissipation", "u_residual")})
    return ExplicitResult(records=records, x0=x0,
                          u_hist=np.asarray(hist), eps_p=eps_p, stress=s, strain=e, volume=vol, info=info,
                          seconds=secs)
