"""tracking=server against `mlflow server` on a real PostgreSQL, both started by the README's commands.

Single runs, a study (parent and children), a server stopped in the middle of a sweep and the
sync afterwards, and many writers at once: the README's 32-job sweep over two joblib workers
with a second sweep launched at the same time from another process.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest
from mlflow.tracking import MlflowClient


def test_readme_start_block_runs_postgres_behind_the_server(team_stack):
    """The server's store really is the PostgreSQL of the README (its tables live there)."""
    import psycopg2

    with psycopg2.connect(host="127.0.0.1", port=team_stack.pg_port, user="mlflow", dbname="mlflow",
                          password=team_stack.env["PGPASSWORD"], connect_timeout=10) as conn, conn.cursor() as cur:
        cur.execute("select count(*) from information_schema.tables where table_name in ('runs','experiments',"
                    "'metrics','params','tags')")
        assert cur.fetchone()[0] == 5
        cur.execute("select version_num from alembic_version")
        assert cur.fetchone()[0]  # the schema migrations ran to a version
    assert "postgresql+psycopg2://mlflow:" in (team_stack.base / "shell.log").read_text()


def test_single_run_and_study_are_recorded_on_the_postgres_server(team_stack, tmp_path, tm):
    out = tmp_path / "outputs"
    uri = team_stack.uri
    one = tm.harness([f"+case={tm.JOB}", "case.params.job=3", "tracking=server", f"tracking.uri={uri}"], out)
    assert one.returncode == 0, one.stdout + one.stderr
    run_id = re.search(r"run=([0-9a-f]{32})", one.stdout).group(1)
    client = MlflowClient(uri)
    run = client.get_run(run_id)
    run_dir = next(out.glob("runs/bench/tracking_job/*"))
    metrics = json.loads((run_dir / "metrics.json").read_text())["metrics"]
    assert run.info.status == "FINISHED" and run.data.tags["verdict"] == "pass"
    assert {k: run.data.metrics[k] for k in metrics} == metrics
    assert metrics["n_intervals"] == 11.0 and run.data.params["case.params.job"] == "3"
    assert {"manifest.json", "metrics.json", "config.yaml"} <= {a.path for a in client.list_artifacts(run_id)}

    study = tm.harness(["-m", f"+case={tm.JOB}", "+study=bench/trapezoid_order", "tracking=server",
                        f"tracking.uri={uri}"], out)
    assert study.returncode == 0, study.stdout + study.stderr
    assert "study bench/trapezoid_order  PASS  jobs=3 failed=0" in study.stdout
    got = tm.check_sweep(tm.sweeps(out)[-1], uri, 3)
    parent = got["parent"]
    # the trapezoid rule is second order; its Richardson extrapolation is the exact integral 2
    assert parent.data.metrics["observed_order"] == pytest.approx(2.0, abs=0.01)
    assert parent.data.metrics["gci_integral_f_extrapolated"] == pytest.approx(2.0, abs=1e-5)
    assert parent.data.tags["verdict"] == "pass" and parent.data.tags["n_failed"] == "0"
    assert sorted(k.data.params["case.params.n_base"] for k in got["children"]) == ["16", "32", "8"]


def _artifact_paths(client, run_id: str, path=None) -> set:
    out = set()
    for a in client.list_artifacts(run_id, path):
        out |= _artifact_paths(client, run_id, a.path) if a.is_dir else {a.path}
    return out


