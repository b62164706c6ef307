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
