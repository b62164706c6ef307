"""scipy.integrate references (Radau IIA 5, BDF 1-5, LSODA) behind the common contract.

The scipy solver object is stepped directly so accepted steps are counted; output times
are filled from each step's dense output. scipy does not report rejected attempts, so
``n_rejected`` stays 0 and ``n_steps`` counts accepted steps (``diagnostics['not_reported']``).
f evaluations (including scipy's own finite-difference Jacobian columns) are counted by
the common wrapper; ``njev``/``nlu`` come from the solver.
"""
from __future__ import annotations

import logging
import math
from typing import Any, Dict

import numpy as np

from models.integrators.base import per_state, IntegratorFailure, Integrator, _Counted
from models.integrators.registry import register

log = logging.getLogger(__name__)


class _ScipyIVP(Integrator):
    method = ""
    defaults: Dict[str, Any] = {
        "rtol": 1.0e-6,
        "atol": 1.0e-8,
        "atol_by_name": None,
        "first_step": None,
        "max_step": math.inf,
        "max_steps": 1000000,
    }
    not_reported = ("n_rejected",)

    def _solve_ode(self, prob: _Counted, t_eval: np.ndarray, t_out: list, y_out: list) -> None:
        from scipy.integrate import BDF, LSODA, Radau

        o = self.options
        atol = per_state(o["atol"], o["atol_by_name"], prob.names, prob.n, "atol_by_name")
        cls = {"Radau": Radau, "BDF": BDF, "LSODA": LSODA}[self.method]
        kw: Dict[str, Any] = {"rtol": float(o["rtol"]), "atol": atol, "max_step": float(o["max_step"])}
        if o["first_step"] is not None:
            kw["first_step"] = float(o["first_step"])
        if prob.has_jac:
            kw["jac"] = prob.jac
        t0, t1 = prob.t_span
        solver = cls(prob.rhs, t0, prob.y0.copy(), t1, **kw)
        stats = prob.stats
        tiny = 1e-12 * (t1 - t0)
        idx = 0
        while idx < len(t_eval) and t_eval[idx] <= t0 + tiny:
            t_out.append(float(t_eval[idx]))
            y_out.append(prob.y0.copy())
            idx += 1
        while idx < len(t_eval):
            if stats.n_steps >= int(o["max_steps"]):
                raise IntegratorFailure(f"max_steps={o['max_steps']} reached at t={solver.t:.6g}", "max_steps", solver.t)
            t_old = solver.t
            msg = solver.step()
            stats.n_steps += 1
            if solver.status == "failed":
                raise IntegratorFailure(f"scipy {self.method}: {msg}", "solver", t_old)
            stats.n_accepted += 1
            t_new = solver.t
            if t_eval[idx] <= t_new + tiny:
                dense = solver.dense_output()
                while idx < len(t_eval) and t_eval[idx] <= t_new + tiny:
                    tk = float(t_eval[idx])
                    t_out.append(tk)
                    y_out.append(np.array(solver.y if abs(tk - t_new) <= tiny else dense(tk), dtype=np.float64))
                    idx += 1
            if solver.status == "finished" and idx < len(t_eval):
                raise IntegratorFailure("scipy solver finished before the last output time", "protocol", t_new)
        stats.nlu = int(getattr(solver, "nlu", 0))
        stats.njev = max(stats.njev, int(getattr(solver, "njev", 0)))


@register("scipy_radau")
class ScipyRadau(_ScipyIVP):
    """scipy.integrate Radau IIA (order 5, implicit Runge-Kutta) stepped through the contract.

    Options (``ScipyRadau.defaults``): rtol, atol (atol_by_name per state), first_step, max_step [s],
    max_steps. ``get("scipy_radau")(rtol=1e-8).solve(problem, t_eval)``.
    """

    name, method = "scipy_radau", "Radau"


@register("scipy_bdf")
class ScipyBDF(_ScipyIVP):
    """scipy.integrate BDF (NDF orders 1-5) stepped through the contract; options as ScipyRadau."""

    name, method = "scipy_bdf", "BDF"


@register("scipy_lsoda")
class ScipyLSODA(_ScipyIVP):
    """LSODA (switching Adams/BDF); ODEPACK counts nlu = njev."""

    name, method = "scipy_lsoda", "LSODA"
