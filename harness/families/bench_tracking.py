"""Tracking-store benchmark (case ``bench/tracking_server``) and its tiny job (``bench/tracking_job``).

role=job (the tiny analytic job the team tests sweep by the dozen):
  composite trapezoid rule for I = ∫_0^π sin x dx = 2 with ``n`` = ``n_base + job`` intervals.
  Its closed form is T_n = h·cot(h/2) with h = π/n, so the job reports the quadrature error
  |T_n - 2| and the residual |T_n - h·cot(h/2)| / 2 against the closed form (gated, ≤ 1e-12).
  ``hold_s`` [s] keeps the job busy for that long (to have jobs in flight when a test stops
  a server or a node); 0 by default.
role=bench (the benchmark):
  two writer processes (the same two for both stores, sqlite first) log the same records (params,
  metrics, tags, three small artifacts of a real job) at the same time, ``runs_per_writer`` each per store and per path, interleaving the
  harness path (:func:`harness.tracking.records.record_run`) and the raw path (bare ``MlflowClient``:
  create_run, one log_batch, log_artifacts, set_terminated). Stores: the embedded sqlite store
  in the run directory and the MLflow server ``server_uri`` (PostgreSQL-backed, see the README
  "Team set-up"). Metrics: runs per second each store absorbed (all runs of both writers / wall
  time from the common start to the last end), their ratio (target ≥ 0.5) and the harness's
  time per run over the raw path's (median per run, server; target ≤ 1.2); not gated:
  ``server_to_sqlite_harness``, the harness's records alone (median time per harness record on
  sqlite over that on the server, every round). One untimed warm-up
  record per path and store runs in each writer first (``warmup: true`` in bench.json). The two
  stores take turns ``repeats`` times (sqlite, server, sqlite, server, ...) and each store's
  best round counts, so a load change on a shared machine between two rounds does not decide
  the ratio; every round is kept in bench.json (``rounds``).
"""
from __future__ import annotations

import json
import logging
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from omegaconf import OmegaConf

from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.families.metric_kinds import BENCH as METRIC_KINDS  # noqa: F401 - read by the runner

log = logging.getLogger(__name__)
EXPERIMENT = "harness/bench_tracking"


def trapezoid_sin(n: int) -> float:
    """Composite trapezoid rule for ∫_0^π sin x dx with ``n`` equal intervals (vectorised)."""
    import numpy as np

    x = np.linspace(0.0, math.pi, n + 1)
    y = np.sin(x)
    h = math.pi / n
    return float(h * (y.sum() - 0.5 * (y[0] + y[-1])))


def trapezoid_sin_closed_form(n: int) -> float:
    """T_n = h·cot(h/2), h = π/n: the exact value of the composite rule for sin on [0, π]."""
    h = math.pi / n
    return h / math.tan(h / 2.0)


def _params(cfg) -> Dict[str, Any]:
    p = OmegaConf.to_container(cfg.case.params, resolve=True) or {}
    role = p.get("role")
    if role not in ("job", "bench"):
        raise HarnessInputError(f"case.params.role: must be 'job' or 'bench', got {role!r}")
    ints = ("n_base", "job") if role == "job" else ("runs_per_writer", "writers", "repeats")
    for key in ints:
        v = p.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < (1 if key != "job" else 0):
            raise HarnessInputError(f"case.params.{key}: must be an integer >= {1 if key != 'job' else 0}, got {v!r}")
    if role == "job":
        hold = p.get("hold_s", 0.0)
        if not isinstance(hold, (int, float)) or isinstance(hold, bool) or not 0 <= hold <= 3600:
            raise HarnessInputError(f"case.params.hold_s: must be a number of seconds in [0, 3600], got {hold!r}")
    else:
        uri = p.get("server_uri")
        if not isinstance(uri, str) or not uri.startswith(("http://", "https://")):
            raise HarnessInputError("case.params.server_uri: must be the http(s) URI of an MLflow server on "
                                    f"PostgreSQL (README, 'Team set-up'), got {uri!r}")
    return p


def run(cfg, ctx: RunContext) -> CaseResult:
    p = _params(cfg)
    if p["role"] == "job":
        return _job(p, ctx)
    return _bench(p, ctx)


