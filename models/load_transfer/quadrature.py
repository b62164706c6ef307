"""Polar Gauss quadrature over (convex polygon ∩ annulus) about the load axis.

For a convex polygon and an annulus [r_lo, r_hi] centred on the axis, every ray from the axis
meets the region in one interval [max(ρ_in, r_lo), min(ρ_out, r_hi)]. Between the angular break
points (the polygon vertices and the edge–circle intersections with r_lo and r_hi) the limits
are smooth, so Gauss–Legendre of order q in θ and in ρ converges exponentially. The Jacobian
ρ dρ dθ vanishes at the axis, so integrands like N_a (x − x_c)/r = N_a cos θ never see 1/r.
"""
from __future__ import annotations

import numpy as np

from .clipping import TWO_PI, cross2, _edge_circle


def _wrap(a: np.ndarray) -> np.ndarray:
    """Wrap angles to (−π, π]."""
    return np.pi - np.mod(np.pi - a, TWO_PI)


def _ray_interval(th, pi, nrm, c, r_lo, r_hi):
    """Radial limits [lo, hi] of the region along directions th (S, q) for sub-intervals of pieces pi."""
    u = np.stack([np.cos(th), np.sin(th)], axis=-1)  # (S, q, 2)
    nu = np.einsum("sqj,skj->sqk", u, nrm[pi])
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = c[pi][:, None, :] / nu
    upper = np.where(nu > 0.0, bound, np.inf).min(axis=2)
    lower = np.where(nu < 0.0, bound, -np.inf).max(axis=2)
    lo = np.maximum(np.maximum(lower, 0.0), r_lo[pi, None])
    hi = np.minimum(upper, r_hi[pi, None])
    return u, lo, hi


def _grade_towards_poles(pi, a, b, ref, d, nrm, c, r_lo, r_hi, max_passes=60):
    """Split angular sub-intervals so each is no wider than its distance to the nearest pole.

    An edge limit ρ = c / cos(θ − φ) has poles where the ray is parallel to the edge; an edge
    seen almost edge-on from the axis (elements near the axis) puts a pole close to the
    sub-interval end and slows Gauss convergence. Splitting at distance δ from the end nearest
    the pole (a geometric grading, one pass per halving) keeps every piece at width <= δ, so the
    Bernstein-ellipse ratio is >= 3 + √8 and order 8 reaches ~1e-12.
    """
    edge_dir = np.arctan2(d[..., 1], d[..., 0])  # (P, K): poles at edge_dir and edge_dir + π
    for _ in range(max_passes):
        th_m = (ref[pi] + 0.5 * (a + b))
        u = np.stack([np.cos(th_m), np.sin(th_m)], axis=-1)
        nu = np.einsum("sj,skj->sk", u, nrm[pi])
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = c[pi] / nu
        up = np.where(nu > 0.0, bound, np.inf)
        low = np.where(nu < 0.0, bound, -np.inf)
        k_up, k_low = up.argmin(axis=1), low.argmax(axis=1)
        rows = np.arange(pi.size)
        up_active = up[rows, k_up] < r_hi[pi]
        low_active = low[rows, k_low] > np.maximum(r_lo[pi], 0.0)
        A_abs, B_abs = ref[pi] + a, ref[pi] + b
        d_lo = np.full(pi.size, np.inf)
        d_hi = np.full(pi.size, np.inf)
        for k_e, act in ((k_up, up_active), (k_low, low_active)):
            base = edge_dir[pi, k_e]
            for pole in (base, base + np.pi):
                d_hi = np.where(act, np.minimum(d_hi, np.mod(pole - B_abs, TWO_PI)), d_hi)
                d_lo = np.where(act, np.minimum(d_lo, np.mod(A_abs - pole, TWO_PI)), d_lo)
        w = b - a
        split = np.minimum(d_lo, d_hi) < w
        if not np.any(split):
            break
        at = np.where(d_hi <= d_lo, b - d_hi, a + d_lo)
        at = np.where(split, np.clip(at, a + 1e-3 * w, b - 1e-3 * w), at)
        keep = ~split
        pi = np.concatenate([pi[keep], pi[split], pi[split]])
        a, b = np.concatenate([a[keep], a[split], at[split]]), np.concatenate([b[keep], at[split], b[split]])
    order = np.argsort(pi, kind="stable")
    return pi[order], a[order], b[order]


