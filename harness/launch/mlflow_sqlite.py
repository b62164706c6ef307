"""A local sqlite MLflow store without importing MLflow: create it inside the outputs, write runs fast.

``import mlflow`` and opening its SQLAlchemy store cost about 2.5 s per process, more than a
small case takes. For the embedded store (``tracking=local``) this module writes a finished
case run straight into the store's tables with :mod:`sqlite3`, in one transaction, with the
rows MLflow's own client writes for the same calls (``MlflowClient.create_run``,
``log_batch``, ``log_artifacts``, ``set_terminated``; see tests/core/test_core_fast_store.py,
which records one run both ways and compares every row). Checked against MLflow 3.17 (schema
``dc11669786a5``, :data:`SCHEMA_REVISIONS`). It is used only when

* the URI is ``sqlite:///<absolute path>`` and the database exists,
* its schema revision is one of :data:`SCHEMA_REVISIONS` and the installed MLflow's head (the
  store MLflow's own client would open as it is; :func:`installed_revisions`), and
* the experiment exists and keeps its artifacts on the local file system.

Anything else (the first run of a new store or family, a server, another schema, or
``HARNESS_PLAIN_PATHS`` naming ``mlflow_sqlite``) goes through MLflow's client, as before; the
schema check passes through :func:`harness.launch.guard.allowed` (one DEBUG line when refused).

:func:`unknown_revision` tells, also without importing MLflow, a store written by a newer MLflow
than the installed one: its revision is none of the installed MLflow's migrations.

:func:`create_store` creates a new store so that MLflow's ``Default`` experiment keeps its
artifacts in the store's artifact root (inside ``paths.outputs``), not in ``./mlruns`` of
whatever directory the store happened to be created from.
"""
from __future__ import annotations

import importlib.util
import logging
import math
import os
import re
import shutil
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import unquote, urlparse

from harness.launch import guard

log = logging.getLogger(__name__)

GUARD = "mlflow_sqlite"
# the schema record_run's INSERT statements are written for: the alembic head of MLflow 3.17
SCHEMA_REVISION = "dc11669786a5"
# every schema revision the writer was checked against (its rows compared with MLflow's own,
# tests/core/test_core_fast_store.py), with the MLflow release whose head it is; SCHEMA_REVISION is one
SCHEMA_REVISIONS: Dict[str, str] = {"dc11669786a5": "MLflow 3.17"}
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


def store_revision(db: Path) -> Optional[str]:
    """The alembic schema revision of the sqlite store ``db`` (None when it cannot be read)."""
    try:
        con = _connect(db)
        try:
            row = con.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return str(row[0]) if row and row[0] else None


_REVISION_LINE = re.compile(r"""^revision\s*(?::[^=]*)?=\s*['"]([^'"]+)['"]""", re.M)
_DOWN_LINE = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(.*)$", re.M)
_INSTALLED: Dict[str, Tuple[FrozenSet[str], Optional[str]]] = {}  # versions directory -> (revisions, head)


def _migrations_dir() -> Optional[Path]:
    """``mlflow/store/db_migrations/versions`` of the installed MLflow, found without importing it."""
    spec = importlib.util.find_spec("mlflow")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locations:
        d = Path(loc, "store", "db_migrations", "versions")
        if d.is_dir():
            return d
    return None


def installed_revisions() -> Optional[Tuple[FrozenSet[str], Optional[str]]]:
    """(every tracking-schema revision the installed MLflow ships, its head), read once per process
    from the ``revision =`` and ``down_revision =`` lines of its migration files, without importing
    MLflow; None when MLflow or its migrations are not where MLflow 3 keeps them."""
    d = _migrations_dir()
    if d is None:
        return None
    hit = _INSTALLED.get(str(d))
    if hit is None:
        revisions, parents = set(), set()
        for f in d.glob("*.py"):
            text = f.read_text(encoding="utf-8", errors="replace")
            m = _REVISION_LINE.search(text)
            if m is None:
                continue
            revisions.add(m.group(1))
            down = _DOWN_LINE.search(text)
            if down is not None:
                parents.update(re.findall(r"""['"]([^'"]+)['"]""", down.group(1)))
        if not revisions:
            return None
        heads = revisions - parents
        hit = _INSTALLED[str(d)] = (frozenset(revisions), next(iter(heads)) if len(heads) == 1 else None)
    return hit


def installed_release() -> str:
    """The installed MLflow's version, read from its package metadata (MLflow is not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("mlflow", "mlflow-skinny"):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return "unknown"


def unknown_revision(uri: str) -> Optional[str]:
    """The schema revision of the sqlite store at ``uri`` when the installed MLflow does not know
    it (a store written, or upgraded, by a newer MLflow); None otherwise or when it cannot be told."""
    p = db_path(uri)
    if p is None or not p.is_file():
        return None
    rev = store_revision(p)
    known = installed_revisions() if rev is not None else None
    if known is None or rev in known[0]:
        return None
    return rev


def _check(rev: str) -> Optional[str]:
    """None when the fast writer may write a store at schema ``rev`` (module docstring), else why not."""
    checked = ", ".join(f"{r} ({release})" for r, release in SCHEMA_REVISIONS.items()) or "none"
    if rev not in SCHEMA_REVISIONS:
        return f"the store's schema {rev} is not one it was checked against: {checked}"
    if SCHEMA_REVISION not in SCHEMA_REVISIONS:
        return f"the schema its rows are written for ({SCHEMA_REVISION}) is not among those checked: {checked}"
    installed = installed_revisions()
    if installed is None:
        return "the installed MLflow's schema revisions cannot be read"
    if rev != installed[1]:
        return (f"the store's schema {rev} is not the installed MLflow's head ({installed[1]}): "
                "MLflow's client opens or refuses it")
    return None


def usable(uri: str) -> Optional[Path]:
    """The database path when the fast writer may be used for ``uri`` (see module docstring)."""
    p = db_path(uri)
    if p is None or not p.is_file():
        return None
    rev = store_revision(p)
    if rev is None:
        return None
    return p if guard.allowed(GUARD, lambda: _check(rev)) else None


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
