"""scikit-fem backend of the FE cross-check: bilinear quadrilaterals, 2 x 2 Gauss quadrature.

Axisymmetric: strains (e_rr, e_zz, e_tt = u_r / r, g_rz), every integral weighted by 2 pi r
(Gauss points never lie on the axis). Plane strain: (e_xx, e_yy, 0, g_xy), unit thickness.
Mass: "lumped" (default), the row sum of the consistent mass with the same quadrature (the lumped
mass an MPM code builds from material points at the Gauss points), or "consistent". Point forces enter through the shape functions
at their points (``probes``).
"""
from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu
from skfem import Basis, BilinearForm, ElementQuad1, ElementVector, MeshQuad

from .base import ElasticBody, FEDynamicResult, FEField, PointLoads

log = logging.getLogger(__name__)


class SkfemSolver:
    """The FE model of ``body`` (see module docstring)."""

    def __init__(self, body: ElasticBody, intorder: int = 2, mass: str = "lumped"):
        if mass not in ("lumped", "consistent"):
            raise ValueError(f"mass: must be 'lumped' or 'consistent', got {mass!r}")
        self.body = body
        self.mass_kind = mass
        xs, ys = body.grid_lines()
        self.mesh = MeshQuad.init_tensor(xs, ys)
        self.basis = Basis(self.mesh, ElementVector(ElementQuad1()), intorder=intorder)
        self.sbasis = Basis(self.mesh, ElementQuad1(), intorder=intorder)
        self.axi = body.formulation == "axisymmetric"
        lam, mu = body.lame
        axi, rho = self.axi, body.rho

        def strains(u, r):
            g = u.grad
            hoop = u.value[0] / r if axi else 0.0 * u.value[0]
            return g[0][0], g[1][1], hoop, g[0][1] + g[1][0]

        def jac(x):
            return 2.0 * np.pi * x[0] if axi else 1.0 + 0.0 * x[0]

        @BilinearForm
        def stiffness(u, v, w):
            eu, ev = strains(u, w.x[0]), strains(v, w.x[0])
            tr_u = eu[0] + eu[1] + eu[2]
            tr_v = ev[0] + ev[1] + ev[2]
            dev = 2.0 * mu * (eu[0] * ev[0] + eu[1] * ev[1] + eu[2] * ev[2]) + mu * eu[3] * ev[3]
            return (lam * tr_u * tr_v + dev) * jac(w.x)

        @BilinearForm
        def mass(u, v, w):
            return rho * (u.value[0] * v.value[0] + u.value[1] * v.value[1]) * jac(w.x)

        self.K = stiffness.assemble(self.basis).tocsr()
        self.M = mass.assemble(self.basis).tocsr()
        self.m_lumped = np.asarray(self.M.sum(axis=1)).ravel()
        nd = self.basis.nodal_dofs  # (2, Nnodes)
        p = self.mesh.p
        tol = 1e-12 * max(body.radius, body.height)
        fixed = np.concatenate([nd[0][p[0] <= tol], nd[1][p[1] <= tol]])
        self.fixed = np.unique(fixed)
        self.free = np.setdiff1d(np.arange(self.basis.N), self.fixed)
        self._lu_static = None
        xq = self.basis.mapping.F(self.basis.X)  # (2, nelems, nq)
        self._xq = np.stack([xq[0].ravel(), xq[1].ravel()], axis=1)
        wq = np.abs(self.basis.dx).ravel()  # includes |J| and the quadrature weights
        self._wq = wq * (2.0 * np.pi * self._xq[:, 0] if self.axi else 1.0)
        self._P_gauss = self.sbasis.probes(self._xq.T)
        log.info("skfem model: %d nodes, %d elements, %d dofs (%s)", p.shape[1], self.mesh.t.shape[1],
                 self.basis.N, body.formulation)

    # -- helpers -------------------------------------------------------------------------
    def gauss_points(self) -> np.ndarray:
        return self._xq.copy()

    def load_matrix(self, points: np.ndarray) -> sp.csr_matrix:
        """(Nnodes, Nc) shape-function values of the points (transposed probes)."""
        pts = np.asarray(points, dtype=np.float64)
        return self.sbasis.probes(pts.T).T.tocsr()

    def nodal_forces(self, Pt: sp.csr_matrix, forces: np.ndarray) -> np.ndarray:
        """Global force vector(s) of point forces (..., Nc, 2) -> (..., Ndof)."""
        f = np.asarray(forces, dtype=np.float64)
        lead = f.shape[:-2]
        flat = f.reshape((-1,) + f.shape[-2:])
        out = np.zeros((flat.shape[0], self.basis.N))
        nd = self.basis.nodal_dofs
        out[:, nd[0]] = (Pt @ flat[:, :, 0].T).T
        out[:, nd[1]] = (Pt @ flat[:, :, 1].T).T
        return out.reshape(lead + (self.basis.N,))

    def field(self, u: np.ndarray) -> FEField:
        """Displacement and stress at the Gauss points of the dof vector ``u``."""
        lam, mu = self.body.lame
        uf = self.basis.interpolate(u)
        g = uf.grad  # (2, 2, nelems, nq)
        val = uf.value  # (2, nelems, nq)
        x = self._xq
        exx, eyy, gxy = g[0][0].ravel(), g[1][1].ravel(), (g[0][1] + g[1][0]).ravel()
        ezz = val[0].ravel() / x[:, 0] if self.axi else np.zeros_like(exx)
        tr = exx + eyy + ezz
        stress = np.stack([lam * tr + 2 * mu * exx, lam * tr + 2 * mu * eyy, lam * tr + 2 * mu * ezz, mu * gxy], axis=1)
        disp = np.stack([val[0].ravel(), val[1].ravel()], axis=1)
        return FEField(x=x.copy(), u=disp, stress=stress, weight=self._wq.copy())

    def base_reaction(self, u: np.ndarray) -> float:
        """Axial reaction of the support y = 0 [N]: Σ (K u)_i over its fixed y dofs (the total ring
        force in an axisymmetric model), positive when the base pushes up (a compressed body)."""
        nd = self.basis.nodal_dofs
        base = nd[1][self.mesh.p[1] <= 1e-12 * max(self.body.radius, self.body.height)]
        return float(np.sum((self.K @ u)[base]))

    # -- solves --------------------------------------------------------------------------
    def static(self, points: np.ndarray, forces: np.ndarray) -> FEField:
        f = self.nodal_forces(self.load_matrix(points), np.asarray(forces)[None])[0]
        if self._lu_static is None:
            self._lu_static = splu(self.K[self.free][:, self.free].tocsc())
        u = np.zeros(self.basis.N)
        u[self.free] = self._lu_static.solve(f[self.free])
        self.u_static = u
        return self.field(u)

    def dynamic(self, loads: PointLoads, dt: float, *, beta: float = 0.25, gamma: float = 0.5) -> FEDynamicResult:
        """Newmark from rest; step n (t_n -> t_n + dt) uses loads.forces[n] at t_{n+1}.

        External work W_{n+1} = W_n + f_n . (u_{n+1} - u_n) (the step force is constant over the step).
        """
        if not (np.isfinite(dt) and dt > 0.0):
            raise ValueError(f"dt: must be a positive finite step in s, got {dt!r}")
        Pt = self.load_matrix(loads.points)
        F = self.nodal_forces(Pt, loads.forces)[:, self.free]  # (Nsteps, nfree)
        if self.mass_kind == "lumped":
            Mf = sp.diags(self.m_lumped[self.free]).tocsr()
        else:
            Mf = self.M[self.free][:, self.free]
        Kf = self.K[self.free][:, self.free]
        c0 = 1.0 / (beta * dt * dt)
        lu = splu((Kf + c0 * Mf).tocsc())
        n_steps, nf = F.shape[0], self.free.size
        U = np.zeros((n_steps + 1, nf))
        Vh = np.zeros((n_steps + 1, nf))
        u, v, a = np.zeros(nf), np.zeros(nf), np.zeros(nf)
        c1, c2 = 1.0 / (beta * dt), 1.0 / (2.0 * beta) - 1.0
        for n in range(n_steps):  # one sparse solve per step (implicit Newmark)
            rhs = F[n] + Mf @ (c0 * u + c1 * v + c2 * a)
            u_new = lu.solve(rhs)
            a_new = c0 * (u_new - u) - c1 * v - c2 * a
            v = v + dt * ((1.0 - gamma) * a + gamma * a_new)
            u, a = u_new, a_new
            U[n + 1] = u
            Vh[n + 1] = v
        full = np.zeros((n_steps + 1, self.basis.N))
        full[:, self.free] = U
        nd = self.basis.nodal_dofs
        Pp = Pt.T.tocsr()  # (Nc, Nnodes)
        up = np.stack([(Pp @ full[:, nd[0]].T).T, (Pp @ full[:, nd[1]].T).T], axis=-1)
        ug = np.stack([(self._P_gauss @ full[:, nd[0]].T).T, (self._P_gauss @ full[:, nd[1]].T).T], axis=-1)
        dW = np.einsum("nci,nci->n", np.asarray(loads.forces), np.diff(up, axis=0))
        times = dt * np.arange(n_steps + 1)
        self.u_history = full
        self.v_history = np.zeros_like(full)
        self.v_history[:, self.free] = Vh
        return FEDynamicResult(times=times, u_points=up, u_gauss=ug, final=self.field(full[-1]),
                               work=np.concatenate([[0.0], np.cumsum(dW)]))
