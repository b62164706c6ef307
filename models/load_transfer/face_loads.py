"""Conservative point conditions: the traction integrated exactly over each exposed face, then split
among the face's point conditions consistently with the face's shape functions (seed 000,
"Superficie, áreas y nodos", step 3).

A face carries Kc point conditions (its quadrature points, or its nodes) at positions x_a and the
Lagrange basis L_a through them (Σ_a L_a = 1 on the face). Condition a receives

    f_a = -n ∫_face L_a p̄ dA = -n Σ_i W_ai p̄_i,   W_ai = ∫_face L_a χ_i dA   [m²],

exactly: the face is clipped by the ring circles (and by the common disk R_map) and L_a is a
polynomial integrated in closed form on every piece. Hence Σ_{a ∈ face} f_a is the exact face
integral of p̄ (local conservation) and Σ_a f_a the source force on the common area, to round-off.
The tributary area of a condition is A_a = ∫_face L_a dA, so the equivalent pressure
p_a = (W p̄)_a / A_a reproduces f_a = -p_a A_a n_a (the kratos-point-loads relation).

Faces (``FaceTable``):
* annulus faces (Kv = 2 vertices): the meridian segment [r0, r1] at y = axis_origin_y of a plane
  z = const, revolved about the axis (the top face of an axisymmetric body); dA = 2π r dr and
  L_a(r) is the Lagrange polynomial through the condition radii.
* triangles (Kv = 3) in a plane z = const with 1 or 3 conditions: L_a linear in (x, y); pieces
  from the production clipping (``operator._pieces``: exact area and first moment by Green).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .clipping import axis_distance_range, polygon_moments
from .sources import check_radial_edges

log = logging.getLogger(__name__)


class FaceTableError(ValueError):
    """A face table that does not describe the conditions (names the face or condition and the rule)."""


@dataclass(frozen=True)
class FaceTable:
    """vertices (Nf, Kv, 3) m; condition_index (Nf, Kc) int, rows of the condition table per face."""

    vertices: np.ndarray
    condition_index: np.ndarray

    @property
    def kind(self) -> str:
        return {2: "annulus", 3: "triangle"}.get(self.vertices.shape[1], f"polygon-{self.vertices.shape[1]}")

    @property
    def size(self) -> int:
        return int(self.vertices.shape[0])

    def check(self, n_conditions: int) -> None:
        """Shapes, finite vertices, and every condition in exactly one face (FaceTableError)."""
        v, c = self.vertices, self.condition_index
        if v.ndim != 3 or v.shape[2] != 3 or v.shape[1] not in (2, 3):
            raise FaceTableError(f"faces/vertices: shape must be (Nf, 2 | 3, 3), got {v.shape}")
        if c.ndim != 2 or c.shape[0] != v.shape[0]:
            raise FaceTableError(f"faces/condition_index: shape must be (Nf={v.shape[0]}, Kc), got {c.shape}")
        bad = np.argwhere(~np.isfinite(v))
        if bad.size:
            raise FaceTableError(f"faces/vertices: must be finite; face {int(bad[0][0])} is not")
        if v.shape[1] == 3 and c.shape[1] not in (1, 3):
            raise FaceTableError(f"faces/condition_index: a triangle carries 1 or 3 conditions, got {c.shape[1]}")
        out = np.flatnonzero((c < 0) | (c >= n_conditions))
        if out.size:
            f = int(out[0]) // c.shape[1]
            raise FaceTableError(f"faces/condition_index: face {f} names condition row {int(c.ravel()[out[0]])}, "
                                 f"outside 0..{n_conditions - 1}")
        count = np.bincount(c.ravel(), minlength=n_conditions)
        if np.any(count != 1):
            a = int(np.flatnonzero(count != 1)[0])
            raise FaceTableError(f"faces/condition_index: condition row {a} belongs to {int(count[a])} faces; "
                                 f"every condition must belong to exactly one face")


def _clip_edges(radial_edges, r_map: Optional[float]) -> np.ndarray:
    e = check_radial_edges(radial_edges)
    return e if r_map is None else np.minimum(e, float(r_map))


def _annulus_radii(faces: FaceTable, axis_origin) -> Tuple[np.ndarray, np.ndarray]:
    v = faces.vertices
    r = np.hypot(v[..., 0] - axis_origin[0], v[..., 1] - axis_origin[1])
    return r.min(axis=1), r.max(axis=1)


def _annulus_pairs(r0, r1, edges):
    """(face, ring, a, b) of every face-ring overlap [a, b] with b > a (vectorised)."""
    nr = edges.size - 1
    lo = np.clip(np.searchsorted(edges, r0, side="right") - 1, 0, nr)
    hi = np.clip(np.searchsorted(edges, r1, side="left") - 1, -1, nr - 1)
    count = np.maximum(hi - lo + 1, 0)
    face = np.repeat(np.arange(r0.size), count)
    ring = np.repeat(lo, count) + (np.arange(face.size) - np.repeat(np.cumsum(count) - count, count))
    a = np.maximum(r0[face], edges[ring])
    b = np.minimum(r1[face], edges[ring + 1])
    keep = b > a
    return face[keep], ring[keep], a[keep], b[keep]


def _lagrange_local(s_pts: np.ndarray) -> np.ndarray:
    """C (Nf, Kc, Kc): L_a(s) = Σ_k C[f, k, a] s^k through the points s_pts (Nf, Kc)."""
    k = np.arange(s_pts.shape[1])
    V = s_pts[:, :, None] ** k[None, None, :]  # V[f, a, k] = s_a^k
    return np.linalg.inv(V)  # C[f, k, a]: Σ_k V[f, b, k] C[f, k, a] = δ_ab


def _annulus_weights(faces: FaceTable, xyz, edges, axis_origin):
    """(rows, cols, vals) of W_ai = 2π ∫ L_a(r) r dr over every face ∩ ring (annulus faces)."""
    r0, r1 = _annulus_radii(faces, axis_origin)
    h = r1 - r0
    if np.any(h <= 0.0):
        f = int(np.flatnonzero(h <= 0.0)[0])
        raise FaceTableError(f"faces/vertices: annulus face {f} has zero radial length")
    idx = faces.condition_index
    rc = np.hypot(xyz[idx, 0] - axis_origin[0], xyz[idx, 1] - axis_origin[1])  # (Nf, Kc)
    s_pts = (rc - r0[:, None]) / h[:, None]
    if np.any((s_pts < -1e-12) | (s_pts > 1.0 + 1e-12)):
        f = int(np.argwhere((s_pts < -1e-12) | (s_pts > 1.0 + 1e-12))[0][0])
        raise FaceTableError(f"faces/condition_index: a condition of face {f} lies outside the face "
                             f"[{float(r0[f])!r}, {float(r1[f])!r}] m")
    if np.any(np.diff(np.sort(s_pts, axis=1), axis=1) <= 0.0):
        f = int(np.argwhere(np.diff(np.sort(s_pts, axis=1), axis=1) <= 0.0)[0][0])
        raise FaceTableError(f"faces/condition_index: two conditions of face {f} share a radius")
    C = _lagrange_local(s_pts)
    face, ring, a, b = _annulus_pairs(r0, r1, edges)
    kc = idx.shape[1]
    k = np.arange(kc)
    sa = ((a - r0[face]) / h[face])[:, None]
    sb = ((b - r0[face]) / h[face])[:, None]
    # ∫_{sa}^{sb} s^k (r0 + h s) ds
    mom = r0[face, None] * (sb ** (k + 1) - sa ** (k + 1)) / (k + 1) + h[face, None] * (sb ** (k + 2) - sa ** (k + 2)) / (k + 2)
    vals = 2.0 * np.pi * h[face, None] * np.einsum("pk,pka->pa", mom, C[face])  # (P, Kc)
    return idx[face].ravel(), np.repeat(ring, kc), vals.ravel()


def _triangle_weights(faces: FaceTable, xyz, edges, axis_origin):
    """(rows, cols, vals) of W_ai = ∫ L_a χ_i dA over triangle ∩ annulus, L_a linear in (x, y)."""
    from .operator import _pieces

    V = faces.vertices[..., :2] - np.asarray(axis_origin, dtype=np.float64)[None, None, :]
    turn = (V[:, 1, 0] - V[:, 0, 0]) * (V[:, 2, 1] - V[:, 0, 1]) - (V[:, 1, 1] - V[:, 0, 1]) * (V[:, 2, 0] - V[:, 0, 0])
    if np.any(turn == 0.0):
        raise FaceTableError(f"faces/vertices: triangle {int(np.flatnonzero(turn == 0.0)[0])} is degenerate")
    V = np.where((turn < 0.0)[:, None, None], V[:, ::-1], V)  # ccw in xy for the clipping
    origin = V.mean(axis=1)
    area_e, mom_e = polygon_moments(V, origin)
    r_min, r_max = axis_distance_range(V)
    elem, ring, parea, pmom, _ = _pieces(V, origin, r_min, r_max, area_e, mom_e, edges, 200_000)
    idx = faces.condition_index
    kc = idx.shape[1]
    if kc == 1:
        vals = parea[:, None]
    else:
        P = xyz[idx][..., :2] - np.asarray(axis_origin)[None, None, :] - origin[:, None, :]  # (Nf, 3, 2)
        A = np.concatenate([np.ones((P.shape[0], 3, 1)), P], axis=2)  # rows [1, x, y] of each point
        try:
            coef = np.linalg.inv(A)  # L_a(x) = coef[0, a] + coef[1:, a] . (x - origin)
        except np.linalg.LinAlgError as exc:
            raise FaceTableError("faces/condition_index: the 3 conditions of a triangle are collinear") from exc
        c = coef[elem]  # (P, 3, 3)
        vals = c[:, 0, :] * parea[:, None] + np.einsum("pj,pja->pa", pmom, c[:, 1:, :])
    return idx[elem].ravel(), np.repeat(ring, kc), vals.ravel()


def face_condition_matrix(faces: FaceTable, coordinates, radial_edges, *, axis_origin: Sequence[float] = (0.0, 0.0),
                          r_map: Optional[float] = None) -> sp.csr_matrix:
    """W (Nc, Nr) m²: W_ai = ∫_face(a) L_a χ_i dA on the common disk (rings clipped at r_map)."""
    xyz = np.asarray(coordinates, dtype=np.float64)
    faces.check(xyz.shape[0])
    edges = _clip_edges(radial_edges, r_map)
    fn = _annulus_weights if faces.vertices.shape[1] == 2 else _triangle_weights
    rows, cols, vals = fn(faces, xyz, edges, tuple(axis_origin))
    W = sp.csr_matrix((vals, (rows, cols)), shape=(xyz.shape[0], edges.size - 1))
    W.sum_duplicates()
    return W


def condition_areas(faces: FaceTable, coordinates, *, axis_origin: Sequence[float] = (0.0, 0.0)) -> np.ndarray:
    """A_a = ∫_face L_a dA (Nc,) m²: the tributary areas consistent with the face shape functions."""
    xyz = np.asarray(coordinates, dtype=np.float64)
    r_far = float(np.max(np.hypot(faces.vertices[..., 0] - axis_origin[0], faces.vertices[..., 1] - axis_origin[1])))
    W = face_condition_matrix(faces, xyz, [0.0, 2.0 * r_far + 1.0], axis_origin=axis_origin)
    return np.asarray(W.sum(axis=1)).ravel()


def face_ring_areas(vertices, radial_edges, *, axis_origin: Sequence[float] = (0.0, 0.0),
                    r_map: Optional[float] = None) -> sp.csr_matrix:
    """|face ∩ ring_i ∩ disk(r_map)| (Nf, Nr) m², exact, from the face geometry alone."""
    v = np.asarray(vertices, dtype=np.float64)
    n = v.shape[0]
    faces = FaceTable(vertices=v, condition_index=np.arange(n)[:, None])
    centroid = v.mean(axis=1)
    if v.shape[1] == 2:  # one condition per annulus: L = 1 needs a point inside, take the mid radius
        r0, r1 = _annulus_radii(faces, axis_origin)
        centroid = np.stack([axis_origin[0] + 0.5 * (r0 + r1), np.full(n, axis_origin[1]), v[:, 0, 2]], axis=1)
    return face_condition_matrix(faces, centroid, radial_edges, axis_origin=axis_origin, r_map=r_map)


def axisymmetric_face_table(r_faces, z: float, *, points_per_face: int = 2, outward: str = "+z",
                            axis_origin: Sequence[float] = (0.0, 0.0), first_id: int = 1
                            ) -> Tuple[pd.DataFrame, FaceTable]:
    """Quadrature table and face table of the annulus faces [r_j, r_{j+1}] of a plane z [m].

    Conditions at the Gauss-Legendre points of each face on the meridian y = axis_origin_y; their
    tributary areas are the exact ∫ L_a 2π r dr (for 2 points per face: 2π r_a w_a, the Gauss rule
    being exact for that quadratic). Returns (table DataFrame, FaceTable).
    """
    r = check_radial_edges(r_faces)
    g, _ = np.polynomial.legendre.leggauss(int(points_per_face))
    mid, half = 0.5 * (r[1:] + r[:-1]), 0.5 * np.diff(r)
    rc = (mid[:, None] + half[:, None] * g[None, :])  # (Nf, Kc)
    nf, kc = rc.shape
    x0, y0 = float(axis_origin[0]), float(axis_origin[1])
    xyz = np.stack([x0 + rc.ravel(), np.full(rc.size, y0), np.full(rc.size, float(z))], axis=1)
    verts = np.zeros((nf, 2, 3))
    verts[:, 0, 0], verts[:, 1, 0] = x0 + r[:-1], x0 + r[1:]
    verts[:, :, 1], verts[:, :, 2] = y0, float(z)
    faces = FaceTable(vertices=verts, condition_index=np.arange(rc.size).reshape(nf, kc))
    area = condition_areas(faces, xyz, axis_origin=axis_origin)
    sign = 1.0 if outward == "+z" else -1.0
    n = rc.size
    table = pd.DataFrame({"condition_id": np.arange(first_id, first_id + n, dtype=np.int64), "x0": xyz[:, 0],
                          "y0": xyz[:, 1], "z0": xyz[:, 2], "tributary_area": area, "nx": np.zeros(n),
                          "ny": np.zeros(n), "nz": np.full(n, sign)})
    return table, faces


# barycentric coordinates of the interior 3-point rule (degree 2): each point carries A/3
_TRI_POINTS = np.array([[2.0 / 3.0, 1.0 / 6.0, 1.0 / 6.0], [1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0],
                        [1.0 / 6.0, 1.0 / 6.0, 2.0 / 3.0]])


def triangle_face_table(nodes, triangles, *, outward: str = "+z", first_id: int = 1,
                        axis_origin: Sequence[float] = (0.0, 0.0)) -> Tuple[pd.DataFrame, FaceTable]:
    """Quadrature table and face table of planar triangles (nodes (Nn, 3) m, one plane z = const):
    three conditions per triangle at the interior points of the degree-2 rule, tributary areas
    ∫ L_a dA (= A/3 for this symmetric rule, recomputed exactly). Returns (table, FaceTable)."""
    X = np.asarray(nodes, dtype=np.float64)
    T = np.asarray(triangles, dtype=np.int64)
    if X.ndim != 2 or X.shape[1] != 3 or T.ndim != 2 or T.shape[1] != 3:
        raise FaceTableError(f"nodes (Nn, 3) and triangles (Nf, 3) expected, got {X.shape}, {T.shape}")
    used = X[np.unique(T)]
    if np.ptp(used[:, 2]) > 1e-12 * max(1.0, float(np.max(np.abs(used)))):
        raise FaceTableError("nodes: the faces must lie in one plane z = const")
    verts = X[T]  # (Nf, 3, 3)
    pts = np.einsum("qk,fkj->fqj", _TRI_POINTS, verts).reshape(-1, 3)
    nf = T.shape[0]
    faces = FaceTable(vertices=verts, condition_index=np.arange(3 * nf).reshape(nf, 3))
    area = condition_areas(faces, pts, axis_origin=axis_origin)
    sign = 1.0 if outward == "+z" else -1.0
    n = pts.shape[0]
    table = pd.DataFrame({"condition_id": np.arange(first_id, first_id + n, dtype=np.int64), "x0": pts[:, 0],
                          "y0": pts[:, 1], "z0": pts[:, 2], "tributary_area": area, "nx": np.zeros(n),
                          "ny": np.zeros(n), "nz": np.full(n, sign)})
    return table, faces
