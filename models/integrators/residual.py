"""Reduced field of a residual-form model: Newton solve of ``R(t, y, z) = 0`` for z.

The unknowns ``z`` hold the derivatives of ``y`` (at ``deriv_index``) and the algebraic
variables; with ``(t, y)`` imposed, ``f(t, y) = z[deriv_index]``. A unique, smooth local
solution is required (semi-explicit index 1); no branch selection is attempted.

Jacobian of the reduced field (``jacobian`` option):

* ``analytic``    -- the problem's ``jac`` / ``f_t`` of the reduced field
* ``fd``          -- central differences, each perturbation re-solving all of z
* ``sensitivity`` -- factor R_z once, solve R_z z_y = -R_y and R_z z_t = -R_t
* ``auto``        -- analytic if given, else sensitivity
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Optional

import numpy as np

from models.integrators.problem_types import IntegratorFailure, ODEProblem, ResidualProblem
from models.integrators.jacobians import (
    FiniteDifferenceJacobian,
    SensitivityJacobian,
    fd_residual_partials,
    lu_factor_checked,
    lu_solve_fast,
)

log = logging.getLogger(__name__)

Array = np.ndarray


class ReducedField:
    """``f(t, y)`` of a :class:`ResidualProblem` with Newton diagnostics and a Jacobian provider."""

    def __init__(self, problem: ResidualProblem, jacobian: str = "auto", fd_options: Optional[Dict[str, Any]] = None):
        self.p = problem
        if jacobian == "auto":
            jacobian = "analytic" if problem.jac is not None else "sensitivity"
        if jacobian not in ("analytic", "fd", "sensitivity"):
            raise ValueError(f"jacobian: must be analytic|fd|sensitivity|auto, got {jacobian!r}")
        if jacobian == "analytic" and problem.jac is None:
            raise ValueError("jacobian: 'analytic' requested but the residual problem has no reduced-field jac")
        self.provider = jacobian
        self.n_solves = 0
        self.n_newton_iter = 0
        self.max_iter_used = 0
        self.max_cond = 0.0
        self._z_last = problem.z0.copy()
        self._names = list(problem.z_names) if problem.z_names is not None else [f"z[{i}]" for i in range(problem.m)]
        self._key: Optional[tuple] = None
        self._lu: Optional[tuple] = None
        self.n_rz_refresh = 0
        self._sens_cache: Optional[tuple] = None  # (t, y) of the last converged solve
        # typical sizes of the finite-difference increments: the problem's, and its time span
        self._fd_typical = {"typical_y": problem.typical_y, "typical_z": problem.typical_z,
                            "typical_t": problem.t_span[1] - problem.t_span[0]}
        self._fd = FiniteDifferenceJacobian(self.f, problem.n, **(fd_options or {})) if jacobian == "fd" else None
        self._sens = SensitivityJacobian(self._partials, problem.deriv_index) if jacobian == "sensitivity" else None

    # -- residual partials ---------------------------------------------------------------
    def _partials(self, t: float, y: Array, z: Array) -> tuple:
        p = self.p
        if p.jac_z is not None and p.jac_y is not None and p.jac_t is not None:
            return p.jac_z(t, y, z), p.jac_y(t, y, z), p.jac_t(t, y, z)
        Rz, Ry, Rt = fd_residual_partials(p.residual, t, y, z, **self._fd_typical)
        if p.jac_z is not None:
            Rz = p.jac_z(t, y, z)
        if p.jac_y is not None:
            Ry = p.jac_y(t, y, z)
        if p.jac_t is not None:
            Rt = p.jac_t(t, y, z)
        return Rz, Ry, Rt

    def _rz(self, t: float, y: Array, z: Array) -> Array:
        if self.p.jac_z is not None:
            return np.asarray(self.p.jac_z(t, y, z), dtype=np.float64)
        return fd_residual_partials(lambda tt, yy, zz: self.p.residual(tt, yy, zz), t, y, z, **self._fd_typical)[0]

    # -- Newton ----------------------------------------------------------------------------
    def solve_z(self, t: float, y: Array, z_guess: Optional[Array] = None) -> Array:
        """Converged z at (t, y); raises IntegratorFailure(kind='newton') with diagnostics."""
        p = self.p
        y = np.asarray(y, dtype=np.float64)
        if z_guess is None and self._key is not None and self._key[0] == t and np.array_equal(self._key[1], y):
            return self._z_last.copy()
        z = (self._z_last if z_guess is None else np.asarray(z_guess, dtype=np.float64)).copy()
        self.n_solves += 1
        names = self._names
        lu = self._lu  # simplified Newton: the factors of R_z are kept across solves
        prev = np.inf
        for it in range(1, p.max_newton_iter + 1):
            try:
                r = np.asarray(p.residual(t, y, z), dtype=np.float64)
                if lu is None:  # chord Newton: R_z refreshed only when convergence stalls
                    Rz = self._rz(t, y, z)
            except IntegratorFailure:
                raise
            except Exception as exc:
                raise IntegratorFailure(f"residual raised {type(exc).__name__}: {exc} at t={t:.6g}", "field", t) from exc
            if r.shape != (p.m,) or not np.all(np.isfinite(r)):
                raise IntegratorFailure(f"residual non-finite or shape {r.shape} at t={t:.6g}", "field", t)
            if lu is None:
                lu = lu_factor_checked(Rz, f"Newton iteration {it}: R_z", t, names)
                self.max_cond = max(self.max_cond, float(np.linalg.cond(Rz)))  # refreshes are rare
            dz = lu_solve_fast(lu, r)
            z = z - dz
            self.n_newton_iter += 1
            step = np.abs(dz) / (1.0 + np.abs(z))
            size = float(np.max(step))
            if size <= p.newton_tol:
                self._lu = lu
                self.max_iter_used = max(self.max_iter_used, it)
                self._z_last = z
                self._key = (t, y.copy())
                return z.copy()
            if size > 0.25 * prev:
                lu = None  # slow contraction: refresh R_z at the next iteration
                self.n_rz_refresh += 1
            prev = size
        self._lu = None
        cond = float(np.linalg.cond(self._rz(t, y, z)))
        self.max_cond = max(self.max_cond, cond)
        worst = int(np.argmax(step))
        raise IntegratorFailure(
            f"Newton did not converge at t={t:.6g} in {p.max_newton_iter} iterations: "
            f"variable {names[worst]} scaled update {step[worst]:.3g}, cond(R_z) ~ {cond:.3g}",
            "newton",
            t,
        )

    def f(self, t: float, y: Array) -> Array:
        """Reduced field f(t, y) = z[deriv_index] (one residual solve)."""
        return self.solve_z(t, y)[self.p.deriv_index]

    # -- Jacobian providers ------------------------------------------------------------------
    def _sens_pair(self, t: float, y: Array) -> tuple:
        """(J, f_t) from one factorisation of R_z at the converged z; cached per (t, y)."""
        c = self._sens_cache
        if c is not None and c[0] == t and np.array_equal(c[1], y):
            return c[2]
        z = self.solve_z(t, y)
        pair = self._sens.jac_and_ft(t, y, z)
        self._sens_cache = (t, np.array(y, dtype=np.float64), pair)
        return pair

    def _sens_jac(self, t: float, y: Array) -> Array:
        return self._sens_pair(t, y)[0]

    def _sens_ft(self, t: float, y: Array) -> Array:
        return self._sens_pair(t, y)[1]

    def to_ode(self) -> ODEProblem:
        """The reduced field as an ODEProblem with the chosen Jacobian provider."""
        p = self.p
        if self.provider == "analytic":
            jac, f_t = p.jac, p.f_t
        elif self.provider == "fd":
            jac, f_t = self._fd.jac, (p.f_t if p.f_t is not None else self._fd.f_t)
        else:
            jac, f_t = self._sens_jac, (p.f_t if p.f_t is not None else self._sens_ft)
        # consistent z at t0 (also validates the model before integrating)
        self.solve_z(p.t_span[0], p.y0)
        return ODEProblem(self.f, p.y0, p.t_span, jac=jac, f_t=f_t, names=p.names)

    def diagnostics(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "jacobian_provider": self.provider,
            "newton_max_iterations_used": self.max_iter_used,
            "newton_rz_refreshes": self.n_rz_refresh,
            "newton_cond_estimate_max": self.max_cond,
        }
        if self._fd is not None:
            out.update(self._fd.diagnostics())
        if self._sens is not None:
            out["sensitivity_factorisations"] = self._sens.n_factorisations
        return out
