"""The suite dashboard: ``<suite dir>/dashboard.html``, one self-contained page.

A verdict matrix (one row per family, one cell per case) with regressions highlighted,
each cell showing the verdict, the key metrics and the wall time and linking to the run's
own report (``<job>/report.html``, written by harness.report when absent) and figures;
below it the suite's counts and the table of every case. Reads only the suite directory
(``suite.json`` and the job directories), so ``python -m harness.report <suite dir>``
rebuilds it anywhere.
"""
from __future__ import annotations

import html
import json
import logging
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from harness.core.atomic import atomic_write_text

log = logging.getLogger(__name__)
FILE = "dashboard.html"

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;
font-size:.85em;vertical-align:top}th{background:#f3f3f3}
.matrix td.cell{width:13em}.matrix td.cell a{color:inherit}
.pass{background:#d9f2d9}.warn{background:#fff3c4}.fail{background:#f8d0d0}.error,.invalid{background:#f0b8b8}
.skipped{background:#e4e4e4}.unsent{background:#dfe8f7}
.regression{outline:3px solid #c00;outline-offset:-3px}
.reg-flag{color:#c00;font-weight:bold}.metrics{font-family:monospace;font-size:.8em;color:#333}
.summary span{margin-right:1.2em}
"""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _cls(row: Mapping[str, Any]) -> str:
    s = row["status"]
    if s == "ok":
        return str(row["verdict"])
    return {"tracking_error": "unsent"}.get(s, s)


def _rel(target: Optional[str], base: Path) -> Optional[str]:
    if not target:
        return None
    try:
        return str(Path(target).resolve().relative_to(base.resolve()))
    except ValueError:
        return Path(target).resolve().as_uri()


def _run_report(row: Mapping[str, Any]) -> Optional[Path]:
    """The run's own report.html (written once by harness.report)."""
    from harness.studies import report

    run_dir = Path(row["run_dir"]) if row.get("run_dir") else None
    if run_dir is None or not (run_dir / "metrics.json").is_file():
        return None
    target = run_dir / "report.html"
    if not target.is_file():
        try:
            report.write(run_dir)
        except Exception as exc:  # a report never fails a suite
            log.warning("report of %s: %s", run_dir, exc)
            return None
    return target


def _wall(row: Mapping[str, Any]) -> str:
    return "-" if row.get("wall_s") is None else f"{row['wall_s']:.2f}"


def _cell(row: Mapping[str, Any], base: Path) -> str:
    from harness.suites.rows import (
        is_regression,
        key_metric_text,
        regression_status,
        row_verdict,
    )

    cls = _cls(row) + (" regression" if is_regression(row) else "")
    fam = str(row.get("family") or "")
    name = row["case"][len(fam) + 1:] if row["case"].startswith(fam + "/") else row["case"]
    link = _rel(str(_run_report(row) or ""), base) if row.get("run_dir") else None
    title = f'<a href="{_e(link)}">{_e(name)}</a>' if link else _e(name)
    figs = []
    if row.get("run_dir") and Path(row["run_dir"]).is_dir():
        for p in sorted(Path(row["run_dir"]).glob("*.png"))[:4]:
            figs.append(f'<a class="figure" href="{_e(_rel(str(p), base))}">{_e(p.stem)}</a>')
    wall = "-" if row.get("wall_s") is None else f"{row['wall_s']:.2f} s"
    reg = regression_status(row)
    reg_html = f'<div class="reg-flag">REGRESSION: {_e(", ".join((row.get("regression") or {}).get("regressed") or []))}</div>' \
        if is_regression(row) else f"<div>regression: {_e(reg)}</div>"
    return (f'<td class="cell {_e(cls)}" data-case="{_e(row["case"])}" data-verdict="{_e(_cls(row))}" '
            f'data-regression="{_e(reg)}"><b>{title}</b> {_e(row_verdict(row))}'
            f'<div class="metrics">{_e(key_metric_text(row))}</div><div>wall {_e(wall)}</div>{reg_html}'
            + (f'<div>figures: {" ".join(figs)}</div>' if figs else "") + "</td>")


def build(suite_dir: Path) -> str:
    """The HTML text of the dashboard of ``suite_dir`` (which holds suite.json)."""
    from harness.suites.rows import (
        is_regression,
        key_metric_text,
        regression_status,
        row_verdict,
    )

    suite_dir = Path(suite_dir)
    summary: Dict[str, Any] = json.loads((suite_dir / "suite.json").read_text())
    rows: List[Dict[str, Any]] = summary["rows"]
    families: Dict[str, List[Dict[str, Any]]] = {}
    for r in rows:
        families.setdefault(r.get("family") or "?", []).append(r)
    width = max(len(v) for v in families.values()) if families else 0
    matrix = []
    for fam, items in families.items():
        cells = "".join(_cell(r, suite_dir) for r in items)
        cells += "<td></td>" * (width - len(items))
        matrix.append(f'<tr data-family="{_e(fam)}"><th>{_e(fam)}</th>{cells}</tr>')
    c = summary["counts"]
    verdict = "FAILED" if summary["exit_code"] else "PASSED"
    listing = []
    for r in rows:
        reg_cls = " regression" if is_regression(r) else ""
        listing.append(f'<tr class="{_e(_cls(r))}{reg_cls}"><td>{_e(r["case"])}</td><td>{_e(row_verdict(r))}</td>'
                       f'<td>{_e(regression_status(r))}</td><td>{_wall(r)}</td>'
                       f'<td class="metrics">{_e(key_metric_text(r))}</td><td><code>{_e(r.get("mlflow_run_id") or "-")}</code></td>'
                       f'<td>{_e(r.get("message") or "")}</td></tr>')
    parent = summary.get("parent_run_id")
    body = [f'<h1>suite {_e(summary["suite"])} <span class="{"fail" if summary["exit_code"] else "pass"}" '
            f'id="suite-verdict" data-exit-code="{_e(summary["exit_code"])}">{verdict}</span></h1>',
            '<p class="summary">' + "".join(f'<span id="count-{_e(k)}">{_e(k)} {_e(v)}</span>' for k, v in c.items())
            + f'<span>wall {summary["wall_s"]:.1f} s</span></p>',
            f'<p>started {_e(summary.get("started_utc") or "")}; launcher <code>{_e(summary.get("launcher") or "")}</code>; '
            f'MLflow parent run <code>{_e(parent or "-")}</code> at <code>{_e(summary.get("tracking_uri") or "-")}</code>; '
            f'<a href="junit.xml">junit.xml</a></p>',
            "<h2>verdict matrix</h2>", f'<table class="matrix">{"".join(matrix)}</table>',
            "<h2>cases</h2>",
            '<table class="cases"><tr><th>case</th><th>verdict</th><th>regression</th><th>wall [s]</th>'
            f'<th>key metrics</th><th>MLflow run</th><th>message</th></tr>{"".join(listing)}</table>']
    from harness.suites.slurm_table import section as slurm_section

    body.append(slurm_section(rows))  # hydra/launcher=slurm: id, node, queue wait, run time per job
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>suite {_e(summary["suite"])}</title>'
            f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>\n")


def write(suite_dir: Path, out: Optional[Path] = None) -> Path:
    target = Path(out) if out else Path(suite_dir) / FILE
    atomic_write_text(target, build(suite_dir))
    return target
