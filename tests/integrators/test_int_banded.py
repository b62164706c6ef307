"""The banded path (ROS2 gbtrf/gbtrs, CVODE band solver) on the 1D Brusselator, and the
work-precision interpolation of the ROS2-vs-CVODE benchmark."""
import math

import numpy as np
import pytest

from harness.families.integrators_wp import at_scd
from models.integrators import get
from models.integrators.base import ODEProblem
from models.integrators.problems import get_problem


@pytest.fixture(scope="module")
def bruss():
    return get_problem("bruss1d")


def _scd(sol, tp):
    return -math.log10(float(np.max(np.abs(sol.y[-1] - tp.y_ref) / np.abs(tp.y_ref))))


def test_bruss_jacobian_is_banded_and_matches_central_differences(bruss):
    ode = bruss.problem
    assert ode.n == 100 and ode.jac_band == (2, 2)
    y = ode.y0 + np.random.default_rng(3).normal(scale=0.1, size=ode.n)
    J = ode.jac(0.0, y)
    Jd = np.column_stack([(ode.rhs(0.0, y + 1e-6 * e) - ode.rhs(0.0, y - 1e-6 * e)) / 2e-6 for e in np.eye(ode.n)])
    assert np.max(np.abs(J - Jd)) < 1e-6 * np.max(np.abs(J))
    i, j = np.nonzero(J)
    assert np.max(np.abs(i - j)) == 2  # nothing outside the declared band


def test_ros2_banded_equals_dense_to_round_off(bruss):
    banded = get("ros2_adaptive")(rtol=1e-4, atol=1e-4).solve(bruss.problem, bruss.t_eval)
    dense = get("ros2_adaptive")(rtol=1e-4, atol=1e-4, kernel="lapack").solve(bruss.problem, bruss.t_eval)
    assert banded.success and dense.success
    assert banded.stats.n_steps == dense.stats.n_steps
    assert np.max(np.abs(banded.y[-1] - dense.y[-1])) < 1e-12 * np.max(np.abs(dense.y[-1]))
    assert _scd(banded, bruss) > 3.0


def test_cvode_band_solver_reaches_the_independent_reference(bruss):
    """CVODE (band LU) at rtol 1e-9 against scipy Radau at 1e-10: two implementations agree."""
    sol = get("cvode_bdf")(rtol=1e-9, atol=1e-9, max_num_steps=100000).solve(bruss.problem, bruss.t_eval)
    assert sol.success
    assert _scd(sol, bruss) > 7.0


def test_bad_band_is_a_clear_error():
    with pytest.raises(ValueError, match="jac_band"):
        ODEProblem(lambda t, y: -y, [1.0, 2.0], (0.0, 1.0), jac_band=(-1, 0))


def test_wall_at_scd_interpolates_in_log_wall():
    scd = [1.0, 2.0, 4.0]
    wall = [10.0 ** (s / 2) for s in scd]  # log10 wall = scd / 2
    assert at_scd(scd, wall, 3.0) == pytest.approx(10.0 ** 1.5)
    assert at_scd(scd, wall, 2.0) == pytest.approx(10.0)
    assert math.isnan(at_scd(scd, wall, 5.0))  # outside the curve: not extrapolated
    assert math.isnan(at_scd([2.0, math.nan], [1.0, 2.0], 2.0))
