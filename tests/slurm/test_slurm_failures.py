"""Failures a cluster produces, each on the real single-node cluster.

A job cancelled while running (scancel), a job killed at its time limit, a node drained while a
job is queued, the launching process interrupted (SIGTERM): no hang, the parent run ends FAILED
(KILLED for the interrupt) with the finished jobs' records kept, the lost jobs named on stderr
with their Slurm ids and states, exit 1 (130 for the interrupt, with the queued jobs cancelled),
and no job left in the queue. A job is held in its batch script before Python starts by a
``hydra.launcher.setup`` line that sleeps for chosen array tasks.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest
from mlflow.tracking import MlflowClient

from tests.conftest import full_size

CASE = "+case=integrators/linear_ros2"


def hold(tasks: str, seconds: int = 600) -> str:
    """A setup line sleeping ``seconds`` in the array tasks matching the shell pattern ``tasks``."""
    return f'hydra.launcher.setup=["case $SLURM_ARRAY_TASK_ID in {tasks}) sleep {seconds};; esac"]'


def parent_and_children(sweep):
    state = json.loads((sweep / "study_state.json").read_text())
    client = MlflowClient(state["tracking_uri"])
    parent = client.get_run(state["parent_run_id"])
    kids = client.search_runs([parent.info.experiment_id],
                              filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    return parent, kids


def finish(proc, log, timeout_s=240):
    try:
        proc.wait(timeout=timeout_s)
    except Exception:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"the sweep hung:\n{log.read_text()[-3000:]}")
    return log.read_text()


def lost_lines(text):
    return re.findall(r"harness: lost job #(\d+): Slurm job (\d+_\d+) (\w+)", text)


def check_kept(sweep, finished_jobs, status):
    """The parent ended ``status``; the finished jobs' child runs are kept, FINISHED."""
    parent, kids = parent_and_children(sweep)
    assert parent.info.status == status
    ids = {json.loads((sweep / str(j) / "outcome.json").read_text())["mlflow_run_id"] for j in finished_jobs}
    assert ids <= {k.info.run_id for k in kids if k.info.status == "FINISHED"}
    return parent


def test_a_job_cancelled_while_running_is_lost_and_named(tmp_path, sl, empty_queue):
    out, log = tmp_path / "out", tmp_path / "log.txt"
    proc = sl.popen(["-m", CASE, "integrator.n_steps=50,100,200", "hydra/launcher=slurm", hold("1")], out, log)
    jid = sl.wait_for("task 1 running", lambda: sl.running(1), 120)
    sweep = sl.wait_for("the sweep dir", lambda: sl.latest_sweep(out) if (out / "sweeps").is_dir() else None)
    sl.wait_for("jobs 0 and 2 done", lambda: all((sweep / str(j) / "outcome.json").is_file() for j in (0, 2)), 120)
    subprocess.run(["scancel", jid], check=True)
    text = finish(proc, log)
    assert proc.returncode == 1, text[-3000:]
    assert lost_lines(text) == [("1", jid, "CANCELLED")], text[-3000:]
    assert "jobs=3 failed=1" in text
    parent = check_kept(sweep, (0, 2), "FAILED")
    assert parent.data.tags["n_failed"] == "1" and parent.data.tags["n_jobs"] == "3"
    rec = json.loads((sweep / "1" / "slurm.json").read_text())
    assert rec["job_id"] == jid and rec["state"] == "CANCELLED" and "lost" in rec
    assert sl.queue() == []


def test_a_node_drained_while_a_job_is_queued(tmp_path, sl, empty_queue):
    """Job 1 waits behind job 0 (one task at a time); the node is drained: job 1 can never start,
    the launcher cancels it after unrunnable_after_s and names it; job 0 finishes and is kept."""
    out, log = tmp_path / "out", tmp_path / "log.txt"
    proc = sl.popen(["-m", CASE, "integrator.n_steps=50,100", "hydra/launcher=slurm", hold("0", 6),
                     "hydra.launcher.array_parallelism=1", "hydra.launcher.unrunnable_after_s=2"], out, log)
    sl.wait_for("task 0 running", lambda: sl.running(0), 120)
    sl.scontrol("update", "nodename=localhost", "state=drain", "reason=harness-test")
    try:
        text = finish(proc, log)
    finally:
        sl.scontrol("update", "nodename=localhost", "state=resume")
    assert proc.returncode == 1, text[-3000:]
    lost = lost_lines(text)
    assert [(n, s) for n, _, s in lost] == [("1", "CANCELLED")], text[-3000:]
    assert re.search(r"pending: (ReqNodeNotAvail|Nodes required for job are DOWN, DRAINED)", text), text[-3000:]
    sweep = sl.latest_sweep(out)
    check_kept(sweep, (0,), "FAILED")
    assert json.loads((sweep / "1" / "slurm.json").read_text())["lost"].startswith("cancelled after 2 s pending")


