"""The smoke selection (marker ``newest``): one case per family, a suite on the basic and the joblib
launchers, a study, tracking local and none.

It runs in the whole suite, and ``.ci/run`` runs it again in a second virtual environment where the
runtime dependencies and hydra-joblib-launcher are at their newest releases (``pip install -U
--upgrade-strategy eager``; no Ray launcher there, whose ``cloudpickle<3`` cap holds joblib back).
"""
from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.configs import RegressionConf

pytestmark = pytest.mark.newest

ROOT = Path(__file__).resolve().parents[2]
ONE_PER_FAMILY = ["load_transfer/sign", "dem/linear_spring_impact", "vessel/surge_linear_decay",
                  "beam/cantilever_tip_load", "integrators/rlc6_cvode"]


# the metrics a regression check leaves out as timings (gate.regression.timing_patterns)
TIMINGS = [*RegressionConf().timing_patterns, "*time*", "*warmup*"]


def harness(args, outputs: Path, env=None, timeout: float = 600) -> subprocess.CompletedProcess:
    full = dict(os.environ, HARNESS_OUTPUTS=str(outputs), CI="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=timeout)


def verdict_line(stdout: str, case: str) -> str:
    return next(ln for ln in stdout.splitlines() if ln.startswith(case + " "))


@pytest.mark.parametrize("case", ONE_PER_FAMILY)
def test_one_case_per_family_passes_and_is_recorded(case, harness_env):
    res = harness([f"+case={case}"], harness_env)
    assert res.returncode == 0, res.stderr[-2000:]
    line = verdict_line(res.stdout, case)
    assert "  PASS  " in line
    run_id = line.rsplit("run=", 1)[1].strip()
    assert len(run_id) == 32  # recorded in the local sqlite store
    from harness.tracking import records as tracking

    run = tracking.client(f"sqlite:///{harness_env}/mlflow.db").get_run(run_id)
    assert run.data.tags["verdict"] == "pass" and run.data.tags["case"] == case


def test_a_case_without_tracking_keeps_its_run_directory(tmp_path):
    res = harness(["+case=load_transfer/sign", "tracking=none"], tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    line = verdict_line(res.stdout, "load_transfer/sign")
    assert "  PASS  " in line and line.endswith("run=-")
    assert not (tmp_path / "mlflow.db").exists()
    metrics = list(tmp_path.rglob("metrics.json"))
    assert len(metrics) == 1 and json.loads(metrics[0].read_text())["verdict"] == "pass"


def _suite_rows(outputs: Path):
    suite_dir = sorted((outputs / "suites" / "smoke").iterdir())[-1]
    doc = json.loads((suite_dir / "suite.json").read_text())
    return {r["case"]: (r["status"], r["verdict"], r["metrics"]) for r in doc["rows"]}, suite_dir


def test_the_smoke_suite_gives_the_same_rows_on_the_basic_and_the_joblib_launcher(tmp_path_factory):
    basic_out, joblib_out = tmp_path_factory.mktemp("basic"), tmp_path_factory.mktemp("joblib")
    basic = harness(["suite=smoke"], basic_out)
    parallel = harness(["suite=smoke", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], joblib_out)
    assert basic.returncode == 0, basic.stderr[-2000:]
    assert parallel.returncode == 0, parallel.stderr[-2000:]
    rows_basic, basic_dir = _suite_rows(basic_out)
    rows_joblib, joblib_dir = _suite_rows(joblib_out)
    assert len(rows_basic) == 3 and set(rows_basic) == set(rows_joblib)
    for case, (status, verdict, metrics) in rows_basic.items():
        j_status, j_verdict, j_metrics = rows_joblib[case]
        assert (status, verdict) == ("ok", "pass") == (j_status, j_verdict), case
        for name, value in metrics.items():
            if any(fnmatch.fnmatchcase(name, p) for p in TIMINGS):
                continue  # timings differ from run to run
            assert j_metrics[name] == pytest.approx(value, rel=1e-12, abs=1e-300, nan_ok=True), (case, name)
    for suite_dir in (basic_dir, joblib_dir):
        assert (suite_dir / "junit.xml").is_file() and (suite_dir / "dashboard.html").is_file()


def test_a_refinement_study_finds_the_order_of_ros2(harness_env):
    res = harness(["-m", "+case=integrators/linear_ros2", "+study=integrators/fixed_step_order"], harness_env)
    assert res.returncode == 0, res.stderr[-2000:]
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("study integrators/fixed_step_order"))
    assert "PASS" in line and "jobs=4 failed=0" in line
    order = float(line.split("observed_order=", 1)[1].split()[0])
    assert abs(order - 2.0) < 0.05  # ROS2 is second order
