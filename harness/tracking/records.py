"""MLflow records: experiments per family, batch logging, parent and child runs.

Only this module (and the study callback) talks to MLflow. Every call goes through an
explicit ``MlflowClient(tracking_uri)``, never the global fluent state, so a worker can
be handed the URI and the parent run id explicitly.
"""
from __future__ import annotations

import logging
import math
import os
import socket
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence
from urllib.parse import urlparse

from harness.metrics.gates import FAIL

log = logging.getLogger(__name__)

MAX_PARAMS_PER_BATCH = 100
MAX_METRICS_PER_BATCH = 1000
MAX_TAGS_PER_BATCH = 100
MAX_PARAM_VALUE = 6000

# One retry, made at once (urllib3 waits only before the second): a kept-alive connection that the
# server closed as idle (uvicorn: after 5 s) is found dropped only when it is used again, as
# "Remote end closed connection without response"; the retry opens a new one. A server that is
# down still fails within one connection attempt more (and :func:`probe` finds it first).
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
# the CLI prints one verdict line per case: no "View run at" lines from MLflow on stdout
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")


RUN_UID_TAG = "harness.run_uid"  # a run directory's own id: makes uploads idempotent


def new_run_uid() -> str:
    import uuid

    return uuid.uuid4().hex


class TrackingError(RuntimeError):
    """The MLflow store cannot be reached or written."""


class StoreTooNew(TrackingError):
    """The store was written by a newer MLflow than the installed one: invalid input (exit 2).

    Its message is the one line the CLI prints (:func:`too_new_line`)."""


_TOO_NEW: Dict[str, bool] = {}  # line -> said already, of the stores found too new in this process


def too_new_line(db: Path, revision: str) -> str:
    """The one line naming a store written by a newer MLflow (the path relative to the working
    directory when it is inside it)."""
    from harness.launch import mlflow_sqlite

    try:
        shown = db.relative_to(Path.cwd())
    except ValueError:
        shown = db
    return (f"{shown} was written by a newer MLflow (schema {revision}); this environment has MLflow "
            f"{mlflow_sqlite.installed_release()}: upgrade MLflow here or use another store")


def check_store(uri: str) -> None:
    """Raise :class:`StoreTooNew` when the sqlite store at ``uri`` has a schema revision the installed
    MLflow does not know (read without importing MLflow); stores it cannot tell about pass."""
    from harness.launch import mlflow_sqlite

    revision = mlflow_sqlite.unknown_revision(uri)
    if revision is None:
        return
    line = too_new_line(mlflow_sqlite.db_path(uri), revision)
    _TOO_NEW.setdefault(line, False)
    raise StoreTooNew(line)


def unsaid_too_new() -> List[str]:
    """The lines of stores found too new in this process not yet asked for (each is returned once)."""
    lines = [line for line, said in _TOO_NEW.items() if not said]
    _TOO_NEW.update(dict.fromkeys(lines, True))
    return lines


def found_too_new() -> bool:
    """Whether this process found a store written by a newer MLflow (since :func:`forget_too_new`)."""
    return bool(_TOO_NEW)


def forget_too_new() -> None:
    _TOO_NEW.clear()


def flatten(d: Any, prefix: str = "") -> Dict[str, str]:
    """Flatten a nested mapping/list into ``a.b.0.c -> str(value)`` pairs."""
    out: Dict[str, str] = {}
    if isinstance(d, Mapping):
        for k, v in d.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(d, (list, tuple)):
        if all(not isinstance(v, (Mapping, list, tuple)) for v in d):
            out[prefix[:-1]] = str(list(d))
        else:
            for i, v in enumerate(d):
                out.update(flatten(v, f"{prefix}{i}."))
    else:
        out[prefix[:-1]] = str(d)
    return out


def experiment_name(prefix: str, family: str) -> str:
    return f"{prefix}{family}"


