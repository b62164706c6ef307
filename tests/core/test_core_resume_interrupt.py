"""``python -m harness resume`` after a live interruption, on joblib, of a validation study.

A validation study (DEM contact time, 2 points x 3 Latin hypercube samples = 6 jobs, on
CONSTRUCTED test data) runs on ``hydra/launcher=joblib`` with 2 workers; once two jobs have
finished and another is running its case, SIGINT goes to the launching process group (Ctrl-C in a
terminal). The resume reruns only the jobs without a finished outcome, in the same directory and
parent run, and the study equals an uninterrupted run's; a run the interrupted attempt left is
kept, tagged ``harness.superseded_by`` and left out of compare and the report (the last test
checks that tagging on a real store without the race of a live interrupt).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from mlflow.tracking import MlflowClient

from harness.studies.superseded import TAG
from tests.conftest import stop_group

ROOT = Path(__file__).resolve().parents[2]
STUDY = ["+case=dem/hertz_sphere_wall", "+study=dem/contact_time_validation",
         "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
N_JOBS = 6


def _env(out: Path) -> dict:
    return dict(os.environ, HARNESS_OUTPUTS=str(out), CI="1")


def _harness(args, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, env=_env(out),
                          capture_output=True, text=True, timeout=600)


def _sweep(out: Path) -> Path:
    return sorted(p for p in (out / "sweeps").glob("*/*/*") if p.is_dir())[-1]


def _finished(job_dir: Path) -> bool:
    f = job_dir / "outcome.json"
    return f.is_file() and json.loads(f.read_text())["status"] not in ("error", "interrupted", "skipped")


def _running_after_two_done(out: Path) -> bool:
    """Two jobs finished and another one runs its case (its config.yaml written, no outcome yet)."""
    sweeps = list((out / "sweeps").glob("*/*/*")) if (out / "sweeps").is_dir() else []
    if not sweeps:
        return False
    s = sweeps[0]
    done = sum((s / str(j) / "outcome.json").is_file() for j in range(N_JOBS))
    started = any((s / str(j) / "config.yaml").is_file() and not (s / str(j) / "outcome.json").exists()
                  for j in range(N_JOBS))
    return done >= 2 and started


def _interrupt(out: Path, log: Path) -> subprocess.Popen:
    with open(log, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "harness", "-m", *STUDY], cwd=ROOT, env=_env(out),
                                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not _running_after_two_done(out):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the launching process and its joblib workers
        proc.wait(timeout=120)
    finally:
        stop_group(proc)
    return proc


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """An uninterrupted study, an interrupted one and its resume, with what was seen in between."""
    base = tmp_path_factory.mktemp("resume_interrupt")
    ref = _harness(["-m", *STUDY], base / "ref")
    assert ref.returncode == 0, ref.stderr[-3000:]
    out, log = base / "out", base / "interrupted.log"
    proc = _interrupt(out, log)
    sweep = _sweep(out)
    state = json.loads((sweep / "study_state.json").read_text())
    client = MlflowClient(state["tracking_uri"])
    seen = SimpleNamespace(
        code=proc.returncode, log=log.read_text(), parent_status=client.get_run(state["parent_run_id"]).info.status,
        finished={j: (sweep / str(j) / "outcome.json").stat().st_mtime_ns for j in range(N_JOBS)
                  if _finished(sweep / str(j))})
    res = _harness(["resume", str(sweep)], out)
    return SimpleNamespace(ref=json.loads((_sweep(base / "ref") / "study" / "study.json").read_text()), sweep=sweep,
                           state=state, client=client, seen=seen, res=res, out=out)


def test_an_interrupted_validation_study_resumes_to_the_uninterrupted_result(resumed):
    r, seen = resumed, resumed.seen
    assert seen.code == 130 and "harness: interrupted (SIGINT)" in seen.log, seen.log[-3000:]
    assert seen.parent_status == "KILLED"
    rerun = sorted(set(range(N_JOBS)) - set(seen.finished))
    assert 2 <= len(seen.finished) < N_JOBS
    assert r.res.returncode == 0, r.res.stdout[-3000:] + r.res.stderr[-3000:]
    assert f"rerunning {len(rerun)} job(s) {rerun}" in r.res.stderr
    assert r.res.stdout.count("dem/hertz_sphere_wall  PASS") == len(rerun)
    # the finished jobs were not run again
    assert {j: (r.sweep / str(j) / "outcome.json").stat().st_mtime_ns for j in seen.finished} == seen.finished
    study = json.loads((r.sweep / "study" / "study.json").read_text())
    assert study["n_jobs"] == N_JOBS and study["n_failed"] == 0 and study["verdict"] == r.ref["verdict"]
    assert set(study["metrics"]) == set(r.ref["metrics"])
    for k, v in r.ref["metrics"].items():
        assert study["metrics"][k] == pytest.approx(v, rel=1e-12, abs=1e-15), k
    got = {(p["point"], p["quantity"]): p for p in study["validation"]["points"]}
    want = {(p["point"], p["quantity"]): p for p in r.ref["validation"]["points"]}
    assert set(got) == set(want) and len(got) == 2
    for key, p in want.items():
        for col in ("S", "E", "u_input", "u_val", "E_over_u_val"):
            assert got[key][col] == pytest.approx(p[col], rel=1e-12), (key, col)
        assert got[key]["verdict"] == p["verdict"] and got[key]["n_samples"] == 3
    parent = r.client.get_run(r.state["parent_run_id"])  # the same parent run, completed
    assert parent.info.status == "FINISHED" and parent.data.tags["n_jobs"] == str(N_JOBS)


def test_the_replaced_attempts_runs_are_kept_tagged_and_left_out(resumed):
    from harness.studies import report
    from harness.suites.baseline import _children

    r = resumed
    parent = r.client.get_run(r.state["parent_run_id"])
    kids = r.client.search_runs([parent.info.experiment_id],
                                filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    current = {json.loads((r.sweep / str(j) / "outcome.json").read_text())["mlflow_run_id"]: j for j in range(N_JOBS)}
    new_of = {str(r.sweep / str(j)): rid for rid, j in current.items()}
    old = [k for k in kids if k.info.run_id not in current]
    # the runs the replaced attempts recorded: the job running at the interrupt records its
    # interrupted attempt unless joblib stops its worker first (a race: seen both ways here)
    recorded = {json.loads(f.read_text()).get("mlflow_run_id") for f in r.sweep.glob(".resumed/*/*/outcome.json")}
    assert recorded - {None} <= {k.info.run_id for k in old}  # each kept, none deleted
    rerun = {str(r.sweep / str(j)) for j in range(N_JOBS) if j not in r.seen.finished}
    for k in old:  # an attempt of a rerun job (no other stray run), named the run that replaced it, not RUNNING
        assert k.data.tags["run_dir"] in rerun and k.data.tags[TAG] == new_of[k.data.tags["run_dir"]]
        assert k.data.tags["status"] == "interrupted" and k.info.status in ("KILLED", "FAILED")
    assert all(TAG not in k.data.tags and k.info.status == "FINISHED" for k in kids if k.info.run_id in current)
    assert {k.info.run_id for k in _children(r.client, parent)} == set(current)  # what compare/baseline read
    html = report.build(r.sweep)
    assert all(rid in html for rid in current) and not any(k.info.run_id in html for k in old)
    assert "Slurm jobs" not in html  # a joblib sweep: no Slurm section


def test_resume_refuses_a_sweep_that_changed_since_it_ran(resumed, tmp_path):
    """A finished job whose overrides differ from what the sweep now gives it (the data or the
    study changed): one line naming the file, exit 2, nothing moved, the parent run untouched."""
    sweep = tmp_path / resumed.sweep.name
    shutil.copytree(resumed.sweep, sweep)
    f = sweep / "0" / ".hydra" / "overrides.yaml"
    ran = yaml.safe_load(f.read_text())
    ran = [o.replace("source.E=", "source.E=1") if o.startswith("source.E=") else o for o in ran]
    f.write_text(yaml.safe_dump(ran))
    (sweep / "5" / "outcome.json").unlink()  # a job to rerun, were the sweep the same
    moved_before = sorted(p.relative_to(sweep) for p in (sweep / ".resumed").glob("*/*"))
    res = _harness(["resume", str(sweep)], resumed.out)
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    err = [ln for ln in res.stderr.splitlines() if ln.startswith("harness: error:")]
    assert len(err) == 1 and err[0].startswith(f"harness: error: {f}: job 0 ran with other overrides")
    assert "source.E=" in err[0] and "Traceback" not in res.stderr
    assert sorted(p.relative_to(sweep) for p in (sweep / ".resumed").glob("*/*")) == moved_before
    assert (sweep / "5" / "config.yaml").is_file() and not (sweep / "5" / "outcome.json").exists()
    assert resumed.client.get_run(resumed.state["parent_run_id"]).info.status == "FINISHED"


def test_mark_ends_a_run_left_running_and_leaves_a_job_without_a_new_run_untagged(tmp_path):
    """harness.studies.superseded.mark on a real sqlite store: an attempt whose worker died while
    recording (RUNNING) is tagged and ended KILLED; a rerun job that recorded nothing leaves its
    earlier run untagged; a second call changes nothing."""
    from harness.studies import superseded
    from harness.tracking import records as tracking

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sweep = tmp_path / "sweep"
    exp = tracking.ensure_experiment(uri, "harness/test", str(tmp_path / "art"))
    parent = tracking.start_run(uri, exp, "study:x")
    runs = {}
    for name, job in (("old0", 0), ("new0", 0), ("old1", 1)):
        runs[name] = tracking.start_run(uri, exp, name, parent_run_id=parent)
        tracking.log_batch(uri, runs[name], tags={"run_dir": str(sweep / str(job))})
    tracking.end_run(uri, runs["new0"], "FINISHED")
    (sweep / "0").mkdir(parents=True)
    (sweep / "0" / "outcome.json").write_text(json.dumps({"status": "ok", "mlflow_run_id": runs["new0"]}))
    (sweep / "1").mkdir()
    (sweep / "1" / "outcome.json").write_text(json.dumps({"status": "tracking_error", "mlflow_run_id": None}))
    (sweep / "study_state.json").write_text(json.dumps({"tracking_uri": uri, "parent_run_id": parent,
                                                        "resumed": [{"at": "x", "jobs": [0, 1]}]}))
    assert superseded.mark(sweep) == {runs["old0"]: runs["new0"]}
    c = MlflowClient(uri)
    old0, new0, old1 = (c.get_run(runs[n]) for n in ("old0", "new0", "old1"))
    assert old0.data.tags[TAG] == runs["new0"] and old0.info.status == "KILLED"
    assert TAG not in new0.data.tags and new0.info.status == "FINISHED"
    assert TAG not in old1.data.tags and old1.info.status == "RUNNING"
    assert superseded.mark(sweep) == {}
