"""Benchmark of the harness itself (case ``bench/harness_overhead``).

role=bench (the benchmark):
  * overhead: a child process runs ``overhead_cases`` small cases through
    :func:`harness.core.api.run_case` with a sqlite store; per case, overhead = wall time of
    run_case - the adapter's own time (manifest ``timings_s.run``) [s]; the median is gated.
  * launchers: the same ``sweep_jobs`` equal CPU-bound jobs (role=work) are swept twice with
    the CLI, basic launcher then joblib with ``workers`` processes, into one pre-created
    store; speed-up = wall(basic) / wall(joblib), both measured in this run.
  * cli: the whole command a user runs, ``python -m harness +case=<cli_case>``, timed as a
    process (interpreter start, imports, composition, model, records) with tracking=none and
    tracking=local, alternating, ``cli_repeats`` times each, after one warm-up with
    tracking=local that creates the store and the family's experiment (a store's first run
    pays MLflow's schema creation once); added cost of local tracking = best(local) -
    best(none) [s] of wall time (gated) and of CPU time (user + system, logged: steadier on a
    shared machine), both measured in this run.
role=work: one job of that comparison: ``work_repeats`` LU factorisations and solves of a
  fixed, well-conditioned ``work_n`` x ``work_n`` system; metric work_residual (relative).
"""
from __future__ import annotations

import json
import logging
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
from omegaconf import OmegaConf

from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.families.metric_kinds import BENCH as METRIC_KINDS  # noqa: F401 - read by the runner

log = logging.getLogger(__name__)
CASE = "bench/harness_overhead"


def _params(cfg) -> Dict[str, Any]:
    p = OmegaConf.to_container(cfg.case.params, resolve=True) or {}
    if p.get("role") not in ("bench", "work"):
        raise HarnessInputError(f"case.params.role: must be 'bench' or 'work', got {p.get('role')!r}")
    for key in ("overhead_cases", "sweep_jobs", "workers", "work_n", "work_repeats", "cli_repeats"):
        v = p.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise HarnessInputError(f"case.params.{key}: must be an integer >= 1, got {v!r}")
    if p["sweep_jobs"] < 2 or p["workers"] < 2:
        raise HarnessInputError("case.params.sweep_jobs and case.params.workers: must be >= 2 to compare launchers")
    return p


def work(n: int, repeats: int) -> float:
    """Fixed CPU work: ``repeats`` LU solves of one diagonally dominant system; max relative residual."""
    import scipy.linalg as sl

    rng = np.random.default_rng(12345)
    A = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal(n)
    worst = 0.0
    for _ in range(repeats):  # the repetition is the workload, not a hot path over data
        x = sl.lu_solve(sl.lu_factor(A), b)
        worst = max(worst, float(np.linalg.norm(A @ x - b) / np.linalg.norm(b)))
    return worst


def _env(outputs: Path) -> Dict[str, str]:
    return dict(os.environ, HARNESS_OUTPUTS=str(outputs), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                MKL_NUM_THREADS="1", CI="1")


