"""The one contract of every time integrator (in the spirit of ``scipy.integrate._ivp``).

Problems
--------
* :class:`ODEProblem` -- explicit field ``y' = f(t, y)`` with optional dense Jacobian
  ``J_ij = df_i/dy_j`` and partial time derivative ``f_t = df/dt`` at fixed ``y``.
* :class:`ResidualProblem` -- residual form ``R(t, y, z) = 0`` where ``z`` holds the
  derivatives of ``y`` (entries ``z[deriv_index]``) and the algebraic variables. A
  Newton solve for ``z`` at imposed ``(t, y)`` gives the *reduced field* ``f(t, y)``
  (see :mod:`models.integrators.residual`). Index > 1 is not supported.

Integrators
-----------
``Integrator(**options).solve(problem, t_eval) -> Solution``. ``t_eval`` are the output
times (s); the first must be ``t_span[0]``-or-later and all inside ``t_span``. Every
solution carries :class:`Stats`. A failure of the field, the Jacobian, the LU or the
protocol raises :class:`IntegratorFailure` inside the method; ``solve`` turns it into
``Solution(success=False, failure_reason=...)`` with the trajectory computed so far,
so a solver failure is a result, never a crash.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from models.integrators.jacobians import FiniteDifferenceJacobian
from models.integrators.problem_types import (  # noqa: F401  (names of this module: every integrator imports them here)
    InPlaceField, IntegratorFailure, ODEProblem, Problem, ResidualProblem,
)
from models.integrators.residual import ReducedField

log = logging.getLogger(__name__)

Array = np.ndarray


@dataclass
class Stats:
    """Counters of one solve.

    n_steps   : steps attempted (accepted + rejected)
    nfev      : evaluations of the (reduced) field f
    njev      : Jacobian evaluations of the (reduced) field
    nlu       : LU factorisations of the iteration matrix
    n_residual_solves : Newton solves of R(t, y, z) = 0 (residual-form problems)
    n_newton_iter     : Newton iterations over all residual solves
    t_rhs, t_jac      : wall time (s) spent in f (incl. f_t) and in the Jacobian
    t_total           : wall time (s) of the whole solve
    """

    n_steps: int = 0
    n_accepted: int = 0
    n_rejected: int = 0
    nfev: int = 0
    njev: int = 0
    nlu: int = 0
    n_residual_solves: int = 0
    n_newton_iter: int = 0
    t_rhs: float = 0.0
    t_jac: float = 0.0
    t_total: float = 0.0

    def as_dict(self) -> Dict[str, float]:
        return asdict(self)


@dataclass
class Solution:
    """Trajectory at the output times.

    t : (k,) output times (s) actually reached
    y : (k, n) states at t
    z : (k, m) residual unknowns at t (residual-form problems), else None
    diagnostics : small facts (Jacobian consistency, Newton conditioning, ...)
    """

    t: Array
    y: Array
    z: Optional[Array] = None
    stats: Stats = field(default_factory=Stats)
    success: bool = True
    failure_reason: Optional[str] = None
    diagnostics: Dict[str, Any] = field(default_factory=dict)


class Integrator:
    """Base class: ``Integrator(**options).solve(problem, t_eval) -> Solution``.

    Subclasses implement :meth:`_solve_ode` for an :class:`ODEProblem` with counted
    callables; residual-form problems are reduced by :class:`ReducedField` first
    (option ``jacobian``: ``analytic`` | ``fd`` | ``sensitivity``; ``fd_options``).
    """

    name = "base"
    #: True if the method needs J = df/dy (finite differences are supplied when missing)
    needs_jacobian = False
    #: Stats fields the wrapped solver does not report (recorded as NaN by the harness)
    not_reported: Tuple[str, ...] = ()
    #: options accepted by the subclass (name -> default); unknown options are rejected
    defaults: Dict[str, Any] = {}

    def __init__(self, **options: Any) -> None:
        common = {"jacobian": "auto", "fd_options": None}
        known = {**common, **self.defaults}
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ValueError(f"{type(self).__name__}: unknown option(s) {unknown}; known: {sorted(known)}")
        self.options: Dict[str, Any] = {**known, **options}

    # -- public -------------------------------------------------------------------------
    def solve(self, problem: Problem, t_eval: Optional[Sequence[float]] = None) -> Solution:
        """Integrate ``problem`` and return the trajectory at ``t_eval`` (default: both ends)."""
        reduced = None
        if isinstance(problem, ResidualProblem):
            reduced = ReducedField(problem, jacobian=self.options["jacobian"], fd_options=self.options["fd_options"])
            try:
                ode = reduced.to_ode()  # solves z at t0: a model that fails here is a failed result
            except IntegratorFailure as exc:
                log.warning("%s: residual model failed at t0: %s", self.name, exc.reason)
                return Solution(t=np.zeros(0), y=np.zeros((0, problem.n)), stats=Stats(n_residual_solves=reduced.n_solves,
                                n_newton_iter=reduced.n_newton_iter), success=False,
                                failure_reason=f"{exc.kind}: {exc.reason}", diagnostics=reduced.diagnostics())
        elif isinstance(problem, ODEProblem):
            ode = problem
            choice = self.options["jacobian"]
            if choice not in ("auto", "analytic", "fd"):
                raise ValueError(f"jacobian: must be auto|analytic|fd for an ODEProblem, got {choice!r}")
            if choice == "analytic" and ode.jac is None:
                raise ValueError("jacobian: 'analytic' requested but the problem has no jac")
            if choice == "fd" or (choice == "auto" and ode.jac is None and self.needs_jacobian):
                ode = _with_fd_jacobian(ode, self.options["fd_options"])
        else:
            raise TypeError(f"problem: expected ODEProblem or ResidualProblem, got {type(problem).__name__}")
        t_out = _check_t_eval(t_eval, ode.t_span)
        stats = Stats()
        counted = _Counted(ode, stats)
        start = time.perf_counter()
        t_got: list = []
        y_got: list = []
        success, reason = True, None
        try:
            self._solve_ode(counted, t_out, t_got, y_got)
        except IntegratorFailure as exc:
            success, reason = False, f"{exc.kind}: {exc.reason}"
            log.warning("%s failed: %s", self.name, reason)
        stats.t_total = time.perf_counter() - start
        t_arr = np.asarray(t_got, dtype=np.float64)
        y_arr = np.asarray(y_got, dtype=np.float64).reshape(len(t_got), ode.n)
        sol = Solution(t=t_arr, y=y_arr, stats=stats, success=success, failure_reason=reason)
        if success and len(t_got) != len(t_out):
            sol.success, sol.failure_reason = False, "protocol: not every output time was reached"
        if reduced is not None:
            stats.n_residual_solves = reduced.n_solves
            stats.n_newton_iter = reduced.n_newton_iter
            sol.diagnostics.update(reduced.diagnostics())
            if len(t_arr):
                try:
                    sol.z = np.vstack([reduced.solve_z(ti, yi) for ti, yi in zip(t_arr, y_arr)])
                except IntegratorFailure as exc:
                    sol.success, sol.failure_reason = False, f"{exc.kind}: {exc.reason}"
        if self.not_reported:
            sol.diagnostics["not_reported"] = list(self.not_reported)
        fd = getattr(ode, "_fd_provider", None)
        if fd is not None:
            sol.diagnostics.update(fd.diagnostics())
        return sol

    # -- to implement --------------------------------------------------------------------
    def _solve_ode(self, prob: "_Counted", t_eval: Array, t_out: list, y_out: list) -> None:
        """Integrate, appending (t, y) at every output time to ``t_out``/``y_out``.

        Raise :class:`IntegratorFailure` on a fatal failure (output so far is kept).
        """
        raise NotImplementedError


def per_state(value: float, by_name: Optional[Mapping[str, float]], names: Optional[Sequence[str]], n: int,
              key: str) -> np.ndarray:
    """A tolerance per state: ``value`` everywhere, replaced by name from ``by_name``.

    Raises ValueError naming ``key`` and the state for a name the problem does not have.
    """
    out = np.full(n, float(value))
    by_name = by_name or {}
    if by_name and names is None:
        raise ValueError(f"{key}: the problem has no state names")
    for name, val in by_name.items():
        if name not in names:
            raise ValueError(f"{key}: unknown state {name!r}; states: {', '.join(names)}")
        out[list(names).index(name)] = float(val)
    return out


class _Counted:
    """An ODEProblem whose calls are counted and timed into ``stats``; errors become failures."""

    def __init__(self, ode: ODEProblem, stats: Stats):
        self.ode, self.stats = ode, stats
        self.y0, self.t_span, self.names, self.n = ode.y0, ode.t_span, ode.names, ode.n
        self.has_jac = ode.jac is not None
        self.has_f_t = ode.f_t is not None
        self.autonomous = bool(ode.autonomous)
        self.jac_band = getattr(ode, "jac_band", None)
        self.inplace = getattr(ode, "inplace", None)

    def rhs(self, t: float, y: Array) -> Array:
        start = time.perf_counter()
        self.stats.nfev += 1
        try:
            out = self.ode.rhs(t, y)
            if type(out) is not np.ndarray or out.dtype != np.float64 or out.ndim != 1:
                out = np.asarray(out, dtype=np.float64).reshape(-1)
        except IntegratorFailure:
            raise
        except Exception as exc:  # the field itself failed: fatal
            raise IntegratorFailure(f"field evaluation raised {type(exc).__name__}: {exc}", "field", t) from exc
        finally:
            self.stats.t_rhs += time.perf_counter() - start
        if out.shape != (self.n,) or not _finite(out):
            raise IntegratorFailure(f"field returned a non-finite value or shape {out.shape} at t={t:.6g}", "field", t)
        return out

    def f_t(self, t: float, y: Array) -> Array:
        if self.ode.f_t is None:
            return np.zeros(self.n)
        start = time.perf_counter()
        try:
            out = np.asarray(self.ode.f_t(t, y), dtype=np.float64).reshape(-1)
        except IntegratorFailure:
            raise
        except Exception as exc:
            raise IntegratorFailure(f"f_t evaluation raised {type(exc).__name__}: {exc}", "field", t) from exc
        finally:
            self.stats.t_rhs += time.perf_counter() - start
        if out.shape != (self.n,) or not _finite(out):
            raise IntegratorFailure(f"f_t returned a non-finite value at t={t:.6g}", "field", t)
        return out

    def jac(self, t: float, y: Array) -> Array:
        if self.ode.jac is None:
            raise IntegratorFailure("no Jacobian provider", "jacobian", t)
        start = time.perf_counter()
        self.stats.njev += 1
        try:
            out = self.ode.jac(t, y)
            if type(out) is not np.ndarray or out.dtype != np.float64:
                out = np.asarray(out, dtype=np.float64)
        except IntegratorFailure:
            raise
        except Exception as exc:
            raise IntegratorFailure(f"Jacobian evaluation raised {type(exc).__name__}: {exc}", "jacobian", t) from exc
        finally:
            self.stats.t_jac += time.perf_counter() - start
        if out.shape != (self.n, self.n) or not _finite(out):
            raise IntegratorFailure(f"Jacobian non-finite or shape {out.shape} at t={t:.6g}", "jacobian", t)
        return out


def _finite(a: Array) -> bool:
    """True if every entry of ``a`` is finite (one sum; an overflowing sum counts as non-finite).

    Small arrays are summed as Python floats: cheaper than a numpy reduction below ~100 entries.
    """
    if a.size <= 100:
        return math.isfinite(sum(a.ravel().tolist()))
    return math.isfinite(float(np.add.reduce(a, axis=None)))


def _check_t_eval(t_eval: Optional[Sequence[float]], t_span: Tuple[float, float]) -> Array:
    t0, t1 = t_span
    if t_eval is None:
        return np.array([t0, t1])
    t = np.asarray(t_eval, dtype=np.float64).reshape(-1)
    if t.size == 0 or not np.all(np.isfinite(t)):
        raise ValueError("t_eval: must be a non-empty array of finite times")
    if np.any(np.diff(t) <= 0):
        raise ValueError("t_eval: must be strictly increasing")
    span = t1 - t0
    if t[0] < t0 - 1e-12 * span or t[-1] > t1 + 1e-12 * span:
        raise ValueError(f"t_eval: must lie inside t_span {t_span}, got [{t[0]}, {t[-1]}]")
    return np.clip(t, t0, t1)


def _with_fd_jacobian(ode: ODEProblem, fd_options: Optional[Dict[str, Any]]) -> ODEProblem:
    """A copy of ``ode`` whose Jacobian comes from central differences of rhs (f_t kept)."""
    fd = FiniteDifferenceJacobian(ode.rhs, ode.n, **(fd_options or {}))
    new = ODEProblem(ode.rhs, ode.y0, ode.t_span, jac=fd.jac, f_t=ode.f_t, names=ode.names,
                     autonomous=ode.autonomous, jac_band=ode.jac_band)
    new._fd_provider = fd  # type: ignore[attr-defined]
    return new
