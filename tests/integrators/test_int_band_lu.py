"""The banded LU of ROS2's compiled loop (``_ros2_loop.band_factor``/``band_solve``) against
scipy.linalg.solve_banded and a dense solve at random well-conditioned bands: the narrow
kernel (kl, ku <= 2), the generic one without interchanges and the fallback with partial
pivoting; and the W-method variant (``reuse_steps``): order 2 with one Jacobian for the
whole run (ROS2's order conditions do not involve the matrix in place of J)."""
import math

import numpy as np
import pytest
from scipy.linalg import solve_banded

from models.integrators import ODEProblem, get, get_problem
from models.integrators._ros2_loop import GAMMA, _band_factor_pivoting, band_factor, band_solve

N = 40


def _band_jacobian(kl, ku, rng, dominant):
    """A random J with lower/upper bandwidths (kl, ku), entries outside the band left random
    (the factorisation must not read them), and the mask of the band. dominant: stiff decay on
    the diagonal, I - 0.3 J without interchanges; else M = I - J with O(1) entries (partial
    pivoting interchanges rows), drawn again until cond(M) < 1e4."""
    offset = np.subtract.outer(np.arange(N), np.arange(N))
    inside = (offset <= kl) & (offset >= -ku)
    for _ in range(50):
        J = rng.normal(size=(N, N))
        if dominant:
            J[offset == 0] = -(kl + ku + 1.0) - rng.uniform(0.5, 2.0, N)
            return J, inside
        if np.linalg.cond(np.where(inside, np.eye(N) - J, 0.0)) < 1e4:
            return J, inside
    raise AssertionError("no well-conditioned band drawn")  # pragma: no cover


def _factor(J, gamma_h, kl, ku):
    AB = np.zeros((N, max(2 * kl + ku + 1, 5)))
    piv = np.zeros(N, dtype=np.int64)
    dinv = np.zeros(N)
    dmin, dmax, jsum = band_factor(J, gamma_h, AB, piv, dinv, kl, ku)
    return AB, piv, dinv, dmin, dmax, jsum


def _banded_rows(M, kl, ku):
    """M in scipy's (l + u + 1, n) diagonal-ordered form."""
    ab = np.zeros((kl + ku + 1, N))
    for d in range(-kl, ku + 1):
        ab[ku - d, max(0, d):N + min(0, d)] = np.diagonal(M, d)
    return ab


@pytest.mark.parametrize("kl, ku", [(1, 1), (2, 2), (0, 2), (2, 1), (3, 2), (4, 3), (1, 5)])
@pytest.mark.parametrize("dominant", [True, False])
def test_band_lu_solves_as_scipy_and_dense(kl, ku, dominant):
    rng = np.random.default_rng(100 * kl + 10 * ku + dominant)
    J, inside = _band_jacobian(kl, ku, rng, dominant)
    gamma_h = 0.3 if dominant else 1.0
    M = np.where(inside, np.eye(N) - gamma_h * J, 0.0)
    assert np.linalg.cond(M) < 1e4  # well conditioned: the comparisons below are to round-off
    AB, piv, dinv, dmin, dmax, jsum = _factor(J, gamma_h, kl, ku)
    narrow = kl <= 2 and ku <= 2
    if dominant or kl == 0:  # (no entry below the diagonal: nothing to interchange)
        assert piv[0] == (-2 if narrow else -1)  # factorised without interchanges
    else:
        assert piv[0] >= 0  # partial pivoting was needed: the fallback ran
    assert math.isfinite(jsum) and dmin > 0 and dmax >= dmin
    for _ in range(2):  # the factors serve several right-hand sides
        b = rng.normal(size=N)
        x = b.copy()
        band_solve(AB, piv, dinv, x, kl, ku)
        x_scipy = solve_banded((kl, ku), _banded_rows(M, kl, ku), b)
        x_dense = np.linalg.solve(M, b)
        scale = np.max(np.abs(x_dense))
        assert np.max(np.abs(x - x_scipy)) < 1e-12 * scale
        assert np.max(np.abs(x - x_dense)) < 1e-12 * scale


