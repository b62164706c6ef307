"""Run directory records (metrics, manifest, config) and the MLflow run of one case."""
import hashlib
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
import yaml
from mlflow.tracking import MlflowClient

from harness import run_case
from harness.core.context import HarnessInputError
from harness.core.manifest import canonical_json

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def outcome(harness_env, tracking_uri):
    return run_case("load_transfer/triangular_pulse", overrides=["source.n_rings=20"], tracking_uri=tracking_uri)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_outcome_contract(outcome):
    assert outcome.verdict == "pass" and outcome.status == "ok" and outcome.exit_code == 0
    assert set(outcome.gates) == {"e_F", "e_J", "e_F_closed", "e_J_closed"}
    assert all(isinstance(v, float) for v in outcome.metrics.values())
    assert outcome.metrics["e_J"] < 1e-10 and outcome.metrics["e_F"] < 1e-10
    assert Path(outcome.run_dir).is_dir() and len(outcome.mlflow_run_id) == 32


def test_metrics_json(outcome):
    doc = json.loads((outcome.run_dir / "metrics.json").read_text())
    assert doc["verdict"] == "pass"
    assert doc["metrics"]["e_J"] == outcome.metrics["e_J"]
    assert doc["gates"]["e_J"]["band"]["pass_max"] == 1e-10 and doc["gates"]["e_J"]["verdict"] == "pass"


def test_manifest_fields(outcome):
    m = json.loads((outcome.run_dir / "manifest.json").read_text())
    assert m["case"] == "load_transfer/triangular_pulse" and m["verdict"] == "pass"
    assert "+case=load_transfer/triangular_pulse" in m["overrides"] and "source.n_rings=20" in m["overrides"]
    assert m["command"]
    cfg = m["config"]
    assert cfg["source"]["n_rings"] == 20
    runtime = ("paths", "tracking", "hydra", "suite")
    kept = {k: v for k, v in cfg.items() if k not in runtime}
    kept["gate"] = {k: v for k, v in kept["gate"].items() if k != "regression"}  # judging, not computing
    assert "regression" in cfg["gate"]
    assert m["config_sha256"] == hashlib.sha256(canonical_json(kept).encode()).hexdigest()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert m["git"]["commit"] == (head or "unknown") and isinstance(m["git"]["dirty"], (bool, type(None)))
    assert m["packages"]["numpy"] == np.__version__ and m["packages"]["mlflow"] == metadata.version("mlflow")
    assert m["platform"]["python"] == sys.version.split()[0]
    names = {r["path"]: r for r in m["outputs"]}
    for name in ("config.yaml", "metrics.json", "forces.json", "force.png"):
        assert names[name]["sha256"] == sha(outcome.run_dir / name), name
        assert names[name]["size"] == (outcome.run_dir / name).stat().st_size
    for stage in ("resolve", "run", "gates", "source", "operator", "time_average", "apply"):
        assert m["timings_s"][stage] >= 0.0, stage
    assert m["metrics"]["e_F"]["gate"]["verdict"] == "pass"
    assert m["metrics"]["e_F"]["gate"]["band"]["pass_max"] == 1e-10
    assert "gate" not in m["metrics"]["J_M"]


def test_resolved_config_file(outcome):
    cfg = yaml.safe_load((outcome.run_dir / "config.yaml").read_text())
    assert cfg["case"]["name"] == "load_transfer/triangular_pulse" and cfg["source"]["pulse"] == "triangular"


def test_mlflow_run(outcome, tracking_uri):
    c = MlflowClient(tracking_uri)
    run = c.get_run(outcome.mlflow_run_id)
    assert c.get_experiment(run.info.experiment_id).name == "harness/load_transfer"
    assert run.info.status == "FINISHED"
    assert run.data.params["source.n_rings"] == "20" and run.data.params["gate.name"] == "analytic"
    assert run.data.metrics["e_J"] == pytest.approx(outcome.metrics["e_J"], abs=0)
    m = json.loads((outcome.run_dir / "manifest.json").read_text())
    tags = run.data.tags
    assert tags["verdict"] == "pass" and tags["case"] == "load_transfer/triangular_pulse"
    assert tags["config_sha256"] == m["config_sha256"] and tags["git_commit"] == m["git"]["commit"]
    assert tags["git_dirty"] == str(m["git"]["dirty"])
    artifacts = {a.path for a in c.list_artifacts(outcome.mlflow_run_id)}
    assert {"manifest.json", "metrics.json", "config.yaml", "forces.json", "force.png", "series.json"} <= artifacts
    history = c.get_metric_history(outcome.mlflow_run_id, "F_M")
    assert len(history) == 100


