"""Closed-form references of the vessel verification cases (SI units)."""
from __future__ import annotations

import math
from typing import Dict, Sequence, Tuple

import numpy as np


def circle(t, U: float, r: float, psi0: float = 0.0) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Constant surge U (m/s) and yaw rate r (rad/s) from the origin: (x, y, psi), radius U/r."""
    t = np.asarray(t, dtype=np.float64)
    R = U / r
    psi = psi0 + r * t
    return R * (np.sin(psi) - math.sin(psi0)), R * (math.cos(psi0) - np.cos(psi)), psi


def surge_linear(t, u0: float, tau: float) -> Tuple[np.ndarray, np.ndarray]:
    """u = u0 exp(-t/tau), x = u0 tau (1 - exp(-t/tau)); tau = (m + A11)/B11 (s)."""
    t = np.asarray(t, dtype=np.float64)
    return u0 * np.exp(-t / tau), -u0 * tau * np.expm1(-t / tau)


def surge_quadratic(t, u0: float, k: float) -> Tuple[np.ndarray, np.ndarray]:
    """u = u0 / (1 + k u0 t), x = ln(1 + k u0 t)/k; k = d11 / (m + A11) (1/m)."""
    t = np.asarray(t, dtype=np.float64)
    return u0 / (1.0 + k * u0 * t), np.log1p(k * u0 * t) / k


def damped_oscillator(t, z0: float, mass: float, damping: float, stiffness: float) -> Dict[str, np.ndarray | float]:
    """Free decay of m z'' + c z' + k z = 0 from z(0) = z0, z'(0) = 0 (underdamped).

    Returns z(t), w(t) = z'(t), natural period 2 pi sqrt(m/k), damping ratio
    c / (2 sqrt(m k)) and damped period.
    """
    t = np.asarray(t, dtype=np.float64)
    wn = math.sqrt(stiffness / mass)
    zeta = damping / (2.0 * math.sqrt(mass * stiffness))
    if not zeta < 1.0:
        raise ValueError(f"damped_oscillator: needs damping ratio < 1, got {zeta}")
    wd = wn * math.sqrt(1.0 - zeta * zeta)
    e = np.exp(-zeta * wn * t)
    z = z0 * e * (np.cos(wd * t) + zeta * wn / wd * np.sin(wd * t))
    w = -z0 * e * (wn * wn / wd) * np.sin(wd * t)
    return {"z": z, "w": w, "natural_period": 2.0 * math.pi / wn, "damping_ratio": zeta,
            "damped_period": 2.0 * math.pi / wd}


def first_order_lag(t, x0: float, demand: float, tau: float, dt: float, form: str = "exp") -> np.ndarray:
    """Sampled response of the discrete lag to a demand step at t = 0 (t on the dt grid).

    exp : x0 + (d - x0)(1 - exp(-t/tau));  seed: x0 + (d - x0)(1 - (1 + dt/tau)^(-t/dt)).
    """
    t = np.asarray(t, dtype=np.float64)
    if form == "exp":
        frac = -np.expm1(-t / tau)
    elif form == "seed":
        frac = 1.0 - np.power(1.0 + dt / tau, -np.round(t / dt))
    else:
        raise ValueError(f"form: exp or seed, got {form!r}")
    return x0 + (demand - x0) * frac


def rate_limited(t, x0: float, schedule: Sequence[Sequence[float]], rate: float, max_value: float) -> np.ndarray:
    """Continuous rate-limited response to a piecewise-constant demand (clipped to +-max_value).

    Between demand changes the signal moves at ``rate`` towards the demand and stays there.
    """
    t = np.asarray(t, dtype=np.float64)
    times = [float(p[0]) for p in schedule] + [math.inf]
    x_start, out = x0, np.empty_like(t)
    t_prev = min(0.0, times[0])
    for j in range(len(schedule)):
        ta, tb = max(times[j], t_prev), times[j + 1]
        d = float(np.clip(schedule[j][1], -max_value, max_value))
        sel = (t >= ta) & (t < tb) if j else (t < tb)
        span = np.clip(t[sel] - ta, 0.0, None)
        out[sel] = x_start + np.sign(d - x_start) * np.minimum(rate * span, abs(d - x_start))
        if math.isfinite(tb):
            x_start = x_start + math.copysign(min(rate * (tb - ta), abs(d - x_start)), d - x_start)
        t_prev = tb
    return out


def ema_step(t, value: float, avg0: float, tau: float) -> np.ndarray:
    """Moving average of a constant value from avg0: value + (avg0 - value) exp(-t/tau)."""
    t = np.asarray(t, dtype=np.float64)
    return value + (avg0 - value) * np.exp(-t / tau)
