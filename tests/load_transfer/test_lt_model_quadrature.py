"""Quadrilateral operator and shear matrices: convergence of the polar Gauss quadrature."""
import numpy as np
import pytest

from models.load_transfer.operator import ConservativePressureOperator
from models.load_transfer.quadrature import bilinear_shape, polar_points
from models.load_transfer.surfaces import SurfaceMesh, disk_mesh


def _first_moment_error(op):
    """max_i |Σ_a M_ai x_a − ∫ χ_i x dA| / A_i (isoparametric: Σ_a N_a x_a = x exactly).

    The reference ∫ χ_i x dA is the exact Green moment of the clipped pieces.
    """
    xy = op.surface.nodes[:, :2] - op.surface.axis_origin
    mom = op._piece_mom + op._piece_area[:, None] * op._origin[op._piece_elem]
    nr = op.radial_edges.size - 1
    ref = np.stack([np.bincount(op._piece_ring, weights=mom[:, j], minlength=nr) for j in range(2)], axis=1)
    got = np.stack([op.matrix.T @ xy[:, 0], op.matrix.T @ xy[:, 1]], axis=1)
    return float((np.abs(got - ref).max(axis=1) / op.ring_areas).max())


def _skewed_quads():
    """A distorted (non-parallelogram) quad mesh of [-1, 1]^2 around an offset axis."""
    n = 7
    s = np.linspace(-1.0, 1.0, n + 1)
    X, Y = np.meshgrid(s, s, indexing="xy")
    X = X + 0.08 * np.sin(3.0 * Y) * (1 - X**2)
    Y = Y + 0.06 * np.cos(2.0 * X) * (1 - Y**2)
    nodes = np.column_stack([X.ravel(), Y.ravel(), np.zeros(X.size)])
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="xy")
    n0 = (j * (n + 1) + i).ravel()
    els = np.column_stack([n0, n0 + 1, n0 + n + 2, n0 + n + 1])
    return SurfaceMesh(nodes=nodes, elements=els, normal=[0.0, 0.0, 1.0], axis_origin=(0.13, -0.07))


@pytest.mark.parametrize("mesh_name", ["ogrid", "skewed"])
def test_quad_split_converges_with_quadrature_order(mesh_name):
    mesh = disk_mesh(radius=1.0, resolution=5, kind="quad", rotation=0.2) if mesh_name == "ogrid" else _skewed_quads()
    edges = np.linspace(0.0, 0.8, 9)
    orders = [1, 2, 3, 4, 6, 12]
    errs, mats = [], []
    for q in orders:
        op = ConservativePressureOperator(mesh, edges, quadrature_order=q)
        # renormalisation: the column sums are exact at every order
        np.testing.assert_allclose(np.asarray(op.matrix.sum(axis=0)).ravel(), op.covered_areas, rtol=0,
                                   atol=1e-12 * op.ring_areas.max())
        errs.append(_first_moment_error(op))
        mats.append(op.matrix.toarray())
    ref = ConservativePressureOperator(mesh, edges, quadrature_order=16).matrix.toarray()
    diffs = [np.abs(m - ref).max() / np.abs(ref).max() for m in mats]
    # exponential convergence: monotone decrease to round-off
    assert all(b < a for a, b in zip(diffs[:4], diffs[1:5])), diffs
    assert all(b < a for a, b in zip(errs[:4], errs[1:5])), errs
    assert diffs[0] > 1e-3 and errs[0] > 1e-8  # order 1 is visibly wrong: the test can fail
    assert diffs[-1] < 1e-13 and errs[-1] < 1e-13


