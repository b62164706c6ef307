"""Generalised-α for linear index-3 constrained mechanical systems (Arnold & Brüls 2007).

Solves ``M q̈ + K q + C(t)ᵀ λ = f(t)``, ``C(t) q = 0`` on a uniform time grid, with the
constraint enforced at position level at every step (no drift of g) and equilibrium at
t_{n+1}. Newmark relations on the algorithmic acceleration a:

    q_{n+1} = q_n + h v_n + h²(½ − β) a_n + h² β a_{n+1}
    v_{n+1} = v_n + h(1 − γ) a_n + h γ a_{n+1}
    (1 − α_m) a_{n+1} + α_m a_n = (1 − α_f) q̈_{n+1} + α_f q̈_n

with α_m = (2ρ∞ − 1)/(ρ∞ + 1), α_f = ρ∞/(ρ∞ + 1), γ = ½ + α_f − α_m,
β = ¼(γ + ½)². Because the constraint is linear in q each step is one linear solve of
the saddle-point system ``[[S, Cᵀ], [C, 0]] [q; λ] = [f + M q̃/c; 0]`` with
``S = M/c + K``, ``c = h² β (1 − α_f)/(1 − α_m)``.

Two solvers: ``schur`` factors the constant S once and solves the small Schur complement
C S⁻¹ Cᵀ per step (O(n²) per step); ``kkt`` factors the whole saddle-point matrix every
step (O(n³), what a general constrained solver does when C changes each step).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np
import scipy.linalg as sla

log = logging.getLogger(__name__)


@dataclass
class ConstrainedLinearDAE:
    """The DAE sampled on the time grid ``t`` (N+1,) [s].

    M, K : (n, n) constant mass and stiffness.
    C    : (N+1, m, n) constraint matrix at every t_k.
    f    : (N+1, n) external force at every t_k.
    Cdot0, Cddot0 : (m, n) Ċ and C̈ at t_0 (consistent initial acceleration).
    """

    t: np.ndarray
    M: np.ndarray
    K: np.ndarray
    C: np.ndarray
    f: np.ndarray
    Cdot0: Optional[np.ndarray] = None
    Cddot0: Optional[np.ndarray] = None

    def __post_init__(self):
        n = self.M.shape[0]
        N1 = self.t.shape[0]
        if self.K.shape != (n, n) or self.C.shape[0] != N1 or self.C.shape[2] != n or self.f.shape != (N1, n):
            raise ValueError(f"inconsistent DAE shapes: M {self.M.shape}, K {self.K.shape}, "
                             f"C {self.C.shape}, f {self.f.shape}, t {self.t.shape}")
        h = np.diff(self.t)
        if h.size == 0 or np.any(h <= 0.0) or np.ptp(h) > 1e-9 * h[0]:
            raise ValueError("time grid must be uniform and increasing with at least 2 points")


@dataclass
class GAResult:
    """q, v, qdd (true acceleration): (N+1, n); lam: (N+1, m); wall time of the step loop [s]."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    lam: np.ndarray
    stats: Dict[str, float] = field(default_factory=dict)


def ga_parameters(rho_inf: float) -> Dict[str, float]:
    """α_m, α_f, γ, β of Chung–Hulbert generalised-α for spectral radius ρ∞ ∈ [0, 1]."""
    r = float(rho_inf)
    if not (0.0 <= r <= 1.0):
        raise ValueError(f"rho_inf must lie in [0, 1], got {rho_inf!r}")
    am = (2.0 * r - 1.0) / (r + 1.0)
    af = r / (r + 1.0)
    g = 0.5 + af - am
    b = 0.25 * (g + 0.5) ** 2
    return {"alpha_m": am, "alpha_f": af, "gamma": g, "beta": b}


