"""A self-contained HTML report of a run or a sweep (the command: :mod:`harness.cli.report`).

Reads only the run directory records (metrics.json, manifest.json, outcome.json, the
figures; for a sweep study_state.json, study/ and, when it ran on Slurm, each job's slurm.json):
verdicts, metric tables with their gate bands, figures embedded as data URIs (the file opens
anywhere, offline), the timings, the Slurm jobs (id, state, node, queue wait, run time) and the
manifest's SHA-256 hashes. Writes ``report.html`` in the directory (or ``-o FILE``) atomically
and prints its path.
"""
from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

from harness.core.atomic import atomic_write_text
from harness.studies import slurm_jobs

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;
font-size:.9em}th{background:#f3f3f3}code{font-size:.85em}
.pass{background:#d9f2d9}.warn{background:#fff3c4}.fail{background:#f8d0d0}
.badge{padding:.15em .6em;border-radius:.3em;font-weight:bold}
figure{display:inline-block;margin:.5em;vertical-align:top}figure img{max-width:520px;border:1px solid #ddd}
figcaption{font-size:.8em;color:#555}details{margin:.4em 0}
code{overflow-wrap:anywhere}.scroll{overflow-x:auto;max-width:100%}.scroll table{margin:0}
table.jobs td,table.jobs th{white-space:nowrap}.note{font-size:.85em;color:#555}
"""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _num(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return _e(v)
    if math.isnan(v):
        return "NaN"
    return f"{v:.6g}" if v == 0 or 1e-3 <= abs(v) < 1e5 else f"{v:.4e}"


def _precise(v: Any) -> str:
    """A solution value with the digits an extrapolation needs (10 significant)."""
    return f"{v:.10g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else _e(v)


def _load(path: Path) -> Optional[Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _badge(verdict: str) -> str:
    v = str(verdict).lower()
    return f'<span class="badge {_e(v)}" data-verdict="{_e(v)}">{_e(v.upper())}</span>'


def _figures(paths: Iterable[Path]) -> str:
    parts = []
    for p in sorted(paths):
        data = base64.b64encode(p.read_bytes()).decode("ascii")
        parts.append(f'<figure><img alt="{_e(p.name)}" src="data:image/png;base64,{data}">'
                     f"<figcaption>{_e(p.name)}</figcaption></figure>")
    return "".join(parts) or "<p>No figures.</p>"


def _metrics_table(doc: Dict[str, Any]) -> str:
    gates = doc.get("gates") or {}
    rows = []
    for name, value in sorted((doc.get("metrics") or {}).items()):
        g = gates.get(name)
        band = ", ".join(f"{k}={_num(v)}" for k, v in ((g or {}).get("band") or {}).items() if v is not None)
        verdict = g["verdict"] if g else ""
        cls = f' class="{_e(verdict)}"' if verdict else ""
        rows.append(f"<tr{cls}><td>{_e(name)}</td><td>{_num(value)}</td><td>{_e(band)}</td>"
                    f"<td>{_e(verdict) or 'not judged'}</td></tr>")
    return ('<table class="metrics"><tr><th>metric</th><th>value</th><th>gate band</th><th>verdict</th></tr>'
            + "".join(rows) + "</table>")


def _manifest(m: Dict[str, Any]) -> str:
    git = m.get("git") or {}
    head = (f"<p>config SHA-256 <code>{_e(m.get('config_sha256', ''))}</code>; git <code>"
            f"{_e(git.get('commit', '?'))}</code> dirty={_e(git.get('dirty'))}; created {_e(m.get('created_utc', ''))}</p>")
    files = []
    for kind in ("inputs", "outputs"):
        for f in m.get(kind) or []:
            files.append(f"<tr><td>{kind[:-1]}</td><td>{_e(f.get('path'))}</td><td>{_e(f.get('size'))}</td>"
                         f"<td><code>{_e(f.get('sha256'))}</code></td></tr>")
    timings = ", ".join(f"{_e(k)} {v:.3g} s" for k, v in (m.get("timings_s") or {}).items())
    return (head + f"<p>timings: {timings}</p>"
            + '<table class="hashes"><tr><th>kind</th><th>file</th><th>bytes</th><th>SHA-256</th></tr>'
            + "".join(files) + "</table>")


def run_section(run_dir: Path, level: int = 2) -> str:
    """The report of one run directory."""
    doc = _load(run_dir / "metrics.json") or {}
    outcome = _load(run_dir / "outcome.json") or {}
    manifest = _load(run_dir / "manifest.json") or {}
    h = f"h{level}"
    msg = outcome.get("message") or doc.get("message")
    parts = [f"<{h}>{_e(doc.get('case', run_dir.name))} {_badge(doc.get('verdict', 'fail'))}</{h}>",
             f"<p>status {_e(doc.get('status', '?'))}; MLflow run <code>{_e(outcome.get('mlflow_run_id') or '-')}"
             f"</code>; directory <code>{_e(run_dir)}</code></p>"]
    if msg:
        parts.append(f"<p>{_e(msg)}</p>")
    parts += [_metrics_table(doc), _figures(run_dir.glob("*.png"))]
    if manifest:
        parts.append(f"<details><summary>manifest</summary>{_manifest(manifest)}</details>")
    return "\n".join(parts)


def _verification(study: Dict[str, Any]) -> str:
    """Solution verification of a convergence study: the error metric's order (or round-off)
    and, per solution quantity, the convergence type, order, f_ext, GCI, asymptotic ratio, u_num."""
    parts = []
    em = study.get("error_metric") or {}
    if em:
        if em.get("at_round_off"):
            txt = (f"error metric <code>{_e(em.get('name'))}</code> is at round-off at every level (&le; "
                   f"{_num(em.get('round_off_bound'))}): no order is fitted and the order gate does not apply")
        else:
            gate = em.get("order_gate")
            gate_txt = (f"; expected {_num(gate['expected'])} &plusmn; {_num(gate['tolerance'])}: {_e(gate['verdict'])}"
                        if isinstance(gate, dict) else "")
            pairs = ", ".join(_num(p) for p in em.get("pairwise") or [])
            txt = (f"error metric <code>{_e(em.get('name'))}</code>: observed order per pair of levels {pairs}; "
                   f"least-squares over all levels {_num(em.get('least_squares'))}{gate_txt}")
        parts.append(f'<p class="error-metric">{txt}</p>')
    rows, coverage = [], ""
    for q, v in (study.get("verification") or {}).items():
        ls = (v.get("least_squares") or {}).get("p")
        rows.append(f'<tr data-quantity="{_e(q)}"><td>{_e(q)}</td><td class="convergence">{_e(v.get("convergence"))}</td>'
                    f"<td>{_num(v.get('R'))}</td><td>{_num(v.get('p'))}</td><td>{_num(ls) if ls is not None else '-'}</td>"
                    f"<td>{_precise(v.get('f1'))}</td><td>{_precise(v.get('f_extrapolated'))}</td>"
                    f"<td>{_num(100 * v['gci_fine']) if v.get('gci_fine') is not None else '-'}</td>"
                    f"<td class=\"asymptotic\">{_num(v.get('asymptotic_ratio'))}</td><td class=\"u_num\">{_num(v.get('u_num'))}</td>"
                    f"<td>{_e(v.get('note', ''))}</td></tr>")
        coverage = v.get("coverage") or coverage
    if rows:
        parts.append('<h2>solution verification</h2><div class="scroll"><table class="verification"><tr>'
                     "<th>quantity</th><th>convergence</th><th>R = &epsilon;21/&epsilon;32</th><th>p (last three)</th>"
                     "<th>p (least squares)</th><th>f1 (finest)</th><th>f extrapolated</th><th>GCI12 [%]</th>"
                     "<th>asymptotic ratio GCI23/(r<sup>p</sup> GCI12)</th><th>u_num</th><th>note</th></tr>"
                     + "".join(rows) + "</table></div>")
        if coverage:
            parts.append(f'<p class="note">{_e(coverage)}</p>')
    return "\n".join(parts)


def _validation(study: Dict[str, Any]) -> str:
    """The V&V 20 comparison table of a validation study."""
    val = study.get("validation") or {}
    if not val:
        return ""
    meta = val.get("metadata") or {}
    label = ("CONSTRUCTED data for tests, not measurements" if meta.get("constructed")
             else f"measured data: {meta.get('citation')}")
    cols = ("point", "quantity", "n_samples", "S", "D", "E", "u_num", "u_input", "u_D", "u_val", "E_lo", "E_hi",
            "E_over_u_val", "verdict")
    rows = "".join(f'<tr class="{_e(r.get("verdict"))}">' + "".join(f"<td>{_num(r.get(c))}</td>" for c in cols) + "</tr>"
                   for r in val.get("points") or [])
    return (f"<h2>validation (ASME V&V 20)</h2><p>{_e(label)}; source: {_e(meta.get('source', ''))}</p>"
            f"<p>E = S &minus; D, u_val = sqrt(u_num&sup2; + u_input&sup2; + u_D&sup2;), interval E &plusmn; "
            f"{_num(val.get('k'))} u_val; gate on |E|/u_val: "
            f"{_e(', '.join(f'{b} {_num(x)}' for b, x in (val.get('band') or {}).items() if x is not None))}; "
            f"{_e(val.get('n_samples'))} "
            f"Latin hypercube samples (seed {_e(val.get('seed'))}) of {_e(', '.join(val.get('inputs') or {}))}</p>"
            '<div class="scroll"><table class="validation"><tr>' + "".join(f"<th>{c}</th>" for c in cols)
            + f"</tr>{rows}</table></div>")


def sweep_section(sweep_dir: Path) -> str:
    study = _load(sweep_dir / "study" / "study.json") or {}
    jobs: List[Dict[str, Any]] = study.get("jobs") or []
    metric_cols = sorted({k for j in jobs for k in j if k not in
                          ("job", "case", "status", "verdict", "mlflow_run_id") and not k.startswith("gate_")})
    rows = []
    for j in jobs:
        cells = "".join(f"<td>{_num(j.get(c))}</td>" for c in metric_cols)
        rows.append(f'<tr class="{_e(j.get("verdict"))}"><td>{_e(j.get("job"))}</td><td>{_e(j.get("case"))}</td>'
                    f'<td>{_e(j.get("status"))}</td><td>{_e(j.get("verdict"))}</td>{cells}'
                    f'<td><code>{_e(j.get("mlflow_run_id") or "-")}</code></td></tr>')
    head = "".join(f"<th>{_e(c)}</th>" for c in metric_cols)
    metrics = "".join(f"<tr><td>{_e(k)}</td><td>{_num(v)}</td></tr>" for k, v in (study.get("metrics") or {}).items())
    parts = [f"<h1>study {_e(study.get('name', sweep_dir.name))} {_badge(study.get('verdict', 'fail'))}</h1>",
             f"<p>jobs {_e(study.get('n_jobs'))}, failed {_e(study.get('n_failed'))}, unsent "
             f"{_e(study.get('n_unsent', 0))}; directory <code>{_e(sweep_dir)}</code></p>"]
    if study.get("levels_replaced"):
        parts.append(f"<p>levels from the command line, in place of the study's own: "
                     f"{_e('; '.join(study['levels_replaced']))}</p>")
    parts += [_verification(study), _validation(study)]
    if metrics:
        parts.append('<details><summary>all study metrics</summary><div class="scroll"><table class="study">'
                     f"<tr><th>study metric</th><th>value</th></tr>{metrics}</table></div></details>")
    parts += [_figures((sweep_dir / "study").glob("*.png")), "<h2>jobs</h2>",
              f'<div class="scroll"><table class="jobs"><tr><th>job</th><th>case</th><th>status</th><th>verdict</th>{head}'
              f"<th>MLflow run</th></tr>{''.join(rows)}</table></div>", slurm_jobs.sweep_section(sweep_dir)]
    for job_dir in sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)):
        parts.append(f"<details><summary>job {_e(job_dir.name)}</summary>{run_section(job_dir, 3)}</details>")
    return "\n".join(parts)


def build(path: Path) -> str:
    """The HTML text of the report of a run directory or a sweep directory."""
    path = Path(path)
    if (path / "study_state.json").is_file() or (path / "study").is_dir():
        title, body = f"sweep {path.name}", sweep_section(path)
    elif (path / "metrics.json").is_file():
        title, body = f"run {path.name}", run_section(path, 1)
    else:
        raise FileNotFoundError(f"{path}: neither a run directory (metrics.json) nor a sweep (study_state.json)")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{CSS}</style></head><body>{body}</body></html>\n")


def write(path: Path, out: Optional[Path] = None) -> Path:
    target = Path(out) if out else Path(path) / "report.html"
    atomic_write_text(target, build(path))
    return target
