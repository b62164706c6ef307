"""Impacts against closed forms and rigid-body theory; Hertz constants; bad input."""
import math

import numpy as np
import pytest
from scipy.integrate import quad

from models.dem import ContactLaw, DEMInputError, DEMSystem, Material, binary_impact, elastic_reference
from models.dem.closed_forms import HERTZ_TIME_INTEGRAL

GLASS = Material(6.3e10, 0.23, 2500.0)


def test_hertz_time_integral():
    val, _ = quad(lambda x: (1 - x ** 2.5) ** -0.5, 0, 1)
    assert HERTZ_TIME_INTEGRAL == pytest.approx(val, rel=1e-9)


@pytest.mark.parametrize("integrator", ["verlet", "velocity_verlet", "leapfrog"])
@pytest.mark.parametrize("pair", [False, True])
def test_hertz_impact_closed_form(integrator, pair):
    law = ContactLaw("hertz")
    m2, R2 = (GLASS, 0.003) if pair else (None, None)
    r = binary_impact(GLASS, 0.005, m2, R2, v_n=1.0, law=law, integrator=integrator, steps_per_contact=400)
    ref, _ = elastic_reference(GLASS, 0.005, m2, R2, 1.0, law)
    assert r.duration == pytest.approx(ref.duration, rel=1e-5)
    assert r.max_overlap == pytest.approx(ref.max_overlap, rel=1e-5)
    assert r.max_force == pytest.approx(ref.max_force, rel=1e-5)
    assert r.restitution == pytest.approx(1.0, abs=1e-6)
    if pair:
        # velocity Verlet and leapfrog update velocities from forces that cancel exactly; position
        # Verlet differences positions: its round-off scale is eps |x| / (v h)
        scale = np.finfo(float).eps * 0.008 / (1.0 * r.dt)
        assert r.momentum_error < (10 * scale if integrator == "verlet" else 1e-14)


def test_linear_spring_rebound():
    law = ContactLaw("linear", k_n=5e3)
    r = binary_impact(GLASS, 0.005, None, None, v_n=2.0, law=law)
    m = GLASS.density * 4 / 3 * math.pi * 0.005 ** 3
    assert r.duration == pytest.approx(math.pi / math.sqrt(5e3 / m), rel=1e-4)
    assert r.v_n_rebound == pytest.approx(2.0, rel=1e-6)


@pytest.mark.parametrize("theta", [45.0, 70.0])
def test_oblique_sliding_theory(theta):
    mu = 0.1
    law = ContactLaw("hertz_mindlin", restitution=0.8, tangential="mindlin", friction=mu)
    v_t = math.tan(math.radians(theta))
    r = binary_impact(GLASS, 0.005, None, None, v_n=1.0, v_t=v_t, law=law, steps_per_contact=500)
    e = r.restitution
    assert r.v_t_rebound / v_t == pytest.approx(1 - mu * (1 + e) / math.tan(math.radians(theta)), rel=1e-3)
    assert np.linalg.norm(r.omega1) == pytest.approx(2.5 * mu * (1 + e) / 0.005, rel=2e-3)


def test_bad_inputs_name_value_and_limit():
    soft = Material(1e7, 0.3, 2500.0)
    with pytest.raises(DEMInputError, match="Poisson ratio must lie in \\(-1, 0.5\\), got 0.5"):
        Material(1e7, 0.5, 2500.0)
    with pytest.raises(DEMInputError, match="E: must be finite and > 0, got -1"):
        Material(-1.0, 0.3, 2500.0)
    with pytest.raises(DEMInputError, match="density"):
        Material(1e7, 0.3, 0.0)
    law = ContactLaw("hertz")
    with pytest.raises(DEMInputError, match="radius: must be finite and > 0"):
        DEMSystem([0.01, -0.01], [[0, 0, 0], [1, 0, 0]], soft, law, 1e-6)
    with pytest.raises(DEMInputError, match="initial overlap of particles 0 and 1 is 0.1 x .*limit max_initial_overlap=0.02"):
        DEMSystem([0.01, 0.01], [[0, 0, 0], [0.019, 0, 0]], soft, law, 1e-6)
    with pytest.raises(DEMInputError, match="dt: .* exceeds 0.1 x the estimated contact time"):
        DEMSystem([0.01], [[0, 0, 0]], soft, law, 1e-2, v_ref=1.0)
    DEMSystem([0.01], [[0, 0, 0]], soft, law, 1e-2, v_ref=1.0, allow_large_dt=True)  # explicit override
