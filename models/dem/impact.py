"""One binary impact: sphere-sphere (two materials allowed) or sphere-wall (rigid or elastic).

>>> from models.dem import Material, ContactLaw, binary_impact
>>> glass = Material(E=63e9, nu=0.23, density=2500.0)
>>> r = binary_impact(glass, 0.005, None, None, v_n=1.0, law=ContactLaw("hertz"))
>>> round(r.restitution, 6)
1.0

Two materials use Hertz's effective properties ``1/E* = (1-nu1^2)/E1 + (1-nu2^2)/E2``,
``1/R* = 1/R1 + 1/R2``, ``1/m* = 1/m1 + 1/m2`` (and Mindlin's G*); a wall with a
``wall_material`` is elastic (its E, nu enter E*), without one it is rigid. An oblique impact is
given by its speed and incidence angle through :func:`incidence_velocity`.

Geometry: the normal is +y; body 1 starts touching body 2 (or the wall y = 0) at t = 0; the
tangential direction is +x, spins are about any axis (rad/s). ``v_n`` (m/s, > 0) is the
approach speed and ``v_t`` the tangential relative velocity of the centres; a sphere pair is
set in its centre-of-mass frame. Gravity is off. The contact ends when the overlap returns
to zero (``law.attractive``) or when the normal force vanishes (no attractive force); both
ends are located by linear interpolation between steps.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

import numpy as np

from models.dem.closed_forms import hertz_impact, linear_impact
from models.dem.laws import ContactLaw
from models.dem.materials import DEMInputError, Material, check_positive, effective_mass, effective_modulus, effective_radius
from models.dem.system import DEMSystem
from models.dem.walls import Wall
from models.integrators.verlet import make_stepper

log = logging.getLogger(__name__)


@dataclass
class ImpactResult:
    """Outcome of one impact (SI units); rebound quantities are taken after separation.

    duration, max_overlap, max_force; v_n_rebound (separation speed, > 0 for a rebound);
    restitution = v_n_rebound / v_n; v_t_rebound (relative tangential velocity of the
    centres); omega1, omega2 rebound spins (rad/s, omega2 None for a wall);
    v1, v2 rebound velocities; series: t, overlap, force per step when ``record``;
    v_t: the tangential approach velocity given; v_c_t, v_c_t_rebound: the contact points'
    relative tangential velocity before and after (m/s), from which ``tangential_restitution``.
    """

    duration: float
    max_overlap: float
    max_force: float
    v_n_rebound: float
    restitution: float
    v_t_rebound: float
    omega1: np.ndarray
    omega2: Optional[np.ndarray]
    v1: np.ndarray
    v2: Optional[np.ndarray]
    dt: float
    n_steps: int
    momentum_error: float = 0.0
    series: dict = field(default_factory=dict)
    v_t: float = 0.0
    v_c_t: float = 0.0
    v_c_t_rebound: float = 0.0

    @property
    def tangential_ratio(self) -> float:
        """v_t_rebound / v_t of the centres (-); NaN for a normal impact (v_t = 0)."""
        return self.v_t_rebound / self.v_t if self.v_t else float("nan")

    @property
    def tangential_restitution(self) -> float:
        """e_t = -v_c,t' / v_c,t of the contact points' relative tangential velocity (-).

        -1 for a frictionless (smooth) impact, +1 for a perfectly rough elastic reversal; NaN
        when the contact points did not slide on arrival (v_c,t = 0).
        """
        return -self.v_c_t_rebound / self.v_c_t if self.v_c_t else float("nan")

    @property
    def rebound_angle_deg(self) -> float:
        """Rebound angle of the centres' relative velocity from the normal (degrees)."""
        return float(np.degrees(np.arctan2(abs(self.v_t_rebound), self.v_n_rebound)))


def incidence_velocity(speed: float, angle_deg: float) -> Tuple[float, float]:
    """Normal and tangential approach velocities (v_n, v_t) [m/s] of an oblique impact.

    ``speed`` [m/s] > 0 of the centres' relative velocity, ``angle_deg`` the incidence angle
    from the normal in [0, 90) degrees: ``v_n = speed cos(angle)``, ``v_t = speed sin(angle)``.

    >>> v_n, v_t = incidence_velocity(2.0, 60.0)
    >>> round(v_n, 12), round(v_t, 12)
    (1.0, 1.732050807569)
    >>> # binary_impact(steel, 0.005, v_n=v_n, v_t=v_t, law=...)
    """
    check_positive("speed", speed)
    if not (np.isfinite(angle_deg) and 0.0 <= angle_deg < 90.0):
        raise DEMInputError(f"angle_deg: incidence angle from the normal must lie in [0, 90) degrees, "
                            f"got {angle_deg!r}")
    a = np.radians(angle_deg)
    return float(speed * np.cos(a)), float(speed * np.sin(a))


