"""ConservativePressureOperator: closed forms, exact Green moments, conservation, refusal.

The brute-force reference (vertical slicing with adaptive quadrature, bottom of this file)
shares no code with models.load_transfer.
"""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import integrate

from models.load_transfer.clipping import convex_disk_moments, outline_disk_areas, boundary_edges
from models.load_transfer.operator import (
    ConservativePressureOperator,
    GeometryError,
    centroid_sampling_forces,
)
from models.load_transfer.sources import analytic_ring_history, exact_force
from models.load_transfer.surfaces import SurfaceMesh, disk_mesh

TOL = 1e-12
pytestmark = pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")


def _op(mesh, edges, **kw):
    return ConservativePressureOperator(mesh, edges, **kw)


@pytest.mark.parametrize("kind", ["tri", "quad"])
@pytest.mark.parametrize("resolution", [2, 5, 11])
def test_uniform_and_parabolic_closed_forms(kind, resolution):
    R, p0 = 0.75, 2.0e5
    mesh = disk_mesh(radius=R, resolution=resolution, kind=kind)
    for profile, n_rings in (("uniform", 7), ("parabolic", 23)):
        h = analytic_ring_history(r_max=R, n_rings=n_rings, profile=profile, p0=p0)
        op = _op(mesh, h.radial_edges)
        assert op.covers_disk
        F_exact = p0 * np.pi * R**2 if profile == "uniform" else np.pi * p0 * R**2 / 2
        assert exact_force(profile, p0, R) == pytest.approx(F_exact, rel=1e-15)
        F_M = op.normal_force(h.pressure)
        np.testing.assert_allclose(F_M, F_exact, rtol=TOL)
        np.testing.assert_allclose(op.reference_force(h.pressure), F_exact, rtol=TOL)
        # column sums are the exact ring areas
        np.testing.assert_allclose(np.asarray(op.matrix.sum(axis=0)).ravel(), h.ring_areas(), rtol=TOL)
        np.testing.assert_allclose(op.ring_areas, h.ring_areas(), rtol=1e-15)
        assert np.all(op.matrix.data > 0.0) if kind == "tri" else True


def test_vectorised_stepping_and_shapes():
    mesh = disk_mesh(radius=1.0, resolution=4)
    op = _op(mesh, np.linspace(0.0, 1.0, 6))
    p = np.random.default_rng(3).uniform(0.0, 1.0, (9, 5))
    f = op.nodal_forces(p)
    assert f.shape == (9, mesh.nodes.shape[0], 3)
    np.testing.assert_allclose(op.nodal_forces(p[4]), f[4], rtol=0, atol=1e-15)
    np.testing.assert_allclose(op.normal_force(p), op.reference_force(p), rtol=TOL)
    with pytest.raises(ValueError, match="p_bar"):
        op.nodal_forces(np.ones(4))


