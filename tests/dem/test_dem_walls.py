"""Walls (servo, prescribed motion, strips), gravity and rolling resistance against closed forms."""
import numpy as np
import pytest

from models.dem import ContactLaw, DEMSystem, Material, Servo, Wall
from models.integrators.verlet import make_stepper

SOFT = Material(1e7, 0.3, 2500.0)


def _run(system, n, integrator="velocity_verlet"):
    st = make_stepper(integrator, system.dt)
    q, u = system.initial_state()
    return st.run(0.0, q, u, system.accel, n)


def test_servo_platen_holds_target_force():
    R, F_target = 0.01, 5.0
    law = ContactLaw("hertz_mindlin", restitution=0.3)
    platen = Wall((0, 2 * R, 0), (0, -1, 0), servo=Servo(F_target, gain=1e-2, v_max=0.05), name="platen")
    floor = Wall((0, 0, 0), (0, 1, 0), name="floor")
    sys_ = DEMSystem([R], [[0, R, 0]], SOFT, law, 1e-5, walls=[floor, platen], gravity=(0, -9.81, 0), v_ref=0.5)
    _run(sys_, 12000)
    m = sys_.mass[0]
    F_platen = -sys_.wall_force[1] @ platen.n
    F_floor = -sys_.wall_force[0] @ floor.n
    assert F_platen == pytest.approx(F_target, rel=1e-3)
    assert F_floor == pytest.approx(F_target + m * 9.81, rel=1e-3)  # static balance


def test_rolling_resistance_deceleration():
    """Constant rolling torque mu_r R F_n on a rolling sphere: a = -(5/7) mu_r g (solid sphere)."""
    R, v0, mu_r, g = 0.01, 0.5, 0.02, 9.81
    law = ContactLaw("hertz_mindlin", restitution=0.5, tangential="mindlin", friction=0.8, rolling_friction=mu_r)
    m = SOFT.density * 4 / 3 * np.pi * R ** 3
    K = 4 / 3 * SOFT.E / (1 - SOFT.nu ** 2) * np.sqrt(R)
    d0 = (m * g / K) ** (2 / 3)  # static overlap
    dt = 1e-5
    sys_ = DEMSystem([R], [[0, R - d0, 0]], SOFT, law, dt, velocities=[[v0, 0, 0]],
                     omegas=[[0, 0, -v0 / R]], walls=[Wall((0, 0, 0), (0, 1, 0))], gravity=(0, -g, 0), v_ref=0.5)
    T = 0.2
    s = _run(sys_, int(round(T / dt)))
    a = (s.v[0, 0] - v0) / T
    assert a == pytest.approx(-5 / 7 * mu_r * g, rel=1e-2)
    # still rolling: only the undamped tangential spring vibrates (amplitude ~ F_t / sqrt(k_t m))
    assert abs(s.v[0, 0] + R * s.v[1, 2]) < 1e-3 * v0


def test_moving_wall_pushes_at_its_speed():
    R, vw = 0.01, 0.02
    law = ContactLaw("hertz_mindlin", restitution=0.2)
    wall = Wall((-R, 0, 0), (1, 0, 0), velocity=(vw, 0, 0))
    sys_ = DEMSystem([R], [[0.0, 0, 0]], SOFT, law, 1e-5, walls=[wall], v_ref=0.1)
    s = _run(sys_, 10000)
    # inelastic pushes by a wall at constant speed end with the sphere ahead at >= the wall speed
    assert s.v[0, 0] >= vw * (1 - 1e-9)
    assert wall.p[0] == pytest.approx(-R + vw * 10000 * 1e-5, rel=1e-12)


def test_strip_wall_edge_contact_normal():
    """A sphere beyond the end of a bounded wall touches its edge along the edge-to-centre line."""
    R = 0.01
    wall = Wall((0, 0, 0), (0, 1, 0), axis=0, bounds=(-np.inf, 0.0), name="strip")
    x = np.array([[0.6 * R, 0.6 * R, 0.0]])
    sys_ = DEMSystem([R], x, SOFT, ContactLaw("hertz"), 1e-6, walls=[wall], v_ref=0.1, max_initial_overlap=1.0)
    i, k, delta, n = sys_._wall_contacts(x)
    assert delta[0] == pytest.approx(R - np.hypot(0.6 * R, 0.6 * R))
    assert np.allclose(n[0], -np.array([1.0, 1.0, 0.0]) / np.sqrt(2))