def test_bilinear_inverse_map_reproduces_points():
    mesh = _skewed_quads()
    V = mesh.nodes[:, :2][mesh.elements] - mesh.axis_origin
    rng = np.random.default_rng(5)
    xi, eta = rng.uniform(-1, 1, (2, V.shape[0]))
    sx, sy = np.array([-1.0, 1.0, 1.0, -1.0]), np.array([-1.0, -1.0, 1.0, 1.0])
    N_true = 0.25 * (1 + sx * xi[:, None]) * (1 + sy * eta[:, None])
    x = np.einsum("na,naj->nj", N_true, V)
    N, res = bilinear_shape(V, x)
    assert res < 1e-14
    np.testing.assert_allclose(N, N_true, atol=1e-13)


def test_polar_points_integrate_area_and_moments():
    # a triangle not containing the axis and one containing it, annulus [0.2, 0.7]
    V = np.array([[[0.31, 0.05], [0.92, 0.22], [0.40, 0.81]], [[-0.4, -0.3], [0.5, -0.2], [0.1, 0.6]]])
    from models.load_transfer.clipping import convex_disk_moments

    O = V.mean(axis=1)
    a_hi, m_hi = convex_disk_moments(V, np.array([0.7, 0.7]), O)
    a_lo, m_lo = convex_disk_moments(V, np.array([0.2, 0.2]), O)
    piece, x, u, w = polar_points(V, np.array([0.2, 0.2]), np.array([0.7, 0.7]), 14)
    area = np.bincount(piece, weights=w, minlength=2)
    np.testing.assert_allclose(area, a_hi - a_lo, rtol=1e-13)
    for j in range(2):
        mom = np.bincount(piece, weights=w * (x[:, j] - O[piece, j]), minlength=2)
        np.testing.assert_allclose(mom, (m_hi - m_lo)[:, j], rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.hypot(*u.T), 1.0, rtol=1e-15)


@pytest.mark.parametrize("kind", ["tri", "quad"])
def test_shear_matrices_reproduce_the_radial_moment(kind):
    """Σ_a (M^x_ai x_a + M^y_ai y_a) = ∫ χ_i (x² + y²)/r dA = 2π (r_{i+1}³ − r_i³)/3 on a covered disk."""
    mesh = disk_mesh(radius=1.0, resolution=6, kind=kind, rotation=0.2, center=(0.1, 0.3))
    edges = np.linspace(0.0, 1.0, 9)
    op = ConservativePressureOperator(mesh, edges)
    xy = mesh.nodes[:, :2] - mesh.axis_origin
    ref = 2.0 * np.pi / 3.0 * (edges[1:] ** 3 - edges[:-1] ** 3)
    errs = []
    for q in (2, 4, 6, 8, 12):
        mx, my = op.shear_matrices(q)
        errs.append(np.abs((mx.T @ xy[:, 0] + my.T @ xy[:, 1]) / ref - 1.0).max())
    # a mesh symmetric about its axis: the shear forces of a uniform τ cancel (converged order)
    assert abs(mx.sum()) < 1e-13 and abs(my.sum()) < 1e-13
    assert all(b < a for a, b in zip(errs[:-1], errs[1:])), errs
    assert errs[0] > 1e-4 and errs[-1] < 1e-13, errs


def test_shear_forces_point_away_from_the_axis_and_vanish_on_it():
    mesh = disk_mesh(radius=1.0, resolution=5, kind="tri")
    op = ConservativePressureOperator(mesh, np.linspace(0.0, 1.0, 6))
    f = op.shear_forces(np.full(5, 2.0))  # τ > 0: outward
    assert f.shape == (mesh.nodes.shape[0], 3) and np.all(np.isfinite(f))
    xy = mesh.nodes[:, :2]
    r = np.hypot(*xy.T)
    centre = r == 0.0
    # the centre node's shear force cancels by symmetry (null limit, no 1/r)
    assert np.abs(f[centre, :2]).max() < 1e-14
    radial = np.einsum("nj,nj->n", f[~centre, :2], xy[~centre] / r[~centre, None])
    assert np.all(radial > 0.0)
    np.testing.assert_array_equal(f[:, 2], 0.0)
    # a sliding wall (τ = 0) has no shear force
    assert np.all(op.shear_forces(np.zeros(5)) == 0.0)