@pytest.mark.parametrize("kind", ["tri", "quad"])
def test_azimuthal_rotation_invariance(kind):
    h = analytic_ring_history(r_max=1.0, n_rings=13, profile="parabolic", p0=1.0)
    forces = []
    for rot in (0.0, 0.3, 1.1, np.pi / 7):
        op = _op(disk_mesh(radius=1.0, resolution=6, kind=kind, rotation=rot), h.radial_edges)
        forces.append(op.normal_force(h.pressure[0]))
    np.testing.assert_allclose(forces, np.pi / 2, rtol=TOL)
    # the nodal loads rotate with the mesh: sorted magnitudes are the same
    a = _op(disk_mesh(radius=1.0, resolution=6, kind=kind), h.radial_edges).nodal_pressure_loads(h.pressure[0])
    b = _op(disk_mesh(radius=1.0, resolution=6, kind=kind, rotation=0.3), h.radial_edges).nodal_pressure_loads(h.pressure[0])
    np.testing.assert_allclose(np.sort(a), np.sort(b), rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("kind", ["tri", "quad"])
def test_offset_axis_origin_is_a_translation(kind):
    edges = np.linspace(0.0, 0.5, 9)
    q = 14  # quads: quadrature converged to round-off, so only geometry can differ
    base = _op(disk_mesh(radius=0.5, resolution=5, kind=kind), edges, quadrature_order=q)
    moved = _op(disk_mesh(radius=0.5, resolution=5, kind=kind, center=(3.7, -12.25), z=4.0), edges, quadrature_order=q)
    assert moved.covers_disk
    np.testing.assert_allclose(moved.matrix.toarray(), base.matrix.toarray(), rtol=0, atol=1e-14 * 0.25)
    h = analytic_ring_history(r_max=0.5, n_rings=8, profile="parabolic", p0=7.0)
    assert moved.normal_force(h.pressure[0]) == pytest.approx(np.pi * 7.0 * 0.25 / 2, rel=TOL)


def test_axis_offset_from_the_mesh_centre():
    # the load axis is not the mesh centre: the disk of radius 0.3 about (0.2, -0.1) is still covered
    mesh = disk_mesh(radius=1.0, resolution=9)
    shifted = SurfaceMesh(nodes=mesh.nodes, elements=mesh.elements, normal=mesh.normal, axis_origin=(0.2, -0.1))
    h = analytic_ring_history(r_max=0.3, n_rings=11, profile="parabolic", p0=1.0)
    op = _op(shifted, h.radial_edges)
    assert op.covers_disk
    assert op.normal_force(h.pressure[0]) == pytest.approx(np.pi * 0.09 / 2, rel=TOL)


def _inscribed_polygon_disk_area(n_sides, rho, r):
    """Closed form: area of a regular n-gon with circumradius rho ∩ disk(r), same centre."""
    h = rho * np.cos(np.pi / n_sides)
    if r <= h:
        return np.pi * r * r
    if r >= rho:
        return 0.5 * n_sides * rho * rho * np.sin(2 * np.pi / n_sides)
    alpha = 2.0 * np.arccos(h / r)
    return np.pi * r * r - n_sides * 0.5 * r * r * (alpha - np.sin(alpha))


@pytest.mark.parametrize("kind, sides", [("tri", 6 * 6), ("quad", 8 * 3)])
def test_partial_surface_conserves_on_the_common_area(kind, sides):
    R_surf, R_map = 0.6, 1.0
    mesh = disk_mesh(radius=R_surf, resolution=6, kind=kind, cover="inscribe", rotation=0.17)
    h = analytic_ring_history(r_max=R_map, n_rings=15, profile="parabolic", p0=3.0)
    op = _op(mesh, h.radial_edges)
    assert not op.covers_disk
    circ = np.array([_inscribed_polygon_disk_area(sides, R_surf, r) for r in h.radial_edges])
    common = np.diff(circ)
    np.testing.assert_allclose(op.covered_areas, common, rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.asarray(op.matrix.sum(axis=0)).ravel(), common, rtol=0, atol=1e-13)
    assert op.covered_areas.sum() == pytest.approx(mesh.area(), rel=1e-13)
    F_M, F_B = op.normal_force(h.pressure[0]), op.reference_force(h.pressure[0])
    assert F_M == pytest.approx(F_B, rel=TOL)
    assert F_B == pytest.approx(h.pressure[0] @ common, rel=TOL)
    # rings entirely beyond the surface carry nothing
    beyond = h.radial_edges[:-1] >= R_surf
    np.testing.assert_allclose(np.asarray(op.matrix.sum(axis=0)).ravel()[beyond], 0.0, rtol=0, atol=1e-15)


def test_exterior_zero_beyond_the_last_edge():
    # the surface is larger than the map: nothing is extrapolated beyond r_max
    mesh = disk_mesh(radius=1.0, resolution=10)
    h = analytic_ring_history(r_max=0.45, n_rings=9, profile="uniform", p0=5.0)
    op = _op(mesh, h.radial_edges)
    assert op.covers_disk
    g = op.nodal_pressure_loads(h.pressure[0])
    assert g.sum() == pytest.approx(5.0 * np.pi * 0.45**2, rel=TOL)
    xy = mesh.nodes[:, :2]
    r_el_min = op._r_min  # distance of every element from the axis
    outside_el = r_el_min >= 0.45
    only_outside = np.ones(len(xy), dtype=bool)
    np.logical_and.at(only_outside, mesh.elements.ravel(), np.repeat(outside_el, 3))
    assert only_outside.sum() > 100
    assert np.all(g[only_outside] == 0.0)


@pytest.mark.parametrize("kind", ["tri", "quad"])
@pytest.mark.parametrize("outward", ["+z", "-z"])
def test_sign_positive_pressure_pushes_against_the_outward_normal(kind, outward):
    mesh = disk_mesh(radius=1.0, resolution=4, kind=kind, outward=outward, z=-2.0)
    n = mesh.normal
    assert n[2] == (1.0 if outward == "+z" else -1.0)
    op = _op(mesh, np.linspace(0.0, 1.0, 5))
    f = op.nodal_forces(np.full(4, 3.0))
    fn = f @ n
    assert np.all(fn < 0.0)
    np.testing.assert_allclose(f[:, :2], 0.0, atol=0)
    assert np.all(np.sign(f[:, 2]) == -n[2])
    assert op.normal_force(np.full(4, 3.0)) == pytest.approx(3.0 * np.pi, rel=TOL)
    # suction (negative gauge pressure) pulls along the normal
    assert np.all(op.nodal_forces(np.full(4, -1.0)) @ n > 0.0)


@pytest.mark.parametrize("kind", ["tri", "quad"])
def test_axis_node_and_edge_through_the_axis_have_no_nan(kind):
    mesh = disk_mesh(radius=1.0, resolution=4, kind=kind)
    r_nodes = np.hypot(*mesh.nodes[:, :2].T)
    assert np.any(r_nodes == 0.0)  # a node sits on the axis, edges run through it
    edges = np.array([0.0, 1e-9, 0.01, 0.3, 1.0])
    op = _op(mesh, edges)
    mx, my = op.shear_matrices()
    for m in (op.matrix, mx, my):
        assert np.all(np.isfinite(m.data))
    assert op.normal_force(np.ones(4)) == pytest.approx(np.pi, rel=TOL)
    # the axis on the interior of an (interior) edge from the centre node
    c = int(np.flatnonzero(r_nodes == 0.0)[0])
    el = mesh.elements[np.any(mesh.elements == c, axis=1)][0]
    k = int(np.flatnonzero(el == c)[0])
    mid = 0.5 * (mesh.nodes[c, :2] + mesh.nodes[el[(k + 1) % len(el)], :2])
    shifted = SurfaceMesh(nodes=mesh.nodes, elements=mesh.elements, normal=mesh.normal, axis_origin=mid)
    r = 0.2
    op2 = _op(shifted, np.array([0.0, 1e-3, 0.05, r]))
    assert op2.covers_disk
    assert np.all(np.isfinite(op2.matrix.data))
    assert all(np.all(np.isfinite(m.data)) for m in op2.shear_matrices())
    assert op2.normal_force(np.ones(3)) == pytest.approx(np.pi * r * r, rel=TOL)


def test_refuses_a_corrupted_matrix():
    mesh = disk_mesh(radius=1.0, resolution=5)
    op = _op(mesh, np.linspace(0.0, 1.0, 6))
    bad = op.matrix.tolil()
    col = op.matrix[:, 2].toarray().ravel()
    j = int(np.argmax(col))
    bad[j, 2] = col[j] * (1.0 + 1e-9)
    with pytest.raises(GeometryError, match=r"ring 2: sum_a M_ai = .* but A_i = .*relative error"):
        op.verify_matrix(bad.tocsr())
    assert issubclass(GeometryError, ValueError)
    op.verify_matrix(op.matrix)  # the genuine matrix passes


def test_refuses_an_overlapping_surface():
    # an interior element duplicated: the outline still covers the disk but the columns over-count
    mesh = disk_mesh(radius=1.0, resolution=5)
    els = np.vstack([mesh.elements, mesh.elements[40:41]])
    dup = SurfaceMesh(nodes=mesh.nodes, elements=els, normal=mesh.normal, axis_origin=mesh.axis_origin)
    with pytest.raises(GeometryError, match="ring"):
        _op(dup, np.linspace(0.0, 1.0, 6))


def test_centroid_sampling_is_not_the_conservative_operator():
    mesh = disk_mesh(radius=1.0, resolution=5)
    h = analytic_ring_history(r_max=1.0, n_rings=12, profile="parabolic", p0=1.0)
    g_c = centroid_sampling_forces(mesh, h.radial_edges, h.pressure[0])
    op = _op(mesh, h.radial_edges)
    err_centroid = abs(g_c.sum() - np.pi / 2) / (np.pi / 2)
    err_operator = abs(op.normal_force(h.pressure[0]) - np.pi / 2) / (np.pi / 2)
    assert err_operator < TOL < 1e-4 < err_centroid


def test_input_errors():
    mesh = disk_mesh(radius=1.0, resolution=3)
    with pytest.raises(ValueError, match="radial_edges"):
        _op(mesh, [0.0, 0.5, 0.5])
    with pytest.raises(ValueError, match="radial_edges"):
        _op(mesh, [-1.0, 0.5])
    with pytest.raises(ValueError, match="quadrature_order"):
        _op(mesh, [0.0, 0.5], quadrature_order=0)
    dart = SurfaceMesh(nodes=[[0, 0, 0], [1, 0, 0], [0.3, 0.3, 0], [0, 1, 0]], elements=[[0, 1, 2, 3]],
                       normal=[0.0, 0.0, 1.0], axis_origin=(0.0, 0.0))
    with pytest.raises(ValueError, match="convex"):
        _op(dart, [0.0, 0.5])
    tilted = SurfaceMesh(nodes=mesh.nodes[:, [0, 2, 1]], elements=mesh.elements[:, ::-1], normal=[0.0, 1.0, 0.0], axis_origin=(0.0, 0.0))
    with pytest.raises(ValueError, match="normal"):
        _op(tilted, [0.0, 0.5])


# ----------------------------------------------------------------------------- Green moments

ELEMENTS = [
    np.array([[0.31, 0.05], [0.92, 0.22], [0.40, 0.81]]),            # axis outside
    np.array([[-0.4, -0.3], [0.5, -0.2], [0.1, 0.6]]),               # axis inside
    np.array([[0.0, 0.0], [0.7, 0.1], [0.2, 0.5]]),                  # vertex on the axis
    np.array([[-0.5, 0.0], [0.5, 0.0], [0.0, 0.6]]),                 # axis on an edge
    np.array([[0.2, 0.1], [0.9, 0.15], [1.0, 0.8], [0.25, 0.7]]),     # quad, axis outside
    np.array([[-0.3, -0.4], [0.6, -0.3], [0.5, 0.5], [-0.4, 0.3]]),   # quad, axis inside
]
RADII = [0.05, 0.25, 0.45, 0.6, 0.8, 1.1, 1.5]


@pytest.mark.parametrize("k", range(len(ELEMENTS)))
def test_green_moments_match_brute_force(k):
    V = ELEMENTS[k]
    P = len(RADII)
    origin = np.repeat(V.mean(axis=0)[None], P, axis=0)
    area, mom = convex_disk_moments(np.repeat(V[None], P, axis=0), np.array(RADII), origin)
    scale = 0.5 * abs(np.cross(V[1] - V[0], V[-1] - V[0]))
    for j, r in enumerate(RADII):
        ref = annulus_moments(V, 0.0, r)
        assert area[j] == pytest.approx(ref[0], abs=1e-13 * scale)
        np.testing.assert_allclose(mom[j] + area[j] * origin[j], ref[1:], rtol=0, atol=1e-13 * scale)


def test_triangle_matrix_matches_brute_force_on_a_single_element():
    V = ELEMENTS[1]
    nodes = np.column_stack([V, np.zeros(3)])
    surf = SurfaceMesh(nodes=nodes, elements=np.array([[0, 1, 2]]), normal=[0.0, 0.0, 1.0], axis_origin=(0.0, 0.0))
    edges = np.array([0.0, 0.1, 0.33, 0.52, 0.7, 2.0])
    op = _op(surf, edges)
    assert not op.covers_disk
    M = op.matrix.toarray()
    # barycentric N_a = alpha_a + beta_a x + gamma_a y from the vertex matrix
    coef = np.linalg.inv(np.column_stack([np.ones(3), V]))  # rows: alpha, beta, gamma; columns: a
    for i in range(len(edges) - 1):
        mom = annulus_moments(V, edges[i], edges[i + 1])
        ref = coef.T @ mom
        np.testing.assert_allclose(M[:, i], ref, rtol=0, atol=1e-13)
    assert M.sum() == pytest.approx(0.5 * abs(np.cross(V[1] - V[0], V[2] - V[0])), rel=1e-14)


def test_outline_route_handles_holes_and_non_convex_outlines():
    # an L-shaped outline with a square hole, axis at the origin; compare with brute force
    outer = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 0.2], [0.1, 0.2], [0.1, 1.0], [-1.0, 1.0]])
    hole = np.array([[-0.6, -0.6], [-0.6, -0.2], [-0.2, -0.2], [-0.2, -0.6]])  # clockwise
    A = np.vstack([outer, hole])
    B = np.vstack([np.roll(outer, -1, axis=0), np.roll(hole, -1, axis=0)])
    radii = np.array([0.0, 0.15, 0.5, 0.7, 1.0, 1.3, 2.0])
    got = outline_disk_areas(A, B, radii)
    convex_parts = [  # the region as convex pieces for the brute force
        np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, -0.6], [-1.0, -0.6]]),
        np.array([[-1.0, -0.6], [-0.6, -0.6], [-0.6, -0.2], [-1.0, -0.2]]),
        np.array([[-0.2, -0.6], [1.0, -0.6], [1.0, -0.2], [-0.2, -0.2]]),
        np.array([[-1.0, -0.2], [1.0, -0.2], [1.0, 0.2], [-1.0, 0.2]]),
        np.array([[-1.0, 0.2], [0.1, 0.2], [0.1, 1.0], [-1.0, 1.0]]),
    ]
    for r, g in zip(radii, got):
        ref = sum(annulus_moments(p, 0.0, r)[0] for p in convex_parts) if r > 0 else 0.0
        assert g == pytest.approx(ref, abs=1e-13)


