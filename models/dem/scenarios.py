"""Multi-particle scenarios of the thesis's chapter 3 checks (plain functions, SI units).

* :func:`elastic_gas`: N frictionless Hertz spheres with random velocities in a closed box of
  rigid walls, no gravity, no damping (the constant-energy simulation); returns the energy
  history.
* :func:`head_on_pair`, :func:`three_on_one`: consistency tests (momentum, symmetry).
* :func:`bouncing_ball`: a sphere dropped on a rigid floor, Hertz-Mindlin with gravity;
  returns the apex heights.
"""
from __future__ import annotations

import numpy as np

from models.dem.laws import ContactLaw
from models.dem.materials import Material
from models.dem.system import DEMSystem
from models.dem.walls import Wall
from models.integrators.verlet import make_stepper


def _box_walls(L: float):
    walls = []
    for ax in range(3):
        nrm = np.zeros(3)
        nrm[ax] = 1.0
        walls.append(Wall(np.zeros(3), nrm, name=f"min{ax}"))
        p = np.zeros(3)
        p[ax] = L
        walls.append(Wall(p, -nrm, name=f"max{ax}"))
    return walls


def elastic_gas(material: Material, n_side: int, radius: float, speed: float, t_end: float, dt: float,
                integrator: str, seed: int = 0, n_out: int = 200):
    """Energy history (t, E_total) of an elastic gas of n_side^3 spheres in a cubic box."""
    rng = np.random.default_rng(seed)
    pitch = 2.5 * radius
    L = n_side * pitch
    g = (np.arange(n_side) + 0.5) * pitch
    X, Y, Z = np.meshgrid(g, g, g, indexing="ij")
    pos = np.column_stack([X.ravel(), Y.ravel(), Z.ravel()])
    N = pos.shape[0]
    vel = rng.normal(size=(N, 3))
    vel -= vel.mean(axis=0)
    vel *= speed / np.sqrt(np.mean(np.sum(vel ** 2, axis=1)))
    law = ContactLaw("hertz")
    system = DEMSystem(np.full(N, radius), pos, material, law, dt, velocities=vel, walls=_box_walls(L),
                       v_ref=float(np.max(np.linalg.norm(vel, axis=1))))
    stepper = make_stepper(integrator, dt)
    q, u = system.initial_state()
    n_steps = int(round(t_end / dt))
    every = max(1, n_steps // n_out)
    s = stepper.start(0.0, q, u, system.accel)
    ts, Es, n_contacts = [0.0], [system.energy(s.x, s.v)["total"]], 0
    for k in range(n_steps):
        s = stepper.step(s, system.accel)
        n_contacts += system.contacts_pp.i.size + (system.contacts_pw.i.size if system.contacts_pw else 0)
        if (k + 1) % every == 0:
            ts.append(s.t)
            Es.append(system.energy(s.x, s.v)["total"])
    return np.array(ts), np.array(Es), {"n_particles": N, "contact_steps": n_contacts, "t_contact": system.t_contact}


def _run_free(system: DEMSystem, integrator: str, t_end: float):
    stepper = make_stepper(integrator, system.dt)
    q, u = system.initial_state()
    s = stepper.start(0.0, q, u, system.accel)
    for _ in range(int(round(t_end / system.dt))):
        s = stepper.step(s, system.accel)
    return s


def head_on_pair(material: Material, radius: float, v: float, law: ContactLaw, dt: float, integrator: str):
    """Two equal spheres, velocities +v and -v along x: returns (p0, p1, v_final (2, 3))."""
    pos = [[0.0, 0.0, 0.0], [2.0 * radius, 0.0, 0.0]]
    vel = [[v, 0.0, 0.0], [-v, 0.0, 0.0]]
    system = DEMSystem([radius, radius], pos, material, law, dt, velocities=vel, v_ref=2 * v)
    s = _run_free(system, integrator, 6.0 * system.t_contact)
    vf = s.v[:2]
    p0 = system.mass[:, None] * np.array(vel)
    return p0.sum(axis=0), (system.mass[:, None] * vf).sum(axis=0), vf, system.mass


def three_on_one(material: Material, radius: float, v: float, law: ContactLaw, dt: float, integrator: str):
    """Three equal spheres at 120 degrees (plane z = 0) hit a fourth at rest at the origin.

    Returns (total momentum before, after, final velocities (4, 3), masses).
    """
    ang = np.deg2rad([90.0, 210.0, 330.0])
    dirs = np.column_stack([np.cos(ang), np.sin(ang), np.zeros(3)])
    pos = np.vstack([[0.0, 0.0, 0.0], 2.0 * radius * dirs])
    vel = np.vstack([[0.0, 0.0, 0.0], -v * dirs])
    system = DEMSystem(np.full(4, radius), pos, material, law, dt, velocities=vel, v_ref=2 * v)
    s = _run_free(system, integrator, 8.0 * system.t_contact)
    vf = s.v[:4]
    return (system.mass[:, None] * vel).sum(axis=0), (system.mass[:, None] * vf).sum(axis=0), vf, system.mass


def bouncing_ball(material: Material, radius: float, drop_height: float, law: ContactLaw, dt: float,
                  integrator: str, n_bounces: int = 3, gravity: float = 9.81):
    """Apex heights of the centre above the touching height (m): the drop and ``n_bounces`` rebounds."""
    g = np.array([0.0, -gravity, 0.0])
    pos = [[0.0, radius + drop_height, 0.0]]
    v_imp = np.sqrt(2 * gravity * drop_height)
    system = DEMSystem([radius], pos, material, law, dt, walls=[Wall(np.zeros(3), (0.0, 1.0, 0.0), name="floor")],
                       gravity=g, v_ref=v_imp)
    stepper = make_stepper(integrator, dt)
    q, u = system.initial_state()
    s = stepper.start(0.0, q, u, system.accel)
    apex = [drop_height]
    prev_vy = s.v[0, 1]
    max_steps = int(50 * np.sqrt(2 * drop_height / gravity) * (n_bounces + 1) / dt)
    for _ in range(max_steps):
        prev_y = s.x[0, 1]
        s = stepper.step(s, system.accel)
        vy = s.v[0, 1]
        if prev_vy > 0 >= vy:  # apex between the steps: parabola through the state
            y_apex = s.x[0, 1] + vy * vy / (2 * gravity) if vy <= 0 else prev_y
            apex.append(y_apex - radius)
            if len(apex) > n_bounces:
                break
        prev_vy = vy
    return np.array(apex)
