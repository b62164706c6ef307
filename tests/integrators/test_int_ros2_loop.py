"""ros2_adaptive(loop="compiled"): the whole step loop in numba on the problem's compiled field
gives the Python loop's steps and results (same method), dense and banded; failures are results.
One problem (bruss1d, 100 states) for every test: the loop compiles once per field and process."""
import dataclasses

import numpy as np
import pytest
from numba import njit

from models.integrators import ODEProblem, get, get_problem


def _on_kernels(tp):
    """The problem with Python rhs/jac calling its compiled field (the compiled loop's numbers)."""
    ode = tp.problem
    rhs, jac = ode.inplace.python_callables(ode.n)
    return dataclasses.replace(tp, problem=ODEProblem(rhs, ode.y0, ode.t_span, jac=jac, autonomous=True,
                                                      names=ode.names, jac_band=ode.jac_band, inplace=ode.inplace))


@pytest.mark.parametrize("kernel", ["auto", "lapack"])  # banded LU with pivoting / dense LU
def test_compiled_loop_takes_the_python_loops_steps(kernel):
    tp = _on_kernels(get_problem("bruss1d"))
    sols = {loop: get("ros2_adaptive")(rtol=1e-3, atol=1e-3, kernel=kernel, loop=loop).solve(tp.problem, [0.0, 5.0, 10.0])
            for loop in ("python", "compiled")}
    py, cc = sols["python"], sols["compiled"]
    assert py.success and cc.success
    for key in ("n_steps", "n_accepted", "n_rejected", "nfev", "njev", "nlu"):
        assert getattr(cc.stats, key) == getattr(py.stats, key), key
    assert cc.stats.n_rejected > 0  # the rejection branch ran
    np.testing.assert_allclose(cc.y, py.y, rtol=1e-12, atol=1e-14)
    assert np.array_equal(cc.t, [0.0, 5.0, 10.0])
    assert "t_rhs" in cc.diagnostics["not_reported"]


def test_a_non_finite_field_in_the_compiled_loop_is_a_failed_result():
    tp = get_problem("bruss1d")
    ode = tp.problem
    y0 = ode.y0.copy()
    y0[7] = np.nan
    bad = ODEProblem(ode.rhs, y0, ode.t_span, jac=ode.jac, autonomous=True, jac_band=ode.jac_band, inplace=ode.inplace)
    sol = get("ros2_adaptive")(loop="compiled").solve(bad, [0.0, 10.0])
    assert not sol.success and sol.failure_reason.startswith("field:") and "non-finite" in sol.failure_reason
    assert sol.t.size == 1  # the output at t0 was written


def test_max_steps_in_the_compiled_loop_keeps_the_outputs_reached():
    tp = get_problem("bruss1d")
    sol = get("ros2_adaptive")(rtol=1e-6, atol=1e-6, max_steps=50, loop="compiled").solve(tp.problem, [0.0, 0.01, 10.0])
    assert not sol.success and sol.failure_reason.startswith("max_steps:") and sol.t.size >= 1


def test_compiled_loop_needs_a_compiled_field():
    prob = ODEProblem(lambda t, y: -y, [1.0], (0.0, 1.0), jac=lambda t, y: -np.eye(1))
    with pytest.raises(ValueError, match="inplace"):
        get("ros2_adaptive")(loop="compiled").solve(prob, [0.0, 1.0])
    with pytest.raises(ValueError, match="loop"):
        get("ros2_adaptive")(loop="fortran").solve(prob, [0.0, 1.0])


@njit(cache=True)
def _decay_rhs(t, y, out, data):
    """y' = -y, tridiagonal-coupled; data[0][0] = 1: f non-finite after t = 0.5."""
    n = y.shape[0]
    for i in range(n):
        out[i] = -2.0 * y[i] + (y[i - 1] if i > 0 else 0.0) * 0.5
    if data[0][0] == 1.0 and t > 0.5:
        out[2] = np.nan


@njit(cache=True)
def _decay_jac(t, y, fy, out, data):
    """data[0][0] = 2: J non-finite after t = 0.5."""
    n = y.shape[0]
    for i in range(n):
        out[i, i] = -2.0
        if i > 0:
            out[i, i - 1] = 0.5
    if data[0][0] == 2.0 and t > 0.5:
        out[3, 3] = np.inf


@pytest.mark.parametrize("kernel", ["auto", "lapack"])  # banded (band (1, 1) of 6 states) / dense
@pytest.mark.parametrize("mode, reason", [(1.0, "field:"), (2.0, "jacobian:")])
def test_a_field_or_jacobian_going_non_finite_mid_run_names_the_culprit(kernel, mode, reason):
    """The compiled loop checks f and J where a failure shows (LU, error estimate): the reason
    is still the field's or the Jacobian's, at the step where it happened."""
    from models.integrators.base import InPlaceField

    fast = InPlaceField(_decay_rhs, _decay_jac, (np.array([mode]),))
    rhs, jac = fast.python_callables(6)
    prob = ODEProblem(rhs, np.ones(6), (0.0, 1.0), jac=jac, autonomous=True, jac_band=(1, 1), inplace=fast)
    for reuse in (0, 10):  # also with J and the LU held over steps (W-method variant)
        sol = get("ros2_adaptive")(rtol=1e-4, atol=1e-6, kernel=kernel, loop="compiled",
                                   reuse_steps=reuse).solve(prob, [0.0, 0.25, 1.0])
        assert not sol.success and sol.failure_reason.startswith(reason), sol.failure_reason
        t_fail = float(sol.failure_reason.split("t=")[1].split(",")[0])
        assert 0.5 < t_fail < 0.6 if mode == 2.0 else 0.5 <= t_fail < 0.6
        assert sol.t.size == 2  # the output at 0.25 was written
    ok = get("ros2_adaptive")(rtol=1e-4, atol=1e-6, kernel=kernel, loop="compiled").solve(
        dataclasses.replace(prob, inplace=InPlaceField(_decay_rhs, _decay_jac, (np.array([0.0]),))), [0.0, 1.0])
    assert ok.success
