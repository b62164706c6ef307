"""Exact geometry of polygons clipped by disks centred on the load axis (Green's theorem).

All coordinates are 2-D and relative to the axis (the circles' common centre). The region
polygon ∩ disk(r) is bounded by straight pieces (the polygon edges inside the disk) and arcs
(the circle inside the polygon). Each arc is replaced by its chord plus the circular segment
between chord and arc, whose area r^2/2 (Δθ − sin Δθ) and first moment (2/3) r^3 sin^3(Δθ/2)
(along the arc bisector) are closed forms; the straight pieces and chords form a closed polygon
whose moments are the shoelace sums, evaluated about a local origin to avoid cancellation.
"""
from __future__ import annotations

import numpy as np

TWO_PI = 2.0 * np.pi


def cross2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """z-component of the cross product of 2-vectors (last axis)."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def x_minus_sin(x: np.ndarray) -> np.ndarray:
    """x − sin x without cancellation for small x (series below 0.1)."""
    x = np.asarray(x, dtype=np.float64)
    x2 = x * x
    series = x * x2 * (1.0 / 6.0 - x2 * (1.0 / 120.0 - x2 * (1.0 / 5040.0 - x2 * (1.0 / 362880.0 - x2 / 39916800.0))))
    return np.where(x < 0.1, series, x - np.sin(x))


def polygon_moments(V: np.ndarray, origin: np.ndarray):
    """Area and first moment about ``origin`` of convex/simple ccw polygons V (P, K, 2).

    Returns (area (P,), moment (P, 2)) with moment = ∫ (x − origin) dA.
    """
    a = V - origin[:, None, :]
    b = np.roll(a, -1, axis=1)
    cr = cross2(a, b)
    return 0.5 * cr.sum(axis=1), (cr[..., None] * (a + b)).sum(axis=1) / 6.0


def axis_distance_range(V: np.ndarray):
    """(r_min, r_max) of convex ccw polygons V (P, K, 2) from the axis (the origin).

    r_min is 0 when the axis is inside or on the polygon.
    """
    A = V
    d = np.roll(V, -1, axis=1) - A
    dd = np.einsum("pkj,pkj->pk", d, d)
    t = np.clip(-np.einsum("pkj,pkj->pk", A, d) / dd, 0.0, 1.0)
    foot = A + t[..., None] * d
    dist = np.sqrt(np.einsum("pkj,pkj->pk", foot, foot))
    inside = np.all(cross2(A, d) >= 0.0, axis=1)
    r_min = np.where(inside, 0.0, dist.min(axis=1))
    r_max = np.sqrt(np.einsum("pkj,pkj->pk", V, V)).max(axis=1)
    return r_min, r_max


def _line_circle(A: np.ndarray, d: np.ndarray, r: np.ndarray):
    """|d|², the square root of the discriminant of |A + t d| = r (0 where the line misses)
    and whether the line cuts the circle.

    The discriminant is formed as |d|² r² − (A × d)² (no cancellation away from tangency).
    """
    dd = np.einsum("...j,...j->...", d, d)
    cr = cross2(A, d)
    disc = dd * r * r - cr * cr
    cut = disc > 0.0
    return dd, np.sqrt(np.where(cut, disc, 0.0)), cut


def _edge_circle(A: np.ndarray, d: np.ndarray, r: np.ndarray):
    """Parameters t1 <= t2 of |A + t d| = r per edge, and whether the line cuts the circle."""
    dd, sq, cut = _line_circle(A, d, r)
    ad = np.einsum("...j,...j->...", A, d)
    return (-ad - sq) / dd, (-ad + sq) / dd, cut


def _edge_circle_points(A: np.ndarray, B: np.ndarray, r: np.ndarray):
    """Clipped edge piece inside the disk, with end points computed from the nearer vertex.

    Returns (nonempty, start_at_A, end_at_B, P0, P1, cut): the piece of edge A->B inside
    disk(r) runs from P0 to P1; P0 is exactly A when the piece starts at A, P1 exactly B when
    it ends at B. Each intersection is parametrised from the nearer end point, so the points
    keep full relative accuracy even for circles much smaller than the edge.
    """
    d = B - A
    dd, sq, cut = _line_circle(A, d, r)
    ad = np.einsum("...j,...j->...", A, d)
    bd = np.einsum("...j,...j->...", B, d)
    t1, t2 = (-ad - sq) / dd, (-ad + sq) / dd  # from A
    u1, u2 = (-bd - sq) / dd, (-bd + sq) / dd  # from B (u = t - 1)
    start_at_A = t1 <= 0.0
    end_at_B = u2 >= 0.0
    nonempty = cut & (t2 > 0.0) & (u1 < 0.0)
    dv = d[..., :]
    p_t1 = np.where((t1 < 0.5)[..., None], A + t1[..., None] * dv, B + u1[..., None] * dv)
    p_t2 = np.where((u2 > -0.5)[..., None], B + u2[..., None] * dv, A + t2[..., None] * dv)
    P0 = np.where(start_at_A[..., None], A, p_t1)
    P1 = np.where(end_at_B[..., None], B, p_t2)
    return nonempty, start_at_A, end_at_B, P0, P1, cut


def convex_disk_moments(V: np.ndarray, r: np.ndarray, origin: np.ndarray):
    """Exact area and first moment of (convex polygon ∩ disk(r)) for P polygon–circle pairs.

    V      : (P, K, 2) ccw polygon vertices relative to the axis, m.
    r      : (P,) circle radii, m (> 0).
    origin : (P, 2) origin of the returned moments (e.g. the element centroid), m.
    Returns (area (P,) m^2, moment (P, 2) m^3) with moment = ∫_{V∩D} (x − origin) dA.

    The boundary of V ∩ D is walked ccw: the straight piece of every edge inside the disk, and
    between the end E of one non-empty piece and the start S of the next non-empty piece, the arc
    of the circle from E ccw to S (unless the two pieces meet at a shared vertex inside the disk).
    Chords use exactly the piece end points, so the Green polygon is closed by construction.
    When E and S (nearly) coincide, whether the arc is ~0 or ~2π is decided by testing one
    circle point away from E against the polygon. No piece at all: the full circle counts iff
    the axis lies inside the polygon (tangency and containment are thus robust).
    The Green sums are taken about the axis when the circle is smaller than the polygon
    (the region then lies within r of the axis) and about ``origin`` otherwise, so that small
    regions keep full relative accuracy.
    """
    P, K, _ = V.shape
    A = V
    Bv = np.roll(V, -1, axis=1)
    d = Bv - A
    rr = r[:, None]
    size = np.sqrt(np.einsum("pkj,pkj->pk", d, d)).max(axis=1)
    G = np.where((r < size)[:, None], 0.0, origin)  # Green origin
    nonempty, start_at_A, end_at_B, p0, p1, _ = _edge_circle_points(A, Bv, rr)
    Og = G[:, None, :]
    a0 = np.where(nonempty[..., None], p0 - Og, 0.0)
    a1 = np.where(nonempty[..., None], p1 - Og, 0.0)
    cr = cross2(a0, a1)
    area = 0.5 * cr.sum(axis=1)
    mom = (cr[..., None] * (a0 + a1)).sum(axis=1) / 6.0
    # next non-empty piece (cyclic) for every edge
    k = np.arange(K)
    nxt = np.full((P, K), -1)
    for off in range(K, 0, -1):
        cand = (k + off) % K
        nxt = np.where(nonempty[:, cand], cand[None, :], nxt)
    has_next = nonempty & (nxt >= 0)
    m_idx = np.where(has_next, nxt, 0)
    starts_next = np.take_along_axis(start_at_A, m_idx, axis=1)
    adjacent = (m_idx == (k[None, :] + 1) % K) & end_at_B & starts_next
    arc = has_next & ~adjacent
    E = p1
    S = np.take_along_axis(p0, m_idx[..., None], axis=1)
    th_e = np.arctan2(E[..., 1], E[..., 0])
    th_s = np.arctan2(S[..., 1], S[..., 0])
    dth = np.mod(th_s - th_e, TWO_PI)
    amb = arc & ((dth < 1e-7) | (dth > TWO_PI - 1e-7))
    if np.any(amb):
        tp = th_e + 2.0
        q = rr[..., None] * np.stack([np.cos(tp), np.sin(tp)], axis=-1)  # (P, K, 2)
        rel = q[:, :, None, :] - A[:, None, :, :]
        long_arc = np.all(cross2(d[:, None, :, :], rel) >= 0.0, axis=2)
        fixed = np.where(long_arc, np.where(dth > np.pi, dth, dth + TWO_PI), np.where(dth < np.pi, dth, dth - TWO_PI))
        dth = np.where(amb, fixed, dth)
    dth = np.where(arc, dth, 0.0)
    mid = th_e + 0.5 * dth
    um = np.stack([np.cos(mid), np.sin(mid)], axis=-1)
    Se, Ee = np.where(arc[..., None], E - Og, 0.0), np.where(arc[..., None], S - Og, 0.0)
    crc = cross2(Se, Ee)
    seg = np.where(arc, 0.5 * rr * rr * x_minus_sin(dth), 0.0)
    seg_m = np.where(arc, (2.0 / 3.0) * rr ** 3 * np.sin(0.5 * dth) ** 3, 0.0)
    area += (0.5 * crc + seg).sum(axis=1)
    mom += (crc[..., None] * (Se + Ee)).sum(axis=1) / 6.0
    mom += (seg_m[..., None] * um).sum(axis=1) - seg.sum(axis=1)[:, None] * G
    # no piece at all: the circle is entirely inside (axis inside) or the disk misses the polygon
    axis_in = np.all(cross2(A, d) >= 0.0, axis=1)
    full = ~nonempty.any(axis=1) & axis_in & (np.einsum("pj,pj->p", A[:, 0], A[:, 0]) > r * r)
    circ = np.pi * r * r
    area = np.where(full, area + circ, area)
    mom = np.where(full[:, None], mom - circ[:, None] * G, mom)
    # moments about the requested origin
    mom = mom + area[:, None] * (G - origin)
    return area, mom


def _point_in_outline(q: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Even-odd test of points q (M, 2) against the closed edge set A->B (Nb, 2) (any loops)."""
    out = np.zeros(q.shape[0], dtype=bool)
    step = max(1, 2_000_000 // max(A.shape[0], 1))
    for s in range(0, q.shape[0], step):
        qq = q[s:s + step, None, :]
        ay, by = A[None, :, 1], B[None, :, 1]
        straddle = (ay > qq[..., 1]) != (by > qq[..., 1])
        with np.errstate(divide="ignore", invalid="ignore"):
            xc = A[None, :, 0] + (qq[..., 1] - ay) * (B[None, :, 0] - A[None, :, 0]) / (by - ay)
        out[s:s + step] = (np.count_nonzero(straddle & (xc > qq[..., 0]), axis=1) % 2) == 1
    return out


def outline_disk_areas(A: np.ndarray, B: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """Exact area of (region bounded by the oriented edges A->B) ∩ disk(r) for every r.

    A, B  : (Nb, 2) oriented boundary edges relative to the axis (region on the left; any
            number of loops, holes allowed, non-convex allowed), m.
    radii : (Nc,) circle radii, m (>= 0).
    Independent of the element-wise clipping: it uses only the outline of the surface. Arcs of
    the circle inside the region are found from the sorted edge–circle intersection angles and
    an even-odd inside test of three points of each arc (majority vote: one point may fall on a
    boundary point the intersection search missed); a circle that meets no edge is classified
    by a majority vote of three test points.
    """
    radii = np.asarray(radii, dtype=np.float64)
    lo, hi = np.minimum(A, B).min(axis=0), np.maximum(A, B).max(axis=0)
    centre, size = 0.5 * (lo + hi), float(np.hypot(*(hi - lo)))
    d = B - A
    out = np.zeros(radii.size)
    pos = radii > 0.0
    rc = radii[pos]
    if rc.size == 0:
        return out
    t1, t2, cut = _edge_circle(A[None], d[None], rc[:, None])  # (Nc, Nb)
    s0 = np.where(cut, np.clip(t1, 0.0, 1.0), 0.0)
    s1 = np.where(cut, np.clip(t2, 0.0, 1.0), 0.0)
    # Green origin per circle: the axis for circles smaller than the outline, else its centre
    G = np.where((rc < size)[:, None], 0.0, centre[None, :])  # (Nc, 2)
    p0 = A[None] + s0[..., None] * d[None] - G[:, None, :]
    p1 = A[None] + s1[..., None] * d[None] - G[:, None, :]
    area = 0.5 * cross2(p0, p1).sum(axis=1)
    ok1 = cut & (t1 >= 0.0) & (t1 <= 1.0)
    ok2 = cut & (t2 >= 0.0) & (t2 <= 1.0)
    ci, ei = np.nonzero(ok1)
    cj, ej = np.nonzero(ok2)
    circ_id = np.concatenate([ci, cj])
    pts = np.concatenate([A[ei] + t1[ci, ei, None] * d[ei], A[ej] + t2[cj, ej, None] * d[ej]])
    theta = np.arctan2(pts[:, 1], pts[:, 0])
    order = np.lexsort((theta, circ_id))
    circ_id, pts, theta = circ_id[order], pts[order], theta[order]
    counts = np.bincount(circ_id, minlength=rc.size)
    start = np.concatenate(([0], np.cumsum(counts)[:-1]))
    if circ_id.size:
        k = np.arange(circ_id.size)
        last = k == (start[circ_id] + counts[circ_id] - 1)
        nxt = np.where(last, start[circ_id], k + 1)
        dth = theta[nxt] - theta + np.where(last, TWO_PI, 0.0)
        r_arc = rc[circ_id]
        # majority of three points along each arc: robust when one of them falls on a
        # boundary point the intersection search missed (vertex on, or edge tangent to, the circle)
        votes = np.zeros(circ_id.size, dtype=np.int64)
        for frac in (0.5, 0.3183098861837907, 0.7236067977499790):
            ang = theta + frac * dth
            votes += _point_in_outline(r_arc[:, None] * np.column_stack([np.cos(ang), np.sin(ang)]), A, B)
        use = votes >= 2
        S, E = pts - G[circ_id], pts[nxt] - G[circ_id]
        contrib = np.where(use, 0.5 * cross2(S, E) + 0.5 * r_arc * r_arc * x_minus_sin(dth), 0.0)
        area += np.bincount(circ_id, weights=contrib, minlength=rc.size)
    none = counts == 0
    if np.any(none):
        rn = rc[none]
        votes = np.zeros(rn.size, dtype=np.int64)
        for ang in (0.3183098861837907, 2.459, 4.4721359549995796):
            q = rn[:, None] * np.array([np.cos(ang), np.sin(ang)])[None, :]
            votes += _point_in_outline(q, A, B)
        area[none] += np.where(votes >= 2, np.pi * rn * rn, 0.0)
    out[pos] = area
    return out


def boundary_edges(elements: np.ndarray):
    """Oriented boundary edges (used by exactly one element) of a consistently ccw mesh.

    Returns (start, end) node-index arrays.
    """
    K = elements.shape[1]
    a = elements.ravel()
    b = np.roll(elements, -1, axis=1).ravel()
    key = np.column_stack([np.minimum(a, b), np.maximum(a, b)])
    _, inv, cnt = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    single = cnt[inv.ravel()] == 1
    return a[single], b[single]
