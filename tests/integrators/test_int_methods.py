"""ROS2 (fixed/adaptive), Jacobian providers, residual-form reduction, wrappers: model layer."""
from __future__ import annotations

import math

import numpy as np
import pytest

from models.integrators import get
from models.integrators.base import IntegratorFailure, ODEProblem, ResidualProblem
from models.integrators.jacobians import FiniteDifferenceJacobian
from models.integrators.problems import get_problem
from models.integrators.residual import ReducedField
from models.integrators.rosenbrock import GAMMA


def _ros2_one_step(z: complex) -> complex:
    """Stability function of ROS2 from the seed's formulas, by hand (y' = lam y, y = 1, z = h lam)."""
    g = GAMMA
    k1 = g * z / (1 - g * z)
    k2 = (g * z * (1 + k1 / g) - 2 * k1) / (1 - g * z)
    return 1 + (3 * k1 + k2) / (2 * g)


def test_int_one_step_matches_stability_function():
    for lam, h in [(-1.0, 0.1), (-50.0, 0.3), (2.0, 0.05)]:
        p = ODEProblem(lambda t, y, lam=lam: lam * y, [1.0], (0.0, h), jac=lambda t, y, lam=lam: np.array([[lam]]))
        sol = get("ros2")(n_steps=1).solve(p)
        assert sol.y[-1, 0] == pytest.approx(_ros2_one_step(lam * h).real, rel=1e-14)


def test_int_stability_function_order2_and_L_stable():
    # R(z) - e^z = O(z^3): the ratio to z^3 tends to a constant
    ratios = [abs(_ros2_one_step(z) - np.exp(z)) / abs(z) ** 3 for z in (1e-1, 1e-2, 1e-3)]
    assert ratios[2] == pytest.approx(ratios[1], rel=0.1)
    assert abs(_ros2_one_step(1e-3) - np.exp(1e-3)) / 1e-3 ** 2 < 1e-2  # no z^2 error term
    assert abs(_ros2_one_step(-1e8)) < 1e-7  # L-stable: R(-inf) = 0


def test_int_fixed_step_observed_order_two():
    tp = get_problem("linear")
    errs = []
    for n in (200, 400):
        sol = get("ros2")(n_steps=n).solve(tp.problem, tp.t_eval)
        errs.append(abs(sol.y[-1, 0] - math.exp(-1.0)))
    assert math.log(errs[0] / errs[1]) / math.log(2.0) == pytest.approx(2.0, abs=0.1)


def test_int_fixed_step_last_step_shortened():
    tp = get_problem("linear")
    sol = get("ros2")(h=0.3).solve(tp.problem)
    assert sol.stats.n_steps == 4 and sol.t[-1] == 1.0  # 0.3, 0.6, 0.9, then 0.1
    y = 1.0
    for h in (0.3, 0.3, 0.3, 0.1):
        y *= _ros2_one_step(-h).real
    assert sol.y[-1, 0] == pytest.approx(y, rel=1e-13)


def test_int_dropping_f_t_loses_an_order_in_the_stiff_regime():
    tp = get_problem("prothero_robinson", lam=-1e4, n_out=11)
    err = {}
    for mode in ("auto", "none"):
        e = []
        for h in (0.1, 0.05):
            sol = get("ros2")(h=h, time_derivative=mode).solve(tp.problem, tp.t_eval)
            e.append(np.max(np.abs(sol.y - tp.y_ref)))
        err[mode] = e
    p_kept = math.log(err["auto"][0] / err["auto"][1]) / math.log(2)
    p_dropped = math.log(err["none"][0] / err["none"][1]) / math.log(2)
    assert p_kept > 1.8 and p_dropped < 1.2
    assert err["none"][1] > 10 * err["auto"][1]


