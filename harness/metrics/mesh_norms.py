"""Error norms integrated on mesh cells by quadrature, and the mesh size h.

For a finite-element field given by its nodal values on P1/P2 triangles and tetrahedra or Q1
quadrilaterals and hexahedra (node order of VTK/meshio), the field is interpolated with the
element's own shape functions at the quadrature points of each cell (mapped isoparametrically),
and compared with an exact function there:

    ||e||_L2 = sqrt(sum_cells sum_q w_q |det J| |u_h - u|^2)
    |e|_H1   = sqrt(sum_cells sum_q w_q |det J| |grad u_h - grad u|^2)

Units: those of the field times m^(d/2) (L2) and over m^(1 - d/2) (H1); coordinates in m.

Axisymmetric (``axisymmetric=True``, 2-D cells in the (r, z) half-plane, r the first coordinate,
r >= 0): the measure is the volume of the body of revolution, dV = 2 pi r dr dz (the 2 pi is
included), so the norms are the 3-D norms of the revolved field (m^(3/2) for L2, m^(1/2) for H1).
The H1 seminorm is the Frobenius norm of the full gradient in cylindrical coordinates: for a
scalar (d_r u)^2 + (d_z u)^2; for a vector (u_r, u_z) without swirl
(d_r u_r)^2 + (d_z u_r)^2 + (u_r / r)^2 + (d_r u_z)^2 + (d_z u_z)^2, the hoop term u_r / r being
the (theta, theta) entry of grad u (the weighted spaces H^1_1 and V^1_1 of Bernardi, Dauge &
Maday, *Spectral Methods for Axisymmetric Domains*, 1999; Mercier & Raugel, RAIRO 1982). The
exact gradient of a vector field is then the 3 x 3 tensor in (r, theta, z) that
:mod:`harness.generic.symbolic` derives. Quadrature points lie inside the cells, so r > 0 there
even on cells touching the axis.
Quadrature: Gauss-Legendre on quadrilaterals and hexahedra, collapsed (Duffy) Gauss-Legendre
on triangles and tetrahedra, exact for polynomials of the chosen degree. Cells are processed
in chunks (vectorised, no loop over cells).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Optional, Tuple

import numpy as np

CHUNK = 32768  # cells per vectorised chunk


@dataclass(frozen=True)
class Element:
    """A reference element: dimension, corner count, polynomial degree, shape functions."""

    name: str
    dim: int
    n_corners: int
    degree: int
    simplex: bool

    def shape(self, xi: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """N (nq, nn) and dN/dxi (nq, nn, dim) at reference points xi (nq, dim)."""
        return _SHAPES[self.name](xi)


def _p1_tri(xi):
    x, y = xi[:, 0], xi[:, 1]
    n = np.stack([1 - x - y, x, y], axis=1)
    d = np.broadcast_to(np.array([[-1.0, -1.0], [1.0, 0.0], [0.0, 1.0]]), (len(xi), 3, 2))
    return n, np.array(d)


def _p2_tri(xi):
    x, y = xi[:, 0], xi[:, 1]
    lam = [1 - x - y, x, y]
    dlam = [np.array([-1.0, -1.0]), np.array([1.0, 0.0]), np.array([0.0, 1.0])]
    edges = [(0, 1), (1, 2), (2, 0)]
    return _quadratic(lam, dlam, edges, len(xi), 2)


def _p1_tet(xi):
    x, y, z = xi[:, 0], xi[:, 1], xi[:, 2]
    n = np.stack([1 - x - y - z, x, y, z], axis=1)
    d = np.broadcast_to(np.array([[-1.0, -1.0, -1.0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float),
                        (len(xi), 4, 3))
    return n, np.array(d)


def _p2_tet(xi):
    x, y, z = xi[:, 0], xi[:, 1], xi[:, 2]
    lam = [1 - x - y - z, x, y, z]
    dlam = [np.array([-1.0, -1.0, -1.0]), np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), np.array([0, 0, 1.0])]
    edges = [(0, 1), (1, 2), (0, 2), (0, 3), (1, 3), (2, 3)]  # VTK_QUADRATIC_TETRA
    return _quadratic(lam, dlam, edges, len(xi), 3)


def _quadratic(lam, dlam, edges, nq, dim):
    """P2 on a simplex from barycentric coordinates: vertices l(2l-1), edges 4 li lj."""
    ns, ds = [], []
    for li, dli in zip(lam, dlam):
        ns.append(li * (2 * li - 1))
        ds.append((4 * li - 1)[:, None] * dli[None, :])
    for i, j in edges:
        ns.append(4 * lam[i] * lam[j])
        ds.append(4 * (lam[j][:, None] * dlam[i][None, :] + lam[i][:, None] * dlam[j][None, :]))
    return np.stack(ns, axis=1), np.stack(ds, axis=1).reshape(nq, len(ns), dim)


_QUAD_NODES = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], dtype=float)
_HEX_NODES = np.array([[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1],
                       [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]], dtype=float)


def _tensor_q1(nodes):
    def shape(xi):
        terms = 1 + xi[:, None, :] * nodes[None, :, :]          # (nq, nn, dim)
        n = np.prod(terms, axis=2) / 2 ** nodes.shape[1]
        d = np.empty(terms.shape)
        for k in range(nodes.shape[1]):
            others = np.prod(np.delete(terms, k, axis=2), axis=2)
            d[:, :, k] = nodes[None, :, k] * others / 2 ** nodes.shape[1]
        return n, d
    return shape


_SHAPES: Dict[str, Callable] = {"triangle": _p1_tri, "triangle6": _p2_tri, "tetra": _p1_tet, "tetra10": _p2_tet,
                                "quad": _tensor_q1(_QUAD_NODES), "hexahedron": _tensor_q1(_HEX_NODES)}
ELEMENTS: Dict[str, Element] = {
    "triangle": Element("triangle", 2, 3, 1, True), "triangle6": Element("triangle6", 2, 3, 2, True),
    "tetra": Element("tetra", 3, 4, 1, True), "tetra10": Element("tetra10", 3, 4, 2, True),
    "quad": Element("quad", 2, 4, 1, False), "hexahedron": Element("hexahedron", 3, 8, 1, False),
}


def quadrature(element: Element, degree: int) -> Tuple[np.ndarray, np.ndarray]:
    """Points (nq, dim) and weights (nq,) on the reference element, exact to ``degree``."""
    n = max(1, (degree + 2) // 2 + (1 if element.simplex else 0))
    g, w = np.polynomial.legendre.leggauss(n)
    if not element.simplex:
        grids = np.meshgrid(*([g] * element.dim), indexing="ij")
        wgrids = np.meshgrid(*([w] * element.dim), indexing="ij")
        return np.stack([a.ravel() for a in grids], axis=1), np.prod([a.ravel() for a in wgrids], axis=0)
    s, ws = (g + 1) / 2, w / 2  # on [0, 1]
    if element.dim == 2:
        u, v = np.meshgrid(s, s, indexing="ij")
        wu, wv = np.meshgrid(ws, ws, indexing="ij")
        pts = np.stack([u.ravel(), (v * (1 - u)).ravel()], axis=1)
        return pts, (wu * wv * (1 - u)).ravel()
    u, v, t = np.meshgrid(s, s, s, indexing="ij")
    wu, wv, wt = np.meshgrid(ws, ws, ws, indexing="ij")
    pts = np.stack([u.ravel(), (v * (1 - u)).ravel(), (t * (1 - u) * (1 - v)).ravel()], axis=1)
    return pts, (wu * wv * wt * (1 - u) ** 2 * (1 - v)).ravel()


def cell_diameters(points: np.ndarray, cells: np.ndarray, n_corners: int) -> np.ndarray:
    """Largest distance between two corners of each cell (m)."""
    corners = points[cells[:, :n_corners]]
    diam = np.zeros(len(cells))
    for i in range(n_corners):
        for j in range(i + 1, n_corners):
            diam = np.maximum(diam, np.linalg.norm(corners[:, i] - corners[:, j], axis=1))
    return diam


def mesh_size(points: np.ndarray, cells: Mapping[str, np.ndarray]) -> Dict[str, float]:
    """``h_max`` and ``h_mean`` (m): the largest and the mean cell diameter over the cells of
    the supported types (the ones error norms integrate)."""
    diams = [cell_diameters(points, c, ELEMENTS[t].n_corners) for t, c in cells.items() if t in ELEMENTS]
    if not diams:
        raise ValueError(f"no cells of a supported type (have {', '.join(cells) or 'none'}; "
                         f"supported: {', '.join(ELEMENTS)})")
    d = np.concatenate(diams)
    return {"h_max": float(d.max()), "h_mean": float(d.mean()), "n_cells": float(len(d))}


def error_norms(points: np.ndarray, cells: Mapping[str, np.ndarray], values: np.ndarray,
                exact: Optional[Callable[[np.ndarray], np.ndarray]] = None,
                exact_grad: Optional[Callable[[np.ndarray], np.ndarray]] = None,
                quadrature_degree: Optional[int] = None, axisymmetric: bool = False) -> Dict[str, float]:
    """L2 and H1-seminorm of ``u_h - u`` and of ``u`` itself over the supported cells.

    points: (n_points, d) coordinates (m), d the dimension of the cells;
    values: (n_points,) or (n_points, n_comp) nodal values of u_h;
    exact(X) -> (m,) or (m, n_comp) at points X (m, d); exact_grad(X) -> (m, d) or (m, n_comp, d).
    Returns ``L2``, ``L2_exact`` (when ``exact``), ``H1`` and ``H1_exact`` (when ``exact_grad``)
    and ``measure`` (the area or volume, m^d).
    axisymmetric: points are (r, z), weights 2 pi r, vector gradients (m, 3, 3) in (r, theta, z)
    (see the module docstring); 2-D cells only, r >= 0.
    """
    vals = np.asarray(values, dtype=np.float64)
    vals = vals[:, None] if vals.ndim == 1 else vals
    if axisymmetric:
        _check_axisymmetric(points, cells, vals)
    sums = {"L2": 0.0, "L2_exact": 0.0, "H1": 0.0, "H1_exact": 0.0, "measure": 0.0}
    used = False
    for ctype, conn in cells.items():
        element = ELEMENTS.get(ctype)
        if element is None:
            continue
        used = True
        if points.shape[1] < element.dim:
            raise ValueError(f"{ctype} cells need {element.dim} coordinates, the points have {points.shape[1]}")
        xyz = points[:, :element.dim]
        degree = quadrature_degree if quadrature_degree is not None else 2 * element.degree + 3 + int(axisymmetric)
        xi, w = quadrature(element, degree)
        n, dn = element.shape(xi)                        # (nq, nn), (nq, nn, d)
        affine = element.simplex and element.degree == 1  # constant Jacobian per cell
        for start in range(0, len(conn), CHUNK):
            c = conn[start:start + CHUNK]
            X = xyz[c]                                   # (nc, nn, d)
            if affine:
                jac = np.einsum("cad,ae->cde", X, dn[0])[:, None]   # (nc, 1, d, d)
            else:
                jac = np.einsum("cad,qae->cqde", X, dn)  # dx_d / dxi_e at every point
            det = _det(jac)
            wdet = np.abs(det) * w[None, :]              # (nc, nq)
            xq = np.stack([X[:, :, d] @ n.T for d in range(element.dim)], axis=-1).reshape(-1, element.dim)
            if axisymmetric:
                wdet = wdet * (2 * np.pi) * xq[:, 0].reshape(wdet.shape)   # dV = 2 pi r dr dz
            sums["measure"] += float(wdet.sum())
            U = vals[c]                                  # (nc, nn, k)
            if exact is not None:
                uh = np.stack([U[:, :, k] @ n.T for k in range(U.shape[2])], axis=-1)   # (nc, nq, k)
                ue = np.asarray(exact(xq), dtype=np.float64).reshape(uh.shape)
                diff = uh - ue
                sums["L2"] += float(np.einsum("cq,cqk,cqk->", wdet, diff, diff, optimize=True))
                sums["L2_exact"] += float(np.einsum("cq,cqk,cqk->", wdet, ue, ue, optimize=True))
            if exact_grad is not None:
                jinv = _inv(jac, det)                    # dxi_e / dx_d
                dndx = np.einsum("qae,cqed->cqad", dn, np.broadcast_to(jinv, (len(c), len(w)) + jinv.shape[2:]))
                gh = np.einsum("cqad,cak->cqkd", dndx, U)
                if axisymmetric and U.shape[2] == 2:
                    gh = _cylindrical_gradient(gh, U[:, :, 0] @ n.T, xq[:, 0].reshape(len(c), len(w)))
                ge = np.asarray(exact_grad(xq), dtype=np.float64).reshape(gh.shape)
                sums["H1"] += float(np.einsum("cq,cqkd->", wdet, (gh - ge) ** 2))
                sums["H1_exact"] += float(np.einsum("cq,cqkd->", wdet, ge ** 2))
    if not used:
        raise ValueError(f"no cells of a supported type (have {', '.join(cells) or 'none'}; "
                         f"supported: {', '.join(ELEMENTS)})")
    out = {"measure": sums["measure"]}
    if exact is not None:
        out.update(L2=float(np.sqrt(sums["L2"])), L2_exact=float(np.sqrt(sums["L2_exact"])))
    if exact_grad is not None:
        out.update(H1=float(np.sqrt(sums["H1"])), H1_exact=float(np.sqrt(sums["H1_exact"])))
    return out


def _check_axisymmetric(points: np.ndarray, cells: Mapping[str, np.ndarray], vals: np.ndarray) -> None:
    """2-D cells, r >= 0 at every node, a scalar or a 2-component (u_r, u_z) field."""
    for ctype in cells:
        if ctype in ELEMENTS and ELEMENTS[ctype].dim != 2:
            raise ValueError(f"axisymmetric norms take 2-D cells in (r, z), got {ctype} cells")
    r = np.asarray(points, dtype=np.float64)[:, 0]
    tol = 1e-12 * max(1.0, float(np.abs(r).max(initial=0.0)))
    if np.any(r < -tol):
        raise ValueError(f"axisymmetric mesh has {int(np.sum(r < -tol))} nodes with r < 0 (min r = {r.min():.6g} m); "
                         f"the first coordinate is the radius r >= 0")
    if vals.shape[1] not in (1, 2):
        raise ValueError(f"axisymmetric norms take a scalar or a vector (u_r, u_z), got {vals.shape[1]} components")


def _cylindrical_gradient(g2: np.ndarray, ur: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The 3 x 3 gradient in (r, theta, z) of (u_r, u_z) from its (r, z) gradient g2 (nc, nq, 2, 2)
    and u_r / r at the quadrature points (the hoop entry (theta, theta))."""
    g3 = np.zeros(g2.shape[:2] + (3, 3))
    g3[..., 0, 0], g3[..., 0, 2] = g2[..., 0, 0], g2[..., 0, 1]
    g3[..., 2, 0], g3[..., 2, 2] = g2[..., 1, 0], g2[..., 1, 1]
    g3[..., 1, 1] = ur / r
    return g3


