"""The Kratos process that applies a kratos-point-loads file to the MPM point-load conditions.

Each step [TIME - DELTA_TIME, TIME] (the actual step times of the solver) every
``MPMParticlePointLoadCondition`` receives, through ``SetValuesOnIntegrationPoints(POINT_LOAD)``,
the exact mean of its piecewise-linear point-force history over the step. Per step it records the
source force F_B (the file's ring force, same exact mean), the applied force F_M = -sum f . n read
back from the conditions, the source and applied impulses (sums of force x actual step length),
and the external work of the applied forces, twice: ``work`` = sum f_{n+1} . du (the step force times
the step's displacement) and ``work_newmark`` = sum 1/2 (f_n + f_{n+1}) . du (:func:`~.energy.newmark_work`),
the work of Newmark's exact discrete energy identity for loads given at the step ends (the energy
balance uses it: the first form errs at first order in dt when the load changes); it aborts the run (:class:`MappingAbort`) as soon as
the mapping-only error (e_F or e_J of F_M against F_B so far) exceeds ``fail_above``.

Import this module only after :func:`models.load_transfer.kratos.runtime.import_kratos`.
"""
from __future__ import annotations

import logging
from typing import Dict, List

import KratosMultiphysics as K
import KratosMultiphysics.MPMApplication as MPM
import numpy as np

from .builder import LOAD_PART
from .energy import newmark_work
from .loads import MappingAbort, MeridianLoads, match_conditions  # noqa: F401 (MappingAbort re-exported)

log = logging.getLogger(__name__)


def gauss_values(container, variable, process_info, n: int) -> np.ndarray:
    """(len(container), n) values of ``variable`` at the single integration point of each entity."""
    ta = K.TensorAdaptors.GaussPointVariableTensorAdaptor(container, variable, process_info)
    ta.CollectData()
    arr = np.array(ta.data, dtype=np.float64)
    return arr.reshape(arr.shape[0], -1)[:, :n]


class PointLoadProcess(K.Process):
    """See the module docstring. ``mpm_part``: the MPM_Material model part."""

    def __init__(self, mpm_part, loads: MeridianLoads, *, fail_above: float = 0.02, J_scale: float = 0.0,
                 match_tol: float = 1e-9):
        super().__init__()
        self.mpm_part = mpm_part
        self.loads = loads
        self.fail_above = float(fail_above)
        self.J_scale = float(J_scale)
        self.match_tol = float(match_tol)
        self.records: Dict[str, List] = {k: [] for k in ("time", "dt", "F_B", "F_M", "J_B", "J_M", "e_F", "e_J",
                                                        "work", "work_newmark", "u_points")}
        self._J_B = self._J_M = self._W = self._W_newmark = 0.0
        self._f_prev = None  # the forces of the previous step (file order)
        self._max_FB = self._max_dF = 0.0

    # -- set up --------------------------------------------------------------------------
    def ExecuteBeforeSolutionLoop(self):
        part = self.mpm_part.GetSubModelPart(LOAD_PART)
        self.conditions = part.Conditions
        self.cond_list = list(part.Conditions)
        pi = self.mpm_part.ProcessInfo
        self.dim = int(self.loads.points.shape[1])  # 2 (meridian) or 3 (a 3-D model)
        x = gauss_values(self.conditions, MPM.MPC_COORD, pi, self.dim)
        self.order = match_conditions(self.loads.ids, self.loads.points, x, tol=self.match_tol)
        # model condition k gets file condition inv[k]
        self.inv = np.empty_like(self.order)
        self.inv[self.order] = np.arange(self.order.size)
        self.x0 = x
        self.t_prev = float(pi[K.TIME])
        self._f = np.zeros((len(self.cond_list), self.dim))
        log.info("matched %d point-load conditions one to one", self.order.size)

    # -- every step ----------------------------------------------------------------------
    def ExecuteInitializeSolutionStep(self):
        pi = self.mpm_part.ProcessInfo
        t1 = float(pi[K.TIME])
        t0 = self.t_prev
        f_file, fb = self.loads.step_average(t0, t1)  # file order
        f_model = f_file[self.inv]
        f3 = np.zeros((f_model.shape[0], 3))
        f3[:, :self.dim] = f_model
        for cond, f in zip(self.cond_list, f3.tolist()):  # the Kratos API sets one condition at a time
            cond.SetValuesOnIntegrationPoints(MPM.POINT_LOAD, [K.Array3(f)], pi)
        applied = gauss_values(self.conditions, MPM.POINT_LOAD, pi, self.dim)[self.order]  # back to file order
        fm = self.loads.normal_force(applied)
        dt = t1 - t0
        self._J_B += fb * dt
        self._J_M += fm * dt
        self._max_FB = max(self._max_FB, abs(fb))
        self._max_dF = max(self._max_dF, abs(fm - fb))
        e_F = self._max_dF / self._max_FB if self._max_FB > 0 else 0.0
        den = max(abs(self._J_B), self.J_scale)
        e_J = abs(self._J_M - self._J_B) / den if den > 0 else 0.0
        r = self.records
        r["time"].append(t1)
        r["dt"].append(dt)
        r["F_B"].append(fb)
        r["F_M"].append(fm)
        r["J_B"].append(self._J_B)
        r["J_M"].append(self._J_M)
        r["e_F"].append(e_F)
        r["e_J"].append(e_J)
        self._f = applied
        self.t_prev = t1
        if e_F > self.fail_above or e_J > self.fail_above:
            n = len(r["time"])
            raise MappingAbort(f"step {n} (t = {t1:.6g} s): mapping-only error above {self.fail_above:.0%}: "
                               f"e_F = {e_F:.4g}, e_J = {e_J:.4g}; run aborted", n, e_F, e_J)

    def ExecuteFinalizeSolutionStep(self):
        pi = self.mpm_part.ProcessInfo
        x = gauss_values(self.conditions, MPM.MPC_COORD, pi, self.dim)[self.order]
        u = x - self.x0[self.order]
        prev = self.records["u_points"][-1] if self.records["u_points"] else np.zeros_like(u)
        self._W += float(np.einsum("ij,ij->", self._f, u - prev))
        f_prev = np.zeros_like(self._f) if self._f_prev is None else self._f_prev
        self._W_newmark += newmark_work(f_prev, self._f, u - prev)
        self._f_prev = self._f
        self.records["work"].append(self._W)
        self.records["work_newmark"].append(self._W_newmark)
        self.records["u_points"].append(u)

    def arrays(self) -> Dict[str, np.ndarray]:
        return {k: np.asarray(v, dtype=np.float64) for k, v in self.records.items()}


def point_load_analysis(loads: MeridianLoads, *, fail_above: float, J_scale: float, match_tol: float):
    """The MPM analysis stage class whose only process is a :class:`PointLoadProcess` applying
    ``loads`` (kept as ``stage.load_process``); instantiate it with ``(model, parameters)``."""
    from KratosMultiphysics.MPMApplication.mpm_analysis import MpmAnalysis

    class PointLoadAnalysis(MpmAnalysis):
        def _CreateProcesses(self, parameter_name, initialization_order):
            if parameter_name == "processes":
                self.load_process = PointLoadProcess(self.model.GetModelPart("MPM_Material"), loads,
                                                     fail_above=fail_above, J_scale=J_scale, match_tol=match_tol)
                return [self.load_process]
            return []

    return PointLoadAnalysis
