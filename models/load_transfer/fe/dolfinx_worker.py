"""DOLFINx 0.5 worker of the FE cross-check: runs on Debian's own interpreter (/usr/bin/python3),
never in the project's virtual environment, and imports nothing of this project.

    /usr/bin/python3 dolfinx_worker.py REQUEST.npz RESULT.npz

REQUEST (written by ``dolfinx_backend.DolfinxSolver``): body (radius, height, E, nu, rho, nr, nz,
axisymmetric), points (Nc, 2) m, forces (Nsteps, Nc, 2) N, task ("static" | "dynamic"), dt, beta,
gamma. RESULT: the Gauss-point fields (x, u, stress (xx, yy, zz, xy), weight), for "dynamic" also
u_points, u_gauss and work histories, and the versions (dolfinx, basix, ufl, numpy, petsc4py,
python). Written to a temporary name and renamed, so a crash leaves no result.

The weak form is written here: Q1 vector Lagrange on the nr x nz quadrilateral mesh of
[0, R] x [0, H]; axisymmetric strains (u_r,r, u_z,z, u_r / r, u_r,z + u_z,r) with the measure
2 pi r dx (plane strain: no hoop strain, unit thickness); 2 x 2 Gauss quadrature (degree 2);
u_r = 0 on r = 0, u_z = 0 on z = 0. Point forces enter through the Q1 shape functions at their
points (exact for the axis-aligned rectangular cells: tensor hat functions). Lumped mass = row sums
of the consistent mass with the same quadrature; Newmark from rest, step n sees forces[n].
"""
import json
import os
import sys

import numpy as np


def _versions():
    import basix
    import dolfinx
    import petsc4py
    import ufl

    return {"dolfinx": dolfinx.__version__, "basix": basix.__version__, "ufl": ufl.__version__,
            "numpy": np.__version__, "petsc4py": petsc4py.__version__, "python": sys.version.split()[0],
            "interpreter": sys.executable}


def _model(req):
    import ufl
    from dolfinx import fem, mesh
    from mpi4py import MPI
    from petsc4py import PETSc

    R, H = float(req["radius"]), float(req["height"])
    nr, nz = int(req["nr"]), int(req["nz"])
    E, nu, rho = float(req["E"]), float(req["nu"]), float(req["rho"])
    axi = bool(req["axisymmetric"])
    lam = E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))
    mu = E / (2.0 * (1.0 + nu))
    msh = mesh.create_rectangle(MPI.COMM_SELF, [np.array([0.0, 0.0]), np.array([R, H])], [nr, nz],
                                mesh.CellType.quadrilateral)
    V = fem.VectorFunctionSpace(msh, ("Lagrange", 1))
    x = ufl.SpatialCoordinate(msh)
    jac = 2.0 * np.pi * x[0] if axi else 1.0

    def strains(w):
        hoop = w[0] / x[0] if axi else 0.0 * w[0]
        return ufl.as_vector([w[0].dx(0), w[1].dx(1), hoop, w[0].dx(1) + w[1].dx(0)])

    def stress(w):
        e = strains(w)
        tr = e[0] + e[1] + e[2]
        return ufl.as_vector([lam * tr + 2 * mu * e[0], lam * tr + 2 * mu * e[1], lam * tr + 2 * mu * e[2], mu * e[3]])

    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    dx = ufl.dx(metadata={"quadrature_degree": 2})
    su, ev = stress(u), strains(v)
    a = fem.form((su[0] * ev[0] + su[1] * ev[1] + su[2] * ev[2] + su[3] * ev[3]) * jac * dx)
    m = fem.form(rho * ufl.inner(u, v) * jac * dx)
    tol = 1e-12 * max(R, H)
    fdim = msh.topology.dim - 1
    axis = mesh.locate_entities_boundary(msh, fdim, lambda p: p[0] <= tol)
    base = mesh.locate_entities_boundary(msh, fdim, lambda p: p[1] <= tol)
    bcs = [fem.dirichletbc(PETSc.ScalarType(0.0), fem.locate_dofs_topological(V.sub(0), fdim, axis), V.sub(0)),
           fem.dirichletbc(PETSc.ScalarType(0.0), fem.locate_dofs_topological(V.sub(1), fdim, base), V.sub(1))]
    return dict(msh=msh, V=V, a=a, m=m, bcs=bcs, stress=stress, jac=jac, x=x, R=R, H=H, nr=nr, nz=nz)


def _csr(A):
    import scipy.sparse as sp

    indptr, indices, data = A.getValuesCSR()
    n = A.getSize()
    return sp.csr_matrix((data, indices, indptr), shape=n)