def _det(j: np.ndarray) -> np.ndarray:
    """Determinants of (..., d, d) matrices, d = 2 or 3, in closed form."""
    if j.shape[-1] == 2:
        return j[..., 0, 0] * j[..., 1, 1] - j[..., 0, 1] * j[..., 1, 0]
    return (j[..., 0, 0] * (j[..., 1, 1] * j[..., 2, 2] - j[..., 1, 2] * j[..., 2, 1])
            - j[..., 0, 1] * (j[..., 1, 0] * j[..., 2, 2] - j[..., 1, 2] * j[..., 2, 0])
            + j[..., 0, 2] * (j[..., 1, 0] * j[..., 2, 1] - j[..., 1, 1] * j[..., 2, 0]))


def _inv(j: np.ndarray, det: np.ndarray) -> np.ndarray:
    """Inverses of (..., d, d) matrices with their determinants ``det``."""
    if j.shape[-1] == 2:
        out = np.empty_like(j)
        out[..., 0, 0], out[..., 1, 1] = j[..., 1, 1], j[..., 0, 0]
        out[..., 0, 1], out[..., 1, 0] = -j[..., 0, 1], -j[..., 1, 0]
        return out / det[..., None, None]
    return np.linalg.inv(j)


def quadrature_points(points: np.ndarray, conn: np.ndarray, ctype: str,
                      quadrature_degree: Optional[int] = None) -> np.ndarray:
    """Physical quadrature points (n_cells * nq, d) of the cells: what the norms evaluate the
    exact function at (for benchmarks and checks)."""
    element = ELEMENTS[ctype]
    degree = quadrature_degree if quadrature_degree is not None else 2 * element.degree + 3
    xi, _ = quadrature(element, degree)
    n, _ = element.shape(xi)
    return np.einsum("qa,cad->cqd", n, points[:, :element.dim][conn]).reshape(-1, element.dim)
