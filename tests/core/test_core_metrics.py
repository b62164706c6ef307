"""harness.metrics against closed forms and the NASA NPARC GCI example."""
import math

import numpy as np
import pytest

from harness.metrics import library as M


def test_e_F_uses_global_scale_not_pointwise():
    F_B = np.array([0.0, 1.0, -2.0, 0.5])
    F_M = F_B + np.array([0.1, 0.0, 0.0, -0.3])
    assert M.e_F(F_M, F_B) == pytest.approx(0.3 / 2.0, rel=1e-15)
    assert M.e_F(np.zeros(3), np.zeros(3)) == 0.0
    assert M.e_F(np.ones(3), np.zeros(3)) == math.inf
    with pytest.raises(ValueError, match="shapes differ"):
        M.e_F(np.ones(2), np.ones(3))


def test_e_J_with_J_scale_guards_zero_impulse():
    assert M.e_J(1.01, 1.0) == pytest.approx(0.01, rel=1e-12)
    assert M.e_J(1e-6, 0.0, J_scale=1e-3) == pytest.approx(1e-3, rel=1e-12)
    assert M.e_J(0.0, 0.0) == 0.0


def test_impulse_is_exact_for_piecewise_linear():
    t = np.array([0.0, 0.5, 2.0])
    F = np.array([0.0, 2.0, 2.0])
    assert M.impulse(t, F) == pytest.approx(0.5 + 3.0, rel=1e-15)


def test_relative_rms():
    u_ref = np.array([[3.0, 4.0]])
    assert M.relative_rms(u_ref * 1.1, u_ref) == pytest.approx(0.1, rel=1e-12)
    assert M.relative_rms(u_ref, u_ref) == 0.0


def test_energy_drift_accounts_external_work():
    t = np.linspace(0, 1, 11)
    W = 2.0 * t
    E = 10.0 + W
    assert M.energy_drift(E, W) == pytest.approx(0.0, abs=1e-15)
    E_bad = E.copy()
    E_bad[5] += 0.12
    assert M.energy_drift(E_bad, W, E_scale=12.0) == pytest.approx(0.01, rel=1e-12)
    assert M.energy_drift(E_bad) == pytest.approx(np.max(np.abs(E_bad - E_bad[0])) / np.max(E_bad))


def test_observed_order_of_a_power_law():
    e = lambda h: 3.0 * h**2.5
    assert M.observed_order(e(0.2), e(0.1), 2.0) == pytest.approx(2.5, rel=1e-12)
    assert M.observed_order(e(0.3), e(0.1), 3.0) == pytest.approx(2.5, rel=1e-12)
    with pytest.raises(ValueError):
        M.observed_order(1.0, 0.5, 1.0)


def test_gci_reproduces_nasa_nparc_example():
    # NPARC Alliance CFD verification example: three grids, constant ratio r = 2.
    g = M.gci(0.970500, 0.968540, 0.961780, 2.0, 2.0)
    assert g.p == pytest.approx(1.78617, abs=5e-6)
    assert g.f_extrapolated == pytest.approx(0.9713003, abs=5e-8)
    assert 100 * g.gci_12 == pytest.approx(0.10308, abs=5e-6)
    assert g.asymptotic_ratio == pytest.approx(1.0, abs=0.01)


def test_gci_varying_ratio_recovers_the_order():
    f_ext, C, p = 1.0, 0.3, 1.7
    h1, h2, h3 = 0.1, 0.15, 0.33  # r21 = 1.5, r32 = 2.2
    f = [f_ext + C * h**p for h in (h1, h2, h3)]
    g = M.gci(*f, h2 / h1, h3 / h2)
    assert g.p == pytest.approx(p, rel=1e-9)
    assert g.f_extrapolated == pytest.approx(f_ext, rel=1e-9)
    assert g.iterations > 1


def test_gci_rejects_identical_levels():
    with pytest.raises(ValueError, match="identical"):
        M.gci(1.0, 1.0, 2.0, 2.0, 2.0)


def test_scd():
    y_ref = np.array([1.0, 1e-5, 0.0])
    y = np.array([1.0 + 1e-7, 1e-5 * (1 + 1e-4), 3.0])  # zero reference component skipped
    assert M.scd(y, y_ref) == pytest.approx(4.0, rel=1e-9)
    assert M.scd(y_ref, y_ref) == math.inf
