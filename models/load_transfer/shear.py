"""Axisymmetric wall shear onto a surface: f^tau_a = sum_i int N_a chi_i tau_i e_r dA (seed 000).

e_r = ((x - x_c)/r, (y - y_c)/r, 0). On the axis (r = 0) tau_r = 0 by symmetry and the null
vector limit is used: 1/r is never evaluated there. A sliding (free-slip) wall has tau = 0, so
its shear forces vanish identically. tau > 0 points away from the axis.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .debug_map import point_rings, sample_ring_values


def radial_unit_vectors(points, axis_origin: Sequence[float] = (0.0, 0.0)) -> np.ndarray:
    """e_r (Nc, 3) of points (Nc, 2|3) m about the axis; the null vector at r = 0 (no 1/r)."""
    pts = np.asarray(points, dtype=np.float64)
    d = np.zeros((pts.shape[0], 3))
    d[:, 0] = pts[:, 0] - axis_origin[0]
    d[:, 1] = pts[:, 1] - axis_origin[1]
    r = np.hypot(d[:, 0], d[:, 1])
    out = np.zeros_like(d)
    np.divide(d, r[:, None], out=out, where=(r > 0.0)[:, None])
    return out


def shear_point_forces(radial_edges, shear, points, areas, *, axis_origin=(0.0, 0.0),
                       r_map: Optional[float] = None) -> np.ndarray:
    """Point shear forces (..., Nc, 3) N: tau of the point's ring x A_a x e_r(a).

    shear (..., Nr) Pa ring averages; zero beyond the last edge / R_map, zero on the axis.

    >>> import numpy as np
    >>> from models.load_transfer import shear_point_forces
    >>> shear_point_forces(np.array([0.0, 0.5, 1.0]), np.array([10.0, 20.0]),      # tau (Nr,) Pa
    ...                    np.array([[0.25, 0.0, 0.0], [0.0, 0.75, 0.0]]), np.array([0.5, 1.0]))
    array([[ 5.,  0.,  0.],
           [ 0., 20.,  0.]])
    """
    rings = point_rings(points, radial_edges, axis_origin=axis_origin, r_map=r_map)
    tau = sample_ring_values(shear, rings)  # (..., Nc)
    er = radial_unit_vectors(points, axis_origin)
    return (tau * np.asarray(areas, dtype=np.float64))[..., None] * er


def shear_nodal_forces(operator, shear) -> np.ndarray:
    """Nodal shear forces (..., Nn, 3) N with the operator's (Mx, My) = int N_a chi_i e_r dA.

    ``operator.shear_matrices()`` (ConservativePressureOperator) returns sparse (Nn, Nr)
    matrices whose integrands use the null limit on the axis; f_a = (Mx tau, My tau, 0).

    Example: a uniform radial tau0 on the unit disk; since the linear shape functions reproduce x and
    y, the nodal moment Σ_a x_a · f_a equals ∫ tau0 r dA = 2π tau0 R³/3.

    >>> import numpy as np
    >>> from models.load_transfer import ConservativePressureOperator, disk_mesh, shear_nodal_forces
    >>> s = disk_mesh(radius=1.0, resolution=4)
    >>> f = shear_nodal_forces(ConservativePressureOperator(s, np.linspace(0.0, 1.0, 5)), np.full(4, 100.0))
    >>> f.shape                                            # (Nn, 3), N
    (61, 3)
    >>> round(float((s.nodes[:, :2] * f[:, :2]).sum() / (2 * np.pi * 100.0 / 3)), 9)
    1.0
    """
    mx, my = operator.shear_matrices()
    tau = np.asarray(shear, dtype=np.float64)
    fx = (mx @ tau.reshape(-1, tau.shape[-1]).T).T.reshape(tau.shape[:-1] + (mx.shape[0],))
    fy = (my @ tau.reshape(-1, tau.shape[-1]).T).T.reshape(tau.shape[:-1] + (my.shape[0],))
    return np.stack([fx, fy, np.zeros_like(fx)], axis=-1)