@pytest.mark.slow
@pytest.mark.skipif(not full_size(), reason="a one-minute time limit: HARNESS_FULL=1 only")
def test_a_job_killed_at_its_time_limit(tmp_path, sl, empty_queue):
    """timeout_min=1 (Slurm's smallest): Slurm kills the held job after a minute (state TIMEOUT);
    the other job is kept."""
    out = tmp_path / "out"
    res = sl.harness(["-m", CASE, "integrator.n_steps=50,100", "hydra/launcher=slurm", hold("1"),
                      "hydra.launcher.timeout_min=1"], out, timeout=400)
    assert res.returncode == 1, res.stderr[-3000:]
    lost = lost_lines(res.stderr)
    assert [(n, s) for n, _, s in lost] == [("1", "TIMEOUT")], res.stderr[-3000:]
    check_kept(sl.latest_sweep(out), (0,), "FAILED")


def test_sigterm_to_the_launching_process_cancels_the_queued_jobs(tmp_path, sl, empty_queue):
    """Jobs 1 and 2 run (held), job 3 is queued; SIGTERM to the harness: exit 130, the parent
    KILLED, job 0's record kept, jobs 1-3 cancelled and named, the queue empty."""
    out, log = tmp_path / "out", tmp_path / "log.txt"
    proc = sl.popen(["-m", CASE, "integrator.n_steps=50,100,200,400", "hydra/launcher=slurm", hold("[1-3]"),
                     "hydra.launcher.array_parallelism=2"], out, log)
    sl.wait_for("tasks 1 and 2 running", lambda: sl.running(1) and sl.running(2), 120)
    sweep = sl.latest_sweep(out)
    assert (sweep / "0" / "outcome.json").is_file()
    t0 = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    text = finish(proc, log, 60)
    assert time.monotonic() - t0 < 30
    assert proc.returncode == 130, text[-3000:]
    assert sorted((n, s) for n, _, s in lost_lines(text)) == [("1", "CANCELLED"), ("2", "CANCELLED"),
                                                             ("3", "CANCELLED")], text[-3000:]
    check_kept(sweep, (0,), "KILLED")
    assert sl.queue() == []


def test_accounting_that_stops_answering_cancels_the_open_jobs(tmp_path, sl, slurm, empty_queue):
    """slurmdbd stopped while job 1 runs (held) and jobs 0 and 2 are done: sacct fails; after
    accounting_timeout_s the launcher cancels job 1 and names it with its last known state
    (RUNNING, from slurmctld); the parent ends FAILED, exit 1, jobs 0 and 2 kept. slurmdbd is
    started again afterwards (the cluster is shared by the session)."""
    import slurm_cluster  # tests/slurm_cluster.py (on the path: tests/slurm/conftest.py)

    out, log = tmp_path / "out", tmp_path / "log.txt"
    proc = sl.popen(["-m", CASE, "integrator.n_steps=50,100,200", "hydra/launcher=slurm", hold("1"),
                     "hydra.launcher.accounting_timeout_s=4"], out, log)
    jid = sl.wait_for("task 1 running", lambda: sl.running(1), 120)
    sweep = sl.wait_for("the sweep dir", lambda: sl.latest_sweep(out) if (out / "sweeps").is_dir() else None)
    sl.wait_for("jobs 0 and 2 done", lambda: all((sweep / str(j) / "outcome.json").is_file() for j in (0, 2)), 120)
    slurm_cluster.stop_accounting(slurm["dir"])
    t0 = time.monotonic()
    try:
        text = finish(proc, log, 120)
        waited = time.monotonic() - t0
    finally:
        slurm_cluster.start_accounting(slurm["dir"])
    assert proc.returncode == 1, text[-3000:]
    assert lost_lines(text) == [("1", jid, "RUNNING")], text[-3000:]
    assert re.search(r"cancelled: accounting \(sacct\) gave no answer for \d+ s \(accounting_timeout_s=4\)", text)
    assert waited >= 4, f"gave up after {waited:.1f} s, before accounting_timeout_s"
    assert "jobs=3 failed=1" in text
    check_kept(sweep, (0, 2), "FAILED")
    rec = json.loads((sweep / "1" / "slurm.json").read_text())
    assert rec["job_id"] == jid and rec["state"] == "RUNNING" and rec["lost"].startswith("cancelled: accounting")
    assert sl.queue() == []
