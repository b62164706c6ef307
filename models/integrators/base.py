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
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

log = logging.getLogger(__name__)

Array = np.ndarray


@dataclass
class InPlaceField:
    """Compiled in-place callables of an ODE field that a solver may call directly.

    rhs  : (t [s], y (n,), out (n,), data) -> None, fills ``out`` with f(t, y)
    jac  : optional (t, y (n,), fy (n,), out (n, n), data) -> None, fills ``out`` with df/dy
           (``fy`` = f(t, y), unused by most fields)
    data : one object (e.g. a tuple of arrays) passed unchanged as the last argument; the
           field may read mutable state from it (its contents, not its identity, may change
           between solves)

    They must compute the same numbers as the problem's ``rhs`` and ``jac`` (which stay the
    reference and what every other solver calls). CVODE hands them to SUNDIALS without a
    Python wrapper in between (numba dispatchers qualify), so their calls are neither
    counted one by one nor timed (the solver's own counters are used) and a non-finite value is
    diagnosed through ``rhs`` only when the solver fails.
    """

    rhs: Callable[..., Any]
    jac: Optional[Callable[..., Any]] = None
    data: Any = None

    def python_callables(self, n: int) -> Tuple[Callable[[float, Array], Array], Optional[Callable[[float, Array], Array]]]:
        """``(rhs(t, y) -> (n,), jac(t, y) -> (n, n) or None)`` calling the in-place forms: the
        Python-level field of the same numbers for solvers that need one (scipy)."""
        f, j, data = self.rhs, self.jac, self.data

        def rhs(t: float, y: Array) -> Array:
            out = np.empty(n)
            f(t, y, out, data)
            return out

        if j is None:
            return rhs, None

        def jac(t: float, y: Array) -> Array:
            out = np.zeros((n, n))
            j(t, y, None, out, data)
            return out

        return rhs, jac


class IntegratorFailure(RuntimeError):
    """A fatal failure (field, Jacobian, LU, protocol, limits); ``reason`` is a short text.

    ``kind`` is one of ``field``, ``jacobian``, ``lu``, ``protocol``, ``newton``,
    ``step_size``, ``max_steps``, ``solver``.
    """

    def __init__(self, reason: str, kind: str = "solver", t: Optional[float] = None):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.t = t


@dataclass
class ODEProblem:
    """``y' = rhs(t, y)`` on ``t_span`` from ``y0``.

    rhs   : (t [s], y (n,)) -> y' (n,)
    jac   : optional (t, y) -> (n, n) dense Jacobian dy'/dy
    f_t   : optional (t, y) -> (n,) partial derivative of rhs in t at fixed y
    names : optional state names (used for per-state tolerances)
    autonomous : True if rhs does not depend on t (f_t = 0 is then used without evaluating it)
    jac_band : optional (lower, upper) bandwidths of the Jacobian when it is banded
        (J_ij = 0 for i - j > lower or j - i > upper): ROS2 and CVODE then factorise banded
    inplace : optional :class:`InPlaceField`, compiled in-place forms of rhs and jac that
        CVODE calls directly (the same numbers, without Python wrappers per call)

    >>> p = ODEProblem(lambda t, y: -y, [1.0, 2.0], (0.0, 1.0), names=["a", "b"])
    >>> p.n, p.t_span
    (2, (0.0, 1.0))
    """

    rhs: Callable[[float, Array], Array]
    y0: Array
    t_span: Tuple[float, float]
    jac: Optional[Callable[[float, Array], Array]] = None
    f_t: Optional[Callable[[float, Array], Array]] = None
    names: Optional[Sequence[str]] = None
    autonomous: bool = False
    jac_band: Optional[Tuple[int, int]] = None
    inplace: Optional[InPlaceField] = None

    def __post_init__(self) -> None:
        self.y0 = np.array(self.y0, dtype=np.float64).reshape(-1)
        if self.inplace is not None and (self.inplace.jac is None) != (self.jac is None):
            raise ValueError("inplace: needs a jac exactly when the problem has one")
        if self.jac_band is not None:
            lo, up = (int(b) for b in self.jac_band)
            if lo < 0 or up < 0:
                raise ValueError(f"jac_band: bandwidths must be >= 0, got {self.jac_band!r}")
            self.jac_band = (lo, up)
        t0, t1 = (float(v) for v in self.t_span)
        if not np.isfinite([t0, t1]).all() or t1 <= t0:
            raise ValueError(f"t_span: must be finite with t_end > t_start, got {self.t_span!r}")
        self.t_span = (t0, t1)
        if self.names is not None:
            self.names = [str(s) for s in self.names]
            if len(self.names) != self.y0.size:
                raise ValueError(f"names: need {self.y0.size} names (one per state), got {len(self.names)}")

    @property
    def n(self) -> int:
        return int(self.y0.size)


