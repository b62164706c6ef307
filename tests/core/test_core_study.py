"""A three-level sweep: parent and child MLflow runs, the study table, the observed order."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parents[2]


def multirun(args, outputs):
    env = dict(os.environ, HARNESS_OUTPUTS=str(outputs))
    return subprocess.run([sys.executable, "-m", "harness", "-m", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def latest_sweep(outputs: Path, case: str) -> Path:
    return sorted((outputs / "sweeps" / case).iterdir())[-1]


def test_three_level_refinement_study(harness_env, tracking_uri):
    res = multirun(["+case=load_transfer/inscribed_surface", "+study=load_transfer/mesh_refinement"], harness_env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "study load_transfer/mesh_refinement  PASS  jobs=3 failed=0" in res.stdout
    sweep = latest_sweep(harness_env, "load_transfer/inscribed_surface")
    table = pd.read_csv(sweep / "study" / "table.csv")
    assert list(table["parameter"]) == [4.0, 8.0, 16.0]
    assert (table["status"] == "ok").all() and (table["e_F"] < 1e-10).all()
    study = json.loads((sweep / "study" / "study.json").read_text())
    p = study["metrics"]["observed_order"]
    assert abs(p - 2.0) <= 0.2, p
    # the fitted order equals the one recomputed from the table
    import math
    e = table["e_disk"].to_numpy()
    assert p == pytest.approx(math.log(e[1] / e[2]) / math.log(2.0), rel=1e-12)
    assert "gci_p" in study["metrics"]
    assert (sweep / "study" / "convergence.png").stat().st_size > 1000

    c = MlflowClient(tracking_uri)
    state = json.loads((sweep / "study_state.json").read_text())
    parent = c.get_run(state["parent_run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["verdict"] == "pass"
    assert parent.data.metrics["observed_order"] == pytest.approx(p)
    children = c.search_runs([parent.info.experiment_id],
                             filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert len(children) == 3
    assert sorted(ch.info.run_id for ch in children) == sorted(table["mlflow_run_id"])
    assert all("e_disk" in ch.data.metrics and ch.info.status == "FINISHED" for ch in children)
    assert {a.path for a in c.list_artifacts(parent.info.run_id)} >= {"table.csv", "study.json", "convergence.png"}


def test_a_failed_job_fails_the_study(harness_env, tracking_uri):
    res = multirun(["+case=load_transfer/sign",
                    "case.adapter=harness.families.load_transfer:run,harness.gates:exit_code"],
                   harness_env)
    assert res.returncode == 1, res.stdout + res.stderr
    sweep = latest_sweep(harness_env, "load_transfer/sign")
    table = pd.read_csv(sweep / "study" / "table.csv")
    assert sorted(table["status"]) == ["error", "ok"]
    state = json.loads((sweep / "study_state.json").read_text())
    parent = MlflowClient(tracking_uri).get_run(state["parent_run_id"])
    assert parent.info.status == "FAILED" and parent.data.tags["n_failed"] == "1"


def test_study_kind_by_module_and_function():
    from harness.studies import study_function
    from harness.families import load_transfer

    assert study_function("harness.families.load_transfer:bench_operator_apply", "dem") is load_transfer.bench_operator_apply
    assert study_function("bench_operator_apply", "load_transfer") is load_transfer.bench_operator_apply
    with pytest.raises(ValueError, match="neither built in nor a function of harness.families.dem"):
        study_function("nope", "dem")
    with pytest.raises(ValueError, match="cannot import 'harness.families.nosuch'"):
        study_function("harness.families.nosuch:f", "dem")
