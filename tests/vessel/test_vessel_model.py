"""The vessel model layer against closed forms and independent computations."""
from __future__ import annotations

import math

import numpy as np
import pytest

import models.integrators as integrators
from models.vessel import actuators as act
from models.vessel.build import build_vessel
from models.vessel.forces import FORCE_MODELS, Inputs
from models.vessel.frames import body_to_inertial, inertial_to_body, kinematics, wrap_to_pi
from models.vessel.reference import first_order_lag, rate_limited

TANKER = "models/vessel/data/tanker.yaml"
SEED = dict(rtol=1e-8, atol=1e-10, max_num_steps=10000)
MANOEUVRE = dict(current_speed=0.5, current_direction=1.0, wind_speed=12.0, wind_direction=0.5,
                 wave_amplitude=1.0, wave_direction=0.35,
                 demands={"rotation": {"main": [[0.0, 1.2]]}, "rudder": {"rudder": [[0.0, 0.0], [3.0, 0.35]]}})


def cvode(**kw):
    return integrators.get("cvode_bdf")(**{**SEED, **kw})


def test_inverse_total_mass_matches_direct_solve():
    v = build_vessel(TANKER)
    rng = np.random.default_rng(3)
    F = rng.normal(size=(6, 20)) * np.array([1e6, 1e6, 1e6, 1e8, 1e9, 1e9])[:, None]
    direct = np.linalg.solve(v.data.total_mass, F)
    bound = 10 * np.linalg.cond(v.data.total_mass) * np.finfo(float).eps  # forward error of a stable solve
    err = np.linalg.norm(v.inv_total_mass @ F - direct, axis=0) / np.linalg.norm(direct, axis=0)
    assert np.max(err) < bound
    assert np.allclose(v.inv_total_mass @ v.data.total_mass, np.eye(6), atol=bound)


def test_compiled_total_equals_sum_of_components(tmp_path):
    rng = np.random.default_rng(5)
    for path in (TANKER, _two_rudder_file(tmp_path)):
        v = build_vessel(path, **MANOEUVRE)
        for _ in range(50):
            q = rng.normal(size=6) * [100, 100, 1, 0.05, 0.02, 3]
            nu = rng.normal(size=6) * [5, 1, 0.5, 0.02, 0.01, 0.01]
            inp = _random_inputs(rng, v)
            t = rng.uniform(0, 100)
            comps = v.loads.components(t, q, nu, inp)
            assert set(comps) == set(FORCE_MODELS)
            ref = sum(comps.values())
            assert np.allclose(v.loads.total(t, q, nu, inp), ref, rtol=1e-12, atol=1e-12 * np.max(np.abs(ref)))


def test_field_rotates_surge_and_sway_by_yaw_only():
    v = build_vessel(TANKER, forces=[])
    v._inputs = v.initial_inputs()
    y = np.array([10.0, 20.0, 0.5, 0.01, 0.02, 0.7, 3.0, -1.0, 0.2, 0.03, 0.04, 0.05])
    f = v.rhs(0.0, y)
    vn, ve = body_to_inertial(3.0, -1.0, 0.7)
    assert f[0] == pytest.approx(vn, abs=1e-15) and f[1] == pytest.approx(ve, abs=1e-15)
    assert np.array_equal(f[2:6], y[8:12])  # heave and angles: small-angle, no transformation
    assert np.array_equal(f[6:], np.zeros(6))


def test_frames_and_kinematics_closed_forms():
    rng = np.random.default_rng(11)
    u, v, psi = rng.normal(size=(3, 1000)) * [[4], [4], [5]]
    assert np.allclose(inertial_to_body(*body_to_inertial(u, v, psi), psi), (u, v), atol=1e-14)
    q = np.zeros((1000, 6))
    q[:, 5] = psi
    nu = np.zeros((1000, 6))
    nu[:, 0], nu[:, 1] = u, v
    k = kinematics(q, nu)
    assert np.allclose(wrap_to_pi(k["drift"] - np.arctan2(v, u)), 0, atol=1e-13)
    assert np.all((k["cog"] >= 0) & (k["cog"] < 2 * math.pi))
    # pure surge heading North-East: course 45 deg, drift 0
    kk = kinematics([[0, 0, 0, 0, 0, math.pi / 4]], [[2, 0, 0, 0, 0, 0]])
    assert kk["cog"][0] == pytest.approx(math.pi / 4) and kk["drift"][0] == pytest.approx(0.0, abs=1e-15)
    assert wrap_to_pi(-math.pi) == math.pi and wrap_to_pi(math.pi) == math.pi
    assert wrap_to_pi(3 * math.pi / 2) == pytest.approx(-math.pi / 2)