def probe(uri: str, timeout_s: float = 5.0) -> None:
    """Raise TrackingError if the store at ``uri`` is clearly unusable.

    sqlite: the database directory must exist or be creatable, and an existing database must not
    have been written by a newer MLflow (:class:`StoreTooNew`). http(s): a TCP connection to the
    host must open within ``timeout_s``.
    """
    parsed = urlparse(uri)
    if parsed.scheme == "sqlite":
        path = Path(uri[len("sqlite:///"):])
        if not path.is_absolute():
            raise TrackingError(f"tracking.uri: sqlite path must be absolute, got {uri!r}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TrackingError(f"tracking.uri: cannot create {path.parent}: {exc}") from exc
        if not os.access(path.parent, os.W_OK):
            raise TrackingError(f"tracking.uri: directory {path.parent} is not writable")
        check_store(uri)
    elif parsed.scheme in ("http", "https"):
        host = parsed.hostname or "127.0.0.1"
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                pass
        except OSError as exc:
            raise TrackingError(f"tracking store {uri} unreachable: {exc}") from exc


_CLIENTS: Dict[tuple, Any] = {}  # (pid, uri) -> MlflowClient of this process
_EXPERIMENT_IDS: Dict[tuple, str] = {}  # (pid, uri, name) -> experiment id found or created here


def client(uri: str):
    """This process's ``MlflowClient`` for ``uri`` (made once: a worker recording many runs
    builds it, and its REST session or SQLAlchemy store, once)."""
    key = (os.getpid(), uri)
    c = _CLIENTS.get(key)
    if c is None:
        from mlflow.tracking import MlflowClient

        c = _CLIENTS[key] = MlflowClient(tracking_uri=uri)
        if uri.startswith(("http://", "https://")):
            from harness.launch.mlflow_headers import ask_databricks_once

            ask_databricks_once()  # once per process, not on every request
    return c


def ensure_experiment(uri: str, name: str, artifact_root: Optional[str]) -> str:
    """The id of experiment ``name``, created (with its artifact location) if absent; on a
    tracking server looked up once per process (:func:`forget_experiment` drops a stale id)."""
    if not uri.startswith(("http://", "https://")):  # a local store answers at once; a file may be replaced
        return _find_or_create_experiment(uri, name, artifact_root)
    key = (os.getpid(), uri, name)
    if key not in _EXPERIMENT_IDS:
        _EXPERIMENT_IDS[key] = _find_or_create_experiment(uri, name, artifact_root)
    return _EXPERIMENT_IDS[key]


def forget_experiment(uri: str, name: str) -> None:
    _EXPERIMENT_IDS.pop((os.getpid(), uri, name), None)


def _find_or_create_experiment(uri: str, name: str, artifact_root: Optional[str]) -> str:
    from mlflow.exceptions import MlflowException

    from harness.launch import mlflow_sqlite

    artifact_root = artifact_root or mlflow_sqlite.default_artifact_root(uri)  # never ./mlruns of the cwd
    mlflow_sqlite.create_store(uri, artifact_root)  # a new store's Default experiment stays inside too
    c = client(uri)
    exp = c.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    location = None
    if artifact_root:
        safe = name.replace("/", "_")
        location = Path(artifact_root, safe).as_uri() if not artifact_root.startswith(("s3:", "http", "file:")) else f"{artifact_root.rstrip('/')}/{safe}"
    try:
        return c.create_experiment(name, artifact_location=location)
    except MlflowException:  # created concurrently by another process
        exp = c.get_experiment_by_name(name)
        if exp is None:
            raise
        return exp.experiment_id


def log_batch(uri: str, run_id: str, *, params: Mapping[str, str] = (),
              metrics: Mapping[str, float] = (), series: Mapping[str, Sequence[float]] = (),
              tags: Mapping[str, str] = ()) -> None:
    """Log params, metrics (step 0), metric histories and tags in as few ``log_batch`` calls
    as MLflow's limits allow (one for a typical case run; see :func:`batches`)."""
    from mlflow.entities import Metric, Param, RunTag

    c = client(uri)
    now = int(time.time() * 1000)
    p = [Param(k[:250], str(v)[:MAX_PARAM_VALUE]) for k, v in dict(params).items()]
    m: List[Metric] = [Metric(k, _finite(v), now, 0) for k, v in dict(metrics).items()]
    for name, values in dict(series).items():
        m.extend(Metric(name, _finite(v), now, i) for i, v in enumerate(values))
    t = [RunTag(k, str(v)) for k, v in dict(tags).items()]
    for bp, bm, bt in batches(p, m, t):
        c.log_batch(run_id, metrics=bm, params=bp, tags=bt)


def batches(params: Sequence, metrics: Sequence, tags: Sequence) -> List[tuple]:
    """Split records into ``(params, metrics, tags)`` requests within MLflow's per-request
    limits (100 params, 1000 metrics, 100 tags, 1000 entries in all), filling each request."""
    p, m, t = list(params), list(metrics), list(tags)
    out = []
    while p or m or t:
        room = MAX_METRICS_PER_BATCH
        bp, p = p[:MAX_PARAMS_PER_BATCH], p[MAX_PARAMS_PER_BATCH:]
        room -= len(bp)
        bt, t = t[:min(MAX_TAGS_PER_BATCH, room)], t[min(MAX_TAGS_PER_BATCH, room):]
        room -= len(bt)
        bm, m = m[:room], m[room:]
        out.append((bp, bm, bt))
    return out


def _finite(v: Any) -> float:
    """MLflow stores NaN; map ±inf to ±1e308 so the value survives the store."""
    x = float(v)
    if math.isinf(x):
        return math.copysign(1e308, x)
    return x


def start_run(uri: str, experiment_id: str, run_name: str, parent_run_id: Optional[str] = None,
              tags: Optional[Mapping[str, str]] = None, start_ms: Optional[int] = None) -> str:
    """Create a run; ``start_ms`` (epoch ms) is its real start when it is recorded afterwards."""
    return _create_run(uri, experiment_id, run_name, parent_run_id, tags, start_ms).info.run_id


def _create_run(uri: str, experiment_id: str, run_name: str, parent_run_id: Optional[str],
                tags: Optional[Mapping[str, str]], start_ms: Optional[int]):
    """The created MLflow ``Run`` (its info carries the artifact URI: no second request for it)."""
    all_tags = {k: str(v) for k, v in dict(tags or {}).items()}
    if parent_run_id:
        all_tags["mlflow.parentRunId"] = parent_run_id
    return client(uri).create_run(experiment_id, run_name=run_name, tags=all_tags, start_time=start_ms)


def end_run(uri: str, run_id: str, status: str = "FINISHED", end_ms: Optional[int] = None) -> None:
    """End a run with ``status`` at ``end_ms`` (epoch ms; now when None).

    One request to the store: ``MlflowClient.set_terminated`` first fetches the whole run
    (params, metrics, tags) only to log its URL, which on a tracking server was the costliest
    of a record's requests (measured: ``get_run`` 19 % of the server's CPU time per record).
    """
    from mlflow.entities import RunStatus

    c = client(uri)
    store = getattr(getattr(c, "_tracking_client", None), "store", None)
    if store is None or not hasattr(store, "update_run_info"):  # another MLflow layout: its public call
        c.set_terminated(run_id, status=status, end_time=end_ms)
        return
    store.update_run_info(run_id, run_status=RunStatus.from_string(status),
                          end_time=end_ms or int(time.time() * 1000), run_name=None)


def close_parents(open_parents: Dict[str, str], reason: str, status: str, what: str) -> None:
    """End with ``status`` every parent run of ``open_parents`` (run id -> store URI), tagging
    ``error`` = reason and ``verdict`` = fail, and forget them; best effort (``what`` names the
    kind of parent in the log)."""
    for parent, uri in list(open_parents.items()):
        try:
            log_batch(uri, parent, tags={"error": reason[:5000], "verdict": FAIL})
            end_run(uri, parent, status)
        except Exception as exc:  # noqa: BLE001 - best effort on the way out
            log.error("%s: could not close the parent run %s: %s", what, parent, exc)
        open_parents.pop(parent, None)


def log_artifacts(uri: str, run_id: str, directory: Path) -> None:
    client(uri).log_artifacts(run_id, str(directory))


def _artifact_files(directory: Path) -> List[tuple]:
    """``(file, artifact sub-directory or None)`` of every file under ``directory``, the layout
    ``log_artifacts`` gives them."""
    out = []
    for root, _, names in os.walk(directory):
        rel = Path(root).relative_to(directory).as_posix()
        out.extend((os.path.join(root, name), None if rel == "." else rel) for name in sorted(names))
    return out


def _log_records(uri: str, run, params: Mapping[str, str], metrics: Mapping[str, float],
                 series: Mapping[str, Sequence[float]], tags: Mapping[str, str], artifacts_dir: Path) -> None:
    """The records of a created ``run``: its ``log_batch`` requests, then one upload per artifact file,
    one after another (the first failure raises, and nothing after it is sent). The artifact
    repository is the one of the run's own ``artifact_uri`` (as ``MlflowClient.log_artifacts``
    builds it, without fetching the whole run again to learn it).

    Sending the ``log_batch`` on a helper thread while the files upload was tried and not kept: on a
    quiet machine it absorbed no more runs per second (README, "Team set-up").
    """
    from mlflow.store.artifact.artifact_repository_registry import (
        get_artifact_repository,
    )

    run_id = run.info.run_id
    log_batch(uri, run_id, params=params, metrics=metrics, series=series, tags=tags)
    files = _artifact_files(Path(artifacts_dir))
    if files:
        repo = get_artifact_repository(run.info.artifact_uri, tracking_uri=uri)
        for f, d in files:
            repo.log_artifact(f, d)


def record_run(*, uri: str, artifact_root: Optional[str], experiment: str, run_name: str,
               params: Mapping[str, str], metrics: Mapping[str, float],
               series: Mapping[str, Sequence[float]], tags: Mapping[str, str],
               artifacts_dir: Path, status: str, parent_run_id: Optional[str] = None,
               timeout_s: float = 5.0, run_uid: Optional[str] = None, start_ms: Optional[int] = None,
               end_ms: Optional[int] = None) -> str:
    """Create one MLflow run holding everything of a case run; returns its run id.

    start_ms / end_ms (epoch ms): the case's real start and end (the run is created after it ran).

    Raises TrackingError with a one-line reason when the store is unreachable, StoreTooNew
    when it was written by a newer MLflow (nothing is written to it).
    """
    probe(uri, timeout_s)
    fast = _record_fast(uri=uri, experiment=experiment, run_name=run_name, params=params, metrics=metrics,
                        series=series, tags=tags, artifacts_dir=artifacts_dir, status=status,
                        parent_run_id=parent_run_id, run_uid=run_uid, start_ms=start_ms, end_ms=end_ms)
    if fast is not None:
        return fast
    from mlflow.exceptions import MlflowException

    try:
        exp_id = ensure_experiment(uri, experiment, artifact_root)
        start_tags = {RUN_UID_TAG: run_uid} if run_uid else {}
        if len(tags) + len(start_tags) < MAX_TAGS_PER_BATCH:  # the tags go with the run's creation
            start_tags, tags = {**tags, **start_tags}, {}
        try:
            run = _create_run(uri, exp_id, run_name, parent_run_id, start_tags, start_ms)
        except MlflowException:  # the experiment looked up earlier in this process is gone
            forget_experiment(uri, experiment)
            exp_id = ensure_experiment(uri, experiment, artifact_root)
            run = _create_run(uri, exp_id, run_name, parent_run_id, start_tags, start_ms)
        run_id = run.info.run_id
        try:
            _log_records(uri, run, params, metrics, series, tags, artifacts_dir)
        except KeyboardInterrupt:  # SIGINT/SIGTERM while logging: the started run ends KILLED
            end_run(uri, run_id, "KILLED")
            raise
        end_run(uri, run_id, status, end_ms)
        return run_id
    except (MlflowException, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TrackingError(f"tracking store {uri}: {first}") from exc


def _record_fast(*, uri: str, experiment: str, run_name: str, params: Mapping[str, str],
                 metrics: Mapping[str, float], series: Mapping[str, Sequence[float]], tags: Mapping[str, str],
                 artifacts_dir: Path, status: str, parent_run_id: Optional[str],
                 run_uid: Optional[str], start_ms: Optional[int] = None,
                 end_ms: Optional[int] = None) -> Optional[str]:
    """:func:`record_run` for an existing local sqlite store without importing MLflow
    (:mod:`harness.launch.mlflow_sqlite`): the same rows as the client calls below; None when it
    does not apply (no store yet, new experiment, another schema) and MLflow must do it."""
    import sqlite3

    from harness.launch import mlflow_sqlite

    db = mlflow_sqlite.usable(uri)
    if db is None:
        return None
    now = int(time.time() * 1000)
    p = {k[:250]: str(v)[:MAX_PARAM_VALUE] for k, v in dict(params).items()}
    m = [(k, _finite(v), now, 0) for k, v in dict(metrics).items()]
    for name, values in dict(series).items():
        m.extend((name, _finite(v), now, i) for i, v in enumerate(values))
    start_tags = {RUN_UID_TAG: run_uid} if run_uid else {}
    if parent_run_id:
        start_tags["mlflow.parentRunId"] = parent_run_id
    try:
        return mlflow_sqlite.record_run(db, experiment=experiment, run_name=run_name, params=p, metrics=m,
                                        tags={k: str(v) for k, v in dict(tags).items()}, start_tags=start_tags,
                                        artifacts_dir=Path(artifacts_dir), status=status,
                                        start_ms=start_ms, end_ms=end_ms)
    except (sqlite3.Error, OSError) as exc:
        raise TrackingError(f"tracking store {uri}: {exc}") from exc


def find_run_by_uid(uri: str, experiment_id: str, run_uid: str):
    """The live (not deleted) run tagged with ``run_uid`` in an experiment, or None."""
    runs = client(uri).search_runs([experiment_id], filter_string=f"tags.`{RUN_UID_TAG}` = '{run_uid}'",
                                   max_results=10)
    return runs[0] if runs else None


GATE_CODE = {"pass": 0.0, "warn": 1.0, "fail": 2.0}


def run_metrics(metrics: Mapping[str, float], gates: Mapping[str, str]) -> Dict[str, float]:
    """The MLflow metrics of a case run: finite-or-inf metrics plus ``gate_<name>`` codes (0/1/2)."""
    out = {k: float(v) for k, v in metrics.items() if not math.isnan(float(v))}
    out.update({f"gate_{k}": GATE_CODE[v] for k, v in gates.items()})
    return out
