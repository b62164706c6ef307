"""Restitution formulas, their inverses, and each against the simulation of its rebound criterion."""
import math

import numpy as np
import pytest

from models.dem import ContactLaw, Material, binary_impact
from models.dem import restitution as RS

SOFT = Material(1e7, 0.3, 2500.0)


def test_eq22_limits_and_inverse():
    assert RS.e_kelvin_voigt_eq22(0.0) == 1.0
    assert RS.e_kelvin_voigt_eq22(1e8) == pytest.approx(math.exp(-2.0), rel=1e-7)
    for e in (0.95, 0.6, 0.2, 0.14):
        z = RS.zeta_from_restitution(e, attractive=False)
        assert RS.e_kelvin_voigt_eq22(RS.ratio_from_zeta(z)) == pytest.approx(e, rel=1e-12)
        z2 = RS.zeta_from_restitution(e, attractive=True)
        assert RS.e_spring_dashpot(z2) == pytest.approx(e, rel=1e-12)
    with pytest.raises(ValueError, match="exp\\(-2\\)"):
        RS.zeta_from_restitution(0.1, attractive=False)


@pytest.mark.parametrize("ratio", [0.1, 1.0, 4.0])
def test_force_zero_rebound_matches_eq22(ratio):
    z = float(RS.zeta_from_ratio(ratio))
    law = ContactLaw("kelvin_voigt", k_n=1e4, zeta=z, attractive=False)
    e_sim = binary_impact(SOFT, 0.01, SOFT, 0.01, v_n=1.0, law=law, steps_per_contact=2000).restitution
    e22 = float(RS.e_kelvin_voigt_eq22(ratio))
    assert abs(e_sim - e22) / e22 < 2e-3
    if ratio >= 1.0:  # the other formula is far off: the criterion matters
        assert abs(e_sim - float(RS.e_spring_dashpot(z))) / e22 > 0.1


@pytest.mark.parametrize("ratio", [0.1, 0.5])
def test_overlap_zero_rebound_matches_classic(ratio):
    z = float(RS.zeta_from_ratio(ratio))
    law = ContactLaw("kelvin_voigt", k_n=1e4, zeta=z, attractive=True)
    e_sim = binary_impact(SOFT, 0.01, SOFT, 0.01, v_n=1.0, law=law, steps_per_contact=2000).restitution
    e_ref = float(RS.e_spring_dashpot(z))
    assert abs(e_sim - e_ref) / e_ref < 1e-3


def test_kv_error_decreases_with_dt():
    law = ContactLaw("kelvin_voigt", k_n=1e4, zeta=float(RS.zeta_from_ratio(0.5)), attractive=False)
    ref = float(RS.e_kelvin_voigt_eq22(0.5))
    errs = [abs(binary_impact(SOFT, 0.01, None, None, v_n=1.0, law=law, steps_per_contact=n).restitution - ref)
            for n in (250, 1000)]
    assert errs[1] < errs[0] / 3.0


def test_edem_formula_exact_for_overlap_zero_rebound():
    for e in (0.9, 0.5, 0.2):
        c = RS.hm_damping_from_restitution(e, method="edem")
        assert RS.hm_restitution(c, attractive=True) == pytest.approx(e, rel=1e-8)
        assert abs(RS.hm_restitution(c, attractive=False) - e) > 1e-3  # not for force-zero


@pytest.mark.parametrize("attractive", [False, True])
def test_hertz_mindlin_target_velocity_independent(attractive):
    law = ContactLaw("hertz_mindlin", restitution=0.6, attractive=attractive)
    es = [binary_impact(SOFT, 0.01, None, None, v_n=v, law=law, steps_per_contact=1000).restitution for v in (0.3, 3.0)]
    assert es == pytest.approx([0.6, 0.6], rel=5e-4)
