"""Stiff problems of the public IVP test set with its published reference values.

Source of equations, initial values, end times and reference solutions: F. Mazzia and
C. Magherini, *Test Set for Initial Value Problem Solvers*, release 2.4, Department of
Mathematics, University of Bari and INdAM (https://archimede.uniba.it/~testset/), problem
descriptions vdpol, hires, rober, orego, pollu and chemakzo (reference values computed there
with RADAU5/PSIDE in extended precision). The values below were checked against several
independent public transcriptions of the test-set Fortran drivers (``*sol`` / ``SOLN``
routines) found with the search tool.
"""
from __future__ import annotations

import numpy as np

from models.integrators.base import InPlaceField, ODEProblem, ResidualProblem
from models.integrators.problems import TestProblem, problem_factory

_BARI = "Mazzia & Magherini, Test Set for IVP Solvers r2.4, Univ. Bari"


@problem_factory("vdpol")
def vdpol(eps: float = 1.0e-6, t_end: float = 2.0) -> TestProblem:
    """Van der Pol, y1' = y2, y2' = ((1 - y1^2) y2 - y1)/eps, y(0) = (2, 0), eps = 1e-6, t in [0, 2]."""
    if eps != 1.0e-6 or t_end != 2.0:
        raise ValueError("vdpol: the reference is published for eps=1e-6, t_end=2 only")

    def rhs(t, y):
        return np.array([y[1], ((1.0 - y[0] ** 2) * y[1] - y[0]) / eps])

    def jac(t, y):
        return np.array([[0.0, 1.0], [(-2.0 * y[0] * y[1] - 1.0) / eps, (1.0 - y[0] ** 2) / eps]])

    ode = ODEProblem(rhs, [2.0, 0.0], (0.0, t_end), jac=jac, autonomous=True, names=["y1", "y2"])
    # The test set publishes the reference of the equivalent VDPOLM form (mu = 1000, t_end = 2000,
    # vdpolm.f: y1 = 0.1706167732170469e1, y2 = -0.8928097010248125e-3). With tau = t / mu and
    # eps = 1/mu^2 the two are the same solution: y1 equal, y2(VDPOL) = mu * y2(VDPOLM).
    y_ref = np.array([0.1706167732170469e1, -0.8928097010248125e-3 * 1000.0])
    return TestProblem("vdpol", ode, np.array([0.0, t_end]), y_ref, f"{_BARI}, problem VDPOLM mapped to VDPOL",
                       rtol=1e-6, atol=1e-6)


def _inplace(name: str, data: tuple):
    """The compiled in-place field of problem ``name`` (``kernels.py``), or None without numba."""
    try:
        from models.integrators.problems import kernels
    except ImportError:  # pragma: no cover - numba is a dependency
        return None
    if data and isinstance(data[0], str):
        data = getattr(kernels, data[0])(*data[1:])
    return InPlaceField(getattr(kernels, f"{name}_rhs"), getattr(kernels, f"{name}_jac"), data)


_HIRES_K = dict(k1=1.71, k2=0.43, k3=8.32, k4=0.0007, k5=8.75, k6=10.03, k7=0.035, k8=1.12, k9=1.745, k10=280.0, k11=0.69, k12=1.81)


