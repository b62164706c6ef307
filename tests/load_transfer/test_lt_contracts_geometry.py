"""Quadrature table (pandera), quadtree wall extraction, debug map and shear: closed forms."""
from __future__ import annotations

import numpy as np
import pytest

from models.load_transfer.contracts.table import TableError, polar_quadrature_table, read_table, validate_table
from models.load_transfer.debug_map import map_axisymmetric_load, point_rings
from models.load_transfer.extraction import (ExtractionAreaError, WallLoadsExtractor, face_average, overlap_matrix,
                                             refine_wall_tree, synthetic_wall_run)
from models.load_transfer.shear import radial_unit_vectors, shear_nodal_forces, shear_point_forces

R = 0.01


# ----------------------------------------------------------------------------- table


def test_polar_table_areas_and_formats(tmp_path):
    df = polar_quadrature_table(radius=R, n_radial=9, n_theta=12, center=(0.3, -0.2), rotation=0.1)
    qt = validate_table(df)
    assert qt.size == 1 + 8 * 12
    assert abs(qt.areas.sum() - np.pi * R**2) <= 1e-15 * np.pi * R**2 * 10
    assert np.array_equal(np.hypot(qt.coordinates[0, 0] - 0.3, qt.coordinates[0, 1] + 0.2), 0.0)
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_parquet(tmp_path / "t.parquet")
    for p in ("t.csv", "t.parquet"):
        q = read_table(tmp_path / p)
        np.testing.assert_array_equal(q.ids, qt.ids)
        np.testing.assert_allclose(q.coordinates, qt.coordinates, rtol=0, atol=0 if p.endswith("parquet") else 1e-18)
    with pytest.raises(TableError, match=r"t.txt: file type '.txt': must be .csv or .parquet"):
        read_table(tmp_path / "t.txt")


def test_table_schema_failures_exact_message():
    df = polar_quadrature_table(radius=R, n_radial=3, n_theta=4)
    df.loc[3, "tributary_area"] = -1.0
    df.loc[4, "condition_id"] = 1
    df.loc[5, "nz"] = 0.5
    df.loc[6, "x0"] = np.inf
    with pytest.raises(TableError) as err:
        validate_table(df, source="surface.csv")
    assert str(err.value) == (
        "surface.csv: invalid surface quadrature table: nx,ny,nz: unit_normal: 1 failing row(s), first row 5 | "
        "condition_id: field_uniqueness: 2 failing value(s), first 1.0 at row 0 | "
        "x0: finite: 1 failing value(s), first inf at row 6 | "
        "tributary_area: greater_than(0.0): 1 failing value(s), first -1.0 at row 3")
    with pytest.raises(TableError, match=r"columns \['nz'\]: required"):
        validate_table(df.drop(columns=["nz"]))


# ----------------------------------------------------------------------------- extraction


def _tree():
    return refine_wall_tree(R, 2, 8, lambda rc, h: np.abs(rc - 0.41 * R) < 2.5 * h)


def test_active_leaves_tile_the_wall_once():
    tree = _tree()
    r0, r1, lev = tree.faces()
    order = np.argsort(r0)
    assert r0[order][0] == 0.0 and r1[order][-1] == R
    np.testing.assert_array_equal(r1[order][:-1], r0[order][1:])  # contiguous, no overlap
    assert len(set(lev.tolist())) >= 5 and (~tree.leaf).sum() > 0  # several levels, parents exist


def test_overlap_matrix_against_brute_force():
    rng = np.random.default_rng(4)
    edges = np.sort(np.r_[0.0, R, rng.uniform(0, R, 12)])
    r0, r1, _ = _tree().faces()
    W = overlap_matrix(r0, r1, edges).toarray()
    brute = np.zeros_like(W)
    for f in range(r0.size):
        for i in range(edges.size - 1):
            a, b = max(r0[f], edges[i]), min(r1[f], edges[i + 1])
            if b > a:
                brute[i, f] = np.pi * (b * b - a * a)
    # b*b - a*a of the brute force cancels for thin pieces: relative rounding ~ eps b^2 / (b^2 - a^2)
    np.testing.assert_allclose(W, brute, rtol=1e-12, atol=0)


