"""Hydra callback of ``hydra/launcher=ray_cluster``: what Ray did with each job of a sweep.

Ray re-runs a task whose worker process or node died (``max_retries`` in
conf/hydra/launcher/ray_cluster.yaml); never for an exception, since the harness's task
function returns failures as outcomes. This callback makes such re-runs visible and safe:

* ``on_job_start`` (on the Ray worker, before the job): appends the attempt (Ray node id, pid,
  raylet pid, start time) to ``<job dir>/ray_attempts.json``; an attempt after the first
  deletes the MLflow run an earlier attempt of the same job left under the sweep's parent (tag
  ``run_dir``; it died while recording), so a re-run job has one run, not two.
* ``on_multirun_end`` (launching process, before the study ends the parent): tags the parent
  run with ``ray.retried_jobs``, ``ray.nodes`` and ``ray.retried`` (which jobs, on which nodes).

A job lost for good (Ray gave up after ``max_retries``, e.g. no node left that can run it)
makes the Ray launcher raise: the multirun stops, the CLI ends the parent FAILED with the
reason in tag ``error``, and every run recorded before stays. Outside a Ray worker the
callback does nothing. Job directories must be on a file system all nodes share (the study
reads them too).
"""
from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)
ATTEMPTS_FILE = "ray_attempts.json"


def read_attempts(job_dir: Path) -> List[Dict[str, Any]]:
    p = Path(job_dir) / ATTEMPTS_FILE
    try:
        return json.loads(p.read_text()) if p.is_file() else []
    except (OSError, ValueError):
        return []


def _tracking_target(config: DictConfig) -> Tuple[Optional[str], Optional[str]]:
    """(tracking URI, parent run id) of a sweep job, or (None, None)."""
    from harness.studies.aggregate import PARENT_RUN_KEY

    t = OmegaConf.select(config, "tracking")
    parent = (OmegaConf.select(config, "hydra.job.env_set") or {}).get(PARENT_RUN_KEY)
    if t is None or not t.enabled or not parent:
        return None, None
    return str(t.uri), str(parent)


def drop_earlier_records(uri: str, parent: str, job_dir: Path) -> List[str]:
    """Delete the MLflow runs an earlier attempt of this job left under ``parent``; their ids."""
    from harness.tracking import records as tracking

    c = tracking.client(uri)
    exp = c.get_run(parent).info.experiment_id
    runs = c.search_runs([exp], filter_string=f"tags.mlflow.parentRunId = '{parent}' and tags.run_dir = '{job_dir}'",
                         max_results=10)
    for r in runs:
        log.warning("ray: deleting run %s of an earlier attempt of %s", r.info.run_id, job_dir)
        c.delete_run(r.info.run_id)
    return [r.info.run_id for r in runs]


def _in_ray_worker() -> bool:
    from harness.launch.ray_worker import in_ray_worker

    return in_ray_worker()


class RayAttempts(Callback):
    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not _in_ray_worker():
            return
        import ray

        from harness.core.atomic import atomic_write_text

        job_dir = Path(str(config.hydra.runtime.output_dir))
        attempts = read_attempts(job_dir)
        attempts.append({"attempt": len(attempts) + 1, "node_id": ray.get_runtime_context().get_node_id(),
                         "pid": os.getpid(), "raylet_pid": os.getppid(), "start": time.time()})
        path = job_dir / ATTEMPTS_FILE
        atomic_write_text(path, json.dumps(attempts, indent=2))
        if len(attempts) > 1:
            uri, parent = _tracking_target(config)
            if uri:
                try:
                    attempts[-1]["deleted_runs"] = drop_earlier_records(uri, parent, job_dir)
                    atomic_write_text(path, json.dumps(attempts, indent=2))
                except Exception as exc:  # noqa: BLE001 - the job still runs; the study sees the extra run
                    log.error("ray: could not look up earlier records of %s: %s", job_dir, exc)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from harness.studies.aggregate import read_study_state
        from harness.tracking import records as tracking

        sweep_dir = Path(str(config.hydra.sweep.dir))
        jobs = {int(d.name): read_attempts(d) for d in sweep_dir.iterdir() if d.is_dir() and d.name.isdigit()}
        jobs = {k: v for k, v in jobs.items() if v}
        if not jobs:
            return
        retried = {k: v for k, v in sorted(jobs.items()) if len(v) > 1}
        nodes = {a["node_id"] for v in jobs.values() for a in v}
        tags = {"ray.retried_jobs": str(len(retried)), "ray.nodes": str(len(nodes))}
        if retried:
            tags["ray.retried"] = "; ".join(f"job {k}: " + " -> ".join(a["node_id"][:12] for a in v)
                                            for k, v in retried.items())[:5000]
            log.warning("ray: %d job(s) re-run after their worker or node died: %s", len(retried), tags["ray.retried"])
        state = read_study_state(sweep_dir) or {}
        uri, parent = state.get("tracking_uri"), state.get("parent_run_id")
        if uri and parent:
            try:
                tracking.log_batch(uri, parent, tags=tags)
            except Exception as exc:  # noqa: BLE001 - the study still ends the parent
                log.error("ray: could not tag the parent run %s: %s", parent, exc)
