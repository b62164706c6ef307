"""JUnit XML of a suite (``<suite dir>/junit.xml``), the report every CI server reads.

One ``<testsuite>`` (the suite) with one ``<testcase>`` per case: ``classname`` = family,
``name`` = the case name within its family (the full name when filed elsewhere, e.g.
``bench/export``), ``time`` = wall time [s];

* ``<failure type="gate">`` for a failed gate, ``<failure type="regression">`` for an
  enforced regression against the accepted baseline;
* ``<error type="invalid|error|tracking_error">`` for invalid input, a crash, an unsent record;
* ``<skipped>`` for a case the suite skipped (time budget spent);
* ``<properties>``: verdict, status, regression status, the key metrics, the MLflow run id,
  the run directory; ``<system-out>``: the case's verdict line.

The layout follows the JUnit schema Jenkins and GitLab read (``schemas/junit.xsd``).
"""
from __future__ import annotations

import math
import socket
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, List, Mapping

from harness.core.atomic import atomic_write_text


def _num(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return repr(v)
    return str(v)


def _case_name(case: str, family: str) -> str:
    """The case name inside its family (``load_transfer/sign`` -> ``sign``); a case filed
    under another folder keeps its full name (``bench/export`` of family load_transfer)."""
    return case[len(family) + 1:] if case.startswith(family + "/") else case


def _line(row: Mapping[str, Any]) -> str:
    from harness.suites.rows import key_metric_text, regression_status, row_verdict

    wall = "-" if row.get("wall_s") is None else f"{row['wall_s']:.2f} s"
    parts = [row["case"], row_verdict(row), key_metric_text(row), f"regression={regression_status(row)}",
             f"wall={wall}", f"run={row.get('mlflow_run_id') or '-'}"]
    if row.get("message"):
        parts.append(f"({row['message']})")
    return "  ".join(p for p in parts if p)


def _regression_text(reg: Mapping[str, Any]) -> str:
    lines = [f"baseline run {reg.get('baseline_run_id')} ({reg.get('baseline_name', '')})"]
    for m, d in (reg.get("metrics") or {}).items():
        if d["verdict"] != "pass":
            lines.append(f"{m}: value {_num(d['value'])}, baseline {_num(d['baseline'])}, "
                         f"relative change {_num(d['rel_change'])}, band rel {d['band']['rel']} abs {d['band']['abs']}")
    return "\n".join(lines)


def testcase(row: Mapping[str, Any]) -> ET.Element:
    """The ``<testcase>`` element of one suite row."""
    from harness.suites.rows import STATUS_SKIPPED, is_regression, regression_status

    family = str(row.get("family") or "?")
    tc = ET.Element("testcase", {"name": _case_name(row["case"], family), "classname": family,
                                 "time": f"{float(row.get('wall_s') or 0.0):.3f}"})
    props = ET.SubElement(tc, "properties")

    def prop(name: str, value: Any) -> None:
        ET.SubElement(props, "property", {"name": name, "value": _num(value)})

    prop("verdict", row["verdict"])
    prop("status", row["status"])
    prop("regression", regression_status(row))
    prop("mlflow_run_id", row.get("mlflow_run_id") or "")
    if row.get("no_gates"):  # passed with nothing judged (case.gates is empty)
        prop("no_gates", "true")
    prop("run_dir", row.get("run_dir") or "")
    for k in row.get("key_metrics") or []:
        if k in (row.get("metrics") or {}):
            prop(f"metric.{k}", row["metrics"][k])
    status = row["status"]
    message = str(row.get("message") or "")
    if status == STATUS_SKIPPED:
        ET.SubElement(tc, "skipped", {"message": message or "skipped"})
    elif status in ("invalid", "error", "tracking_error"):
        el = ET.SubElement(tc, "error", {"type": status, "message": message.splitlines()[0] if message else status})
        el.text = message
    else:
        if row["verdict"] == "fail":
            failed = [f"{g}: {_num(row['metrics'].get(g, float('nan')))}" for g, v in (row.get("gates") or {}).items()
                      if v == "fail"]
            el = ET.SubElement(tc, "failure", {"type": "gate", "message": "gate failed: " + ", ".join(failed)})
            el.text = "\n".join(failed)
        reg = row.get("regression") or {}
        if is_regression(row) and reg.get("enforce", True):
            el = ET.SubElement(tc, "failure", {"type": "regression",
                                               "message": "regression against the accepted baseline: "
                                                          + ", ".join(reg.get("regressed") or [])})
            el.text = _regression_text(reg)
    out = ET.SubElement(tc, "system-out")
    out.text = _line(row)
    return tc


def build(summary: Mapping[str, Any]) -> ET.Element:
    """The ``<testsuites>`` element of a suite summary (harness.suites.finish)."""
    from harness.suites.rows import STATUS_SKIPPED

    rows: List[Dict[str, Any]] = list(summary["rows"])
    cases = [testcase(r) for r in rows]
    n_fail = sum(1 for tc in cases if tc.find("failure") is not None)
    n_err = sum(1 for tc in cases if tc.find("error") is not None)
    n_skip = sum(1 for r in rows if r["status"] == STATUS_SKIPPED)
    total = f"{float(summary.get('wall_s') or 0.0):.3f}"
    counts = {"tests": str(len(rows)), "failures": str(n_fail), "errors": str(n_err), "skipped": str(n_skip)}
    root = ET.Element("testsuites", {"name": f"harness suite {summary['suite']}", **counts, "time": total})
    ts = ET.SubElement(root, "testsuite", {"name": str(summary["suite"]), **counts, "time": total,
                                           "timestamp": str(summary.get("started_utc") or "")[:19],
                                           "hostname": socket.gethostname(), "id": "0", "package": "harness"})
    props = ET.SubElement(ts, "properties")
    for name, value in (("suite", summary["suite"]), ("mlflow_parent_run_id", summary.get("parent_run_id") or ""),
                        ("exit_code", summary["exit_code"]), ("suite_dir", summary.get("sweep_dir", "")),
                        ("launcher", summary.get("launcher") or "")):
        ET.SubElement(props, "property", {"name": name, "value": _num(value)})
    ts.extend(cases)
    ET.SubElement(ts, "system-out").text = f"suite {summary['suite']}: exit {summary['exit_code']}"
    ET.SubElement(ts, "system-err").text = ""
    return root


def write(summary: Mapping[str, Any], path: Path) -> Path:
    """Write the JUnit XML of ``summary`` atomically."""
    root = build(summary)
    ET.indent(root)
    atomic_write_text(Path(path), '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")
    return Path(path)