def _overhead(p: Dict[str, Any], outputs: Path) -> List[Dict[str, float]]:
    args = json.dumps({"case": p["overhead_case"], "overrides": list(p["overhead_overrides"]),
                       "n": p["overhead_cases"], "uri": f"sqlite:///{outputs / 'mlflow.db'}"})
    res = subprocess.run([sys.executable, "-m", "harness.families.bench_harness", args], env=_env(outputs),
                         capture_output=True, text=True, timeout=3600)
    if res.returncode != 0:
        raise RuntimeError(f"overhead worker failed: {res.stderr.strip().splitlines()[-1:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _sweep(p: Dict[str, Any], outputs: Path, launcher: List[str]) -> Dict[str, Any]:
    cmd = [sys.executable, "-m", "harness", "-m", *launcher, f"+case={CASE}", "case.params.role=work",
           "case.gates=[work_residual]", "case.key_metrics=[work_residual]",
           f"case.params.work_n={p['work_n']}", f"case.params.work_repeats={p['work_repeats']}",
           f"+case.params.job=range(0,{p['sweep_jobs']})"]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=_env(outputs), capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    ok = f"jobs={p['sweep_jobs']} failed=0" in res.stdout
    if res.returncode != 0 or not ok:
        raise RuntimeError(f"sweep {' '.join(launcher) or 'basic'} failed ({res.returncode}): "
                           f"{(res.stdout + res.stderr).strip().splitlines()[-3:]}")
    return {"launcher": " ".join(launcher) or "basic", "wall_s": wall, "jobs": p["sweep_jobs"]}


def _children_cpu_s() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _cli_once(p: Dict[str, Any], outputs: Path, tracking: str) -> Dict[str, float]:
    """Wall and CPU time (user + system) [s] of one whole CLI process; checks it ran and
    (local) recorded an MLflow run. CPU time barely moves with the load of a shared machine."""
    cmd = [sys.executable, "-m", "harness", f"+case={p['cli_case']}", f"tracking={tracking}"]
    cpu0, t0 = _children_cpu_s(), time.perf_counter()
    res = subprocess.run(cmd, env=_env(outputs), capture_output=True, text=True, timeout=600)
    wall, cpu = time.perf_counter() - t0, _children_cpu_s() - cpu0
    recorded = re.search(r"run=[0-9a-f]{32}", res.stdout) is not None
    if res.returncode != 0 or recorded != (tracking == "local"):
        raise RuntimeError(f"CLI tracking={tracking} failed ({res.returncode}): "
                           f"{(res.stdout + res.stderr).strip().splitlines()[-3:]}")
    return {"wall_s": wall, "cpu_s": cpu}


def _cli(p: Dict[str, Any], outputs: Path) -> Dict[str, Any]:
    """tracking=local against tracking=none as whole processes, alternating (see module docstring)."""
    warmup = _cli_once(p, outputs, "local")["wall_s"]
    runs = []
    for i in range(p["cli_repeats"]):
        for tracking in ("none", "local") if i % 2 == 0 else ("local", "none"):
            runs.append({"tracking": tracking, **_cli_once(p, outputs, tracking)})
    best = {t: min(r["wall_s"] for r in runs if r["tracking"] == t) for t in ("none", "local")}
    cpu = {t: min(r["cpu_s"] for r in runs if r["tracking"] == t) for t in ("none", "local")}
    return {"case": p["cli_case"], "warmup_ran": True, "warmup_local_s": warmup, "runs": runs,
            "none_best_s": best["none"], "local_best_s": best["local"], "added_s": best["local"] - best["none"],
            "added_cpu_s": cpu["local"] - cpu["none"]}


def run(cfg, ctx: RunContext) -> CaseResult:
    p = _params(cfg)
    if p["role"] == "work":
        with ctx.stage("work"):
            r = work(p["work_n"], p["work_repeats"])
        return CaseResult(metrics={"work_residual": r})
    from harness.tracking import records as tracking

    inner = ctx.run_dir / "inner"
    with ctx.stage("overhead"):
        cases = _overhead(p, inner / "overhead")
    overheads = [c["overhead_s"] for c in cases]
    sweeps = inner / "sweeps"
    # the store exists before either sweep starts (both pay the same logging cost)
    tracking.ensure_experiment(f"sqlite:///{sweeps / 'mlflow.db'}", "harness/bench", str(sweeps / "mlartifacts"))
    with ctx.stage("sweeps"):
        basic = _sweep(p, sweeps, [])
        joblib = _sweep(p, sweeps, ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={p['workers']}"])
    with ctx.stage("cli"):
        cli = _cli(p, inner / "cli")
    ctx.write_json("bench.json", {"overhead_cases": cases, "sweeps": [basic, joblib], "cli": cli})
    metrics = {"overhead_median_s": statistics.median(overheads), "overhead_max_s": max(overheads),
               "overhead_min_s": min(overheads), "case_total_median_s": statistics.median(c["total_s"] for c in cases),
               "basic_wall_s": basic["wall_s"], "joblib_wall_s": joblib["wall_s"],
               "joblib_speedup": basic["wall_s"] / joblib["wall_s"],
               "cli_none_s": cli["none_best_s"], "cli_local_s": cli["local_best_s"],
               "cli_tracking_added_s": cli["added_s"], "cli_tracking_added_cpu_s": cli["added_cpu_s"],
               "cli_warmup_ran": 1.0}
    log.info("harness overhead median %.3g s; joblib speed-up %.3g", metrics["overhead_median_s"],
             metrics["joblib_speedup"])
    return CaseResult(metrics=metrics, series={"overhead_s": overheads},
                      info={"overhead_cases": p["overhead_cases"], "sweep_jobs": p["sweep_jobs"],
                            "workers": p["workers"], "cli_repeats": p["cli_repeats"], "cli_warmup_ran": True})


def _overhead_worker(spec: Dict[str, Any]) -> List[Dict[str, float]]:
    """In a fresh process: run the case ``n`` times; total and model time of each."""
    from harness.core.api import run_case
    from harness.tracking import records as tracking

    tracking.ensure_experiment(spec["uri"], "harness/_init", None)  # store creation is not per-case cost
    rows = []
    for _ in range(spec["n"]):
        t0 = time.perf_counter()
        out = run_case(spec["case"], overrides=spec["overrides"], tracking_uri=spec["uri"])
        total = time.perf_counter() - t0
        if out.status != "ok":
            raise RuntimeError(f"{spec['case']}: {out.status}: {out.message}")
        model = json.loads((Path(out.run_dir) / "manifest.json").read_text())["timings_s"]["run"]
        rows.append({"total_s": total, "model_s": model, "overhead_s": total - model})
    return rows


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    print(json.dumps(_overhead_worker(json.loads(sys.argv[1]))))
