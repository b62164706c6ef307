"""Jacobian providers of the reduced field: ``J_ij = df_i/dy_j`` and ``f_t = df/dt`` at fixed y.

* :class:`FiniteDifferenceJacobian` -- central differences of a black-box field
  ``f(t, y)``; for a residual-form model every call of ``f`` re-solves all of ``z``.
  State scales, a time scale and the relative step ``delta`` are configurable. The
  optional consistency control compares the approximation of two successive
  perturbations (``delta`` and ``delta / 2``) in dimensionless units
  (``J_ij * s_j / s_i``) and refines a bounded number of times. The result is a
  diagnostic, never a guarantee of accuracy.
* :class:`SensitivityJacobian` -- for ``R(t, y, z) = 0``: factor ``R_z`` once at the
  converged point and solve ``R_z z_y = -R_y`` and ``R_z z_t = -R_t``; the rows of
  ``z_y`` / ``z_t`` at the derivative positions are ``J`` / ``f_t``.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np
from scipy.linalg import get_lapack_funcs

from models.integrators.problem_types import IntegratorFailure

log = logging.getLogger(__name__)

Array = np.ndarray


_GETRF, _GETRS = get_lapack_funcs(("getrf", "getrs"), (np.zeros((1, 1)),))


def lu_factor_checked(A: Array, what: str, t: float, names: Optional[Sequence[str]] = None) -> tuple:
    """LAPACK getrf of a dense float64 matrix; IntegratorFailure(kind='newton'/'jacobian') if singular.

    Returns (lu, piv). A pivot below n * eps * max pivot counts as singular; the message
    names the variable of the smallest pivot.
    """
    A = np.asarray(A, dtype=np.float64)
    lu, piv, info = _GETRF(A)
    d = np.abs(np.diag(lu))
    if info != 0 or not np.isfinite(d).all() or d.min() <= np.finfo(float).eps * max(d.max(), 1e-300) * A.shape[0]:
        worst = int(np.argmin(d)) if np.isfinite(d).all() else int(np.argmax(~np.isfinite(d)))
        label = names[worst] if names is not None else f"[{worst}]"
        raise IntegratorFailure(f"{what}: matrix singular at t={t:.6g} (pivot of {label} = {d[worst]:.3g})",
                                "newton" if what.startswith("Newton") else "jacobian", t)
    return lu, piv


def lu_solve_fast(lu_piv: tuple, b: Array) -> Array:
    """Solve with the factors of :func:`lu_factor_checked` (b: (m,) or (m, k)).

    Several right-hand sides are solved one column at a time: for the small systems here
    that is much faster than a multi-RHS getrs, which may start BLAS threads.
    """
    lu, piv = lu_piv
    if b.ndim == 1:
        return _GETRS(lu, piv, b)[0]
    out = np.empty_like(b, dtype=np.float64)
    for j in range(b.shape[1]):
        out[:, j] = _GETRS(lu, piv, np.ascontiguousarray(b[:, j]))[0]
    return out


class FiniteDifferenceJacobian:
    """Central-difference Jacobian and time derivative of ``func(t, y) -> (n,)``.

    scales     : (n,) state scales s_j (units of y_j); step h_j = delta * max(|y_j|, s_j)
    time_scale : time scale s_t (s); step h_t = delta * max(|t|, s_t)
    delta      : relative perturbation (dimensionless), default 1e-6 (~ eps**(1/3))
    control    : compare with the ``delta/2`` approximation (costs 2n more calls)
    control_tol: accepted dimensionless discrepancy max|J_d - J_{d/2}| / max(1, max|J|)
    max_refine : number of halvings of delta while the control is not met
    """

    def __init__(
        self,
        func: Callable[[float, Array], Array],
        n: int,
        scales: Optional[Sequence[float]] = None,
        time_scale: float = 1.0,
        delta: float = 1.0e-6,
        control: bool = False,
        control_tol: float = 1.0e-4,
        max_refine: int = 2,
    ) -> None:
        self.func, self.n = func, int(n)
        s = np.ones(self.n) if scales is None else np.asarray(scales, dtype=np.float64).reshape(-1)
        if s.shape != (self.n,) or np.any(~np.isfinite(s)) or np.any(s <= 0):
            raise ValueError(f"fd_options.scales: need {self.n} positive finite state scales")
        if not (time_scale > 0 and np.isfinite(time_scale)):
            raise ValueError("fd_options.time_scale: must be positive and finite")
        if not (0 < delta < 1):
            raise ValueError("fd_options.delta: must be in (0, 1)")
        if control_tol <= 0 or max_refine < 0:
            raise ValueError("fd_options.control_tol must be > 0 and max_refine >= 0")
        self.scales, self.time_scale, self.delta = s, float(time_scale), float(delta)
        self.control, self.control_tol, self.max_refine = bool(control), float(control_tol), int(max_refine)
        self.n_controls = 0
        self.n_control_failures = 0
        self.max_discrepancy = 0.0
        self.n_refinements = 0

    def _central(self, t: float, y: Array, delta: float) -> Array:
        h = delta * np.maximum(np.abs(y), self.scales)
        J = np.empty((self.n, self.n))
        for j in range(self.n):  # one re-solve of the field per perturbed state
            yp = y.copy()
            ym = y.copy()
            yp[j] += h[j]
            ym[j] -= h[j]
            J[:, j] = (np.asarray(self.func(t, yp)) - np.asarray(self.func(t, ym))) / (yp[j] - ym[j])
        return J

    def _scaled(self, J: Array) -> Array:
        return J * self.scales[None, :] / self.scales[:, None]

    def jac(self, t: float, y: Array) -> Array:
        y = np.asarray(y, dtype=np.float64)
        J = self._central(t, y, self.delta)
        if not self.control:
            return J
        self.n_controls += 1
        delta = self.delta
        for attempt in range(self.max_refine + 1):
            J_half = self._central(t, y, delta / 2)
            S, S_half = self._scaled(J), self._scaled(J_half)
            d = float(np.max(np.abs(S - S_half)) / max(1.0, float(np.max(np.abs(S_half)))))
            if d <= self.control_tol:
                self.max_discrepancy = max(self.max_discrepancy, d)
                return J_half
            if attempt < self.max_refine:
                self.n_refinements += 1
                J, delta = J_half, delta / 2
        self.max_discrepancy = max(self.max_discrepancy, d)
        self.n_control_failures += 1
        log.debug("FD Jacobian control not met at t=%g: discrepancy %.3g > %.3g", t, d, self.control_tol)
        return J_half

    def f_t(self, t: float, y: Array) -> Array:
        y = np.asarray(y, dtype=np.float64)
        h = self.delta * max(abs(t), self.time_scale)
        tp, tm = t + h, t - h
        return (np.asarray(self.func(tp, y)) - np.asarray(self.func(tm, y))) / (tp - tm)

    def diagnostics(self) -> Dict[str, Any]:
        """Consistency control facts (a diagnostic, not a guarantee of accuracy)."""
        return {
            "jacobian_provider": "fd",
            "fd_delta": self.delta,
            "fd_controls": self.n_controls,
            "fd_control_failures": self.n_control_failures,
            "fd_refinements": self.n_refinements,
            "fd_max_discrepancy": self.max_discrepancy,
        }


FD_REL_STEP = float(np.sqrt(np.finfo(np.float64).eps))  # 1.49e-8


def fd_increments(x: Array, typical: Optional[Array] = None, delta: Optional[float] = None) -> Array:
    """Finite-difference increments h_j = delta * max(|x_j|, typical_j) (units of x).

    ``delta`` defaults to sqrt(eps) = 1.49e-8 and ``typical`` to 1 for every entry. The
    increment follows the size of the unknown, so the relative perturbation stays near
    delta whatever the units, and never falls below delta * typical at a zero.

    >>> fd_increments(np.array([0.0, 1e-5, 3e4]), typical=np.array([1e-5, 1e-5, 1.0]))
    array([1.49011612e-13, 1.49011612e-13, 4.47034836e-04])
    """
    x = np.asarray(x, dtype=np.float64)
    d = FD_REL_STEP if delta is None else float(delta)
    typ = np.ones_like(x) if typical is None else np.asarray(typical, dtype=np.float64)
    return d * np.maximum(np.abs(x), typ)


def fd_residual_partials(
    residual: Callable[[float, Array, Array], Array], t: float, y: Array, z: Array, delta: Optional[float] = None,
    typical_y: Optional[Array] = None, typical_z: Optional[Array] = None, typical_t: float = 1.0,
) -> tuple:
    """Central differences of R itself (no Newton): R_z (m, m), R_y (m, n), R_t (m,).

    Increments by :func:`fd_increments`: h_j = delta * max(|x_j|, typical_j) for y and z,
    h_t = delta * max(|t|, typical_t) [s]; delta defaults to sqrt(eps).

    >>> import numpy as np
    >>> R = lambda t, y, z: np.array([z[0] - y[0] ** 2 * np.sin(t)])
    >>> Rz, Ry, Rt = fd_residual_partials(R, 1.0, np.array([2.0]), np.array([0.0]))
    >>> round(float(Ry[0, 0]), 6), round(float(-4 * np.sin(1.0)), 6)     # -2 y sin t
    (-3.365884, -3.365884)
    """
    m, n = z.size, y.size
    hz, hy = fd_increments(z, typical_z, delta), fd_increments(y, typical_y, delta)

    def col(fun, x, h, j):
        xp, xm = x.copy(), x.copy()
        xp[j] += h[j]
        xm[j] -= h[j]
        return (np.asarray(fun(xp)) - np.asarray(fun(xm))) / (xp[j] - xm[j])

    Rz = np.column_stack([col(lambda v: residual(t, y, v), z, hz, j) for j in range(m)])
    Ry = np.column_stack([col(lambda v: residual(t, v, z), y, hy, j) for j in range(n)]) if n else np.zeros((m, 0))
    ht = fd_increments(np.array([t]), np.array([typical_t]), delta)[0]
    tp, tm = t + ht, t - ht
    Rt = (np.asarray(residual(tp, y, z)) - np.asarray(residual(tm, y, z))) / (tp - tm)
    return Rz, Ry, Rt


class SensitivityJacobian:
    """Sensitivities of a residual-form model at its converged point (factor R_z once).

    partials : (t, y, z) -> (R_z, R_y, R_t), analytic or from :func:`fd_residual_partials`
    deriv_index : positions of y' in z
    """

    def __init__(self, partials: Callable[[float, Array, Array], tuple], deriv_index: Array) -> None:
        self.partials, self.deriv_index = partials, np.asarray(deriv_index, dtype=int)
        self.n_factorisations = 0

    def sensitivities(self, t: float, y: Array, z: Array) -> tuple:
        """(z_y (m, n), z_t (m,)) from one factorisation of R_z."""
        Rz, Ry, Rt = self.partials(t, y, z)
        Rz = np.asarray(Rz, dtype=np.float64)
        if not np.all(np.isfinite(Rz)):
            raise IntegratorFailure(f"sensitivity: R_z not finite at t={t:.6g}", "jacobian", t)
        lu = lu_factor_checked(Rz, "sensitivity: R_z", t)
        self.n_factorisations += 1
        rhs = np.column_stack([-np.asarray(Ry, dtype=np.float64), -np.asarray(Rt, dtype=np.float64)])
        sol = lu_solve_fast(lu, rhs)
        return sol[:, :-1], sol[:, -1]

    def jac_and_ft(self, t: float, y: Array, z: Array) -> tuple:
        z_y, z_t = self.sensitivities(t, y, z)
        return z_y[self.deriv_index], z_t[self.deriv_index]
