"""Discrete first-order updates applied once per output step: lags, rate limiter, EMA.

All functions work on numpy arrays (one entry per actuator or per DOF).
"""
from __future__ import annotations

import math

import numpy as np

EMA_TAU = 16.5  # s, time constant of the position moving average (seed)
LAG_FORMS = ("exp", "seed")


def lag_gain(dt: float, tau, form: str = "exp"):
    """Gain alpha of ``x <- x + alpha (x_demand - x)`` for a first-order lag.

    form ``exp``  : alpha = 1 - exp(-dt/tau), exact for a demand held over the step.
    form ``seed`` : alpha = 1 / (1 + tau/dt) = dt / (dt + tau), the seed's Aa
                    (backward Euler of tau x' = x_d - x).
    dt, tau in s.
    """
    tau = np.asarray(tau, dtype=np.float64)
    if form == "exp":
        return -np.expm1(-dt / tau)
    if form == "seed":
        return 1.0 / (1.0 + tau / dt)
    raise ValueError(f"lag form: must be one of {LAG_FORMS}, got {form!r}")


def lag_step(current, demanded, alpha):
    """One lag update: ``current + alpha (demanded - current)``."""
    return current + alpha * (demanded - current)


def rate_limit_step(current, demanded, rate, dt: float, max_value=None):
    """One rate-limited update: move by at most ``rate dt`` towards ``demanded``.

    The demand is first clipped to +-max_value (when given). rate in units/s, dt in s.
    """
    target = demanded if max_value is None else np.clip(demanded, -max_value, max_value)
    step = np.asarray(rate, dtype=np.float64) * dt
    return current + np.clip(target - current, -step, step)


def ema_gain(dt: float, tau: float = EMA_TAU) -> float:
    """alpha = 1 - exp(-dt/tau) of the position moving average (dt, tau in s)."""
    return -math.expm1(-dt / tau)


def ema_step(avg, value, alpha: float):
    """``alpha value + (1 - alpha) avg``."""
    return alpha * value + (1.0 - alpha) * avg


class Schedule:
    """Piecewise-constant demand: ``[[t0, v0], [t1, v1], ...]`` (s, value); v(t) = v_k for t_k <= t.

    Before the first time the first value holds.
    """

    def __init__(self, points, name: str = "schedule"):
        arr = np.asarray(points, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1:
            raise ValueError(f"{name}: must be a list of [time_s, value] pairs, got {points!r}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: must be finite")
        if np.any(np.diff(arr[:, 0]) <= 0):
            raise ValueError(f"{name}: times must be strictly increasing")
        self.times, self.values, self.name = arr[:, 0], arr[:, 1], name

    def __call__(self, t):
        idx = np.searchsorted(self.times, t, side="right") - 1
        return self.values[np.clip(idx, 0, None)]
