"""Fixtures of the team tests: PostgreSQL + `mlflow server` started by the README's own commands.

The README section "Team set-up" holds three bash blocks (start, sweep, stop). `ReadmeShell`
runs them line by line in ONE bash process, exactly as written, so variables set by one line
(`MLFLOW_PID`, ports) reach the next. The ports are free loopback ports and the password a
fresh token, handed in through the environment the README's defaults read
(`PGPORT=${PGPORT:-5432}` ...). PostgreSQL refuses root: as root, `initdb` and `pg_ctl` are
found first on PATH as shims that run the real binaries as the `postgres` user.
Everything is stopped (README stop block, then by process group) and removed at the end.
"""
from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Dict, List, Optional

import pytest

from tests.conftest import free_port, stop_group

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
FULL = os.environ.get("HARNESS_FULL") == "1"
JOB = "bench/tracking_job"
ARTIFACTS = Path(os.environ.get("HARNESS_TEST_ARTIFACTS") or ROOT / "outputs" / "test-artifacts")



def readme_block(name: str) -> List[str]:
    """The command lines of the README block after ``<!-- team-setup:NAME -->``."""
    text = (ROOT / "README.md").read_text()
    m = re.search(rf"<!-- team-setup:{name} -->\n```bash\n(.*?)\n```", text, re.S)
    assert m, f"README.md: no block <!-- team-setup:{name} -->"
    return [line for line in m.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def pg_bindir() -> Optional[Path]:
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    d = Path(out.stdout.strip())
    return d if out.returncode == 0 and (d / "initdb").is_file() else None


class ReadmeShell:
    """One bash process that runs command lines one at a time and reports each exit code."""

    def __init__(self, cwd: Path, env: Dict[str, str]):
        import queue
        import threading

        self.cwd = cwd
        self.log = cwd / "shell.log"
        self.proc = subprocess.Popen(["bash", "--norc", "--noprofile"], cwd=cwd, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, bufsize=1)
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()

        def pump() -> None:
            for got in self.proc.stdout:
                self.lines.put(got)
            self.lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def run(self, line: str, timeout: float = 300.0) -> str:
        """Run ``line``; its output. Raises if it exits non-zero or takes longer than ``timeout`` s."""
        import queue

        marker = f"__done_{uuid.uuid4().hex}__"
        # the marker on a line of its own, also after output without a final newline
        self.proc.stdin.write(f"{line}\nprintf '\\n{marker} %s\\n' \"$?\"\n")
        self.proc.stdin.flush()
        out: List[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                got = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"README line did not finish in {timeout} s: {line}\n{''.join(out)[-3000:]}")
            if got is None:
                raise RuntimeError(f"bash ended during: {line}\n{''.join(out)[-3000:]}")
            if got.startswith(marker):
                rc = int(got.split()[-1])
                text = "".join(out)
                text = text[:-1] if text.endswith("\n") else text  # the newline printed before the marker
                with open(self.log, "a") as fh:
                    fh.write(f"$ {line}\n{text}[exit {rc}]\n")
                if rc != 0:
                    raise RuntimeError(f"README line exited {rc}: {line}\n{text[-3000:]}")
                return text
            out.append(got)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        stop_group(self.proc)


def _shims(base: Path, bindir: Path) -> Path:
    """initdb and pg_ctl that run as the postgres user (root only; PostgreSQL refuses root)."""
    shims = base / "shims"
    shims.mkdir()
    for name in ("initdb", "pg_ctl"):
        f = shims / name
        f.write_text(f"#!/bin/sh\nexec setpriv --reuid=postgres --regid=postgres --init-groups {bindir / name} \"$@\"\n")
        f.chmod(0o755)
    return shims


class TeamStack:
    """PostgreSQL + mlflow server of the README, in a temporary directory."""

    def __init__(self):
        self.bindir = pg_bindir()
        self.base = Path(tempfile.mkdtemp(prefix="harness-team-", dir="/tmp"))  # short: unix socket path
        self.base.chmod(0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "MLFLOW_", "HARNESS_OUTPUTS"))}
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.base, pw.pw_uid, pw.pw_gid)
            env["PATH"] = f"{_shims(self.base, self.bindir)}:{env['PATH']}"
        self.pg_port, self.mlflow_port = free_port(), free_port()
        env.update(PGPORT=str(self.pg_port), MLFLOW_PORT=str(self.mlflow_port), PGPASSWORD=secrets.token_hex(16),
                   CI="1")
        self.env = env
        self.uri = f"http://127.0.0.1:{self.mlflow_port}"
        self.shell = ReadmeShell(self.base, env)
        self.started = False

    def start(self) -> None:
        for line in readme_block("start"):
            self.run(line)
        self.started = True

    def run(self, line: str, timeout: float = 300.0) -> str:
        return self.shell.run(line, timeout)

    def server_lines(self) -> List[str]:
        """The README lines that start the mlflow server and wait for it."""
        return [ln for ln in readme_block("start") if "mlflow server" in ln or ln.startswith("curl")]

    def stop_server(self) -> None:
        self.run(readme_block("stop")[0])

    def start_server(self) -> None:
        for line in self.server_lines():
            self.run(line)

    def server_log(self) -> str:
        p = self.base / "mlflow.log"
        return p.read_text(errors="replace") if p.is_file() else ""

    def close(self) -> None:
        try:
            if self.started:
                for line in readme_block("stop"):
                    try:
                        self.run(line, timeout=60)
                    except Exception:  # noqa: BLE001 - the fallbacks below still run
                        pass
        finally:
            if (self.base / "pgdata" / "postmaster.pid").exists() and self.bindir:
                sudo = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"] if os.geteuid() == 0 else []
                subprocess.run([*sudo, str(self.bindir / "pg_ctl"), "-D", str(self.base / "pgdata"), "-m", "immediate",
                                "stop"],
                               capture_output=True, timeout=60)
            self.shell.close()
            shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="session")
