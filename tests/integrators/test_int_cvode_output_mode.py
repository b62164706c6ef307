"""CVODE's CV_NORMAL output mode (interpolated outputs) against the exact-stop mode."""
import numpy as np
import pytest

from models.integrators import get
from models.integrators.base import ODEProblem


def _oscillator():
    w = 3.0
    rhs = lambda t, y: np.array([y[1], -w * w * y[0]])
    return ODEProblem(rhs=rhs, y0=np.array([1.0, 0.0]), t_span=(0.0, 10.0)), w


def test_interpolated_outputs_match_the_closed_form_with_fewer_steps():
    prob, w = _oscillator()
    t_eval = np.linspace(0.0, 10.0, 1001)  # dense outputs, as the vessel loop has
    stop = get("cvode_bdf")(rtol=1e-10, atol=1e-12).solve(prob, t_eval)
    free = get("cvode_bdf")(rtol=1e-10, atol=1e-12, output_mode="interpolate").solve(prob, t_eval)
    assert stop.success and free.success
    exact = np.cos(w * t_eval)
    assert np.max(np.abs(free.y[:, 0] - exact)) < 1e-7
    assert np.max(np.abs(stop.y[:, 0] - exact)) < 1e-7
    assert free.stats.nfev < stop.stats.nfev  # no forced stop at every output time
    assert "n_steps" in free.diagnostics["not_reported"]
    assert "n_steps" not in stop.diagnostics.get("not_reported", [])


def test_unknown_output_mode_is_refused():
    prob, _ = _oscillator()
    sol = None
    with pytest.raises(ValueError, match="output_mode"):
        sol = get("cvode_bdf")(output_mode="bogus").solve(prob, [0.0, 1.0])
        if sol is not None and not sol.success:
            raise ValueError(sol.failure_reason)
