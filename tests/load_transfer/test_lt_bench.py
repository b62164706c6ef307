"""The operator benchmark case runs and logs its ratios (no timed assertion)."""
import math

import pytest
from mlflow.tracking import MlflowClient

from harness import run_case

FULL = __import__("os").environ.get("HARNESS_FULL") == "1"


def bench_overrides():
    """Full size with HARNESS_FULL=1, else a reduced size that runs in seconds."""
    if FULL:
        return []
    return ["case.params.n_triangles=20000", "case.params.n_rings=200", "case.params.n_steps=1000",
            "case.params.n_knots=300"]


@pytest.mark.slow
def test_operator_bench_logs_ratios(harness_env, tracking_uri):
    out = run_case("bench/operator_apply", overrides=bench_overrides(), tracking_uri=tracking_uri)
    assert out.status == "ok", out.message
    for name in ("assembly_pieces_per_second", "per_step_ratio_to_bare_csr", "pipeline_seconds_per_step",
                 "bare_csr_seconds_per_step", "n_pieces"):
        assert math.isfinite(out.metrics[name]) and out.metrics[name] > 0, name
    assert out.gates["e_F"] == "pass"
    logged = MlflowClient(tracking_uri).get_run(out.mlflow_run_id).data.metrics
    assert logged["per_step_ratio_to_bare_csr"] == pytest.approx(out.metrics["per_step_ratio_to_bare_csr"])