def polar_points(V: np.ndarray, r_lo: np.ndarray, r_hi: np.ndarray, order: int, order_rho=None):
    """Quadrature points of the regions V[p] ∩ {r_lo[p] <= r <= r_hi[p]}.

    V     : (P, K, 2) convex ccw polygons relative to the axis, m.
    r_lo, r_hi : (P,) annulus radii, m.
    order : Gauss–Legendre points in θ per angular sub-interval; ``order_rho`` (default
            ``order``) points in ρ (a polynomial integrand of degree k in ρ, including the
            Jacobian ρ, is exact with (k+1)//2 + 1 points).
    Returns (piece (N,), x (N, 2) m, u (N, 2) = (cos θ, sin θ), w (N,) m^2) such that
    Σ w f(x) ≈ ∫ f dA over each piece; points are grouped by piece in increasing order.
    """
    P, K, _ = V.shape
    order = int(order)
    if order < 1:
        raise ValueError(f"quadrature_order: must be >= 1, got {order}")
    order_rho = order if order_rho is None else int(order_rho)
    g, gw = np.polynomial.legendre.leggauss(order)
    gr, gwr = np.polynomial.legendre.leggauss(order_rho)
    A = V
    d = np.roll(V, -1, axis=1) - A
    cr_axis = cross2(A, d)
    strictly_in = np.all(cr_axis > 0.0, axis=1)
    centre = V.mean(axis=1)
    ref = np.where(strictly_in, 0.0, np.arctan2(centre[:, 1], centre[:, 0]))
    scale = np.sqrt(np.einsum("pkj,pkj->pk", V, V)).max(axis=1)
    # break points: vertices (except one sitting on the axis) and edge–circle intersections
    vert = np.arctan2(V[..., 1], V[..., 0])
    vert = np.where(np.hypot(V[..., 0], V[..., 1]) > 1e-14 * scale[:, None], vert, np.nan)
    brk = [vert]
    for r in (r_lo, r_hi):
        rr = np.broadcast_to(r[:, None], (P, K))
        t1, t2, cut = _edge_circle(A, d, rr)
        for t in (t1, t2):
            ok = cut & (t >= 0.0) & (t <= 1.0) & (rr > 0.0)
            p = A + t[..., None] * d
            brk.append(np.where(ok, np.arctan2(p[..., 1], p[..., 0]), np.nan))
    phi = np.concatenate(brk, axis=1) - ref[:, None]
    phi = np.where(strictly_in[:, None], np.mod(phi, TWO_PI), _wrap(phi))
    ends = np.where(strictly_in[:, None], np.array([[0.0, TWO_PI]]), np.nan)
    phi = np.sort(np.concatenate([phi, ends], axis=1), axis=1)  # NaN last
    a, b = phi[:, :-1], phi[:, 1:]
    good = np.isfinite(a) & np.isfinite(b) & (b > a)
    pi, si = np.nonzero(good)
    a, b = a[pi, si], b[pi, si]
    nrm_all = np.stack([d[..., 1], -d[..., 0]], axis=-1)  # outward normals (P, K, 2)
    c_all = np.einsum("pkj,pkj->pk", nrm_all, A)
    # drop sub-intervals where the region is empty (tested at the mid-angle: the limits are
    # smooth inside a sub-interval, so emptiness cannot change there)
    _, lo_m, hi_m = _ray_interval((ref[pi] + 0.5 * (a + b))[:, None], pi, nrm_all, c_all, r_lo, r_hi)
    live = (hi_m[:, 0] > lo_m[:, 0])
    pi, a, b = pi[live], a[live], b[live]
    pi, a, b = _grade_towards_poles(pi, a, b, ref, d, nrm_all, c_all, r_lo, r_hi)
    th = ref[pi, None] + 0.5 * (a + b)[:, None] + 0.5 * (b - a)[:, None] * g[None, :]  # (S, q)
    wth = 0.5 * (b - a)[:, None] * gw[None, :]
    u, lo, hi = _ray_interval(th, pi, nrm_all, c_all, r_lo, r_hi)
    length = np.maximum(hi - lo, 0.0)
    rho = lo[..., None] + 0.5 * length[..., None] * (1.0 + gr[None, None, :])  # (S, q, qr)
    w = wth[..., None] * (0.5 * length[..., None] * gwr[None, None, :]) * rho
    x = rho[..., None] * u[:, :, None, :]
    uu = np.broadcast_to(u[:, :, None, :], x.shape)
    piece = np.broadcast_to(pi[:, None, None], rho.shape)
    keep = (w > 0.0).ravel()
    return (piece.ravel()[keep], x.reshape(-1, 2)[keep], uu.reshape(-1, 2)[keep], w.ravel()[keep])