def _job(p: Dict[str, Any], ctx: RunContext) -> CaseResult:
    n = int(p["n_base"]) + int(p["job"])
    with ctx.stage("quadrature"):
        t = trapezoid_sin(n)
        exact = trapezoid_sin_closed_form(n)
    if p.get("hold_s"):
        time.sleep(float(p["hold_s"]))  # a job in flight for the tests that stop servers or nodes
    return CaseResult(metrics={"integral": t, "error": abs(t - 2.0), "closed_form_residual": abs(t - exact) / 2.0,
                               "n_intervals": float(n)},
                      info={"n_intervals": n, "hold_s": float(p.get("hold_s") or 0.0)})


# -- the benchmark -------------------------------------------------------------------------------
def _record(run_dir: Path) -> Dict[str, Any]:
    """The records of one real tiny job (its run directory's config, metrics and tags) to log again."""
    import yaml

    from harness.tracking import records as tracking

    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    return {"params": tracking.flatten(config),
            "metrics": tracking.run_metrics(metrics["metrics"], {k: v["verdict"] for k, v in metrics["gates"].items()}),
            "tags": {"verdict": metrics["verdict"], "case": metrics["case"], "status": metrics["status"],
                     "family": "bench", "run_dir": str(run_dir)},
            "artifacts": str(run_dir / "artifacts")}


def _artifacts_dir(job_dir: Path) -> Path:
    """Three small artifacts of a real job: config.yaml, metrics.json, manifest.json."""
    import shutil

    art = job_dir / "artifacts"
    art.mkdir(exist_ok=True)
    for name in ("config.yaml", "metrics.json", "manifest.json"):
        shutil.copyfile(job_dir / name, art / name)
    return art