def team_stack():
    """The README's PostgreSQL + mlflow server (session-wide); stopped and removed at the end."""
    if pg_bindir() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    pytest.importorskip("psycopg2", reason='pip install -e ".[team]"')
    stack = TeamStack()
    try:
        stack.start()
        yield stack
    finally:
        stack.close()


def harness(args: List[str], outputs: Path, timeout: float = 600, env: Optional[dict] = None,
            module: str = "harness", cwd: Path = ROOT) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, HARNESS_OUTPUTS=str(outputs), CI="1", **(env or {}))
    return subprocess.run([PY, "-m", module, *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)


def sweeps(outputs: Path, case: str = JOB) -> List[Path]:
    d = outputs / "sweeps" / case
    return sorted(d.iterdir()) if d.is_dir() else []


def children(client, parent_id: str):
    parent = client.get_run(parent_id)
    kids = client.search_runs([parent.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}'",
                              max_results=1000)
    return parent, kids


JOB_METRICS = ("integral", "error", "closed_form_residual", "n_intervals", "gate_closed_form_residual")


def check_sweep(sweep: Path, uri: str, n: int, parent_status: str = "FINISHED") -> Dict:
    """Every job of the sweep: one finished child run of a complete parent holding every metric.

    Returns {"state", "parent", "children", "outcomes"}.
    """
    from mlflow.tracking import MlflowClient

    state = json.loads((sweep / "study_state.json").read_text())
    assert state["tracking_uri"] == uri and state.get("parent_complete") is True, state
    client = MlflowClient(uri)
    parent, kids = children(client, state["parent_run_id"])
    assert parent.info.status == parent_status, parent.info.status
    assert parent.data.tags["n_jobs"] == str(n) and "table.csv" in {a.path for a in client.list_artifacts(
        parent.info.run_id)}
    outcomes = [json.loads((sweep / str(j) / "outcome.json").read_text()) for j in range(n)]
    assert len(kids) == n, (len(kids), n)  # no run lost, no duplicate
    assert sorted(o["mlflow_run_id"] for o in outcomes) == sorted(k.info.run_id for k in kids)
    uids = [k.data.tags["harness.run_uid"] for k in kids]
    assert len(set(uids)) == n
    by_id = {k.info.run_id: k for k in kids}
    for o in outcomes:
        kid = by_id[o["mlflow_run_id"]]
        assert kid.info.status == "FINISHED" and o["status"] == "ok"
        for m in JOB_METRICS:
            assert m in kid.data.metrics, (m, kid.info.run_id)
        for m in ("integral", "error", "closed_form_residual", "n_intervals"):
            assert kid.data.metrics[m] == o["metrics"][m]  # the stored value is the computed one
    return {"state": state, "parent": parent, "children": kids, "outcomes": outcomes}


def write_artifact(name: str, doc: Dict) -> Path:
    """A measured number of a test, kept for the report (HARNESS_TEST_ARTIFACTS)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    p = ARTIFACTS / name
    p.write_text(json.dumps(doc, indent=2, default=str))
    return p


@pytest.fixture(scope="session")
def tm():
    """The helpers above, for the test modules (which cannot import this conftest)."""
    return SimpleNamespace(PY=PY, ROOT=ROOT, FULL=FULL, JOB=JOB, free_port=free_port, harness=harness,
                           sweeps=sweeps, children=children, check_sweep=check_sweep, readme_block=readme_block,
                           stop_group=stop_group, write_artifact=write_artifact)
