"""Disk meshes and SurfaceMesh validation: counts, coverage, orientation, hashes."""
import numpy as np
import pytest

from models.load_transfer.clipping import boundary_edges
from models.load_transfer.surfaces import SurfaceMesh, disk_mesh, disk_triangles_with_count


def _polygon_area(n, rho):
    return 0.5 * n * rho * rho * np.sin(2 * np.pi / n)


def _expected_counts(kind, n):
    """(elements, boundary vertices): 6n², 6n for triangles; 4m² + 8m(n−m), 8m (m = n//2) for quads."""
    if kind == "tri":
        return 6 * n * n, 6 * n
    m = n // 2
    return 4 * m * m + 8 * m * (n - m), 8 * m


@pytest.mark.parametrize("kind", ["tri", "quad"])
@pytest.mark.parametrize("n", [2, 3, 7])
def test_counts_area_and_boundary(kind, n):
    R = 0.4
    n_el, nb = _expected_counts(kind, n)
    for cover in ("circumscribe", "inscribe"):
        m = disk_mesh(radius=R, resolution=n, kind=kind, cover=cover, rotation=0.3, center=(1.0, 2.0), z=0.5)
        assert m.kind == kind and m.elements.shape == (n_el, 3 if kind == "tri" else 4)
        assert np.unique(m.elements).size == m.nodes.shape[0]  # no orphan or duplicate nodes
        a, b = boundary_edges(m.elements)
        assert a.size == nb
        rb = np.hypot(*(m.nodes[a, :2] - m.axis_origin).T)
        rho = R / np.cos(np.pi / nb) if cover == "circumscribe" else R
        np.testing.assert_allclose(rb, rho, rtol=1e-14)
        # the elements tile the boundary polygon exactly (no overlap, no gap)
        assert m.area() == pytest.approx(_polygon_area(nb, rho), rel=1e-13)
        # every boundary edge is tangent to (circumscribe) or a chord of (inscribe) the circle
        mid = 0.5 * (m.nodes[a, :2] + m.nodes[b, :2]) - m.axis_origin
        dist = np.hypot(*mid.T)
        if cover == "circumscribe":
            np.testing.assert_allclose(dist, R, rtol=1e-14)
        else:
            assert np.all(dist < R)
        np.testing.assert_array_equal(m.nodes[:, 2], 0.5)


@pytest.mark.parametrize("kind", ["tri", "quad"])
def test_elements_are_convex_and_ccw_seen_from_the_outward_normal(kind):
    for outward, sign in (("+z", 1.0), ("-z", -1.0)):
        m = disk_mesh(radius=1.0, resolution=6, kind=kind, outward=outward)
        np.testing.assert_array_equal(m.normal, [0.0, 0.0, sign])
        x = m.nodes[m.elements][:, :, :2]
        e = np.roll(x, -1, axis=1) - x
        turn = e[..., 0] * np.roll(e, -1, axis=1)[..., 1] - e[..., 1] * np.roll(e, -1, axis=1)[..., 0]
        assert np.all(sign * turn > 0.0)  # strictly convex, ccw about the outward normal
        assert np.all(m.element_areas(signed=True) > 0.0)
    # interior angles stay well inside (0°, 180°) also for fine meshes
    m = disk_mesh(radius=1.0, resolution=40, kind=kind)
    x = m.nodes[m.elements][:, :, :2]
    e = np.roll(x, -1, axis=1) - x
    ln = np.linalg.norm(e, axis=2)
    cosang = -(e * np.roll(e, -1, axis=1)).sum(axis=-1) / (ln * np.roll(ln, -1, axis=1))
    ang = np.degrees(np.arccos(np.clip(cosang, -1.0, 1.0)))
    assert ang.min() > 25.0 and ang.max() < 136.0


def test_rotation_rotates_the_nodes_about_the_centre():
    a = disk_mesh(radius=1.0, resolution=3, center=(0.5, -0.5))
    b = disk_mesh(radius=1.0, resolution=3, center=(0.5, -0.5), rotation=0.4)
    c, s = np.cos(0.4), np.sin(0.4)
    p = a.nodes[:, :2] - (0.5, -0.5)
    q = np.column_stack([c * p[:, 0] - s * p[:, 1], s * p[:, 0] + c * p[:, 1]]) + (0.5, -0.5)
    np.testing.assert_allclose(b.nodes[:, :2], q, atol=1e-15)
    assert a.sha256() != b.sha256() and a.sha256() == disk_mesh(radius=1.0, resolution=3, center=(0.5, -0.5)).sha256()


def test_benchmark_mesh_size():
    m = disk_triangles_with_count(20_000, 2.0)
    assert abs(m.elements.shape[0] - 20_000) / 20_000 < 0.02


def test_surface_mesh_validation():
    m = disk_mesh(radius=1.0, resolution=2)
    with pytest.raises(ValueError, match="elements"):  # clockwise for +z
        SurfaceMesh(nodes=m.nodes, elements=m.elements[:, ::-1], normal=m.normal, axis_origin=(0.0, 0.0))
    with pytest.raises(ValueError, match="normal"):
        SurfaceMesh(nodes=m.nodes, elements=m.elements, normal=[0.0, 0.0, 2.0], axis_origin=(0.0, 0.0))
    with pytest.raises(ValueError, match="elements"):
        SurfaceMesh(nodes=m.nodes, elements=m.elements + 1000, normal=m.normal, axis_origin=(0.0, 0.0))
    with pytest.raises(ValueError, match="nodes"):
        bent = m.nodes.copy()
        bent[0, 2] = 0.1
        SurfaceMesh(nodes=bent, elements=m.elements, normal=m.normal, axis_origin=(0.0, 0.0))
    with pytest.raises(ValueError, match="axis_origin"):
        SurfaceMesh(nodes=m.nodes, elements=m.elements, normal=m.normal, axis_origin=(0.0,))
    with pytest.raises(ValueError, match="resolution"):
        disk_mesh(radius=1.0, resolution=1, kind="quad")
    with pytest.raises(ValueError, match="cover"):
        disk_mesh(radius=1.0, resolution=2, cover="outside")
    with pytest.raises(ValueError, match="outward"):
        disk_mesh(radius=1.0, resolution=2, outward="x")


@pytest.mark.slow
def test_assembly_measurement_runs_and_conserves():
    """The assembly measurement (reduced size unless HARNESS_FULL=1); reports, never times."""
    import os

    from models.load_transfer.benchmark import measure_assembly

    full = os.environ.get("HARNESS_FULL") == "1"
    res = measure_assembly(200_000 if full else 6_000, 1_000 if full else 100)
    assert res["max_column_error"] < 1e-12
    assert res["n_pieces"] >= res["n_triangles"] and res["pieces_per_second"] > 0.0
