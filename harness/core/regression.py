"""The regression verdict of a case run against its accepted baseline in MLflow (see
:mod:`harness.suites.baseline` for accepting, listing and showing baselines).

Accepted runs carry the tags ``harness.baseline`` = ``true``, ``harness.baseline.<NAME>`` and
``harness.baseline.accepted_ms`` (the acceptance time in epoch ms; the latest wins).

* **Judging** (every case run with tracking on, :func:`judge_outcome`): the accepted run of
  the same case (tag ``case``) and the same config hash (tag ``config_sha256``) with the
  latest ``accepted_ms`` is the baseline. Per metric present in both, by its kind
  (:mod:`harness.metrics.kinds`): timing and memory never (nor any metric of a case tagged
  ``bench``) unless a band names them, counts exactly, errors and values as follows (a metric
  of no declared kind: a value, unless ``gate.regression.timing_patterns`` matches it): the baseline value, the
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

import fnmatch
import logging
import math
from typing import Any, Dict, List, Mapping, Optional

from harness.metrics import kinds as K

log = logging.getLogger(__name__)

TAG = "harness.baseline"
TAG_MS = "harness.baseline.accepted_ms"
TAG_NAME = "harness.baseline.name"
# metric names that are the harness's own bookkeeping, never compared
OWN_PREFIXES = ("gate_", "regression_", "baseline_", "rel_change_")

OK, REGRESSION, NO_BASELINE, CONFIG_CHANGED, OFF, UNKNOWN = (
    "ok", "regression", "no_baseline", "config_changed", "off", "unknown")


def _band_for(metric: str, reg: Mapping[str, Any], analytic: bool, bench: bool = False,
              kind: Optional[str] = None) -> Optional[Dict[str, float]]:
    """The band of one metric, or None when it is not compared (a timing or memory kind, a
    benchmark's, or excluded). ``kind`` (harness.metrics.kinds): counts compare exactly; a metric
    of no declared kind falls back to the ``timing_patterns`` name rule."""
    bands = reg.get("bands") or {}
    if metric in bands:
        b = bands[metric] or {}
        return {"rel": float(b.get("rel", 0.0) or 0.0), "abs": float(b.get("abs", 0.0) or 0.0)}
    if bench or any(fnmatch.fnmatchcase(metric, p) for p in reg.get("exclude") or []):
        return None
    if kind in K.NOT_COMPARED:
        return None
    if kind == K.COUNT:
        return {"rel": 0.0, "abs": 0.0}
    if kind in (None, K.UNDECLARED) and any(fnmatch.fnmatchcase(metric, p) for p in reg.get("timing_patterns") or []):
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
                    analytic: bool, bench: bool = False,
                    kinds: Optional[Mapping[str, str]] = None) -> Dict[str, Dict[str, Any]]:
    """Per metric of the run that the baseline has too: value, baseline, rel_change, band, kind,
    verdict (pass / regression). A metric NaN in the run and absent from the baseline (MLflow
    keeps no NaN) compares equal; one the baseline lacks otherwise is new, not compared.
    kinds: metric -> kind (harness.metrics.kinds); None: every metric judged by the name rules."""
    out: Dict[str, Dict[str, Any]] = {}
    kinds = kinds or {}
    for name in sorted(metrics):
        if name.startswith(OWN_PREFIXES):
            continue
        band = _band_for(name, reg, analytic, bench, kinds.get(name))
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
                     "kind": kinds.get(name, K.UNDECLARED), "verdict": "pass" if ok else REGRESSION}
    return out


def all_experiment_ids(client) -> List[str]:
    from mlflow.entities import ViewType

    return [e.experiment_id for e in client.search_experiments(view_type=ViewType.ACTIVE_ONLY, max_results=10000)]


def quote(s: str) -> str:
    return "'" + str(s).replace("'", "\\'") + "'"


def accepted_runs(client, case: str) -> List[Any]:
    """Every accepted run of ``case`` in the store, newest acceptance first."""
    ids = all_experiment_ids(client)
    if not ids:
        return []
    runs = client.search_runs(ids, filter_string=f"tags.`{TAG}` = 'true' and tags.`case` = {quote(case)}",
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

    from harness.launch import mlflow_sqlite

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
          analytic: bool, bench: bool = False, timeout_s: float = 5.0,
          kinds: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """The regression record of a run (see the module docstring for its statuses)."""
    from harness.tracking import records as tracking

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
    per = compare_metrics(metrics, base.data.metrics, reg, analytic, bench, kinds)
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
                 float(tcfg.get("timeout_s", 5.0)), outcome.kinds)


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
