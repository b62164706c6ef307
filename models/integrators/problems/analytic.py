"""Problems with closed-form or independently computed references.

* ``linear``            y' = lam y (scalar), y = exp(lam t)
* ``prothero_robinson`` y' = lam (y - g(t)) + g'(t), g = sin(omega t): non-autonomous and stiff
  for lam << 0; y = g. Dropping f_t = -lam g' + g'' is visible in the stiff regime.
* ``dae_index1``        semi-explicit index-1 DAE in residual form with a nonlinear constraint,
  y1' = -w + cos t, y2' = w, 0 = w^3 + w - (y1^3 + y1)  =>  w = y1,
  y1 = (cos t + sin t + e^-t)/2, y2 = 1 + (sin t - cos t - e^-t)/2
* ``rlc6``              six-element ladder (R1, L1, C1, R2, L2, C2, source V0) in residual form
  with algebraic unknowns (resistor voltages, capacitor current); reference from the
  matrix exponential of the augmented linear system (scipy.linalg.expm).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import expm

from models.integrators.base import ODEProblem, ResidualProblem
from models.integrators.problems import TestProblem, problem_factory


@problem_factory("linear")
def linear(lam: float = -1.0, t_end: float = 1.0, n_out: int = 2) -> TestProblem:
    """Scalar linear test y' = lam y, y(0) = 1 (lam in 1/s)."""
    lam = float(lam)
    ode = ODEProblem(lambda t, y: lam * y, [1.0], (0.0, t_end), jac=lambda t, y: np.array([[lam]]),
                     autonomous=True, names=["y"])
    t = np.linspace(0.0, t_end, max(int(n_out), 2))
    return TestProblem("linear", ode, t, np.exp(lam * t)[:, None], "closed form exp(lam t)", stiff=lam < -100)


@problem_factory("prothero_robinson")
def prothero_robinson(lam: float = -1.0e4, omega: float = 1.0, t_end: float = 2.0, n_out: int = 2) -> TestProblem:
    """Prothero-Robinson y' = lam (y - sin(omega t)) + omega cos(omega t), y(0) = 0."""
    lam, omega = float(lam), float(omega)

    def rhs(t, y):
        return lam * (y - np.sin(omega * t)) + omega * np.cos(omega * t)

    def f_t(t, y):
        return np.array([-lam * omega * np.cos(omega * t) - omega ** 2 * np.sin(omega * t)])

    ode = ODEProblem(rhs, [0.0], (0.0, t_end), jac=lambda t, y: np.array([[lam]]), f_t=f_t, names=["y"])
    t = np.linspace(0.0, t_end, max(int(n_out), 2))
    return TestProblem("prothero_robinson", ode, t, np.sin(omega * t)[:, None], "closed form y = sin(omega t)",
                       stiff=lam < -100)


@problem_factory("dae_index1")
def dae_index1(t_end: float = 2.0, n_out: int = 5) -> TestProblem:
    """Semi-explicit index-1 DAE with one algebraic variable w (nonlinear constraint)."""

    def residual(t, y, z):
        dy1, dy2, w = z
        return np.array([dy1 + w - np.cos(t), dy2 - w, w ** 3 + w - (y[0] ** 3 + y[0])])

    def jac_z(t, y, z):
        return np.array([[1.0, 0.0, 1.0], [0.0, 1.0, -1.0], [0.0, 0.0, 3.0 * z[2] ** 2 + 1.0]])

    def jac_y(t, y, z):
        return np.array([[0.0, 0.0], [0.0, 0.0], [-(3.0 * y[0] ** 2 + 1.0), 0.0]])

    def jac_t(t, y, z):
        return np.array([np.sin(t), 0.0, 0.0])

    prob = ResidualProblem(residual, [1.0, 0.0], [0.0, 1.0, 0.9], (0.0, t_end), jac_z=jac_z, jac_y=jac_y, jac_t=jac_t,
                           names=["y1", "y2"], z_names=["y1'", "y2'", "w"])
    t = np.linspace(0.0, t_end, max(int(n_out), 2))
    y1 = 0.5 * (np.cos(t) + np.sin(t) + np.exp(-t))
    y2 = 1.0 + 0.5 * (np.sin(t) - np.cos(t) - np.exp(-t))
    dy1 = 0.5 * (-np.sin(t) + np.cos(t) - np.exp(-t))
    z_ref = np.column_stack([dy1, y1, y1])
    return TestProblem("dae_index1", prob, t, np.column_stack([y1, y2]), "closed form (w = y1)", z_ref=z_ref,
                       stiff=False)


