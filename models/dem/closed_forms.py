"""Closed forms of single elastic impacts (reference values of the impact cases).

Linear spring (thesis 1.3.1): ``w = sqrt(k/m*)``, contact time ``pi / w``, maximum overlap
``v0 / w``, maximum force ``k v0 / w``, rebound ``-v0``.
Hertz: ``K = (4/3) E* sqrt(R*)``, energy balance ``m* v0^2 / 2 = (2/5) K delta_max^{5/2}`` gives
``delta_max = (5 m* v0^2 / (4 K))^{2/5}``, ``F_max = K delta_max^{3/2}`` and the contact time
``t_c = 2 (delta_max / v0) I``, ``I = int_0^1 (1 - x^{5/2})^{-1/2} dx = sqrt(pi) G(7/5) / G(9/10)``
(= 1.47161...), i.e. ``t_c = 2.94322 delta_max / v0``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.special import gamma

HERTZ_TIME_INTEGRAL = math.sqrt(math.pi) * gamma(1.4) / gamma(0.9)


@dataclass(frozen=True)
class ElasticImpact:
    """Contact duration (s), maximum overlap (m), maximum normal force (N)."""

    duration: float
    max_overlap: float
    max_force: float


def linear_impact(k: float, m_eff: float, v0: float) -> ElasticImpact:
    """Closed-form impact of a linear spring k [N/m], effective mass m_eff [kg], speed v0 [m/s].

    >>> r = linear_impact(1.0e5, 1.0e-3, 1.0)
    >>> round(r.duration * 1e4, 6), round(r.max_force, 6)     # pi sqrt(m/k) s, k v0 / w N
    (3.141593, 10.0)
    """
    w = math.sqrt(k / m_eff)
    return ElasticImpact(math.pi / w, v0 / w, k * v0 / w)


def hertz_impact(Estar: float, Rstar: float, m_eff: float, v0: float) -> ElasticImpact:
    """Closed-form Hertz impact (module docstring): E* [Pa], R* [m], m* [kg], v0 [m/s].

    >>> r = hertz_impact(70.0e9, 0.0025, 6.5e-4, 1.0)   # two 5 mm glass spheres
    >>> round(float(r.duration / r.max_overlap), 3)     # t_c = 2.943 delta_max / v0
    2.943
    """
    K = 4.0 / 3.0 * Estar * math.sqrt(Rstar)
    dmax = (1.25 * m_eff * v0 * v0 / K) ** 0.4
    return ElasticImpact(2.0 * HERTZ_TIME_INTEGRAL * dmax / v0, dmax, K * dmax ** 1.5)