# ----------------------------------------------------------------------------- brute force

def _y_interval(V, x):
    lo, hi = np.inf, -np.inf
    n = len(V)
    for k in range(n):
        (x0, y0), (x1, y1) = V[k], V[(k + 1) % n]
        if min(x0, x1) <= x <= max(x0, x1):
            ys = (y0, y1) if x1 == x0 else (y0 + (x - x0) * (y1 - y0) / (x1 - x0),)
            lo, hi = min(lo, *ys), max(hi, *ys)
    return lo, hi


def _slice(V, x, r_lo, r_hi, f):
    """∫ f(x, y) dy over the slice of polygon ∩ annulus at x, f in {1, x, y} (closed forms)."""
    lo, hi = _y_interval(V, x)
    if not lo < hi:
        return 0.0
    yo = np.sqrt(max(r_hi * r_hi - x * x, 0.0))
    yi = np.sqrt(max(r_lo * r_lo - x * x, 0.0))
    parts = [(-yo, -yi), (yi, yo)] if abs(x) < r_lo else [(-yo, yo)]
    tot = 0.0
    for a, b in parts:
        a, b = max(a, lo), min(b, hi)
        if b > a:
            tot += {"1": b - a, "x": x * (b - a), "y": 0.5 * (b * b - a * a)}[f]
    return tot


