"""The file cases (conf/case/load_transfer/files) and the export benchmark run through the harness."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from harness import run_case
from harness.core.compose import available_cases

FILE_CASES = [c for c in available_cases() if c.startswith("load_transfer/files/")]


def test_all_file_cases_are_listed():
    assert sorted(c.rsplit("/", 1)[1] for c in FILE_CASES) == sorted(
        ["round_trip", "read_versions", "reject_major", "bad_files", "amr_no_double_count", "shear_axis",
         "debug_map", "export_production"])


@pytest.mark.parametrize("case", FILE_CASES)
def test_file_case_passes(harness_env, case):
    out = run_case(case, overrides=["tracking=none"])
    assert out.status == "ok", out.message
    assert out.verdict == "pass", {k: (out.metrics.get(k), v) for k, v in out.gates.items()}


def test_export_case_production_gates(harness_env):
    out = run_case("load_transfer/files/export_production", overrides=["tracking=none"])
    m = out.metrics
    # e_F recomputed by the case from the written diagnostics equals the exporter's own value
    assert m["e_F"] == pytest.approx(m["e_F_export"], rel=1e-9) and 1e-5 < m["e_F"] < 0.01
    assert m["coarse_exit_code"] == 1.0 and m["coarse_files_left"] == 0.0
    # a table between the coarse and the fine one: 1 % < e_F <= 2 % -> warn; coarser -> fail
    warn = run_case("load_transfer/files/export_production", overrides=["tracking=none", "case.params.table_n_radial=14"])
    assert 0.01 < max(warn.metrics["e_F"], warn.metrics["e_J"]) <= 0.02 and warn.verdict == "warn", warn.metrics
    bad = run_case("load_transfer/files/export_production", overrides=["tracking=none", "case.params.table_n_radial=6"])
    assert bad.verdict == "fail" and bad.exit_code == 1 and bad.metrics["e_F"] > 0.02


def test_bad_files_case_records_every_message(harness_env):
    out = run_case("load_transfer/files/bad_files", overrides=["tracking=none"])
    data = json.loads((out.run_dir / "bad_files.json").read_text())
    assert all(v["ok"] for v in data["kinds"].values()) and data["interrupted_leftovers"] == []
    assert out.metrics["kinds"] == len(data["kinds"]) >= 19


def test_bad_case_params_exit_2(harness_env):
    out = run_case("load_transfer/files/round_trip", overrides=["tracking=none", "+case.params.table_n_theta=0"])
    assert out.exit_code == 2 and "case.params.table_n_theta: must be >= 1" in out.message


def test_wall_loads_file_source_feeds_the_conservative_cases(harness_env, tmp_path):
    """conf/source/wall_loads_file: a file written by the extraction is the source of an analytic case."""
    from models.load_transfer.extraction import synthetic_metadata, synthetic_wall_run

    run = synthetic_wall_run(length=1.0, n_rings=16, n_outputs=11, t_end=1.0)
    path = run.extractor.write(tmp_path, case_id="src", metadata=synthetic_metadata(run), configuration="x: 1\n")
    out = run_case("load_transfer/uniform_pressure",
                   overrides=["tracking=none", "source=wall_loads_file", f"source.path={path}", "integrator.dt=0.01"])
    assert out.status == "ok", out.message
    assert out.verdict == "pass" and out.metrics["e_F"] < 1e-10
    F_exact_peak = math.pi * run.p0 / 2.0
    assert out.metrics["F_M_max"] <= F_exact_peak * (1 + 1e-12)


def test_validate_cli_exit_codes(tmp_path):
    from harness.tools.validate import main
    from models.load_transfer.contracts.corrupt import make_bad_file
    from models.load_transfer.extraction import synthetic_metadata, synthetic_wall_run

    run = synthetic_wall_run(n_rings=6, n_outputs=5)
    good = run.extractor.write(tmp_path, case_id="g", metadata=synthetic_metadata(run), configuration="x: 1\n")
    bad = make_bad_file(good, tmp_path / "bad.h5", "nan")
    assert main([str(good)]) == 0 and main([str(good), str(bad)]) == 1
    (tmp_path / "junk.h5").write_text("x")
    assert main([str(tmp_path / "junk.h5")]) == 2 and main([str(tmp_path / "missing.h5")]) == 2
    proc = subprocess.run([sys.executable, "-m", "harness.validate", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout.strip() == (f"{bad}: fields/pressure_gauge: finite: found 1 non-finite value(s), first nan at "
                                   "index (1, 2); expected finite values")


@pytest.mark.slow
def test_export_benchmark_reduced(harness_env):
    out = run_case("bench/export", overrides=["tracking=none"])
    assert out.status == "ok", out.message
    m = out.metrics
    assert m["export_seconds"] > 0 and m["raw_h5py_seconds"] > 0 and np.isfinite(m["ratio_to_raw_h5py"])
    assert m["peak_over_point_force"] < 1.0  # streamed: never all of loads/point_force in memory
    assert m["e_F"] < 1e-10
