"""bench/suite_overhead records what it measured (the targets are the gate's business)."""
from __future__ import annotations

import json
import os

import pytest

FULL = os.environ.get("HARNESS_FULL") == "1"


@pytest.mark.slow
def test_suite_overhead_benchmark(harness_env):
    from harness.api import run_case

    small = [] if FULL else ["case.params.suite=smoke"]
    out = run_case("bench/suite_overhead", overrides=["tracking=none", *small])
    assert out.status == "ok", out.message
    m = out.metrics
    assert m["n_cases"] == (3 if not FULL else m["n_cases"]) and m["suite_exit_code"] == 0
    # the efficiency is the ratio of the quantities it is made of, all measured in this run
    assert m["parallel_efficiency"] == pytest.approx(m["case_wall_sum_s"] / (2 * m["jobs_span_s"]))
    assert 0 < m["parallel_efficiency"] <= 1.0 + 1e-9 and 0 < m["model_efficiency"] < 1
    assert m["bookkeeping_s"] == pytest.approx(sum(v for k, v in m.items() if k.startswith("stage_")
                                                   and k != "stage_mlflow_import_s"))
    assert m["suite_wall_s"] > m["jobs_span_s"] > 0
    bench = json.loads((out.run_dir / "bench.json").read_text())
    assert "hydra/launcher=joblib" in bench["command"]
