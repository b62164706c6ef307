"""Ring-pressure histories: validation, exact ring averages, closed-form force and impulse."""
import numpy as np
import pytest
from scipy import integrate

from models.load_transfer.sources import (
    RingPressureHistory,
    analytic_ring_history,
    exact_force,
    exact_impulse,
)


def _hist(**kw):
    base = dict(time=[0.0, 1.0], radial_edges=[0.0, 0.5, 1.0], pressure=[[1.0, 2.0], [3.0, 4.0]])
    base.update(kw)
    return RingPressureHistory(**base)


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(time=[1.0, 0.0]), "time"),
        (dict(time=[0.0, 0.0]), "time"),
        (dict(time=[0.0, np.nan]), "time"),
        (dict(radial_edges=[0.0, 1.0, 0.5]), "radial_edges"),
        (dict(radial_edges=[-0.1, 0.5, 1.0]), "radial_edges"),
        (dict(pressure=[[1.0, 2.0]]), "pressure"),
        (dict(pressure=[[1.0, np.inf], [0.0, 0.0]]), "pressure"),
        (dict(shear=np.zeros((3, 2))), "shear"),
        (dict(unloaded_ends=True), "pressure"),
    ],
)
def test_history_validation_names_the_field(kw, field):
    with pytest.raises(ValueError, match=field):
        _hist(**kw)


def test_history_is_read_only_and_force_uses_ring_areas():
    h = _hist()
    with pytest.raises(ValueError):
        h.pressure[0, 0] = 9.0
    A = np.pi * np.array([0.25, 0.75])
    np.testing.assert_allclose(h.ring_areas(), A, rtol=1e-15)
    np.testing.assert_allclose(h.force(), [1 * A[0] + 2 * A[1], 3 * A[0] + 4 * A[1]], rtol=1e-15)


@pytest.mark.parametrize("n_rings", [1, 7, 40])
def test_parabolic_ring_averages_are_exact(n_rings):
    R = 0.8
    h = analytic_ring_history(r_max=R, n_rings=n_rings, profile="parabolic", p0=2.5e5)
    r = h.radial_edges
    for i in range(n_rings):
        num, _ = integrate.quad(lambda s: 2.5e5 * (1 - s * s / R**2) * 2 * np.pi * s, r[i], r[i + 1], epsabs=0, epsrel=1e-13)
        assert h.pressure[0, i] == pytest.approx(num / h.ring_areas()[i], rel=1e-13)
    assert h.force()[0] == pytest.approx(np.pi * 2.5e5 * R**2 / 2, rel=1e-14)
    assert exact_force("parabolic", 2.5e5, R) == pytest.approx(np.pi * 2.5e5 * R**2 / 2, rel=1e-15)


def test_parabolic_profile_radius_inside_the_map_is_clipped_at_zero():
    h = analytic_ring_history(r_max=1.0, n_rings=9, profile="parabolic", p0=1.0, profile_radius=0.55)
    assert np.all(h.pressure >= 0.0)
    assert h.force()[0] == pytest.approx(np.pi * 0.55**2 / 2, rel=1e-13)
    assert exact_force("parabolic", 1.0, 0.55, r_max=1.0) == pytest.approx(np.pi * 0.55**2 / 2, rel=1e-15)


def test_pulse_knots_and_impulses():
    tri = analytic_ring_history(r_max=1.0, n_rings=4, p0=3.0, pulse="triangular", pulse_times=(0.1, 0.4, 0.9), amplitude=2.0)
    np.testing.assert_array_equal(tri.time, [0.1, 0.4, 0.9])
    np.testing.assert_array_equal(tri.pressure[:, 0], [0.0, 6.0, 0.0])
    rect = analytic_ring_history(r_max=1.0, n_rings=4, p0=3.0, pulse="rectangular", pulse_times=(0.2, 0.7), unloaded_ends=True)
    np.testing.assert_array_equal(rect.time, [0.2, 0.2, 0.7, 0.7])
    np.testing.assert_array_equal(rect.pressure[:, 1], [0.0, 3.0, 3.0, 0.0])
    for h, pulse, times, amp in ((tri, "triangular", (0.1, 0.4, 0.9), 2.0), (rect, "rectangular", (0.2, 0.7), 1.0)):
        J = np.trapezoid(h.force(), h.time)
        assert J == pytest.approx(exact_impulse("uniform", 3.0, 1.0, pulse, times, amp), rel=1e-14)
    assert exact_impulse("uniform", 3.0, 1.0, "triangular", (0.1, 0.4, 0.9), 2.0) == pytest.approx(3 * np.pi * 2 * 0.4, rel=1e-15)


def test_analytic_input_errors():
    with pytest.raises(ValueError, match="profile"):
        analytic_ring_history(r_max=1.0, n_rings=3, p0=1.0, profile="cubic")
    with pytest.raises(ValueError, match="pulse_times"):
        analytic_ring_history(r_max=1.0, n_rings=3, p0=1.0, pulse="triangular", pulse_times=(0.0, 1.0))
    with pytest.raises(ValueError, match="n_rings"):
        analytic_ring_history(r_max=1.0, n_rings=0, p0=1.0)
    with pytest.raises(ValueError, match="pressure"):  # a constant pulse has loaded ends
        analytic_ring_history(r_max=1.0, n_rings=3, p0=1.0, unloaded_ends=True)