def rlc6_matrices(R1: float, L1: float, C1: float, R2: float, L2: float, C2: float, V0: float):
    """x = (i1 [A], v1 [V], i2 [A], v2 [V]); x' = A x + b of the ladder."""
    A = np.array([
        [-R1 / L1, -1.0 / L1, 0.0, 0.0],
        [1.0 / C1, 0.0, -1.0 / C1, 0.0],
        [0.0, 1.0 / L2, -R2 / L2, -1.0 / L2],
        [0.0, 0.0, 1.0 / C2, 0.0],
    ])
    b = np.array([V0 / L1, 0.0, 0.0, 0.0])
    return A, b


def rlc6_residual(t, y, z, R1, L1, C1, R2, L2, C2, V0):
    """Residual R(t, y, z) of the ladder: y = (i1, v1, i2, v2), z = (i1', v1', i2', v2', vR1, vR2, iC1)."""
    i1, v1, i2, v2 = y
    di1, dv1, di2, dv2, vr1, vr2, ic1 = z
    return np.array([
        L1 * di1 - (V0 - vr1 - v1),
        C1 * dv1 - ic1,
        ic1 - (i1 - i2),
        L2 * di2 - (v1 - vr2 - v2),
        C2 * dv2 - i2,
        vr1 - R1 * i1,
        vr2 - R2 * i2,
    ])


@problem_factory("rlc6")
def rlc6(R1: float = 10.0, L1: float = 1.0e-3, C1: float = 1.0e-6, R2: float = 5.0, L2: float = 2.0e-3,
         C2: float = 4.7e-6, V0: float = 1.0, t_end: float = 0.5e-3, n_out: int = 11) -> TestProblem:
    """Six-element RLC ladder driven by a step V0 (V) from rest, in residual form.

    States y = (i1, v1, i2, v2); unknowns z = (i1', v1', i2', v2', vR1, vR2, iC1) with
    L1 i1' = V0 - vR1 - v1, C1 v1' = iC1, iC1 = i1 - i2, L2 i2' = v1 - vR2 - v2, C2 v2' = i2,
    vR1 = R1 i1, vR2 = R2 i2 (SI units).
    """
    for name, val in dict(R1=R1, L1=L1, C1=C1, R2=R2, L2=L2, C2=C2).items():
        if not val > 0:
            raise ValueError(f"rlc6: {name} must be > 0, got {val}")

    def residual(t, y, z):
        return rlc6_residual(t, y, z, R1, L1, C1, R2, L2, C2, V0)

    Rz = np.zeros((7, 7))
    Rz[0, 0], Rz[0, 4] = L1, 1.0
    Rz[1, 1], Rz[1, 6] = C1, -1.0
    Rz[2, 6] = 1.0
    Rz[3, 2], Rz[3, 5] = L2, 1.0
    Rz[4, 3] = C2
    Rz[5, 4] = 1.0
    Rz[6, 5] = 1.0
    Ry = np.zeros((7, 4))
    Ry[0, 1] = 1.0
    Ry[2, 0], Ry[2, 2] = -1.0, 1.0
    Ry[3, 1], Ry[3, 3] = -1.0, 1.0
    Ry[4, 2] = -1.0
    Ry[5, 0] = -R1
    Ry[6, 2] = -R2

    prob = ResidualProblem(residual, np.zeros(4), np.zeros(7), (0.0, t_end),
                           jac_z=lambda t, y, z: Rz, jac_y=lambda t, y, z: Ry, jac_t=lambda t, y, z: np.zeros(7),
                           names=["i1", "v1", "i2", "v2"], z_names=["i1'", "v1'", "i2'", "v2'", "vR1", "vR2", "iC1"])
    A, b = rlc6_matrices(R1, L1, C1, R2, L2, C2, V0)
    Aug = np.zeros((5, 5))
    Aug[:4, :4], Aug[:4, 4] = A, b
    t = np.linspace(0.0, t_end, max(int(n_out), 2))
    x0 = np.zeros(5)
    x0[4] = 1.0
    y_ref = np.array([(expm(Aug * ti) @ x0)[:4] for ti in t])
    return TestProblem("rlc6", prob, t, y_ref, "matrix exponential of the augmented linear system", stiff=False,
                       rtol=1e-6, atol=1e-9, info={"A": A.tolist(), "b": b.tolist()})