def test_extraction_parabolic_force_and_p_ref():
    """Face values = exact axisymmetric face averages of p_ref + p0 (1 - r^2/R^2): the ring force
    is pi p0 R^2 / 2 exactly whatever the ring edges; shear tau0 r/R integrates to 2 pi tau0 R^2/3."""
    p0, pref, tau0 = 3.0e5, 1.0e5, 20.0
    edges = np.sort(np.r_[0.0, R, np.random.default_rng(9).uniform(0, R, 17)])
    ex = WallLoadsExtractor(edges, p_ref=pref)
    gp = lambda r: np.pi * p0 * (r**2 - r**4 / (2 * R**2))  # noqa: E731
    gt = lambda r: 2 * np.pi * tau0 * r**3 / (3 * R)  # noqa: E731
    tree = _tree()
    pb, tb, area = ex.event_tree(0.0, tree, lambda a, b: pref + face_average(a, b, gp), lambda a, b: face_average(a, b, gt))
    A = np.pi * (edges[1:] ** 2 - edges[:-1] ** 2)
    np.testing.assert_allclose(area, A, rtol=1e-13)
    assert abs(pb @ A - np.pi * p0 * R**2 / 2) <= 1e-13 * np.pi * p0 * R**2
    assert abs(tb @ A - 2 * np.pi * tau0 * R**2 / 3) <= 1e-13 * tau0 * R**2


def test_parent_and_children_counted_twice_is_refused():
    edges = np.linspace(0.0, R, 6)
    ex = WallLoadsExtractor(edges)
    r0, r1, _ = _tree().faces(active_only=False)
    with pytest.raises(ExtractionAreaError, match=r"t=0.0 s: ring \d: accumulated area .* faces counted twice or missing"):
        ex.event(0.0, r0, r1, np.ones(r0.size))
    r0, r1, _ = _tree().faces()
    keep = np.arange(r0.size) != 3  # a missing face
    with pytest.raises(ExtractionAreaError, match="faces counted twice or missing"):
        ex.event(0.0, r0[keep], r1[keep], np.ones(keep.sum()))


def test_synthetic_run_writes_a_valid_file(tmp_path):
    from models.load_transfer.contracts.wall_loads import read_wall_loads
    from models.load_transfer.extraction import synthetic_metadata

    run = synthetic_wall_run(n_rings=12, n_outputs=9)
    path = run.extractor.write(tmp_path, case_id="syn", metadata=synthetic_metadata(run), configuration="x: 1\n")
    wl = read_wall_loads(path)
    np.testing.assert_allclose(wl.force, run.force_exact, rtol=0, atol=1e-13 * run.force_exact.max())
    assert wl.metadata["levels"] == [3, 9] and wl.metadata["reference_pressure"] == 1.0e5
    assert len({t.leaf.sum() for t in run.trees}) > 1  # the active leaves change between outputs


# ----------------------------------------------------------------------------- debug map


def test_debug_map_conserves_force_and_impulse_not_rings():
    edges = np.linspace(0.0, R, 17)
    t = np.array([0.0, 1.0e-5, 3.0e-5, 4.0e-5])
    amp = np.array([0.0, 1.0, 0.4, 0.0])
    prof = 1.0 - (edges[1:] ** 2 + edges[:-1] ** 2) / (2 * R**2)
    p = 2.0e5 * np.outer(amp, prof)
    table = polar_quadrature_table(radius=R, n_radial=7, n_theta=10)
    pts, A = table[["x0", "y0", "z0"]].to_numpy(), table["tributary_area"].to_numpy()
    res = map_axisymmetric_load(edges, p, pts, A)
    F_B = p @ (np.pi * (edges[1:] ** 2 - edges[:-1] ** 2))
    F_M = res.pressure @ A
    np.testing.assert_allclose(F_M, F_B, rtol=0, atol=1e-12 * F_B.max())
    assert abs(np.trapezoid(F_M, t) - np.trapezoid(F_B, t)) <= 1e-12 * np.trapezoid(F_B, t)
    assert np.max(np.abs(res.sampled_force - F_B)) > 1e-3 * F_B.max()  # there was something to correct
    assert res.ring_error() > 1e-3  # no local conservation
    # minimum L2 norm: the uniform correction equals the min-norm solution of sum_a c_a A_a = R
    # in the area-weighted norm (solved independently with lstsq on sqrt(A)-scaled unknowns)
    k = 1
    rhs = F_B[k] - res.sampled_force[k]
    s = np.sqrt(A)
    y, *_ = np.linalg.lstsq((A / s)[None, :], np.array([rhs]), rcond=None)
    np.testing.assert_allclose(y / s, np.full(A.size, res.correction[k]), rtol=1e-10)


