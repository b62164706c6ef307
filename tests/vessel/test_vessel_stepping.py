"""The compiled once-per-step pass over a solved window against the Python methods it replaces."""
import copy

import numpy as np
import pytest

from models.vessel.build import build_vessel
from models.vessel.vessel import _inputs_at

ENV = dict(data_file="models/vessel/data/tanker.yaml", current_speed=0.5, current_direction=1.047,
           wind_speed=12.0, wind_direction=0.52, wave_amplitude=1.0, wave_direction=0.35)


@pytest.mark.parametrize("track_work", [False, True])
def test_compiled_window_pass_equals_the_python_steps(track_work):
    vessel = build_vessel(**ENV, track_work=track_work)
    rng = np.random.default_rng(5)
    n_out, dt, a = 30, 0.1, 4
    t_grid = dt * np.arange(n_out + 1)
    rec = vessel._records(n_out + 1)
    st = vessel._new_state(vessel.initial_inputs([1.0, 0.0]), np.zeros(6), 0.0)
    for i in range(n_out + 1):  # actuator knots as the whole-grid solve records them
        vessel.advance_actuators(st.inputs, t_grid[i], dt, vessel.initial_inputs())
        vessel._record(rec, i, None, st)
    st.q_avg = rng.normal(size=6) * [10, 10, 0.1, 0.01, 0.01, 2.0]
    st.wf_offset = rng.normal(size=6) * 0.1
    last = a + 20
    ys = np.cumsum(rng.normal(size=(last - a + 1, vessel.n_state)) * 0.05, axis=0)
    ys[:, 5] += np.linspace(-3.0, 3.0, ys.shape[0])  # the yaw sweeps through +-pi: heading wrap and sign
    py_rec, py_st = copy.deepcopy(rec), copy.deepcopy(st)
    for i in range(a, last):  # the Python steps (what _run_whole did before)
        py_st.inputs = _inputs_at(py_rec, i + 1)
        vessel.advance_filters(py_st, dt, ys[i - a, :6] + py_st.wf_offset)
        vessel.apply_rao(py_st, t_grid[i + 1], ys[i + 1 - a, 5] + py_st.wf_offset[5])
        vessel._record(py_rec, i + 1, ys[i + 1 - a], py_st)
    vessel._filters_window(st, rec, ys, a, last, t_grid, dt)
    for key in py_rec:
        np.testing.assert_allclose(rec[key], py_rec[key], rtol=1e-13, atol=1e-13, err_msg=key, equal_nan=True)
    for name in ("q_avg", "wf_offset", "q_rao_prev", "rao_amp", "rao_phase"):
        np.testing.assert_allclose(getattr(st, name), getattr(py_st, name), rtol=1e-13, atol=1e-13, err_msg=name)
    assert st.chi == pytest.approx(py_st.chi, abs=1e-14) and st.n_updates == py_st.n_updates
    for name in ("rotation", "azimuth", "pitch_ratio", "rudder", "wave_force_amp", "wave_force_phase"):
        np.testing.assert_allclose(getattr(st.inputs, name), getattr(py_st.inputs, name), rtol=1e-13, atol=0)


def test_guessed_wave_knots_equal_the_python_tables():
    from models.vessel.forces import FILTER_WAVE_FORCE
    from models.vessel.frames import wrap_to_pi

    vessel = build_vessel(**ENV)
    rec = vessel._records(41)
    rec["chi"][:2] = [2.9, 3.1]  # extrapolated past pi: wrapped for the tables, kept unwrapped in chi
    vessel._guess_wave_knots(rec, 1, 40)
    for k in range(2, 41):
        famp, fph, _, _ = vessel.data.waves.at(float(wrap_to_pi(rec["chi"][k])))
        np.testing.assert_allclose(rec["wamp"][k], vessel.env.wave_amplitude * famp * FILTER_WAVE_FORCE, rtol=1e-14)
        np.testing.assert_allclose(rec["wph"][k], fph, rtol=1e-14)
    assert rec["chi"][40] == pytest.approx(3.1 + 39 * 0.2)


def test_actuator_knots_equal_the_python_steps():
    """Lags (rotation clipped to the maximum, azimuth, pitch) and the rudder rate limiter over a
    zig-zag, all steps at once, against advance_actuators step by step."""
    vessel = build_vessel(**ENV, demands={"rotation": {"main": [[0.0, 1.2], [1.0, 3.0]], "bow_thruster": [[0.5, -2.0]]},
                                          "azimuth": {"bow_thruster": [[0.7, 0.5]]},
                                          "rudder": {"rudder": [[0.0, 0.0], [0.3, 0.6], [1.5, -0.35]]}})
    n_out, dt = 25, 0.1
    t_grid = dt * np.arange(n_out + 1)
    initial = vessel.initial_inputs([0.2, 0.0], [0.1])
    st = vessel._new_state(initial, np.zeros(6), 0.0)
    rec, py_rec = vessel._records(n_out + 1), vessel._records(n_out + 1)
    py_st = copy.deepcopy(st)
    for i in range(n_out):
        vessel.advance_actuators(py_st.inputs, t_grid[i], dt, initial)
        vessel._record(py_rec, i + 1, None, py_st)
    vessel._actuator_knots(rec, st, t_grid, dt, initial)
    for key in ("rot", "az", "pd", "rud", "q_avg", "wf", "chi", "wamp", "wph"):
        np.testing.assert_allclose(rec[key][1:], py_rec[key][1:], rtol=1e-15, atol=0, err_msg=key)
    rate = vessel.data.rudders[0].rate_limit * dt  # the rudder moves at its rate limit, both ways
    assert np.max(np.abs(np.diff(rec["rud"][1:, 0]))) == pytest.approx(rate, rel=1e-9)
    assert np.min(np.diff(rec["rud"][1:, 0])) < 0 < np.max(np.diff(rec["rud"][1:, 0]))
    assert np.max(np.abs(rec["rot"][1:, 0])) <= vessel.data.propellers[0].max_rotation  # demand 3.0 clipped
