"""Frames and derived kinematics of the vessel model.

Inertial frame: x North, y East, z down (m); yaw psi from North, clockwise (rad).
Body frame: x forward (surge), y starboard (sway), z down (heave). Roll and pitch use
the small-angle approximation: their rates are the body rates.
"""
from __future__ import annotations

import numpy as np

TWO_PI = 2.0 * np.pi


def wrap_to_pi(angle):
    """Wrap angles (rad) to the interval (-pi, pi].

    >>> round(wrap_to_pi(3.5), 6), wrap_to_pi(-3.141592653589793) > 0
    (-2.783185, True)
    """
    a = np.asarray(angle, dtype=np.float64)
    w = np.pi - np.mod(np.pi - a, TWO_PI)
    return w if w.ndim else float(w)


def body_to_inertial(u, v, psi):
    """Rotate horizontal body velocities (u surge, v sway; m/s) by yaw psi (rad).

    Returns (x_dot North, y_dot East) in m/s; arrays broadcast.

    >>> import numpy as np
    >>> [round(float(x), 12) for x in body_to_inertial(5.0, 0.0, np.pi / 2)]   # heading East
    [0.0, 5.0]
    """
    c, s = np.cos(psi), np.sin(psi)
    return c * u - s * v, s * u + c * v


def inertial_to_body(vx, vy, psi):
    """Inverse of :func:`body_to_inertial`: (North, East) m/s -> (surge, sway) m/s.

    >>> import numpy as np
    >>> [round(float(x), 12) for x in inertial_to_body(0.0, 5.0, np.pi / 2)]
    [5.0, 0.0]
    """
    c, s = np.cos(psi), np.sin(psi)
    return c * vx + s * vy, -s * vx + c * vy


def flow_angle(wx, wy):
    """Angle (rad, (-pi, pi]) from which a relative flow (wx, wy in the body frame) comes.

    0: from ahead, +pi/2: from starboard. ``wx, wy`` is the fluid velocity relative
    to the ship (a ship moving ahead in still fluid sees ``wx < 0`` and angle 0).
    """
    return np.arctan2(-np.asarray(wy, dtype=np.float64), -np.asarray(wx, dtype=np.float64))


def kinematics(q, nu):
    """Derived kinematics from positions q (k, 6) and body velocities nu (k, 6).

    Returns a dict of arrays (k,): ``vn`` North and ``ve`` East velocity (m/s), ``sog``
    speed over ground (m/s), ``cog`` course over ground (rad, nautical: 0 North,
    clockwise, in [0, 2 pi)), ``drift`` = wrap_to_pi(cog - psi) (rad, (-pi, pi]).

    >>> import numpy as np
    >>> k = kinematics(np.zeros((1, 6)), np.array([[3.0, 4.0, 0, 0, 0, 0]]))
    >>> float(k["sog"][0]), round(float(k["drift"][0]), 6)     # 5 m/s, drift atan2(4, 3)
    (5.0, 0.927295)
    """
    q = np.atleast_2d(np.asarray(q, dtype=np.float64))
    nu = np.atleast_2d(np.asarray(nu, dtype=np.float64))
    psi = q[:, 5]
    vn, ve = body_to_inertial(nu[:, 0], nu[:, 1], psi)
    sog = np.hypot(vn, ve)
    cog = np.mod(np.arctan2(ve, vn), TWO_PI)
    drift = wrap_to_pi(cog - psi)
    return {"vn": vn, "ve": ve, "sog": sog, "cog": cog, "drift": np.asarray(drift)}