def bilinear_shape(V: np.ndarray, x: np.ndarray, iterations: int = 30, tol: float = 1e-14):
    """Bilinear shape functions of convex quads V (N, 4, 2) at points x (N, 2) (inverse map).

    Reference square [-1, 1]^2, nodes (−1,−1), (1,−1), (1,1), (−1,1) in element order; the map
    is x = c0 + c1 ξ + c2 η + c3 ξ η. Crossing with (c2 + c3 ξ) eliminates η and leaves the
    quadratic (c1×c3) ξ² + (c1×c2 − b×c3) ξ − b×c2 = 0 (b = x − c0), solved stably (root of
    smaller |ξ|); η follows by projection; Newton steps polish to round-off (at most
    ``iterations``). Returns N (N, 4) and the maximum residual relative to the element size.
    """
    v0, v1, v2, v3 = V[:, 0], V[:, 1], V[:, 2], V[:, 3]
    c1 = 0.25 * (-v0 + v1 + v2 - v3)
    c2 = 0.25 * (-v0 - v1 + v2 + v3)
    c3 = 0.25 * (v0 - v1 + v2 - v3)
    b = x - 0.25 * (v0 + v1 + v2 + v3)
    size = np.hypot(*(v2 - v0).T)
    qa = cross2(c1, c3)
    qb = cross2(c1, c2) - cross2(b, c3)
    qc = -cross2(b, c2)
    disc = np.maximum(qb * qb - 4.0 * qa * qc, 0.0)
    q = -0.5 * (qb + np.copysign(np.sqrt(disc), qb))
    with np.errstate(divide="ignore", invalid="ignore"):
        r1 = np.where(q != 0.0, qc / q, 0.0)
        r2 = np.where(qa != 0.0, q / qa, np.inf)
    xi = np.where(np.abs(r1) <= np.abs(r2), r1, r2)
    g = c2 + c3 * xi[:, None]
    eta = np.einsum("nj,nj->n", b - c1 * xi[:, None], g) / np.einsum("nj,nj->n", g, g)
    err = np.inf
    for _ in range(iterations):
        res = c1 * xi[:, None] + c2 * eta[:, None] + c3 * (xi * eta)[:, None] - b
        err = float(np.max(np.abs(res).max(axis=1) / size, initial=0.0))
        if err < tol:
            break
        jx = c1 + c3 * eta[:, None]
        je = c2 + c3 * xi[:, None]
        det = jx[:, 0] * je[:, 1] - jx[:, 1] * je[:, 0]
        xi = xi - (je[:, 1] * res[:, 0] - je[:, 0] * res[:, 1]) / det
        eta = eta - (-jx[:, 1] * res[:, 0] + jx[:, 0] * res[:, 1]) / det
    sx = np.array([-1.0, 1.0, 1.0, -1.0])
    sy = np.array([-1.0, -1.0, 1.0, 1.0])
    N = 0.25 * (1.0 + sx * xi[:, None]) * (1.0 + sy * eta[:, None])
    return N, err