def test_int_adaptive_rejects_retries_and_meets_tolerance():
    tp = get_problem("linear", lam=-3.0, n_out=5)
    sol = get("ros2_adaptive")(rtol=1e-6, atol=1e-10, h0=0.5).solve(tp.problem, tp.t_eval)
    assert sol.success and sol.stats.n_rejected >= 1
    assert sol.stats.n_steps == sol.stats.n_accepted + sol.stats.n_rejected
    assert np.max(np.abs(sol.y - tp.y_ref)) < 1e-5
    np.testing.assert_array_equal(sol.t, tp.t_eval)


@pytest.mark.parametrize("kernel", ["lapack", "auto"])
def test_int_adaptive_no_growth_right_after_rejection(monkeypatch, kernel):
    from models.integrators import rosenbrock

    hs = []
    if kernel == "lapack":
        orig = rosenbrock._ROS2Core._attempt

        def spy(self, prob, stats, t, y, h, *a):
            hs.append((stats.n_rejected, h))
            return orig(self, prob, stats, t, y, h, *a)

        monkeypatch.setattr(rosenbrock._ROS2Core, "_attempt", spy)
    else:
        orig = rosenbrock.ROS2Adaptive._attempt_small

        def spy(small, prob, stats, t, y, ay, h, *a):
            hs.append((stats.n_rejected, h))
            return orig(small, prob, stats, t, y, ay, h, *a)

        monkeypatch.setattr(rosenbrock.ROS2Adaptive, "_attempt_small", staticmethod(spy))
    tp = get_problem("vdpol")
    sol = get("ros2_adaptive")(rtol=1e-3, atol=1e-3, kernel=kernel).solve(tp.problem, tp.t_eval)
    assert sol.stats.n_rejected > 0
    # hs[i][0] = rejections before attempt i. Attempt i-1 rejected and attempt i (the retry)
    # accepted: attempt i+1 must not use a larger step than the accepted retry.
    seen = 0
    for i in range(1, len(hs) - 1):
        if hs[i][0] > hs[i - 1][0] and hs[i + 1][0] == hs[i][0]:
            assert hs[i + 1][1] <= hs[i][1] * (1 + 1e-12)
            seen += 1
    assert seen > 0
    assert len(hs) == sol.stats.n_steps


@pytest.mark.parametrize("name", ["hires", "pollu", "rober", "orego"])
def test_int_compiled_small_kernel_matches_lapack(name):
    """The compiled stages (n <= 32) are the same method: same steps, results to round-off."""
    tp = get_problem(name)
    a = get("ros2_adaptive")(rtol=1e-4, atol=1e-8, kernel="lapack").solve(tp.problem, tp.t_eval)
    b = get("ros2_adaptive")(rtol=1e-4, atol=1e-8, kernel="auto").solve(tp.problem, tp.t_eval)
    assert a.success and b.success
    assert (a.stats.n_steps, a.stats.n_rejected, a.stats.nlu) == (b.stats.n_steps, b.stats.n_rejected, b.stats.nlu)
    # round-off differences only: a thousandth of the tolerance the solve was asked for
    scale = 1e-8 + 1e-4 * np.abs(a.y)
    assert np.max(np.abs(b.y - a.y) / scale) < 1e-3


def test_int_compiled_kernel_reports_a_singular_matrix():
    J = np.zeros((2, 2))
    from models.integrators import _ros2_small

    LU, piv = np.empty((2, 2)), np.empty(2, dtype=np.int64)
    gh = 1.0  # M = I - J*gh with J = I  -> M = 0: singular
    _, dmin, _ = _ros2_small.stage1(np.eye(2), gh, 1.0, np.ones(2), np.zeros(2), False, LU, piv)
    assert dmin == 0.0


