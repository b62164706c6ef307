"""Order studies of manufactured solutions: h from the meshes, an expected order per error.

Two optional keys of ``study.extra`` extend the convergence study of
:mod:`harness.studies.aggregate`:

- ``h_metric``: the name of a job metric holding the level's mesh size (e.g. ``h`` = the largest
  cell diameter read from the mesh the solver wrote), used as h in place of the swept parameter;
- ``orders``: ``{metric: expected order}`` (e.g. ``{e_L2: 2, e_H1: 1}`` for P1), each gated at
  ``study.order_tolerance`` like the study's own ``metric``; the observed orders are logged as
  ``observed_order_<metric>`` (last pair) and ``observed_order_ls_<metric>`` (least squares).
"""
from __future__ import annotations

import logging
import math
from typing import Any, Dict, Optional

import numpy as np
from omegaconf import DictConfig

from harness.metrics import gates as G
from harness.metrics import verification as V

log = logging.getLogger(__name__)


def h_metric(study: DictConfig) -> Optional[str]:
    """The metric giving h, or None (h from the swept parameter)."""
    extra = study.get("extra") or {}
    value = extra.get("h_metric")
    return str(value) if value else None


def levels_from_metric(ok, study: DictConfig):
    """h of the computed levels from ``extra.h_metric``, coarse to fine, and the sort order."""
    name = h_metric(study)
    if name not in ok:
        raise ValueError(f"study.extra.h_metric: {name!r} is not a metric of the jobs")
    h = ok[name].to_numpy(float)
    order = np.argsort(-h)
    return h[order], order


def gate_orders(ok, study: DictConfig, h: np.ndarray, order: np.ndarray) -> Dict[str, Any]:
    """Observed order of every metric of ``extra.orders`` against its expected order."""
    orders = dict((study.get("extra") or {}).get("orders") or {})
    metrics: Dict[str, float] = {}
    report: Dict[str, Any] = {}
    verdicts = [G.PASS]
    factor = float(study.get("roundoff_factor") or V.ROUNDOFF_FACTOR)
    for name, expected in orders.items():
        if name not in ok:
            report[name] = {"verdict": G.FAIL, "note": "not a metric of the jobs"}
            verdicts.append(G.FAIL)
            continue
        e = ok[name].to_numpy(float)[order]
        eo = V.error_order(h, e, 1.0, factor)
        entry: Dict[str, Any] = {"expected": float(expected), "pairwise": eo["pairwise"],
                                 "least_squares": eo["least_squares"], "at_round_off": eo["at_round_off"]}
        if eo["at_round_off"]:
            entry["verdict"] = G.WARN
            entry["note"] = ("at round-off at every level: the discrete space represents the manufactured "
                             "solution exactly, no order can be measured (choose a non-polynomial solution)")
            log.warning("study %s: %s: %s", study.name, name, entry["note"])
            verdicts.append(G.WARN)
        else:
            band = G.Band(pass_min=float(expected) - float(study.order_tolerance),
                          pass_max=float(expected) + float(study.order_tolerance))
            entry["verdict"] = band.judge(eo["last"])
            verdicts.append(entry["verdict"])
            metrics[f"observed_order_{name}"] = eo["last"]
            if math.isfinite(eo["least_squares"]):
                metrics[f"observed_order_ls_{name}"] = eo["least_squares"]
        report[name] = entry
    return {"metrics": metrics, "orders": report, "verdict": G.worst(verdicts)}