class GeneralizedAlpha:
    """Generalised-α for index-3 linear constrained systems; see module docstring.

    rho_inf: spectral radius at infinity (1 = no numerical damping; with a moving
    constraint 0.8–0.9 is needed for stability). solver: ``schur`` or ``kkt``.
    """

    def __init__(self, rho_inf: float = 0.85, solver: str = "schur"):
        if solver not in ("schur", "kkt"):
            raise ValueError(f"solver must be 'schur' or 'kkt', got {solver!r}")
        self.rho_inf = float(rho_inf)
        self.solver = solver
        self.p = ga_parameters(rho_inf)

    def initial_acceleration(self, dae: ConstrainedLinearDAE, q0, v0):
        """Consistent q̈_0, λ_0 from the index-1 form (acceleration-level constraint)."""
        M, K, C = dae.M, dae.K, dae.C[0]
        m = C.shape[0]
        n = M.shape[0]
        rhs_c = np.zeros(m)
        if dae.Cdot0 is not None:
            rhs_c -= 2.0 * dae.Cdot0 @ v0
        if dae.Cddot0 is not None:
            rhs_c -= dae.Cddot0 @ q0
        A = np.block([[M, C.T], [C, np.zeros((m, m))]])
        sol = np.linalg.solve(A, np.concatenate([dae.f[0] - K @ q0, rhs_c]))
        return sol[:n], sol[n:]

    def solve(self, dae: ConstrainedLinearDAE, q0: np.ndarray, v0: np.ndarray) -> GAResult:
        """Integrate from (q0, v0) at t_0 over the whole grid."""
        t = dae.t
        N = t.shape[0] - 1
        n = dae.M.shape[0]
        m = dae.C.shape[1]
        h = float(t[1] - t[0])
        am, af, g, b = (self.p[k] for k in ("alpha_m", "alpha_f", "gamma", "beta"))
        c = h * h * b * (1.0 - af) / (1.0 - am)
        q0 = np.asarray(q0, dtype=np.float64)
        v0 = np.asarray(v0, dtype=np.float64)
        g0 = dae.C[0] @ q0
        if np.max(np.abs(g0), initial=0.0) > 1e-12 * max(1.0, float(np.max(np.abs(q0), initial=0.0))):
            raise ValueError(f"initial position violates the constraints: |g(q0)| = {np.max(np.abs(g0)):.3e}")
        qdd0, lam0 = self.initial_acceleration(dae, q0, v0)

        Q = np.empty((N + 1, n)); V = np.empty((N + 1, n)); A = np.empty((N + 1, n))
        L = np.empty((N + 1, m))
        Q[0], V[0], A[0], L[0] = q0, v0, qdd0, lam0
        # q̃ = q + h v + k_a a + k_qdd q̈  (predictor of the position, known part)
        k_a = h * h * (0.5 - b) - h * h * b * am / (1.0 - am)
        k_qdd = h * h * b * af / (1.0 - am)
        S = dae.M / c + dae.K
        Mc = dae.M / c
        start = time.perf_counter()
        if self.solver == "schur":
            self._loop_schur(dae, S, Mc, c, h, k_a, k_qdd, Q, V, A, L)
        else:
            self._loop_kkt(dae, S, Mc, c, h, k_a, k_qdd, Q, V, A, L)
        wall = time.perf_counter() - start
        log.debug("generalised-α (%s): %d steps, n=%d, m=%d in %.3f s", self.solver, N, n, m, wall)
        stats = {"n_steps": float(N), "n_dof": float(n), "n_constraints": float(m),
                 "n_linear_solves": float(N), "wall_time_s": wall, "h": h}
        return GAResult(t, Q, V, A, L, stats)

    def _update_matrices(self, h: float, c: float, k_a: float, k_qdd: float):
        """Coefficients of the state update on Z = [q; v; a; q̈] (4 × n).

        q̃ = c1 · Z;  Z_{n+1} = P Z_n + p ⊗ q_{n+1}  (all Newmark / α relations are linear).
        """
        am, af, g = self.p["alpha_m"], self.p["alpha_f"], self.p["gamma"]
        c1 = np.array([1.0, h, k_a, k_qdd])
        ca1, ca2, ca3 = (1.0 - af) / (1.0 - am), af / (1.0 - am), am / (1.0 - am)
        # q̈' = (q' − c1·Z)/c ;  a' = ca1 q̈' + ca2 q̈ − ca3 a ;  v' = v + h(1−γ) a + hγ a'
        qdd_row = -c1 / c
        qdd_q = 1.0 / c
        a_row = ca1 * qdd_row + np.array([0.0, 0.0, -ca3, ca2])
        a_q = ca1 * qdd_q
        v_row = np.array([0.0, 1.0, h * (1.0 - g), 0.0]) + h * g * a_row
        v_q = h * g * a_q
        P = np.vstack([np.zeros(4), v_row, a_row, qdd_row])
        pq = np.array([1.0, v_q, a_q, qdd_q])
        return c1, P, pq

    def _loop_schur(self, dae, S, Mc, c, h, k_a, k_qdd, Q, V, A, L):
        n = S.shape[0]
        Sinv = sla.cho_solve(sla.cho_factor(S), np.eye(n))
        Sinv = 0.5 * (Sinv + Sinv.T)
        # batched over all steps (vectorised, before the loop)
        N1, m = dae.C.shape[0], dae.C.shape[1]
        Xt = (dae.C.reshape(N1 * m, n) @ Sinv).reshape(N1, m, n)  # (S⁻¹ Cᵀ)ᵀ   (N+1, m, n)
        X = np.ascontiguousarray(Xt.transpose(0, 2, 1))  # S⁻¹ Cᵀ              (N+1, n, m)
        W = Xt @ dae.C.transpose(0, 2, 1)  # C S⁻¹ Cᵀ                         (N+1, m, m)
        G = np.linalg.solve(W, dae.C)  # W⁻¹ C                                  (N+1, m, n)
        Yf = dae.f @ Sinv  # S⁻¹ f                                              (N+1, n)
        B = Sinv @ Mc
        c1, P, pq = self._update_matrices(h, c, k_a, k_qdd)
        Zh = np.empty((Q.shape[0], 4, n))
        Zh[0] = np.stack([Q[0], V[0], A[0], A[0]])
        _schur_steps(np.ascontiguousarray(Yf), np.ascontiguousarray(B), np.ascontiguousarray(G),
                     X, np.ascontiguousarray(c1), np.ascontiguousarray(P), np.ascontiguousarray(pq), Zh, L)
        Q[1:], V[1:], A[1:] = Zh[1:, 0], Zh[1:, 1], Zh[1:, 3]

    def _loop_kkt(self, dae, S, Mc, c, h, k_a, k_qdd, Q, V, A, L):
        n = S.shape[0]
        m = dae.C.shape[1]
        K = np.zeros((n + m, n + m))
        K[:n, :n] = S
        rhs = np.zeros(n + m)
        c1, P, pq = self._update_matrices(h, c, k_a, k_qdd)
        Zh = np.empty((Q.shape[0], 4, n))
        Zh[0] = np.stack([Q[0], V[0], A[0], A[0]])
        _kkt_steps(K, rhs, np.ascontiguousarray(dae.C), np.ascontiguousarray(dae.f), np.ascontiguousarray(Mc),
                   np.ascontiguousarray(c1), np.ascontiguousarray(P), np.ascontiguousarray(pq), Zh, L)
        Q[1:], V[1:], A[1:] = Zh[1:, 0], Zh[1:, 1], Zh[1:, 3]