def test_int_per_state_tolerances_by_name():
    tp = get_problem("hires")
    loose = get("ros2_adaptive")(rtol=1e-3, atol=1e-7).solve(tp.problem, tp.t_eval)
    tight = get("ros2_adaptive")(rtol=1e-3, atol=1e-7, rtol_by_name={"y8": 1e-6}).solve(tp.problem, tp.t_eval)
    assert tight.stats.n_steps > loose.stats.n_steps
    with pytest.raises(ValueError, match="unknown state 'y99'"):
        get("ros2_adaptive")(atol_by_name={"y99": 1.0}).solve(tp.problem, tp.t_eval)


def test_int_field_failure_is_fatal_not_rescued():
    bad_calls = []

    def rhs(t, y):
        if t > 0.5:
            bad_calls.append(t)
            return np.array([np.nan])
        return -y

    p = ODEProblem(rhs, [1.0], (0.0, 1.0), jac=lambda t, y: np.array([[-1.0]]))
    sol = get("ros2_adaptive")(rtol=1e-4).solve(p, [0.0, 0.25, 1.0])
    assert not sol.success and sol.failure_reason.startswith("field:")
    assert len(bad_calls) == 1  # never retried with a smaller h
    assert len(sol.t) == 2  # the outputs reached before the failure are kept


def test_int_limits_h_min_and_max_steps():
    tp = get_problem("rober")
    sol = get("ros2_adaptive")(rtol=1e-4, atol=1e-10, max_steps=50).solve(tp.problem, tp.t_eval)
    assert not sol.success and sol.failure_reason.startswith("max_steps:")
    sol = get("ros2_adaptive")(rtol=1e-8, atol=1e-14, h_min=1e-2, h0=1.0).solve(tp.problem, tp.t_eval)
    assert not sol.success and sol.failure_reason.startswith("step_size:")


def test_int_singular_lu_is_fatal():
    # J = 1/(gamma h) makes I - gamma h J singular
    h = 0.1
    lam = 1.0 / (GAMMA * h)
    p = ODEProblem(lambda t, y: lam * y, [1.0], (0.0, 1.0), jac=lambda t, y: np.array([[lam]]))
    sol = get("ros2")(h=h).solve(p)
    assert not sol.success and sol.failure_reason.startswith("lu:")


@pytest.mark.parametrize("name", ["hires", "pollu", "rober", "orego", "vdpol"])
def test_int_analytic_jacobians_match_central_differences(name):
    tp = get_problem(name)
    ode = tp.problem
    rng = np.random.default_rng(1)
    y = np.abs(ode.y0) + 0.01 * rng.random(ode.n)
    fd = FiniteDifferenceJacobian(ode.rhs, ode.n, scales=np.full(ode.n, 1e-3), delta=1e-6)
    J, Jfd = ode.jac(0.0, y), fd.jac(0.0, y)
    scale = np.max(np.abs(J), axis=1, keepdims=True) + 1e-300
    assert np.max(np.abs(J - Jfd) / scale) < 1e-5


def test_int_fd_consistency_control_is_reported():
    f = lambda t, y: np.array([np.sin(1e3 * y[0])])  # noqa: E731  (strongly curved field)
    fd = FiniteDifferenceJacobian(f, 1, delta=1e-2, control=True, control_tol=1e-8, max_refine=2)
    fd.jac(0.0, np.array([0.3]))
    d = fd.diagnostics()
    assert d["fd_controls"] == 1 and d["fd_refinements"] == 2 and d["fd_control_failures"] == 1
    assert d["fd_max_discrepancy"] > 1e-8


