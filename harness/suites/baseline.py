"""Accepted baselines in MLflow: accepting, listing and showing them, and what a reference names.

Convention (other modules and generic cases rely on it):

* **Accepting** (``python -m harness baseline accept REF [--name NAME]``) tags every accepted
  case run with

  - ``harness.baseline`` = ``true``
  - ``harness.baseline.<NAME>`` = the acceptance time (UTC, ISO 8601)
  - ``harness.baseline.accepted_ms`` = the acceptance time in epoch ms (the latest wins)

  and writes one **baseline record**: an MLflow run named ``baseline:<NAME>`` in the
  experiment ``<prefix>baselines`` (tags ``harness.kind=baseline``,
  ``harness.baseline.name=<NAME>``, ``source``) holding the artifact ``baseline.json``::

      {"format": "harness-baseline/1", "name": ..., "accepted_utc": ..., "source": ...,
       "entries": [{"case", "run_id", "experiment_id", "config_sha256", "git_commit",
                    "verdict", "metrics": {name: value}}]}

  NAME defaults to the suite's name (``run`` for a single run). Accepting again under the
  same name writes a newer record; ``baseline show NAME`` shows the newest.
* **Judging** and **recording** of every later run against its baseline: :mod:`harness.core.regression`.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from harness.core.regression import (
    OWN_PREFIXES,
    TAG,
    TAG_MS,
    TAG_NAME,
    all_experiment_ids,
    quote,
)

log = logging.getLogger(__name__)

KIND_TAG = "harness.kind"
RECORD_FILE = "baseline.json"
RECORD_FORMAT = "harness-baseline/1"
BASELINE_EXPERIMENT = "baselines"


# ----------------------------------------------------------------------------- references
class RefError(ValueError):
    """A run reference that names nothing (exit 2)."""


def _is_run_id(ref: str) -> bool:
    return len(ref) == 32 and all(ch in "0123456789abcdef" for ch in ref)


def _children(client, run) -> List[Any]:
    """The child runs of ``run``, without those a resume superseded (harness.studies.superseded)."""
    from harness.studies.superseded import current

    return current(client.search_runs([run.info.experiment_id],
                                      filter_string=f"tags.mlflow.parentRunId = {quote(run.info.run_id)}",
                                      max_results=10000))


def latest_suite_run(client):
    ids = all_experiment_ids(client)
    runs = client.search_runs(ids, filter_string=f"tags.`{KIND_TAG}` = 'suite'", order_by=["attributes.start_time DESC"],
                              max_results=1) if ids else []
    if not runs:
        raise RefError("latest: no suite run in the store (run one: python -m harness suite=fast)")
    return runs[0]


def resolve(client, ref: str) -> Dict[str, Any]:
    """What ``ref`` names: ``{"kind": suite|run|baseline, "name", "runs": [MLflow runs]}``.

    ref: ``latest`` (the newest suite run), an MLflow run id (a suite's parent run: its
    children), a run directory or suite directory (its recorded run ids), or ``baseline:NAME``.
    """
    if ref.startswith("baseline:"):
        rec = read_record(client, ref.split(":", 1)[1])
        return {"kind": "baseline", "name": ref, "record": rec,
                "runs": [client.get_run(e["run_id"]) for e in rec["entries"]]}
    if ref == "latest":
        run = latest_suite_run(client)
        return {"kind": "suite", "name": run.info.run_name, "parent": run, "runs": _children(client, run)}
    path = Path(ref)
    if path.is_dir():
        if (path / "suite.json").is_file():
            doc = json.loads((path / "suite.json").read_text())
            ids = [r["mlflow_run_id"] for r in doc["rows"] if r.get("mlflow_run_id")]
            if not ids:
                raise RefError(f"{path}/suite.json: no case of the suite was recorded in MLflow")
            return {"kind": "suite", "name": f"suite:{doc['suite']}", "runs": [client.get_run(i) for i in ids],
                    "parent_run_id": doc.get("parent_run_id")}
        if (path / "outcome.json").is_file():
            out = json.loads((path / "outcome.json").read_text())
            if not out.get("mlflow_run_id"):
                raise RefError(f"{path}/outcome.json: the run was not recorded in MLflow (python -m harness.sync)")
            return {"kind": "run", "name": out["case"], "runs": [client.get_run(out["mlflow_run_id"])]}
        raise RefError(f"{path}: neither a suite directory (suite.json) nor a run directory (outcome.json)")
    if _is_run_id(ref):
        from mlflow.exceptions import MlflowException

        try:
            run = client.get_run(ref)
        except MlflowException as exc:
            raise RefError(f"{ref}: no such MLflow run") from exc
        if run.data.tags.get(KIND_TAG) == "suite":
            return {"kind": "suite", "name": run.info.run_name, "parent": run, "runs": _children(client, run)}
        return {"kind": "run", "name": run.data.tags.get("case", run.info.run_name), "runs": [run]}
    raise RefError(f"{ref!r}: not 'latest', an MLflow run id, a run or suite directory, or baseline:NAME")


# ----------------------------------------------------------------------------- records
def _now() -> tuple:
    ms = int(time.time() * 1000)
    return ms, datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat()


def accept(uri: str, ref: str, name: Optional[str] = None, artifact_root: Optional[str] = None,
           prefix: str = "harness/") -> Dict[str, Any]:
    """Mark the runs ``ref`` names as the accepted baseline ``name``; returns the record."""
    from harness.tracking import records as tracking

    c = tracking.client(uri)
    target = resolve(c, ref)
    if name is None:
        base = target["name"]
        name = base.split(":", 1)[1] if base.startswith(("suite:", "baseline:")) else "run"
    if not name or any(ch in name for ch in " /'\"`"):
        raise RefError(f"--name: {name!r}: a baseline name is one word without / or quotes")
    ms, iso = _now()
    entries, skipped = [], []
    for run in target["runs"]:
        tags = run.data.tags
        if tags.get("status") not in ("ok",) or "case" not in tags:
            skipped.append(f"{tags.get('case', run.info.run_id)} ({tags.get('status', 'no status')})")
            continue
        tracking.log_batch(uri, run.info.run_id, tags={TAG: "true", f"{TAG}.{name}": iso, TAG_MS: str(ms)})
        entries.append({"case": tags["case"], "run_id": run.info.run_id, "experiment_id": run.info.experiment_id,
                        "config_sha256": tags.get("config_sha256", ""), "git_commit": tags.get("git_commit", ""),
                        "verdict": tags.get("verdict", ""),
                        "metrics": {k: v for k, v in run.data.metrics.items() if not k.startswith(OWN_PREFIXES)}})
    if not entries:
        raise RefError(f"{ref}: no run with status ok to accept" + (f" (skipped: {', '.join(skipped)})" if skipped else ""))
    if target.get("parent") is not None:  # a suite's parent run: name it, not "latest"
        ref = f"{target['parent'].info.run_id} ({target['name']})"
    record = {"format": RECORD_FORMAT, "name": name, "accepted_utc": iso, "accepted_ms": ms, "source": ref,
              "source_kind": target["kind"], "skipped": skipped,
              "entries": sorted(entries, key=lambda e: e["case"])}
    exp = tracking.ensure_experiment(uri, tracking.experiment_name(prefix, BASELINE_EXPERIMENT), artifact_root)
    run_id = tracking.start_run(uri, exp, f"baseline:{name}", tags={
        KIND_TAG: "baseline", TAG_NAME: name, "source": ref[:5000], "n_cases": str(len(entries)),
        "mlflow.note.content": f"Baseline **{name}**: {len(entries)} accepted case runs from `{ref}` at {iso}."})
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / RECORD_FILE
        p.write_text(json.dumps(record, indent=2))
        c.log_artifact(run_id, str(p))
    tracking.log_batch(uri, run_id, metrics={"n_cases": float(len(entries))})
    tracking.end_run(uri, run_id, "FINISHED")
    record["record_run_id"] = run_id
    return record


def record_runs(client) -> List[Any]:
    ids = all_experiment_ids(client)
    runs = client.search_runs(ids, filter_string=f"tags.`{KIND_TAG}` = 'baseline'", max_results=10000) if ids else []
    return sorted(runs, key=lambda r: r.info.start_time, reverse=True)


def read_record(client, name: str) -> Dict[str, Any]:
    """The newest record of baseline ``name``."""
    runs = [r for r in record_runs(client) if r.data.tags.get(TAG_NAME) == name]
    if not runs:
        known = sorted({r.data.tags.get(TAG_NAME, "?") for r in record_runs(client)})
        raise RefError(f"baseline {name!r}: not found (baselines: {', '.join(known) or 'none'})")
    with tempfile.TemporaryDirectory() as tmp:
        path = client.download_artifacts(runs[0].info.run_id, RECORD_FILE, tmp)
        rec = json.loads(Path(path).read_text())
    rec["record_run_id"] = runs[0].info.run_id
    return rec


def list_text(client) -> str:
    runs = record_runs(client)
    if not runs:
        return "no baselines (accept one: python -m harness baseline accept latest)"
    lines = [f"{'name':<20} {'accepted (UTC)':<26} {'cases':>5}  source"]
    newest = set()
    for r in runs:
        t = r.data.tags
        name = t.get(TAG_NAME, "?")
        mark = "" if name not in newest else "  (superseded)"
        newest.add(name)
        when = datetime.fromtimestamp(r.info.start_time / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        lines.append(f"{name:<20} {when:<26} {t.get('n_cases', '?'):>5}  {t.get('source', '')}{mark}")
    return "\n".join(lines)


def show_text(rec: Dict[str, Any]) -> str:
    from harness.core.runner import _fmt

    lines = [f"baseline {rec['name']}: {len(rec['entries'])} cases, accepted {rec['accepted_utc']} from "
             f"{rec['source']} (record run {rec.get('record_run_id')})"]
    width = max(len(e["case"]) for e in rec["entries"])
    for e in rec["entries"]:
        shown = "  ".join(f"{k}={_fmt(v)}" for k, v in list(sorted(e["metrics"].items()))[:4])
        lines.append(f"  {e['case']:<{width}}  {e['verdict'].upper():<4}  config {e['config_sha256'][:12]}  "
                     f"git {e['git_commit'][:10]}  run {e['run_id']}  {shown}")
    if rec.get("skipped"):
        lines.append(f"  not accepted: {', '.join(rec['skipped'])}")
    return "\n".join(lines)


def tracking_target(overrides: Sequence[str]):
    """(uri, artifact_root, experiment prefix) of the configured store (``tracking=...`` overrides)."""
    from harness.core.compose import compose
    from harness.core.context import HarnessInputError

    cfg = compose(list(overrides))
    t = cfg.tracking
    if not t.enabled:
        raise HarnessInputError("tracking.enabled: baselines live in MLflow; tracking=none has no store")
    from harness.tracking import records as tracking

    try:
        tracking.probe(str(t.uri), float(t.timeout_s))
    except tracking.TrackingError as exc:
        raise HarnessInputError(str(exc)) from exc
    return str(t.uri), t.get("artifact_root"), str(t.experiment_prefix)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m harness baseline accept REF [--name NAME] | list | show NAME [overrides]``."""
    from harness.core.context import HarnessInputError
    from harness.tracking import records as tracking

    ap = argparse.ArgumentParser(prog="python -m harness baseline", description="Accepted baselines in MLflow.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("accept", help="accept the runs of a suite run id, a run or suite directory, or 'latest'")
    a.add_argument("ref")
    a.add_argument("--name", default=None, help="baseline name (default: the suite's name)")
    a.add_argument("overrides", nargs="*", help="config overrides choosing the store, e.g. tracking=server")
    ls = sub.add_parser("list", help="every baseline record, newest first")
    ls.add_argument("overrides", nargs="*")
    sh = sub.add_parser("show", help="the cases, config hashes, commits and metrics of a baseline")
    sh.add_argument("name")
    sh.add_argument("overrides", nargs="*")
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        uri, root, prefix = tracking_target(args.overrides)
        c = tracking.client(uri)
        if args.cmd == "accept":
            rec = accept(uri, args.ref, args.name, root, prefix)
            print(f"accepted baseline {rec['name']}: {len(rec['entries'])} case runs"
                  + (f"; not accepted: {', '.join(rec['skipped'])}" if rec["skipped"] else ""))
        elif args.cmd == "list":
            print(list_text(c))
        else:
            print(show_text(read_record(c, args.name)))
    except (RefError, HarnessInputError) as exc:
        print(f"harness baseline: error: {exc}", file=sys.stderr)
        return 2
    return 0
