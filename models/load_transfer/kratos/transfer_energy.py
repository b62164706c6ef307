"""The energy an implicit MPM step loses to its particle-grid transfers, emulated on the FE model.

Kratos' implicit MPM (MPMResidualBasedBossakScheme with damp_factor_m 0 = Newmark beta 1/4, gamma 1/2)
starts every step from a grid reset: nodal velocity and acceleration are the mass-weighted
projections of the material-point values (P2G), the grid solves Newmark from u = 0, and the material
points take a_p = sum_I N_I a_I and v_p += dt/2 (a_p,old + a_p,new) (G2P). Projecting an interpolated
field is not the identity on the grid (it smooths the modes the grid resolves worst), so every step
removes energy from the modes a load with a short rise or a moving front excites.

:func:`transfer_balance` runs that step on the FE Newmark model of the same body (skfem, 2 x 2 Gauss
points = the material points, lumped mass = the MPM nodal mass, small displacements: a fixed grid):
``transfer=False`` is FE Newmark (the energy balance closes to round-off), ``transfer=True`` adds the
transfers above and reproduces Kratos' balance (issue 33: 0.351 / 0.284 / 0.203 of max W at 240 / 480 /
960 steps under the CFD wall load, Kratos 0.360 / 0.294 / 0.210). Pure numpy/scipy; no Kratos.
"""
from __future__ import annotations

from typing import Dict

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from ..fe.base import ElasticBody
from ..fe.skfem_backend import SkfemSolver
from .energy import newmark_work
from .loads import MeridianLoads


def transfer_balance(body: ElasticBody, loads: MeridianLoads, dt: float, n_steps: int, *,
                     transfer: bool = True) -> Dict[str, np.ndarray]:
    """Per step: time [s], external work W (:func:`~.energy.newmark_work`) [J], kinetic K (of the
    material points with ``transfer``, else of the grid) [J], elastic E = 1/2 u.K.u [J] and
    balance = W - K - E [J], for loads.step_average over each step [n dt, (n + 1) dt]."""
    s = SkfemSolver(body)
    nd, n_dof = s.basis.nodal_dofs, s.basis.N
    g = s._P_gauss.tocoo()  # (Nq, Nnodes) shape functions at the Gauss points = material points
    rows = np.concatenate([2 * g.row, 2 * g.row + 1])
    cols = np.concatenate([nd[0][g.col], nd[1][g.col]])
    P = sp.csr_matrix((np.concatenate([g.data, g.data]), (rows, cols)), shape=(2 * g.shape[0], n_dof))
    m_p = np.repeat(body.rho * s._wq, 2)  # material-point masses per component [kg]
    m_I = P.T @ m_p  # nodal masses = the lumped FE mass
    free = s.free
    Kf = s.K[free][:, free]
    c0, c1 = 4.0 / dt**2, 4.0 / dt
    lu = splu((Kf + sp.diags(c0 * m_I[free])).tocsc())
    Pt = s.load_matrix(loads.points)

    def to_grid(x: np.ndarray) -> np.ndarray:  # P2G: mass-weighted projection, fixed dofs zero
        y = np.zeros(n_dof)
        y[free] = (P.T @ (m_p * x))[free] / m_I[free]
        return y

    u, v_I, a_I = np.zeros(n_dof), np.zeros(n_dof), np.zeros(n_dof)
    v_p, a_p = np.zeros(P.shape[0]), np.zeros(P.shape[0])
    f_prev, W = np.zeros(n_dof), 0.0
    out: Dict[str, list] = {k: [] for k in ("time", "work", "kinetic", "elastic", "balance")}
    for k in range(n_steps):
        f = s.nodal_forces(Pt, loads.step_average(k * dt, (k + 1) * dt)[0][None])[0]
        if transfer:
            v_I, a_I = to_grid(v_p), to_grid(a_p)
        du = np.zeros(n_dof)
        du[free] = lu.solve(f[free] - (s.K @ u)[free] + m_I[free] * (c1 * v_I[free] + a_I[free]))
        a_new = np.zeros(n_dof)
        a_new[free] = c0 * du[free] - c1 * v_I[free] - a_I[free]
        v_I = v_I + 0.5 * dt * (a_I + a_new)
        a_I = a_new
        if transfer:  # G2P: the material points' Newmark velocity update with interpolated accelerations
            a_new_p = P @ a_new
            v_p = v_p + 0.5 * dt * (a_p + a_new_p)
            a_p = a_new_p
        W += newmark_work(f_prev, f, du)
        f_prev, u = f, u + du
        kin = 0.5 * float(np.sum(m_p * v_p * v_p)) if transfer else 0.5 * float(v_I @ (m_I * v_I))
        ela = 0.5 * float(u @ (s.K @ u))
        for key, val in (("time", (k + 1) * dt), ("work", W), ("kinetic", kin), ("elastic", ela),
                         ("balance", W - kin - ela)):
            out[key].append(val)
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}
