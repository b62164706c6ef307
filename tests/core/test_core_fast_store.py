"""The fast local store writer writes the rows MLflow's own client writes, and stores stay
inside paths.outputs (MLflow's Default experiment included)."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harness.launch import mlflow_sqlite
from harness.tracking import records as tracking

PARAMS = {"source.n_rings": "16", "case.name": "x/y", "k" * 300: "v" * 7000}  # a long key and value: truncated
METRICS = {"e_F": 1.5e-16, "e_J": 0.0, "nan_metric": float("nan"), "big": float("inf"), "gate_e_F": 0.0}
SERIES = {"e_F_t": [0.1, 0.05, float("nan"), 0.0125], "e_F": [3.0, 2.0]}  # a history with the metric's name too
TAGS = {"verdict": "pass", "case": "x/y", "status": "ok", "message": "m" * 4000}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One new store (creating one costs seconds), created from an unrelated working directory
    with no artifact root given: (outputs directory, URI, working directory)."""
    base = tmp_path_factory.mktemp("fast_store")
    elsewhere, out = base / "cwd", base / "outputs"
    elsewhere.mkdir()
    mp = pytest.MonkeyPatch()
    mp.chdir(elsewhere)
    try:
        uri = f"sqlite:///{out / 'mlflow.db'}"
        assert mlflow_sqlite.usable(uri) is None  # no store yet: MLflow creates it
        tracking.ensure_experiment(uri, "harness/equal", None)
    finally:
        mp.undo()
    return out, uri, elsewhere


def _record(uri, artifacts, *, fast: bool, monkeypatch, parent=None) -> str:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(mlflow_sqlite, "usable", lambda uri: None)
        return tracking.record_run(uri=uri, artifact_root=None, experiment="harness/equal", run_name="x/y",
                                   params=PARAMS, metrics=METRICS, series=SERIES, tags=TAGS,
                                   artifacts_dir=artifacts, status="FINISHED", parent_run_id=parent,
                                   run_uid="uid-" + ("fast" if fast else "mlflow"))


def _rows(db: Path, run_id: str):
    con = sqlite3.connect(db)
    q = lambda sql: sorted(con.execute(sql, (run_id,)).fetchall())  # noqa: E731
    run = con.execute("SELECT name, source_type, source_name, entry_point_name, user_id, status, source_version, "
                      "lifecycle_stage, replace(artifact_uri, run_uuid, 'RUN'), experiment_id, deleted_time, "
                      "end_time >= start_time FROM runs WHERE run_uuid = ?", (run_id,)).fetchone()
    rows = {"run": run,
            "params": q("SELECT key, value FROM params WHERE run_uuid = ?"),
            "tags": [t for t in q("SELECT key, value FROM tags WHERE run_uuid = ?") if t[0] != tracking.RUN_UID_TAG],
            "metrics": q("SELECT key, value, step, is_nan FROM metrics WHERE run_uuid = ?"),
            "latest": q("SELECT key, value, step, is_nan FROM latest_metrics WHERE run_uuid = ?"),
            "stamps": len({r[0] for r in con.execute("SELECT timestamp FROM metrics WHERE run_uuid = ?", (run_id,))})}
    con.close()
    return rows


