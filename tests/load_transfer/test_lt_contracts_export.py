"""kratos-point-loads v1 contract and cavitation-kratos-export: closed forms, gates, streaming, CLI."""
from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

from models.load_transfer.contracts import ContractError, validate_file
from models.load_transfer.contracts.corrupt import flip_chunk_byte
from models.load_transfer.contracts.kratos_loads import read_kratos_loads
from models.load_transfer.contracts.table import polar_quadrature_table
from models.load_transfer.contracts.wall_loads import write_wall_loads
from models.load_transfer.export import ExportInputError, MappingError, export_kratos_loads

META = dict(basilisk_commit="b", exporter_commit="e", compiler="c", command="cmd", R0=1e-3, H=2e-3, gamma=1.4,
            reference_pressure=1e5, levels=[3, 9], delta_min=1e-5, output_cadence=1e-6, convergence_study_id="s")
R = 0.01


def _source(tmp_path, pressure_fn, nt=21, nr=10, t_end=1.0e-4, case_id="src", edges=None):
    t = np.linspace(0.0, t_end, nt)
    e = np.linspace(0.0, R, nr + 1) if edges is None else edges
    p = np.broadcast_to(pressure_fn(t[:, None], e[None, :-1], e[None, 1:]), (nt, e.size - 1)).copy()
    return write_wall_loads(tmp_path / f"{case_id}.wall-loads.v1.h5", case_id=case_id, time=t, radial_edges=e,
                            pressure=p, metadata=META, configuration="c: 1\n"), t, e, p


def _uniform(t, r0, r1):
    return 2.0e5 * (1.0 + 1.0e4 * t) * np.ones_like(r0)


def test_uniform_pressure_closed_form(tmp_path):
    """Uniform p: every point force is -p A_a n_a, total F = p pi R^2 (outward -z => force +z)."""
    src, t, e, p = _source(tmp_path, _uniform)
    table = polar_quadrature_table(radius=R, n_radial=7, n_theta=12, outward="-z")
    te = np.linspace(1.3e-6, 9.7e-5, 33)
    res = export_kratos_loads(src, table, te, tmp_path / "out", metadata={"exporter_commit": "x", "command": "t"})
    assert res.path.name == "src.kratos-loads.v1.h5"
    d = read_kratos_loads(res.path)
    A = table["tributary_area"].to_numpy()
    pk = 2.0e5 * (1.0 + 1.0e4 * t)
    np.testing.assert_allclose(d["loads/pressure_gauge"], np.outer(pk, np.ones(A.size)), rtol=1e-15)
    f = d["loads/point_force"]
    assert np.all(f[..., :2] == 0.0)
    np.testing.assert_allclose(f[..., 2], np.outer(pk, A), rtol=1e-15)  # +z: against outward -z
    np.testing.assert_allclose(d["diagnostics/target_force"], pk * np.pi * R**2, rtol=1e-13)
    np.testing.assert_allclose(d["diagnostics/source_force"], pk * np.pi * R**2, rtol=1e-13)
    assert res.e_F < 1e-13 and res.e_J < 1e-13
    assert d["source/pressure_gauge"].tobytes() == p.tobytes() and d["source/time"].tobytes() == t.tobytes()
    assert d["attrs"]["load_variable"] == "POINT_LOAD" and bool(d["attrs"]["complete"])
    with h5py.File(res.path, "r") as fh:
        for name in ("loads/point_force", "loads/pressure_gauge", "source/pressure_gauge"):
            assert (fh[name].compression, fh[name].shuffle, fh[name].fletcher32) == ("gzip", True, True)
        assert fh["conditions/tributary_area"].attrs["unit"] == "m^2"