def test_point_rings_edges_and_exterior():
    edges = np.array([0.0, 1.0, 2.0, 3.0])
    pts = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0], [3.0, 0.1], [2.5, 0.0]])
    pr = point_rings(pts, edges)
    np.testing.assert_array_equal(pr.index, [0, 1, 2, -1, 2])
    pr2 = point_rings(pts, edges, r_map=2.0)
    np.testing.assert_array_equal(pr2.index, [0, 1, -1, -1, -1])
    np.testing.assert_allclose(pr2.common_areas, [np.pi, 3 * np.pi, 0.0])


# ----------------------------------------------------------------------------- shear


def test_shear_on_the_axis_is_the_null_vector_without_warnings():
    table = polar_quadrature_table(radius=R, n_radial=6, n_theta=12)
    pts, A = table[["x0", "y0", "z0"]].to_numpy(), table["tributary_area"].to_numpy()
    edges = np.linspace(0, R, 5)
    tau = np.full(4, 30.0)
    with np.errstate(all="raise"):
        f = shear_point_forces(edges, tau, pts, A)
        er = radial_unit_vectors(pts)
    assert np.all(np.isfinite(f)) and np.all(f[0] == 0.0) and np.all(er[0] == 0.0)
    np.testing.assert_allclose(np.linalg.norm(er[1:], axis=1), 1.0, rtol=1e-15)
    assert np.linalg.norm(f.sum(axis=0)) <= 1e-15 * 30.0 * np.pi * R**2
    np.testing.assert_allclose(np.einsum("ak,ak->", f, er), 30.0 * (np.pi * R**2 - A[0]), rtol=1e-14)
    with np.errstate(all="ignore"):  # the naive 1/r form is NaN on the axis: what the null limit avoids
        naive = (pts[:, :2] / np.hypot(pts[:, 0], pts[:, 1])[:, None])
    assert np.isnan(naive[0]).all()
    assert np.all(shear_point_forces(edges, np.zeros(4), pts, A) == 0.0)  # sliding wall


def test_shear_with_the_conservative_operator():
    op_mod = pytest.importorskip("models.load_transfer.operator")
    from models.load_transfer.surfaces import disk_mesh

    surf = disk_mesh(radius=R, resolution=6, kind="tri")
    edges = np.linspace(0.0, R, 7)
    op = op_mod.ConservativePressureOperator(surf, edges)
    if not hasattr(op, "shear_matrices"):
        pytest.skip("operator without shear_matrices")
    tau = np.vstack([np.full(6, 25.0), np.zeros(6)])
    with np.errstate(invalid="raise", divide="raise"):
        f = shear_nodal_forces(op, tau)
    assert f.shape == (2, surf.nodes.shape[0], 3) and np.all(np.isfinite(f))
    assert np.all(f[1] == 0.0) and np.all(f[..., 2] == 0.0)
    r = np.hypot(surf.nodes[:, 0] - surf.axis_origin[0], surf.nodes[:, 1] - surf.axis_origin[1])
    # radial consistency: every nodal shear force points away from the axis (tau > 0)
    d = surf.nodes[:, :2] - np.asarray(surf.axis_origin)
    radial = np.einsum("ak,ak->a", f[0][:, :2], d)
    assert np.all(radial[r > 0] >= -1e-12 * np.abs(radial).max())
