"""A local sqlite MLflow store without importing MLflow: create it inside the outputs, write runs fast.

``import mlflow`` and opening its SQLAlchemy store cost about 2.5 s per process, more than a
small case takes. For the embedded store (``tracking=local``) this module writes a finished
case run straight into the store's tables with :mod:`sqlite3`, in one transaction, with the
rows MLflow's own client writes for the same calls (``MlflowClient.create_run``,
``log_batch``, ``log_artifacts``, ``set_terminated``; see tests/core/test_core_fast_store.py,
which records one run both ways and compares every row). It is used only when

* the URI is ``sqlite:///<absolute path>`` and the database exists,
* its schema revision is :data:`SCHEMA_REVISION`, the one this writer was checked against
  (another MLflow version: MLflow's client is used, as before), and
* the experiment exists and keeps its artifacts on the local file system.

Anything else (the first run of a new store or family, a server) goes through MLflow.

:func:`create_store` creates a new store so that MLflow's ``Default`` experiment keeps its
artifacts in the store's artifact root (inside ``paths.outputs``), not in ``./mlruns`` of
whatever directory the store happened to be created from.
"""
from __future__ import annotations

import logging
import math
import os
import shutil
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import unquote, urlparse

log = logging.getLogger(__name__)

SCHEMA_REVISION = "dc11669786a5"  # alembic head of MLflow 3.17's tracking schema
WORKSPACE = "default"
_MAX_FLOAT = 1.7976931348623157e308


def db_path(uri: str) -> Optional[Path]:
    """The database file of an absolute ``sqlite:///`` URI (None for anything else)."""
    if not uri.startswith("sqlite:///"):
        return None
    p = Path(uri[len("sqlite:///"):])
    return p if p.is_absolute() else None


def default_artifact_root(uri: str) -> Optional[str]:
    """``<directory of the database>/mlartifacts`` for a sqlite store, else None."""
    p = db_path(uri)
    return str(p.parent / "mlartifacts") if p is not None else None


def create_store(uri: str, artifact_root: Optional[str]) -> None:
    """Create the sqlite store at ``uri`` if it does not exist yet, with MLflow's Default
    experiment's artifacts under ``artifact_root`` (default: next to the database)."""
    p = db_path(uri)
    if p is None or (p.exists() and p.stat().st_size > 0):
        return
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    root = artifact_root or default_artifact_root(uri)
    p.parent.mkdir(parents=True, exist_ok=True)
    SqlAlchemyStore(uri, Path(root).as_uri() if "://" not in root else root)


def _connect(db: Path) -> sqlite3.Connection:
    con = sqlite3.connect(str(db), timeout=60.0, isolation_level=None)
    con.execute("PRAGMA foreign_keys = ON")
    return con


def usable(uri: str) -> Optional[Path]:
    """The database path when the fast writer may be used for ``uri`` (see module docstring)."""
    p = db_path(uri)
    if p is None or not p.is_file():
        return None
    try:
        con = _connect(p)
        try:
            row = con.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return p if row and row[0] == SCHEMA_REVISION else None


def has_run_tagged(db: Path, tags: Mapping[str, str]) -> bool:
    """True when a live run of an active experiment carries every ``key = value`` of ``tags``."""
    joins = " ".join(f"JOIN tags t{i} ON t{i}.run_uuid = r.run_uuid AND t{i}.key = ? AND t{i}.value = ?"
                     for i in range(len(tags)))
    args = [x for kv in tags.items() for x in kv]
    con = _connect(db)
    try:
        row = con.execute(f"SELECT 1 FROM runs r {joins} JOIN experiments e ON e.experiment_id = r.experiment_id "
                          "WHERE r.lifecycle_stage = 'active' AND e.lifecycle_stage = 'active' LIMIT 1",
                          args).fetchone()
    finally:
        con.close()
    return row is not None


def _local_dir(location: str) -> Optional[Path]:
    """The directory of a local artifact location (a path or a file:// URI), else None."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "" and location.startswith("/"):
        return Path(location)
    return None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _sanitize(value: float) -> Tuple[float, int]:
    """(value, is_nan) as MLflow's SQL store keeps a metric: NaN -> (0, 1), ±inf -> ±max float."""
    x = float(value)
    if math.isnan(x):
        return 0.0, 1
    if math.isinf(x):
        return math.copysign(_MAX_FLOAT, x), 0
    return x, 0