def test_discrete_updates_against_closed_forms():
    dt, tau = 0.1, 10.0
    x, xs = 0.0, 0.0
    a, a_s = act.lag_gain(dt, tau, "exp"), act.lag_gain(dt, tau, "seed")
    for _ in range(100):
        x, xs = act.lag_step(x, 1.0, a), act.lag_step(xs, 1.0, a_s)
    assert x == pytest.approx(1 - math.exp(-1), abs=1e-14)
    assert xs == pytest.approx(1 - (1 + dt / tau) ** -100, abs=1e-14)
    assert a_s == pytest.approx(dt / (dt + tau))
    d = 0.0
    for _ in range(20):
        d = act.rate_limit_step(d, 5.0, 0.04, dt, max_value=0.6)
    assert d == pytest.approx(20 * 0.004)
    assert act.ema_gain(dt, 16.5) == pytest.approx(1 - math.exp(-dt / 16.5))
    with pytest.raises(ValueError, match="lag form"):
        act.lag_gain(dt, tau, "euler")
    with pytest.raises(ValueError, match="strictly increasing"):
        act.Schedule([[1.0, 0.0], [0.5, 1.0]], "demands.rudder.rudder")


def test_rate_limited_reference_is_piecewise_linear():
    t = np.arange(0, 30, 0.1)
    r = rate_limited(t, 0.0, [[0.0, 0.3], [10.0, -1.0]], 0.05, 0.6)
    assert r[np.argmin(np.abs(t - 6.0))] == pytest.approx(0.3)  # reached at 6 s
    assert r[np.argmin(np.abs(t - 12.0))] == pytest.approx(0.2)  # 2 s after the reversal
    assert np.min(r) == pytest.approx(-0.6)  # clipped at the maximum angle


def test_lag_reference_forms_differ_as_expected():
    t = np.arange(0, 10.01, 0.1)
    e = first_order_lag(t, 0.0, 1.0, 10.0, 0.1, "exp")
    s = first_order_lag(t, 0.0, 1.0, 10.0, 0.1, "seed")
    assert e[-1] == pytest.approx(0.6321205588285577) and 0 < e[-1] - s[-1] < 0.01


def test_rao_motion_accumulates_to_the_closed_form_in_head_seas():
    """Fixed heading, head seas: surge WF motion = zeta |RAO| (cos(w t + phi) - cos(phi))."""
    v = build_vessel(TANKER, forces=["waves"], wave_amplitude=1.5, wave_direction=0.0)
    # no load acts on surge, sway or yaw, so the heading stays 0 and the heading table at 0 applies
    res = v.simulate(cvode(), 30.0, 0.1)
    w = v.data.waves
    ref = 1.5 * w.rao_amplitude[0, 0] * (np.cos(w.frequency * res.t + w.rao_phase[0, 0]) - math.cos(w.rao_phase[0, 0]))
    assert res.success
    assert np.max(np.abs(res.q[:, 0] - res.q_lf[:, 0] - ref)) < 1e-12
    assert np.max(np.abs(res.q[:, 1] - res.q_lf[:, 1])) < 1e-12  # no sway RAO in head seas
    assert np.max(np.abs(res.q_lf[:, 2])) > 0.01  # heave excitation acts (filterWvForce)


def test_coriolis_does_no_work():
    v = build_vessel(TANKER, forces=["coriolis"])
    rng = np.random.default_rng(2)
    inp = v.initial_inputs()
    for _ in range(20):
        nu = rng.normal(size=6) * [5, 1, 0.5, 0.02, 0.01, 0.01]
        F = v.loads.total(0.0, np.zeros(6), nu, inp)
        assert abs(nu @ F) <= 1e-12 * np.linalg.norm(F) * np.linalg.norm(nu)


