"""scikit-fem model of the 3-D block (the FE peer of the 3-D Kratos MPM case): trilinear hexahedra
on the same grid, 2 x 2 x 2 Gauss quadrature, u_x = 0 on x = 0, u_y = 0 on y = 0, u_z = 0 on z = 0,
point forces through the shape functions at their points. Fields at the Gauss points."""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy.sparse.linalg import splu
from skfem import Basis, BilinearForm, ElementHex1, ElementVector, MeshHex

log = logging.getLogger(__name__)


@dataclass
class Field3D:
    """x (Nq, 3) m, u (Nq, 3) m, stress (Nq, 6) Pa (xx, yy, zz, xy, yz, xz), weight (Nq,) m^3."""

    x: np.ndarray
    u: np.ndarray
    stress: np.ndarray
    weight: np.ndarray


def von_mises_3d(s: np.ndarray) -> np.ndarray:
    """Von Mises stress [Pa] of (N, 6) (xx, yy, zz, xy, yz, xz)."""
    sx, sy, sz, txy, tyz, txz = (s[:, k] for k in range(6))
    return np.sqrt(0.5 * ((sx - sy) ** 2 + (sy - sz) ** 2 + (sz - sx) ** 2) + 3.0 * (txy**2 + tyz**2 + txz**2))


def solve_block_static(block, points: np.ndarray, forces: np.ndarray) -> Field3D:
    """Linear static solve of ``block`` (kratos.block3d.Block) for point forces (Nc, 3) N at points (Nc, 3) m."""
    xs, ys, zs = (np.linspace(0.0, L, n + 1) for L, n in ((block.Lx, block.nx), (block.Ly, block.ny),
                                                        (block.Lz, block.nz)))
    mesh = MeshHex.init_tensor(xs, ys, zs)
    basis = Basis(mesh, ElementVector(ElementHex1()), intorder=2)
    sbasis = Basis(mesh, ElementHex1(), intorder=2)
    lam, mu = block.lame

    @BilinearForm
    def stiffness(u, v, w):
        gu, gv = u.grad, v.grad
        eu = [[0.5 * (gu[i][j] + gu[j][i]) for j in range(3)] for i in range(3)]
        ev = [[0.5 * (gv[i][j] + gv[j][i]) for j in range(3)] for i in range(3)]
        tr_u = eu[0][0] + eu[1][1] + eu[2][2]
        tr_v = ev[0][0] + ev[1][1] + ev[2][2]
        return lam * tr_u * tr_v + 2.0 * mu * sum(eu[i][j] * ev[i][j] for i in range(3) for j in range(3))

    K = stiffness.assemble(basis).tocsr()
    nd = basis.nodal_dofs  # (3, Nnodes)
    p = mesh.p
    tol = 1e-12 * max(block.Lx, block.Ly, block.Lz)
    fixed = np.unique(np.concatenate([nd[c][p[c] <= tol] for c in range(3)]))
    free = np.setdiff1d(np.arange(basis.N), fixed)
    Pt = sbasis.probes(np.asarray(points, np.float64).T).T.tocsr()  # (Nnodes, Nc)
    f = np.zeros(basis.N)
    F = np.asarray(forces, np.float64)
    for c in range(3):
        f[nd[c]] = Pt @ F[:, c]
    u = np.zeros(basis.N)
    u[free] = splu(K[free][:, free].tocsc()).solve(f[free])
    uf = basis.interpolate(u)
    g, val = uf.grad, uf.value
    xq = basis.mapping.F(basis.X)
    x = np.stack([xq[c].ravel() for c in range(3)], axis=1)
    e = [[0.5 * (g[i][j] + g[j][i]).ravel() for j in range(3)] for i in range(3)]
    tr = e[0][0] + e[1][1] + e[2][2]
    stress = np.stack([lam * tr + 2 * mu * e[0][0], lam * tr + 2 * mu * e[1][1], lam * tr + 2 * mu * e[2][2],
                       2 * mu * e[0][1], 2 * mu * e[1][2], 2 * mu * e[0][2]], axis=1)
    disp = np.stack([val[c].ravel() for c in range(3)], axis=1)
    log.info("skfem block: %d nodes, %d hexahedra, %d dofs", p.shape[1], mesh.t.shape[1], basis.N)
    return Field3D(x=x, u=disp, stress=stress, weight=np.abs(basis.dx).ravel())
