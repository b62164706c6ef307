"""Coefficient of restitution of damped contacts, and the inverse maps damping <- e.

Linear spring-dashpot (Kelvin-Voigt), ``m x'' + eta x' + k x = 0``, with
``delta = eta / (2 m*)`` (the thesis's "viscosidad efectiva"), ``w0 = sqrt(k/m*)``,
``w = sqrt(w0^2 - delta^2)``, damping ratio ``zeta = delta / w0`` and
``delta / w = zeta / sqrt(1 - zeta^2)``. Two rebound criteria give two formulas:

* the contact ends when the overlap returns to zero (the dashpot may pull):
  ``e = exp(-pi zeta / sqrt(1 - zeta^2)) = exp(-pi delta / w)`` (the classic formula);
* the contact ends when the total force vanishes (no attractive force, thesis Eq. 22):
  ``e = exp(-(delta/w) [pi - 2 atan(delta/w)])``, valid for every underdamped
  ``delta < w0``; it tends to ``exp(-2)`` as ``delta/w -> inf``.

Hertz-Mindlin with the damping of :mod:`models.dem.laws`,
``F = K x^{3/2} + c sqrt(m* 1.5 K x^{1/2}) x'``: with ``x = X s``, ``t = (X / v0) tau`` and
``X = (m* v0^2 / K)^{2/5}`` the impact is ``s'' = -s^{3/2} - c sqrt(1.5) s^{1/4} s'``,
``s(0) = 0``, ``s'(0) = 1``, independent of the impact velocity: e depends on c alone.
:func:`hm_restitution` integrates that ODE (adaptive DOP853, event location);
:func:`hm_damping_from_restitution` inverts it by Brent's method (``method="exact"``), or
uses the EDEM closed form ``c = 2 sqrt(5/6) beta``, ``beta = -ln e / sqrt(ln^2 e + pi^2)``
(``method="edem"``, approximate).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from models.dem.materials import DEMInputError

E_FORCE_ZERO_MIN = math.exp(-2.0)


def e_spring_dashpot(zeta):
    """Classic restitution ``exp(-pi zeta / sqrt(1 - zeta^2))`` (overlap-zero rebound).

    zeta: damping ratio in [0, 1) (-), array or scalar.

    >>> round(float(e_spring_dashpot(0.2)), 6)
    0.526621
    """
    zeta = np.asarray(zeta, dtype=np.float64)
    return np.exp(-np.pi * zeta / np.sqrt(1.0 - zeta ** 2))


def e_kelvin_voigt_eq22(delta_over_w):
    """Thesis Eq. 22: ``exp(-(d/w) [pi - 2 atan(d/w)])`` (force-zero rebound).

    delta_over_w: ratio of the damping rate to the undamped frequency (-).

    >>> round(float(e_kelvin_voigt_eq22(0.5)), 5)
    0.3305
    """
    r = np.asarray(delta_over_w, dtype=np.float64)
    return np.exp(-r * (np.pi - 2.0 * np.arctan(r)))


def zeta_from_ratio(delta_over_w):
    """Damping ratio ``zeta = r / sqrt(1 + r^2)`` from ``r = delta / w``."""
    r = np.asarray(delta_over_w, dtype=np.float64)
    return r / np.sqrt(1.0 + r * r)


def ratio_from_zeta(zeta):
    """``delta / w = zeta / sqrt(1 - zeta^2)``."""
    z = np.asarray(zeta, dtype=np.float64)
    return z / np.sqrt(1.0 - z * z)


def zeta_from_restitution(e: float, attractive: bool) -> float:
    """Damping ratio of a linear spring-dashpot giving restitution ``e`` under a criterion.

    attractive=True: overlap-zero rebound, ``zeta = -ln e / sqrt(pi^2 + ln^2 e)``;
    attractive=False: force-zero rebound, Eq. 22 inverted numerically (needs e > exp(-2)).
    """
    e = float(e)
    if not 0.0 < e <= 1.0:
        raise DEMInputError(f"restitution: must lie in (0, 1], got {e!r}")
    if e == 1.0:
        return 0.0
    if attractive:
        le = math.log(e)
        return -le / math.sqrt(math.pi ** 2 + le * le)
    if e <= E_FORCE_ZERO_MIN:
        raise DEMInputError(
            f"restitution: Eq. 22 (no attractive force) cannot go below exp(-2) = {E_FORCE_ZERO_MIN:.6f}, got {e!r}")
    r = brentq(lambda x: float(e_kelvin_voigt_eq22(x)) - e, 0.0, 1.0e6, xtol=1e-15, rtol=1e-15)
    return float(zeta_from_ratio(r))


def _hm_rhs(c: float):
    g = c * math.sqrt(1.5)

    def rhs(_t, y):
        s = max(y[0], 0.0)
        return [y[1], -s ** 1.5 - g * s ** 0.25 * y[1]]

    return rhs


@functools.lru_cache(maxsize=256)
def hm_restitution(c: float, attractive: bool = False) -> float:
    """Restitution of the dimensionless Hertz-Mindlin impact with damping ``c`` (>= 0).

    ``attractive=False``: the rebound ends where the force vanishes, else where the overlap does.

    >>> round(hm_restitution(0.0), 9)
    1.0
    """
    c = float(c)
    if c < 0:
        raise DEMInputError(f"hm_c: must be >= 0, got {c!r}")
    g = c * math.sqrt(1.5)
    if attractive:
        def ev(_t, y):
            return y[0]
    else:
        def ev(_t, y):  # force / s^{1/4}: s^{5/4} + g s'
            return max(y[0], 0.0) ** 1.25 + g * y[1]
    ev.terminal, ev.direction = True, -1

    # start just after contact with the series s = tau, s' = 1 to avoid the s = 0 event
    t0 = 1e-9
    sol = solve_ivp(_hm_rhs(c), (t0, 50.0), [t0, 1.0], method="DOP853", rtol=1e-12, atol=1e-15,
                    events=ev, dense_output=False)
    if not sol.t_events[0].size:
        raise RuntimeError(f"hm_restitution: no rebound found for c={c}")
    return float(-sol.y_events[0][0][1])


def hm_damping_from_restitution(e: float, attractive: bool = False, method: str = "exact") -> float:
    """Dimensionless Hertz-Mindlin damping ``c`` giving restitution ``e`` (see module doc).

    >>> c = hm_damping_from_restitution(0.6)
    >>> round(hm_restitution(c), 6)
    0.6
    """
    e = float(e)
    if not 0.0 < e <= 1.0:
        raise DEMInputError(f"restitution: must lie in (0, 1], got {e!r}")
    if e == 1.0:
        return 0.0
    if method == "edem":
        le = math.log(e)
        return 2.0 * math.sqrt(5.0 / 6.0) * (-le) / math.sqrt(le * le + math.pi ** 2)
    if method != "exact":
        raise DEMInputError(f"hm_calibration: must be 'exact' or 'edem', got {method!r}")
    return _hm_inverse(round(e, 14), bool(attractive))


@functools.lru_cache(maxsize=256)
def _hm_inverse(e: float, attractive: bool) -> float:
    hi = 0.5
    while hm_restitution(hi, attractive) > e:
        hi *= 2.0
        if hi > 1e4:
            raise DEMInputError(f"restitution: {e} not reachable by Hertz-Mindlin damping (attractive={attractive})")
    return float(brentq(lambda c: hm_restitution(c, attractive) - e, 0.0, hi, xtol=1e-13, rtol=1e-13))
