"""Accepted baselines in MLflow and the regression verdict of every later run.

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
* **Judging** (every case run with tracking on, :func:`judge_outcome`): the accepted run of
  the same case (tag ``case``) and the same config hash (tag ``config_sha256``) with the
  latest ``accepted_ms`` is the baseline. Per metric present in both, except timings
  (``gate.regression.timing_patterns``; every metric of a case tagged ``bench``) unless a
  band names them: the baseline value, the
  relative change (value - baseline) / |baseline| and a verdict, ``pass`` if
  |value - baseline| <= rel |baseline| + abs, else ``regression`` (bands: ``analytic_rel``
  / ``analytic_abs`` for cases tagged ``analytic``, ``rel`` / ``abs`` otherwise,
  ``gate.regression.bands.<metric>`` for one metric). A metric the baseline lacks is new,
  not compared (a gated metric the run lost fails its gate). Statuses: ``ok``, ``regression``,
  ``no_baseline`` (the case was never accepted), ``config_changed`` (accepted, but not
  with this config hash: no comparable baseline, never a regression), ``off`` (tracking
  off), ``unknown`` (the store could not be searched).
* **Recording**: MLflow metrics ``regression_<metric>`` (0 pass, 2 regression),
  ``baseline_<metric>``, ``rel_change_<metric>``; tags ``regression`` (the status) and
  ``regression.baseline_run_id``; ``outcome.json`` key ``regression``. A regression makes
  the exit code 1 unless ``gate.regression.enforce=false``.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import logging
import math
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

log = logging.getLogger(__name__)

TAG = "harness.baseline"
TAG_MS = "harness.baseline.accepted_ms"
TAG_NAME = "harness.baseline.name"
KIND_TAG = "harness.kind"
RECORD_FILE = "baseline.json"
RECORD_FORMAT = "harness-baseline/1"
BASELINE_EXPERIMENT = "baselines"
# metric names that are the harness's own bookkeeping, never compared
OWN_PREFIXES = ("gate_", "regression_", "baseline_", "rel_change_")

OK, REGRESSION, NO_BASELINE, CONFIG_CHANGED, OFF, UNKNOWN = (
    "ok", "regression", "no_baseline", "config_changed", "off", "unknown")


# ----------------------------------------------------------------------------- judging
def _band_for(metric: str, reg: Mapping[str, Any], analytic: bool, bench: bool = False) -> Optional[Dict[str, float]]:
    """The band of one metric, or None when it is not compared (a timing, a benchmark's, or excluded)."""
    bands = reg.get("bands") or {}
    if metric in bands:
        b = bands[metric] or {}
        return {"rel": float(b.get("rel", 0.0) or 0.0), "abs": float(b.get("abs", 0.0) or 0.0)}
    if bench or any(fnmatch.fnmatchcase(metric, p) for p in reg.get("exclude") or []):
        return None
    if any(fnmatch.fnmatchcase(metric, p) for p in reg.get("timing_patterns") or []):
        return None
    if analytic:
        return {"rel": float(reg.get("analytic_rel", 1e-12)), "abs": float(reg.get("analytic_abs", 1e-14))}
    return {"rel": float(reg.get("rel", 1e-6)), "abs": float(reg.get("abs", 0.0))}


def rel_change(value: float, base: float) -> float:
    """(value - base) / |base|; 0 when both are equal, ±inf when only the baseline is 0."""
    if value == base or (math.isnan(value) and math.isnan(base)):
        return 0.0
    if base == 0.0:
        return math.copysign(math.inf, value)
    return (value - base) / abs(base)


def compare_metrics(metrics: Mapping[str, float], base: Mapping[str, float], reg: Mapping[str, Any],
                    analytic: bool, bench: bool = False) -> Dict[str, Dict[str, Any]]:
    """Per metric of the run that the baseline has too: value, baseline, rel_change, band,
    verdict (pass / regression). A metric NaN in the run and absent from the baseline (MLflow
    keeps no NaN) compares equal; one the baseline lacks otherwise is new, not compared."""
    out: Dict[str, Dict[str, Any]] = {}
    for name in sorted(metrics):
        if name.startswith(OWN_PREFIXES):
            continue
        band = _band_for(name, reg, analytic, bench)
        if band is None:
            continue
        v = float(metrics[name])
        if name not in base and not math.isnan(v):
            continue
        b = float(base.get(name, math.nan))
        if math.isnan(v) or math.isnan(b):
            ok = math.isnan(v) and math.isnan(b)
        else:
            ok = abs(v - b) <= band["rel"] * abs(b) + band["abs"]
        out[name] = {"value": v, "baseline": b, "rel_change": rel_change(v, b), "band": band,
                     "verdict": "pass" if ok else REGRESSION}
    return out


def _all_experiment_ids(client) -> List[str]:
    from mlflow.entities import ViewType

    return [e.experiment_id for e in client.search_experiments(view_type=ViewType.ACTIVE_ONLY, max_results=10000)]


def _quote(s: str) -> str:
    return "'" + str(s).replace("'", "\\'") + "'"


def accepted_runs(client, case: str) -> List[Any]:
    """Every accepted run of ``case`` in the store, newest acceptance first."""
    ids = _all_experiment_ids(client)
    if not ids:
        return []
    runs = client.search_runs(ids, filter_string=f"tags.`{TAG}` = 'true' and tags.`case` = {_quote(case)}",
                              max_results=1000)
    return sorted(runs, key=lambda r: int(r.data.tags.get(TAG_MS, "0")), reverse=True)


def find_baseline(client, case: str, config_sha: str):
    """(status, baseline run or None, newest accepted run of the case or None)."""
    runs = accepted_runs(client, case)
    if not runs:
        return NO_BASELINE, None, None
    same = [r for r in runs if r.data.tags.get("config_sha256") == config_sha]
    if not same:
        return CONFIG_CHANGED, None, runs[0]
    return OK, same[0], runs[0]


def _may_have_baseline(uri: str, case: str) -> bool:
    """False only when a local sqlite store certainly holds no accepted run of ``case``."""
    import sqlite3

    from harness import mlflow_sqlite

    path = mlflow_sqlite.db_path(uri)
    if path is not None and not path.is_file():  # no store yet (and none created by looking)
        return False
    db = mlflow_sqlite.usable(uri)
    if db is None:
        return True
    try:
        return mlflow_sqlite.has_run_tagged(db, {TAG: "true", "case": case})
    except sqlite3.Error:
        return True


def judge(uri: str, case: str, config_sha: str, metrics: Mapping[str, float], reg: Mapping[str, Any],
          analytic: bool, bench: bool = False, timeout_s: float = 5.0) -> Dict[str, Any]:
    """The regression record of a run (see the module docstring for its statuses)."""
    from harness import tracking

    enforce = bool(reg.get("enforce", True))
    if not _may_have_baseline(uri, case):  # the common case, answered without importing MLflow
        return {"status": NO_BASELINE, "enforce": enforce}
    try:
        tracking.probe(uri, timeout_s)  # an unreachable server is reported at once, not after HTTP retries
        c = tracking.client(uri)
        status, base, newest = find_baseline(c, case, config_sha)
    except Exception as exc:  # noqa: BLE001 - a store that cannot be searched is reported, not fatal
        return {"status": UNKNOWN, "enforce": enforce, "reason": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    if status == NO_BASELINE:
        return {"status": NO_BASELINE, "enforce": enforce}
    if status == CONFIG_CHANGED:
        return {"status": CONFIG_CHANGED, "enforce": enforce, "baseline_run_id": newest.info.run_id,
                "baseline_config_sha256": newest.data.tags.get("config_sha256", ""),
                "reason": "no comparable baseline: the config hash changed since the accepted run"}
    per = compare_metrics(metrics, base.data.metrics, reg, analytic, bench)
    regressed = [m for m, d in per.items() if d["verdict"] == REGRESSION]
    names = sorted(k[len(TAG) + 1:] for k in base.data.tags if k.startswith(TAG + ".")
                   and k not in (TAG_MS, TAG_NAME))
    return {"status": REGRESSION if regressed else OK, "enforce": enforce, "baseline_run_id": base.info.run_id,
            "baseline_name": ",".join(names), "accepted_ms": int(base.data.tags.get(TAG_MS, "0")),
            "regressed": regressed, "metrics": per}


def judge_outcome(cfg, outcome, config_sha: str) -> Dict[str, Any]:
    """The runner's hook: judge a finished case run against its accepted baseline."""
    from omegaconf import OmegaConf

    reg = OmegaConf.to_container(OmegaConf.select(cfg, "gate.regression") or OmegaConf.create({}), resolve=True)
    tcfg = OmegaConf.select(cfg, "tracking")
    if tcfg is None or not tcfg.enabled:
        return {"status": OFF, "enforce": bool(reg.get("enforce", True)), "reason": "tracking is off"}
    tags = list(OmegaConf.select(cfg, "case.tags", default=[]) or [])
    return judge(str(tcfg.uri), outcome.case, config_sha, outcome.metrics, reg, "analytic" in tags, "bench" in tags,
                 float(tcfg.get("timeout_s", 5.0)))


def regression_exit_code(reg: Optional[Mapping[str, Any]]) -> int:
    """1 for an enforced regression, else 0."""
    return 1 if reg and reg.get("status") == REGRESSION and reg.get("enforce", True) else 0


def regression_metrics(reg: Optional[Mapping[str, Any]]) -> Dict[str, float]:
    """MLflow metrics of a regression record: regression_/baseline_/rel_change_<metric>."""
    out: Dict[str, float] = {}
    for name, d in ((reg or {}).get("metrics") or {}).items():
        out[f"regression_{name}"] = 0.0 if d["verdict"] == "pass" else 2.0
        if not math.isnan(d["baseline"]):
            out[f"baseline_{name}"] = float(d["baseline"])
        if not math.isnan(d["rel_change"]):
            out[f"rel_change_{name}"] = max(min(float(d["rel_change"]), 1e308), -1e308)
    return out


def regression_tags(reg: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    if not reg:
        return {}
    tags = {"regression": str(reg.get("status"))}
    if reg.get("baseline_run_id"):
        tags["regression.baseline_run_id"] = str(reg["baseline_run_id"])
    if reg.get("regressed"):
        tags["regression.metrics"] = ",".join(reg["regressed"])[:5000]
    return tags


# ----------------------------------------------------------------------------- references
class RefError(ValueError):
    """A run reference that names nothing (exit 2)."""


def _is_run_id(ref: str) -> bool:
    return len(ref) == 32 and all(ch in "0123456789abcdef" for ch in ref)


def _children(client, run) -> List[Any]:
    return client.search_runs([run.info.experiment_id],
                              filter_string=f"tags.mlflow.parentRunId = {_quote(run.info.run_id)}",
                              max_results=10000)


def latest_suite_run(client):
    ids = _all_experiment_ids(client)
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
    from harness import tracking

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
    ids = _all_experiment_ids(client)
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
    from harness.runner import _fmt

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
    from harness.compose import compose
    from harness.context import HarnessInputError

    cfg = compose(list(overrides))
    t = cfg.tracking
    if not t.enabled:
        raise HarnessInputError("tracking.enabled: baselines live in MLflow; tracking=none has no store")
    from harness import tracking

    try:
        tracking.probe(str(t.uri), float(t.timeout_s))
    except tracking.TrackingError as exc:
        raise HarnessInputError(str(exc)) from exc
    return str(t.uri), t.get("artifact_root"), str(t.experiment_prefix)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m harness baseline accept REF [--name NAME] | list | show NAME [overrides]``."""
    from harness import tracking
    from harness.context import HarnessInputError

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
