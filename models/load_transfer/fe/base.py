"""The FE interface: body, point loads, results, and the backend registry.

Coordinates are the meridian (or plane) coordinates (x, y) in m: x = r (radius, axisymmetric) or
x (plane strain), y = axial coordinate. The body is the rectangle [0, radius] x [0, height] on a
structured nr x nz mesh of bilinear quadrilaterals, fixed in y on y = 0 (frictionless support)
and in x on x = 0 (the axis, or the symmetry plane). Point forces are in N: in an axisymmetric
model the total ring force (no 2 pi r factor), in plane strain the force per unit thickness.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Dict, Protocol, Tuple

import numpy as np

FORMULATIONS = ("axisymmetric", "plane_strain")
BACKENDS: Dict[str, str] = {
    "skfem": "models.load_transfer.fe.skfem_backend:SkfemSolver",
    "dolfinx": "models.load_transfer.fe.dolfinx_backend:DolfinxSolver",  # Debian DOLFINx, separate process
}


@dataclass(frozen=True)
class ElasticBody:
    """Linear elastic body: radius, height [m], E [Pa], nu [-], rho [kg/m^3], mesh nr x nz."""

    radius: float
    height: float
    E: float
    nu: float
    rho: float
    nr: int
    nz: int
    formulation: str = "axisymmetric"

    def __post_init__(self) -> None:
        for name in ("radius", "height", "E", "rho"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0.0):
                raise ValueError(f"{name}: must be a positive finite number, got {v!r}")
        if not (-1.0 < self.nu < 0.5):
            raise ValueError(f"nu: must lie in (-1, 0.5), got {self.nu!r}")
        for name in ("nr", "nz"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name}: must be an integer >= 1, got {getattr(self, name)!r}")
        if self.formulation not in FORMULATIONS:
            raise ValueError(f"formulation: must be one of {FORMULATIONS}, got {self.formulation!r}")

    @property
    def lame(self) -> Tuple[float, float]:
        lam = self.E * self.nu / ((1.0 + self.nu) * (1.0 - 2.0 * self.nu))
        return lam, self.E / (2.0 * (1.0 + self.nu))

    def grid_lines(self) -> Tuple[np.ndarray, np.ndarray]:
        """Node coordinates along x (nr + 1) and y (nz + 1), m."""
        return np.linspace(0.0, self.radius, self.nr + 1), np.linspace(0.0, self.height, self.nz + 1)


@dataclass(frozen=True)
class PointLoads:
    """Point forces at fixed material positions: points (Nc, 2) m, forces (Nsteps, Nc, 2) N."""

    points: np.ndarray
    forces: np.ndarray

    def __post_init__(self) -> None:
        p, f = np.asarray(self.points), np.asarray(self.forces)
        if p.ndim != 2 or p.shape[1] != 2:
            raise ValueError(f"points: must have shape (Nc, 2), got {p.shape}")
        if f.ndim != 3 or f.shape[1:] != p.shape:
            raise ValueError(f"forces: must have shape (Nsteps, {p.shape[0]}, 2), got {f.shape}")


@dataclass
class FEField:
    """Fields at the Gauss points (2 x 2 per element): x (Nq, 2) m, u (Nq, 2) m, stress (Nq, 4) Pa.

    stress components: (xx, yy, zz, xy); zz is the hoop stress (axisymmetric) or the out-of-plane
    stress (plane strain). weight (Nq,) m^3 (axisymmetric, 2 pi r included) or m^2 (plane strain).
    """

    x: np.ndarray
    u: np.ndarray
    stress: np.ndarray
    weight: np.ndarray


@dataclass
class FEDynamicResult:
    """Newmark history: times (Nsteps + 1,) s, u_points (Nsteps + 1, Nc, 2) m at the load points,
    u_gauss (Nsteps + 1, Nq, 2) m, the final field, and the external work (Nsteps + 1,) J."""

    times: np.ndarray
    u_points: np.ndarray
    u_gauss: np.ndarray
    final: FEField
    work: np.ndarray


class FESolver(Protocol):
    """What a backend provides."""

    body: ElasticBody

    def gauss_points(self) -> np.ndarray:
        """(Nq, 2) m."""

    def static(self, points: np.ndarray, forces: np.ndarray) -> FEField:
        """Linear static solve for point forces (Nc, 2) N at points (Nc, 2) m."""

    def dynamic(self, loads: PointLoads, dt: float, *, beta: float = 0.25, gamma: float = 0.5) -> FEDynamicResult:
        """Newmark (lumped mass, at rest at t = 0); step n + 1 sees loads.forces[n]."""


def von_mises(stress: np.ndarray) -> np.ndarray:
    """Von Mises stress [Pa] of (N, 4) (xx, yy, zz, xy) Cauchy stresses."""
    s = np.asarray(stress, dtype=np.float64)
    sx, sy, sz, txy = s[:, 0], s[:, 1], s[:, 2], s[:, 3]
    return np.sqrt(0.5 * ((sx - sy) ** 2 + (sy - sz) ** 2 + (sz - sx) ** 2) + 3.0 * txy**2)


def make_fe_solver(body: ElasticBody, backend: str = "skfem", **options) -> FESolver:
    """The FE solver of ``backend`` for ``body``."""
    if backend not in BACKENDS:
        raise ValueError(f"backend: must be one of {sorted(BACKENDS)}, got {backend!r}")
    module, _, name = BACKENDS[backend].partition(":")
    return getattr(importlib.import_module(module), name)(body, **options)
