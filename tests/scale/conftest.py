"""Fixtures of the scale tests: a real `mlflow server` on loopback, sweeps run through the CLI.

Everything a fixture starts binds 127.0.0.1 on a free port and is stopped by the fixture.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
# a small, fast case: 16 rings at most, a 4x4 surface mesh
SMALL = ["+case=load_transfer/sign", "operator.surface.resolution=4"]


def harness(args: List[str], outputs: Path, timeout: float = 600, env: Optional[dict] = None,
            module: str = "harness") -> subprocess.CompletedProcess:
    full_env = dict(os.environ, HARNESS_OUTPUTS=str(outputs), CI="1", **(env or {}))
    return subprocess.run([PY, "-m", module, *args], cwd=ROOT, env=full_env, capture_output=True, text=True,
                          timeout=timeout)


def latest_sweep(outputs: Path, case: str = "load_transfer/sign") -> Path:
    return sorted((outputs / "sweeps" / case).iterdir())[-1]


def stop_group(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Stop a process started with start_new_session=True, and everything it started."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


def wait_http(url: str, proc: subprocess.Popen, timeout_s: float, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: server exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"{url}: not up after {timeout_s} s:\n{log.read_text()[-3000:]}")


@contextlib.contextmanager
def running_mlflow_server(base: Path, artifacts: Path) -> Iterator[str]:
    """A real `mlflow server` (sqlite backend in ``base``, artifacts in ``artifacts``) on 127.0.0.1:
    its URL while the block runs; stopped with everything it started at the end."""
    port = free_port()
    log = base / "server.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [PY, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
             "--backend-store-uri", f"sqlite:///{base / 'server.db'}",
             "--artifacts-destination", str(artifacts), "--workers", "1"],
            cwd=base, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/health", proc, 240, log)
        yield url
    finally:
        stop_group(proc)


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """A real `mlflow server` (sqlite backend, artifacts under outputs/) on 127.0.0.1."""
    base = tmp_path_factory.mktemp("server")
    with running_mlflow_server(base, base / "outputs" / "mlartifacts") as url:
        yield url


@pytest.fixture(scope="session")
def server_sweep(mlflow_server, tmp_path_factory):
    """A 4-job sweep recorded live on the server: (outputs, sweep dir, study state)."""
    out = tmp_path_factory.mktemp("server_outputs")
    res = harness(["-m", *SMALL, "source.n_rings=4,8,12,16", "tracking=server", f"tracking.uri={mlflow_server}",
                   "tracking.experiment_prefix=browser/"],
                  out)
    assert res.returncode == 0, res.stdout + res.stderr
    sweep = latest_sweep(out)
    return out, sweep, json.loads((sweep / "study_state.json").read_text()), res


@pytest.fixture(scope="session")
def sc():
    """The helpers above, for the test modules (which cannot import this conftest)."""
    from types import SimpleNamespace

    return SimpleNamespace(PY=PY, SMALL=SMALL, ROOT=ROOT, free_port=free_port, harness=harness,
                           latest_sweep=latest_sweep, stop_group=stop_group, wait_http=wait_http)
