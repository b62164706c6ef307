"""The dashboard's section on Slurm jobs: id, state, node, queue wait and run time per case.

Rows carry ``slurm`` (the job directory's ``slurm.json``, written by
harness.launch.slurm_launcher) when the suite ran on ``hydra/launcher=slurm``; otherwise the
section is empty.
"""
from __future__ import annotations

import html
from typing import Any, Mapping, Sequence


def _s(v: Any) -> str:
    return "-" if v is None else f"{v:.1f}" if isinstance(v, float) else html.escape(str(v))


def section(rows: Sequence[Mapping[str, Any]]) -> str:
    """``<h2>Slurm jobs</h2>`` and a table, or "" when no row ran as a Slurm job."""
    jobs = [r for r in rows if r.get("slurm")]
    if not jobs:
        return ""
    body = "".join(
        f'<tr><td>{html.escape(str(r["case"]))}</td><td><code>{_s(r["slurm"].get("job_id"))}</code></td>'
        f'<td>{_s(r["slurm"].get("state"))}</td><td>{_s(r["slurm"].get("node"))}</td>'
        f'<td>{_s(r["slurm"].get("queue_wait_s"))}</td><td>{_s(r["slurm"].get("run_s"))}</td>'
        f'<td>{_s(r["slurm"].get("lost") or "")}</td></tr>' for r in jobs)
    wait = sum(float(r["slurm"].get("queue_wait_s") or 0.0) for r in jobs)
    run = sum(float(r["slurm"].get("run_s") or 0.0) for r in jobs)
    return ("<h2>Slurm jobs</h2>"
            f'<p id="slurm-totals">{len(jobs)} jobs; queue wait {wait:.1f} s, run time {run:.1f} s in all</p>'
            '<table class="slurm"><tr><th>case</th><th>Slurm job</th><th>state</th><th>node</th>'
            f"<th>queue wait [s]</th><th>run time [s]</th><th>lost</th></tr>{body}</table>")