def elastic_reference(material1: Material, R1: float, material2: Optional[Material], R2: Optional[float],
                      v_n: float, law: ContactLaw, dim: int = 3, thickness=None,
                      wall_material: Optional[Material] = None):
    """Closed-form elastic impact (linear or Hertz part of ``law``) and its (E*, R*, m*).

    Parameters
    ----------
    material1, R1 : body 1 and its radius [m]. material2, R2 : body 2, or ``None, None`` for a wall.
    v_n : approach speed [m/s]. law : the contact law (its elastic part is used).
    dim, thickness : 3 for spheres, 2 for disks of thickness [m] (default 2R).
    wall_material : the wall's material (elastic wall: its E, nu enter E*); ``None`` = rigid.

    Returns
    -------
    (ElasticImpact, (E*, R*, m*)) : duration [s], max overlap [m], max force [N]; Pa, m, kg.

    >>> from models.dem import Material, ContactLaw
    >>> steel = Material(210e9, 0.3, 7800.0)
    >>> ref, (Es, Rs, ms) = elastic_reference(steel, 0.005, None, None, 1.0, ContactLaw("hertz"),
    ...                                       wall_material=steel)
    >>> round(Es / 210e9 * 2 * (1 - 0.3**2), 12)   # two equal half-spaces: E* = E / (2(1-nu^2))
    1.0
    """
    check_positive("radius", R1)
    if R2 is not None:
        check_positive("radius2", R2)
    check_positive("v_n", v_n)
    sys1 = _mass(material1, R1, dim, thickness)
    if material2 is None:
        wall = (None, None) if wall_material is None else (wall_material.E, wall_material.nu)
        Estar, Rstar, mstar = float(effective_modulus(material1.E, material1.nu, *wall)), R1, sys1
    else:
        m2 = _mass(material2, R2, dim, thickness)
        Estar = float(effective_modulus(material1.E, material1.nu, material2.E, material2.nu))
        Rstar, mstar = float(effective_radius(R1, R2)), float(effective_mass(sys1, m2))
    if law.is_hertzian:
        ref = hertz_impact(Estar, Rstar, mstar, v_n)
    else:
        ref = linear_impact(law.k_n, mstar, v_n)
    return ref, (Estar, Rstar, mstar)


def _mass(mat: Material, R: float, dim: int, thickness) -> float:
    if dim == 3:
        return mat.density * 4.0 / 3.0 * np.pi * R ** 3
    L = 2.0 * R if thickness is None else thickness
    return mat.density * np.pi * R ** 2 * L


