"""The compiled in-place field that CVODE calls directly against the wrapped Python path:
the same trajectory bit for bit, the same counters, one CVODE object for all windows."""
import numpy as np
import pytest

import models.integrators as integrators
from models.vessel import compiled
from models.vessel.build import build_vessel

ENV = dict(data_file="models/vessel/data/tanker.yaml", current_speed=0.5, current_direction=1.047,
           wind_speed=12.0, wind_direction=0.52, wave_amplitude=1.0, wave_direction=0.35,
           demands={"rotation": {"main": [[0.0, 1.2]]}, "rudder": {"rudder": [[0.0, 0.0], [2.0, 0.35]]}})
SIM = dict(t_end=6.0, dt=0.1, nu0=[5.0, 0.0, 0.0, 0.0, 0.0, 0.0], rotation0=[1.2, 0.0])


@pytest.mark.parametrize("jacobian,track_work,hold,mode", [("analytic", False, "linear", "interpolate"),
                                                           ("none", False, "linear", "stop"),
                                                           ("analytic", True, "zoh", "stop")])
def test_inplace_field_gives_the_wrapped_trajectory_exactly(jacobian, track_work, hold, mode):
    runs = []
    for inplace in (True, False):
        vessel = build_vessel(**ENV, jacobian=jacobian, track_work=track_work)
        if not inplace:
            vessel._inplace_field = lambda: None  # the counted Python rhs / jac of every other integrator
        integ = integrators.get("cvode_bdf")(rtol=1e-8, atol=1e-10, output_mode=mode)
        runs.append(vessel.simulate(integ, hold=hold, window=20, **SIM))
    fast, wrapped = runs
    assert fast.success and wrapped.success
    assert np.array_equal(fast.q, wrapped.q) and np.array_equal(fast.nu, wrapped.nu)
    if track_work:
        assert np.array_equal(fast.work, wrapped.work)
    for key in ("nfev", "njev", "n_solves", "passes"):
        assert fast.stats[key] == wrapped.stats[key], key
    assert fast.stats["n_solves"] >= 6  # several windows, two passes each


def test_one_cvode_object_serves_every_window():
    vessel = build_vessel(**ENV)
    integ = integrators.get("cvode_bdf")(rtol=1e-8, atol=1e-10, output_mode="interpolate")
    made = []
    original = integ._reused_solver

    def spy(*args):
        solver = original(*args)
        made.append(id(solver))
        return solver

    integ._reused_solver = spy
    res = vessel.simulate(integ, **SIM)
    assert res.success and len(made) == res.stats["n_solves"] >= 6
    assert len(set(made)) == 1


def test_packed_arguments_unpack_to_the_field_arguments():
    vessel = build_vessel(**ENV, track_work=True)
    rng = np.random.default_rng(3)
    packed = (vessel.inv_total_mass, *vessel.loads.packed)
    (fb, ib), (base, slope, tg) = compiled.pack(8, 17, *packed)
    n = 5
    base[:n], slope[:n], tg[:n + 1] = rng.normal(size=(n, 17)), rng.normal(size=(n, 17)), 0.1 * np.arange(n + 1)
    ib[0], ib[1] = n, 1
    y = rng.normal(size=13) * 0.1
    y[6] = 5.0
    for t in (0.05, 0.23, 0.5):
        out = np.empty(13)
        compiled.field_into(t, y, out, (fb, ib))
        ref = compiled.field(t, y, base[:n], slope[:n], tg[:n + 1], True, *packed)
        np.testing.assert_allclose(out, ref, rtol=1e-13, atol=1e-13 * np.max(np.abs(ref)))  # the same arithmetic
        J = np.empty((13, 13))
        compiled.jacobian_into(t, y, out, J, (fb, ib))
        Jref = compiled.jacobian(t, y, base[:n], slope[:n], tg[:n + 1], True, *packed)
        np.testing.assert_allclose(J, Jref, rtol=1e-13, atol=1e-13 * np.max(np.abs(Jref)))


def test_a_non_finite_field_is_a_failed_result_naming_the_field():
    vessel = build_vessel(**ENV)
    res = vessel.simulate(integrators.get("cvode_bdf")(), 1.0, 0.1, nu0=[np.nan, 0, 0, 0, 0, 0])
    assert not res.success and "field" in res.failure_reason and "non-finite" in res.failure_reason
