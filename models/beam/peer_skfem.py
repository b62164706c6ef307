"""Independent FE check with scikit-fem: Euler–Bernoulli bending by ``ElementLineHermite``.

Assembles ``∫ EI w″ v″ dx`` and ``∫ ρA w v dx`` with scikit-fem's own basis and
quadrature on an arbitrary node set, imposes a clamp at x = 0 and pins (w = 0) at given
nodes by condensation, and returns bending frequencies or a static solution. Used only as
a peer to verify :mod:`models.beam.fe`; scikit-fem is imported lazily.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla


def _assemble(x_nodes: np.ndarray, EI: float, rhoA: float):
    from skfem import Basis, BilinearForm, ElementLineHermite, MeshLine
    from skfem.helpers import dd, ddot

    mesh = MeshLine(np.asarray(x_nodes, dtype=np.float64))
    basis = Basis(mesh, ElementLineHermite(), intorder=8)

    @BilinearForm
    def stiffness(u, v, w):
        return EI * ddot(dd(u), dd(v))

    @BilinearForm
    def mass(u, v, w):
        return rhoA * u * v

    K = stiffness.assemble(basis).toarray()
    M = mass.assemble(basis).toarray()
    return basis, mesh, K, M


def _free_dofs(basis, mesh, pins_x) -> np.ndarray:
    x = mesh.p[0]
    fixed = [basis.nodal_dofs[0, int(np.argmin(np.abs(x)))], basis.nodal_dofs[1, int(np.argmin(np.abs(x)))]]
    for xp in pins_x:
        i = int(np.argmin(np.abs(x - xp)))
        if abs(x[i] - xp) > 1e-9 * max(1.0, abs(xp)):
            raise ValueError(f"pin at x = {xp} m is not a node of the scikit-fem mesh")
        fixed.append(basis.nodal_dofs[0, i])
    return np.setdiff1d(np.arange(basis.N), np.array(fixed))


def bending_frequencies(x_nodes, EI: float, rhoA: float, pins_x=(), n_modes: int = 3) -> np.ndarray:
    """Lowest ``n_modes`` angular frequencies [rad/s] of the beam clamped at x = 0 and
    pinned at ``pins_x`` (which must be nodes)."""
    basis, mesh, K, M = _assemble(x_nodes, EI, rhoA)
    free = _free_dofs(basis, mesh, pins_x)
    lam = sla.eigh(K[np.ix_(free, free)], M[np.ix_(free, free)], eigvals_only=True,
                   subset_by_index=[0, n_modes - 1])
    return np.sqrt(lam)


def mesh_with_nodes(length: float, n_elements: int, extra_x=()) -> np.ndarray:
    """Uniform nodes on [0, length] plus ``extra_x`` (sorted, duplicates removed)."""
    x = np.concatenate([np.linspace(0.0, length, n_elements + 1), np.asarray(extra_x, dtype=float)])
    x = np.unique(np.round(x, 14))
    return x
