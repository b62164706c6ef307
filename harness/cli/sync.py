"""Upload run directories whose MLflow record was not sent: ``python -m harness.sync [PATH ...]``.

A run whose tracking store was unreachable keeps a complete run directory and a
``tracking.json`` in state ``unsent`` (store, experiment, run name, tags, parent run id and
the run's own uid). A sweep keeps ``study_state.json`` with what its parent run needs.
This command creates the missing parent runs (with the study result), then the child
runs, and marks each directory ``sent``. It is idempotent: every MLflow run carries the
directory's uid as tag ``harness.run_uid``, and a run with that uid already in the store
is never created again (a half-written one is deleted and re-sent).

PATH: run directories, sweep directories or an outputs directory (searched recursively);
default: the outputs directory. ``--uri`` sends everything to another store than the one
each run was configured with. Exit code 0 when everything is sent, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from harness.core.atomic import atomic_write_text
from harness.core.runner import STATUS_OK, STATUS_TRACKING, TRACKING_FILE
from harness.studies.aggregate import STATE_FILE, finish_parent
from harness.tracking import records as tracking

log = logging.getLogger(__name__)

DONE_STATES = ("FINISHED", "FAILED", "KILLED")


@dataclass
class SyncReport:
    sent: List[Path] = field(default_factory=list)
    already: List[Path] = field(default_factory=list)
    failed: Dict[Path, str] = field(default_factory=dict)
    parents_sent: List[Path] = field(default_factory=list)

    def line(self) -> str:
        return (f"sync: sent={len(self.sent)} parents={len(self.parents_sent)} "
                f"already_recorded={len(self.already)} failed={len(self.failed)}")


def _read(path: Path) -> Any:
    return json.loads(path.read_text())


def _write(path: Path, doc: Any) -> None:
    atomic_write_text(path, json.dumps(doc, indent=2))


def _experiment(uri: str, name: str, artifact_root: Optional[str]) -> str:
    return tracking.ensure_experiment(uri, name, artifact_root)


def _existing(uri: str, exp_id: str, run_uid: str):
    """The finished run with ``run_uid``; a half-written one is deleted (then None)."""
    run = tracking.find_run_by_uid(uri, exp_id, run_uid)
    if run is None:
        return None
    if run.info.status in DONE_STATES:
        return run
    log.warning("sync: deleting the incomplete run %s (uid %s) to send it again", run.info.run_id, run_uid)
    tracking.client(uri).delete_run(run.info.run_id)
    return None


def _target(record: Dict[str, Any], uri: Optional[str]):
    """(uri, artifact_root): the configured store, or ``uri`` (then the server's default root)."""
    if uri is None or uri == record["uri"]:
        return record["uri"], record.get("artifact_root")
    return uri, None


def sync_parent(sweep_dir: Path, uri: Optional[str], report: SyncReport) -> Optional[str]:
    """Create (or find) the parent run of a sweep and record its study result; returns its id."""
    state_file = sweep_dir / STATE_FILE
    state = _read(state_file)
    target = state.get("parent")
    if target is None:  # tracking was disabled for this sweep
        return None
    store, root = _target(target, uri)
    parent = state.get("parent_run_id") if state.get("tracking_uri") == store else None
    summary_file = sweep_dir / "study" / "study.json"
    if parent and state.get("parent_complete", False):
        return parent
    exp_id = _experiment(store, target["experiment"], root)
    if parent is None:
        run = _existing(store, exp_id, state["run_uid"])
        if run is not None:
            parent = run.info.run_id
        else:
            parent = tracking.start_run(store, exp_id, target["run_name"],
                                        tags={**target["tags"], tracking.RUN_UID_TAG: state["run_uid"],
                                              "synced": "true"})
            report.parents_sent.append(sweep_dir)
        state.update(parent_run_id=parent, tracking_uri=store, experiment_id=exp_id)
        _write(state_file, state)
    if summary_file.is_file() and tracking.client(store).get_run(parent).info.status not in DONE_STATES:
        finish_parent(store, parent, _read(summary_file), sweep_dir)
        state["parent_complete"] = True
        _write(state_file, state)
    return parent


def sync_run(run_dir: Path, uri: Optional[str], report: SyncReport, parent: Optional[str] = None,
             recheck: bool = False) -> None:
    """Send one run directory (no-op when already sent)."""
    record_file = run_dir / TRACKING_FILE
    record = _read(record_file)
    if record.get("state") == "sent" and not recheck:
        report.already.append(run_dir)
        return
    store, root = _target(record, uri)
    exp_id = _experiment(store, record["experiment"], root)
    run = _existing(store, exp_id, record["run_uid"])
    if run is not None:
        run_id = run.info.run_id
        report.already.append(run_dir)
    else:
        import yaml

        from harness.core.metric_records import tracked_series

        config = yaml.safe_load((run_dir / "config.yaml").read_text()) if (run_dir / "config.yaml").is_file() else {}
        metrics_doc = _read(run_dir / "metrics.json")
        series = _read(run_dir / "series.json") if (run_dir / "series.json").is_file() else {}
        gates = {k: g["verdict"] for k, g in (metrics_doc.get("gates") or {}).items()}
        run_id = tracking.record_run(
            uri=store, artifact_root=root, experiment=record["experiment"], run_name=record["run_name"],
            params=tracking.flatten(config or {}), metrics=tracking.run_metrics(metrics_doc["metrics"], gates),
            series=tracked_series(metrics_doc["metrics"], series), tags={**record["tags"], "synced": "true"},
            artifacts_dir=run_dir,
            status=record["status"], parent_run_id=parent or record.get("parent_run_id"),
            run_uid=record["run_uid"])
        report.sent.append(run_dir)
    record.update(state="sent", run_id=run_id, uri=store, error=None)
    _write(record_file, record)
    outcome_file = run_dir / "outcome.json"
    if outcome_file.is_file():
        out = _read(outcome_file)
        out["mlflow_run_id"] = run_id
        if out.get("status") == STATUS_TRACKING:  # the case itself had passed its checks
            out["status"] = STATUS_OK
            out["message"] = None
            out["exit_code"] = {"pass": 0, "warn": 0}.get(out.get("verdict"), 1)
        _write(outcome_file, out)
        if run is None:  # the uploaded copy now says what the directory says
            tracking.client(store).log_artifact(run_id, str(outcome_file))
            tracking.client(store).log_artifact(run_id, str(record_file))


def find_run_dirs(paths: Sequence[Path]) -> tuple:
    """(sweep dirs, run dirs with a tracking record) under ``paths``."""
    sweeps, runs = set(), set()
    for root in paths:
        root = Path(root).resolve()
        if not root.exists():
            raise FileNotFoundError(f"sync: {root}: no such file or directory")
        for f in ([root / STATE_FILE] if (root / STATE_FILE).is_file() else []) + list(root.rglob(STATE_FILE)):
            sweeps.add(f.parent)
        for f in ([root / TRACKING_FILE] if (root / TRACKING_FILE).is_file() else []) + list(root.rglob(TRACKING_FILE)):
            runs.add(f.parent)
    return sorted(sweeps), sorted(runs)


def sync(paths: Sequence[Path], uri: Optional[str] = None, recheck: bool = False) -> SyncReport:
    """Send every unsent parent and run under ``paths``; see the module docstring."""
    report = SyncReport()
    sweeps, runs = find_run_dirs(paths)
    parents: Dict[Path, Optional[str]] = {}
    for sweep in sweeps:
        try:
            tracking.probe(uri or (_read(sweep / STATE_FILE).get("parent") or {}).get("uri", "none"))
            parents[sweep] = sync_parent(sweep, uri, report)
        except Exception as exc:  # noqa: BLE001 - reported, the next sweep is tried
            report.failed[sweep] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    for run_dir in runs:
        try:
            record = _read(run_dir / TRACKING_FILE)
            if record.get("state") != "sent" or recheck:  # a sent run is not "not sent" while its store is down
                tracking.probe(uri or record["uri"])
            sync_run(run_dir, uri, report, parent=parents.get(run_dir.parent), recheck=recheck)
        except Exception as exc:  # noqa: BLE001
            report.failed[run_dir] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return report


def main(argv: Optional[List[str]] = None) -> int:
    from harness.core.compose import default_outputs

    ap = argparse.ArgumentParser(prog="python -m harness.sync", description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path, help="run, sweep or outputs directories")
    ap.add_argument("--uri", default=None, help="send to this tracking store instead of the configured one")
    ap.add_argument("--recheck", action="store_true",
                    help="look every run up in the store by its uid, also those marked sent")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        report = sync(args.paths or [Path(default_outputs())], args.uri, args.recheck)
    except FileNotFoundError as exc:
        print(f"harness.sync: error: {exc}", file=sys.stderr)
        return 2
    print(report.line(), flush=True)
    for path, why in report.failed.items():
        print(f"  not sent: {path}: {why}", flush=True)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