@problem_factory("hires")
def hires() -> TestProblem:
    """HIRES (8 states, plant physiology), t in [0, 321.8122]."""
    c = _HIRES_K

    def rhs(t, y):
        y1, y2, y3, y4, y5, y6, y7, y8 = y
        r = c["k10"] * y6 * y8
        return np.array([
            -c["k1"] * y1 + c["k2"] * y2 + c["k3"] * y3 + c["k4"],
            c["k1"] * y1 - c["k5"] * y2,
            -c["k6"] * y3 + c["k2"] * y4 + c["k7"] * y5,
            c["k3"] * y2 + c["k1"] * y3 - c["k8"] * y4,
            -c["k9"] * y5 + c["k2"] * y6 + c["k2"] * y7,
            -r + c["k11"] * y4 + c["k1"] * y5 - c["k2"] * y6 + c["k11"] * y7,
            r - c["k12"] * y7,
            -r + c["k12"] * y7,
        ])

    def jac(t, y):
        J = np.zeros((8, 8))
        J[0, 0], J[0, 1], J[0, 2] = -c["k1"], c["k2"], c["k3"]
        J[1, 0], J[1, 1] = c["k1"], -c["k5"]
        J[2, 2], J[2, 3], J[2, 4] = -c["k6"], c["k2"], c["k7"]
        J[3, 1], J[3, 2], J[3, 3] = c["k3"], c["k1"], -c["k8"]
        J[4, 4], J[4, 5], J[4, 6] = -c["k9"], c["k2"], c["k2"]
        J[5, 3], J[5, 4], J[5, 5], J[5, 6], J[5, 7] = c["k11"], c["k1"], -c["k10"] * y[7] - c["k2"], c["k11"], -c["k10"] * y[5]
        J[6, 5], J[6, 6], J[6, 7] = c["k10"] * y[7], -c["k12"], c["k10"] * y[5]
        J[7, 5], J[7, 6], J[7, 7] = -c["k10"] * y[7], c["k12"], -c["k10"] * y[5]
        return J

    y0 = np.array([1.0, 0, 0, 0, 0, 0, 0, 0.0057])
    t_end = 321.8122
    ode = ODEProblem(rhs, y0, (0.0, t_end), jac=jac, autonomous=True, names=[f"y{i}" for i in range(1, 9)],
                     inplace=_inplace("hires", (np.array([c[f"k{i}"] for i in range(1, 13)]),)))
    y_ref = np.array([
        0.7371312573325668e-3, 0.1442485726316185e-3, 0.5888729740967575e-4, 0.1175651343283149e-2,
        0.2386356198831331e-2, 0.6238968252742796e-2, 0.2849998395185769e-2, 0.2850001604814231e-2,
    ])
    return TestProblem("hires", ode, np.array([0.0, t_end]), y_ref, f"{_BARI}, problem HIRES", rtol=1e-4, atol=1e-4 * 1e-4)


@problem_factory("rober")
def rober(t_end: float = 1.0e11) -> TestProblem:
    """Robertson kinetics (3 states), t in [0, 1e11]."""
    if t_end != 1.0e11:
        raise ValueError("rober: the reference is published for t_end=1e11 only")

    def rhs(t, y):
        a, b, c = 0.04 * y[0], 1.0e4 * y[1] * y[2], 3.0e7 * y[1] ** 2
        return np.array([-a + b, a - b - c, c])

    def jac(t, y):
        return np.array([
            [-0.04, 1.0e4 * y[2], 1.0e4 * y[1]],
            [0.04, -1.0e4 * y[2] - 6.0e7 * y[1], -1.0e4 * y[1]],
            [0.0, 6.0e7 * y[1], 0.0],
        ])

    ode = ODEProblem(rhs, [1.0, 0.0, 0.0], (0.0, t_end), jac=jac, autonomous=True, names=["y1", "y2", "y3"],
                     inplace=_inplace("rober", (np.zeros(0),)))
    y_ref = np.array([0.2083340149701255e-7, 0.8333360770334713e-13, 0.9999999791665050])
    # test set: atol 1e-10 on y1, y3 and 1e-14 on y2 is the usual choice for this problem
    return TestProblem("rober", ode, np.array([0.0, t_end]), y_ref, f"{_BARI}, problem ROBER", rtol=1e-6, atol=1e-14)


@problem_factory("orego")
def orego() -> TestProblem:
    """Oregonator (3 states), t in [0, 360]."""
    s, q, w = 77.27, 8.375e-6, 0.161

    def rhs(t, y):
        return np.array([s * (y[1] - y[0] * y[1] + y[0] - q * y[0] ** 2), (-y[1] - y[0] * y[1] + y[2]) / s, w * (y[0] - y[2])])

    def jac(t, y):
        return np.array([
            [s * (1.0 - y[1] - 2.0 * q * y[0]), s * (1.0 - y[0]), 0.0],
            [-y[1] / s, -(1.0 + y[0]) / s, 1.0 / s],
            [w, 0.0, -w],
        ])

    ode = ODEProblem(rhs, [1.0, 2.0, 3.0], (0.0, 360.0), jac=jac, autonomous=True, names=["y1", "y2", "y3"])
    y_ref = np.array([0.1000814870318523e1, 0.1228178521549917e4, 0.1320554942846706e3])
    return TestProblem("orego", ode, np.array([0.0, 360.0]), y_ref, f"{_BARI}, problem OREGO", rtol=1e-6, atol=1e-6)