@dataclass
class ResidualProblem:
    """Residual form ``R(t, y, z) = 0`` with ``z[deriv_index] = y'`` (semi-explicit, index 1).

    residual : (t, y (n,), z (m,)) -> (m,)
    y0, z0   : initial states and an initial guess of z (m >= n)
    deriv_index : positions in z of y'_0..y'_{n-1} (default: the first n entries)
    jac_z, jac_y, jac_t : optional analytic dR/dz (m, m), dR/dy (m, n), dR/dt (m,);
        missing ones are approximated by central differences on R (sensitivity provider)
    jac      : optional analytic Jacobian of the *reduced* field (n, n)
    f_t      : optional analytic df/dt of the reduced field (n,)
    newton_tol : max-norm tolerance of the scaled Newton update / residual
    max_newton_iter : Newton iteration limit per residual solve
    typical_y, typical_z : typical magnitudes (n,), (m,) of y and z (their units) for the
        finite-difference partials: increment sqrt(eps) * max(|x_j|, typical_j); default 1
        for every entry (give them when the unknowns are far from unit size)

    >>> import numpy as np
    >>> # y' = -w, 0 = w - y (w algebraic); z = (y', w)
    >>> p = ResidualProblem(lambda t, y, z: np.array([z[0] + z[1], z[1] - y[0]]), [1.0], [-1.0, 1.0], (0.0, 1.0))
    >>> p.n, p.m
    (1, 2)
    """

    residual: Callable[[float, Array, Array], Array]
    y0: Array
    z0: Array
    t_span: Tuple[float, float]
    deriv_index: Optional[Sequence[int]] = None
    jac_z: Optional[Callable[[float, Array, Array], Array]] = None
    jac_y: Optional[Callable[[float, Array, Array], Array]] = None
    jac_t: Optional[Callable[[float, Array, Array], Array]] = None
    jac: Optional[Callable[[float, Array], Array]] = None
    f_t: Optional[Callable[[float, Array], Array]] = None
    names: Optional[Sequence[str]] = None
    z_names: Optional[Sequence[str]] = None
    newton_tol: float = 1.0e-12
    max_newton_iter: int = 20
    typical_y: Optional[Sequence[float]] = None
    typical_z: Optional[Sequence[float]] = None

    def __post_init__(self) -> None:
        self.y0 = np.array(self.y0, dtype=np.float64).reshape(-1)
        self.z0 = np.array(self.z0, dtype=np.float64).reshape(-1)
        n, m = self.y0.size, self.z0.size
        for name, size in (("typical_y", n), ("typical_z", m)):
            v = getattr(self, name)
            if v is not None:
                arr = np.array(v, dtype=np.float64).reshape(-1)
                if arr.shape != (size,) or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
                    raise ValueError(f"{name}: need {size} finite typical magnitudes > 0, got {v!r}")
                setattr(self, name, arr)
        if m < n:
            raise ValueError(f"z0: needs at least len(y0)={n} entries (the derivatives), got {m}")
        idx = np.arange(n) if self.deriv_index is None else np.asarray(self.deriv_index, dtype=int)
        if idx.shape != (n,) or len(set(idx.tolist())) != n or idx.min() < 0 or idx.max() >= m:
            raise ValueError(f"deriv_index: need {n} distinct indices in [0, {m}), got {self.deriv_index!r}")
        self.deriv_index = idx
        t0, t1 = (float(v) for v in self.t_span)
        if not np.isfinite([t0, t1]).all() or t1 <= t0:
            raise ValueError(f"t_span: must be finite with t_end > t_start, got {self.t_span!r}")
        self.t_span = (t0, t1)
        if self.newton_tol <= 0 or self.max_newton_iter < 1:
            raise ValueError("newton_tol must be > 0 and max_newton_iter >= 1")

    @property
    def n(self) -> int:
        return int(self.y0.size)

    @property
    def m(self) -> int:
        return int(self.z0.size)


Problem = Union[ODEProblem, ResidualProblem]


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
        from models.integrators.residual import ReducedField  # local: avoids an import cycle

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
    from models.integrators.jacobians import FiniteDifferenceJacobian

    fd = FiniteDifferenceJacobian(ode.rhs, ode.n, **(fd_options or {}))
    new = ODEProblem(ode.rhs, ode.y0, ode.t_span, jac=fd.jac, f_t=ode.f_t, names=ode.names,
                     autonomous=ode.autonomous, jac_band=ode.jac_band)
    new._fd_provider = fd  # type: ignore[attr-defined]
    return new
