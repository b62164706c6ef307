"""One Kratos MPM run of the elastic body under a kratos-point-loads file.

:func:`run_mpm` builds the model in Python, attaches :class:`~.process.PointLoadProcess`, runs
the analysis stage step by step, and returns the per-step records, the material-point
displacement history and the final material-point fields (displacement, stress, volume).
"""
from __future__ import annotations

import logging
import math
import time as _time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np

from ..fe.base import ElasticBody
from .builder import MPMSpec, build_model_parts, fix_supports, parameters_json
from .loads import MeridianLoads
from .runtime import captured_stdout, import_kratos, kratos_info, solution_steps

log = logging.getLogger(__name__)


@dataclass
class MPMResult:
    """Records (per step), material-point history and final fields.

    records: time, dt, F_B, F_M, J_B, J_M, e_F, e_J, work (Nsteps,), u_points (Nsteps, Nc, 2) in
    file order. x0 (Nmp, 2) m initial MP positions, u_hist (Nsteps + 1, Nmp, 2) m,
    stress (Nmp, 4) Pa (xx, yy, zz, xy), volume (Nmp,) m^3 (axisymmetric) or m^2.
    """

    records: Dict[str, np.ndarray]
    x0: np.ndarray
    u_hist: np.ndarray
    stress: np.ndarray
    volume: np.ndarray
    info: Dict[str, Any] = field(default_factory=dict)
    seconds: Dict[str, float] = field(default_factory=dict)


def _stress4(s: np.ndarray, nu: float) -> np.ndarray:
    """(Nmp, 4) (xx, yy, zz, xy): axisymmetric vectors are (rr, zz, tt, rz); plane strain (xx, yy, xy)."""
    if s.shape[1] >= 4:
        return s[:, :4].copy()
    return np.stack([s[:, 0], s[:, 1], nu * (s[:, 0] + s[:, 1]), s[:, 2]], axis=1)


def _grid_displacement(K, nodes) -> np.ndarray:
    """(Nn, 2) DISPLACEMENT of the grid nodes (the increment of the step in Kratos' updated-Lagrangian MPM)."""
    return np.array([[nd.GetSolutionStepValue(K.DISPLACEMENT_X), nd.GetSolutionStepValue(K.DISPLACEMENT_Y)]
                     for nd in nodes])


def run_mpm(body: ElasticBody, spec: MPMSpec, loads: MeridianLoads, *, load_points: Optional[np.ndarray] = None,
            fail_above: float = 0.02, J_scale: float = 0.0, log_path: Optional[Path | str] = None,
            match_tol: Optional[float] = None, track_energy: bool = False) -> MPMResult:
    """Run Kratos; ``load_points`` (Nc, 2) m where the conditions are built (default: the file's).

    track_energy: also record, per step, the energy terms of :mod:`.energy` (kinetic, elastic,
    stress_work, dissipation, u_residual, tresca_max, von_mises_max) in ``records``.
    """
    K, MPM = import_kratos(log_path)

    from .process import gauss_values, point_load_analysis

    secs: Dict[str, float] = {}
    c0 = _time.perf_counter()
    pts = loads.points if load_points is None else np.asarray(load_points, dtype=np.float64)
    tol = match_tol if match_tol is not None else 1e-9 * max(body.radius, body.height)

    _Analysis = point_load_analysis(loads, fail_above=fail_above, J_scale=J_scale, match_tol=tol)

    with captured_stdout(log_path):
        model = K.Model()
        stage = _Analysis(model, K.Parameters(parameters_json(body, spec)))
        sizes = build_model_parts(K, MPM, model, body, spec, pts)
        stage.Initialize()
        fix_supports(K, model, body)
        mpm = model.GetModelPart("MPM_Material")
        pi = mpm.ProcessInfo
        x_init = gauss_values(mpm.Elements, MPM.MP_COORD, pi, 2)
        hist = [np.zeros_like(x_init)]
        converged: list = []
        tracker = None
        if track_energy:
            from .energy import EnergyTracker, grid_strain_increment

            xs, ys = body.grid_lines()
            ys = np.concatenate([ys, ys[-1] + (ys[1] - ys[0]) * np.arange(1, int(spec.grid_margin_rows) + 1)])
            grid_nodes = [model.GetModelPart("Background_Grid").GetNode(i) for i in range(1, xs.size * ys.size + 1)]

            mass = gauss_values(mpm.Elements, MPM.MP_MASS, pi, 1)[:, 0]
            top = math.pi * body.radius**2 if body.formulation == "axisymmetric" else body.radius
            tracker = EnergyTracker(x_init.shape[0], body.E, body.nu, top)
        secs["setup"] = _time.perf_counter() - c0
        c1 = _time.perf_counter()
        n = 0
        for ok in solution_steps(stage):
            converged.append(ok)
            hist.append(gauss_values(mpm.Elements, MPM.MP_DISPLACEMENT, pi, 2))
            if tracker is not None:  # the grid displacement of this step at the start-of-step MP positions
                du = _grid_displacement(K, grid_nodes)
                d_eps = grid_strain_increment(xs, ys, du, x_init + hist[-2], body.formulation == "axisymmetric")
                tracker.update(mass, gauss_values(mpm.Elements, MPM.MP_VELOCITY, pi, 2),
                               gauss_values(mpm.Elements, MPM.MP_VOLUME, pi, 1)[:, 0],
                               gauss_values(mpm.Elements, MPM.MP_CAUCHY_STRESS_VECTOR, pi, 4), d_eps,
                               gauss_values(mpm.Elements, MPM.MP_EQUIVALENT_PLASTIC_STRAIN, pi, 1)[:, 0]
                               if spec.law == "tresca" else None, spec.yield_stress if spec.law == "tresca" else 0.0)
            n += 1
        stage.Finalize()
        secs["solve"] = _time.perf_counter() - c1
        stress = gauss_values(mpm.Elements, MPM.MP_CAUCHY_STRESS_VECTOR, pi, 4)
        volume = gauss_values(mpm.Elements, MPM.MP_VOLUME, pi, 1)[:, 0]
    if n != spec.n_steps:
        raise RuntimeError(f"Kratos ran {n} steps, expected n_steps = {spec.n_steps}")
    rec = stage.load_process.arrays()
    rec["converged"] = np.asarray(converged, dtype=np.float64)  # 1: the solver reported convergence
    if tracker is not None:
        rec.update(tracker.records())
    info = dict(kratos_info(), **sizes, material_points=int(x_init.shape[0]), steps=n,
                end_time=spec.end_time, solver=spec.solver, analysis_type=spec.analysis_type,
                formulation=body.formulation)
    log.info("Kratos MPM %s run: %d steps, %d material points, %.2f s", spec.solver, n, x_init.shape[0], secs["solve"])
    return MPMResult(records=rec, x0=x_init, u_hist=np.asarray(hist), stress=_stress4(stress, body.nu),
                     volume=volume, info=info, seconds=secs)
