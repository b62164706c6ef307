"""Planar Euler–Bernoulli beam finite elements: consistent mass and stiffness.

Node ``i`` carries the DOFs ``(u_i, w_i, θ_i)`` = axial displacement [m], transverse
displacement [m] and rotation θ = dw/dx [rad] at global indices ``3i, 3i+1, 3i+2``.
Axial: linear shape functions; bending: cubic Hermite shape functions. A uniform mesh of
``n_elements`` elements over ``[0, length]``; 50 elements give 153 DOFs.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

DOFS_PER_NODE = 3


def hermite(xi: np.ndarray, le: float) -> np.ndarray:
    """Cubic Hermite shape functions at local coordinates ``xi`` ∈ [0, 1].

    Returns shape ``xi.shape + (4,)`` for the element DOFs (w_i, θ_i, w_j, θ_j).

    >>> import numpy as np
    >>> hermite(np.array([0.0, 1.0]), 0.5).round(12)   # interpolates the end values
    array([[1., 0., 0., 0.],
           [0., 0., 1., 0.]])
    """
    xi = np.asarray(xi, dtype=np.float64)
    x2, x3 = xi * xi, xi * xi * xi
    return np.stack([1.0 - 3.0 * x2 + 2.0 * x3, le * (xi - 2.0 * x2 + x3),
                     3.0 * x2 - 2.0 * x3, le * (x3 - x2)], axis=-1)


def hermite_dx(xi: np.ndarray, le: float) -> np.ndarray:
    """d/dx of the Hermite shape functions [1/m for w DOFs, 1 for θ DOFs].

    >>> import numpy as np
    >>> hermite_dx(np.array([0.0]), 0.5).round(12)     # w' at the left node is the rotation DOF
    array([[0., 1., 0., 0.]])
    """
    xi = np.asarray(xi, dtype=np.float64)
    x2 = xi * xi
    return np.stack([(-6.0 * xi + 6.0 * x2) / le, 1.0 - 4.0 * xi + 3.0 * x2,
                     (6.0 * xi - 6.0 * x2) / le, 3.0 * x2 - 2.0 * xi], axis=-1)


def hermite_dxx(xi: np.ndarray, le: float) -> np.ndarray:
    """d²/dx² of the Hermite shape functions.

    >>> import numpy as np
    >>> float(hermite_dxx(np.array([0.5]), 2.0).sum())  # curvature of a rigid motion is zero
    0.0
    """
    xi = np.asarray(xi, dtype=np.float64)
    return np.stack([(-6.0 + 12.0 * xi) / le**2, (-4.0 + 6.0 * xi) / le,
                     (6.0 - 12.0 * xi) / le**2, (-2.0 + 6.0 * xi) / le], axis=-1)


def element_matrices(le: float, E: float, rho: float, A: float, I: float):
    """Local 6×6 stiffness and consistent mass of one element, DOFs (u,w,θ)_i,(u,w,θ)_j."""
    k = np.zeros((6, 6))
    m = np.zeros((6, 6))
    ax = [0, 3]
    bd = [1, 2, 4, 5]
    k[np.ix_(ax, ax)] = E * A / le * np.array([[1.0, -1.0], [-1.0, 1.0]])
    m[np.ix_(ax, ax)] = rho * A * le / 6.0 * np.array([[2.0, 1.0], [1.0, 2.0]])
    L = le
    k[np.ix_(bd, bd)] = E * I / L**3 * np.array([
        [12.0, 6 * L, -12.0, 6 * L],
        [6 * L, 4 * L * L, -6 * L, 2 * L * L],
        [-12.0, -6 * L, 12.0, -6 * L],
        [6 * L, 2 * L * L, -6 * L, 4 * L * L]])
    m[np.ix_(bd, bd)] = rho * A * L / 420.0 * np.array([
        [156.0, 22 * L, 54.0, -13 * L],
        [22 * L, 4 * L * L, 13 * L, -3 * L * L],
        [54.0, 13 * L, 156.0, -22 * L],
        [-13 * L, -3 * L * L, -22 * L, 4 * L * L]])
    return k, m


@dataclass(frozen=True)
class BeamFE:
    """Assembled beam: dense ``M`` [kg, kg m, kg m²] and ``K`` [N/m, N, N m] (ndof × ndof)."""

    length: float  # [m]
    n_elements: int
    youngs_modulus: float  # [Pa]
    density: float  # [kg/m³]
    area: float  # [m²]
    second_moment: float  # [m⁴]
    M: np.ndarray
    K: np.ndarray

    @property
    def n_nodes(self) -> int:
        return self.n_elements + 1

    @property
    def ndof(self) -> int:
        return DOFS_PER_NODE * self.n_nodes

    @property
    def le(self) -> float:
        """Element length [m]."""
        return self.length / self.n_elements

    @property
    def x_nodes(self) -> np.ndarray:
        return np.linspace(0.0, self.length, self.n_nodes)

    @property
    def w_dofs(self) -> np.ndarray:
        """Global indices of the transverse displacements, node order."""
        return np.arange(self.n_nodes) * DOFS_PER_NODE + 1

    def locate(self, s: np.ndarray):
        """Element index and local coordinate ξ ∈ [0, 1] of positions ``s`` [m] on the beam.

        Raises ValueError for a position outside [0, length].
        """
        s = np.asarray(s, dtype=np.float64)
        tol = 1e-12 * self.length
        if np.any(~np.isfinite(s)) or np.any(s < -tol) or np.any(s > self.length + tol):
            bad = s[~np.isfinite(s) | (s < -tol) | (s > self.length + tol)].ravel()[0]
            raise ValueError(f"position s = {bad!r} m is outside the beam [0, {self.length}] m")
        r = np.clip(s, 0.0, self.length) / self.le
        e = np.minimum(np.floor(r).astype(np.int64), self.n_elements - 1)
        return e, r - e

    def bending_dofs(self, e: np.ndarray) -> np.ndarray:
        """Global (w_i, θ_i, w_j, θ_j) indices of elements ``e``; shape e.shape + (4,)."""
        e = np.asarray(e, dtype=np.int64)
        base = DOFS_PER_NODE * e
        return np.stack([base + 1, base + 2, base + 4, base + 5], axis=-1)

    def point_load(self, x: float, transverse: float = 1.0) -> np.ndarray:
        """Consistent load vector of a transverse point force ``transverse`` [N] at ``x`` [m]."""
        e, xi = self.locate(np.array([x]))
        f = np.zeros(self.ndof)
        np.add.at(f, self.bending_dofs(e)[0], transverse * hermite(xi, self.le)[0])
        return f

    def uniform_load(self, q: float = 1.0) -> np.ndarray:
        """Consistent load vector of a uniform transverse line load ``q`` [N/m]."""
        le = self.le
        fe = q * le * np.array([0.5, le / 12.0, 0.5, -le / 12.0])
        f = np.zeros(self.ndof)
        np.add.at(f, self.bending_dofs(np.arange(self.n_elements)), np.broadcast_to(fe, (self.n_elements, 4)))
        return f


def _positive(name: str, value: float) -> float:
    v = float(value)
    if not np.isfinite(v) or v <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def build_beam(length: float, n_elements: int, youngs_modulus: float, density: float,
               area: float, second_moment: float) -> BeamFE:
    """Assemble a uniform beam of ``n_elements`` elements; every property must be > 0 (SI).

    >>> beam = build_beam(2.0, 10, 2.1e11, 7850.0, 1e-4, 2e-10)   # m, -, Pa, kg/m^3, m^2, m^4
    >>> beam.ndof, beam.M.shape
    (33, (33, 33))
    """
    length = _positive("length", length)
    E = _positive("youngs_modulus", youngs_modulus)
    rho = _positive("density", density)
    A = _positive("area", area)
    I = _positive("second_moment", second_moment)
    if int(n_elements) != n_elements or int(n_elements) < 1:
        raise ValueError(f"n_elements must be an integer >= 1, got {n_elements!r}")
    ne = int(n_elements)
    le = length / ne
    k, m = element_matrices(le, E, rho, A, I)
    ndof = DOFS_PER_NODE * (ne + 1)
    idx = DOFS_PER_NODE * np.arange(ne)[:, None] + np.arange(6)[None, :]  # (ne, 6)
    rows = np.broadcast_to(idx[:, :, None], (ne, 6, 6))
    cols = np.broadcast_to(idx[:, None, :], (ne, 6, 6))
    K = np.zeros((ndof, ndof))
    M = np.zeros((ndof, ndof))
    np.add.at(K, (rows, cols), np.broadcast_to(k, (ne, 6, 6)))
    np.add.at(M, (rows, cols), np.broadcast_to(m, (ne, 6, 6)))
    log.debug("assembled beam: %d elements, %d DOFs", ne, ndof)
    return BeamFE(length, ne, E, rho, A, I, M, K)