# POLLU: 25 reactions; (rate constant, reactant indices 0-based) and the stoichiometry
_POLLU_K = np.array([
    0.35, 0.266e2, 0.123e5, 0.86e-3, 0.82e-3, 0.15e5, 0.13e-3, 0.24e5, 0.165e5, 0.9e4, 0.22e-1, 0.12e5, 0.188e1,
    0.163e5, 0.48e7, 0.35e-3, 0.175e-1, 0.1e9, 0.444e12, 0.124e4, 0.21e1, 0.578e1, 0.474e-1, 0.178e4, 0.312e1,
])
# reactants of r1..r25 (1-based species numbers as in the test-set description)
_POLLU_REACT = [(1,), (2, 4), (5, 2), (7,), (7,), (7, 6), (9,), (9, 6), (11, 2), (11, 1), (13,), (10, 2), (14,),
                (1, 6), (3,), (4,), (4,), (16,), (16,), (17, 6), (19,), (19,), (1, 4), (19, 1), (20,)]
# dy_i/dt = sum_j S[i, j] r_j; (species, {reaction: coefficient})
_POLLU_STOICH = {
    1: {1: -1, 10: -1, 14: -1, 23: -1, 24: -1, 2: 1, 3: 1, 9: 1, 11: 1, 12: 1, 22: 1, 25: 1},
    2: {2: -1, 3: -1, 9: -1, 12: -1, 1: 1, 21: 1},
    3: {15: -1, 1: 1, 17: 1, 19: 1, 22: 1},
    4: {2: -1, 16: -1, 17: -1, 23: -1, 15: 1},
    5: {3: -1, 4: 2, 6: 1, 7: 1, 13: 1, 20: 1},
    6: {6: -1, 8: -1, 14: -1, 20: -1, 3: 1, 18: 2},
    7: {4: -1, 5: -1, 6: -1, 13: 1},
    8: {4: 1, 5: 1, 6: 1, 7: 1},
    9: {7: -1, 8: -1},
    10: {12: -1, 7: 1, 9: 1},
    11: {9: -1, 10: -1, 8: 1, 11: 1},
    12: {9: 1},
    13: {11: -1, 10: 1},
    14: {13: -1, 12: 1},
    15: {14: 1},
    16: {18: -1, 19: -1, 16: 1},
    17: {20: -1},
    18: {20: 1},
    19: {21: -1, 22: -1, 24: -1, 23: 1, 25: 1},
    20: {25: -1, 24: 1},
}


def _pollu_arrays():
    S = np.zeros((20, 25))
    for i, row in _POLLU_STOICH.items():
        for j, c in row.items():
            S[i - 1, j - 1] = c
    a = np.array([r[0] - 1 for r in _POLLU_REACT])
    b = np.array([r[1] - 1 if len(r) == 2 else -1 for r in _POLLU_REACT])
    return S, a, b


@problem_factory("pollu")
def pollu() -> TestProblem:
    """POLLU air-pollution kinetics (20 species, 25 reactions), t in [0, 60]."""
    S, a, b = _pollu_arrays()
    k = _POLLU_K
    two = b >= 0
    bb = np.where(two, b, 0)
    rows = np.arange(25)

    def rates(y):
        return k * y[a] * np.where(two, y[bb], 1.0)

    def rhs(t, y):
        return S @ rates(y)

    def jac(t, y):
        D = np.zeros((25, 20))  # dr_j / dy_l
        np.add.at(D, (rows, a), k * np.where(two, y[bb], 1.0))
        np.add.at(D, (rows[two], b[two]), k[two] * y[a[two]])
        return S @ D

    y0 = np.zeros(20)
    y0[[1, 3, 6, 7, 8, 16]] = [0.2, 0.04, 0.1, 0.3, 0.01, 0.007]
    ode = ODEProblem(rhs, y0, (0.0, 60.0), jac=jac, autonomous=True, names=[f"y{i}" for i in range(1, 21)],
                     inplace=_inplace("pollu", ("pollu_data", k, a, b, S)))
    y_ref = np.array([
        0.5646255480022769e-01, 0.1342484130422339e+00, 0.4139734331099427e-08, 0.5523140207484359e-02,
        0.2018977262302196e-06, 0.1464541863493966e-06, 0.7784249118997964e-01, 0.3245075353396018e+00,
        0.7494013383880406e-02, 0.1622293157301561e-07, 0.1135863833257075e-07, 0.2230505975721359e-02,
        0.2087162882798630e-03, 0.1396921016840158e-04, 0.8964884856898295e-02, 0.4352846369330103e-17,
        0.6899219696263405e-02, 0.1007803037365946e-03, 0.1772146513969984e-05, 0.5682943292316392e-04,
    ])
    # y16 ~ 4e-18 is far below any absolute tolerance used here: it is left out of scd
    return TestProblem("pollu", ode, np.array([0.0, 60.0]), y_ref, f"{_BARI}, problem POLLU", scd_floor=1e-12,
                       rtol=1e-4, atol=1e-10)


