"""Inside a Slurm job: its id, node, queue wait and run time, for the manifest and the MLflow tags.

:class:`harness.launch.slurm_launcher.HarnessSlurmLauncher` puts the job's Slurm id, node,
submit and start times (epoch seconds, from ``sacct``) in the environment variable
``HARNESS_SLURM_JOB`` when the job starts on its node. Outside such a job both functions
return an empty dict.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any, Dict

JOB_ENV = "HARNESS_SLURM_JOB"


def job_block() -> Dict[str, Any]:
    """``{"job_id", "node", "submit", "start", "queue_wait_s", "run_s"}`` of this Slurm job ({} outside one).

    ``queue_wait_s``: start - submit as Slurm recorded them [s]; ``run_s``: seconds since the job
    started (Slurm's start time, else the moment the job's Python began), at the time of asking.
    """
    text = os.environ.get(JOB_ENV)
    if not text:
        return {}
    try:
        info = json.loads(text)
    except ValueError:
        return {}
    start = info.get("start") or info.get("started_in_job")
    if start:
        info["run_s"] = max(0.0, time.time() - float(start))
    return info


def job_tags() -> Dict[str, str]:
    """The MLflow tags ``slurm.job_id``, ``slurm.node``, ``slurm.queue_wait_s``, ``slurm.run_s``."""
    info = job_block()
    return {f"slurm.{k}": (f"{v:.3f}" if isinstance(v, float) else str(v))
            for k, v in info.items() if k in ("job_id", "node", "queue_wait_s", "run_s") and v is not None}
