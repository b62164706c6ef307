"""Public API of models.beam: labelled modes, reduced-model modes, the typed problem spec."""
from __future__ import annotations

import math

import numpy as np
import pytest

import models.beam as beam_pkg
from models.beam import (BeamSpec, GlobalPODReductor, LoadSpec, ProblemSpec, SliderSpec, SlidingConstraint,
                         build_beam, constrained_modes, make_problem, time_grid)

L, E, RHO, A, I = 2.0, 2.1e11, 7850.0, 1e-2, 8.333e-6  # a stocky bar: the first axial mode is the 4th mode
BETA_L = np.array([1.87510407, 4.69409113, 7.85475744, 10.99554073])


def test_every_exported_name_is_documented_with_units_or_an_example():
    for name in beam_pkg.__all__:
        obj = getattr(beam_pkg, name)
        assert obj.__doc__ and len(obj.__doc__.strip()) > 20, name


def test_cantilever_modes_are_labelled_axial_and_bending_against_closed_forms():
    beam = build_beam(L, 40, E, RHO, A, I)
    C = SlidingConstraint(beam, slider=False).matrix(None)
    modes = constrained_modes(beam.M, beam.K, C, 5)
    omega, Phi = modes  # the old two-value form still unpacks
    assert Phi.shape == (beam.ndof, 5) and np.allclose(omega, modes.omega)
    assert list(modes.kind) == ["bending", "bending", "bending", "axial", "bending"]
    assert np.all((modes.axial_fraction < 1e-12) | (modes.axial_fraction > 1 - 1e-12))  # pure modes
    bend = BETA_L ** 2 / L ** 2 * math.sqrt(E * I / (RHO * A))
    axial1 = math.pi / (2 * L) * math.sqrt(E / RHO)
    assert np.allclose(modes.of_kind("bending").omega, bend, rtol=1e-4)
    assert modes.of_kind("axial").omega[0] == pytest.approx(axial1, rel=2e-4)  # linear elements, h²
    # kind= selects without computing the other family: same frequencies, same order
    only_b = constrained_modes(beam.M, beam.K, C, 4, kind="bending")
    assert list(only_b.kind) == ["bending"] * 4
    assert np.allclose(only_b.omega, modes.of_kind("bending").omega, rtol=1e-7)  # eigh round-off
    only_a = constrained_modes(beam.M, beam.K, C, 2, kind="axial")
    assert only_a.omega[1] == pytest.approx(3 * axial1, rel=2e-3) and set(only_a.kind) == {"axial"}
    with pytest.raises(ValueError, match="kind must be"):
        constrained_modes(beam.M, beam.K, C, 2, kind="torsion")


def _problem():
    return make_problem(L, 20, E, RHO, 1e-4, 2e-10, slider_kind="sinusoidal", slider_center=1.1,
                        slider_amplitude=0.6, slider_frequency=1.0, load_amplitudes=[5.0],
                        load_frequencies=[3.0], load_position=L)


def test_reduced_modes_match_the_manual_route_and_bound_the_full_model_from_above():
    p = _problem()
    basis = GlobalPODReductor(n_snap=5, r_snap=6, r_glob=20).build(p, time_grid(1.0, 1e-3))
    s = 1.3
    red = p.reduced_modes(basis, 4, s=s)
    # the route the issue describes, by hand: a dummy time grid through reduced_dae
    dae, rows = p.reduced_dae(np.array([0.0, 1e-3]), basis)
    rows_s = p.constraint().slider_rows(np.array([s])).project(basis.Psi, "n")
    manual = constrained_modes(dae.M, dae.K, rows_s, 4)
    assert np.allclose(red.omega, manual.omega, rtol=1e-10)
    full = p.full_modes(4, s=s, kind="bending")
    assert np.all(red.omega >= full.omega * (1 - 1e-10))  # Rayleigh–Ritz: reduced never below full
    assert np.allclose(red.omega, full.omega, rtol=1e-2)
    assert list(red.kind) == ["bending"] * 4 and red.shapes.shape == (20, 4)
    # default position = slider at t = 0 (s(0) = centre)
    assert np.allclose(p.reduced_modes(basis, 2).omega, p.reduced_modes(basis, 2, s=1.1).omega)


