"""A user's Python solver, outside the harness: the planar pendulum by Störmer–Verlet.

    theta'' = -(g / length) sin(theta)

:func:`simulate` is what a generic case calls (``_target_: pendulum.simulate`` with
``pythonpath: [<project>/examples]``); it knows nothing of the harness and returns a
plain mapping of numpy arrays. Störmer–Verlet (velocity form) is symplectic and second
order: the energy error stays bounded, of size O(dt²), and the period is O(dt²) accurate.
"""
from __future__ import annotations

import math
from typing import Dict

import numpy as np


def simulate(theta0: float, omega0: float = 0.0, length: float = 1.0, g: float = 9.81,
             mass: float = 1.0, dt: float = 0.01, t_end: float = 10.0) -> Dict[str, np.ndarray]:
    """Integrate the pendulum from (theta0 [rad], omega0 [rad/s]) to t_end [s] with step dt [s].

    Returns t [s], theta [rad], omega [rad/s] and the energy E [J] (kinetic plus potential,
    zero at the bottom) at every step.
    """
    if not (dt > 0.0 and t_end > 0.0 and length > 0.0 and g > 0.0 and mass > 0.0):
        raise ValueError("dt, t_end, length, g and mass must be > 0")
    n = int(round(t_end / dt))
    k = g / length
    theta = np.empty(n + 1)
    omega = np.empty(n + 1)
    theta[0], omega[0] = theta0, omega0
    th, om = float(theta0), float(omega0)
    acc = -k * math.sin(th)
    for i in range(1, n + 1):  # a recurrence: each step needs the previous one
        om_half = om + 0.5 * dt * acc
        th = th + dt * om_half
        acc = -k * math.sin(th)
        om = om_half + 0.5 * dt * acc
        theta[i], omega[i] = th, om
    t = dt * np.arange(n + 1)
    energy = 0.5 * mass * length**2 * omega**2 + mass * g * length * (1.0 - np.cos(theta))
    return {"t": t, "theta": theta, "omega": omega, "energy": energy}