def _load_matrix(md, points):
    """(Ndof_scalar_blocks, Nc) Q1 shape values of the points: tensor hat functions of the grid."""
    import scipy.sparse as sp

    V = md["V"]
    X = V.tabulate_dof_coordinates()[:, :2]  # block (node) coordinates
    hx, hy = md["R"] / md["nr"], md["H"] / md["nz"]
    rows, cols, vals = [], [], []
    for c, p in enumerate(points):  # a handful of load points
        wx = np.clip(1.0 - np.abs(X[:, 0] - p[0]) / hx, 0.0, None)
        wy = np.clip(1.0 - np.abs(X[:, 1] - p[1]) / hy, 0.0, None)
        w = wx * wy
        nz = np.flatnonzero(w > 0.0)
        rows.extend(nz.tolist())
        cols.extend([c] * nz.size)
        vals.extend(w[nz].tolist())
    P = sp.csr_matrix((vals, (rows, cols)), shape=(X.shape[0], len(points)))
    s = np.asarray(P.sum(axis=0)).ravel()
    assert np.allclose(s, 1.0, rtol=0, atol=1e-12), "load points outside the body"
    return P


def _gauss(md, uh):
    """Gauss-point coordinates, displacements, stresses, weights (2 x 2 per cell)."""
    import basix
    import ufl
    from dolfinx import fem

    msh = md["msh"]
    pts, wts = basix.make_quadrature(basix.CellType.quadrilateral, 2)
    cells = np.arange(msh.topology.index_map(msh.topology.dim).size_local, dtype=np.int32)
    nq = pts.shape[0]

    def ev(expr, ncomp):
        e = fem.Expression(expr, pts)
        return np.asarray(e.eval(cells)).reshape(cells.size, nq, ncomp).reshape(-1, ncomp)

    x = ev(ufl.as_vector([md["x"][0], md["x"][1]]), 2)
    u = ev(uh, 2)
    s = ev(md["stress"](uh), 4)
    detJ = ev(ufl.as_vector([abs(ufl.JacobianDeterminant(msh))]), 1)[:, 0]
    w = np.tile(wts, cells.size) * detJ * (2.0 * np.pi * x[:, 0] if not np.isscalar(md["jac"]) else 1.0)
    return x, u, s, w, cells, pts


def _block_static(req):
    """3-D block [0, Lx] x [0, Ly] x [0, Lz], Q1 hexahedra, rollers on x = 0, y = 0, z = 0, point forces."""
    import basix
    import scipy.sparse as sp
    import ufl
    from dolfinx import fem, mesh
    from dolfinx.fem.petsc import assemble_matrix
    from mpi4py import MPI
    from petsc4py import PETSc
    from scipy.sparse.linalg import splu

    L = [float(req["Lx"]), float(req["Ly"]), float(req["Lz"])]
    n = [int(req["nx"]), int(req["ny"]), int(req["nz"])]
    E, nu = float(req["E"]), float(req["nu"])
    lam = E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))
    mu = E / (2.0 * (1.0 + nu))
    msh = mesh.create_box(MPI.COMM_SELF, [np.zeros(3), np.array(L)], n, mesh.CellType.hexahedron)
    V = fem.VectorFunctionSpace(msh, ("Lagrange", 1))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)

    def eps(w):
        return ufl.sym(ufl.grad(w))

    def sigma(w):
        return lam * ufl.tr(eps(w)) * ufl.Identity(3) + 2.0 * mu * eps(w)

    dx = ufl.dx(metadata={"quadrature_degree": 2})
    A = assemble_matrix(fem.form(ufl.inner(sigma(u), eps(v)) * dx), bcs=[])
    A.assemble()
    K = _csr(A)
    fdim = 2
    tol = 1e-12 * max(L)
    fixed = []
    for c in range(3):
        facets = mesh.locate_entities_boundary(msh, fdim, lambda p, c=c: p[c] <= tol)
        bc = fem.dirichletbc(PETSc.ScalarType(0.0), fem.locate_dofs_topological(V.sub(c), fdim, facets), V.sub(c))
        fixed.append(np.asarray(bc.dof_indices()[0]))
    fixed = np.unique(np.concatenate(fixed))
    free = np.setdiff1d(np.arange(K.shape[0]), fixed)
    X = V.tabulate_dof_coordinates()
    h = [L[c] / n[c] for c in range(3)]
    points = np.asarray(req["points"], dtype=np.float64)
    forces = np.asarray(req["forces"], dtype=np.float64)[-1]  # (Nc, 3)
    W = np.ones((X.shape[0], points.shape[0]))
    for c in range(3):  # tensor hat functions of the grid at the points
        W *= np.clip(1.0 - np.abs(X[:, c, None] - points[None, :, c]) / h[c], 0.0, None)
    assert np.allclose(W.sum(axis=0), 1.0, rtol=0, atol=1e-12), "load points outside the block"
    F = np.zeros(K.shape[0])
    for c in range(3):
        F[c::3] = W @ forces[:, c]
    uvec = np.zeros(K.shape[0])
    uvec[free] = splu(K[free][:, free].tocsc()).solve(F[free])
    uh = fem.Function(V)
    uh.x.array[:] = uvec
    pts, wts = basix.make_quadrature(basix.CellType.hexahedron, 2)
    cells = np.arange(msh.topology.index_map(3).size_local, dtype=np.int32)
    nq = pts.shape[0]

    def ev(expr, ncomp):
        return np.asarray(fem.Expression(expr, pts).eval(cells)).reshape(cells.size, nq, ncomp).reshape(-1, ncomp)

    x = ufl.SpatialCoordinate(msh)
    s = sigma(uh)
    out = {"x": ev(ufl.as_vector([x[0], x[1], x[2]]), 3), "u": ev(uh, 3),
           "stress": ev(ufl.as_vector([s[0, 0], s[1, 1], s[2, 2], s[0, 1], s[1, 2], s[0, 2]]), 6)}
    detJ = ev(ufl.as_vector([abs(ufl.JacobianDeterminant(msh))]), 1)[:, 0]
    out["weight"] = np.tile(wts, cells.size) * detJ
    out["n_dofs"] = np.array(K.shape[0])
    return out