def test_kind_on_a_reduced_basis_ignores_round_off_and_keeps_out_real_motion_of_the_other_family():
    """The POD basis of bending snapshots holds axial round-off only (1e-18 to 1e-7 here): kind="bending"
    keeps the whole basis (reduced = full at a snapshot position, whatever the round-off), while a
    basis column with real axial motion is still held out of the bending modes."""
    from models.beam.modal import axial_dofs

    p = _problem()
    basis = GlobalPODReductor(n_snap=5, r_snap=6, r_glob=20).build(p, time_grid(1.0, 1e-3))
    s = 1.1  # a snapshot position (linspace(0.5, 1.7, 5))
    full = p.full_modes(4, s=s, kind="bending").omega
    C = p.constraint().slider_rows(np.array([s])).project(basis.Psi, "n")
    Mr, Kr = basis.Psi.T @ p.beam.M @ basis.Psi, basis.Psi.T @ p.beam.K @ basis.Psi
    ax = axial_dofs(p.beam.ndof)
    for noise in (0.0, 1e-12, 1e-9):  # round-off of other LAPACK builds, and more
        Psi = basis.Psi.copy()
        Psi[ax] += noise * np.random.default_rng(3).standard_normal((ax.size, Psi.shape[1]))
        red = constrained_modes(0.5 * (Mr + Mr.T), 0.5 * (Kr + Kr.T), C, 4, kind="bending", basis=Psi)
        assert np.allclose(red.omega, full, rtol=1e-8), noise
    # a basis with the first axial mode appended: kind="bending" excludes it exactly, kind=None finds it
    beam = p.beam
    Cc = SlidingConstraint(beam, slider=False).matrix(None)
    axial = constrained_modes(beam.M, beam.K, Cc, 1, kind="axial").shapes[:, 0]
    Psi2 = np.column_stack([basis.Psi, axial / np.linalg.norm(axial)])
    M2, K2 = Psi2.T @ beam.M @ Psi2, Psi2.T @ beam.K @ Psi2
    C2 = p.constraint().slider_rows(np.array([s])).project(Psi2, "n")
    bend = constrained_modes(0.5 * (M2 + M2.T), 0.5 * (K2 + K2.T), C2, 4, kind="bending", basis=Psi2)
    assert np.allclose(bend.omega, full, rtol=1e-8) and np.all(bend.axial_fraction < 1e-12)
    every = constrained_modes(0.5 * (M2 + M2.T), 0.5 * (K2 + K2.T), C2, 20, basis=Psi2)
    assert "axial" in set(every.kind)


def test_problem_spec_and_the_flat_keyword_form_build_the_same_problem():
    spec = ProblemSpec(BeamSpec(L, 20, E, RHO, 1e-4, 2e-10),
                       SliderSpec("sinusoidal", center=1.1, amplitude=0.6, frequency=1.0),
                       LoadSpec((5.0,), (3.0,), position=L))
    a, b = make_problem(spec), _problem()
    assert np.array_equal(a.beam.M, b.beam.M) and np.array_equal(a.beam.K, b.beam.K)
    t = np.linspace(0, 1, 11)
    assert np.array_equal(a.slider.position(t), b.slider.position(t))
    assert np.array_equal(a.load.vector(a.beam), b.load.vector(b.beam))
    assert ProblemSpec.from_kwargs(**spec.to_kwargs()) == spec
    assert make_problem(**spec.to_kwargs()).beam.ndof == a.beam.ndof
    with pytest.raises(TypeError):
        make_problem(L, 20, E, RHO, 1e-4, 2e-10, slider_knd="fixed")
    with pytest.raises(ValueError, match="outside the beam"):
        make_problem(ProblemSpec(BeamSpec(L, 20, E, RHO, 1e-4, 2e-10), load=LoadSpec((1.0,), (1.0,), 3.0)))