def test_int_residual_reduced_field_and_sensitivity_jacobian():
    tp = get_problem("dae_index1")
    rf = ReducedField(tp.problem, jacobian="sensitivity")
    ode = rf.to_ode()
    t, y = 0.7, np.array([0.4, 0.2])
    np.testing.assert_allclose(ode.rhs(t, y), [-0.4 + math.cos(t), 0.4], rtol=1e-12)
    np.testing.assert_allclose(ode.jac(t, y), [[-1.0, 0.0], [1.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(ode.f_t(t, y), [-math.sin(t), 0.0], atol=1e-12)
    fd = ReducedField(tp.problem, jacobian="fd").to_ode()
    np.testing.assert_allclose(fd.jac(t, y), [[-1.0, 0.0], [1.0, 0.0]], atol=1e-7)
    np.testing.assert_allclose(fd.f_t(t, y), [-math.sin(t), 0.0], atol=1e-7)


def test_int_newton_failure_names_the_variable():
    def residual(t, y, z):
        return np.array([z[0] + y[0], z[1] ** 2 + 1.0])  # no real root for the algebraic z[1]

    p = ResidualProblem(residual, [1.0], [0.0, 0.5], (0.0, 1.0), z_names=["y'", "w"], max_newton_iter=8)
    with pytest.raises(IntegratorFailure) as exc:
        ReducedField(p).to_ode()
    assert exc.value.kind == "newton" and "variable w" in exc.value.reason and "cond(R_z)" in exc.value.reason
    sol = get("ros2_adaptive")(jacobian="sensitivity").solve(p)  # through solve: a failed result, no crash
    assert not sol.success and sol.failure_reason.startswith("newton:") and sol.t.size == 0


def test_int_rlc6_reduced_field_is_the_circuit_ode():
    from models.integrators.problems.analytic import rlc6_matrices

    tp = get_problem("rlc6")
    A, b = rlc6_matrices(10.0, 1e-3, 1e-6, 5.0, 2e-3, 4.7e-6, 1.0)
    ode = ReducedField(tp.problem, jacobian="sensitivity").to_ode()
    y = np.array([0.01, 0.3, -0.02, 0.1])
    np.testing.assert_allclose(ode.rhs(0.0, y), A @ y + b, rtol=1e-12)
    np.testing.assert_allclose(ode.jac(0.0, y), A, rtol=1e-10)


@pytest.mark.parametrize("name", ["scipy_radau", "scipy_bdf", "scipy_lsoda", "cvode_bdf", "ros2_adaptive"])
def test_int_wrappers_agree_with_matrix_exponential(name):
    tp = get_problem("rlc6")
    rtol = 1e-5 if name == "ros2_adaptive" else 1e-7  # order 2: keep the step count small
    sol = get(name)(rtol=rtol, atol=1e-10).solve(tp.problem, tp.t_eval)
    assert sol.success, sol.failure_reason
    assert np.max(np.abs(sol.y - tp.y_ref)) / np.max(np.abs(tp.y_ref)) < 1e-4
    assert sol.z is not None and sol.z.shape == (len(tp.t_eval), 7)
    assert sol.stats.n_residual_solves > 0 and sol.stats.nfev > 0


def test_int_cvode_failure_is_a_result():
    tp = get_problem("rober")
    sol = get("cvode_bdf")(rtol=1e-8, atol=1e-14, max_num_steps=20).solve(tp.problem, tp.t_eval)
    assert not sol.success and sol.failure_reason.startswith("solver:")


def test_int_unknown_option_is_rejected():
    with pytest.raises(ValueError, match="unknown option"):
        get("ros2_adaptive")(rtoll=1e-3)


def test_int_chemakzo_analytic_residual_partials_match_differences():
    from models.integrators.jacobians import fd_residual_partials

    p = get_problem("chemakzo").problem
    y = np.array([0.3, 0.0011, 0.05, 0.004, 0.01])
    z = np.array([0.01, -0.002, 0.003, 0.0, 0.001, 115.83 * 0.3 * 0.004])
    Rz, Ry, Rt = fd_residual_partials(p.residual, 1.0, y, z, delta=1e-7)
    np.testing.assert_allclose(p.jac_z(1.0, y, z), Rz, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(p.jac_y(1.0, y, z), Ry, rtol=1e-6, atol=1e-7 * np.max(np.abs(Ry)))
    np.testing.assert_allclose(p.jac_t(1.0, y, z), Rt, atol=1e-12)