def test_mapping_error_equals_independent_sampling_error(tmp_path):
    """Parabolic profile on a table whose layers do not align with the rings: e_F and e_J equal an
    independent per-point computation; a coarse table fails (exit path) and leaves no file."""
    def parab(t, r0, r1):
        return 3.0e5 * np.sin(np.pi * t / 1e-4) * (1.0 - (r0**2 + r1**2) / (2 * R**2))

    src, t, e, p = _source(tmp_path, parab, nr=16)
    table = polar_quadrature_table(radius=R, n_radial=23, n_theta=16)
    te = np.linspace(0.0, 1.0e-4, 41)
    res = export_kratos_loads(src, table, te, tmp_path / "out", metadata={"exporter_commit": "x", "command": "t"})
    # independent: ring of each point by a brute-force comparison, forces at the knots, exact step means
    r = np.hypot(table["x0"], table["y0"]).to_numpy()
    ring = np.array([int(np.flatnonzero((e[:-1] <= ri) & (ri < e[1:]))[0]) if ri < R else 15 for ri in r])
    F_M = np.array([np.sum(p[k, ring] * table["tributary_area"]) for k in range(t.size)])
    F_B = p @ (np.pi * (e[1:] ** 2 - e[:-1] ** 2))
    # piecewise-linear knots, steps aligned to half knots: exact averages = trapezoids on a refined grid
    tt = np.linspace(0.0, 1.0e-4, 81)
    fm, fb = np.interp(tt, t, F_M), np.interp(tt, t, F_B)
    FMs = 0.5 * (fm[:-1] + fm[1:]).reshape(40, 2).mean(axis=1)
    FBs = 0.5 * (fb[:-1] + fb[1:]).reshape(40, 2).mean(axis=1)
    eF = np.max(np.abs(FMs - FBs)) / np.max(np.abs(FBs))
    eJ = abs(np.sum(FMs - FBs)) / abs(np.sum(FBs))
    assert 1e-4 < res.e_F < 0.02
    np.testing.assert_allclose([res.e_F, res.e_J], [eF, eJ], rtol=1e-9)
    coarse = polar_quadrature_table(radius=R, n_radial=2, n_theta=16)
    with pytest.raises(MappingError, match=r"mapping-only error above 2%: e_F = 0\.\d+"):
        export_kratos_loads(src, coarse, te, tmp_path / "coarse", metadata={"exporter_commit": "x", "command": "t"})
    assert not (tmp_path / "coarse").exists() or list((tmp_path / "coarse").iterdir()) == []


def test_partial_surface_and_exterior(tmp_path):
    """r_map < last edge: conservation on the common disk; points beyond r_map and beyond the last
    edge get zero load (no extrapolation)."""
    src, t, e, p = _source(tmp_path, _uniform)
    rs = 0.6 * R
    table = polar_quadrature_table(radius=rs, n_radial=6, n_theta=8)
    res = export_kratos_loads(src, table, np.linspace(0, 1e-4, 5), tmp_path / "o", r_map=rs,
                              metadata={"exporter_commit": "x", "command": "t"})
    d = read_kratos_loads(res.path)
    np.testing.assert_allclose(d["diagnostics/source_force"], 2e5 * (1 + 1e4 * t) * np.pi * rs**2, rtol=1e-13)
    assert res.e_F < 1e-13 and d["attrs"]["r_map"] == rs
    big = polar_quadrature_table(radius=2 * R, n_radial=8, n_theta=8)  # half of the layers beyond the source
    res2 = export_kratos_loads(src, big, np.linspace(0, 1e-4, 5), tmp_path / "o2", r_map=R,
                               metadata={"exporter_commit": "x", "command": "t"})
    d2 = read_kratos_loads(res2.path)
    r = np.hypot(d2["conditions/coordinates_initial"][:, 0], d2["conditions/coordinates_initial"][:, 1])
    assert np.all(d2["loads/point_force"][:, r > R] == 0.0) and res2.n_outside == int((r > R).sum()) > 0
    assert res2.e_F < 1e-13


def test_area_check_and_bad_inputs(tmp_path):
    src, *_ = _source(tmp_path, _uniform)
    with pytest.raises(ExportInputError, match=r"metadata: exporter_commit, command: required in production mode"):
        export_kratos_loads(src, polar_quadrature_table(radius=R, n_radial=4, n_theta=8), np.linspace(0, 1e-4, 5),
                            tmp_path / "o")
    table = polar_quadrature_table(radius=R, n_radial=4, n_theta=8)
    table.loc[3, "tributary_area"] *= 1.01
    with pytest.raises(ExportInputError, match=r"conditions/tributary_area: sum over the common disk R_map=0.01 m"):
        export_kratos_loads(src, table, np.linspace(0, 1e-4, 5), tmp_path / "o", mode="debug")
    ok = polar_quadrature_table(radius=R, n_radial=4, n_theta=8)
    with pytest.raises(ExportInputError, match=r"target time grid: t_edges: step 4 .* lies outside the history span"):
        export_kratos_loads(src, ok, np.linspace(0, 2e-4, 9), tmp_path / "o", mode="debug")
    with pytest.raises(ExportInputError, match="debug map; allowed only in debug mode"):
        export_kratos_loads(src, ok, np.linspace(0, 1e-4, 5), tmp_path / "o", method="l2-uniform-correction-debug")
    assert not (tmp_path / "o").exists()


