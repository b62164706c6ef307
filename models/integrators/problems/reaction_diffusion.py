"""A reaction-diffusion system of size >= 100 with a banded Jacobian: the 1D Brusselator.

Hairer & Wanner, *Solving Ordinary Differential Equations II* (2nd ed., Springer 1996),
section IV.1 ("BRUSS"): on x in [0, 1] with N interior points x_i = i/(N+1),

    u_i' = 1 + u_i^2 v_i - 4 u_i + a (N+1)^2 (u_{i-1} - 2 u_i + u_{i+1})
    v_i' = 3 u_i - u_i^2 v_i     + a (N+1)^2 (v_{i-1} - 2 v_i + v_{i+1})

with a = 1/50, boundary values u = 1, v = 3, initial u_i = 1 + sin(2 pi x_i), v_i = 3, on
t in [0, 10]. The states are interleaved (u_1, v_1, u_2, v_2, ...), so the Jacobian has
lower and upper bandwidth 2 (``ODEProblem.jac_band``). No published reference exists for a
given N: the reference is computed with an independent solver, scipy's Radau IIA (order 5)
with the sparse analytic Jacobian at rtol = atol = 1e-10 (cached per N).
"""
from __future__ import annotations

import functools

import numpy as np

from models.integrators.base import ODEProblem
from models.integrators.problems import TestProblem, problem_factory
from models.integrators.problems.testset import _inplace

ALPHA = 1.0 / 50.0
T_END = 10.0


def _parts(n_points: int):
    N = int(n_points)
    if N < 2:
        raise ValueError(f"n_points: must be >= 2, got {n_points}")
    c = ALPHA * (N + 1) ** 2
    x = np.arange(1, N + 1) / (N + 1)
    y0 = np.empty(2 * N)
    y0[0::2] = 1.0 + np.sin(2.0 * np.pi * x)
    y0[1::2] = 3.0

    def rhs(t, y):
        u, v = y[0::2], y[1::2]
        lap_u = np.empty(N)
        lap_v = np.empty(N)
        lap_u[1:-1] = u[:-2] - 2.0 * u[1:-1] + u[2:]
        lap_v[1:-1] = v[:-2] - 2.0 * v[1:-1] + v[2:]
        lap_u[0] = 1.0 - 2.0 * u[0] + u[1]
        lap_u[-1] = u[-2] - 2.0 * u[-1] + 1.0
        lap_v[0] = 3.0 - 2.0 * v[0] + v[1]
        lap_v[-1] = v[-2] - 2.0 * v[-1] + 3.0
        uuv = u * u * v
        out = np.empty(2 * N)
        out[0::2] = 1.0 + uuv - 4.0 * u + c * lap_u
        out[1::2] = 3.0 * u - uuv + c * lap_v
        return out

    def bands(y):
        """Diagonals of J: main (2N,), offsets +-1 (2N-1,), +-2 (2N-2,)."""
        u, v = y[0::2], y[1::2]
        main = np.empty(2 * N)
        main[0::2] = 2.0 * u * v - 4.0 - 2.0 * c  # du'/du
        main[1::2] = -u * u - 2.0 * c  # dv'/dv
        up1 = np.zeros(2 * N - 1)
        up1[0::2] = u * u  # du_i'/dv_i
        lo1 = np.zeros(2 * N - 1)
        lo1[0::2] = 3.0 - 2.0 * u * v  # dv_i'/du_i
        off2 = np.full(2 * N - 2, c)  # neighbours of the same species
        return main, up1, lo1, off2

    def jac(t, y):
        main, up1, lo1, off2 = bands(y)
        J = np.diag(main)
        J += np.diag(up1, 1) + np.diag(lo1, -1) + np.diag(off2, 2) + np.diag(off2, -2)
        return J

    def jac_sparse(t, y):
        from scipy.sparse import diags

        main, up1, lo1, off2 = bands(y)
        return diags([off2, lo1, main, up1, off2], [-2, -1, 0, 1, 2], format="csc")

    names = [f"{s}{i}" for i in range(1, N + 1) for s in ("u", "v")]
    return rhs, jac, jac_sparse, y0, names


@functools.lru_cache(maxsize=4)
def _reference(n_points: int) -> tuple:
    from scipy.integrate import solve_ivp

    rhs, _, jac_sparse, y0, _ = _parts(n_points)
    sol = solve_ivp(rhs, (0.0, T_END), y0, method="Radau", jac=jac_sparse, rtol=1e-10, atol=1e-10)
    if not sol.success:  # pragma: no cover - a failure of scipy itself
        raise RuntimeError(f"bruss1d reference: scipy Radau failed: {sol.message}")
    return tuple(sol.y[:, -1])


@problem_factory("bruss1d")
def bruss1d(n_points: int = 50) -> TestProblem:
    """1D Brusselator with ``n_points`` interior points (2 n_points states, banded J), t in [0, 10]."""
    rhs, jac, _, y0, names = _parts(n_points)
    ode = ODEProblem(rhs, y0, (0.0, T_END), jac=jac, autonomous=True, names=names, jac_band=(2, 2),
                     inplace=_inplace("bruss1d", (np.array([ALPHA * (int(n_points) + 1) ** 2]),)))
    y_ref = np.array(_reference(int(n_points)))
    return TestProblem("bruss1d", ode, np.array([0.0, T_END]), y_ref,
                       "scipy Radau IIA, sparse analytic Jacobian, rtol = atol = 1e-10 (Hairer & Wanner II, BRUSS)",
                       rtol=1e-6, atol=1e-6, info={"n_points": int(n_points), "jac_band": (2, 2)})
