"""Conservative point conditions (issue 15): exact face integrals split by the face shape functions,
the kratos-point-loads 1.1 face table, its validator relations, the sampled fallback and the CLI."""
from __future__ import annotations

import json
import logging
import shutil

import h5py
import numpy as np
import pytest

from models.load_transfer.contracts import validate_file
from models.load_transfer.contracts.kratos_loads import read_kratos_loads
from models.load_transfer.contracts.wall_loads import write_wall_loads
from models.load_transfer.export import ExportInputError, export_kratos_loads, write_faces
from models.load_transfer.face_loads import (FaceTable, FaceTableError, axisymmetric_face_table, condition_areas,
                                             face_condition_matrix, face_ring_areas)

META = dict(basilisk_commit="b", exporter_commit="e", compiler="c", command="cmd", R0=1e-3, H=2e-3, gamma=1.4,
            reference_pressure=1e5, levels=[3, 9], delta_min=1e-5, output_cadence=1e-6, convergence_study_id="s")
R, P0 = 0.01, 2.0e5


def _parabolic_source(tmp_path, n_rings=13, nt=21, t_end=1e-4):
    """Exact ring averages of p0 (1 - r²/R²) a(t) on rings that do not align with the faces."""
    e = R * np.sqrt(np.linspace(0.0, 1.0, n_rings + 1))  # equal-area rings
    g = lambda r: np.pi * P0 * (r**2 - r**4 / (2 * R**2))  # ∫_0^r p 2π s ds
    t = np.linspace(0.0, t_end, nt)
    a = np.interp(t, [0.0, 0.3 * t_end, t_end], [0.0, 1.0, 0.0])
    p = np.outer(a, (g(e[1:]) - g(e[:-1])) / (np.pi * np.diff(e**2)))
    path = write_wall_loads(tmp_path / "src.wall-loads.v1.h5", case_id="src", time=t, radial_edges=e, pressure=p,
                            metadata=META, configuration="c: 1\n")
    return path, t, e, p


def _export(tmp_path, faces=True, n_faces=7, **kw):
    src, t, e, p = _parabolic_source(tmp_path)
    table, ft = axisymmetric_face_table(np.linspace(0.0, R, n_faces + 1), 0.02)
    te = np.linspace(1.3e-6, 9.7e-5, 29)
    res = export_kratos_loads(src, table, te, tmp_path / ("c" if faces else "s"), faces=ft if faces else None,
                              metadata={"exporter_commit": "x", "command": "t"}, **kw)
    return res, table, ft, (t, e, p)


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
def test_face_matrix_columns_rows_and_local_integrals():
    table, ft = axisymmetric_face_table(np.linspace(0.0, R, 6), 0.02, points_per_face=3)
    xyz = table[["x0", "y0", "z0"]].to_numpy()
    edges = R * np.sqrt(np.linspace(0.0, 1.0, 18))
    W = face_condition_matrix(ft, xyz, edges)
    np.testing.assert_allclose(np.asarray(W.sum(axis=0)).ravel(), np.pi * np.diff(edges**2), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(W.sum(axis=1)).ravel(), table["tributary_area"], rtol=1e-13)
    # every entry against an independent adaptive quadrature of L_a(r) 2π r over face ∩ ring
    from scipy.integrate import quad

    rf = np.linspace(0.0, R, 6)
    Wd = W.toarray()
    for f in range(5):
        rows = ft.condition_index[f]
        ra = xyz[rows, 0]
        for k, a in enumerate(rows):
            L = np.polynomial.Polynomial.fit(ra, np.eye(3)[k], 2)  # Lagrange basis through the 3 radii
            for i in range(edges.size - 1):
                lo, hi = max(rf[f], edges[i]), min(rf[f + 1], edges[i + 1])
                ref = quad(lambda r: L(r) * 2 * np.pi * r, lo, hi, epsabs=0, epsrel=1e-13)[0] if hi > lo else 0.0
                assert Wd[a, i] == pytest.approx(ref, rel=1e-11, abs=1e-13 * np.pi * R**2)
    # face areas from the geometry alone
    np.testing.assert_allclose(face_ring_areas(ft.vertices, [0.0, R]).toarray().ravel(), np.pi * np.diff(np.linspace(0, R, 6) ** 2), rtol=1e-14)


