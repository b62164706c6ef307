"""SUNDIALS CVODE (BDF, dense direct linear solver; banded when the problem declares
``jac_band``) through scikit-sundae.

Settings (defaults in ``CVODEBDF.defaults``, the single source the config group
``conf/integrator/cvode_bdf.yaml`` reads through its schema): ``rtol``, ``atol`` (global, ``atol_by_name`` per state), ``max_num_steps`` (per
output interval, as in CVODE; counted here because the solver is stepped one step at a time), ``max_step`` (0 = unbounded), ``first_step`` (0 = CVODE's
estimate), ``max_order`` (1..5), ``output_mode``:

- ``"stop"`` (default): advanced one internal step at a time with ``tstop`` on each output
  time, so accepted steps are counted and outputs are hit exactly;
- ``"interpolate"``: CVODE's CV_NORMAL mode, as in the vessel seed: CVODE steps freely past
  each output time and interpolates the output; far fewer steps when outputs are dense, but
  accepted steps are not counted (``n_steps``/``n_accepted`` are then not reported).
scikit-sundae does not expose rejected attempts or LU counts (``diagnostics['not_reported']``).
"""
from __future__ import annotations

import logging
from typing import Any, Dict

import numpy as np

from models.integrators.base import per_state, IntegratorFailure, Integrator, _Counted
from models.integrators.registry import register

log = logging.getLogger(__name__)


@register("cvode_bdf")
class CVODEBDF(Integrator):
    """SUNDIALS CVODE BDF with a dense linear solver (see the module docstring for the options).

    >>> import numpy as np
    >>> from models.integrators import ODEProblem, get
    >>> sol = get("cvode_bdf")(rtol=1e-9, atol=1e-12).solve(
    ...     ODEProblem(lambda t, y: -y, [1.0], (0.0, 1.0)), np.array([0.0, 1.0]))
    >>> abs(float(sol.y[-1, 0]) - float(np.exp(-1.0))) < 1e-7
    True
    """

    name = "cvode_bdf"
    defaults: Dict[str, Any] = {
        "rtol": 1.0e-6,
        "atol": 1.0e-8,
        "atol_by_name": None,
        "max_num_steps": 100000,  # per output interval (CVODE's own default of 500 stops real problems)
        "max_step": 0.0,
        "first_step": 0.0,
        "max_order": 5,
        "output_mode": "stop",
    }
    not_reported = ("n_rejected", "nlu")

    def _solve_ode(self, prob: _Counted, t_eval: np.ndarray, t_out: list, y_out: list) -> None:
        from sksundae.cvode import CVODE

        o = self.options
        atol = per_state(o["atol"], o["atol_by_name"], prob.names, prob.n, "atol_by_name")
        failure: list = []

        def rhsfn(t, y, yp):
            try:
                yp[:] = prob.rhs(t, np.array(y))
            except IntegratorFailure as exc:  # keep the reason; make CVODE stop
                failure.append(exc)
                yp[:] = np.nan

        kw: Dict[str, Any] = dict(
            method="BDF",
            linsolver="dense",
            rtol=float(o["rtol"]),
            atol=atol,
            max_num_steps=int(o["max_num_steps"]),
            max_step=float(o["max_step"]),
            first_step=float(o["first_step"]),
            max_order=int(o["max_order"]),
        )
        if prob.jac_band is not None and sum(prob.jac_band) + 1 < prob.n:  # banded LU (SUNDIALS band solver)
            kw.update(linsolver="band", lband=int(prob.jac_band[0]), uband=int(prob.jac_band[1]))
        if prob.has_jac:

            def jacfn(t, y, yp, JJ):
                try:
                    JJ[:, :] = prob.jac(t, np.array(y))
                except IntegratorFailure as exc:
                    failure.append(exc)
                    JJ[:, :] = np.nan

            kw["jacfn"] = jacfn
        mode = str(o["output_mode"])
        if mode not in ("stop", "interpolate"):
            raise ValueError(f"output_mode: must be 'stop' or 'interpolate', got {mode!r}")
        solver = CVODE(rhsfn, **kw)
        t0, t1 = prob.t_span
        tiny = 1e-12 * (t1 - t0)
        stats = prob.stats
        res = solver.init_step(t0, prob.y0.copy())
        if not res.success:
            raise IntegratorFailure(f"CVODE init: {res.message}", "solver", t0)
        t_cur = t0
        max_steps = int(o["max_num_steps"])
        if mode == "interpolate":
            self.not_reported = type(self).not_reported + ("n_steps", "n_accepted")
            for target in t_eval:
                if target > t0 + tiny:
                    res = solver.step(float(target), method="normal")
                    if failure:
                        raise failure[0]
                    if not res.success:
                        raise IntegratorFailure(f"CVODE: {res.message}", "solver", t_cur)
                    t_cur = float(target)
                    y_out.append(np.array(res.y, dtype=np.float64).reshape(-1))
                else:
                    y_out.append(prob.y0.copy())
                t_out.append(float(target))
            stats.njev = max(stats.njev, int(res.njev)) if target > t0 + tiny else stats.njev
            return
        for target in t_eval:
            n_interval = 0
            while target - t_cur > tiny:
                if n_interval >= max_steps:
                    raise IntegratorFailure(f"CVODE: max_num_steps={max_steps} reached before t={target:.6g}", "solver", t_cur)
                n_interval += 1
                res = solver.step(float(target), method="onestep", tstop=float(target))
                if failure:
                    raise failure[0]
                if not res.success:
                    raise IntegratorFailure(f"CVODE: {res.message}", "solver", t_cur)
                stats.n_steps += 1
                stats.n_accepted += 1
                t_cur = float(np.ravel(res.t)[-1])
            t_out.append(float(target))
            y_out.append(np.array(res.y, dtype=np.float64).reshape(-1) if target > t0 + tiny else prob.y0.copy())
        stats.njev = max(stats.njev, int(res.njev))
