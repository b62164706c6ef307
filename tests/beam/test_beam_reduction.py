"""Global POD basis: properties, exactness limits, bad input."""
import numpy as np
import pytest
import scipy.linalg as sla

from models.beam.modal import constrained_modes
from models.beam.problem import make_problem, time_grid
from models.beam.reduction import GlobalBasis, GlobalPODReductor

BEAM = dict(length=2.0, n_elements=20, youngs_modulus=2.1e11, density=7850.0, area=1e-4,
            second_moment=0.02 * 0.005**3 / 12)


@pytest.fixture(scope="module")
def problem():
    return make_problem(**BEAM, slider_kind="sinusoidal", slider_center=1.1, slider_amplitude=0.6,
                        slider_frequency=1.0, load_amplitudes=[20.0, 10.0], load_frequencies=[2.0, 17.0],
                        load_position=0.6)


def test_basis_is_orthonormal_clamped_and_sorted(problem):
    t = time_grid(1.0, 1e-3)
    b = GlobalPODReductor(5, 6, 20).build(problem, t)
    assert b.Psi.shape == (problem.beam.ndof, 20)
    assert np.allclose(b.Psi.T @ b.Psi, np.eye(20), atol=1e-12)
    assert np.max(np.abs(b.Psi[:3])) < 1e-12  # u0, w0, θ0 vanish: the clamp is built in
    assert np.all(np.diff(b.singular_values) <= 0)
    assert b.positions[0] == pytest.approx(0.5) and b.positions[-1] == pytest.approx(1.7)
    assert b.pool_rank <= 30 and 0.0 < b.retained_energy() <= 1.0


def test_single_snapshot_basis_reproduces_its_modes(problem):
    # one position, r_glob = r_snap: Ψ spans exactly those constrained modes, so the reduced
    # eigenproblem with the slider row at that position returns the same frequencies
    s0 = 0.87  # inside an element
    b = GlobalPODReductor(1, 6, 6, s_min=s0, s_max=s0).build(problem)
    beam = problem.beam
    C = problem.constraint().matrix(s0)
    w_full, _ = constrained_modes(beam.M, beam.K, C, 6)
    Psi = b.Psi
    # the slider row is already satisfied by the modes -> the reduced row is ~0; drop it
    Cr = C[-1:] @ Psi
    assert np.max(np.abs(Cr)) < 1e-10 * np.max(np.abs(C))
    lam = np.sqrt(sla.eigh(Psi.T @ beam.K @ Psi, Psi.T @ beam.M @ Psi, eigvals_only=True))
    # float64 floor of these eigenvalues: cond(K) ~ 1e10 (axial vs bending stiffness)
    assert np.allclose(lam, w_full, rtol=1e-7)


def test_complete_basis_reproduces_the_full_model(problem):
    # Ψ = orthonormal basis of all clamp-admissible vectors: reduction is exact
    Z = sla.null_space(problem.constraint(slider=False).matrix(None))
    basis = GlobalBasis(Z, np.ones(Z.shape[1]), np.array([1.0]), np.zeros((1, 1)), Z.shape[1], 0.0)
    full = problem.simulate(0.5, 1e-3, 0.85)
    red = problem.simulate(0.5, 1e-3, 0.85, basis=basis)
    assert np.max(np.abs(red.w - full.w)) < 1e-8 * np.max(np.abs(full.w))
    assert np.max(np.abs(red.energy - full.energy)) < 1e-7 * np.max(full.energy)


def test_reduced_model_is_close_and_balanced(problem):
    t = time_grid(1.0, 1e-3)
    b = GlobalPODReductor(5, 6, 20).build(problem, t)
    full = problem.simulate(1.0, 1e-3, 0.85)
    red = problem.simulate(1.0, 1e-3, 0.85, basis=b)
    err = np.sqrt(np.sum((red.w - full.w) ** 2) / np.sum(full.w**2))
    assert err < 0.05
    assert red.energy_residual() < 0.02
    assert np.max(np.abs(red.slider_w)) < 1e-12 * np.max(np.abs(red.w))


def test_r_glob_above_the_pool_rank_is_rejected(problem):
    with pytest.raises(ValueError, match=r"r_glob = 13 exceeds the rank 12"):
        GlobalPODReductor(3, 4, 13).build(problem, time_grid(1.0, 1e-2))


@pytest.mark.parametrize("field,value", [("n_snap", 0), ("r_snap", 2.5), ("r_glob", -1), ("weight_exponent", -1.0)])
def test_bad_counts_are_rejected(field, value):
    kw = dict(n_snap=5, r_snap=6, r_glob=20)
    kw[field] = value
    with pytest.raises(ValueError, match=field):
        GlobalPODReductor(**kw)


def test_snapshot_range_outside_the_beam_is_rejected(problem):
    with pytest.raises(ValueError, match="snapshot range"):
        GlobalPODReductor(3, 4, 5, s_min=0.5, s_max=2.5).build(problem)
