"""CVODE with compiled in-place callables (ODEProblem.inplace): the numbers of the Python field,
CVODE's own counters, one solver object re-initialised per solve, failures named as the field's."""
import numba
import numpy as np
import pytest

from models.integrators import ODEProblem, get
from models.integrators.base import InPlaceField


@numba.njit
def _rober_into(t, y, out, data):
    k1, k2, k3 = data[0][0], data[0][1], data[0][2]
    out[0] = -k1 * y[0] + k3 * y[1] * y[2]
    out[1] = k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] * y[1]
    out[2] = k2 * y[1] * y[1]
    if not np.isfinite(out[0] + out[1] + out[2]):
        raise FloatingPointError("non-finite field")


@numba.njit
def _rober_jac_into(t, y, fy, out, data):
    k1, k2, k3 = data[0][0], data[0][1], data[0][2]
    out[0, 0], out[0, 1], out[0, 2] = -k1, k3 * y[2], k3 * y[1]
    out[1, 0], out[1, 1], out[1, 2] = k1, -k3 * y[2] - 2 * k2 * y[1], -k3 * y[1]
    out[2, 0], out[2, 1], out[2, 2] = 0.0, 2 * k2 * y[1], 0.0


K = np.array([0.04, 3.0e7, 1.0e4])


def _rhs(t, y):
    out = np.empty(3)
    _rober_into(t, y, out, (K,))
    return out


def _jac(t, y):
    out = np.empty((3, 3))
    _rober_jac_into(t, y, None, out, (K,))
    return out


@pytest.mark.parametrize("mode", ["stop", "interpolate"])
@pytest.mark.parametrize("with_jac", [True, False])
def test_inplace_equals_the_python_field(mode, with_jac):
    t_eval = np.logspace(-4, 4, 17)
    t_eval[0] = 0.0
    inplace = InPlaceField(_rober_into, _rober_jac_into if with_jac else None, (K,))
    sols = [get("cvode_bdf")(rtol=1e-8, atol=1e-12, output_mode=mode).solve(
        ODEProblem(_rhs, [1.0, 0.0, 0.0], (0.0, 1e4), jac=_jac if with_jac else None, inplace=ip), t_eval)
        for ip in (inplace, None)]
    fast, wrapped = sols
    assert fast.success and wrapped.success
    assert np.array_equal(fast.y, wrapped.y)
    assert fast.stats.nfev == wrapped.stats.nfev > 0 and fast.stats.njev == wrapped.stats.njev > 0
    assert "t_rhs" in fast.diagnostics["not_reported"]


def test_the_solver_object_is_reused_and_reinitialised():
    integ = get("cvode_bdf")(rtol=1e-8, atol=1e-12)
    inplace = InPlaceField(_rober_into, _rober_jac_into, (K,))
    first = integ.solve(ODEProblem(_rhs, [1.0, 0.0, 0.0], (0.0, 10.0), jac=_jac, inplace=inplace), [0.0, 10.0])
    solver = integ._cvode_cache[2]
    again = integ.solve(ODEProblem(_rhs, [1.0, 0.0, 0.0], (0.0, 10.0), jac=_jac, inplace=inplace), [0.0, 10.0])
    assert integ._cvode_cache[2] is solver
    assert np.array_equal(first.y, again.y) and first.stats.nfev == again.stats.nfev  # counters restart too
    other = InPlaceField(_rober_into, _rober_jac_into, (K * 1.0,))  # another data object: another solver
    integ.solve(ODEProblem(_rhs, [1.0, 0.0, 0.0], (0.0, 10.0), jac=_jac, inplace=other), [0.0, 10.0])
    assert integ._cvode_cache[2] is not solver


def test_an_exception_of_the_inplace_field_is_a_failed_result():
    inplace = InPlaceField(_rober_into, None, (K,))
    sol = get("cvode_bdf")().solve(ODEProblem(_rhs, [np.nan, 0.0, 0.0], (0.0, 1.0), inplace=inplace), [0.0, 1.0])
    assert not sol.success and sol.failure_reason.startswith("field:") and "non-finite" in sol.failure_reason


def test_inplace_needs_a_jac_exactly_when_the_problem_has_one():
    with pytest.raises(ValueError, match="inplace"):
        ODEProblem(_rhs, [1.0, 0.0, 0.0], (0.0, 1.0), jac=_jac, inplace=InPlaceField(_rober_into, None, (K,)))