def test_debug_l2_correction_restores_force_in_the_file(tmp_path):
    src, t, e, p = _source(tmp_path, lambda t, r0, r1: 1e5 * (1 + 1e4 * t) * (1 - r0 / R), nr=16)
    table = polar_quadrature_table(radius=R, n_radial=2, n_theta=8)
    te = np.linspace(0, 1e-4, 11)
    with pytest.raises(MappingError):
        export_kratos_loads(src, table, te, tmp_path / "s", mode="debug")
    res = export_kratos_loads(src, table, te, tmp_path / "d", mode="debug", method="l2-uniform-correction-debug")
    d = read_kratos_loads(res.path)
    np.testing.assert_allclose(d["diagnostics/target_force"], d["diagnostics/source_force"], rtol=1e-13)
    assert d["attrs"]["mapping_method"] == "l2-uniform-correction-debug" and res.e_F < 1e-13


def test_streaming_blocks_give_identical_datasets(tmp_path):
    src, *_ = _source(tmp_path, lambda t, r0, r1: 1e5 * np.cos(1e4 * t) * (1 - r1 / R), nt=37)
    table = polar_quadrature_table(radius=R, n_radial=10, n_theta=8)
    te = np.linspace(0, 1e-4, 7)
    a = export_kratos_loads(src, table, te, tmp_path / "a.h5", block_rows=16, mode="debug", validate="full")
    b = export_kratos_loads(src, table, te, tmp_path / "b.h5", mode="debug")
    assert a.write.block_rows == 16 and b.write.block_rows >= 37
    da, db = read_kratos_loads(a.path), read_kratos_loads(b.path)
    for k in ("loads/point_force", "loads/pressure_gauge", "diagnostics/target_force"):
        assert da[k].tobytes() == db[k].tobytes()


def _export_ok(tmp_path):
    src, *_ = _source(tmp_path, _uniform, nt=9)
    res = export_kratos_loads(src, polar_quadrature_table(radius=R, n_radial=3, n_theta=4), np.linspace(0, 1e-4, 3),
                              tmp_path / "k", metadata={"exporter_commit": "x", "command": "t"})
    return res.path


KRATOS_BAD = {
    "incomplete": (lambda f: f.attrs.__setitem__("complete", False), "@complete: equals: found False; expected True"),
    "point_force_edited": (lambda f: f["loads/point_force"].__setitem__((2, 3, 2), 0.0),
                           None),
    "duplicate_ids": (lambda f: f["conditions/ids"].__setitem__(1, 1),
                      "conditions/ids: unique: found value 1 2 times (1 duplicated value(s)); expected unique values"),
    "normal_not_unit": (lambda f: f["conditions/outward_normal"].__setitem__((4, 2), -0.5),
                        "conditions/outward_normal: unit_rows: found | |n| - 1 | = 0.5 at row 4; expected <= 1e-09"),
    "negative_area": (lambda f: f["conditions/tributary_area"].__setitem__(0, -1.0),
                      "conditions/tributary_area: positive: found -1.0 at index 0; expected > 0"),
    "wrong_force_unit": (lambda f: f["loads/point_force"].attrs.__setitem__("unit", "kN"),
                         "loads/point_force@unit: unit: found 'kN'; expected 'N'"),
    "wrong_load_variable": (lambda f: f.attrs.__setitem__("load_variable", "MPC_AREA"),
                            "@load_variable: equals: found 'MPC_AREA'; expected 'POINT_LOAD'"),
}


@pytest.mark.parametrize("kind", sorted(KRATOS_BAD))
def test_kratos_bad_files(tmp_path, kind):
    good = _export_ok(tmp_path)
    bad = tmp_path / f"{kind}.h5"
    shutil.copyfile(good, bad)
    mutate, expected = KRATOS_BAD[kind]
    with h5py.File(bad, "r+") as f:
        mutate(f)
    with pytest.raises(ContractError) as err:
        read_kratos_loads(bad)
    msg = str(err.value)
    prefix = f"{bad}: invalid kratos-point-loads file: "
    if kind == "point_force_edited":
        # f != -p A n: reported on point_force (relations downstream of a broken input are skipped)
        assert msg.startswith(prefix + "loads/point_force: derived: found max |stored - recomputed| = ")
        assert msg.endswith("expected point_force of loads/pressure_gauge, conditions/tributary_area, "
                            "conditions/outward_normal within rtol 1e-12") and msg.count(" | ") == 0
    else:
        assert msg == prefix + expected


