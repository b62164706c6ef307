"""Verlet family for second-order systems ``x'' = a(t, x, v)``: fixed-step steppers for DEM.

Second-order stepper contract
-----------------------------
DEM forces are cheap to write as accelerations of positions, and the Verlet family works
on ``(x, v)`` directly, so these classes do not go through the first-order
``Integrator.solve`` contract of :mod:`models.integrators.base`. Instead::

    stepper = cls(dt=1e-6)                         # dt in s, fixed
    state = stepper.start(t0, x0, v0, accel)       # accel(t, x, v) -> a, same shape as x
    for _ in range(n):
        state = stepper.step(state, accel)         # state.t, state.x, state.v at one instant

* ``x`` and ``v`` are float64 arrays of any shape (e.g. (N, 3) positions stacked with
  (N, 3) rotation angles); ``state.a`` is the acceleration at ``(state.t, state.x)``.
* ``accel`` is called exactly once in :meth:`start` (at ``t0``) and exactly once per
  :meth:`step`, always at the new time ``t + dt`` and in increasing time order. Stateful
  force models (contact history of tangential springs) may therefore update their
  history inside ``accel``: each call is one time step of length ``dt``.
* ``stepper.n_accel`` counts the evaluations.

The schemes (``dt`` = h):

``verlet`` (position Verlet, as in the thesis, Eqs. 26-28): ``x_{n+1} = 2 x_n - x_{n-1} +
a_n h^2``, the first step ``x_1 = x_0 + v_0 h + a_0 h^2 / 2``; velocity by central difference
``v_n = (x_{n+1} - x_{n-1}) / (2h)`` (Eq. 27). It holds one position ahead internally, so
the reported ``state`` is at ``t_n`` with its central-difference velocity. Velocity-dependent
forces at ``x_{n+1}`` receive ``(x_{n+1} - x_n)/h + a_n h / 2``.

``velocity_verlet``: ``x_{n+1} = x_n + v_n h + a_n h^2/2``, ``v_{n+1} = v_n + (a_n + a_{n+1}) h/2``;
velocity-dependent forces receive the predictor ``v_n + a_n h``.

``leapfrog`` (kick-drift): ``v_{n+1/2} = v_{n-1/2} + a_n h``, ``x_{n+1} = x_n + v_{n+1/2} h``;
velocity-dependent forces receive the half-step velocity ``v_{n+1/2}`` (the thesis notes the
order drops when forces depend on velocity); the reported synchronous velocity is
``v_{n+1/2} + a_{n+1} h / 2``.

For forces of position only the three give the same trajectory (up to round-off), of
global order 2 and symplectic; they differ in the velocity they report and pass to
velocity-dependent forces.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from models.integrators.registry import register

log = logging.getLogger(__name__)

Accel = Callable[[float, np.ndarray, np.ndarray], np.ndarray]


@dataclass
class VerletState:
    """State at one instant: time t (s), position x (m), velocity v (m/s), acceleration a (m/s^2).

    ``aux`` holds scheme-private arrays (look-ahead position, half-step velocity).
    """

    t: float
    x: np.ndarray
    v: np.ndarray
    a: np.ndarray
    step: int = 0
    aux: dict = field(default_factory=dict)


class _SecondOrderStepper:
    """Base of the fixed-step second-order steppers (see the module docstring)."""

    name = "second_order"
    order = 2

    def __init__(self, dt: float, **_: Any) -> None:
        dt = float(dt)
        if not np.isfinite(dt) or dt <= 0.0:
            raise ValueError(f"dt: must be a finite time step > 0 s, got {dt!r}")
        self.dt = dt
        self.n_accel = 0

    def _accel(self, accel: Accel, t: float, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        self.n_accel += 1
        a = np.asarray(accel(t, x, v), dtype=np.float64)
        if a.shape != x.shape:
            raise ValueError(f"accel returned shape {a.shape}, expected {x.shape}")
        return a

    def start(self, t0: float, x0: Any, v0: Any, accel: Accel) -> VerletState:
        x = np.array(x0, dtype=np.float64)
        v = np.array(v0, dtype=np.float64)
        if x.shape != v.shape:
            raise ValueError(f"x0 and v0 must have the same shape, got {x.shape} and {v.shape}")
        a = self._accel(accel, float(t0), x, v)
        return self._init(VerletState(float(t0), x, v, a), accel)

    def _init(self, s: VerletState, accel: Accel) -> VerletState:
        return s

    def step(self, s: VerletState, accel: Accel) -> VerletState:  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self, t0: float, x0: Any, v0: Any, accel: Accel, n_steps: int,
            callback: Optional[Callable[[VerletState], None]] = None) -> VerletState:
        """Start and take ``n_steps`` steps; ``callback(state)`` after start and every step."""
        s = self.start(t0, x0, v0, accel)
        if callback is not None:
            callback(s)
        for _ in range(int(n_steps)):
            s = self.step(s, accel)
            if callback is not None:
                callback(s)
        return s


@register("verlet")
class PositionVerlet(_SecondOrderStepper):
    """Position (Stormer) Verlet with central-difference velocity (thesis Eqs. 26-28)."""

    name = "verlet"

    def _init(self, s: VerletState, accel: Accel) -> VerletState:
        h = self.dt
        s.aux["x_next"] = s.x + s.v * h + 0.5 * s.a * h * h
        s.aux["a_prev"] = s.a
        return s

    def step(self, s: VerletState, accel: Accel) -> VerletState:
        h = self.dt
        x1 = s.aux["x_next"]
        t1 = s.t + h
        v_est = (x1 - s.x) / h + 0.5 * s.aux["a_prev"] * h
        a1 = self._accel(accel, t1, x1, v_est)
        x2 = 2.0 * x1 - s.x + a1 * h * h
        v1 = (x2 - s.x) / (2.0 * h)
        return VerletState(t1, x1, v1, a1, s.step + 1, {"x_next": x2, "a_prev": a1})


@register("velocity_verlet")
class VelocityVerlet(_SecondOrderStepper):
    """Velocity Verlet (thesis section 2.5.1)."""

    name = "velocity_verlet"

    def step(self, s: VerletState, accel: Accel) -> VerletState:
        h = self.dt
        x1 = s.x + s.v * h + 0.5 * s.a * h * h
        t1 = s.t + h
        a1 = self._accel(accel, t1, x1, s.v + s.a * h)
        v1 = s.v + 0.5 * (s.a + a1) * h
        return VerletState(t1, x1, v1, a1, s.step + 1)


@register("leapfrog")
class Leapfrog(_SecondOrderStepper):
    """Leapfrog, velocities at half steps (thesis section 2.5.2)."""

    name = "leapfrog"

    def _init(self, s: VerletState, accel: Accel) -> VerletState:
        s.aux["v_half"] = s.v - 0.5 * s.a * self.dt  # v_{-1/2}
        return s

    def step(self, s: VerletState, accel: Accel) -> VerletState:
        h = self.dt
        v_half = s.aux["v_half"] + s.a * h
        x1 = s.x + v_half * h
        t1 = s.t + h
        a1 = self._accel(accel, t1, x1, v_half)
        v1 = v_half + 0.5 * a1 * h
        return VerletState(t1, x1, v1, a1, s.step + 1, {"v_half": v_half})


def make_stepper(name: str, dt: float) -> _SecondOrderStepper:
    """The Verlet-family stepper registered as ``name`` with step ``dt`` (s).

    >>> import numpy as np
    >>> st = make_stepper("velocity_verlet", 0.01)
    >>> acc = lambda t, x, v: -x                      # harmonic oscillator, omega = 1 rad/s
    >>> s = st.start(0.0, np.array([1.0]), np.array([0.0]), acc)
    >>> for _ in range(100):
    ...     s = st.step(s, acc)
    >>> round(float(s.x[0]), 4), round(float(np.cos(1.0)), 4)
    (0.5403, 0.5403)
    """
    if name not in STEPPERS:
        raise ValueError(f"integrator: must be one of {sorted(STEPPERS)}, got {name!r}")
    return STEPPERS[name](dt)


STEPPERS = {"verlet": PositionVerlet, "velocity_verlet": VelocityVerlet, "leapfrog": Leapfrog}
