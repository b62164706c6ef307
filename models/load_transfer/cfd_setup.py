"""Parameters and initial state of the axisymmetric blast of the CFD source family (issue 33).

A sphere of radius R0 [m] of gas at ``pressure_ratio`` times the ambient pressure, centred on the
axis at height H [m] above a rigid wall z = 0, in a quiescent ideal gas (gamma) at p_ambient [Pa],
rho_ambient [kg/m^3]. The r-z domain is [0, r_max] x [0, z_max] [m]; the axis r = 0 and the wall
z = 0 reflect, the other sides are outflow (zero-order extrapolation). Conserved variables
q = (rho, rho u_r, rho u_z, E) in kg/m^3, kg/(m^2 s), J/m^3.

For the free-space (spherical verification) blast the centre sits on z = 0 (H = 0): the plane z = 0
is then a plane of symmetry and the reflecting boundary is exact.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Tuple

import numpy as np


@dataclass(frozen=True)
class BlastSetup:
    """The physical problem (SI)."""

    R0: float = 0.2  # m, radius of the high-pressure sphere
    H: float = 0.5  # m, height of its centre above the wall z = 0
    pressure_ratio: float = 10.0  # p inside / p_ambient
    density_ratio: float = 1.0  # rho inside / rho_ambient
    gamma: float = 1.4
    p_ambient: float = 1.0e5  # Pa, also the reference pressure of the gauge wall loads
    rho_ambient: float = 1.2  # kg/m^3
    r_max: float = 1.0  # m
    z_max: float = 1.0  # m

    def check(self) -> None:
        """Raise ValueError naming the first field that breaks its rule."""
        rules = [
            ("R0", self.R0 > 0, "must be > 0"),
            ("H", self.H >= 0, "must be >= 0"),
            ("pressure_ratio", self.pressure_ratio > 0, "must be > 0"),
            ("density_ratio", self.density_ratio > 0, "must be > 0"),
            ("gamma", self.gamma > 1, "must be > 1"),
            ("p_ambient", self.p_ambient > 0, "must be > 0"),
            ("rho_ambient", self.rho_ambient > 0, "must be > 0"),
            ("r_max", self.r_max > self.R0, "must be > R0"),
            ("z_max", self.z_max > self.H, "must be > H"),
        ]
        for name, ok, rule in rules:
            if not ok:
                raise ValueError(f"{name}: {rule} (got {getattr(self, name)!r})")

    @property
    def sound_speed(self) -> float:
        """Ambient sound speed c0 = sqrt(gamma p / rho) [m/s]."""
        return float(np.sqrt(self.gamma * self.p_ambient / self.rho_ambient))

    def sha256(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()


def inside_fraction(setup: BlastSetup, r_edges: np.ndarray, z_edges: np.ndarray, sub: int = 8) -> np.ndarray:
    """Volume fraction (nr, nz) of each cell [r_i, r_i+1] x [z_j, z_j+1] inside the sphere,
    from sub x sub sub-cells weighted by their radius (the axisymmetric volume element)."""
    s = (np.arange(sub) + 0.5) / sub
    rr = (r_edges[:-1, None] + np.diff(r_edges)[:, None] * s[None, :])  # (nr, sub)
    zz = (z_edges[:-1, None] + np.diff(z_edges)[:, None] * s[None, :])  # (nz, sub)
    inside = (rr[:, None, :, None] ** 2 + (zz[None, :, None, :] - setup.H) ** 2) <= setup.R0**2
    w = np.broadcast_to(rr[:, None, :, None], inside.shape)
    return (inside * w).sum(axis=(2, 3)) / w.sum(axis=(2, 3))


def initial_state(setup: BlastSetup, r_edges: np.ndarray, z_edges: np.ndarray) -> np.ndarray:
    """Cell averages q (4, nr, nz) of the initial blast: mixture of inside and outside states
    by volume fraction (density and total energy averaged; the gas is at rest)."""
    f = inside_fraction(setup, r_edges, z_edges)
    rho = setup.rho_ambient * (1.0 + f * (setup.density_ratio - 1.0))
    p = setup.p_ambient * (1.0 + f * (setup.pressure_ratio - 1.0))
    q = np.zeros((4,) + f.shape)
    q[0] = rho
    q[3] = p / (setup.gamma - 1.0)
    return q


def pressure(q: np.ndarray, gamma: float) -> np.ndarray:
    """p = (gamma - 1) (E - (m_r^2 + m_z^2) / (2 rho)) [Pa] of conserved q (4, ...)."""
    return (gamma - 1.0) * (q[3] - 0.5 * (q[1] ** 2 + q[2] ** 2) / q[0])


def grid_shape(setup: BlastSetup, n_r: int) -> Tuple[int, int]:
    """(n_r, n_z) with square cells (dz = dr) as near as the domain allows."""
    n_z = max(1, int(round(n_r * setup.z_max / setup.r_max)))
    return n_r, n_z
