"""bench/suite_overhead records what it measured (the targets are the gate's business).

Reduced (CI): the `all` suite with three cases, one of which (vessel/integrator_cross_check)
runs with the suite's per-case override; HARNESS_FULL=1: suite=fast as configured.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

FULL = os.environ.get("HARNESS_FULL") == "1"
REDUCED = ["case.params.suite=all",
           "case.params.select_cases=[vessel/integrator_cross_check,load_transfer/sign,integrators/rlc6_cvode]"]


@pytest.mark.slow
def test_suite_overhead_benchmark(harness_env):
    from harness.core.api import run_case

    out = run_case("bench/suite_overhead", overrides=["tracking=none", *([] if FULL else REDUCED)])
    assert out.status == "ok", out.message
    m = out.metrics
    assert m["suite_exit_code"] == 0 and m["n_not_passed"] == 0
    if not FULL:
        assert m["n_cases"] == 3
    # the efficiency is the ratio of the quantities it is made of, all measured in this run
    assert m["parallel_efficiency"] == pytest.approx(m["case_wall_sum_s"] / (2 * m["jobs_span_s"]))
    assert 0 < m["parallel_efficiency"] <= 1.0 + 1e-9 and 0 < m["model_efficiency"] < 1
    assert m["bookkeeping_s"] == pytest.approx(sum(v for k, v in m.items() if k.startswith("stage_")
                                                   and k != "stage_mlflow_import_s"))
    assert m["suite_wall_s"] > m["jobs_span_s"] > 0
    bench = json.loads((out.run_dir / "bench.json").read_text())
    assert "hydra/launcher=joblib" in bench["command"]
    if not FULL:
        suite = json.loads((Path(bench["suite_dir"]) / "suite.json").read_text())
        row = next(r for r in suite["rows"] if r["case"] == "vessel/integrator_cross_check")
        assert "t_end: 3.0" in (Path(row["run_dir"]) / "config.yaml").read_text()  # conf/suite/all.yaml's override
