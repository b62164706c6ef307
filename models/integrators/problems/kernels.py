"""Compiled in-place fields of the stiff test problems (:class:`models.integrators.base.InPlaceField`).

The same equations as the numpy ``rhs``/``jac`` of ``testset.py`` and ``reaction_diffusion.py``
(which stay the reference; ``tests/integrators/test_int_kernels.py`` holds them equal at random
states), written as numba kernels that fill their output in place: CVODE calls them without a
Python wrapper and ROS2's compiled loop (``ros2_adaptive(loop="compiled")``) calls them without
leaving machine code. ``data`` is a tuple of arrays per problem.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def hires_rhs(t, y, out, data):
    k = data[0]  # k1..k12 as k[0]..k[11]
    r = k[9] * y[5] * y[7]
    out[0] = -k[0] * y[0] + k[1] * y[1] + k[2] * y[2] + k[3]
    out[1] = k[0] * y[0] - k[4] * y[1]
    out[2] = -k[5] * y[2] + k[1] * y[3] + k[6] * y[4]
    out[3] = k[2] * y[1] + k[0] * y[2] - k[7] * y[3]
    out[4] = -k[8] * y[4] + k[1] * y[5] + k[1] * y[6]
    out[5] = -r + k[10] * y[3] + k[0] * y[4] - k[1] * y[5] + k[10] * y[6]
    out[6] = r - k[11] * y[6]
    out[7] = -r + k[11] * y[6]


@njit(cache=True)
def hires_jac(t, y, fy, out, data):
    k = data[0]
    out[:, :] = 0.0
    out[0, 0], out[0, 1], out[0, 2] = -k[0], k[1], k[2]
    out[1, 0], out[1, 1] = k[0], -k[4]
    out[2, 2], out[2, 3], out[2, 4] = -k[5], k[1], k[6]
    out[3, 1], out[3, 2], out[3, 3] = k[2], k[0], -k[7]
    out[4, 4], out[4, 5], out[4, 6] = -k[8], k[1], k[1]
    out[5, 3], out[5, 4], out[5, 5], out[5, 6], out[5, 7] = k[10], k[0], -k[9] * y[7] - k[1], k[10], -k[9] * y[5]
    out[6, 5], out[6, 6], out[6, 7] = k[9] * y[7], -k[11], k[9] * y[5]
    out[7, 5], out[7, 6], out[7, 7] = -k[9] * y[7], k[11], -k[9] * y[5]


@njit(cache=True)
def rober_rhs(t, y, out, data):
    a, b, c = 0.04 * y[0], 1.0e4 * y[1] * y[2], 3.0e7 * y[1] * y[1]
    out[0] = -a + b
    out[1] = a - b - c
    out[2] = c


@njit(cache=True)
def rober_jac(t, y, fy, out, data):
    out[0, 0], out[0, 1], out[0, 2] = -0.04, 1.0e4 * y[2], 1.0e4 * y[1]
    out[1, 0], out[1, 1], out[1, 2] = 0.04, -1.0e4 * y[2] - 6.0e7 * y[1], -1.0e4 * y[1]
    out[2, 0], out[2, 1], out[2, 2] = 0.0, 6.0e7 * y[1], 0.0


@njit(cache=True)
def pollu_rhs(t, y, out, data):
    """dy/dt = S r(y), r_j = k_j y[a_j] (y[b_j] when b_j >= 0); S as (species, reaction, coefficient) triples."""
    k, a, b, s_i, s_j, s_c = data
    out[:] = 0.0
    for m in range(s_i.shape[0]):
        j = s_j[m]
        r = k[j] * y[a[j]]
        if b[j] >= 0:
            r *= y[b[j]]
        out[s_i[m]] += s_c[m] * r


@njit(cache=True)
def pollu_jac(t, y, fy, out, data):
    k, a, b, s_i, s_j, s_c = data
    out[:, :] = 0.0
    for m in range(s_i.shape[0]):
        i, j, c = s_i[m], s_j[m], s_c[m]
        if b[j] >= 0:
            out[i, a[j]] += c * k[j] * y[b[j]]
            out[i, b[j]] += c * k[j] * y[a[j]]
        else:
            out[i, a[j]] += c * k[j]


@njit(cache=True)
def bruss1d_rhs(t, y, out, data):
    """Interleaved (u_i, v_i); data[0] = (c = alpha (N+1)^2,)."""
    c = data[0][0]
    N = y.shape[0] // 2
    for i in range(N):
        u, v = y[2 * i], y[2 * i + 1]
        ul = y[2 * i - 2] if i > 0 else 1.0
        ur = y[2 * i + 2] if i < N - 1 else 1.0
        vl = y[2 * i - 1] if i > 0 else 3.0
        vr = y[2 * i + 3] if i < N - 1 else 3.0
        uuv = u * u * v
        out[2 * i] = 1.0 + uuv - 4.0 * u + c * (ul - 2.0 * u + ur)
        out[2 * i + 1] = 3.0 * u - uuv + c * (vl - 2.0 * v + vr)


@njit(cache=True)
def bruss1d_jac(t, y, fy, out, data):
    """The five diagonals (offsets -2..2) of J; entries outside the band are left as they are
    (zero in a fresh (n, n) buffer; banded solvers never read them)."""
    c = data[0][0]
    n = y.shape[0]
    for i in range(n // 2):
        u, v = y[2 * i], y[2 * i + 1]
        out[2 * i, 2 * i] = 2.0 * u * v - 4.0 - 2.0 * c
        out[2 * i + 1, 2 * i + 1] = -u * u - 2.0 * c
        out[2 * i, 2 * i + 1] = u * u
        out[2 * i + 1, 2 * i] = 3.0 - 2.0 * u * v
        if 2 * i + 2 < n:
            out[2 * i, 2 * i + 2] = c
            out[2 * i + 1, 2 * i + 3] = c
            out[2 * i + 2, 2 * i] = c
            out[2 * i + 3, 2 * i + 1] = c


def pollu_data(k: np.ndarray, a: np.ndarray, b: np.ndarray, S: np.ndarray) -> tuple:
    """The ``data`` tuple of :func:`pollu_rhs` from the rate constants, reactant indices
    (b = -1 for first-order reactions) and the (20, 25) stoichiometry matrix."""
    s_i, s_j = np.nonzero(S)
    return (np.asarray(k, dtype=np.float64), np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64),
            s_i.astype(np.int64), s_j.astype(np.int64), S[s_i, s_j].astype(np.float64))
