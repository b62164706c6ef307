"""Elastic materials and the effective contact quantities E*, G*, R*, m* (SI units).

Hertz (thesis Eqs. 10-11, written with the standard reduced modulus):
``1/E* = (1 - nu_1^2)/E_1 + (1 - nu_2^2)/E_2``, ``1/R* = 1/R_1 + 1/R_2``,
``1/m* = 1/m_1 + 1/m_2``. A rigid wall has E -> inf, R -> inf, m -> inf, so
``E* = E/(1 - nu^2)``, ``R* = R``, ``m* = m`` of the particle.
Mindlin: ``1/G* = (2 - nu_1)/G_1 + (2 - nu_2)/G_2`` with ``G = E / (2 (1 + nu))``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class DEMInputError(ValueError):
    """Invalid DEM input: the message names the field, the value and the rule."""


@dataclass(frozen=True)
class Material:
    """Young's modulus E (Pa), Poisson ratio nu (-), density rho (kg/m^3).

    >>> glass = Material(E=63e9, nu=0.23, density=2500.0)
    >>> round(glass.G / 1e9, 3)    # shear modulus E / (2 (1 + nu)), GPa
    25.61
    """

    E: float
    nu: float
    density: float

    def __post_init__(self) -> None:
        check_positive("E", self.E)
        check_positive("density", self.density)
        check_poisson("nu", self.nu)

    @property
    def G(self) -> float:
        """Shear modulus (Pa)."""
        return self.E / (2.0 * (1.0 + self.nu))


def check_positive(name: str, value) -> None:
    """Raise DEMInputError unless every entry of ``value`` is finite and > 0."""
    arr = np.asarray(value, dtype=np.float64)
    bad = ~np.isfinite(arr) | (arr <= 0.0)
    if np.any(bad):
        v = float(arr.reshape(-1)[np.argmax(bad.reshape(-1))])
        raise DEMInputError(f"{name}: must be finite and > 0, got {v!r}")


def check_poisson(name: str, value) -> None:
    """Raise DEMInputError unless -1 < nu < 0.5 for every entry."""
    arr = np.asarray(value, dtype=np.float64)
    bad = ~np.isfinite(arr) | (arr <= -1.0) | (arr >= 0.5)
    if np.any(bad):
        v = float(arr.reshape(-1)[np.argmax(bad.reshape(-1))])
        raise DEMInputError(f"{name}: Poisson ratio must lie in (-1, 0.5), got {v!r}")


def effective_modulus(E1, nu1, E2=None, nu2=None):
    """E* (Pa); ``E2 is None`` means a rigid partner (wall).

    >>> round(float(effective_modulus(210e9, 0.3)) / 1e9, 3)             # steel on a rigid wall: E/(1-nu^2)
    230.769
    >>> round(float(effective_modulus(210e9, 0.3, 210e9, 0.3)) / 1e9, 3) # steel on steel: E/(2(1-nu^2))
    115.385
    """
    inv = (1.0 - np.asarray(nu1) ** 2) / np.asarray(E1)
    if E2 is not None:
        inv = inv + (1.0 - np.asarray(nu2) ** 2) / np.asarray(E2)
    return 1.0 / inv


def effective_shear_modulus(E1, nu1, E2=None, nu2=None):
    """G* (Pa) of Mindlin's tangential stiffness; ``E2 is None`` means a rigid partner.

    >>> round(float(effective_shear_modulus(210e9, 0.3, 210e9, 0.3)) / 1e9, 3)   # G/(2(2-nu))
    23.756
    """
    G1 = np.asarray(E1) / (2.0 * (1.0 + np.asarray(nu1)))
    inv = (2.0 - np.asarray(nu1)) / G1
    if E2 is not None:
        G2 = np.asarray(E2) / (2.0 * (1.0 + np.asarray(nu2)))
        inv = inv + (2.0 - np.asarray(nu2)) / G2
    return 1.0 / inv


def effective_radius(R1, R2=None):
    """R* (m); ``R2 is None`` means a plane (wall).

    >>> float(effective_radius(0.004, 0.004)), float(effective_radius(0.004))
    (0.002, 0.004)
    """
    R1 = np.asarray(R1, dtype=np.float64)
    return R1 if R2 is None else R1 * np.asarray(R2) / (R1 + np.asarray(R2))


def effective_mass(m1, m2=None):
    """m* (kg); ``m2 is None`` means an immovable partner.

    >>> float(effective_mass(2.0, 2.0))
    1.0
    """
    m1 = np.asarray(m1, dtype=np.float64)
    return m1 if m2 is None else m1 * np.asarray(m2) / (m1 + np.asarray(m2))