_AKZO = dict(k1=18.7, k2=0.58, k3=0.09, k4=0.42, K=34.4, klA=3.3, Ks=115.83, pCO2=0.9, H=737.0)


@problem_factory("chemakzo")
def chemakzo() -> TestProblem:
    """Chemical Akzo Nobel, index-1 DAE in residual form: y = y1..y5, z = (y1'..y5', y6), t in [0, 180]."""
    c = _AKZO

    def residual(t, y, z):
        y1, y2, y3, y4, y5 = y
        y6 = z[5]
        if y2 < 0:
            raise ValueError(f"chemakzo: negative y2={y2:.3g} (sqrt undefined)")
        sq = np.sqrt(y2)
        r1 = c["k1"] * y1 ** 4 * sq
        r2 = c["k2"] * y3 * y4
        r3 = c["k2"] / c["K"] * y1 * y5
        r4 = c["k3"] * y1 * y4 ** 2
        r5 = c["k4"] * y6 ** 2 * sq
        fin = c["klA"] * (c["pCO2"] / c["H"] - y2)
        f = np.array([
            -2.0 * r1 + r2 - r3 - r4,
            -0.5 * r1 - r4 - 0.5 * r5 + fin,
            r1 - r2 + r3,
            -r2 + r3 - 2.0 * r4,
            r2 - r3 + r5,
        ])
        return np.concatenate((z[:5] - f, [c["Ks"] * y1 * y4 - y6]))

    S = np.array([  # df_i / dr_j (i = 1..5, reactions r1..r5)
        [-2.0, 1.0, -1.0, -1.0, 0.0],
        [-0.5, 0.0, 0.0, -1.0, -0.5],
        [1.0, -1.0, 1.0, 0.0, 0.0],
        [0.0, -1.0, 1.0, -2.0, 0.0],
        [0.0, 1.0, -1.0, 0.0, 1.0],
    ])

    def df_dx(y, y6):
        """df/d(y1..y5, y6), (5, 6), analytic."""
        y1, y2, y3, y4, y5 = y
        sq = np.sqrt(y2)
        D = np.zeros((5, 6))  # dr_j / dx
        D[0, 0], D[0, 1] = 4.0 * c["k1"] * y1 ** 3 * sq, 0.5 * c["k1"] * y1 ** 4 / sq
        D[1, 2], D[1, 3] = c["k2"] * y4, c["k2"] * y3
        D[2, 0], D[2, 4] = c["k2"] / c["K"] * y5, c["k2"] / c["K"] * y1
        D[3, 0], D[3, 3] = c["k3"] * y4 ** 2, 2.0 * c["k3"] * y1 * y4
        D[4, 1], D[4, 5] = 0.5 * c["k4"] * y6 ** 2 / sq, 2.0 * c["k4"] * y6 * sq
        F = S @ D
        F[1, 1] -= c["klA"]  # dFin/dy2
        return F

    def jac_z(t, y, z):
        F = df_dx(y, z[5])
        Rz = np.eye(6)
        Rz[:5, 5] = -F[:, 5]
        Rz[5, 5] = -1.0
        return Rz

    def jac_y(t, y, z):
        F = df_dx(y, z[5])
        Ry = np.zeros((6, 5))
        Ry[:5] = -F[:, :5]
        Ry[5, 0], Ry[5, 3] = c["Ks"] * y[3], c["Ks"] * y[0]
        return Ry

    y0 = np.array([0.444, 0.00123, 0.0, 0.007, 0.0])
    z0 = np.zeros(6)
    z0[5] = c["Ks"] * y0[0] * y0[3]
    prob = ResidualProblem(residual, y0, z0, (0.0, 180.0), jac_z=jac_z, jac_y=jac_y, jac_t=lambda t, y, z: np.zeros(6),
                           names=[f"y{i}" for i in range(1, 6)],
                           z_names=[f"y{i}'" for i in range(1, 6)] + ["y6"])
    y_ref = np.array([0.1150794920661702, 0.1203831471567715e-2, 0.1611562887407974, 0.3656156421249283e-3,
                      0.1708010885264404e-1])
    z_ref = np.full(6, np.nan)
    z_ref[5] = 0.4873531310307455e-2
    return TestProblem("chemakzo", prob, np.array([0.0, 180.0]), y_ref, f"{_BARI}, problem CHEMAKZO", z_ref=z_ref,
                       rtol=1e-6, atol=1e-10)
