"""Benchmark of a suite's overhead (case ``bench/suite_overhead``).

Runs ``python -m harness suite=<suite> hydra/launcher=joblib hydra.launcher.n_jobs=<workers>``
in a child process into a store created beforehand, then reads the suite directory:

* parallel_efficiency = Σ case wall time in the workers / (workers × span of the jobs),
  span = last job end - first job start [-]; how busy the launcher keeps the workers;
* model_efficiency = Σ model time (manifest ``timings_s.run``) / (workers × suite wall) [-],
  the share of the whole command spent in the models (start-up and per-case records included);
* bookkeeping_s = the suite's own stages (selection, parent run, table, JUnit, dashboard,
  closing the parent run) [s], the MLflow import excluded (``mlflow_import_s``);
* startup_s = first job start - command start [s]; suite_wall_s = the command's wall time [s].
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, List

from omegaconf import OmegaConf

from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.families.metric_kinds import BENCH as METRIC_KINDS  # noqa: F401 - read by the runner


def _params(cfg) -> Dict[str, Any]:
    p = OmegaConf.to_container(cfg.case.params, resolve=True) or {}
    if not isinstance(p.get("workers"), int) or p["workers"] < 1:
        raise HarnessInputError(f"case.params.workers: must be an integer >= 1, got {p.get('workers')!r}")
    if not isinstance(p.get("suite"), str) or not p["suite"]:
        raise HarnessInputError(f"case.params.suite: must be a suite name, got {p.get('suite')!r}")
    if not isinstance(p.get("select_cases", []), list):
        raise HarnessInputError("case.params.select_cases: must be a list of case names or globs")
    return p


def _ts(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def run(cfg, ctx: RunContext) -> CaseResult:
    from harness.tracking import records as tracking

    p = _params(cfg)
    outputs = ctx.run_dir / "inner"
    tracking.ensure_experiment(f"sqlite:///{outputs / 'mlflow.db'}", "harness/_init", str(outputs / "mlartifacts"))
    cmd = [sys.executable, "-m", "harness", f"suite={p['suite']}", "hydra/launcher=joblib",
           f"hydra.launcher.n_jobs={p['workers']}"]
    if p.get("select_cases"):
        cmd.append(f"suite.select.cases=[{','.join(p['select_cases'])}]")
    env = dict(os.environ, HARNESS_OUTPUTS=str(outputs), CI="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    with ctx.stage("suite"):
        t0 = time.time()
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=7200)
        wall = time.time() - t0
    suite_dirs = sorted((outputs / "suites" / p["suite"]).glob("*/suite.json"))
    if not suite_dirs:
        raise RuntimeError(f"the suite left no suite.json (exit {res.returncode}): "
                           f"{(res.stdout + res.stderr).strip().splitlines()[-3:]}")
    summary = json.loads(suite_dirs[-1].read_text())
    rows: List[Dict[str, Any]] = [r for r in summary["rows"] if r.get("started_utc")]
    starts, ends = [_ts(r["started_utc"]) for r in rows], [_ts(r["ended_utc"]) for r in rows]
    span = max(ends) - min(starts)
    case_wall = sum(float(r["wall_s"]) for r in rows)
    model = 0.0
    for r in rows:
        m = Path(r["run_dir"]) / "manifest.json"
        if m.is_file():
            model += float(json.loads(m.read_text())["timings_s"].get("run", 0.0))
    w = p["workers"]
    timings = summary.get("timings_s") or {}
    metrics = {"parallel_efficiency": case_wall / (w * span), "model_efficiency": model / (w * wall),
               "bookkeeping_s": float(summary["bookkeeping_s"]), "mlflow_import_s": float(timings.get("mlflow_import", 0.0)),
               "suite_wall_s": wall, "jobs_span_s": span, "case_wall_sum_s": case_wall, "model_time_sum_s": model,
               "startup_s": min(starts) - t0, "n_cases": float(len(summary["rows"])),
               "suite_exit_code": float(res.returncode), "n_not_passed": float(sum(1 for r in summary["rows"]
                                                                                  if r["exit_code"] != 0))}
    metrics.update({f"stage_{k}_s": float(v) for k, v in timings.items()})
    ctx.write_json("bench.json", {"command": cmd, "metrics": metrics, "suite_dir": str(suite_dirs[-1].parent),
                                  "stdout_tail": res.stdout.strip().splitlines()[-3:]})
    return CaseResult(metrics=metrics, info={"suite": p["suite"], "workers": w, "cases": len(summary["rows"])})