@pytest.mark.parametrize("kl, ku", [(2, 2), (3, 2)])
def test_without_interchanges_the_arithmetic_is_partial_pivotings(kl, ku):
    """Where partial pivoting interchanges nothing, the LU without interchanges performs the
    same operations in the same order: identical factors, bit for bit; the generic solve too
    (the narrow one fuses multiply-adds: equal to round-off)."""
    rng = np.random.default_rng(7)
    J, _ = _band_jacobian(kl, ku, rng, dominant=True)
    AB, piv, dinv, *_ = _factor(J, 0.3, kl, ku)
    assert piv[0] < 0
    ABp = np.zeros((N, max(2 * kl + ku + 1, 5)))
    pivp = np.zeros(N, dtype=np.int64)
    dinvp = np.zeros(N)
    _band_factor_pivoting(J, 0.3, ABp, pivp, dinvp, kl, ku)
    assert np.array_equal(pivp, np.arange(N))  # partial pivoting chose every diagonal
    assert np.array_equal(dinv, dinvp)
    b = rng.normal(size=N)
    x, xp = b.copy(), b.copy()
    band_solve(AB, piv, dinv, x, kl, ku)
    band_solve(ABp, pivp, dinvp, xp, kl, ku)
    if piv[0] == -1:
        assert np.array_equal(x, xp)
    else:
        assert np.max(np.abs(x - xp)) <= 1e-14 * np.max(np.abs(xp))


def test_a_singular_band_shows_a_zero_pivot_and_a_non_finite_jacobian_a_non_finite_sum():
    J = np.zeros((N, N))
    J[5, 5] = 1.0 / 0.5  # M[5, 5] = 1 - 0.5 * 2 = 0, nothing below it in column 5
    _, _, _, dmin, _, jsum = _factor(J, 0.5, 2, 2)
    assert dmin == 0.0 and jsum == 2.0
    J[7, 8] = np.nan
    assert not math.isfinite(_factor(J, 0.1, 2, 2)[5])


def test_w_variant_keeps_order_two_with_one_jacobian_for_the_whole_run():
    """reuse_steps large and h held fixed (h_max = h0, any growth held): J and the LU of M from
    t = 0 serve every step, and the global error still falls as h^2 (1D Brusselator, 8 states,
    banded, t in [0, 1]; reference scipy Radau at 1e-12). A stage that needed the exact J
    would show order 1 here."""
    ode = get_problem("bruss1d", n_points=4).problem
    prob = ODEProblem(ode.rhs, ode.y0, (0.0, 1.0), jac=ode.jac, autonomous=True, jac_band=ode.jac_band,
                      inplace=ode.inplace)
    ref = get("scipy_radau")(rtol=1e-12, atol=1e-12).solve(prob, [0.0, 1.0]).y[-1]
    errs = []
    for n_steps in (80, 160, 320):
        h = 1.0 / n_steps
        sol = get("ros2_adaptive")(rtol=1e3, atol=1e3, h0=h, h_max=h, loop="compiled", reuse_steps=10**6,
                                   hold_growth=1e9).solve(prob, [0.0, 1.0])
        assert sol.success
        assert sol.stats.n_steps == n_steps and sol.stats.njev <= 2 and sol.stats.nlu <= 2
        errs.append(np.max(np.abs(sol.y[-1] - ref)))
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(np.abs(orders - 2.0) < 0.1), orders


def test_w_variant_options_are_checked():
    tp = get_problem("bruss1d", n_points=4)
    with pytest.raises(ValueError, match="compiled"):
        get("ros2_adaptive")(reuse_steps=5).solve(tp.problem, tp.t_eval)
    for bad in ({"reuse_steps": -1}, {"reuse_steps": 2.5}, {"hold_growth": 0.9}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            get("ros2_adaptive")(loop="compiled", **bad).solve(tp.problem, tp.t_eval)
