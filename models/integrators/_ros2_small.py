"""Compiled ROS2 stages for small systems (n <= SMALL_N): LU with partial pivoting and the
two stage solves in numba.

Why: ``bench/integrators_ros2`` measured ROS2's per-step overhead (time per step minus time
in f and J) at 16–19 µs for 8–20 states with LAPACK and numpy, above the 15 µs target; for
such sizes the cost is call overhead (about twenty numpy and LAPACK calls per attempt), not
arithmetic. The same method in two compiled calls per attempt. Imported lazily, so numba
is loaded only when ROS2 adaptive runs a small system.
"""
from __future__ import annotations

import numpy as np
from numba import njit

SMALL_N = 32


@njit(cache=True)
def _lu_inplace(M, piv):
    """Doolittle LU with partial pivoting of M in place (L unit lower, U upper)."""
    n = M.shape[0]
    for k in range(n):
        p = k
        amax = abs(M[k, k])
        for i in range(k + 1, n):
            v = abs(M[i, k])
            if v > amax:
                amax = v
                p = i
        piv[k] = p
        if p != k:
            for j in range(n):
                tmp = M[k, j]
                M[k, j] = M[p, j]
                M[p, j] = tmp
        d = M[k, k]
        if d == 0.0:
            continue  # singular: the caller sees a zero pivot
        for i in range(k + 1, n):
            f = M[i, k] / d
            M[i, k] = f
            if f != 0.0:
                for j in range(k + 1, n):
                    M[i, j] -= f * M[k, j]


@njit(cache=True)
def _lu_solve_inplace(LU, piv, b):
    n = LU.shape[0]
    for k in range(n):
        p = piv[k]
        if p != k:
            tmp = b[k]
            b[k] = b[p]
            b[p] = tmp
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= LU[i, j] * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= LU[i, j] * b[j]
        b[i] = s / LU[i, i]


@njit(cache=True)
def factor(J, gamma_h, LU, piv):
    """Factor M = I − γhJ into LU (in place, partial pivoting). Returns (min |pivot|, max |pivot|)."""
    n = J.shape[0]
    for i in range(n):
        for j in range(n):
            LU[i, j] = -gamma_h * J[i, j]
        LU[i, i] += 1.0
    _lu_inplace(LU, piv)
    dmin = abs(LU[0, 0])
    dmax = dmin
    for i in range(1, n):
        d = abs(LU[i, i])
        if d < dmin:
            dmin = d
        if d > dmax:
            dmax = d
    return dmin, dmax


@njit(cache=True)
def stage1(J, gamma_h, h, f0, c, has_c, LU, piv):
    """Factor M = I − γhJ into LU (in place) and solve M u1 = h f0 (+ c).

    Returns (u1, min |pivot|, max |pivot|). c = γh² f_t when has_c.
    """
    n = J.shape[0]
    dmin, dmax = factor(J, gamma_h, LU, piv)
    u1 = np.empty(n)
    if dmin == 0.0:
        u1[:] = 0.0
        return u1, dmin, dmax
    for i in range(n):
        u1[i] = h * f0[i] + (c[i] if has_c else 0.0)
    _lu_solve_inplace(LU, piv, u1)
    return u1, dmin, dmax


@njit(cache=True)
def stage2(LU, piv, h, f1, u1, c, has_c, y, ay, rtol, atol):
    """Solve M u2 = h f1 − 2 u1 (− c); y_new = y + (3 u1 + u2)/2, s2 = u1 + u2 (= 2 err).

    Returns (y_new, s2, |y_new|, Σ (s2_i / (atol_i + rtol_i max(|y_i|, |y_new,i|)))²).
    """
    u2 = stage2_rhs(h, f1, u1, c, has_c)
    _lu_solve_inplace(LU, piv, u2)
    return stage2_update(y, u1, u2, ay, rtol, atol)


@njit(cache=True)
def stage2_rhs(h, f1, u1, c, has_c):
    """The right-hand side h f1 − 2 u1 (− c) of the second stage's linear system."""
    n = u1.shape[0]
    u2 = np.empty(n)
    for i in range(n):
        u2[i] = h * f1[i] - 2.0 * u1[i] - (c[i] if has_c else 0.0)
    return u2


@njit(cache=True)
def stage2_update(y, u1, u2, ay, rtol, atol):
    """y_new = y + (3 u1 + u2)/2, s2 = u1 + u2, |y_new| and the error sum of :func:`stage2`."""
    n = u1.shape[0]
    y_new = np.empty(n)
    s2 = np.empty(n)
    ay_new = np.empty(n)
    acc = 0.0
    for i in range(n):
        s = u1[i] + u2[i]
        s2[i] = s
        yn = y[i] + u1[i] + 0.5 * s
        y_new[i] = yn
        a = abs(yn)
        ay_new[i] = a
        e = s / (atol[i] + rtol[i] * max(ay[i], a))
        acc += e * e
    return y_new, s2, ay_new, acc
