"""Euler–Bernoulli FE model, sliding constraint and modal/static solutions vs closed forms."""
import math

import numpy as np
import pytest

from models.beam.constraints import SlidingConstraint
from models.beam.fe import build_beam, hermite, hermite_dx
from models.beam.modal import constrained_modes, static_solution
from models.beam.peer_skfem import bending_frequencies
from models.beam.problem import make_problem

L, E, RHO, A, I = 2.0, 2.1e11, 7850.0, 1.0e-4, 0.02 * 0.005**3 / 12


@pytest.fixture(scope="module")
def beam():
    return build_beam(L, 50, E, RHO, A, I)


def test_sizes_and_symmetry(beam):
    assert beam.ndof == 153
    assert np.allclose(beam.M, beam.M.T, rtol=0, atol=0) and np.allclose(beam.K, beam.K.T, rtol=0, atol=0)
    # mass of a rigid translation (axial or transverse) is ρAL
    ux = np.zeros(beam.ndof); ux[0::3] = 1.0
    uw = np.zeros(beam.ndof); uw[1::3] = 1.0
    assert ux @ beam.M @ ux == pytest.approx(RHO * A * L, rel=1e-13)
    assert uw @ beam.M @ uw == pytest.approx(RHO * A * L, rel=1e-13)


def test_rigid_body_modes_are_strain_free(beam):
    x = beam.x_nodes
    rot = np.zeros(beam.ndof); rot[1::3] = x; rot[2::3] = 1.0  # w = x, θ = 1
    for mode in (rot, np.r_[np.tile([1.0, 0, 0], beam.n_nodes)], np.r_[np.tile([0, 1.0, 0], beam.n_nodes)]):
        assert np.max(np.abs(beam.K @ mode)) < 1e-12 * np.max(np.abs(beam.K))


def test_cantilever_and_clamped_pinned_frequencies(beam):
    c = math.sqrt(E * I / (RHO * A))
    cons = SlidingConstraint(beam, clamp=True, slider=False)
    w, _ = constrained_modes(beam.M, beam.K, cons.matrix(None), 3)
    ref = (np.array([1.87510406871196, 4.69409113297418, 7.85475743823761]) / L) ** 2 * c
    assert np.max(np.abs(w / ref - 1)) < 1e-3
    w2, _ = constrained_modes(beam.M, beam.K, SlidingConstraint(beam).matrix(L), 2)
    ref2 = (np.array([3.92660231204792, 7.06858274562873]) / L) ** 2 * c
    assert np.max(np.abs(w2 / ref2 - 1)) < 1e-3


def test_frequencies_match_scikit_fem_on_the_same_nodes(beam):
    cons = SlidingConstraint(beam)
    w, _ = constrained_modes(beam.M, beam.K, cons.matrix(L), 4)
    w_sk = bending_frequencies(beam.x_nodes, E * I, RHO * A, (L,), 4)
    assert np.max(np.abs(w / w_sk - 1)) < 1e-5


def test_static_tip_load_and_propped_reaction(beam):
    x = beam.x_nodes
    EI = E * I
    C = SlidingConstraint(beam, slider=False).matrix(None)
    q, lam = static_solution(beam.K, C, beam.point_load(L, 3.0))
    assert np.allclose(q[1::3], 3.0 * x**2 * (3 * L - x) / (6 * EI), rtol=1e-10, atol=1e-14)
    assert lam[1] == pytest.approx(3.0, rel=1e-12) and lam[2] == pytest.approx(3.0 * L, rel=1e-10)
    C = SlidingConstraint(beam).matrix(L)
    q, lam = static_solution(beam.K, C, beam.uniform_load(2.0))
    assert np.allclose(q[1::3], 2.0 * x**2 * (3 * L**2 - 5 * L * x + 2 * x**2) / (48 * EI), rtol=1e-9, atol=1e-14)
    assert lam[-1] == pytest.approx(3 * 2.0 * L / 8, rel=1e-11)  # λ = −reaction at the slider


def test_slider_row_is_c1_across_a_node(beam):
    cons = SlidingConstraint(beam)
    node = 20 * beam.le
    eps = 1e-12  # a jump would be O(1/le) = 25; continuity leaves O(eps / le²)
    a = cons.slider_rows(np.array([node - eps, node + eps]))
    left, right = a.dense(beam.ndof, "n"), a.dense(beam.ndof, "dn")
    assert np.max(np.abs(left[0] - left[1])) < 1e-9   # the row (w(s) weights) is continuous
    assert np.max(np.abs(right[0] - right[1])) < 1e-7  # and so is its s-derivative (w′ weights)
    # on a node the row picks exactly w of that node
    r = cons.slider_rows(np.array([node])).dense(beam.ndof)
    expect = np.zeros(beam.ndof); expect[3 * 20 + 1] = 1.0
    assert np.allclose(r[0], expect, atol=1e-14)


def test_hermite_interpolates_a_cubic_exactly():
    le = 0.3
    f = lambda x: 1 + 2 * x - 3 * x**2 + 0.5 * x**3  # noqa: E731
    df = lambda x: 2 - 6 * x + 1.5 * x**2  # noqa: E731
    nodal = np.array([f(0), df(0), f(le), df(le)])
    xi = np.linspace(0, 1, 7)
    assert np.allclose(hermite(xi, le) @ nodal, f(xi * le), atol=1e-14)
    assert np.allclose(hermite_dx(xi, le) @ nodal, df(xi * le), atol=1e-13)


@pytest.mark.parametrize("field,value", [("area", 0.0), ("second_moment", -1e-9), ("youngs_modulus", float("nan")),
                                         ("density", -1.0), ("length", 0.0)])
def test_non_positive_properties_are_rejected(field, value):
    kw = dict(length=L, n_elements=10, youngs_modulus=E, density=RHO, area=A, second_moment=I)
    kw[field] = value
    with pytest.raises(ValueError, match=field):
        build_beam(**kw)


def test_slider_law_leaving_the_beam_is_rejected():
    p = make_problem(L, 10, E, RHO, A, I, slider_kind="sinusoidal", slider_center=1.5, slider_amplitude=0.6,
                     slider_frequency=1.0)
    with pytest.raises(ValueError, match="slider law leaves the beam"):
        p.simulate(1.0, 1e-2)
