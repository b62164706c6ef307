"""Benchmark of the Slurm launcher (case ``bench/slurm_overhead``).

The same ``jobs`` small jobs (``job_case`` at ``job_key`` = ``job_first``, ``job_first`` + 1, ...)
are swept twice with the CLI into one pre-created store, in this run: with the basic launcher
(one after another in one process) and with ``hydra/launcher=slurm`` with one job at a time
(``array_parallelism=1``), so both do the same work in the same order. Per-job overhead of Slurm
= (wall(slurm) - wall(basic)) / jobs [s]: what a job costs beyond its own time on the basic
launcher (submission, the scheduler pass that starts the next task, a Python process per job,
waiting for the results). Ratio = wall(slurm) / wall(basic). The median queue wait and run time
Slurm recorded (whole seconds) are logged too, and the cluster's ``SchedulerParameters`` (its
``batch_sched_delay``, default 3 s, bounds how soon the next task starts) go into the manifest.
Needs a running Slurm cluster (``SLURM_CONF``; ``python tests/slurm_cluster.py start DIR``).
"""
from __future__ import annotations

import json
import logging
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

from omegaconf import OmegaConf

from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.families.metric_kinds import SLURM_BENCH as METRIC_KINDS  # noqa: F401 - read by the runner

log = logging.getLogger(__name__)


def _params(cfg) -> Dict[str, Any]:
    p = OmegaConf.to_container(cfg.case.params, resolve=True) or {}
    for key in ("jobs", "job_first"):
        v = p.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise HarnessInputError(f"case.params.{key}: must be an integer >= 1, got {v!r}")
    if not os.environ.get("SLURM_CONF") and not Path("/etc/slurm/slurm.conf").is_file():
        raise HarnessInputError("case bench/slurm_overhead: needs a Slurm cluster (SLURM_CONF is not set and "
                                "/etc/slurm/slurm.conf does not exist; python tests/slurm_cluster.py start DIR)")
    return p


def _sweep(p: Dict[str, Any], outputs: Path, launcher: List[str]) -> Dict[str, Any]:
    """One sweep of the jobs as a CLI process; its wall time [s] and its sweep directory."""
    levels = ",".join(str(p["job_first"] + i) for i in range(p["jobs"]))
    cmd = [sys.executable, "-m", "harness", "-m", f"+case={p['job_case']}", f"{p['job_key']}={levels}",
           f"paths.outputs={outputs}", *launcher]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=dict(os.environ, HARNESS_OUTPUTS=str(outputs)), capture_output=True, text=True,
                         timeout=3600)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError(f"sweep {' '.join(launcher) or 'basic'} exited {res.returncode}: {res.stderr[-2000:]}")
    sweep = sorted(p for p in (outputs / "sweeps").glob("*/*/*") if p.is_dir())[-1]
    return {"wall_s": wall, "sweep_dir": str(sweep)}


def _scheduler_parameters() -> str:
    """The cluster's ``SchedulerParameters`` as ``scontrol show config`` reports them."""
    res = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=60)
    for line in res.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "SchedulerParameters":
            return value.strip()
    return "?"


def run(cfg, ctx: RunContext) -> CaseResult:
    p = _params(cfg)
    from harness.tracking import records as tracking

    inner = ctx.run_dir / "inner"
    tracking.ensure_experiment(f"sqlite:///{inner / 'mlflow.db'}", "harness/bench", str(inner / "mlartifacts"))
    with ctx.stage("basic"):
        basic = _sweep(p, inner, [])
    with ctx.stage("slurm"):
        slurm = _sweep(p, inner, ["hydra/launcher=slurm", "hydra.launcher.array_parallelism=1",
                                  *(f"hydra.launcher.{k}={v}" for k, v in (p.get("launcher") or {}).items())])
    jobs = json.loads((Path(slurm["sweep_dir"]) / "slurm_jobs.json").read_text())["jobs"]
    waits = [float(j["queue_wait_s"]) for j in jobs.values() if j.get("queue_wait_s") is not None]
    runs = [float(j["run_s"]) for j in jobs.values() if j.get("run_s") is not None]
    n = p["jobs"]
    metrics = {"basic_wall_s": basic["wall_s"], "slurm_wall_s": slurm["wall_s"],
               "slurm_ratio": slurm["wall_s"] / basic["wall_s"],
               "slurm_overhead_per_job_s": (slurm["wall_s"] - basic["wall_s"]) / n,
               "slurm_queue_wait_median_s": statistics.median(waits) if waits else float("nan"),
               "slurm_run_median_s": statistics.median(runs) if runs else float("nan"),
               "slurm_jobs_completed": float(sum(j.get("state") == "COMPLETED" for j in jobs.values()))}
    ctx.write_json("bench.json", {"basic": basic, "slurm": slurm, "slurm_jobs": jobs})
    log.info("slurm overhead per job %.3g s (ratio %.3g)", metrics["slurm_overhead_per_job_s"], metrics["slurm_ratio"])
    return CaseResult(metrics=metrics, info={"jobs": n, "job_case": p["job_case"],
                                             "scheduler_parameters": _scheduler_parameters()})
