"""The compiled in-place fields of the stiff test problems equal their numpy rhs and jac."""
import numpy as np
import pytest

from models.integrators import get_problem


@pytest.mark.parametrize("name", ["hires", "rober", "pollu", "bruss1d"])
def test_kernels_equal_the_numpy_field_at_random_states(name):
    ode = get_problem(name).problem
    fast = ode.inplace
    assert fast is not None and fast.jac is not None
    rng = np.random.default_rng(11)
    n = ode.n
    for _ in range(5):
        y = np.abs(ode.y0) * rng.uniform(0.5, 1.5, n) + rng.uniform(0.0, 0.1, n)
        out = np.full(n, np.nan)
        fast.rhs(0.3, y, out, fast.data)
        ref = ode.rhs(0.3, y)
        np.testing.assert_allclose(out, ref, rtol=1e-13, atol=1e-13 * np.max(np.abs(ref)))
        J = np.zeros((n, n))
        fast.jac(0.3, y, out, J, fast.data)
        Jref = ode.jac(0.3, y)
        np.testing.assert_allclose(J, Jref, rtol=1e-13, atol=1e-13 * np.max(np.abs(Jref)))