def binary_impact(material1: Material, R1: float, material2: Optional[Material] = None,
                  R2: Optional[float] = None, *, v_n: float, law: ContactLaw, v_t: float = 0.0,
                  omega1: Sequence[float] = (0.0, 0.0, 0.0), omega2: Sequence[float] = (0.0, 0.0, 0.0),
                  wall_material: Optional[Material] = None, dt: Optional[float] = None,
                  steps_per_contact: int = 200, integrator: str = "velocity_verlet", dim: int = 3,
                  thickness=None, record: bool = False, allow_large_dt: bool = False) -> ImpactResult:
    """Simulate one impact and measure it (see the module docstring for the geometry).

    Parameters
    ----------
    material1, R1 : body 1 and its radius [m].
    material2, R2 : body 2 (any material) and its radius [m]; ``None, None`` for a wall,
        rigid unless ``wall_material`` is given.
    v_n, v_t : normal approach speed (> 0) and tangential relative velocity [m/s]
        (:func:`incidence_velocity` converts a speed and an incidence angle).
    omega1, omega2 : initial spins (3,) [rad/s].
    law : the contact law. dt : step [s]; default the elastic contact time / ``steps_per_contact``.
    integrator : ``velocity_verlet``, ``verlet`` or ``leapfrog``. dim, thickness : 3 spheres or 2 disks.
    record : keep the time series (t, overlap, force) in ``series``.

    Returns
    -------
    ImpactResult : duration [s], max overlap [m], max force [N], rebound velocities, restitution,
        tangential ratio and restitution, momentum error.

    >>> from models.dem import Material, ContactLaw, binary_impact, elastic_reference
    >>> steel, nylon = Material(210e9, 0.29, 7850.0), Material(2.5e9, 0.4, 1140.0)
    >>> r = binary_impact(steel, 0.005, nylon, 0.005, v_n=1.0, law=ContactLaw("hertz"))
    >>> ref, _ = elastic_reference(steel, 0.005, nylon, 0.005, 1.0, ContactLaw("hertz"))
    >>> round(float(r.duration / ref.duration), 3)
    1.0
    """
    if not np.isfinite(v_n) or v_n <= 0:
        raise DEMInputError(f"v_n: approach speed must be > 0 m/s, got {v_n!r}")
    if (material2 is None) != (R2 is None):
        raise DEMInputError("material2 and R2: give both for a sphere pair, neither for a wall")
    ref, _ = elastic_reference(material1, R1, material2, R2, v_n, law, dim, thickness,
                               wall_material=wall_material if material2 is None else None)
    h = ref.duration / steps_per_contact if dt is None else float(dt)
    wall_case = material2 is None
    w1 = np.array(omega1, dtype=float)
    w2 = np.array(omega2, dtype=float)
    if wall_case:
        wall = Wall((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), wall_material, name="floor")
        system = DEMSystem([R1], [[0.0, R1, 0.0]], material1, law, h, velocities=[[v_t, -v_n, 0.0]],
                           omegas=[w1], walls=[wall], dim=dim, thickness=thickness,
                           v_ref=v_n, allow_large_dt=allow_large_dt)
    else:
        m1, m2 = _mass(material1, R1, dim, thickness), _mass(material2, R2, dim, thickness)
        mats = material1 if material2 == material1 else [material1, material2]
        vrel = np.array([v_t, v_n, 0.0])  # v1 - v2, body 1 below body 2
        v1 = m2 / (m1 + m2) * vrel
        v2 = -m1 / (m1 + m2) * vrel
        system = DEMSystem([R1, R2], [[0.0, 0.0, 0.0], [0.0, R1 + R2, 0.0]], mats, law, h,
                           velocities=[v1, v2], omegas=[w1, w2], dim=dim, thickness=thickness,
                           v_ref=v_n, allow_large_dt=allow_large_dt)
    stepper = make_stepper(integrator, h)
    q0, u0 = system.initial_state()
    state = stepper.start(0.0, q0, u0, system.accel)
    p0 = (system.mass[:, None] * state.v[: system.N]).sum(axis=0)

    def gap_and_force(s):
        x = s.x[: system.N]
        if wall_case:
            delta = R1 - x[0, 1]
        else:
            delta = R1 + R2 - np.linalg.norm(x[1] - x[0])
        cs = system.contacts_pw if wall_case else system.contacts_pp
        if cs is not None and cs.fn.size:
            return delta, float(cs.fn[0]), float(cs.fn_raw[0])
        return delta, 0.0, -1.0

    ts, ds, fs = [0.0], [0.0], [0.0]
    prev = (0.0, 0.0, 0.0)
    t_end = None
    max_steps = int(20 * steps_per_contact * max(1.0, ref.duration / h / steps_per_contact)) + 10
    for _ in range(max_steps):
        state = stepper.step(state, system.accel)
        delta, fn, fn_raw = gap_and_force(state)
        ts.append(state.t), ds.append(delta), fs.append(fn)
        if t_end is None:
            g_prev = prev[0] if law.attractive else (prev[2] if prev[0] > 0 else -1.0)
            g_now = delta if law.attractive else (fn_raw if delta > 0 else -1.0)
            if state.step > 1 and g_now <= 0.0 < g_prev:
                if not law.attractive and g_now == -1.0:  # separated within the step: use the overlap
                    g_prev, g_now = prev[0], delta
                t_end = ts[-2] + h * g_prev / (g_prev - g_now)
        prev = (delta, fn, fn_raw)
        if t_end is not None and delta < 0.0:
            break
    else:
        raise RuntimeError(f"binary_impact: no separation within {max_steps} steps")
    x_v = state.v[: system.N]
    w_v = state.v[system.N:]
    ey = np.array([0.0, 1.0, 0.0])
    if wall_case:
        v_rel = x_v[0]
        v_n_reb, v_t_reb = float(v_rel[1]), float(v_rel[0])
        p_err = 0.0
        # contact point of the sphere at -R1 e_y; the wall does not move
        vc_in = float((np.array([v_t, -v_n, 0.0]) + np.cross(w1, -R1 * ey))[0])
        vc_out = float((x_v[0] + np.cross(w_v[0], -R1 * ey))[0])
    else:
        v_rel = x_v[0] - x_v[1]
        v_n_reb, v_t_reb = float(-v_rel[1]), float(v_rel[0])
        # contact points: body 1 at +R1 e_y, body 2 at -R2 e_y (tangential direction +x)
        vc_in = float(v_t + (np.cross(w1, R1 * ey) - np.cross(w2, -R2 * ey))[0])
        vc_out = float((v_rel + np.cross(w_v[0], R1 * ey) - np.cross(w_v[1], -R2 * ey))[0])
        p1 = (system.mass[:, None] * x_v).sum(axis=0)
        p_err = float(np.linalg.norm(p1 - p0) / (system.mass[0] * v_n))
    ds_arr, fs_arr = np.asarray(ds), np.asarray(fs)
    res = ImpactResult(
        duration=float(t_end), max_overlap=float(ds_arr.max()), max_force=float(fs_arr.max()),
        v_n_rebound=v_n_reb, restitution=v_n_reb / v_n, v_t_rebound=v_t_reb,
        omega1=w_v[0].copy(), omega2=None if wall_case else w_v[1].copy(),
        v1=x_v[0].copy(), v2=None if wall_case else x_v[1].copy(), dt=h, n_steps=state.step,
        momentum_error=p_err, v_t=float(v_t), v_c_t=vc_in, v_c_t_rebound=vc_out)
    if record:
        res.series = {"t": np.asarray(ts), "overlap": ds_arr, "force": fs_arr}
    return res
