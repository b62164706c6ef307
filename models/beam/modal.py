"""Eigenmodes of the constrained beam: K φ = ω² M φ subject to C φ = 0.

The constraint is imposed algebraically through an orthonormal null-space basis Z of C
(φ = Z y), so the slider may sit anywhere inside an element.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla


def constrained_modes(M: np.ndarray, K: np.ndarray, C: np.ndarray, n_modes: int):
    """Lowest ``n_modes`` angular frequencies ω [rad/s] and mass-normalised modes (n, n_modes)."""
    n = M.shape[0]
    Z = sla.null_space(C) if C.shape[0] else np.eye(n)
    if n_modes < 1 or n_modes > Z.shape[1]:
        raise ValueError(f"n_modes must lie in [1, {Z.shape[1]}] (free DOFs), got {n_modes}")
    Kz = Z.T @ K @ Z
    Mz = Z.T @ M @ Z
    lam, Y = sla.eigh(0.5 * (Kz + Kz.T), 0.5 * (Mz + Mz.T), subset_by_index=[0, n_modes - 1])
    return np.sqrt(np.clip(lam, 0.0, None)), Z @ Y


def static_solution(K: np.ndarray, C: np.ndarray, f: np.ndarray):
    """Static ``K q + Cᵀ λ = f``, ``C q = 0``: returns (q, λ); λ is minus the reaction force."""
    n, m = K.shape[0], C.shape[0]
    A = np.block([[K, C.T], [C, np.zeros((m, m))]])
    sol = np.linalg.solve(A, np.concatenate([f, np.zeros(m)]))
    return sol[:n], sol[n:]
