"""A suite's rows (one dict per case, as ``suite.json`` holds them) in words: verdict, regression, counts.

Shared by the summary table (:mod:`harness.suites.suite`), JUnit and the dashboard.
"""
from __future__ import annotations

from typing import Any, Dict, Sequence

STATUS_SKIPPED = "skipped"


def regression_status(row: Dict[str, Any]) -> str:
    """ok / regression / no_baseline / config_changed / off / '-' (not judged) of a row."""
    reg = row.get("regression") or {}
    return str(reg.get("status") or "-")


def is_regression(row: Dict[str, Any]) -> bool:
    return regression_status(row) == "regression"


def counts(rows: Sequence[Dict[str, Any]]) -> Dict[str, int]:
    """Counts of a suite: cases, pass, warn, fail (gate), error (crash), invalid, skipped, regressions."""
    c = {"cases": len(rows), "pass": 0, "warn": 0, "fail": 0, "error": 0, "invalid": 0, "skipped": 0,
         "regression": 0, "unsent": 0}
    for r in rows:
        s = r["status"]
        if s == STATUS_SKIPPED:
            c["skipped"] += 1
        elif s == "invalid":
            c["invalid"] += 1
        elif s == "error":
            c["error"] += 1
        else:
            c[r["verdict"]] += 1
            if s == "tracking_error":
                c["unsent"] += 1
        if is_regression(r):
            c["regression"] += 1
    return c


def _fmt(v: Any) -> str:
    from harness.core.runner import _fmt as f

    return f(v) if isinstance(v, (int, float)) else str(v)


def row_verdict(row: Dict[str, Any]) -> str:
    """The word the table shows: PASS / WARN / FAIL / ERROR / INVALID / SKIPPED / UNSENT."""
    s = row["status"]
    if s == "ok":
        return row["verdict"].upper() + ("(no gates)" if row.get("no_gates") else "")
    return {"tracking_error": "UNSENT", "error": "ERROR", "invalid": "INVALID", STATUS_SKIPPED: "SKIPPED"}.get(s, s.upper())


def key_metric_text(row: Dict[str, Any]) -> str:
    return "  ".join(f"{k}={_fmt(row['metrics'][k])}" for k in row["key_metrics"] if k in row["metrics"])