def machine_busy_cpu_s() -> Optional[float]:
    """CPU time every core of this machine has spent busy since boot [s] (Linux /proc/stat:
    user, nice, system, irq, softirq, steal; not idle or I/O wait); None elsewhere."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    ticks = [int(v) for v in fields]
    busy = ticks[0] + ticks[1] + ticks[2] + sum(ticks[5:8])
    return busy / os.sysconf("SC_CLK_TCK")


class _Writers:
    """``n`` writer processes that log to the stores phase by phase, started together each time."""

    def __init__(self, n: int, stores: List[Dict[str, Any]], record: Dict[str, Any], runs: int, repeats: int):
        spec = json.dumps({"stores": stores, "record": record, "runs": runs, "repeats": repeats})
        env = dict(os.environ, OMP_NUM_THREADS="1", CI="1")
        self.procs = [subprocess.Popen([sys.executable, "-m", "harness.families.bench_tracking", spec], env=env,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True) for _ in range(n)]
        for proc in self.procs:  # each says "ready" after its imports and warm-up records on every store
            self._expect(proc, "ready")

    @staticmethod
    def _expect(proc, what: str) -> str:
        line = proc.stdout.readline().strip()
        if not line.startswith(what):
            proc.kill()
            raise RuntimeError(f"bench writer: expected {what!r}, got {line[:200]!r}: {proc.stderr.read()[-2000:]}")
        return line[len(what):].strip()

    def phase(self) -> Tuple[List[Dict[str, Any]], Optional[float]]:
        """Start every writer on its next store at once; their timings when all are done, and the
        CPU time the whole machine spent meanwhile [s] (None where /proc/stat is not there)."""
        cpu0 = machine_busy_cpu_s()
        for proc in self.procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        done = [json.loads(self._expect(proc, "done")) for proc in self.procs]
        cpu1 = machine_busy_cpu_s()
        return done, (None if cpu0 is None or cpu1 is None else cpu1 - cpu0)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def _summary(uri: str, exp_id: str, results: List[Dict[str, Any]], machine_cpu_s: Optional[float]) -> Dict[str, Any]:
    from harness.tracking import records as tracking

    start = min(r["start"] for r in results)
    end = max(r["end"] for r in results)
    n_runs = sum(len(r["harness_s"]) + len(r["raw_s"]) for r in results)
    harness_s = [t for r in results for t in r["harness_s"]]
    raw_s = [t for r in results for t in r["raw_s"]]
    uids = [u for r in results for u in r["uids"]]
    found = 0
    c = tracking.client(uri)
    for uid in uids:  # every run reached the store exactly once
        found += len(c.search_runs([exp_id], filter_string=f"tags.`bench.uid` = '{uid}'", max_results=5))
    return {"uri": uri, "wall_s": end - start, "runs": n_runs, "runs_per_s": n_runs / (end - start),
            "harness_median_s": statistics.median(harness_s), "raw_median_s": statistics.median(raw_s),
            "machine_cpu_s": machine_cpu_s,
            "machine_cpu_s_per_run": None if machine_cpu_s is None else machine_cpu_s / n_runs,
            "cpu_busy_share": None if machine_cpu_s is None else machine_cpu_s / ((end - start) * (os.cpu_count() or 1)),
            "runs_found": found, "runs_expected": len(uids), "writers": results}


def _bench(p: Dict[str, Any], ctx: RunContext) -> CaseResult:
    from harness.tracking import records as tracking

    server = str(p["server_uri"]).rstrip("/")
    try:
        tracking.probe(server, 5.0)
    except tracking.TrackingError as exc:
        raise HarnessInputError(f"case.params.server_uri: {exc}") from exc
    inner = (ctx.run_dir / "inner").resolve()
    sqlite_uri = f"sqlite:///{inner / 'sqlite' / 'mlflow.db'}"
    with ctx.stage("job"):  # a real tiny job (its own process, no store): its records are what the writers log
        res = subprocess.run([sys.executable, "-m", "harness", "+case=bench/tracking_job", "tracking=none"],
                             env=dict(os.environ, HARNESS_OUTPUTS=str(inner / "job"), CI="1"),
                             capture_output=True, text=True, timeout=600)
        if res.returncode != 0:
            raise RuntimeError(f"bench/tracking_job failed ({res.returncode}): {res.stderr.strip()[-500:]}")
        job_dir = next((inner / "job" / "runs" / "bench" / "tracking_job").iterdir())
        _artifacts_dir(job_dir)
        record = _record(job_dir)
    stores = [{"name": "sqlite", "uri": sqlite_uri, "artifact_root": str(inner / "sqlite" / "mlartifacts")},
              {"name": "server", "uri": server, "artifact_root": None}]
    for st in stores:  # the experiments exist before any writer starts
        st["experiment_id"] = tracking.ensure_experiment(st["uri"], EXPERIMENT, st["artifact_root"])
    repeats = p["repeats"]
    writers = _Writers(p["writers"], stores, record, p["runs_per_writer"], repeats)
    rounds: List[Dict[str, Any]] = []
    try:
        for k in range(repeats):  # sqlite, then the server, in turns: the same writer processes, started together
            for st in stores:
                with ctx.stage(st["name"]):
                    rounds.append({"store": st["name"], "round": k,
                                   **_summary(st["uri"], st["experiment_id"], *writers.phase())})
    finally:
        writers.close()
    best = {name: max((r for r in rounds if r["store"] == name), key=lambda r: r["runs_per_s"])
            for name in ("sqlite", "server")}
    sqlite, srv = best["sqlite"], best["server"]
    ctx.write_json("bench.json", {"warmup": True, "writers": p["writers"], "runs_per_writer": p["runs_per_writer"],
                                  "repeats": repeats, "sqlite": sqlite, "server": srv, "rounds": rounds})
    missing = sum(abs(r["runs_expected"] - r["runs_found"]) for r in rounds)

    def median_over(name: str, path: str) -> float:  # time per record over every round of the store
        return statistics.median(t for r in rounds if r["store"] == name for w in r["writers"] for t in w[path])

    metrics = {"server_runs_per_s": srv["runs_per_s"], "sqlite_runs_per_s": sqlite["runs_per_s"],
               "server_to_sqlite": srv["runs_per_s"] / sqlite["runs_per_s"],
               "harness_to_raw_server": median_over("server", "harness_s") / median_over("server", "raw_s"),
               "harness_to_raw_sqlite": median_over("sqlite", "harness_s") / median_over("sqlite", "raw_s"),
               # the harness's records alone (not gated): median time per harness record, sqlite over server
               "server_to_sqlite_harness": median_over("sqlite", "harness_s") / median_over("server", "harness_s"),
               "server_wall_s": srv["wall_s"], "sqlite_wall_s": sqlite["wall_s"],
               "runs_missing_or_duplicated": float(missing), "warmup": 1.0, "repeats": float(repeats)}
    for name, best_round in best.items():  # what a run cost the whole machine (writers, server, database)
        if best_round["machine_cpu_s_per_run"] is not None:
            metrics[f"{name}_machine_cpu_ms_per_run"] = 1000.0 * best_round["machine_cpu_s_per_run"]
            metrics[f"{name}_cpu_busy_share"] = best_round["cpu_busy_share"]
    log.info("server %.3g runs/s, sqlite %.3g runs/s, harness/raw %.3g", srv["runs_per_s"], sqlite["runs_per_s"],
             metrics["harness_to_raw_server"])
    return CaseResult(metrics=metrics, info={"writers": p["writers"], "runs_per_writer": p["runs_per_writer"],
                                             "server_uri": server})


# -- one writer process ----------------------------------------------------------------------------
def _raw_run(c, exp_id: str, record: Dict[str, Any], uid: str) -> str:
    """The same records through a bare MlflowClient, in the fewest calls MLflow allows."""
    from mlflow.entities import Metric, Param, RunTag

    now = int(time.time() * 1000)
    run = c.create_run(exp_id, run_name="raw", tags={"bench.uid": uid, "bench.path": "raw"})
    rid = run.info.run_id
    c.log_batch(rid, metrics=[Metric(k, v, now, 0) for k, v in record["metrics"].items()],
                params=[Param(k[:250], v[:6000]) for k, v in record["params"].items()],
                tags=[RunTag(k, v) for k, v in record["tags"].items()])
    c.log_artifacts(rid, record["artifacts"])
    c.set_terminated(rid, "FINISHED")
    return rid


def _harness_run(store: Dict[str, Any], record: Dict[str, Any], uid: str) -> str:
    from harness.tracking import records as tracking

    return tracking.record_run(uri=store["uri"], artifact_root=store["artifact_root"], experiment=EXPERIMENT,
                               run_name="harness", params=record["params"], metrics=record["metrics"], series={},
                               tags={**record["tags"], "bench.uid": uid, "bench.path": "harness"},
                               artifacts_dir=Path(record["artifacts"]), status="FINISHED", timeout_s=5.0)


def _writer(spec: Dict[str, Any]) -> None:
    """Warm up on every store; then per round and store: wait for "go" on stdin, log ``runs`` records per
    path, interleaved, and print "done" with the timings."""
    import uuid

    from harness.tracking import records as tracking

    stores = spec["stores"]
    for st in stores:
        c = tracking.client(st["uri"])
        _harness_run(st, spec["record"], "warmup-" + uuid.uuid4().hex)
        _raw_run(c, st["experiment_id"], spec["record"], "warmup-" + uuid.uuid4().hex)
    print("ready", flush=True)
    for st in stores * spec["repeats"]:  # the rounds: every store in turn, ``repeats`` times
        if sys.stdin.readline().strip() != "go":
            raise SystemExit("bench writer: no go")
        c = tracking.client(st["uri"])
        harness_s: List[float] = []
        raw_s: List[float] = []
        uids: List[str] = []
        start = time.time()
        for i in range(spec["runs"]):  # interleaved: both paths see the same load on the store
            for path in (("harness", "raw") if i % 2 == 0 else ("raw", "harness")):
                uid = uuid.uuid4().hex
                t0 = time.perf_counter()
                if path == "harness":
                    _harness_run(st, spec["record"], uid)
                    harness_s.append(time.perf_counter() - t0)
                else:
                    _raw_run(c, st["experiment_id"], spec["record"], uid)
                    raw_s.append(time.perf_counter() - t0)
                uids.append(uid)
        end = time.time()
        print("done " + json.dumps({"start": start, "end": end, "harness_s": harness_s, "raw_s": raw_s, "uids": uids,
                                    "pid": os.getpid()}), flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    _writer(json.loads(sys.argv[1]))
