"""Contact force laws, vectorised over contacts (SI units).

Normal laws (overlap ``delta`` >= 0 in m, approach rate ``ddelta`` in m/s, positive when
the bodies approach; force positive = repulsive, N):

* ``linear``        F = k_n delta                                    (thesis 1.3.1)
* ``hertz``         F = (4/3) E* sqrt(R*) delta^{3/2}                 (thesis Eqs. 10-11)
* ``kelvin_voigt``  F = k_n delta + eta ddelta                        (thesis Eq. 12), with
  ``eta`` given (N s/m) or ``eta = 2 zeta sqrt(m* k_n)`` from a damping ratio ``zeta``
* ``hertz_mindlin`` F = (4/3) E* sqrt(R*) delta^{3/2} + c sqrt(m* S_n) ddelta, with
  ``S_n = 2 E* sqrt(R* delta)`` the tangent stiffness and the dimensionless ``c`` set from a
  target restitution (see :mod:`models.dem.restitution`): the damping ~ delta^{1/4} makes
  the restitution independent of the impact velocity.

``attractive=False`` (default) clamps the normal force at zero ("no attractive force": the
bodies separate when the force vanishes); ``attractive=True`` lets the dashpot pull until the
overlap closes.

Tangential laws (incremental spring with history and Coulomb limit |F_t| <= mu F_n):
``none``; ``linear`` k_t = k_t_ratio * k_n (tangent normal stiffness for Hertz laws);
``mindlin`` k_t = 8 G* sqrt(R* delta) (Mindlin-Deresiewicz without micro-slip).
Rolling resistance (optional): a torque of magnitude mu_r R* F_n opposing the relative spin.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from models.dem.materials import DEMInputError

NORMAL_LAWS = ("linear", "hertz", "kelvin_voigt", "hertz_mindlin")
TANGENTIAL_LAWS = ("none", "linear", "mindlin")


@dataclass
class ContactLaw:
    """Parameters of one contact law (see the module docstring for the formulas).

    normal          : one of NORMAL_LAWS
    k_n             : normal spring stiffness (N/m) for ``linear`` and ``kelvin_voigt``
    eta             : Kelvin-Voigt dashpot (N s/m); or give ``zeta`` (damping ratio, -)
    restitution     : target restitution e in (0, 1] setting ``zeta`` (kelvin_voigt) or ``c``
                      (hertz_mindlin) for the chosen rebound criterion (``attractive``)
    hm_c            : Hertz-Mindlin dimensionless damping c (overrides ``restitution``)
    hm_calibration  : ``exact`` (c from the dimensionless impact ODE), ``edem``
                      (c = 2 sqrt(5/6) beta, beta = -ln e / sqrt(ln^2 e + pi^2); exact for the
                      overlap-zero rebound, i.e. ``attractive=True``) or ``auto`` (edem if
                      attractive, else exact)
    attractive      : False clamps the normal force at >= 0
    tangential      : one of TANGENTIAL_LAWS; ``k_t_ratio`` for ``linear``
    friction        : Coulomb coefficient mu (-); ``rolling_friction`` mu_r (-)

    >>> ContactLaw("hertz").is_elastic
    True
    >>> law = ContactLaw("hertz_mindlin", restitution=0.7, tangential="mindlin", friction=0.3)
    >>> law.hm_c > 0
    True
    """

    normal: str = "hertz"
    k_n: Optional[float] = None
    eta: Optional[float] = None
    zeta: Optional[float] = None
    restitution: Optional[float] = None
    hm_c: Optional[float] = None
    hm_calibration: str = "auto"
    attractive: bool = False
    tangential: str = "none"
    k_t_ratio: float = 2.0 / 7.0
    friction: float = 0.0
    rolling_friction: float = 0.0

    def __post_init__(self) -> None:
        if self.normal not in NORMAL_LAWS:
            raise DEMInputError(f"normal: must be one of {NORMAL_LAWS}, got {self.normal!r}")
        if self.tangential not in TANGENTIAL_LAWS:
            raise DEMInputError(f"tangential: must be one of {TANGENTIAL_LAWS}, got {self.tangential!r}")
        if self.normal in ("linear", "kelvin_voigt"):
            if self.k_n is None or not np.isfinite(self.k_n) or self.k_n <= 0:
                raise DEMInputError(f"k_n: the {self.normal} law needs a stiffness > 0 N/m, got {self.k_n!r}")
        if self.restitution is not None and not (0.0 < self.restitution <= 1.0):
            raise DEMInputError(f"restitution: must lie in (0, 1], got {self.restitution!r}")
        if self.zeta is not None and not (0.0 <= self.zeta < 1.0):
            raise DEMInputError(f"zeta: damping ratio must lie in [0, 1) (underdamped), got {self.zeta!r}")
        if self.eta is not None and self.eta < 0:
            raise DEMInputError(f"eta: must be >= 0 N s/m, got {self.eta!r}")
        for name in ("friction", "rolling_friction", "k_t_ratio"):
            if getattr(self, name) < 0:
                raise DEMInputError(f"{name}: must be >= 0, got {getattr(self, name)!r}")
        if self.hm_calibration not in ("exact", "edem", "auto"):
            raise DEMInputError(f"hm_calibration: must be 'exact', 'edem' or 'auto', got {self.hm_calibration!r}")
        if self.normal == "kelvin_voigt" and self.eta is None and self.zeta is None and self.restitution is not None:
            from models.dem.restitution import zeta_from_restitution

            self.zeta = zeta_from_restitution(self.restitution, attractive=self.attractive)
        if self.normal == "hertz_mindlin" and self.hm_c is None:
            from models.dem.restitution import hm_damping_from_restitution

            e = 1.0 if self.restitution is None else self.restitution
            method = self.hm_calibration
            if method == "auto":
                method = "edem" if self.attractive else "exact"
            self.hm_c = hm_damping_from_restitution(e, attractive=self.attractive, method=method)

    @property
    def is_hertzian(self) -> bool:
        return self.normal in ("hertz", "hertz_mindlin")

    @property
    def is_elastic(self) -> bool:
        """True if the normal law stores all work (no dashpot)."""
        if self.normal in ("linear", "hertz"):
            return True
        if self.normal == "kelvin_voigt":
            return not (self.eta or self.zeta)
        return not self.hm_c


def hertz_constant(Estar, Rstar):
    """K = (4/3) E* sqrt(R*) (N/m^{3/2})."""
    return 4.0 / 3.0 * np.asarray(Estar) * np.sqrt(np.asarray(Rstar))


def normal_force(law: ContactLaw, delta, ddelta, Estar, Rstar, mstar, clamp: Optional[bool] = None):
    """Normal force (N) and tangent normal stiffness dF_el/ddelta (N/m) per contact.

    ``clamp`` (default ``not law.attractive``) clips the force at zero.
    """
    delta = np.asarray(delta, dtype=np.float64)
    if law.is_hertzian:
        K = hertz_constant(Estar, Rstar)
        sq = np.sqrt(delta)
        F = K * delta * sq
        k_tan = 1.5 * K * sq
        if law.normal == "hertz_mindlin" and law.hm_c:
            F = F + law.hm_c * np.sqrt(mstar * k_tan) * ddelta
    else:
        k = law.k_n
        F = k * delta
        k_tan = np.full_like(delta, k)
        if law.normal == "kelvin_voigt":
            eta = law.eta if law.eta is not None else 2.0 * (law.zeta or 0.0) * np.sqrt(mstar * k)
            F = F + eta * ddelta
    if (not law.attractive) if clamp is None else clamp:
        F = np.maximum(F, 0.0)
    return F, k_tan


def elastic_energy(law: ContactLaw, delta, Estar, Rstar):
    """Energy stored in the normal spring (J): k delta^2 / 2 or (2/5) K delta^{5/2}."""
    delta = np.asarray(delta, dtype=np.float64)
    if law.is_hertzian:
        return 0.4 * hertz_constant(Estar, Rstar) * delta ** 2.5
    return 0.5 * law.k_n * delta ** 2


def tangential_stiffness(law: ContactLaw, delta, k_tan_normal, Gstar, Rstar):
    """Tangential spring stiffness (N/m) per contact."""
    if law.tangential == "mindlin":
        return 8.0 * np.asarray(Gstar) * np.sqrt(np.asarray(Rstar) * np.asarray(delta))
    if law.tangential == "linear":
        return law.k_t_ratio * np.asarray(k_tan_normal)
    return np.zeros_like(np.asarray(delta, dtype=np.float64))
