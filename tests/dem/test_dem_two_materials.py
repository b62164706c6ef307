"""Two-material impacts (pair and elastic wall) against Hertz's closed forms; oblique impacts.

The effective properties are formed here by hand (not with the library's helpers):
1/E* = (1-nu1^2)/E1 + (1-nu2^2)/E2, 1/R* = 1/R1 + 1/R2, 1/m* = 1/m1 + 1/m2, and
K = 4/3 E* sqrt(R*), delta_max = (15 m* v^2 / (16 E* sqrt(R*)))^(2/5), F_max = K delta_max^(3/2),
t_c = 2.94324 delta_max / v (Johnson, Contact Mechanics, 1985, Sec. 11.4).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from models.dem import ContactLaw, DEMInputError, DEMSystem, Material, binary_impact, elastic_reference, incidence_velocity

STEEL = Material(E=210e9, nu=0.29, density=7850.0)
NYLON = Material(E=2.5e9, nu=0.40, density=1140.0)
HERTZ = ContactLaw("hertz")
RTOL = 2e-4  # 200 steps per contact: sampling error of the peak and the interpolated end ~1e-5


def _hertz_by_hand(E1, nu1, E2, nu2, R, m, v):
    Es = 1.0 / ((1 - nu1 ** 2) / E1 + (0.0 if E2 is None else (1 - nu2 ** 2) / E2))
    K = 4.0 / 3.0 * Es * math.sqrt(R)
    d = (15.0 * m * v * v / (16.0 * Es * math.sqrt(R))) ** 0.4
    I = math.sqrt(math.pi) * math.gamma(1.4) / math.gamma(0.9)  # 1.4716...
    return {"duration": 2 * I * d / v, "max_overlap": d, "max_force": K * d ** 1.5}


def _mass(mat, R):
    return mat.density * 4.0 / 3.0 * math.pi * R ** 3


@pytest.mark.parametrize("R1, R2", [(0.005, 0.005), (0.004, 0.007)])
def test_steel_on_nylon_pair_matches_hertz_closed_form(R1, R2):
    v = 1.5
    m1, m2 = _mass(STEEL, R1), _mass(NYLON, R2)
    ref = _hertz_by_hand(STEEL.E, STEEL.nu, NYLON.E, NYLON.nu, R1 * R2 / (R1 + R2), m1 * m2 / (m1 + m2), v)
    r = binary_impact(STEEL, R1, NYLON, R2, v_n=v, law=HERTZ)
    for key in ("duration", "max_overlap", "max_force"):
        assert getattr(r, key) == pytest.approx(ref[key], rel=RTOL), key
    assert r.restitution == pytest.approx(1.0, abs=1e-6)
    assert r.momentum_error < 1e-12
    # centre-of-mass frame, elastic: each body leaves with minus its approach velocity
    assert r.v1[1] == pytest.approx(-m2 / (m1 + m2) * v, rel=1e-6)
    assert r.v2[1] == pytest.approx(m1 / (m1 + m2) * v, rel=1e-6)
    # the default step is the two-material contact time / 200 (not the steel-steel one)
    assert r.dt == pytest.approx(ref["duration"] / 200, rel=1e-12)
    swapped = binary_impact(NYLON, R2, STEEL, R1, v_n=v, law=HERTZ)
    assert swapped.duration == pytest.approx(r.duration, rel=1e-9)


def test_elastic_wall_material_enters_the_reference_and_the_simulation():
    R, v = 0.005, 1.0
    ref_w = _hertz_by_hand(STEEL.E, STEEL.nu, NYLON.E, NYLON.nu, R, _mass(STEEL, R), v)
    ref_rigid = _hertz_by_hand(STEEL.E, STEEL.nu, None, None, R, _mass(STEEL, R), v)
    ref, (Es, Rs, ms) = elastic_reference(STEEL, R, None, None, v, HERTZ, wall_material=NYLON)
    assert ref.duration == pytest.approx(ref_w["duration"], rel=1e-12)
    assert ref.duration > 3 * ref_rigid["duration"]  # a nylon wall is far softer than a rigid one
    r = binary_impact(STEEL, R, v_n=v, law=HERTZ, wall_material=NYLON)
    for key in ("duration", "max_overlap", "max_force"):
        assert getattr(r, key) == pytest.approx(ref_w[key], rel=RTOL), key
    assert r.dt == pytest.approx(ref_w["duration"] / 200, rel=1e-12)  # automatic step from the elastic wall


def test_mixed_material_system_rejects_the_single_material_kernel_and_bad_lists():
    law = ContactLaw("hertz")
    with pytest.raises(DEMInputError, match="numba"):
        DEMSystem([0.005, 0.005], [[0, 0, 0], [0, 0.0101, 0]], [STEEL, NYLON], law, 1e-7, backend="numba")
    with pytest.raises(DEMInputError, match="sequence of 2 Materials"):
        DEMSystem([0.005, 0.005], [[0, 0, 0], [0, 0.0101, 0]], [STEEL], law, 1e-7)
    sys_ = DEMSystem([0.005, 0.005], [[0, 0, 0], [0, 0.0099, 0]], [STEEL, NYLON], law, 1e-7,
                     max_initial_overlap=0.05)
    q, u = sys_.initial_state()
    delta, Rs = 0.0001, 0.0025
    Es = 1.0 / ((1 - STEEL.nu ** 2) / STEEL.E + (1 - NYLON.nu ** 2) / NYLON.E)
    assert sys_.energy(q, u)["elastic"] == pytest.approx(0.4 * 4 / 3 * Es * math.sqrt(Rs) * delta ** 2.5, rel=1e-9)


def test_incidence_angle_and_tangential_restitution_in_the_sliding_regime():
    v_n, v_t = incidence_velocity(2.0, 60.0)
    assert (v_n, v_t) == pytest.approx((1.0, math.sqrt(3.0)), rel=1e-12)
    with pytest.raises(DEMInputError, match="angle_deg"):
        incidence_velocity(1.0, 90.0)
    smooth = binary_impact(STEEL, 0.005, v_n=v_n, v_t=v_t, law=HERTZ)
    assert smooth.tangential_restitution == pytest.approx(-1.0, abs=1e-12)  # no friction: v_c,t unchanged
    assert smooth.tangential_ratio == pytest.approx(1.0, abs=1e-12)
    mu = 0.1
    law = ContactLaw("hertz", tangential="mindlin", friction=mu)
    r = binary_impact(STEEL, 0.005, v_n=v_n, v_t=v_t, law=law, steps_per_contact=500)
    e = r.restitution  # 1 (elastic normal law)
    # gross sliding: the friction impulse mu (1+e) m v_n slows the centre and, with I = 2/5 m R^2,
    # spins the sphere up; the contact point loses 3.5 mu (1+e) v_n
    assert r.tangential_ratio == pytest.approx(1 - mu * (1 + e) * v_n / v_t, rel=2e-3)
    assert r.tangential_restitution == pytest.approx(-(1 - 3.5 * mu * (1 + e) * v_n / v_t), rel=2e-3)
    assert 0 < r.rebound_angle_deg < 60.0


@pytest.mark.parametrize("case", ["dem/hertz_two_materials", "dem/hertz_elastic_wall"])
def test_two_material_cases_pass(harness_env, case):
    from harness.core.api import run_case

    out = run_case(case, overrides=["tracking.enabled=false"])
    assert out.verdict == "pass", (out.metrics, out.gates)
    assert out.metrics["e_duration"] < 1e-4 and out.metrics["e_force"] < 1e-4


@pytest.mark.parametrize("override, message", [
    ("+case.params.material2.G=1.0e9", "material2: give exactly E, nu and density"),
    ("case.params.material2.density=-5", "density: must be finite and > 0, got -5.0"),
])
def test_two_material_case_refuses_a_bad_second_material(harness_env, override, message):
    from harness.core.api import run_case

    out = run_case("dem/hertz_two_materials", overrides=["tracking.enabled=false", override])
    assert out.status == "invalid" and out.exit_code == 2
    assert message in out.message, out.message
