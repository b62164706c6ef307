"""Conservative transfer of ring-averaged wall pressure to the nodes of a target surface.

M_ai = ∫_Γ N_a χ_i dA is precomputed once per (surface, radial edges): every element is clipped
against every annulus it meets, as (element ∩ disk(r_{i+1})) − (element ∩ disk(r_i)).

* Triangles (P1): N_a is linear, so ∫ N_a = A/3 + ∇N_a · ∫ (x − x̄) dA over each piece, with
  the exact area and first moment of polygon ∩ disk from Green's theorem (``clipping``).
* Quadrilaterals (bilinear isoparametric N_a, not polynomial in x, y): polar Gauss quadrature
  about the axis between angular break points (``quadrature``), each element–annulus piece
  renormalised to its exact Green area, so Σ_a M_ai is exact for any quadrature order and the
  split among the nodes converges exponentially with ``quadrature_order``.

Nodal forces f_a = −n Σ_i M_ai p̄_i (positive gauge pressure pushes against the outward normal).
Nothing is loaded beyond the last radial edge. The assembly is vectorised over all
(element, circle) pairs; only circles that cross an element are clipped.
"""
from __future__ import annotations

import logging
import time
from typing import Optional, Tuple

import numpy as np
import scipy.sparse as sp

from .clipping import (
    axis_distance_range,
    boundary_edges,
    convex_disk_moments,
    outline_disk_areas,
    polygon_moments,
)
from .quadrature import bilinear_shape, polar_points
from .sources import check_radial_edges
from .surfaces import SurfaceMesh

log = logging.getLogger(__name__)


ROUNDOFF = 16.0  # round-off factor of the column check (measured error <= 0.2 eps S_i on rings 1e-6 of r wide)


class GeometryError(ValueError):
    """The operator's columns do not sum to the geometric ring areas within the tolerance.

    >>> import numpy as np
    >>> from models.load_transfer import ConservativePressureOperator, GeometryError, disk_mesh
    >>> op = ConservativePressureOperator(disk_mesh(radius=1.0, resolution=4), np.linspace(0.0, 1.0, 5))
    >>> try:
    ...     op.verify_matrix(0.5 * op.matrix)             # half of every ring is missing
    ... except GeometryError as err:
    ...     print(str(err)[:6])
    ring 0
    """


def _pieces(V, origin, r_min, r_max, area_e, mom_e, edges, chunk):
    """All element–annulus pieces with their exact area and first moment about ``origin``.

    Returns (elem (Np,), ring (Np,), area (Np,), moment (Np, 2), n_clipped).
    """
    ne = V.shape[0]
    nr = edges.size - 1
    i_lo = np.clip(np.searchsorted(edges, r_min, side="right") - 1, 0, None)
    i_hi = np.minimum(np.searchsorted(edges, r_max, side="left") - 1, nr - 1)
    n_ring = np.maximum(i_hi - i_lo + 1, 0)
    nc = np.where(n_ring > 0, n_ring + 1, 0)  # circles i_lo .. i_hi + 1
    off = np.cumsum(nc) - nc
    e_of = np.repeat(np.arange(ne), nc)
    k_of = i_lo[e_of] + np.arange(e_of.size) - off[e_of]
    rk = edges[k_of]
    full = rk >= r_max[e_of]
    clip = ~full & (rk > r_min[e_of])
    a = np.where(full, area_e[e_of], 0.0)
    m = np.where(full[:, None], mom_e[e_of], 0.0)
    idx = np.flatnonzero(clip)
    for s in range(0, idx.size, chunk):
        sel = idx[s:s + chunk]
        es = e_of[sel]
        a[sel], m[sel] = convex_disk_moments(V[es], rk[sel], origin[es])
    keep = np.ones(e_of.size, dtype=bool)
    keep[(off + nc - 1)[nc > 0]] = False
    p = np.flatnonzero(keep)
    return e_of[p], k_of[p], a[p + 1] - a[p], m[p + 1] - m[p], int(idx.size)


