"""The kinds of a case run's metrics and the names its series get in MLflow.

* :func:`adapter_kinds`: metric -> kind (harness.metrics.kinds) from what the adapter declared
  per metric (``CaseResult.kinds``), its module's ``METRIC_KINDS`` table and the common table;
* :func:`kind_tags`: the MLflow tags ``metric_kinds.<kind>`` = the comma-joined metric names;
* :func:`tracked_series`: a series named like a scalar metric is logged as ``series.<name>``.
  MLflow keeps one history per name and reports its last step as *the* value: a series
  ``energy_residual_full`` (signed, per step) logged under the scalar's name made the baseline
  read -1.289e-3 (its last step) where the run had recorded +1.837e-3 (issue 32).
"""
from __future__ import annotations

import logging
import sys
from typing import Any, Dict, Mapping

from harness.metrics import kinds as K

log = logging.getLogger(__name__)

SERIES_PREFIX = "series."
MAX_TAG = 5000


def adapter_kinds(adapter: Any, metrics: Mapping[str, float], declared: Mapping[str, str]) -> Dict[str, str]:
    """metric -> kind of a run; an undeclared one is logged (and recorded as ``undeclared``)."""
    module = sys.modules.get(getattr(adapter, "__module__", "") or "")
    table = getattr(module, "METRIC_KINDS", {}) if module is not None else {}
    for name, kind in declared.items():
        K.check_kind(kind, f"metric {name!r}")
    kinds = K.resolve(metrics, declared, [table])
    missing = K.undeclared(kinds)
    if missing:
        log.info("metrics without a declared kind (compared as values): %s", ", ".join(missing))
    return kinds


def kind_tags(kinds: Mapping[str, str]) -> Dict[str, str]:
    """``metric_kinds.<kind>`` -> sorted comma-joined metric names (one tag per kind in use)."""
    by: Dict[str, list] = {}
    for name, kind in kinds.items():
        by.setdefault(kind, []).append(name)
    return {f"metric_kinds.{k}": ",".join(sorted(v))[:MAX_TAG] for k, v in sorted(by.items())}


def tracked_series(metrics: Mapping[str, float], series: Mapping[str, Any]) -> Dict[str, Any]:
    """The series as MLflow histories: a name a scalar metric has too becomes ``series.<name>``."""
    return {(SERIES_PREFIX + name if name in metrics else name): values for name, values in series.items()}
