"""The MLflow runs of the attempts a resume replaced: kept, tagged, left out of results.

When ``python -m harness resume`` reruns a job (harness.studies.resume), the job's earlier
attempt may have left a child run under the sweep's parent (an error, an interrupted or skipped
job; its directory moved to ``.resumed/``). Nothing recorded is deleted: :func:`mark` tags each
such run ``harness.superseded_by=<the rerun job's run id>`` (a run still RUNNING, whose worker
died while recording, is ended KILLED; FAILED and KILLED stay as they are). The study and suite
results are built from the job directories, so they hold only the rerun job; ``compare`` and
``baseline`` (harness.suites.baseline) skip runs carrying the tag via :func:`current`.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

from harness.core.sweep_state import read_state

log = logging.getLogger(__name__)
TAG = "harness.superseded_by"


def current(runs: Iterable[Any]) -> List[Any]:
    """The runs of ``runs`` (MLflow ``Run`` objects) that no rerun superseded."""
    return [r for r in runs if TAG not in r.data.tags]


def _run_id(job_dir: Path) -> Optional[str]:
    try:
        return json.loads((job_dir / "outcome.json").read_text()).get("mlflow_run_id") or None
    except (OSError, ValueError):
        return None


def mark(sweep_dir: Path) -> Dict[str, str]:
    """Tag the earlier attempts of every job a resume of ``sweep_dir`` reran (module docstring;
    the runs under the parent whose tag ``run_dir`` is that job's directory, other than the one its
    ``outcome.json`` names); returns ``{old run id: new run id}`` of the runs tagged now. A rerun
    job that recorded no run (its record unsent) leaves its earlier attempts untagged, with a
    warning; runs tagged before stay as they are (a second call tags nothing)."""
    from harness.tracking import records as tracking

    sweep_dir = Path(sweep_dir).resolve()
    state = read_state(sweep_dir) or {}
    uri, parent = state.get("tracking_uri"), state.get("parent_run_id")
    rerun = {str(sweep_dir / str(n)) for r in state.get("resumed") or [] for n in r.get("jobs") or []}
    if not (uri and parent and rerun):
        return {}
    c = tracking.client(uri)
    kids = c.search_runs([c.get_run(parent).info.experiment_id],
                         filter_string=f"tags.mlflow.parentRunId = '{parent}'", max_results=10000)
    done: Dict[str, str] = {}
    for r in current(kids):
        job_dir = r.data.tags.get("run_dir")
        if job_dir not in rerun:
            continue
        new = _run_id(Path(job_dir))
        if new == r.info.run_id:
            continue
        if not new:
            log.warning("resume: %s recorded no run; the earlier run %s stays untagged", job_dir, r.info.run_id)
            continue
        tracking.log_batch(uri, r.info.run_id, tags={TAG: new})
        if r.info.status in ("RUNNING", "SCHEDULED"):
            tracking.end_run(uri, r.info.run_id, "KILLED")
        done[r.info.run_id] = new
    if done:
        log.warning("resume: %d earlier run(s) tagged %s: %s", len(done), TAG,
                    ", ".join(f"{o} -> {n}" for o, n in done.items()))
    return done
