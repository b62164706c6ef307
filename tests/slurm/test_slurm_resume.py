"""``python -m harness resume``: only the jobs that did not finish run again, in the same directory
and parent run, and the study equals an uninterrupted one; on Slurm and on joblib."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess

import pytest
from mlflow.tracking import MlflowClient

HOLD = 'hydra.launcher.setup=["case $SLURM_ARRAY_TASK_ID in [2-3]) sleep 600;; esac"]'


def _study(sweep):
    return json.loads((sweep / "study" / "study.json").read_text())


def _same_study(a, b):
    assert a["verdict"] == b["verdict"] and a["n_jobs"] == b["n_jobs"] and a["n_failed"] == b["n_failed"] == 0
    assert set(a["metrics"]) == set(b["metrics"])
    for k, v in b["metrics"].items():
        assert a["metrics"][k] == pytest.approx(v, rel=1e-12, abs=1e-15), k


def _children(uri, parent_id):
    client = MlflowClient(uri)
    parent = client.get_run(parent_id)
    return parent, client.search_runs([parent.info.experiment_id],
                                      filter_string=f"tags.mlflow.parentRunId = '{parent_id}'")


def test_resume_on_slurm_after_sigterm_by_parent_run_id(tmp_path, sl, empty_queue, local_study):
    out, log = tmp_path / "out", tmp_path / "log.txt"
    proc = sl.popen(["-m", *sl.STUDY, "hydra/launcher=slurm", HOLD], out, log)
    sl.wait_for("tasks 2 and 3 running", lambda: sl.running(2) and sl.running(3), 120)
    sweep = sl.latest_sweep(out)
    sl.wait_for("jobs 0 and 1 done", lambda: all((sweep / str(j) / "outcome.json").is_file() for j in (0, 1)), 120)
    kept = {j: (sweep / str(j) / "outcome.json").stat().st_mtime_ns for j in (0, 1)}
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=60)
    assert proc.returncode == 130, log.read_text()[-3000:]
    state = json.loads((sweep / "study_state.json").read_text())
    parent, _ = _children(state["tracking_uri"], state["parent_run_id"])
    assert parent.info.status == "KILLED" and sl.queue() == []
    # resume by the parent run's id (looked up in the sweep's store)
    res = sl.harness(["resume", state["parent_run_id"]], out)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "study integrators/fixed_step_order  PASS  jobs=4 failed=0" in res.stdout
    assert "rerunning 2 job(s) [2, 3]" in res.stderr
    assert {j: (sweep / str(j) / "outcome.json").stat().st_mtime_ns for j in (0, 1)} == kept  # not rerun
    _same_study(_study(sweep), local_study)
    parent, kids = _children(state["tracking_uri"], state["parent_run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["n_jobs"] == "4"
    outcome_ids = {json.loads((sweep / str(j) / "outcome.json").read_text())["mlflow_run_id"] for j in range(4)}
    assert outcome_ids <= {k.info.run_id for k in kids if k.info.status == "FINISHED"}
    # any run a cancelled attempt of job 2 or 3 left is kept and names the run that replaced it (here
    # they were cancelled in their setup line, before Python: no such run, and no other stray run)
    new_of = {str(sweep / str(j)): json.loads((sweep / str(j) / "outcome.json").read_text())["mlflow_run_id"]
              for j in range(4)}
    for k in kids:
        if k.info.run_id not in outcome_ids:
            assert k.data.tags["harness.superseded_by"] == new_of[k.data.tags["run_dir"]], k.data.tags
            assert k.data.tags["run_dir"] in (str(sweep / "2"), str(sweep / "3")) and k.info.status != "RUNNING"
    recs = [json.loads((sweep / str(j) / "slurm.json").read_text()) for j in (2, 3)]
    assert all(r["state"] == "COMPLETED" for r in recs)


def test_resume_on_joblib_reruns_the_missing_job(tmp_path, sl, local_study):
    """A job directory lost (a crashed node, a deleted folder): resume by directory reruns it alone."""
    out = tmp_path / "out"
    res = sl.harness(["-m", *sl.STUDY, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], out)
    assert res.returncode == 0, res.stderr[-3000:]
    sweep = sl.latest_sweep(out)
    state = json.loads((sweep / "study_state.json").read_text())
    shutil.rmtree(sweep / "3")
    kept = {j: (sweep / str(j) / "outcome.json").stat().st_mtime_ns for j in range(3)}
    res = sl.harness(["resume", str(sweep)], out)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "rerunning 1 job(s) [3]" in res.stderr and res.stdout.count("integrators/linear_ros2  PASS") == 1
    assert {j: (sweep / str(j) / "outcome.json").stat().st_mtime_ns for j in range(3)} == kept
    _same_study(_study(sweep), local_study)
    parent, _ = _children(state["tracking_uri"], state["parent_run_id"])
    assert parent.info.status == "FINISHED" and json.loads((sweep / "study_state.json").read_text())["resumed"]


def test_resume_of_something_else_is_one_line_and_exit_2(tmp_path, sl):
    res = sl.harness(["resume", str(tmp_path)], tmp_path)
    assert res.returncode == 2 and res.stderr.strip() == f"harness: error: {tmp_path}: not a sweep or suite " \
                                                          "directory (no multirun.yaml)"


def test_a_suite_with_a_cancelled_job_fails_names_it_and_resumes(tmp_path, sl, empty_queue):
    """suite=fast on its beam cases; the second job is cancelled while it runs: exit 1, the case's
    row names the Slurm job, the parent FAILED; resume by directory: the same parent FINISHED,
    every case passes as in an uninterrupted run."""
    out, log = tmp_path / "out", tmp_path / "log.txt"
    hold = 'hydra.launcher.setup=["case $SLURM_ARRAY_TASK_ID in 1) sleep 600;; esac"]'
    proc = sl.popen(["suite=fast", "suite.select.families=[beam]", "hydra/launcher=slurm", hold], out, log)
    jid = sl.wait_for("task 1 running", lambda: sl.running(1), 120)
    suite_dir = sorted((out / "suites" / "fast").iterdir())[-1]
    sl.wait_for("the other jobs done", lambda: sum((suite_dir / str(j) / "outcome.json").is_file()
                                                    for j in range(6)) == 5, 180)
    subprocess.run(["scancel", jid], check=True)
    proc.wait(timeout=120)
    text = log.read_text()
    assert proc.returncode == 1, text[-3000:]
    assert f"harness: lost job #1: Slurm job {jid} CANCELLED" in text
    summary = json.loads((suite_dir / "suite.json").read_text())
    assert summary["counts"]["cases"] == 6 and summary["counts"]["error"] == 1 and summary["counts"]["pass"] == 5
    lost = next(r for r in summary["rows"] if r["status"] == "error")
    assert lost["case"].startswith("beam/") and lost["message"].startswith(f"Slurm job {jid} CANCELLED")
    assert f"<code>{jid}</code>" in (suite_dir / "dashboard.html").read_text()
    parent, _ = _children(summary["tracking_uri"], summary["parent_run_id"])
    assert parent.info.status == "FAILED"
    res = sl.harness(["resume", str(suite_dir)], out)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "rerunning 1 job(s) [1]" in res.stderr
    summary = json.loads((suite_dir / "suite.json").read_text())
    assert summary["counts"]["cases"] == 6 and summary["counts"]["pass"] == 6 and summary["exit_code"] == 0
    assert summary["parent_run_id"] == parent.info.run_id
    assert _children(summary["tracking_uri"], parent.info.run_id)[0].info.status == "FINISHED"