def main(argv):
    req_path, out_path = argv[1], argv[2]
    with np.load(req_path, allow_pickle=False) as z:
        req = {k: z[k] for k in z.files}
    if str(req["task"]) == "block_static":
        out = _block_static(req)
        out["versions"] = np.array(json.dumps(_versions()))
        tmp = out_path + ".tmp.npz"
        np.savez(tmp, **out)
        os.replace(tmp, out_path)
        return 0
    from dolfinx import fem
    from dolfinx.fem.petsc import assemble_matrix
    import scipy.sparse as sp
    from scipy.sparse.linalg import splu

    md = _model(req)
    V = md["V"]
    A = assemble_matrix(md["a"], bcs=[])
    A.assemble()
    K = _csr(A)
    Mp = assemble_matrix(md["m"], bcs=[])
    Mp.assemble()
    m_lumped = np.asarray(_csr(Mp).sum(axis=1)).ravel()
    fixed = np.unique(np.concatenate([np.asarray(bc.dof_indices()[0]) for bc in md["bcs"]]))
    n = K.shape[0]
    free = np.setdiff1d(np.arange(n), fixed)
    points = np.asarray(req["points"], dtype=np.float64)
    forces = np.asarray(req["forces"], dtype=np.float64)  # (Nsteps, Nc, 2)
    P = _load_matrix(md, points)  # (Nblocks, Nc)
    F = np.zeros((forces.shape[0], n))
    F[:, 0::2] = (P @ forces[:, :, 0].T).T
    F[:, 1::2] = (P @ forces[:, :, 1].T).T
    Kf = K[free][:, free].tocsc()
    out = {}
    uh = fem.Function(V)

    def field(u_full):
        uh.x.array[:] = u_full
        x, ug, s, w, _, _ = _gauss(md, uh)
        return x, ug, s, w

    if str(req["task"]) == "static":
        u = np.zeros(n)
        u[free] = splu(Kf).solve(F[-1, free])
        out["x"], out["u"], out["stress"], out["weight"] = field(u)
        X = V.tabulate_dof_coordinates()
        base = 2 * np.flatnonzero(X[:, 1] <= 1e-12 * max(md["R"], md["H"])) + 1  # the fixed axial dofs of y = 0
        out["base_reaction"] = np.array(float(np.sum((K @ u)[base])))
    else:
        dt, beta, gamma = float(req["dt"]), float(req["beta"]), float(req["gamma"])
        Mf = sp.diags(m_lumped[free]).tocsc()
        c0, c1, c2 = 1.0 / (beta * dt * dt), 1.0 / (beta * dt), 1.0 / (2.0 * beta) - 1.0
        lu = splu((Kf + c0 * Mf).tocsc())
        ns = forces.shape[0]
        U = np.zeros((ns + 1, n))
        uf, vf, af = np.zeros(free.size), np.zeros(free.size), np.zeros(free.size)
        for k in range(ns):
            u_new = lu.solve(F[k, free] + Mf @ (c0 * uf + c1 * vf + c2 * af))
            a_new = c0 * (u_new - uf) - c1 * vf - c2 * af
            vf = vf + dt * ((1.0 - gamma) * af + gamma * a_new)
            uf, af = u_new, a_new
            U[k + 1, free] = uf
        up = np.stack([(P.T @ U[:, 0::2].T).T, (P.T @ U[:, 1::2].T).T], axis=-1)
        dW = np.einsum("nci,nci->n", forces, np.diff(up, axis=0))
        ug = []
        for k in range(ns + 1):
            x, g, s, w = field(U[k])
            ug.append(g)
        out.update(x=x, u=ug[-1], stress=s, weight=w, u_points=up, u_gauss=np.asarray(ug),
                   work=np.concatenate([[0.0], np.cumsum(dW)]))
    out["versions"] = np.array(json.dumps(_versions()))
    out["n_dofs"] = np.array(n)
    tmp = out_path + ".tmp.npz"
    np.savez(tmp, **out)
    os.replace(tmp, out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
