"""A store written by a newer MLflow than the installed one: one line, exit 2, the run kept for
``python -m harness.sync``, the store untouched; and MLflow's request-header registry, guarded."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness.launch import guard, mlflow_headers, mlflow_sqlite
from harness.tracking import records as tracking

NEWER = "f4a9b2c7d1e6"  # the schema revision of a store MLflow 3.18 has opened


def _harness(args, base: Path, module: str = "harness"):
    env = dict(os.environ, HARNESS_OUTPUTS=str(base / "outputs"))
    return subprocess.run([sys.executable, "-m", module, *args], cwd=base, env=env, capture_output=True,
                          text=True, timeout=300)


def _digest(db: Path) -> str:
    return hashlib.sha256(db.read_bytes()).hexdigest()


def _store(db: Path):
    """(schema revision, number of runs) of a sqlite store."""
    con = sqlite3.connect(db)
    try:
        return (con.execute("SELECT version_num FROM alembic_version").fetchone()[0],
                con.execute("SELECT count(*) FROM runs").fetchone()[0])
    finally:
        con.close()


def _line(shown) -> str:
    from importlib.metadata import version

    return (f"{shown} was written by a newer MLflow (schema {NEWER}); this environment has MLflow "
            f"{version('mlflow')}: upgrade MLflow here or use another store")


@pytest.fixture(scope="module")
def newer(tmp_path_factory):
    """A store made by the harness (one case recorded), then marked as upgraded by a newer MLflow:
    (working directory, outputs, the line expected from there)."""
    base = tmp_path_factory.mktemp("newer_store")
    seed = _harness(["+case=load_transfer/sign"], base)
    assert seed.returncode == 0, seed.stderr
    db = base / "outputs" / "mlflow.db"
    con = sqlite3.connect(db)
    con.execute("UPDATE alembic_version SET version_num = ?", (NEWER,))
    con.commit()
    con.close()
    assert _store(db) == (NEWER, 1)
    return base, base / "outputs", _line("outputs/mlflow.db")


def test_the_line_names_the_store_relative_to_the_working_directory(newer, tmp_path, monkeypatch):
    base, out, line = newer
    monkeypatch.setattr(tracking, "_TOO_NEW", {})
    uri = f"sqlite:///{out / 'mlflow.db'}"
    monkeypatch.chdir(base)
    with pytest.raises(tracking.StoreTooNew) as inside:
        tracking.probe(uri)
    assert str(inside.value) == line and isinstance(inside.value, tracking.TrackingError)
    monkeypatch.chdir(tmp_path)  # outside: the path as the URI gives it
    with pytest.raises(tracking.StoreTooNew) as outside:
        tracking.probe(uri)
    assert str(outside.value) == _line(out / "mlflow.db")
    assert tracking.unsaid_too_new() == [line, str(outside.value)] and tracking.unsaid_too_new() == []
    assert mlflow_sqlite.unknown_revision(uri) == NEWER and mlflow_sqlite.usable(uri) is None


def test_the_check_does_not_import_mlflow(newer):
    _, out, _ = newer
    code = ("import sys\n"
            "from harness.tracking import records\n"
            f"uri = 'sqlite:///{out / 'mlflow.db'}'\n"
            "try:\n    records.probe(uri)\nexcept records.StoreTooNew:\n    pass\nelse:\n    sys.exit('not found too new')\n"
            "from harness.launch import mlflow_sqlite\n"
            "assert mlflow_sqlite.installed_revisions()[1] == mlflow_sqlite.SCHEMA_REVISION\n"
            "assert 'mlflow' not in sys.modules, 'mlflow imported'\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def test_a_case_on_a_newer_store_exits_2_with_one_line_and_keeps_its_run_for_sync(newer, tmp_path):
    base, out, line = newer
    db = out / "mlflow.db"
    before = _digest(db)
    seeded = set((out / "runs" / "load_transfer" / "sign").iterdir())
    res = _harness(["+case=load_transfer/sign"], base)
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.splitlines() == [line]
    out_lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    assert len(out_lines) == 1 and out_lines[0].startswith("load_transfer/sign  TRACKING_ERROR  "), out_lines
    assert _digest(db) == before and _store(db) == (NEWER, 1)  # nothing written, nothing upgraded
    (run_dir,) = set((out / "runs" / "load_transfer" / "sign").iterdir()) - seeded
    record = json.loads((run_dir / "tracking.json").read_text())
    assert (record["state"], record["error"], record["run_id"]) == ("unsent", line, None)
    outcome = json.loads((run_dir / "outcome.json").read_text())
    assert (outcome["status"], outcome["exit_code"], outcome["message"]) == ("tracking_error", 2, line)
    assert json.loads((run_dir / "metrics.json").read_text())["verdict"] == "pass"

    # MLflow upgraded here (simulated: a copy of the store at the installed schema): sync sends it
    upgraded = tmp_path / "upgraded"
    upgraded.mkdir()
    (upgraded / "mlflow.db").write_bytes(db.read_bytes())
    con = sqlite3.connect(upgraded / "mlflow.db")
    con.execute("UPDATE alembic_version SET version_num = ?", (mlflow_sqlite.SCHEMA_REVISION,))
    con.commit()
    con.close()
    sync = _harness(["--uri", f"sqlite:///{upgraded / 'mlflow.db'}", str(run_dir)], base, module="harness.sync")
    assert sync.returncode == 0 and "sync: sent=1 " in sync.stdout, sync.stdout + sync.stderr
    assert _store(upgraded / "mlflow.db") == (mlflow_sqlite.SCHEMA_REVISION, 2)
    assert json.loads((run_dir / "tracking.json").read_text())["state"] == "sent"


def test_a_sweep_on_a_newer_store_stops_before_any_job_with_one_line(newer):
    base, out, line = newer
    before = _digest(out / "mlflow.db")
    res = _harness(["-m", "+case=load_transfer/sign", "source.n_rings=4,8"], base)
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.splitlines() == [line] and res.stdout.strip() == ""
    assert not (out / "sweeps").exists()
    assert _digest(out / "mlflow.db") == before


def test_a_suite_on_a_newer_store_exits_2_with_the_line_uncut(newer):
    base, out, line = newer
    before = _digest(out / "mlflow.db")
    res = _harness(["suite=smoke"], base)
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.splitlines() == [line] and "Traceback" not in res.stderr
    assert not (out / "suites").exists()  # stopped before its first job
    assert _digest(out / "mlflow.db") == before


def test_the_suite_table_keeps_an_unsent_runs_message_whole():
    from harness.suites.suite import table

    line = _line("outputs/mlflow.db")
    row = {"case": "x/y", "status": "tracking_error", "verdict": "pass", "wall_s": 1.0, "metrics": {},
           "key_metrics": [], "regression": None, "message": line}
    crash = dict(row, case="x/z", status="error", verdict="fail", message="E" * 300)
    text = table([row, crash])
    assert f"({line})" in text
    assert "(" + "E" * 120 + ")" in text and "E" * 121 not in text  # other messages as before


@pytest.fixture
def registry():
    """MLflow's request-header registry and the instance attributes its providers had."""
    from mlflow.tracking.request_header import registry as module

    providers = list(module._request_header_provider_registry)
    before = [dict(vars(p)) for p in providers]
    yield module, providers, before
    for p, attrs in zip(providers, before):
        vars(p).clear()
        vars(p).update(attrs)


