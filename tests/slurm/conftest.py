"""A real single-node Slurm cluster with accounting for the tests of this folder.

The session fixture starts munge, MariaDB, slurmdbd, slurmctld and slurmd from nothing in a
temporary directory on free loopback ports (tests/slurm_cluster.py, which the README points
to), sets ``SLURM_CONF`` for this process and the harness processes it starts, and stops every
daemon by its PID at the end. Each test checks that it leaves no job in the queue.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
import slurm_cluster  # noqa: E402  (tests/slurm_cluster.py)

PY = sys.executable
STUDY = ["+case=integrators/linear_ros2", "+study=integrators/fixed_step_order"]  # 4 levels, order 2
# a two-level sweep of a fast case (seconds per job)
SWEEP = ["+case=integrators/linear_ros2", "integrator.n_steps=50,100"]


def _env(outputs: Path, extra: Optional[dict] = None) -> dict:
    return dict(os.environ, HARNESS_OUTPUTS=str(outputs), CI="1", **(extra or {}))


def harness(args: List[str], outputs: Path, timeout: float = 900, env: Optional[dict] = None):
    return subprocess.run([PY, "-m", "harness", *args], cwd=ROOT, env=_env(outputs, env), capture_output=True,
                          text=True, timeout=timeout)


def popen(args: List[str], outputs: Path, log: Path) -> subprocess.Popen:
    fh = open(log, "w")
    return subprocess.Popen([PY, "-m", "harness", *args], cwd=ROOT, env=_env(outputs), stdout=fh,
                            stderr=subprocess.STDOUT, start_new_session=True)


def queue() -> List[str]:
    """Every job id (array tasks one per line) in the cluster's queue."""
    res = subprocess.run(["squeue", "-h", "-r", "-o", "%i %T"], capture_output=True, text=True, check=True)
    return [ln.strip() for ln in res.stdout.splitlines() if ln.strip()]


def wait_for(what: str, ok, timeout_s: float = 120.0, poll_s: float = 0.3):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = ok()
        if got:
            return got
        time.sleep(poll_s)
    raise AssertionError(f"{what}: not within {timeout_s} s (queue: {queue()})")


def running(task: int) -> Optional[str]:
    """The id of the running array task ``task`` of any job, if one runs."""
    for line in queue():
        jid, state = line.split()
        if jid.endswith(f"_{task}") and state == "RUNNING":
            return jid
    return None


def latest_sweep(outputs: Path) -> Path:
    return sorted(p for p in (outputs / "sweeps").glob("*/*/*") if p.is_dir())[-1]


def scontrol(*args: str) -> None:
    subprocess.run(["scontrol", *args], check=True, capture_output=True, text=True)


def node_state() -> str:
    return subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """The running cluster: its state (dir, ports, pids); SLURM_CONF is set for the session."""
    d = tmp_path_factory.mktemp("slurm")
    t0 = time.monotonic()
    state = slurm_cluster.start(d)
    state["start_s"] = time.monotonic() - t0
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = state["slurm_conf"]
    try:
        yield state
    finally:
        subprocess.run(["scancel", "-u", "root"], capture_output=True)
        slurm_cluster.stop(d)
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


@pytest.fixture
def empty_queue(slurm):
    """A test that leaves a job in the queue fails: nothing orphaned (and the node back to idle)."""
    assert queue() == []
    yield
    left = queue()
    subprocess.run(["scancel", "-u", "root"], capture_output=True)
    if "drain" in node_state():  # a test that drained the node and failed before resuming it
        subprocess.run(["scontrol", "update", "nodename=localhost", "state=resume"], capture_output=True)
    wait_for("node idle", lambda: node_state() == "idle", 60)
    assert left == [], f"jobs left in the queue: {left}"


@pytest.fixture(scope="session")
def local_study(tmp_path_factory):
    """study.json of the uninterrupted 4-level study, run locally (basic launcher), once per session."""
    out = tmp_path_factory.mktemp("local_study")
    res = harness(["-m", *STUDY], out)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads((latest_sweep(out) / "study" / "study.json").read_text())


@pytest.fixture(scope="session")
def sl():
    return SimpleNamespace(PY=PY, ROOT=ROOT, STUDY=STUDY, SWEEP=SWEEP, harness=harness, popen=popen, queue=queue,
                           wait_for=wait_for, running=running, latest_sweep=latest_sweep, scontrol=scontrol,
                           node_state=node_state, json=json)