def test_fast_writer_rows_equal_mlflow_client_rows(store, tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    out, uri, _ = store
    art = tmp_path / "run"
    (art / ".hydra").mkdir(parents=True)
    (art / "metrics.json").write_text('{"a": 1}')
    (art / ".hydra" / "overrides.yaml").write_text("- a=1\n")
    parent = MlflowClient(uri).create_run(tracking.ensure_experiment(uri, "harness/equal", None)).info.run_id
    slow = _record(uri, art, fast=False, monkeypatch=monkeypatch, parent=parent)
    fast = _record(uri, art, fast=True, monkeypatch=monkeypatch, parent=parent)
    assert mlflow_sqlite.usable(uri) == out / "mlflow.db"
    a, b = _rows(out / "mlflow.db", slow), _rows(out / "mlflow.db", fast)
    assert a["params"] and a["metrics"] and a["tags"]
    assert a == b
    # and as MLflow reads them back (the UI and harness.sync go through this)
    c = MlflowClient(uri)
    ra, rb = c.get_run(slow), c.get_run(fast)
    assert ra.data.params == rb.data.params
    assert {k: repr(v) for k, v in ra.data.metrics.items()} == {k: repr(v) for k, v in rb.data.metrics.items()}
    assert repr(rb.data.metrics["nan_metric"]) == "nan" and rb.data.metrics["e_F"] == 2.0  # the history's last
    assert {k: v for k, v in ra.data.tags.items() if k != tracking.RUN_UID_TAG} == \
        {k: v for k, v in rb.data.tags.items() if k != tracking.RUN_UID_TAG}
    assert (ra.info.status, ra.info.run_name, ra.info.lifecycle_stage) == (rb.info.status, rb.info.run_name,
                                                                          rb.info.lifecycle_stage)
    assert [m.value for m in c.get_metric_history(fast, "e_F_t")][:2] == [0.1, 0.05]
    assert sorted(x.path for x in c.list_artifacts(slow)) == sorted(x.path for x in c.list_artifacts(fast))
    assert sorted(x.path for x in c.list_artifacts(fast, ".hydra")) == [".hydra/overrides.yaml"]
    children = c.search_runs([ra.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent}'")
    assert sorted(r.info.run_id for r in children) == sorted([slow, fast])
    assert tracking.find_run_by_uid(uri, ra.info.experiment_id, "uid-fast").info.run_id == fast


def test_fast_writer_steps_aside_for_another_schema_or_a_new_experiment(store, tmp_path, monkeypatch):
    out, uri, _ = store
    assert mlflow_sqlite.record_run(out / "mlflow.db", experiment="harness/new", run_name="r", params={},
                                    metrics=[], tags={}, start_tags={}, artifacts_dir=tmp_path,
                                    status="FINISHED") is None
    monkeypatch.setattr(mlflow_sqlite, "SCHEMA_REVISION", "another")
    assert mlflow_sqlite.usable(uri) is None


def test_schema_revision_is_the_installed_mlflow_head(tmp_path):
    """If MLflow's schema moves on, the fast writer must be re-checked (it steps aside meanwhile)."""
    from alembic.script import ScriptDirectory
    from mlflow.store.db.utils import _get_alembic_config

    head = ScriptDirectory.from_config(_get_alembic_config(f"sqlite:///{tmp_path / 'x.db'}")).get_current_head()
    assert mlflow_sqlite.SCHEMA_REVISION == head


def test_new_store_keeps_every_experiment_inside_the_outputs(store, harness_env):
    out, _, elsewhere = store
    for root in (out, harness_env):  # created without and (conftest) with an artifact root
        con = sqlite3.connect(root / "mlflow.db")
        locations = dict(con.execute("SELECT name, artifact_location FROM experiments").fetchall())
        con.close()
        assert "Default" in locations and len(locations) >= 2
        for name, loc in locations.items():
            assert loc.startswith((root.as_uri() + "/", str(root) + "/")), (name, loc)
    assert not (elsewhere / "mlruns").exists()


def test_a_revision_not_among_the_checked_ones_is_recorded_by_mlflows_client(store, tmp_path, monkeypatch):
    """The store's revision is the installed MLflow's own but not in SCHEMA_REVISIONS: MLflow writes the run."""
    from mlflow.tracking import MlflowClient

    from harness.launch import guard

    out, uri, _ = store
    art = tmp_path / "run"
    art.mkdir()
    (art / "metrics.json").write_text('{"a": 1}')
    assert mlflow_sqlite.usable(uri) == out / "mlflow.db"  # checked: the fast writer would be used
    monkeypatch.setattr(mlflow_sqlite, "SCHEMA_REVISIONS", {})
    monkeypatch.setattr(guard, "_REFUSED", {})
    used = []
    monkeypatch.setattr(mlflow_sqlite, "record_run", lambda *a, **k: used.append(a) or "fast-run")
    assert mlflow_sqlite.usable(uri) is None
    run_id = _record(uri, art, fast=True, monkeypatch=monkeypatch)
    assert used == [] and run_id != "fast-run"
    run = MlflowClient(uri).get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.params["source.n_rings"] == "16"
    assert run.data.tags[tracking.RUN_UID_TAG] == "uid-fast"
    assert "is not one it was checked against" in guard.refused()["mlflow_sqlite"]


def test_a_checked_revision_that_is_not_the_installed_head_goes_through_mlflow(store, monkeypatch):
    """MLflow's own client upgrades or refuses a store at another revision: the fast writer steps aside."""
    out, uri, _ = store
    installed = mlflow_sqlite.installed_revisions()
    monkeypatch.setattr(mlflow_sqlite, "installed_revisions", lambda: (installed[0] | {"later"}, "later"))
    assert mlflow_sqlite.usable(uri) is None
    assert "not the installed MLflow's head (later)" in mlflow_sqlite._check(mlflow_sqlite.SCHEMA_REVISION)


def test_installed_revisions_are_those_alembic_finds(tmp_path):
    """The migration files read as text (no MLflow import) give the revisions and the head alembic finds."""
    from alembic.script import ScriptDirectory
    from mlflow.store.db.utils import _get_alembic_config

    script = ScriptDirectory.from_config(_get_alembic_config(f"sqlite:///{tmp_path / 'x.db'}"))
    revisions, head = mlflow_sqlite.installed_revisions()
    assert revisions == {s.revision for s in script.walk_revisions()}
    assert head == script.get_current_head() and head in mlflow_sqlite.SCHEMA_REVISIONS