def test_the_databricks_guard_refuses_cleanly_without_the_registry(registry, monkeypatch, caplog):
    module, providers, before = registry
    monkeypatch.delattr(module, "_request_header_provider_registry")
    monkeypatch.setattr(guard, "_REFUSED", {})
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    monkeypatch.delenv(guard.ENV, raising=False)
    with caplog.at_level(logging.DEBUG, logger="harness.launch.guard"):
        assert mlflow_headers.ask_databricks_once() is False
        assert mlflow_headers.ask_databricks_once() is False
    said = [r.getMessage() for r in caplog.records if r.name == "harness.launch.guard"]
    assert len(said) == 1 and said[0].startswith("mlflow_headers: ") and "_request_header_provider_registry" in said[0]
    assert [dict(vars(p)) for p in providers] == before  # nothing changed


def test_the_databricks_provider_is_asked_once(registry, monkeypatch):
    from mlflow.tracking.request_header.databricks_request_header_provider import (
        DatabricksRequestHeaderProvider,
    )

    _, providers, _ = registry
    monkeypatch.setattr(guard, "_REFUSED", {})
    monkeypatch.delenv(guard.ENV, raising=False)
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "15.4")  # on Databricks: left alone
    assert mlflow_headers.ask_databricks_once() is False
    databricks = [p for p in providers if isinstance(p, DatabricksRequestHeaderProvider)]
    assert databricks and all("in_context" not in vars(p) for p in databricks)
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION")
    asked = []
    monkeypatch.setattr(DatabricksRequestHeaderProvider, "in_context", lambda self: asked.append(self) or False)
    assert mlflow_headers.ask_databricks_once() is True
    n = len(asked)
    assert n >= len(databricks)
    assert all(p.in_context() is False for p in databricks) and len(asked) == n  # not asked again
    monkeypatch.setenv(guard.ENV, "mlflow_headers")
    assert mlflow_headers.ask_databricks_once() is False and "HARNESS_PLAIN_PATHS" in guard.refused()["mlflow_headers"]