def test_config_hash_follows_the_config_not_the_outputs(harness_env, tmp_path):
    a = run_case("load_transfer/sign", overrides=["tracking=none"])
    b = run_case("load_transfer/sign", overrides=["tracking=none", f"paths.outputs={tmp_path}"])
    c = run_case("load_transfer/sign", overrides=["tracking=none", "source.p0=2e5"])
    h = lambda o: json.loads((o.run_dir / "manifest.json").read_text())["config_sha256"]
    assert h(a) == h(b) != h(c)
    assert Path(b.run_dir).is_relative_to(tmp_path)


def test_crashing_model_is_a_recorded_failure(harness_env, tracking_uri):
    out = run_case("load_transfer/uniform_pressure", overrides=["case.adapter=harness.gates:exit_code"],
                   tracking_uri=tracking_uri)
    assert out.status == "error" and out.verdict == "fail" and out.exit_code == 1
    assert "TypeError" in out.message
    m = json.loads((out.run_dir / "manifest.json").read_text())
    assert m["status"] == "error" and "Traceback" in m["info"]["traceback"]
    assert MlflowClient(tracking_uri).get_run(out.mlflow_run_id).info.status == "FAILED"


def test_bad_input_inside_a_case_is_exit_2(harness_env):
    out = run_case("load_transfer/uniform_pressure", overrides=["tracking=none", "integrator.t0=-0.5"])
    assert out.status == "invalid" and out.exit_code == 2
    assert out.message.startswith("integrator: ") and "history" in out.message
    assert (out.run_dir / "manifest.json").is_file() and not list(out.run_dir.glob(".*.tmp"))


def test_unknown_case_raises_one_line(harness_env):
    with pytest.raises(HarnessInputError, match=r"unknown case 'load_transfer/nope'"):
        run_case("load_transfer/nope")


def test_log_batch_requests_fill_mlflows_limits():
    """A typical case run is one request; big records split within MLflow's per-request limits
    (100 params, 100 tags, 1000 entries) with nothing lost or repeated."""
    from harness.tracking.records import batches

    assert batches(range(40), range(30), range(8)) == [(list(range(40)), list(range(30)), list(range(8)))]
    p, m, t = [f"p{i}" for i in range(250)], [f"m{i}" for i in range(2500)], [f"t{i}" for i in range(130)]
    out = batches(p, m, t)
    for bp, bm, bt in out:
        assert len(bp) <= 100 and len(bt) <= 100 and len(bp) + len(bm) + len(bt) <= 1000
    assert [x for b in out for x in b[0]] == p and [x for b in out for x in b[1]] == m
    assert [x for b in out for x in b[2]] == t
    assert len(out) == 3  # 250 params need 3 requests; metrics and tags fill the room left


def test_big_records_reach_the_store_whole(tracking_uri, tmp_path):
    """250 params, 1,200 metrics (a 1,100-step series) and 120 tags through record_run: every
    value is in the store once."""
    from harness.tracking import records as tracking

    (tmp_path / "a.txt").write_text("x")
    params = {f"p{i}": str(i) for i in range(250)}
    metrics = {f"m{i}": float(i) for i in range(100)}
    tags = {f"t{i}": str(i) for i in range(120)}
    rid = tracking.record_run(uri=tracking_uri, artifact_root=None, experiment="test/big_records", run_name="big",
                              params=params, metrics=metrics, series={"s": [0.5 * k for k in range(1100)]},
                              tags=tags, artifacts_dir=tmp_path, status="FINISHED")
    c = MlflowClient(tracking_uri)
    run = c.get_run(rid)
    assert run.data.params == params
    assert {k: run.data.metrics[k] for k in metrics} == metrics
    assert all(run.data.tags[k] == v for k, v in tags.items())
    hist = c.get_metric_history(rid, "s")
    assert sorted((h.step, h.value) for h in hist) == [(k, 0.5 * k) for k in range(1100)]
