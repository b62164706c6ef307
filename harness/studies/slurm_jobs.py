"""An HTML table of the Slurm jobs of a sweep or suite: job id, state, node, queue wait, run time.

Each job directory of a sweep run on ``hydra/launcher=slurm`` holds ``slurm.json`` (written by
harness.launch.slurm_launcher: ``job_id``, ``state``, ``node``, ``queue_wait_s`` and ``run_s`` in
seconds, ``lost`` for a job that ended without a result). :func:`section` renders those of a list
of rows (the suite dashboard's and the per-sweep report's); a sweep run on another launcher has
no ``slurm.json`` and gets no section.
"""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence

JOB_FILE = "slurm.json"  # harness.launch.slurm_launcher.JOB_FILE


def _s(v: Any) -> str:
    return "-" if v is None else f"{v:.1f}" if isinstance(v, float) else html.escape(str(v))


def sweep_rows(sweep_dir: Path) -> List[Dict[str, Any]]:
    """``{"job": N, "case": ..., "slurm": <slurm.json>}`` of every job directory of ``sweep_dir``
    that holds a readable ``slurm.json``, in job-number order."""
    rows = []
    for d in sorted((p for p in Path(sweep_dir).iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)):
        try:
            rec = json.loads((d / JOB_FILE).read_text())
        except (OSError, ValueError):
            continue
        try:
            case = json.loads((d / "outcome.json").read_text()).get("case", "?")
        except (OSError, ValueError):
            case = "?"
        rows.append({"job": int(d.name), "case": case, "slurm": rec})
    return rows


def section(rows: Sequence[Mapping[str, Any]], label: str = "case") -> str:
    """``<h2>Slurm jobs</h2>``, the totals and a table with one line per row carrying ``slurm``
    (first column: the row's ``label``, e.g. its case or job number), or "" when none does."""
    jobs = [r for r in rows if r.get("slurm")]
    if not jobs:
        return ""
    body = "".join(
        f'<tr><td>{html.escape(str(r[label]))}</td><td><code>{_s(r["slurm"].get("job_id"))}</code></td>'
        f'<td>{_s(r["slurm"].get("state"))}</td><td>{_s(r["slurm"].get("node"))}</td>'
        f'<td>{_s(r["slurm"].get("queue_wait_s"))}</td><td>{_s(r["slurm"].get("run_s"))}</td>'
        f'<td>{_s(r["slurm"].get("lost") or "")}</td></tr>' for r in jobs)
    wait = sum(float(r["slurm"].get("queue_wait_s") or 0.0) for r in jobs)
    run = sum(float(r["slurm"].get("run_s") or 0.0) for r in jobs)
    return ("<h2>Slurm jobs</h2>"
            f'<p id="slurm-totals">{len(jobs)} jobs; queue wait {wait:.1f} s, run time {run:.1f} s in all</p>'
            f'<table class="slurm"><tr><th>{html.escape(label)}</th><th>Slurm job</th><th>state</th><th>node</th>'
            f"<th>queue wait [s]</th><th>run time [s]</th><th>lost</th></tr>{body}</table>")


def sweep_section(sweep_dir: Path) -> str:
    """The Slurm jobs of a sweep's job directories (first column: the job number), or ""."""
    return section(sweep_rows(sweep_dir), label="job")
