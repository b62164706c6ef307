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

log = logging.getLogger(__name__)
TAG = "harness.superseded_by"
STATE_FILES = ("study_state.json", "suite_state.json")


def current(runs: Iterable[Any]) -> List[Any]:
    """The runs of ``runs`` (MLflow ``Run`` objects) that no rerun superseded."""
    return [r for r in runs if TAG not in r.data.tags]


def _state(sweep_dir: Path) -> Optional[Dict[str, Any]]:
    for name in STATE_FILES:
        f = sweep_dir / name
        if f.is_file():
            return json.loads(f.read_text())
    return None


def _run_id(job_dir: Path) -> Optional[str]:
    try:
        return json.loads((job_dir / "outcome.json").read_text()).get("mlflow_run_id") or None
    except (OSError, ValueError):
        return None


def mark(sweep_dir: Path) -> Dict[str, str]:
    """Tag the earlier attempts of the jobs the last resume of ``sweep_dir`` reran (module
    docstring); returns ``{old run id: new run id}``. A rerun job that recorded no run (its
    record unsent) leaves its earlier attempts untagged, with a warning."""
    from harness.tracking import records as tracking

    sweep_dir = Path(sweep_dir).resolve()
    state = _state(sweep_dir) or {}
    uri, parent = state.get("tracking_uri"), state.get("parent_run_id")
    resumed = state.get("resumed") or []
    if not (uri and parent and resumed):
        return {}
    c = tracking.client(uri)
    exp = c.get_run(parent).info.experiment_id
    done: Dict[str, str] = {}
    for num in resumed[-1].get("jobs") or []:
        job_dir = sweep_dir / str(num)
        new = _run_id(job_dir)
        runs = c.search_runs([exp], filter_string=f"tags.mlflow.parentRunId = '{parent}' and "
                                                  f"tags.run_dir = '{job_dir}'", max_results=1000)
        old = [r for r in runs if r.info.run_id != new and TAG not in r.data.tags]
        if old and not new:
            log.warning("resume: job %s recorded no run; its earlier runs %s stay untagged", num,
                        [r.info.run_id for r in old])
            continue
        for r in old:
            tracking.log_batch(uri, r.info.run_id, tags={TAG: new})
            if r.info.status in ("RUNNING", "SCHEDULED"):
                tracking.end_run(uri, r.info.run_id, "KILLED")
            done[r.info.run_id] = new
    if done:
        log.warning("resume: %d earlier run(s) tagged %s: %s", len(done), TAG,
                    ", ".join(f"{o} -> {n}" for o, n in done.items()))
    return done
