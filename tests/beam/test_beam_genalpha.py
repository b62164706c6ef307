"""Generalised-α for index-3 constrained linear systems: order, constraint, stability, energy."""
import math

import numpy as np
import pytest

from models.beam.genalpha import ConstrainedLinearDAE, GeneralizedAlpha, ga_parameters
from models.beam.problem import make_problem
from models.beam.reduction import GlobalPODReductor

BEAM = dict(length=2.0, n_elements=12, youngs_modulus=2.1e11, density=7850.0, area=1e-4,
            second_moment=0.02 * 0.005**3 / 12)


def _pendulum_like(h, rho_inf, t_end=1.0):
    """2-DOF coupled oscillator under a step force F on DOF 1 with the constraint x2 = 0
    (C = [0, 1]): x1 = F/k (1 − cos ωt), ω² = k/m, and λ = 0.3 k x1 in closed form."""
    m, k, F = 2.0, 50.0, 3.0
    t = np.arange(int(round(t_end / h)) + 1) * h
    M = np.diag([m, m]); K = np.array([[k, -0.3 * k], [-0.3 * k, k]])
    C = np.broadcast_to(np.array([[0.0, 1.0]]), (t.size, 1, 2)).copy()
    f = np.zeros((t.size, 2)); f[:, 0] = F
    res = GeneralizedAlpha(rho_inf).solve(ConstrainedLinearDAE(t, M, K, C, f), np.zeros(2), np.zeros(2))
    w = math.sqrt(k / m)
    exact = F / k * (1.0 - np.cos(w * t))
    lam_exact = -(-0.3 * k) * exact  # row 2: −0.3k x1 + λ = 0
    return res, exact, lam_exact


def test_parameters_of_chung_hulbert():
    p = ga_parameters(0.8)
    assert p["gamma"] == pytest.approx(0.5 + p["alpha_f"] - p["alpha_m"])
    assert p["alpha_m"] == pytest.approx(0.6 / 1.8) and p["alpha_f"] == pytest.approx(0.8 / 1.8)
    with pytest.raises(ValueError, match="rho_inf"):
        ga_parameters(1.2)


@pytest.mark.parametrize("rho_inf", [0.6, 0.85, 1.0])
def test_second_order_convergence_and_multiplier(rho_inf):
    errs, lerrs = [], []
    for h in (0.01, 0.005, 0.0025):
        res, exact, lam_exact = _pendulum_like(h, rho_inf)
        errs.append(np.max(np.abs(res.q[:, 0] - exact)))
        lerrs.append(np.max(np.abs(res.lam[10:, 0] - lam_exact[10:])))
        assert np.max(np.abs(res.q[:, 1])) < 1e-14  # constraint at position level, every step
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(np.abs(orders - 2.0) < 0.15), orders
    lorders = np.log2(np.array(lerrs[:-1]) / np.array(lerrs[1:]))
    assert np.all(lorders > 1.8), lorders


@pytest.fixture(scope="module")
def sliding():
    p = make_problem(**BEAM, slider_kind="sinusoidal", slider_center=1.1, slider_amplitude=0.6,
                     slider_frequency=1.0, load_amplitudes=[20.0, 10.0], load_frequencies=[2.0, 17.0],
                     load_position=0.6)
    return p


def test_schur_and_kkt_solvers_agree(sliding):
    a = sliding.simulate(0.4, 1e-3, 0.85, "schur")
    b = sliding.simulate(0.4, 1e-3, 0.85, "kkt")
    assert np.max(np.abs(a.w - b.w)) < 1e-9 * np.max(np.abs(a.w))
    assert np.max(np.abs(a.lam - b.lam)) < 1e-7 * np.max(np.abs(a.lam))


def test_moving_slider_constraint_holds_and_energy_balance_converges(sliding):
    res = []
    for dt in (1e-3, 5e-4):
        r = sliding.simulate(1.0, dt, 0.85)
        assert np.max(np.abs(r.slider_w)) < 1e-12 * np.max(np.abs(r.w))
        res.append(r.energy_residual())
    # second-order accurate energy bookkeeping: the residual drops ~4x per halving of dt
    assert res[1] < res[0] / 3.0, res
    # the constraint does real work: leaving W_c out would break the balance by far more
    E = r.energy
    assert np.max(np.abs(E - E[0] - r.W_ext)) > 20 * np.max(np.abs(r.residual))


def test_rho_inf_one_blows_up_with_a_moving_slider_and_0_85_does_not(sliding):
    T = 2.0
    t = np.arange(int(round(T / 5e-4)) + 1) * 5e-4
    basis = GlobalPODReductor(4, 5, 12).build(sliding, t)
    stable = sliding.simulate(T, 5e-4, 0.85, basis=basis)
    undamped = sliding.simulate(T, 5e-4, 1.0, basis=basis)
    assert np.max(np.abs(stable.w)) < 1.0
    assert not np.all(np.isfinite(undamped.w)) or np.max(np.abs(undamped.w)) > 1e3 * np.max(np.abs(stable.w))


def test_bad_initial_state_and_grid_are_rejected():
    t = np.linspace(0, 1, 11)
    M = np.eye(2); K = np.eye(2)
    C = np.broadcast_to(np.array([[0.0, 1.0]]), (11, 1, 2)).copy()
    with pytest.raises(ValueError, match="violates the constraints"):
        GeneralizedAlpha().solve(ConstrainedLinearDAE(t, M, K, C, np.zeros((11, 2))), np.array([0, 1.0]), np.zeros(2))
    with pytest.raises(ValueError, match="uniform"):
        ConstrainedLinearDAE(np.array([0, 0.1, 0.3]), M, K, C[:3], np.zeros((3, 2)))
