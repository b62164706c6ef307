"""Kratos MPM (real KratosMPMApplication 10.4) linear static case against scikit-fem and closed forms."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
pytest.importorskip("KratosMultiphysics.MPMApplication", reason="Kratos extra not installed")

from harness.core.api import run_case  # noqa: E402
from models.load_transfer.contracts.kratos_loads import read_kratos_loads, write_kratos_loads  # noqa: E402
from models.load_transfer.fe import ElasticBody  # noqa: E402
from models.load_transfer.kratos import workflow as W  # noqa: E402
from models.load_transfer.kratos.analysis import run_mpm  # noqa: E402
from models.load_transfer.kratos.builder import MPMSpec  # noqa: E402
from models.load_transfer.kratos.loads import LoadsFileError, MappingAbort, read_meridian_loads  # noqa: E402

E, NU, P = 2.0e9, 0.3, 1.0e4
BODY = ElasticBody(radius=0.01, height=0.02, E=E, nu=NU, rho=1200.0, nr=3, nz=5)
STATIC = MPMSpec(solver="static", dt=1.0, n_steps=1)


def _uniform_file(tmp_path, table=None):
    src = W.SourceSpec(kind="analytic", profile="uniform", p0=P, n_rings=7)
    wl = W.write_source(src, BODY, tmp_path, "uni")
    return W.export_loads(wl, W.top_face_table(BODY) if table is None else table, STATIC, tmp_path, mode="debug")


def test_lt_kratos_static_case(harness_env, tracking_uri):
    out = run_case("load_transfer/kratos_static", tracking_uri=tracking_uri)
    assert out.status == "ok", out.message
    assert out.verdict == "pass", (out.metrics, out.gates)
    m = out.metrics
    assert m["u_l2_rel_diff"] <= 1e-6 and m["u_max_rel_diff"] <= 1e-6
    # conservative point loads: F_M is the POINT_LOAD read back from Kratos, F_B the ring force
    assert m["e_F"] <= 1e-12 and m["e_J"] <= 1e-12 and m["steps"] == 1.0
    assert m["ring_error_max_conservative"] < 1e-12 and m["ring_error_max_sampled"] > 1.0
    assert (out.run_dir / "ring_error.png").is_file()
    manifest = json.loads((out.run_dir / "manifest.json").read_text())["info"]
    assert manifest["levels"][0]["point_loads"] == "conservative"
    info = manifest["kratos"]
    assert info["kratos_version"].startswith("10.4.")
    assert info["applications"]["KratosMPMApplication"].startswith("10.4.")
    assert info["threads"] == 1 and info["omp_num_threads"] == "1"
    assert (out.run_dir / "level0" / "kratos.log").stat().st_size > 0  # the banner went there, not to stdout


def test_lt_kratos_uniform_closed_form(tmp_path):
    """Uniform pressure on a cylinder on a frictionless base: uniaxial stress, u_z = -p z/E, u_r = nu p r/E."""
    ex = _uniform_file(tmp_path)
    loads = read_meridian_loads(ex.path)
    mpm = run_mpm(BODY, STATIC, loads, log_path=tmp_path / "kratos.log")
    x0, u = mpm.x0, mpm.u_hist[-1]
    exact = np.stack([NU * P * x0[:, 0] / E, -P * x0[:, 1] / E], axis=1)
    assert np.max(np.abs(u - exact)) <= 1e-9 * P * BODY.height / E
    r = mpm.records  # uniform pressure: the sampled ring value is exact, F = p pi R^2
    assert r["F_B"][0] == pytest.approx(P * np.pi * BODY.radius**2, rel=1e-12)
    assert r["F_M"][0] == pytest.approx(P * np.pi * BODY.radius**2, rel=1e-12)
    _, fe = W.fe_static(BODY, loads, STATIC)
    idx = W.match_gauss(x0, fe.x, 1e-12)
    assert np.max(np.abs(fe.u[idx] - exact)) <= 1e-9 * P * BODY.height / E
    assert np.max(np.abs(fe.stress[:, 1] + P)) <= 1e-9 * P  # sigma_zz = -p, the rest zero
    assert np.max(np.abs(fe.stress[:, [0, 2, 3]])) <= 1e-9 * P


def test_lt_kratos_condition_mismatch_names_first_id(tmp_path):
    table = W.top_face_table(BODY)
    table.loc[3, "x0"] += 1.0e-4  # condition id 4 moved (areas unchanged: the export accepts it)
    table.loc[5, "x0"] += 1.0e-4
    ex = _uniform_file(tmp_path, table)
    loads = read_meridian_loads(ex.path)
    good = W.top_face_table(BODY)
    points = np.stack([good["x0"], good["z0"]], axis=1)
    with pytest.raises(LoadsFileError, match=r"condition id 4 at .* no Kratos point-load condition .*2 unmatched"):
        run_mpm(BODY, STATIC, loads, load_points=points, log_path=tmp_path / "kratos.log")


def _scaled_copy(src_path, dst, factor):
    d = read_kratos_loads(src_path)
    a = d["attrs"]
    return write_kratos_loads(
        dst, case_id="scaled", time=d["source/time"], radial_edges=d["source/radial_edges"],
        source_pressure=d["source/pressure_gauge"], ids=d["conditions/ids"],
        coordinates=d["conditions/coordinates_initial"], areas=d["conditions/tributary_area"],
        normals=d["conditions/outward_normal"], condition_pressure=lambda sl: factor * d["loads/pressure_gauge"][sl],
        r_map=a["r_map"], axis_origin=(a["axis_origin_x"], a["axis_origin_y"]), mapping_method=a["mapping_method"],
        source_schema_version=a["source_schema_version"], source_sha256=a["source_sha256"], metadata=d["metadata"],
        mode="debug").path


def test_lt_kratos_mapping_error_aborts(tmp_path):
    ex = _uniform_file(tmp_path)
    bad = _scaled_copy(ex.path, tmp_path / "scaled", 1.05)  # applied loads 5 % above the source
    loads = read_meridian_loads(bad)
    with pytest.raises(MappingAbort, match="step 1 .*above 2%") as info:
        run_mpm(BODY, STATIC, loads, log_path=tmp_path / "kratos.log")
    assert info.value.e_F == pytest.approx(0.05, rel=1e-9) and info.value.step == 1
    mpm = run_mpm(BODY, STATIC, loads, fail_above=0.1, log_path=tmp_path / "kratos.log")  # same file, 10 % gate
    assert mpm.records["e_F"][-1] == pytest.approx(0.05, rel=1e-9)
    assert np.max(np.abs(mpm.u_hist[-1][:, 1] + 1.05 * P * mpm.x0[:, 1] / E)) <= 1e-9 * P * BODY.height / E


def test_lt_kratos_bad_params(harness_env):
    out = run_case("load_transfer/kratos_static", overrides=["case.params.solver=implicit"], tracking_uri=None)
    assert out.status == "invalid" and out.exit_code == 2 and "case.params.solver" in out.message
    out = run_case("load_transfer/kratos_static", overrides=["case.params.body.nu=0.5"], tracking_uri=None)
    assert out.status == "invalid" and "case.params.body.nu" in out.message


def test_lt_kratos_abort_through_the_harness(harness_env, monkeypatch):
    """Loads 5 % above the source: the process aborts at step 1 and the case fails its e_F gate (exit 1)."""
    import dataclasses

    import models.load_transfer.kratos.loads as L

    base = run_case("load_transfer/kratos_static", tracking_uri=None)  # F_M / F_B of the unscaled loads
    ratio = 1.0 + base.metrics["e_F"] * np.sign(base.metrics["J_M"] - base.metrics["J_B"])
    real = L.read_meridian_loads

    def scaled(path, **kw):
        loads = real(path, **kw)
        return dataclasses.replace(loads, forces=1.05 * loads.forces)

    monkeypatch.setattr(L, "read_meridian_loads", scaled)
    out = run_case("load_transfer/kratos_static", tracking_uri=None)
    assert out.status == "ok" and out.verdict == "fail" and out.exit_code == 1
    assert out.gates["e_F"] == "fail" and out.metrics["aborted_step"] == 1.0
    assert out.metrics["e_F"] == pytest.approx(1.05 * ratio - 1.0, rel=1e-9)


def test_lt_kratos_sampled_case_is_not_conservative(harness_env):
    """The sampled option: e_F ~ 5e-3 through Kratos (production band), the same body as the conservative case."""
    out = run_case("load_transfer/kratos_static_sampled", tracking_uri=None)
    assert out.status == "ok" and out.verdict == "pass", (out.metrics, out.gates)
    assert 1e-3 < out.metrics["e_F"] < 0.01 and out.metrics["u_l2_rel_diff"] <= 1e-6
    assert json.loads((out.run_dir / "manifest.json").read_text())["info"]["levels"][0]["point_loads"] == "sampled"
    coarse = ["case.params.body.nr=1", "case.params.source.n_rings=2"]
    cons = run_case("load_transfer/kratos_static", overrides=coarse, tracking_uri=None)  # conservative: any table
    assert cons.verdict == "pass" and cons.metrics["e_F"] <= 1e-12, cons.metrics


def test_lt_kratos_export_refuses_coarse_table(harness_env):
    """2 load points sampling 2 rings of the parabolic profile: F_M = 1.510 p0 R^2 against pi/2 p0 R^2
    (e_F = 3.9 %): the export refuses the file; the case fails e_F."""
    out = run_case("load_transfer/kratos_static", overrides=["case.params.body.nr=1", "case.params.source.n_rings=2",
                                                             "case.params.point_loads=sampled"],
                   tracking_uri=None)
    assert out.status == "ok" and out.verdict == "fail" and out.metrics["export_refused"] == 1.0
    g = np.array([-1.0, 1.0]) / np.sqrt(3.0)
    r = 0.5 + 0.5 * g  # Gauss points of [0, R] / R; ring averages 7/8 p0 (inner half), 3/8 p0 (outer half)
    F_M = np.sum(np.array([7 / 8, 3 / 8]) * 2 * np.pi * r * 0.5)
    assert out.metrics["e_F"] == pytest.approx(abs(F_M - np.pi / 2) / (np.pi / 2), rel=1e-9)
    assert out.gates["e_F"] == "fail"
    info = json.loads((out.run_dir / "manifest.json").read_text())["info"]
    assert info["kratos"]["kratos_version"].startswith("10.4.")
    assert not list(out.run_dir.glob("level0/*.kratos-loads.v1.h5"))  # no file left behind