def _copy_artifacts(src: Path, dst: Path) -> None:
    """What MLflow's local artifact repository does in ``log_artifacts``: mkdir + copy2 per file."""
    dst.mkdir(parents=True, exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(src):
        for d in dirnames:
            target = dst / os.path.relpath(os.path.join(dirpath, d), src)
            if not target.exists():
                os.mkdir(target)
        for f in filenames:
            source = os.path.join(dirpath, f)
            shutil.copy2(source, dst / os.path.relpath(source, src))


def record_run(db: Path, *, experiment: str, run_name: str, params: Mapping[str, str],
               metrics: Sequence[Tuple[str, float, int, int]], tags: Mapping[str, str],
               start_tags: Mapping[str, str], artifacts_dir: Path, status: str,
               start_ms: Optional[int] = None, end_ms: Optional[int] = None) -> Optional[str]:
    """Write one finished run; returns its id, or None when the experiment is not there or
    not local (the caller then uses MLflow's client).

    start_ms / end_ms (epoch ms): the case's real start and end (default: now).
    metrics: (key, value, timestamp ms, step) rows as MLflow's ``Metric`` would carry them;
    start_tags: the tags of ``create_run`` (run uid, parent run id); tags: those of ``log_batch``.
    """
    con = _connect(db)
    try:
        row = con.execute("SELECT experiment_id, artifact_location FROM experiments "
                          "WHERE name = ? AND workspace = ? AND lifecycle_stage = 'active'",
                          (experiment, WORKSPACE)).fetchone()
        if row is None or row[1] is None or _local_dir(row[1]) is None:
            return None
        exp_id, location = row
        run_id = uuid.uuid4().hex
        artifact_uri = f"{location.rstrip('/')}/{run_id}/artifacts"
        start = _now_ms() if start_ms is None else int(start_ms)
        _copy_artifacts(Path(artifacts_dir), _local_dir(artifact_uri))
        all_tags: Dict[str, str] = dict(start_tags)
        all_tags.setdefault("mlflow.runName", run_name)
        all_tags.update({k: str(v) for k, v in tags.items()})
        latest: Dict[str, Tuple[int, int, float, int]] = {}
        metric_rows: List[Tuple] = []
        for key, value, stamp, step in metrics:
            v, nan = _sanitize(value)
            metric_rows.append((key, v, stamp, run_id, step, nan))
            cand = (step, stamp, v, nan)
            if key not in latest or cand[:3] > latest[key][:3]:
                latest[key] = cand
        con.execute("BEGIN IMMEDIATE")
        try:
            con.execute("INSERT INTO runs (run_uuid, name, source_type, source_name, entry_point_name, user_id, "
                        "status, start_time, end_time, source_version, lifecycle_stage, artifact_uri, "
                        "experiment_id, deleted_time) VALUES (?, ?, 'UNKNOWN', '', '', 'unknown', ?, ?, ?, '', "
                        "'active', ?, ?, NULL)",
                        (run_id, run_name, status, start, _now_ms() if end_ms is None else int(end_ms), artifact_uri, exp_id))
            con.executemany("INSERT INTO params (key, value, run_uuid) VALUES (?, ?, ?)",
                            [(k, str(v), run_id) for k, v in params.items()])
            con.executemany("INSERT OR IGNORE INTO metrics (key, value, timestamp, run_uuid, step, is_nan) "
                            "VALUES (?, ?, ?, ?, ?, ?)", metric_rows)
            con.executemany("INSERT INTO latest_metrics (key, value, timestamp, step, is_nan, run_uuid) "
                            "VALUES (?, ?, ?, ?, ?, ?)",
                            [(k, v, stamp, step, nan, run_id) for k, (step, stamp, v, nan) in latest.items()])
            con.executemany("INSERT INTO tags (key, value, run_uuid) VALUES (?, ?, ?)",
                            [(k, v, run_id) for k, v in all_tags.items()])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            shutil.rmtree(_local_dir(artifact_uri).parent, ignore_errors=True)
            raise
        return run_id
    finally:
        con.close()
