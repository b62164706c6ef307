"""The problems every integrator solves and the failure it raises (the data of :mod:`models.integrators.base`).

* :class:`ODEProblem` -- explicit field ``y' = f(t, y)``; :class:`ResidualProblem` -- residual form
  ``R(t, y, z) = 0``; :class:`InPlaceField` -- compiled in-place callables of an ODE field;
  :class:`IntegratorFailure` -- a fatal failure inside a method.

Kept apart from the integrator contract so that the residual reduction and the Jacobians, which
the contract uses, can use them without an import circle.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

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