def test_solve_modes_agree_and_energy_balances():
    v = build_vessel(TANKER, track_work=True, **MANOEUVRE)
    kw = dict(nu0=[5, 0, 0, 0, 0, 0], rotation0=[1.2, 0.0])
    a = v.simulate(cvode(), 10.0, 0.1, solve_mode="per_step", **kw)
    b = v.simulate(cvode(), 10.0, 0.1, solve_mode="window", window=20, **kw)
    assert a.success and b.success and b.stats["windows"] == 5
    assert np.max(np.hypot(*(a.q[:, :2] - b.q[:, :2]).T)) < 1e-5  # m, over ~50 m of track
    assert np.max(np.abs(a.rotation - b.rotation)) == 0.0  # the same per-step actuator updates
    for r in (a, b):
        T = v.kinetic_energy(r.nu)
        assert np.max(np.abs(T - T[0] - (r.work - r.work[0]))) / np.max(T) < 1e-6


def test_updates_inside_the_field_depend_on_the_call_count():
    v = build_vessel(TANKER, **MANOEUVRE)
    kw = dict(nu0=[5, 0, 0, 0, 0, 0])
    step = v.simulate(cvode(), 2.0, 0.1, **kw)
    rhs = v.simulate(cvode(), 2.0, 0.1, stateful="rhs", **kw)
    assert step.stateful_updates == 20
    assert rhs.stateful_updates == rhs.stats["nfev"] > 20 * 5
    n_ref = first_order_lag(step.t, 0.0, 1.2, v.data.propellers[0].rotation_time, 0.1)
    assert np.max(np.abs(step.rotation[:, 0] - n_ref)) < 1e-14
    assert np.max(np.abs(rhs.rotation[1:, 0] - n_ref[1:])) > 0.1  # lagged far too fast


def test_bad_simulation_arguments():
    v = build_vessel(TANKER)
    with pytest.raises(ValueError, match="whole number of output steps"):
        v.simulate(cvode(), 1.05, 0.1)
    with pytest.raises(ValueError, match="solve_mode"):
        v.simulate(cvode(), 1.0, 0.1, solve_mode="fast")
    with pytest.raises(ValueError, match="demands.rudder"):
        build_vessel(TANKER, demands={"rudder": {"flap": [[0, 0.1]]}})
    with pytest.raises(ValueError, match="forces"):
        build_vessel(TANKER, forces=["gravity"])
    with pytest.raises(ValueError, match="environment.wind_speed"):
        build_vessel(TANKER, wind_speed=-1.0)


def test_input_hold_between_knots():
    """linear: knot_i + theta (knot_i+1 - knot_i) on (t_i, t_i+1]; zoh: knot_i+1 there."""
    from models.vessel.vessel import _KNOTS, _InputTrack

    t = np.array([0.0, 0.1, 0.2, 0.3])
    knots = {k: np.arange(4.0)[:, None] * (j + 1) for j, k in enumerate(_KNOTS)}
    lin, zoh = _InputTrack(t, knots, "linear"), _InputTrack(t, knots, "zoh")
    assert lin.at(0.1).rotation[0] == pytest.approx(1.0)  # end of the first interval
    assert lin.at(0.15).rudder[0] == pytest.approx(1.5 * 4)
    assert zoh.at(0.1).rotation[0] == 1.0 and zoh.at(0.1 + 1e-12).rotation[0] == 2.0
    assert zoh.at(0.0).wave_force_phase[0] == 6.0  # t0 belongs to the first interval


def _two_rudder_file(tmp_path) -> str:
    """The tanker with a second rudder outside any propeller race (propeller -1)."""
    import yaml

    from models.vessel.build import resolve_data_file

    doc = yaml.safe_load(resolve_data_file(TANKER).read_text())
    flap = {**doc["rudders"][0], "name": "flap", "position": [-60.0, 2.0, 4.0], "area": 12.0, "propeller": -1}
    doc["rudders"].append(flap)
    path = tmp_path / "two_rudders.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _random_inputs(rng, v) -> Inputs:
    k, r = len(v.data.propellers), len(v.data.rudders)
    return Inputs(rng.uniform(-1.6, 1.6, k), rng.uniform(-3, 3, k), rng.uniform(0.5, 1.2, k), rng.uniform(-0.6, 0.6, r),
                  rng.normal(size=6) * 1e7, rng.normal(size=6))