def _schur_steps_py(Yf, B, G, X, c1, P, pq, Zh, L):
    """The sequential part of the Schur-path step loop (state Z = [q; v; a; q̈], 4 × n).

    Per step: y = S⁻¹(f + M/c q̃), λ = W⁻¹ C y, q = y − S⁻¹Cᵀ λ, Z ← P Z + pq ⊗ q.
    Each step depends on the last, so this loop cannot be vectorised over steps; it is
    compiled with numba when available (the beam benchmark shows Python overhead, not
    arithmetic, dominating a 20-DOF reduced step).
    """
    Z = Zh[0].copy()
    for k in range(1, Zh.shape[0]):
        y = Yf[k] + B @ (c1 @ Z)
        lam = G[k] @ y
        L[k] = lam
        q = y - X[k] @ lam
        Z = P @ Z + np.outer(pq, q)
        Zh[k] = Z


def _kkt_steps_py(K, rhs, C, f, Mc, c1, P, pq, Zh, L):
    """The KKT-path step loop: the saddle-point matrix [[S, Cᵀ], [C, 0]] is refactorised
    (LU, partial pivoting) every step, as a general constrained solver does when C changes."""
    n = Mc.shape[0]
    Z = Zh[0].copy()
    for k in range(1, Zh.shape[0]):
        Ck = C[k]
        K[:n, n:] = Ck.T
        K[n:, :n] = Ck
        rhs[:n] = f[k] + Mc @ (c1 @ Z)
        sol = np.linalg.solve(K, rhs)
        L[k] = sol[n:]
        Z = P @ Z + np.outer(pq, sol[:n])
        Zh[k] = Z


try:  # numba is optional: the same loops, compiled
    from numba import njit as _njit

    _schur_steps = _njit(cache=True)(_schur_steps_py)
    _kkt_steps = _njit(cache=True)(_kkt_steps_py)
except ImportError:  # pragma: no cover - exercised where numba is absent
    _schur_steps = _schur_steps_py
    _kkt_steps = _kkt_steps_py