def annulus_moments(V, r_lo, r_hi):
    """(∫1, ∫x, ∫y) over the convex polygon V ∩ {r_lo <= |x| <= r_hi} (axis at the origin).

    Vertical slicing: exact y integrals, adaptive x quadrature with break points at the
    vertices and at ±r_lo, ±r_hi.
    """
    V = [tuple(map(float, v)) for v in V]
    xs = [v[0] for v in V]
    a, b = min(xs), max(xs)
    cand = xs + [-r_hi, -r_lo, r_lo, r_hi]
    for k in range(len(V)):  # x of every edge–circle crossing: kinks of the slice integrand
        (x0, y0), (x1, y1) = V[k], V[(k + 1) % len(V)]
        dx, dy = x1 - x0, y1 - y0
        for r in (r_lo, r_hi):
            qa, qb, qc = dx * dx + dy * dy, 2 * (x0 * dx + y0 * dy), x0 * x0 + y0 * y0 - r * r
            disc = qb * qb - 4 * qa * qc
            if r > 0 and disc > 0:
                cand += [x0 + dx * (-qb + sg * np.sqrt(disc)) / (2 * qa) for sg in (-1.0, 1.0)]
    pts = sorted({p for p in cand if a < p < b})
    out = []
    for f in ("1", "x", "y"):
        val, _ = integrate.quad(lambda x: _slice(V, x, r_lo, r_hi, f), a, b, points=pts or None,
                                limit=400, epsabs=1e-16, epsrel=1e-13)
        out.append(val)
    return np.array(out)