def test_a_record_is_ended_only_after_every_request_of_it_was_answered(team_stack, tmp_path):
    """harness.tracking.record_run on the PostgreSQL server: the tags go with the run's creation
    (or a log_batch beyond 100), the log_batch and then the artifact uploads (in the directory
    layout of MlflowClient.log_artifacts), and the run is ended only when every one was answered. A
    record the server refuses fails the whole record (TrackingError), nothing after the refused
    request is sent and its run is not ended (harness.sync deletes and re-sends such a run)."""
    from harness.tracking import records as tracking

    uri, experiment = team_stack.uri, "harness/team_record_run"
    art = tmp_path / "run"
    (art / "sub" / "deeper").mkdir(parents=True)
    files = {"a.txt": "a", "sub/b.txt": "bb", "sub/deeper/c.json": '{"c": 3}'}
    for rel, text in files.items():
        (art / rel).write_text(text)
    client = MlflowClient(uri)
    for n_tags in (3, 120):  # within one request of create_run; beyond MLflow's 100 tags per request
        tags = {f"t{i}": f"v{i}" for i in range(n_tags)}
        uid = tracking.new_run_uid()
        run_id = tracking.record_run(uri=uri, artifact_root=None, experiment=experiment, run_name="ok",
                                     params={"p": "1"}, metrics={"m": 0.5}, series={"s": [1.0, 2.0, 3.0]},
                                     tags=tags, artifacts_dir=art, status="FINISHED", run_uid=uid,
                                     start_ms=1_000, end_ms=2_000)
        run = client.get_run(run_id)
        assert run.info.status == "FINISHED" and (run.info.start_time, run.info.end_time) == (1_000, 2_000)
        assert run.data.params == {"p": "1"} and run.data.metrics == {"m": 0.5, "s": 3.0}
        assert [m.value for m in client.get_metric_history(run_id, "s")] == [1.0, 2.0, 3.0]
        assert {k: v for k, v in run.data.tags.items() if not k.startswith("mlflow.")} == {
            **tags, tracking.RUN_UID_TAG: uid}
        assert _artifact_paths(client, run_id) == set(files)
        got = client.download_artifacts(run_id, "sub/deeper/c.json", str(tmp_path / f"dl{n_tags}"))
        assert open(got).read() == files["sub/deeper/c.json"]

    uid = tracking.new_run_uid()
    with pytest.raises(tracking.TrackingError, match="tracking store"):
        tracking.record_run(uri=uri, artifact_root=None, experiment=experiment, run_name="refused",
                            params={"p": "1"}, metrics={"../not-a-metric-name": 1.0}, series={}, tags={},
                            artifacts_dir=art, status="FINISHED", run_uid=uid)
    exp_id = client.get_experiment_by_name(experiment).experiment_id
    refused = tracking.find_run_by_uid(uri, exp_id, uid)
    assert refused is not None and refused.info.status == "RUNNING" and refused.info.end_time is None
    assert _artifact_paths(client, refused.info.run_id) == set()  # the refused log_batch came first