def test_kratos_checksum(tmp_path):
    good = _export_ok(tmp_path)
    bad = tmp_path / "c.h5"
    shutil.copyfile(good, bad)
    flip_chunk_byte(bad, "loads/point_force")
    report = validate_file(bad)
    assert [(v.path, v.rule) for v in report.violations] == [("loads/point_force", "checksum")]


def test_export_cli_exit_codes(tmp_path, capsys):
    from harness.tools.export import main

    src, *_ = _source(tmp_path, _uniform)
    fine = tmp_path / "fine.csv"
    polar_quadrature_table(radius=R, n_radial=10, n_theta=8).to_csv(fine, index=False)
    coarse = tmp_path / "coarse.parquet"
    e_r = np.linspace(0.0, R, 11)
    src2, *_ = _source(tmp_path, lambda t, r0, r1: 1e5 * (1 - r0 / R), case_id="lin", edges=e_r)
    polar_quadrature_table(radius=R, n_radial=2, n_theta=8).to_parquet(coarse)
    grid = ["--t0", "1e-6", "--dt", "2e-6", "--steps", "40"]
    assert main([str(src), str(fine), "--out", str(tmp_path / "a"), *grid]) == 0
    out = capsys.readouterr().out
    assert out.startswith("e_F = ") and " pass  [sampled]  -> " in out and out.strip().endswith("src.kratos-loads.v1.h5")
    assert main([str(src2), str(coarse), "--out", str(tmp_path / "b"), *grid]) == 1
    assert "FAIL: mapping-only error above 2%" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()
    assert main([str(src), str(fine), "--out", str(tmp_path / "c"), "--dt", "2e-6"]) == 2
    assert capsys.readouterr().err.strip() == ("cavitation-kratos-export: time grid: give --time-grid FILE or "
                                               "--t0, --dt and --steps")
    csv_src = tmp_path / "w.csv"
    csv_src.write_text("time,r_inner,r_outer,pressure_gauge\n0,0,0.01,1\n1,0,0.01,1\n")
    assert main([str(csv_src), str(fine), "--out", str(tmp_path / "d"), *grid]) == 2
    assert "CSV wall loads are a debug input only" in capsys.readouterr().err
    grid_file = tmp_path / "edges.txt"
    np.savetxt(grid_file, np.linspace(0, 1e-4, 11))
    assert main([str(src), str(fine), "--out", str(tmp_path / "e"), "--time-grid", str(grid_file)]) == 0


def test_kratos_interrupted_or_vetoed_write_leaves_nothing(tmp_path):
    from models.load_transfer.contracts.kratos_loads import write_kratos_loads

    t = np.linspace(0.0, 1.0, 40)
    e = np.linspace(0.0, R, 4)
    P = np.ones((40, 3))
    table = polar_quadrature_table(radius=R, n_radial=3, n_theta=4)
    kw = dict(case_id="k", time=t, radial_edges=e, source_pressure=P, ids=table["condition_id"],
              coordinates=table[["x0", "y0", "z0"]], areas=table["tributary_area"],
              normals=table[["nx", "ny", "nz"]], r_map=R, axis_origin=(0.0, 0.0),
              mapping_method="quadrature-sampled", source_schema_version="1.1.0", source_sha256="0" * 64,
              mode="debug", block_rows=16)
    calls = []

    def pressure(sl):
        calls.append(sl.start)
        if sl.start >= 16:
            raise KeyboardInterrupt("killed while streaming")
        return np.ones((sl.stop - sl.start, len(table)))

    with pytest.raises(KeyboardInterrupt):
        write_kratos_loads(tmp_path / "out", condition_pressure=pressure, **kw)
    assert calls == [0, 16] and list((tmp_path / "out").iterdir()) == []

    def veto(target_force, source_force):
        np.testing.assert_allclose(target_force, source_force, rtol=1e-13)  # the data were fine
        raise RuntimeError("vetoed by the gate")

    with pytest.raises(RuntimeError, match="vetoed by the gate"):
        write_kratos_loads(tmp_path / "out", condition_pressure=lambda sl: np.ones((sl.stop - sl.start, len(table))),
                           before_commit=veto, **kw)
    assert list((tmp_path / "out").iterdir()) == []
    path = write_kratos_loads(tmp_path / "out", condition_pressure=lambda sl: np.ones((sl.stop - sl.start, len(table))),
                              **kw).path
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["k.kratos-loads.v1.h5"] and validate_file(path).ok