class ConservativePressureOperator:
    """Exact-area conservative ring-to-node pressure operator on a planar surface.

    surface            : SurfaceMesh in a plane z = const (normal ±z); r is measured from
                         its axis_origin.
    radial_edges       : (Nr+1,) m, strictly increasing, >= 0.
    geometry_tolerance : relative tolerance of the column check, |Σ_a M_ai − A_ref,i| / A_i.
    quadrature_order   : Gauss points per direction and angular sub-interval (quads, shear).

    Column check (raises GeometryError naming the ring, the sum, the reference and the
    relative error): if the surface covers disk(r_max) (every boundary edge at distance >= r_max
    from the axis and the axis on the surface), A_ref,i = A_i = π(r_{i+1}² − r_i²). Otherwise
    A_ref,i is the common area of the annulus and the surface computed by an independent route:
    the surface OUTLINE (its boundary edges) clipped as one polygon against the circles
    (``clipping.outline_disk_areas``), never the element-wise pieces.

    Attributes: matrix (CSR, (Nn, Nr), m^2), ring_areas, covered_areas (area of surface ∩
    annulus: A_i when covers_disk, else the outline route), covers_disk, n_pieces,
    n_clipped_pairs, assembly_seconds, column_sums.

    Example (disk of radius 1 m, 4 rings): the columns sum to the ring areas, a uniform
    p0 gives F = p0 π R².

    >>> import numpy as np
    >>> from models.load_transfer import ConservativePressureOperator, disk_mesh
    >>> op = ConservativePressureOperator(disk_mesh(radius=1.0, resolution=4), np.linspace(0.0, 1.0, 5))
    >>> op.matrix.shape                                   # (Nn, Nr)
    (61, 4)
    >>> bool(np.allclose(op.column_sums, np.pi * np.diff(np.linspace(0.0, 1.0, 5) ** 2), rtol=1e-12))
    True
    >>> round(float(op.normal_force(np.full(4, 1.0e5)) / (1.0e5 * np.pi)), 12)
    1.0
    """

    def __init__(
        self,
        surface: SurfaceMesh,
        radial_edges,
        *,
        geometry_tolerance: float = 1e-12,
        quadrature_order: int = 8,
        chunk_pairs: int = 200_000,
    ) -> None:
        t_start = time.perf_counter()
        if not isinstance(surface, SurfaceMesh):
            raise TypeError(f"surface: must be a SurfaceMesh, got {type(surface).__name__}")
        edges = check_radial_edges(radial_edges)
        if not (np.isfinite(geometry_tolerance) and geometry_tolerance > 0.0):
            raise ValueError(f"geometry_tolerance: must be > 0, got {geometry_tolerance!r}")
        if int(quadrature_order) != quadrature_order or int(quadrature_order) < 1:
            raise ValueError(f"quadrature_order: must be an integer >= 1, got {quadrature_order!r}")
        n = surface.normal
        if abs(abs(n[2]) - 1.0) > 1e-12:
            raise ValueError(f"surface.normal: the wall must be a plane z = const (normal ±z), got {n!r}")
        self.surface = surface
        self.radial_edges = edges
        self.geometry_tolerance = float(geometry_tolerance)
        self.quadrature_order = int(quadrature_order)
        self.normal = n.copy()
        self.kind = surface.kind
        self._chunk = int(chunk_pairs)
        self._shear_cache: dict = {}
        # geometry in the xy plane relative to the axis, elements ccw in xy
        self._xy = surface.nodes[:, :2] - surface.axis_origin
        el = surface.elements if n[2] > 0.0 else surface.elements[:, ::-1]
        self._el = np.ascontiguousarray(el)
        V = self._xy[self._el]
        self._V = V
        if V.shape[1] == 4:  # the clipping and the polar quadrature need convex elements
            e = np.roll(V, -1, axis=1) - V
            turn = e[..., 0] * np.roll(e, -1, axis=1)[..., 1] - e[..., 1] * np.roll(e, -1, axis=1)[..., 0]
            bad = np.flatnonzero(~np.all(turn > 0.0, axis=1))
            if bad.size:
                raise ValueError(
                    f"surface.elements: quadrilaterals must be strictly convex; element {int(bad[0])} is not "
                    f"({bad.size} element(s))"
                )
        self._origin = V.mean(axis=1)
        self._area_e, self._mom_e = polygon_moments(V, self._origin)
        self._r_min, self._r_max = axis_distance_range(V)
        r = edges
        self.ring_areas = np.pi * (r[1:] - r[:-1]) * (r[1:] + r[:-1])
        elem, ring, parea, pmom, nclip = _pieces(
            V, self._origin, self._r_min, self._r_max, self._area_e, self._mom_e, edges, self._chunk
        )
        self._piece_elem, self._piece_ring, self._piece_area, self._piece_mom = elem, ring, parea, pmom
        self.n_pieces = int(elem.size)
        self.n_clipped_pairs = nclip
        if self.kind == "tri":
            vals = self._tri_values(elem, parea, pmom)
        else:
            vals = self._quad_values(elem, ring, parea)
        K = self._el.shape[1]
        rows = self._el[elem].ravel()
        cols = np.repeat(ring, K)
        self.matrix = sp.csr_matrix((vals.ravel(), (rows, cols)), shape=(surface.nodes.shape[0], edges.size - 1))
        self.matrix.sum_duplicates()
        self.covers_disk = self._covers_disk()
        # round-off scale of each column: every piece is a difference of two clipped areas whose
        # Green terms are of size r_max(e) x perimeter(e); a ring much thinner than its elements
        # loses digits there (relative to A_i) however right the matrix is.
        perim = np.linalg.norm(np.roll(V, -1, axis=1) - V, axis=-1).sum(axis=1)
        self.roundoff_scale = np.bincount(ring, weights=(self._r_max * perim)[elem], minlength=edges.size - 1)
        if self.covers_disk:
            self.covered_areas = self.ring_areas.copy()
        else:
            a, b = boundary_edges(self._el)
            circ = outline_disk_areas(self._xy[a], self._xy[b], edges)
            self.covered_areas = np.diff(circ)
            outline = float(np.linalg.norm(self._xy[b] - self._xy[a], axis=1).sum())
            self.roundoff_scale = self.roundoff_scale + edges[1:] * outline  # the outline route's differences
        self.column_sums = self.verify_matrix(self.matrix)
        self.assembly_seconds = time.perf_counter() - t_start
        log.info(
            "ConservativePressureOperator: %d %s elements, %d rings, %d pieces (%d clipped pairs), "
            "covers_disk=%s, %.3f s",
            self._el.shape[0], self.kind, edges.size - 1, self.n_pieces, nclip, self.covers_disk,
            self.assembly_seconds,
        )

    # ------------------------------------------------------------------ assembly helpers
    def _tri_gradients(self, elem):
        V = self._V[elem]
        two_a = 2.0 * self._area_e[elem]
        nxt, prv = np.roll(V, -1, axis=1), np.roll(V, -2, axis=1)
        return np.stack([nxt[..., 1] - prv[..., 1], prv[..., 0] - nxt[..., 0]], axis=-1) / two_a[:, None, None]

    def _tri_values(self, elem, parea, pmom):
        grad = self._tri_gradients(elem)  # (Np, 3, 2)
        return parea[:, None] / 3.0 + np.einsum("paj,pj->pa", grad, pmom)

    def _quadrature(self, elem, ring, order, weight_fn):
        """Σ_q N_a(x_q) weight_fn(u_q) w_q per piece: (Np, K, m) for m weight components."""
        K = self._el.shape[1]
        chunk = max(64, 1_500_000 // (12 * order * order))  # bounds the points held at once
        out = None
        for s in range(0, elem.size, chunk):
            e = elem[s:s + chunk]
            rg = ring[s:s + chunk]
            V = self._V[e]
            # triangles: N_a ρ w(θ) is quadratic in ρ, so 2 radial points are exact
            piece, x, u, w = polar_points(V, self.radial_edges[rg], self.radial_edges[rg + 1], order,
                                          order_rho=2 if K == 3 else order)
            if K == 3:
                grad = self._tri_gradients(e)
                N = 1.0 / 3.0 + np.einsum("naj,nj->na", grad[piece], x - self._origin[e][piece])
            else:
                N, res = bilinear_shape(V[piece], x)
                if res > 1e-10:
                    log.warning("bilinear inverse map: relative residual %.2e", res)
                if N.size and (N.min() < -1e-9 or N.max() > 1.0 + 1e-9):
                    log.warning("bilinear inverse map: shape values outside [0, 1] (%.3e, %.3e)", N.min(), N.max())
            comp = weight_fn(u)  # (Npts, m)
            vals = (N * w[:, None])[:, :, None] * comp[:, None, :]  # (Npts, K, m)
            block = np.zeros((e.size, K, comp.shape[1]))
            if piece.size:
                starts = np.flatnonzero(np.r_[True, piece[1:] != piece[:-1]])
                block[piece[starts]] = np.add.reduceat(vals, starts, axis=0)
            out = block if out is None else np.concatenate([out, block])
        if out is None:
            out = np.zeros((0, K, 1))
        return out

    def _quad_values(self, elem, ring, parea):
        q = self._quadrature(elem, ring, self.quadrature_order, lambda u: np.ones((u.shape[0], 1)))[..., 0]
        tot = q.sum(axis=1)
        scale = np.divide(parea, tot, out=np.zeros_like(parea), where=tot > 0.0)
        return q * scale[:, None]

    def _covers_disk(self) -> bool:
        a, b = boundary_edges(self._el)
        A, B = self._xy[a], self._xy[b]
        d = B - A
        t = np.clip(-np.einsum("nj,nj->n", A, d) / np.einsum("nj,nj->n", d, d), 0.0, 1.0)
        foot = A + t[:, None] * d
        dist = np.sqrt(np.einsum("nj,nj->n", foot, foot)).min(initial=np.inf)
        axis_on_surface = bool(np.any(self._r_min == 0.0))
        r_out = self.radial_edges[-1]
        return axis_on_surface and dist >= r_out * (1.0 - self.geometry_tolerance)

    # ------------------------------------------------------------------ checks
    def verify_matrix(self, matrix) -> np.ndarray:
        """Check the column sums of ``matrix`` against the reference areas; return the sums.

        Raises GeometryError naming the first failing ring, Σ_a M_ai, the reference (A_i or
        the outline common area) and the relative error (normalised by A_i).
        """
        sums = np.asarray(matrix.sum(axis=0)).ravel()
        ref = self.ring_areas if self.covers_disk else self.covered_areas
        err = np.abs(sums - ref) / self.ring_areas
        allowed = self.allowed_column_error()
        bad = np.flatnonzero(~(err <= allowed))
        if bad.size:
            i = int(bad[0])
            what = "A_i" if self.covers_disk else "common area (outline route)"
            raise GeometryError(
                f"ring {i}: sum_a M_ai = {float(sums[i])!r} m^2 but {what} = {float(ref[i])!r} m^2 "
                f"(A_i = {float(self.ring_areas[i])!r} m^2, relative error {err[i]:.3e} > allowed {allowed[i]:.3e} "
                f"= geometry_tolerance {self.geometry_tolerance:.1e} + round-off bound "
                f"{allowed[i] - self.geometry_tolerance:.1e}; {bad.size} ring(s) fail)"
            )
        return sums

    def allowed_column_error(self) -> np.ndarray:
        """(Nr,) relative column error accepted per ring: geometry_tolerance + ROUNDOFF eps S_i / A_i.

        S_i (``roundoff_scale``, m^2) bounds the size of the terms whose differences give column i;
        for rings as wide as their elements the round-off part is far below geometry_tolerance,
        for a ring 1e-6 of its radius wide it is ~1e-8 (still ~1e-14 m^2 absolute), while a
        missing or doubled piece is a whole piece area.
        """
        eps = np.finfo(np.float64).eps
        return self.geometry_tolerance + ROUNDOFF * eps * self.roundoff_scale / self.ring_areas

    # ------------------------------------------------------------------ application
    def _check_p(self, p_bar) -> np.ndarray:
        p = np.asarray(p_bar, dtype=np.float64)
        nr = self.radial_edges.size - 1
        if p.ndim not in (1, 2) or p.shape[-1] != nr:
            raise ValueError(f"p_bar: must have shape (Nr,) or (Ns, Nr) with Nr={nr}, got {p.shape}")
        return p

    def nodal_pressure_loads(self, p_bar) -> np.ndarray:
        """Σ_i M_ai p̄_i, N, shape (..., Nn) (the normal force magnitude per node)."""
        p = self._check_p(p_bar)
        return (self.matrix @ p.T).T if p.ndim == 2 else self.matrix @ p

    def nodal_forces(self, p_bar) -> np.ndarray:
        """f_a = −n Σ_i M_ai p̄_i, N, shape (..., Nn, 3) for p_bar (Nr,) or (Ns, Nr) Pa."""
        g = self.nodal_pressure_loads(p_bar)
        return -g[..., None] * self.normal

    def normal_force(self, p_bar):
        """F_M = −Σ_a f_a · n, N (positive in compression), scalar or (Ns,)."""
        f = self.nodal_forces(p_bar)
        return -(f @ self.normal).sum(axis=-1)

    def reference_force(self, p_bar):
        """F_B = Σ_i p̄_i A_ref,i, N, with A_ref = A_i if covers_disk else the common area."""
        p = self._check_p(p_bar)
        return p @ (self.ring_areas if self.covers_disk else self.covered_areas)

    def shear_matrices(self, order: Optional[int] = None) -> Tuple[sp.csr_matrix, sp.csr_matrix]:
        """(Mx, My) CSR (Nn, Nr), m^2: M^x_ai = ∫ N_a χ_i (x − x_c)/r dA (and y).

        Polar Gauss quadrature of order ``order`` (default quadrature_order) on the same pieces:
        (x − x_c)/r = cos θ and dA = ρ dρ dθ, so the integrand has the null limit at the axis and
        1/r is never evaluated. Accuracy is that of the quadrature (exponential in the order; for
        triangles the only non-polynomial factor is cos θ, sin θ along smooth limits).
        Shear forces are f^τ_a = (Mx τ̄, My τ̄, 0).
        """
        q = self.quadrature_order if order is None else int(order)
        if q in self._shear_cache:
            return self._shear_cache[q]
        vals = self._quadrature(self._piece_elem, self._piece_ring, q, lambda u: u)  # (Np, K, 2)
        K = self._el.shape[1]
        rows = self._el[self._piece_elem].ravel()
        cols = np.repeat(self._piece_ring, K)
        shape = self.matrix.shape
        mx = sp.csr_matrix((vals[..., 0].ravel(), (rows, cols)), shape=shape)
        my = sp.csr_matrix((vals[..., 1].ravel(), (rows, cols)), shape=shape)
        mx.sum_duplicates()
        my.sum_duplicates()
        self._shear_cache[q] = (mx, my)
        return mx, my

    def shear_forces(self, tau_bar) -> np.ndarray:
        """f^τ_a = Σ_i (M^x_ai, M^y_ai, 0) τ̄_i, N, shape (..., Nn, 3) for τ̄ (Nr,) or (Ns, Nr) Pa."""
        t = self._check_p(tau_bar)
        mx, my = self.shear_matrices()
        fx = (mx @ t.T).T if t.ndim == 2 else mx @ t
        fy = (my @ t.T).T if t.ndim == 2 else my @ t
        return np.stack([fx, fy, np.zeros_like(fx)], axis=-1)

    def mesh_info(self) -> dict:
        """Facts to store with M: mesh hash, axis origin, normal, sizes."""
        return {
            "mesh_sha256": self.surface.sha256(),
            "axis_origin": [float(v) for v in self.surface.axis_origin],
            "normal": [float(v) for v in self.normal],
            "kind": self.kind,
            "n_nodes": int(self.surface.nodes.shape[0]),
            "n_elements": int(self._el.shape[0]),
            "n_rings": int(self.radial_edges.size - 1),
            "r_max": float(self.radial_edges[-1]),
            "n_pieces": self.n_pieces,
            "covers_disk": bool(self.covers_disk),
        }


def centroid_sampling_forces(surface: SurfaceMesh, radial_edges, p_bar) -> np.ndarray:
    """CONTRAST ONLY (not the production operator): p sampled at element centroids.

    Each element's area times the ring value at its centroid radius is split equally among
    its nodes; zero beyond the last edge. Returns nodal normal loads (Nn,) N. Used by tests to
    show that this naive rule does not conserve ring-wise load.

    Example: a uniform p0 is conserved in total (p0 times the mesh area, 6 n² triangles here)
    but, unlike the operator, not ring by ring for profiles that vary.

    >>> import numpy as np
    >>> from models.load_transfer import centroid_sampling_forces, disk_mesh
    >>> s = disk_mesh(radius=1.0, resolution=4)
    >>> f = centroid_sampling_forces(s, np.linspace(0.0, 1.1, 5), np.full(4, 1.0e5))
    >>> f.shape, round(float(f.sum() / (1.0e5 * s.area())), 12)
    ((61,), 1.0)
    """
    edges = np.asarray(radial_edges, dtype=np.float64)
    p = np.asarray(p_bar, dtype=np.float64)
    xy = surface.nodes[:, :2] - surface.axis_origin
    V = xy[surface.elements]
    rc = np.hypot(*V.mean(axis=1).T)
    i = np.searchsorted(edges, rc, side="right") - 1
    inside = (i >= 0) & (i < edges.size - 1)
    pe = np.where(inside, p[np.clip(i, 0, edges.size - 2)], 0.0)
    K = surface.elements.shape[1]
    load = np.repeat(surface.element_areas() * pe / K, K)
    return np.bincount(surface.elements.ravel(), weights=load, minlength=surface.nodes.shape[0])