def _reference_rhs(v, t, y):
    """The field assembled in numpy from the per-model load methods (``components``)."""
    inp = v._track.at(t) if v._track is not None else v._inputs
    q, nu = y[:6], y[6:12]
    F = sum(v.loads.components(t, q, nu, inp).values(), np.zeros(6))
    c, s = math.cos(q[5]), math.sin(q[5])
    out = np.concatenate([[c * nu[0] - s * nu[1], s * nu[0] + c * nu[1]], nu[2:6], v.inv_total_mass @ F])
    return np.append(out, nu @ F) if y.size > 12 else out


@pytest.mark.parametrize("forces", [FORCE_MODELS, ("rudders",), ("propellers", "wind", "coriolis"),
                                    ("current", "linear_damping", "quadratic_damping", "restoring", "waves"), ()])
def test_compiled_field_equals_the_numpy_assembly(tmp_path, forces):
    """The compiled field (loads, input track, kinematics) against the per-model numpy loads."""
    from models.vessel import compiled
    from models.vessel.vessel import _KNOTS, _InputTrack

    assert compiled.COMPILED and hasattr(compiled.field, "signatures")  # really the numba dispatcher
    rng = np.random.default_rng(17)
    for path in (TANKER, _two_rudder_file(tmp_path)):
        v = build_vessel(path, forces=list(forces), track_work=True, **MANOEUVRE)
        for trial in range(40):
            y = np.concatenate([rng.normal(size=6) * [100, 100, 1, 0.05, 0.02, 3],
                                rng.normal(size=6) * [5, 1, 0.5, 0.02, 0.01, 0.01], [0.0]])
            if trial == 0:  # at rest: zero relative flow in the current and wind branches
                y[6:] = 0.0
            t = float(rng.uniform(0, 100))
            if trial % 2:  # inputs held (per-step and in-field modes)
                v._inputs, v._track = _random_inputs(rng, v), None
            else:  # inputs interpolated or held between three knots
                rows = [_random_inputs(rng, v) for _ in range(3)]
                knots = {k: np.array([getattr(r, a) for r in rows])
                         for k, a in zip(_KNOTS, ("rotation", "azimuth", "pitch_ratio", "rudder", "wave_force_amp",
                                                  "wave_force_phase"))}
                grid = t + np.array([0.0, 0.1, 0.2])
                v._track = _InputTrack(grid, knots, "linear" if trial % 4 == 0 else "zoh")
                t = float(rng.choice([grid[0], grid[1], grid[2], rng.uniform(grid[0], grid[2])]))
            a, b = v.rhs(t, y), _reference_rhs(v, t, y)
            for block in (slice(0, 6), slice(6, 12), slice(12, 13)):
                scale = max(np.max(np.abs(b[block])), 1e-300)
                assert np.allclose(a[block], b[block], rtol=1e-12, atol=1e-12 * scale), (path, trial, block)


def test_compiled_field_gives_the_numpy_trajectory():
    from models.vessel.vessel import Vessel

    class NumpyVessel(Vessel):
        rhs = _reference_rhs

    kw = dict(nu0=[5, 0, 0, 0, 0, 0], rotation0=[1.2, 0.0])
    fast = build_vessel(TANKER, **MANOEUVRE)
    ref = build_vessel(TANKER, **MANOEUVRE)
    ref.__class__ = NumpyVessel
    # tight tolerances: two fields equal to round-off but summed in another order take other
    # steps, and the trajectories then differ by the integrator's error (5.5e-7 m at 1e-8)
    tight = dict(rtol=1e-12, atol=1e-12)
    a, b = fast.simulate(cvode(**tight), 10.0, 0.1, **kw), ref.simulate(cvode(**tight), 10.0, 0.1, **kw)
    assert a.success and b.success
    assert np.max(np.abs(a.q - b.q)) < 1e-9 and np.max(np.abs(a.nu - b.nu)) < 1e-9
