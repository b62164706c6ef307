"""Optional peer: the sliding beam on an ANCF cable with a sliding joint in Exudyn."""
import os

import numpy as np
import pytest

pytest.importorskip("exudyn")

from harness import run_case  # noqa: E402

FULL = os.environ.get("HARNESS_FULL") == "1"


@pytest.mark.slow
def test_ancf_peer_agrees_with_the_eb_models(harness_env):
    size = [] if FULL else ["case.params.t_end=0.5"]
    out = run_case("beam/exudyn_ancf", overrides=["tracking=none", *size])
    assert out.status == "ok", out.message
    m = out.metrics
    assert out.verdict == "pass", {k: (m.get(k), v) for k, v in out.gates.items()}
    # an independent geometrically exact model, linear regime: EB full within 1 %
    assert m["tip_rms_ancf_vs_full"] < 0.01 and m["energy_history_diff_full"] < 0.01
    assert m["max_tip_ancf_m"] > 1e-3  # the beam really moves
    # the cable's balance with the normal reaction closes like the EB models' (same rho_inf)
    assert m["energy_residual_ancf_normal"] < 5e-3
    assert m["energy_residual_ancf_normal"] < 3 * max(m["energy_residual_full"], m["energy_residual_reduced"])
    with np.load(out.run_dir / "ancf_comparison.npz") as z:
        tip_a, tip_f = z["tip_ancf"], z["tip_full"]
        assert np.sqrt(np.sum((tip_f - tip_a) ** 2) / np.sum(tip_a**2)) == pytest.approx(m["tip_rms_ancf_vs_full"])
        # Exudyn's sliding coordinate (arc length) follows the prescribed x = s(t) closely
        s = 1.1 + 0.6 * np.sin(2 * np.pi * z["t"])
        assert np.max(np.abs(z["sliding_coordinate"] - s)) < 5e-3


def test_ancf_peer_rejects_a_distributed_load():
    from models.beam.peer_exudyn import simulate_ancf
    from models.beam.problem import make_problem

    p = make_problem(2.0, 10, 2.1e11, 7850.0, 1e-4, 2e-10, slider_kind="fixed", slider_center=1.0,
                     load_amplitudes=[1.0], load_frequencies=[1.0], load_position=None)
    with pytest.raises(ValueError, match="point loads only"):
        simulate_ancf(p, 0.1, 1e-3)


def test_contact_tangent_is_exact_on_a_parabola():
    """Cubic Hermite nodes of y = a x² (reference arc length x) reproduce its tangent exactly."""
    from models.beam.peer_exudyn import _contact_tangent

    a, le, n_el = 0.05, 0.1, 20
    x = le * np.arange(n_el + 1)
    coords = np.zeros((1, n_el + 1, 4))
    coords[0, :, 1] = a * x**2  # displacement y (x stays at its reference)
    coords[0, :, 3] = 2 * a * x  # slope vector (1, 2 a x) minus the reference (1, 0)
    s = np.linspace(0.0, le * n_el, 37)
    tau = _contact_tangent(np.repeat(coords, s.size, axis=0), s, le)
    exact = np.column_stack([np.ones_like(s), 2 * a * s]) / np.hypot(1.0, 2 * a * s)[:, None]
    assert np.max(np.abs(tau - exact)) < 1e-14


@pytest.mark.slow
def test_classical_joint_leaves_no_tangential_reaction(harness_env):
    """The classical formulation imposes zero force along the cable; the local one does not."""
    size = [] if FULL else ["case.params.t_end=0.25"]
    local = run_case("beam/exudyn_ancf", overrides=["tracking=none", "case.params.figures=false", *size])
    classical = run_case("beam/exudyn_ancf", overrides=["tracking=none", "case.params.figures=false",
                                                        "case.params.classical_joint=true", *size])
    assert local.status == "ok" and classical.status == "ok", (local.message, classical.message)
    mc, ml = classical.metrics, local.metrics
    assert mc["tangential_reaction_median_N"] < 1e-4 < 1e-3 < ml["tangential_reaction_median_N"]
    # with (almost) no tangential reaction the two bookings of the classical balance agree
    assert abs(mc["energy_residual_ancf_drive"] - mc["energy_residual_ancf_normal"]) < 5e-3