def test_conservative_export_is_exact_globally_and_face_by_face(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    res, table, ft, (t, e, p) = _export(tmp_path)
    assert res.point_loads == "conservative" and res.method == "face-conservative"
    assert res.e_F < 1e-14 and res.e_J < 1e-14 and res.column_error < 1e-14
    d = read_kratos_loads(res.path)
    assert d["attrs"]["schema_version"] == "1.1.0" and d["attrs"]["mapping_method"] == "face-conservative"
    assert d["metadata"]["point_loads"] == "conservative" and "point_loads_note" not in d["metadata"]
    np.testing.assert_allclose(d["diagnostics/target_force"], d["diagnostics/source_force"], rtol=1e-13, atol=0)
    # each face: Σ of its conditions' forces = the exact face integral of the ring averages (independent: the
    # overlap of the face [r0, r1] with each ring, π (b² - a²), computed here)
    fz = d["loads/point_force"][..., 2]
    per_face = fz[:, ft.condition_index].sum(axis=-1)
    rf = np.linspace(0.0, R, 8)
    over = np.clip(np.minimum(rf[1:, None], e[None, 1:]) - np.maximum(rf[:-1, None], e[None, :-1]), 0, None) > 0
    a = np.maximum(rf[:-1, None], e[None, :-1])
    b = np.minimum(rf[1:, None], e[None, 1:])
    exact = p @ np.where(over, np.pi * (b**2 - a**2), 0.0).T
    np.testing.assert_allclose(per_face, -exact, rtol=1e-12, atol=1e-12 * np.abs(exact).max())  # outward +z
    np.testing.assert_allclose(d["faces/force"], exact, rtol=1e-12, atol=1e-12 * np.abs(exact).max())
    assert validate_file(res.path, mode="production").ok
    assert "conservative point loads on 7 annulus faces" in caplog.text


def test_sampled_export_says_so_and_is_not_locally_conservative(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    res, table, ft, (t, e, p) = _export(tmp_path, faces=False)
    assert res.point_loads == "sampled" and 1e-4 < res.e_F < 0.02
    d = read_kratos_loads(res.path)
    assert d["metadata"]["point_loads"] == "sampled" and "not conservative" in d["metadata"]["point_loads_note"]
    assert "faces/force" not in d
    assert "point loads SAMPLED" in caplog.text


def test_validator_catches_a_face_force_off_its_integral_and_a_split_across_faces(tmp_path):
    res, table, ft, _ = _export(tmp_path)
    bad = tmp_path / "bad.h5"
    shutil.copyfile(res.path, bad)
    with h5py.File(bad, "r+") as f:
        f["faces/force"][3, 2] *= 1.0 + 1e-9
    v = [(x.path, x.rule, x.expected) for x in validate_file(bad).violations]
    assert len(v) == 1 and v[0][:2] == ("faces/force", "derived") and "exact_face_force" in v[0][2]
    # move load from a condition of face 1 to one of face 4: totals unchanged (e_F blind), faces not
    bad2 = tmp_path / "bad2.h5"
    shutil.copyfile(res.path, bad2)
    with h5py.File(bad2, "r+") as f:
        A = f["conditions/tributary_area"][()]
        i, j = int(ft.condition_index[1, 0]), int(ft.condition_index[4, 1])
        p = f["loads/pressure_gauge"][()]
        dF = 0.1 * p[:, i] * A[i]
        p[:, i] -= dF / A[i]
        p[:, j] += dF / A[j]
        f["loads/pressure_gauge"][...] = p
        n = f["conditions/outward_normal"][()]
        f["loads/point_force"][...] = -p[..., None] * (A[:, None] * n)
        f["diagnostics/target_force"][...] = (p * A).sum(axis=1)
    v = [(x.path, x.rule, x.expected) for x in validate_file(bad2).violations]
    assert len(v) == 1 and v[0][:2] == ("faces/force", "derived") and "face_sum_of_condition_loads" in v[0][2], v


def test_files_without_faces_and_1_0_files_are_still_read(tmp_path):
    res, *_ = _export(tmp_path, faces=False)
    old = tmp_path / "old.h5"
    shutil.copyfile(res.path, old)
    with h5py.File(old, "r+") as f:
        f.attrs["schema_version"] = "1.0.0"
        meta = json.loads(f.attrs["metadata_json"])
        meta.pop("point_loads"), meta.pop("point_loads_note")
        f.attrs["metadata_json"] = json.dumps(meta)
    rep = validate_file(old)
    assert rep.ok and rep.version == "1.0.0"
    assert "faces/force" not in read_kratos_loads(old)


def test_bad_face_tables_are_refused(tmp_path):
    src, *_ = _parabolic_source(tmp_path)
    table, ft = axisymmetric_face_table(np.linspace(0.0, R, 5), 0.02)
    te = np.linspace(0.0, 1e-4, 11)
    meta = {"exporter_commit": "x", "command": "t"}
    twice = FaceTable(vertices=ft.vertices, condition_index=np.where(ft.condition_index == 3, 2, ft.condition_index))
    with pytest.raises(ExportInputError, match=r"condition row 2 belongs to 2 faces"):
        export_kratos_loads(src, table, te, tmp_path / "a", faces=twice, metadata=meta)
    other = table.copy()
    other.loc[5, "tributary_area"] *= 1.01
    with pytest.raises(ExportInputError, match=r"condition id 6 has .* but its face shape function integrates to"):
        export_kratos_loads(src, other, te, tmp_path / "b", faces=ft, metadata=meta)
    short = FaceTable(vertices=ft.vertices[:3], condition_index=ft.condition_index[:3])
    with pytest.raises(ExportInputError, match=r"condition row 6 belongs to 0 faces"):
        export_kratos_loads(src, table, te, tmp_path / "c", faces=short, metadata=meta)
    with pytest.raises(ExportInputError, match=r"'face-conservative' needs a face table"):
        export_kratos_loads(src, table, te, tmp_path / "d", method="face-conservative", metadata=meta)
    assert not any((tmp_path / k).exists() for k in "abcd")


def test_cli_with_faces(tmp_path, capsys):
    from harness.tools.export import main

    src, *_ = _parabolic_source(tmp_path)
    table, ft = axisymmetric_face_table(np.linspace(0.0, R, 6), 0.02)
    table.to_csv(tmp_path / "t.csv", index=False)
    write_faces(tmp_path / "faces.npz", ft, table["condition_id"].to_numpy())
    grid = ["--t0", "1e-6", "--dt", "2e-6", "--steps", "40"]
    assert main([str(src), str(tmp_path / "t.csv"), "--faces", str(tmp_path / "faces.npz"), "--out",
                 str(tmp_path / "o"), *grid]) == 0
    out = capsys.readouterr().out
    assert " pass  [conservative]  -> " in out
    e_F = float(out.split()[2])
    assert e_F < 1e-14
    (tmp_path / "junk.npz").write_text("x")
    assert main([str(src), str(tmp_path / "t.csv"), "--faces", str(tmp_path / "junk.npz"), "--out",
                 str(tmp_path / "p"), *grid]) == 2
    assert "junk.npz: cannot read the face table" in capsys.readouterr().err


def test_triangle_faces_off_axis_match_the_production_operator(tmp_path):
    """3 conditions per triangle about an off-centre axis: the columns equal those of
    ConservativePressureOperator on the same mesh, L_a = 2 N_a - 1/3 per element, export e_F ~ round-off."""
    from models.load_transfer.face_loads import triangle_face_table
    from models.load_transfer.operator import ConservativePressureOperator
    from models.load_transfer.surfaces import disk_mesh

    origin = (0.001, 0.0005)
    mesh = disk_mesh(radius=R, resolution=5, center=origin)  # axis_origin at the disk centre
    shifted = type(mesh)(nodes=mesh.nodes - np.array([origin[0], origin[1], 0.0]), elements=mesh.elements,
                         normal=mesh.normal, axis_origin=np.zeros(2))
    table, ft = triangle_face_table(mesh.nodes, mesh.elements, axis_origin=origin)
    edges = np.linspace(0.0, 0.0093, 17)
    W = face_condition_matrix(ft, table[["x0", "y0", "z0"]].to_numpy(), edges, axis_origin=origin).toarray()
    op = ConservativePressureOperator(shifted, edges)
    np.testing.assert_allclose(W.sum(axis=0), op.column_sums, rtol=1e-12)
    # per element: the interior-point Lagrange basis is L_a = 2 N_a - (N_1 + N_2 + N_3)/3, so the nodal
    # operator of a one-element mesh predicts the three condition rows
    for e in (0, 17, 101):
        one = type(mesh)(nodes=shifted.nodes[shifted.elements[e]], elements=np.array([[0, 1, 2]]),
                         normal=mesh.normal, axis_origin=np.zeros(2))
        M1 = ConservativePressureOperator(one, edges, geometry_tolerance=1.0).matrix.toarray()
        expect = 2.0 * M1 - M1.sum(axis=0, keepdims=True) / 3.0
        np.testing.assert_allclose(W[3 * e:3 * e + 3], expect, rtol=1e-10, atol=1e-14 * R**2)
    src, *_ = _parabolic_source(tmp_path)
    res = export_kratos_loads(src, table, np.linspace(0.0, 1e-4, 11), tmp_path / "tri", faces=ft, r_map=0.0089,
                              axis_origin=origin, metadata={"exporter_commit": "x", "command": "t"})
    assert res.e_F < 1e-13 and res.e_J < 1e-13 and validate_file(res.path, mode="production").ok


@pytest.mark.slow
def test_conservative_export_benchmark_reduced(harness_env):
    from harness import run_case

    out = run_case("bench/export_conservative", overrides=["tracking=none", "case.params.n_t=200"])
    assert out.status == "ok", out.message
    m = out.metrics
    assert m["conservative"] == 1.0 and m["e_F"] < 1e-12
    assert m["export_seconds"] > 0 and m["raw_h5py_seconds"] > 0 and np.isfinite(m["ratio_to_raw_h5py"])
    assert m["peak_over_point_force"] < 1.0  # streamed


def test_partial_surface_off_axis_common_area(tmp_path):
    """A square top face and an off-axis disk that sticks out of it: with partial_surface the common area
    is the faces' coverage (independently: the square ∩ disk by polar integration), F_B is cut to it,
    e_F ~ round-off, and the validator recomputes source_force from the faces."""
    from scipy.integrate import quad

    from models.load_transfer.face_loads import triangle_face_table

    L, n = 0.02, 6
    g = np.linspace(0.0, L, n + 1)
    X, Y = np.meshgrid(g, g, indexing="ij")
    nodes = np.stack([X.ravel(), Y.ravel(), np.full(X.size, 0.03)], axis=1)
    k = (np.arange(n)[:, None] * (n + 1) + np.arange(n)[None, :]).ravel()
    tris = np.concatenate([np.stack([k, k + n + 1, k + n + 2], 1), np.stack([k, k + n + 2, k + 1], 1)])
    origin = (0.013, 0.008)
    table, ft = triangle_face_table(nodes, tris, axis_origin=origin)
    src, t, e, p = _parabolic_source(tmp_path)  # rings out to R = 0.01: the disk leaves the square
    meta = {"exporter_commit": "x", "command": "t"}
    with pytest.raises(ExportInputError, match=r"area of the faces over the common disk"):
        export_kratos_loads(src, table, np.linspace(0.0, 1e-4, 11), tmp_path / "full", faces=ft, axis_origin=origin,
                            metadata=meta)
    res = export_kratos_loads(src, table, np.linspace(0.0, 1e-4, 11), tmp_path / "part", faces=ft,
                              axis_origin=origin, partial_surface=True, metadata=meta)

    def covered(r):  # arc length of the circle of radius r about the axis inside the square, x r
        th = np.linspace(0.0, 2 * np.pi, 20001)[:-1]
        x, y = origin[0] + r * np.cos(th), origin[1] + r * np.sin(th)
        return 2 * np.pi * r * np.mean((x >= 0) & (x <= L) & (y >= 0) & (y <= L))

    area = sum(quad(covered, a, b, limit=200)[0] for a, b in zip(e[:-1], e[1:]))
    assert res.area_sum == pytest.approx(area, rel=1e-4)  # sampled arcs: 1e-4
    assert res.area_sum < 0.9 * np.pi * 0.01**2 and res.e_F < 1e-13 and res.e_J < 1e-13
    rep = validate_file(res.path, mode="production")
    assert rep.ok, rep.violations
    d = read_kratos_loads(res.path)
    np.testing.assert_allclose(d["diagnostics/target_force"], d["diagnostics/source_force"], rtol=1e-12,
                               atol=1e-13 * np.abs(d["diagnostics/source_force"]).max())
