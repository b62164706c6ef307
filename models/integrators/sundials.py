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

A problem with compiled in-place callables (``ODEProblem.inplace``, e.g. numba functions) has
them handed to SUNDIALS as they are, with their data as scikit-sundae's user data: no Python
wrapper per call (the counted ``rhs`` costs ~3 us a call), field and Jacobian calls counted by
CVODE itself, and one CVODE object re-initialised for every solve with the same field, data
object and settings (the vessel solves in windows: its set-up, ~110 us, is paid once). An
exception raised in the field comes back as the field's failure.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Optional

import numpy as np

from models.integrators.base import InPlaceField, IntegratorFailure, Integrator, _Counted, _finite, per_state
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

    def __getstate__(self) -> Dict[str, Any]:  # the reused CVODE object is not copied or pickled
        state = dict(self.__dict__)
        state.pop("_cvode_cache", None)
        return state

    def _solve_ode(self, prob: _Counted, t_eval: np.ndarray, t_out: list, y_out: list) -> None:
        o = self.options
        atol = per_state(o["atol"], o["atol_by_name"], prob.names, prob.n, "atol_by_name")
        failure: list = []
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
        mode = str(o["output_mode"])
        if mode not in ("stop", "interpolate"):
            raise ValueError(f"output_mode: must be 'stop' or 'interpolate', got {mode!r}")
        fast = prob.inplace
        if fast is not None:  # compiled in-place callables straight to SUNDIALS; one solver reused
            solver = self._reused_solver(fast, prob.n, kw)
        else:
            solver = self._wrapped_solver(prob, kw, failure)
        self.not_reported = type(self).not_reported + (("t_rhs", "t_jac") if fast is not None else ())
        t0, t1 = prob.t_span
        tiny = 1e-12 * (t1 - t0)
        stats = prob.stats
        res = solver.init_step(t0, prob.y0.copy())
        if not res.success:
            raise IntegratorFailure(f"CVODE init: {res.message}", "solver", t0)
        t_cur = t0
        y_cur = prob.y0

        def check(res) -> None:
            if failure:
                raise failure[0]
            if not res.success:
                if fast is not None:
                    diagnose(float(np.ravel(res.t)[-1]), res.y)
                raise IntegratorFailure(f"CVODE: {res.message}", "solver", t_cur)

        def advance(target: float, method: str, tstop):
            if fast is None:
                return solver.step(target, method=method, tstop=tstop)
            try:  # an exception raised by the in-place field comes back through SUNDIALS
                return solver.step(target, method=method, tstop=tstop)
            except Exception as exc:
                raise IntegratorFailure(f"field evaluation raised {type(exc).__name__}: {exc}", "field",
                                        t_cur) from exc

        def diagnose(t: float, y: np.ndarray) -> None:
            """Raise the field's own failure when the in-place field is what went wrong."""
            if not _finite(np.asarray(y)):
                raise IntegratorFailure(f"CVODE: non-finite state at t={t:.6g}", "field", t)
            prob.rhs(t, np.array(y))

        max_steps = int(o["max_num_steps"])
        if mode == "interpolate":
            self.not_reported = self.not_reported + ("n_steps", "n_accepted")
            step, start = solver.step, t0 + tiny
            try:  # one try for all outputs (an exception of an in-place field comes back through SUNDIALS)
                for target in t_eval.tolist():
                    if target > start:
                        res = step(target, "normal", None)
                        if failure or not res.success:
                            check(res)
                        t_cur, y_cur = target, res.y
                        y_out.append(res.y)  # a fresh float64 copy of CVODE's vector
                    else:
                        y_out.append(prob.y0.copy())
                    t_out.append(target)
            except IntegratorFailure:
                raise
            except Exception as exc:
                if fast is None:
                    raise
                raise IntegratorFailure(f"field evaluation raised {type(exc).__name__}: {exc}", "field",
                                        t_cur) from exc
            self._add_counts(stats, res, fast, prob)
            return
        for target in t_eval:
            n_interval = 0
            while target - t_cur > tiny:
                if n_interval >= max_steps:
                    if fast is not None:
                        diagnose(t_cur, y_cur)
                    raise IntegratorFailure(f"CVODE: max_num_steps={max_steps} reached before t={target:.6g}", "solver", t_cur)
                n_interval += 1
                res = advance(float(target), "onestep", float(target))
                check(res)
                stats.n_steps += 1
                stats.n_accepted += 1
                t_cur, y_cur = float(np.ravel(res.t)[-1]), res.y
            t_out.append(float(target))
            y_out.append(np.array(res.y, dtype=np.float64).reshape(-1) if target > t0 + tiny else prob.y0.copy())
        self._add_counts(stats, res, fast, prob)

    @staticmethod
    def _add_counts(stats, res, fast: Optional[InPlaceField], prob: _Counted) -> None:
        """CVODE's own counters (since its last (re)initialisation) into ``stats``."""
        if fast is not None:  # nothing was counted per call
            stats.nfev += int(res.nfev)
            stats.njev += int(res.njev)
            if fast.jac is None:  # CVODE's difference Jacobians: one field call per column (group)
                band = prob.jac_band
                cols = prob.n if band is None else min(prob.n, sum(band) + 1)
                stats.nfev += cols * int(res.njev)
        else:
            stats.njev = max(stats.njev, int(res.njev))

    def _wrapped_solver(self, prob: _Counted, kw: Dict[str, Any], failure: list):
        """A new CVODE object whose callbacks go through the counted Python rhs and jac."""
        from sksundae.cvode import CVODE

        def rhsfn(t, y, yp):
            try:
                yp[:] = prob.rhs(t, np.array(y))
            except IntegratorFailure as exc:  # keep the reason; make CVODE stop
                failure.append(exc)
                yp[:] = np.nan

        if prob.has_jac:

            def jacfn(t, y, yp, JJ):
                try:
                    JJ[:, :] = prob.jac(t, np.array(y))
                except IntegratorFailure as exc:
                    failure.append(exc)
                    JJ[:, :] = np.nan

            kw = {**kw, "jacfn": jacfn}
        return CVODE(rhsfn, **kw)

    def _reused_solver(self, fast: InPlaceField, n: int, kw: Dict[str, Any]):
        """The CVODE object of the last solve when it had the same in-place field, data object,
        size and settings (re-initialised by ``init_step``), else a new one. A solver run in
        windows (the vessel) then pays CVODE's set-up once instead of once per window."""
        from sksundae.cvode import CVODE

        key = (id(fast.rhs), id(fast.jac), id(fast.data), n,
               tuple((k, tuple(np.ravel(v).tolist()) if isinstance(v, np.ndarray) else v) for k, v in sorted(kw.items())))
        cached = getattr(self, "_cvode_cache", None)
        if cached is not None and cached[0] == key:
            return cached[2]
        opts = dict(kw, userdata=fast.data)
        if fast.jac is not None:
            opts["jacfn"] = fast.jac
        solver = CVODE(fast.rhs, **opts)
        self._cvode_cache = (key, fast, solver)  # holds fast: the ids stay valid while cached
        return solver