def test_server_stopped_mid_sweep_then_restarted_and_synced_holds_every_run_once(team_stack, tmp_path, tm):
    out = tmp_path / "outputs"
    uri = team_stack.uri
    n = 5
    env = dict(HARNESS_OUTPUTS=str(out), CI="1")
    sweep_proc = subprocess.Popen(
        [tm.PY, "-m", "harness", "-m", f"+case={tm.JOB}", f"case.params.job=range(0,{n})", "case.params.hold_s=0.5",
         "tracking=server", f"tracking.uri={uri}", "tracking.timeout_s=2"],
        cwd=tm.ROOT, env=dict(os.environ, **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        sent_before = {}
        while time.monotonic() < deadline and sweep_proc.poll() is None:  # wait for two jobs on the server
            for sweep in tm.sweeps(out):
                for f in sweep.glob("*/tracking.json"):
                    rec = json.loads(f.read_text())
                    if rec["state"] == "sent":
                        sent_before[f.parent.name] = rec["run_id"]
            if len(sent_before) >= 2:
                break
            time.sleep(0.1)
        assert len(sent_before) >= 2, "no job reached the server"
        team_stack.stop_server()  # the README's own stop line, while the sweep goes on
        stdout, stderr = sweep_proc.communicate(timeout=300)
    finally:
        if sweep_proc.poll() is None:
            sweep_proc.kill()
            sweep_proc.wait()
        if not _server_up(uri):
            team_stack.start_server()  # the README's start lines again: same command, same store
    assert sweep_proc.returncode == 2, stdout + stderr  # 2: some records were not sent
    m = re.search(r"study sweep  PASS  jobs=5 failed=0\s+unsent=(\d+)", stdout)
    assert m and int(m.group(1)) >= 1, stdout
    (sweep,) = tm.sweeps(out)
    state = json.loads((sweep / "study_state.json").read_text())
    assert state["parent_complete"] is False  # the parent's end could not be recorded either

    sync = tm.harness(["--uri", uri, str(out)], out, module="harness.sync")
    assert sync.returncode == 0, sync.stdout + sync.stderr
    got = tm.check_sweep(sweep, uri, n)
    for job, run_id in sent_before.items():  # what was recorded before the stop is still there, unchanged
        assert got["outcomes"][int(job)]["mlflow_run_id"] == run_id
    client = MlflowClient(uri)
    for j in range(n):  # every run present once, by its uid
        uid = json.loads((sweep / str(j) / "tracking.json").read_text())["run_uid"]
        hits = client.search_runs([got["parent"].info.experiment_id], filter_string=f"tags.`harness.run_uid` = '{uid}'")
        assert len(hits) == 1, (j, uid)
    again = tm.harness(["--uri", uri, str(out)], out, module="harness.sync")
    assert f"sync: sent=0 parents=0 already_recorded={n} failed=0" in again.stdout, again.stdout


def _server_up(uri: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{uri}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


RACE_ERRORS = ("IntegrityError", "UniqueViolation", "database is locked", "deadlock detected", "OperationalError")


@pytest.mark.slow
def test_readme_sweep_and_a_concurrent_second_sweep_lose_nothing(team_stack, tmp_path, tm):
    """The README's joblib sweep (2 workers; 32 jobs with HARNESS_FULL=1, 12 in CI) and, launched
    at the same moment from another process, a second sweep (16 jobs; 6 in CI), both into one fresh experiment of
    the one server: every child with every metric, both parents complete, no duplicate, no
    race on the store's schema or the experiment's creation."""
    uri = team_stack.uri
    prefix = "team-concurrency/"  # a fresh experiment: both sweeps race to create it
    n_first, n_second = (32, 16) if tm.FULL else (12, 6)
    sweep_line, sync_line = tm.readme_block("sweep")
    assert "range(0,${JOBS:-32})" in sweep_line and "n_jobs=2" in sweep_line
    team_stack.run(f"export JOBS={n_first}")  # the README's JOBS (default 32)
    out2 = tmp_path / "second"
    t0 = time.monotonic()
    second = subprocess.Popen(
        [tm.PY, "-m", "harness", "-m", f"+case={tm.JOB}", "case.params.n_base=100",
         f"case.params.job=range(0,{n_second})", "tracking=server", f"tracking.uri={uri}",
         f"tracking.experiment_prefix={prefix}"],
        cwd=tm.ROOT, env=dict(os.environ, HARNESS_OUTPUTS=str(out2), CI="1"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        first = team_stack.run(f"HYDRA_FULL_ERROR=1 {sweep_line} tracking.experiment_prefix={prefix}", timeout=900)
        first_wall = time.monotonic() - t0
        stdout2, stderr2 = second.communicate(timeout=900)
    finally:
        if second.poll() is None:
            second.kill()
            second.wait()
    wall = time.monotonic() - t0
    assert second.returncode == 0, stdout2[-3000:] + stderr2[-3000:]
    assert f"study sweep  PASS  jobs={n_first} failed=0" in first
    assert f"study sweep  PASS  jobs={n_second} failed=0" in stdout2
    (sweep1,) = tm.sweeps(team_stack.base / "outputs")
    (sweep2,) = tm.sweeps(out2)
    a = tm.check_sweep(sweep1, uri, n_first)
    b = tm.check_sweep(sweep2, uri, n_second)
    assert a["parent"].info.experiment_id == b["parent"].info.experiment_id  # one experiment, created once
    client = MlflowClient(uri)
    everything = client.search_runs([a["parent"].info.experiment_id], max_results=1000)
    assert len(everything) == n_first + n_second + 2  # children and two parents, nothing else
    assert len({r.data.tags["harness.run_uid"] for r in everything}) == len(everything)
    workers = {json.loads((sweep1 / str(j) / "tracking.json").read_text())["worker"]["pid"] for j in range(n_first)}
    assert len(workers) == 2, workers  # two joblib workers shared the 32 jobs
    for text in (first, stdout2, stderr2, team_stack.server_log()):
        for err in RACE_ERRORS:
            assert err not in text, err
    # the README's sync line: everything was sent live, so nothing to do
    assert f"sync: sent=0 parents=0 already_recorded={n_first} failed=0" in team_stack.run(sync_line)
    runs = n_first + n_second + 2
    tm.write_artifact("team_concurrency.json", {
        "jobs_first": n_first, "jobs_second": n_second, "runs": runs, "wall_s": wall,
        "first_sweep_wall_s": first_wall, "runs_per_s": runs / wall,
        "note": "both sweeps are whole CLI runs (start-up, 2 joblib workers, study) on a shared 2-core machine"})
