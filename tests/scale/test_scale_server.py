"""tracking=server against a real `mlflow server` on loopback; offline runs and the sync command."""
from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient


def _children(client, parent_id):
    parent = client.get_run(parent_id)
    return parent, client.search_runs([parent.info.experiment_id],
                                      filter_string=f"tags.mlflow.parentRunId = '{parent_id}'")


def test_server_sweep_records_parent_children_and_artifacts(mlflow_server, server_sweep):
    out, sweep, state, res = server_sweep
    assert "study sweep  PASS  jobs=4 failed=0" in res.stdout
    assert state["tracking_uri"] == mlflow_server
    client = MlflowClient(mlflow_server)
    parent, children = _children(client, state["parent_run_id"])
    assert parent.info.status == "FINISHED" and len(children) == 4
    for job in range(4):
        outcome = json.loads((sweep / str(job) / "outcome.json").read_text())
        child = client.get_run(outcome["mlflow_run_id"])
        assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert child.data.metrics["e_F"] == outcome["metrics"]["e_F"]
        names = {a.path for a in client.list_artifacts(child.info.run_id)}
        assert {"manifest.json", "metrics.json", "config.yaml", "forces.json", "fig_force_error.png"} <= names
    # the artifacts went through the server into its artifact root
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} >= {"table.csv", "study.json"}


def test_unreachable_server_keeps_run_directories_and_sync_uploads_them_once(mlflow_server, tmp_path, sc):
    out = tmp_path / "outputs"
    dead = f"http://127.0.0.1:{sc.free_port()}"  # nothing listens there
    res = sc.harness(["-m", *sc.SMALL, "source.n_rings=4,8,12", "tracking=server", f"tracking.uri={dead}",
                      "tracking.timeout_s=1"], out)
    assert res.returncode == 2, res.stdout + res.stderr  # 2: records not sent
    assert "study sweep  PASS  jobs=3 failed=0" in res.stdout and "unsent=3" in res.stdout
    gone = f"tracking store {dead} unreachable"
    assert gone not in res.stdout and res.stderr.count(gone) == 1 + 3, res.stderr  # parent + jobs, once each
    sweep = sc.latest_sweep(out)
    for job in range(3):
        d = sweep / str(job)
        for name in ("metrics.json", "manifest.json", "config.yaml", "forces.json", "fig_force_error.png"):
            assert (d / name).is_file(), (d, name)
        assert json.loads((d / "tracking.json").read_text())["state"] == "unsent"
        manifest = json.loads((d / "manifest.json").read_text())
        assert {o["path"] for o in manifest["outputs"]} >= {"metrics.json", "forces.json", "fig_force_error.png"}

    first = sc.harness(["--uri", mlflow_server, str(out)], out, module="harness.sync")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "sync: sent=3 parents=1 already_recorded=0 failed=0" in first.stdout
    state = json.loads((sweep / "study_state.json").read_text())
    client = MlflowClient(mlflow_server)
    parent, children = _children(client, state["parent_run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["verdict"] == "pass" and len(children) == 3
    for job in range(3):
        d = sweep / str(job)
        record = json.loads((d / "tracking.json").read_text())
        assert record["state"] == "sent"
        child = client.get_run(record["run_id"])
        metrics = json.loads((d / "metrics.json").read_text())["metrics"]
        assert {k: child.data.metrics[k] for k in metrics} == metrics
        assert child.data.params["source.n_rings"] == str([4, 8, 12][job])
        assert json.loads((d / "outcome.json").read_text())["status"] == "ok"
        uploaded = client.download_artifacts(record["run_id"], "outcome.json", str(tmp_path))
        assert json.loads(open(uploaded).read())["mlflow_run_id"] == record["run_id"]

    again = sc.harness(["--uri", mlflow_server, str(out)], out, module="harness.sync")
    assert "sync: sent=0 parents=0 already_recorded=3 failed=0" in again.stdout
    # also when the local marks are ignored, the uid tags stop any duplicate
    recheck = sc.harness(["--recheck", "--uri", mlflow_server, str(out)], out, module="harness.sync")
    assert "sync: sent=0 parents=0 already_recorded=3 failed=0" in recheck.stdout
    uids = [json.loads((sweep / str(j) / "tracking.json").read_text())["run_uid"] for j in range(3)]
    for uid in uids + [state["run_uid"]]:
        hits = client.search_runs([parent.info.experiment_id], filter_string=f"tags.`harness.run_uid` = '{uid}'")
        assert len(hits) == 1, uid


def test_sync_reports_a_store_that_is_still_down(tmp_path, sc):
    out = tmp_path / "outputs"
    dead = f"http://127.0.0.1:{sc.free_port()}"
    res = sc.harness([*sc.SMALL, "source.n_rings=4", "tracking=server", f"tracking.uri={dead}",
                      "tracking.timeout_s=1"], out)
    assert res.returncode == 2
    again = sc.harness([str(out)], out, module="harness.sync")
    assert again.returncode == 1 and "failed=1" in again.stdout and "unreachable" in again.stdout
    run_dir = next(out.glob("runs/load_transfer/sign/*"))
    assert json.loads((run_dir / "tracking.json").read_text())["state"] == "unsent"
