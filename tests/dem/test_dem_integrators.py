"""Verlet family: order 2 on the harmonic oscillator, one accel call per step, registry names."""
import numpy as np
import pytest

from models.integrators.registry import get
from models.integrators.verlet import STEPPERS, make_stepper

W = 3.0


def _accel(t, x, v):
    return -W * W * x


def _error(name, h, T=2.0):
    st = make_stepper(name, h)
    s = st.run(0.0, np.array([1.0]), np.array([0.0]), _accel, int(round(T / h)))
    return abs(s.x[0] - np.cos(W * s.t)) + abs(s.v[0] + W * np.sin(W * s.t)) / W


@pytest.mark.parametrize("name", sorted(STEPPERS))
def test_global_order_two(name):
    e1, e2 = _error(name, 1e-2), _error(name, 5e-3)
    p = np.log(e1 / e2) / np.log(2.0)
    assert 1.9 < p < 2.1, p


@pytest.mark.parametrize("name", sorted(STEPPERS))
def test_one_accel_per_step_at_new_time(name):
    calls = []

    def acc(t, x, v):
        calls.append(t)
        return -x

    st = make_stepper(name, 0.1)
    s = st.run(0.0, np.ones(2), np.zeros(2), acc, 5)
    assert len(calls) == 6 and st.n_accel == 6
    assert np.allclose(calls, 0.1 * np.arange(6))
    assert s.t == pytest.approx(0.5)


def test_registered_names():
    for name in ("verlet", "velocity_verlet", "leapfrog"):
        assert get(name) is STEPPERS[name]


def test_position_forces_same_trajectory():
    xs = [make_stepper(n, 0.01).run(0.0, np.array([1.0]), np.array([0.5]), _accel, 300).x[0] for n in sorted(STEPPERS)]
    assert np.ptp(xs) < 1e-12


def test_bad_dt():
    with pytest.raises(ValueError, match="dt"):
        make_stepper("verlet", 0.0)
