"""A user's finite-element solvers (scikit-fem) verified by manufactured solutions.

``poisson`` solves -laplace(u) = f on the unit square with u = u_exact on the boundary;
``elasticity`` solves plane-strain linear elasticity -div(sigma(u)) = f with u = u_exact on the
boundary; ``axisymmetric_elasticity`` the same in (r, z) with the hoop strain u_r / r and the
weight r (no swirl, on [0, 1]^2 touching the axis). All take the source term and the boundary
values from the Python code the harness generates into the run directory (``mms.py``: functions
``f`` / ``f_0, f_1`` and ``u_exact`` / ``u_exact_0, u_exact_1`` of (x, y) or (r, z)), solve with P1 or P2 triangles on an n x n mesh and write
the nodal solution as VTU (``solution.vtu``, point data ``u``; P2 as 6-node triangles).

``bug="boundary"`` plants a first-order boundary treatment: the boundary values are taken a
tenth of a cell off the boundary point. The solution still looks right; its order does not.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import meshio
import numpy as np
import skfem
from skfem.helpers import dot
from skfem.models.elasticity import lame_parameters, linear_elasticity


def _generated(run_dir: Path, name: str = "mms.py"):
    spec = importlib.util.spec_from_file_location(f"mms_{abs(hash(str(run_dir)))}", run_dir / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _element(degree: int, vector: bool = False):
    base = {1: skfem.ElementTriP1, 2: skfem.ElementTriP2}[int(degree)]()
    return skfem.ElementVector(base) if vector else base


def _vtk_cells(basis) -> tuple:
    """Points and connectivity of the scalar basis in VTK order (triangle or triangle6)."""
    dofs = basis.element_dofs.T.copy()
    points = basis.doflocs.T
    if dofs.shape[1] == 3:
        return points, "triangle", dofs
    # order the three edge dofs as VTK: (0,1), (1,2), (2,0) by their locations
    corners = points[dofs[:, :3]]
    mids = np.stack([(corners[:, 0] + corners[:, 1]) / 2, (corners[:, 1] + corners[:, 2]) / 2,
                     (corners[:, 2] + corners[:, 0]) / 2], axis=1)
    edge_pts = points[dofs[:, 3:6]]
    dist = np.linalg.norm(mids[:, :, None, :] - edge_pts[:, None, :, :], axis=3)
    dofs[:, 3:6] = np.take_along_axis(dofs[:, 3:6], dist.argmin(axis=2), axis=1)
    return points, "triangle6", dofs


def _write(path: Path, basis, values) -> None:
    points, ctype, cells = _vtk_cells(basis)
    points = np.column_stack([points, np.zeros(len(points))])  # VTU points are 3-D
    meshio.write(str(path), meshio.Mesh(points, [(ctype, cells)], point_data={"u": values}))


def _boundary_points(basis, dofs, h: float, bug: str | None):
    xy = basis.doflocs[:, dofs]
    if bug == "boundary":
        xy = xy + 0.1 * h * np.sign(0.5 - xy)  # a tenth of a cell inwards: a first-order boundary error
    elif bug is not None:
        raise ValueError(f"bug: unknown planted bug {bug!r} (known: boundary)")
    return xy


def poisson(n: int, degree: int, run_dir: str, bug: str | None = None) -> dict:
    """-laplace(u) = f on [0, 1]^2, u = u_exact on the boundary; writes solution.vtu."""
    run = Path(run_dir)
    mms = _generated(run)
    mesh = skfem.MeshTri.init_tensor(np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1))
    basis = skfem.Basis(mesh, _element(degree))

    @skfem.BilinearForm
    def stiffness(u, v, w):
        return dot(u.grad, v.grad)

    @skfem.LinearForm
    def load(v, w):
        return mms.f(w.x[0], w.x[1]) * v

    A, b = stiffness.assemble(basis), load.assemble(basis)
    boundary = basis.get_dofs().all()
    u = np.zeros(basis.N)
    xy = _boundary_points(basis, boundary, 1.0 / n, bug)
    u[boundary] = mms.u_exact(xy[0], xy[1])
    u = skfem.solve(*skfem.condense(A, b, x=u, D=boundary))
    _write(run / "solution.vtu", basis, u)
    return {"n_dofs": float(basis.N)}


def elasticity(n: int, degree: int, run_dir: str, E: float, nu: float, bug: str | None = None) -> dict:
    """Plane strain: -div(sigma(u)) = f on [0, 1]^2, u = u_exact on the boundary; writes solution.vtu."""
    run = Path(run_dir)
    mms = _generated(run)
    mesh = skfem.MeshTri.init_tensor(np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1))
    basis = skfem.Basis(mesh, _element(degree, vector=True))
    lam, mu = lame_parameters(E, nu)

    @skfem.LinearForm
    def load(v, w):
        x, y = w.x
        return mms.f_0(x, y) * v[0] + mms.f_1(x, y) * v[1]

    A, b = linear_elasticity(lam, mu).assemble(basis), load.assemble(basis)
    u = np.zeros(basis.N)
    boundary = basis.get_dofs()
    for comp, name in ((0, "u^1"), (1, "u^2")):
        dofs = boundary.all(name)
        xy = _boundary_points(basis, dofs, 1.0 / n, bug)
        u[dofs] = getattr(mms, f"u_exact_{comp}")(xy[0], xy[1])
    u = skfem.solve(*skfem.condense(A, b, x=u, D=boundary.all()))
    (ux, scalar), (uy, _) = basis.split(u)
    _write(run / "solution.vtu", scalar, np.stack([ux, uy], axis=1))
    return {"n_dofs": float(basis.N)}


def axisymmetric_elasticity(n: int, degree: int, run_dir: str, E: float, nu: float) -> dict:
    """Axisymmetric linear elasticity (no swirl) on the r-z square [0, 1]^2, touching the axis:
    find u = (u_r, u_z) with int sigma(u) : eps(v) r dr dz = int f . v r dr dz, where
    eps = (d_r u_r, u_r / r, d_z u_z; (d_z u_r + d_r u_z) / 2) and sigma = lam tr(eps) I + 2 mu eps;
    u = u_exact on the boundary (u_r = 0 on the axis); writes solution.vtu (points (r, z))."""
    run = Path(run_dir)
    mms = _generated(run)
    mesh = skfem.MeshTri.init_tensor(np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1))
    basis = skfem.Basis(mesh, _element(degree, vector=True))
    lam, mu = lame_parameters(E, nu)

    def strain(u, r):
        return u.grad[0][0], u.value[0] / r, u.grad[1][1], (u.grad[0][1] + u.grad[1][0]) / 2

    @skfem.BilinearForm
    def stiffness(u, v, w):
        r = w.x[0]
        (a, b, c, s), (d, e, f, t) = strain(u, r), strain(v, r)
        return (lam * (a + b + c) * (d + e + f) + 2 * mu * (a * d + b * e + c * f + 2 * s * t)) * r

    @skfem.LinearForm
    def load(v, w):
        r, z = w.x
        return (mms.f_0(r, z) * v[0] + mms.f_1(r, z) * v[1]) * r

    A, b = stiffness.assemble(basis), load.assemble(basis)
    u = np.zeros(basis.N)
    boundary = basis.get_dofs()
    for comp, name in ((0, "u^1"), (1, "u^2")):
        dofs = boundary.all(name)
        rz = basis.doflocs[:, dofs]
        u[dofs] = getattr(mms, f"u_exact_{comp}")(rz[0], rz[1])
    u = skfem.solve(*skfem.condense(A, b, x=u, D=boundary.all()))
    (ur, scalar), (uz, _) = basis.split(u)
    _write(run / "solution.vtu", scalar, np.stack([ur, uz], axis=1))
    return {"n_dofs": float(basis.N)}
