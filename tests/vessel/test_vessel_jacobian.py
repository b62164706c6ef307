"""The compiled Jacobian of the vessel field against central differences at random states."""
import numpy as np
import pytest

from models.integrators import get
from models.vessel import compiled
from models.vessel.build import build_vessel
from models.vessel.forces import FORCE_MODELS
from models.vessel.vessel import _ONE_INTERVAL

ENV = dict(data_file="models/vessel/data/tanker.yaml", current_speed=0.5, current_direction=1.047,
           wind_speed=12.0, wind_direction=0.52, wave_amplitude=1.0, wave_direction=0.35)


def _random_point(vessel, rng):
    """A state (with the work state when tracked) and input row away from rest."""
    n_p = len(vessel.data.propellers)
    inp = vessel.initial_inputs(rng.uniform(-1.5, 1.5, n_p), rng.uniform(-0.5, 0.5, len(vessel.data.rudders)))
    inp.azimuth = rng.uniform(-np.pi, np.pi, n_p)
    inp.wave_force_amp = rng.normal(size=6) * 1e6
    inp.wave_force_phase = rng.uniform(0.0, 2 * np.pi, 6)
    q = rng.normal(size=6) * [50.0, 50.0, 0.5, 0.05, 0.05, 3.0]
    nu = rng.normal(size=6) * [4.0, 1.0, 0.1, 0.01, 0.01, 0.01]
    y = np.concatenate([q, nu, [0.0] * (vessel.n_state - 12)])
    row = inp.row()[None, :]
    return y, (row, row, _ONE_INTERVAL, False, vessel.inv_total_mass, *vessel.loads.packed)


def _central(t, y, args):
    J = np.empty((y.size, y.size))
    for k in range(y.size):
        h = 1e-6 * max(1.0, abs(y[k]))
        e = np.zeros(y.size)
        e[k] = h
        J[:, k] = (compiled.field(t, y + e, *args) - compiled.field(t, y - e, *args)) / (2 * h)
    return J


@pytest.mark.parametrize("forces", [[m] for m in FORCE_MODELS] + [list(FORCE_MODELS)],
                         ids=[m for m in FORCE_MODELS] + ["all"])
def test_jacobian_matches_central_differences(forces):
    # Coriolis alone does no work (nu . C(nu) nu = 0): its work row is round-off, nothing to compare
    vessel = build_vessel(**ENV, forces=forces, track_work=forces != ["coriolis"])
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(10):
        y, args = _random_point(vessel, rng)
        t = float(rng.uniform(0.0, 100.0))
        J = compiled.jacobian(t, y, *args)
        Jd = _central(t, y, args)
        scale = np.abs(Jd).max(axis=1, keepdims=True) + 1e-300  # per row: each equation's own size
        worst = max(worst, float(np.max(np.abs(J - Jd) / scale)))
    assert worst < 1e-6, worst


def test_integrators_get_the_jacobian_and_the_track_is_the_same():
    """CVODE with the analytic Jacobian evaluates no difference columns and lands on the track of
    its own difference quotients (the same field, to the solver tolerance)."""
    sim = dict(t_end=20.0, dt=0.1, nu0=[5.0, 0, 0, 0, 0, 0], rotation0=[1.2, 0.0])
    runs = {}
    for jac in ("analytic", "none"):
        vessel = build_vessel(**ENV, demands={"rotation": {"main": [[0.0, 1.2]]},
                                              "rudder": {"rudder": [[0.0, 0.0], [5.0, 0.35]]}}, jacobian=jac)
        integ = get("cvode_bdf")(rtol=1e-8, atol=1e-10, max_num_steps=10000, output_mode="interpolate")
        runs[jac] = vessel.simulate(integ, **sim)
        assert runs[jac].success
    a, n = runs["analytic"], runs["none"]
    assert a.stats["njev"] > 0
    assert a.stats["nfev"] < n.stats["nfev"]  # no field calls spent on difference columns
    track = float(np.sum(np.hypot(*np.diff(n.q[:, :2], axis=0).T)))
    assert float(np.max(np.hypot(*(a.q[:, :2] - n.q[:, :2]).T))) < 1e-5 * track


def test_unknown_jacobian_option_is_a_clear_error():
    with pytest.raises(ValueError, match="jacobian: must be one of"):
        build_vessel(**ENV, jacobian="numeric")
