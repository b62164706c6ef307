"""Studies: a multirun sweep aggregated into a parent MLflow run.

``StudyCallback`` (registered in conf/config.yaml) creates the sqlite store, the
experiment and the parent run in the launching process before any job starts, and
writes ``study_state.json`` in the sweep directory (tracking URI, parent run id) for the
jobs. At the end it reads every job's ``outcome.json``, builds a pandera-validated
table, computes what the study kind asks for and logs it on the parent run, which ends
FAILED if any job failed.
"""
from __future__ import annotations

import importlib
import json
import logging
import math
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from harness import gates as G
from harness import metrics as M
from harness import figures, progress, tracking
from harness.atomic import atomic_write_text

log = logging.getLogger(__name__)
STATE_FILE = "study_state.json"
# statuses of jobs whose metrics were computed (an unsent MLflow record is not a failed job)
COMPUTED = ("ok", "tracking_error")
# keys of hydra.job.env_set that carry the tracking target of a sweep into every job config
PARENT_RUN_KEY = "HARNESS_PARENT_RUN_ID"
TRACKING_URI_KEY = "HARNESS_TRACKING_URI"


def read_study_state(sweep_dir: Path) -> Optional[Dict[str, Any]]:
    p = Path(sweep_dir) / STATE_FILE
    if not p.is_file():
        return None
    return json.loads(p.read_text())


def _family(config: DictConfig) -> str:
    return str(OmegaConf.select(config, "case.family", default=None) or "study")


def _quote(value: str) -> str:
    """A Hydra override value: quoted unless it is made of plain path/URI characters."""
    if re.fullmatch(r"[A-Za-z0-9_./:@+~-]+", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def count_jobs(config: DictConfig) -> Optional[int]:
    """Number of jobs the basic sweeper will launch (None when it cannot be told)."""
    try:
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
        from hydra.core.override_parser.overrides_parser import OverridesParser

        args = [f"{k}={v}" for k, v in (OmegaConf.select(config, "hydra.sweeper.params") or {}).items()]
        args += list(config.hydra.overrides.task)
        parsed = OverridesParser.create().parse_overrides(args)
        return sum(len(batch) for batch in BasicSweeper.split_arguments(parsed, None))
    except Exception:  # another sweeper, or a syntax only it knows
        return None


def pin_for_workers(config: DictConfig, pins: Dict[str, str]) -> None:
    """Append ``key=value`` overrides every job config is composed with.

    Launchers compose each job from ``hydra.overrides.hydra`` of the launching config
    plus the job's own overrides, and ship the composed config to the worker. Pinning the
    resolved outputs directory, sweep directory, tracking URI and parent run id there puts
    them in every job's config explicitly, so a worker on another machine (Ray, Slurm)
    needs neither the launcher's environment nor its files.
    """
    from omegaconf import flag_override

    lines = [f"++{k}={_quote(str(v))}" for k, v in pins.items()]
    with flag_override(config, ["readonly", "struct"], [False, False]):
        config.hydra.overrides.hydra.extend(lines)


class StudyCallback(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir).resolve()
        sweep_dir.mkdir(parents=True, exist_ok=True)
        state: Dict[str, Any] = {"sweep_dir": str(sweep_dir), "parent_run_id": None, "tracking_uri": None,
                                 "n_jobs": count_jobs(config), "run_uid": tracking.new_run_uid()}
        pins: Dict[str, str] = {"hydra.sweep.dir": str(sweep_dir)}
        if OmegaConf.select(config, "paths.outputs") is not None:
            pins["paths.outputs"] = str(Path(config.paths.outputs).resolve())
        t = OmegaConf.select(config, "tracking")
        if t is not None and t.enabled:
            uri = str(t.uri)
            pins["tracking.uri"] = uri
            pins[f"hydra.job.env_set.{TRACKING_URI_KEY}"] = uri
            study_name = str(OmegaConf.select(config, "study.name", default=None) or "sweep")
            case = str(OmegaConf.select(config, "case.name", default="?"))
            # what a later `python -m harness.sync` needs to create the parent run
            state["parent"] = {"uri": uri, "artifact_root": t.get("artifact_root"),
                               "experiment": tracking.experiment_name(str(t.experiment_prefix), _family(config)),
                               "run_name": f"study:{study_name}:{case}",
                               "tags": {"study": study_name, "case": case, "sweep_dir": str(sweep_dir),
                                        "kind": "study"}}
            try:
                tracking.probe(uri, float(t.timeout_s))
                exp = tracking.ensure_experiment(uri, state["parent"]["experiment"], t.get("artifact_root"))
                parent = tracking.start_run(uri, exp, state["parent"]["run_name"],
                                            tags={**state["parent"]["tags"],
                                                  tracking.RUN_UID_TAG: state["run_uid"]})
                state.update(parent_run_id=parent, tracking_uri=uri, experiment_id=exp)
                pins[f"hydra.job.env_set.{PARENT_RUN_KEY}"] = parent
                _OPEN_PARENTS[parent] = uri
            except tracking.TrackingError as exc:
                log.error("study: the parent run is not recorded (jobs keep complete run directories; "
                          "upload later with `python -m harness.sync %s`): %s", sweep_dir, exc)
                state["tracking_error"] = str(exc)
        pin_for_workers(config, pins)
        atomic_write_text(sweep_dir / STATE_FILE, json.dumps(state, indent=2))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        state = read_study_state(sweep_dir) or {}
        progress.sweep_end(sweep_dir)
        summary = aggregate(sweep_dir, OmegaConf.select(config, "study"), _family(config))
        _LAST["exit_code"] = max(_LAST["exit_code"], summary["exit_code"])
        print(summary_line(summary), flush=True)
        uri, parent = state.get("tracking_uri"), state.get("parent_run_id")
        if uri and parent:
            _OPEN_PARENTS.pop(parent, None)
            try:
                finish_parent(uri, parent, summary, sweep_dir)
                state["parent_complete"] = True
            except Exception as exc:  # the study files on disk stay complete; sync finishes it later
                log.error("study: could not record the parent run: %s", exc)
                state["parent_complete"] = False
            atomic_write_text(sweep_dir / STATE_FILE, json.dumps(state, indent=2))


def finish_parent(uri: str, parent: str, summary: Dict[str, Any], sweep_dir: Path) -> None:
    """Log the study result (metrics, verdict, counts, study/ files) on the parent run and end it."""
    tracking.log_batch(uri, parent, metrics=summary["metrics"],
                       tags={"verdict": summary["verdict"], "n_jobs": str(summary["n_jobs"]),
                             "n_failed": str(summary["n_failed"]), "n_unsent": str(summary.get("n_unsent", 0))})
    tracking.log_artifacts(uri, parent, Path(sweep_dir) / "study")
    tracking.end_run(uri, parent, "FAILED" if summary["n_failed"] else "FINISHED")


_LAST = {"exit_code": 0}
_OPEN_PARENTS: Dict[str, str] = {}  # parent run id -> tracking URI, of sweeps not yet aggregated


def close_open_parents(reason: str, status: str = "FAILED") -> None:
    """End with ``status`` (FAILED; KILLED on SIGINT/SIGTERM) the parent runs of sweeps that
    stopped before their study (e.g. a job's config did not compose); the reason goes to tag ``error``."""
    for parent, uri in list(_OPEN_PARENTS.items()):
        try:
            tracking.log_batch(uri, parent, tags={"error": reason[:5000], "verdict": G.FAIL})
            tracking.end_run(uri, parent, status)
        except Exception as exc:  # noqa: BLE001 - best effort on the way out
            log.error("study: could not close the parent run %s: %s", parent, exc)
        _OPEN_PARENTS.pop(parent, None)


def last_exit_code() -> int:
    """The worst exit code of the sweeps aggregated in this process (jobs and study verdict)."""
    return _LAST["exit_code"]


def study_function(kind: str, family: str):
    """The aggregation function of a custom study kind.

    ``"module:function"`` names it anywhere; a bare name is looked up in
    ``harness.families.<family>`` (the case's family).
    """
    module_name, sep, name = kind.partition(":")
    if not sep:
        module_name, name = f"harness.families.{family}", kind
    try:
        fn = getattr(importlib.import_module(module_name), name, None)
    except ImportError as exc:
        raise ValueError(f"study.kind: cannot import {module_name!r}: {exc}") from exc
    if fn is None:
        raise ValueError(f"study.kind: {kind!r} is neither built in nor a function of {module_name}")
    return fn


def summary_line(summary: Dict[str, Any]) -> str:
    shown = "  ".join(f"{k}={v:.4g}" for k, v in summary["metrics"].items() if k.startswith(("observed_order", "gci")))
    line = f"study {summary['name']}  {summary['verdict'].upper()}  jobs={summary['n_jobs']} failed={summary['n_failed']}  {shown}"
    if summary.get("n_unsent"):
        line += f"  unsent={summary['n_unsent']} (python -m harness.sync {summary.get('sweep_dir', '')})"
    return line.rstrip()


def collect_jobs(sweep_dir: Path) -> List[Dict[str, Any]]:
    """Rows of the study table, one per job directory (``<sweep_dir>/<job_num>``)."""
    import yaml

    rows = []
    for job_dir in sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()),
                          key=lambda p: int(p.name)):
        row: Dict[str, Any] = {"job": int(job_dir.name), "run_dir": str(job_dir)}
        outcome_file = job_dir / "outcome.json"
        overrides_file = job_dir / ".hydra" / "overrides.yaml"
        if overrides_file.is_file():
            row["overrides"] = yaml.safe_load(overrides_file.read_text()) or []
        if outcome_file.is_file():
            out = json.loads(outcome_file.read_text())
            row.update(case=out["case"], status=out["status"], verdict=out["verdict"],
                       mlflow_run_id=out.get("mlflow_run_id") or "", metrics=out["metrics"],
                       exit_code=int(out.get("exit_code", G.EXIT_FAIL)))
        else:
            row.update(case="?", status="error", verdict="fail", mlflow_run_id="", metrics={},
                       exit_code=G.EXIT_FAIL)
        metrics_file = job_dir / "metrics.json"
        if metrics_file.is_file():
            row["gated"] = list((json.loads(metrics_file.read_text()).get("gates") or {}))
        cfg_file = job_dir / "config.yaml"
        row["config"] = yaml.safe_load(cfg_file.read_text()) if cfg_file.is_file() else {}
        rows.append(row)
    return rows


def _select(d: Dict[str, Any], dotted: str) -> Any:
    cur: Any = d
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def build_table(rows: List[Dict[str, Any]], parameter: Optional[str]):
    """The study table: job, case, status, verdict, run id, parameter value, every metric."""
    import pandas as pd

    from schemas.study_table import study_table_schema

    records = []
    metric_names = sorted({k for r in rows for k in r["metrics"]})
    for r in rows:
        rec = {"job": r["job"], "case": r["case"], "status": r["status"], "verdict": r["verdict"],
               "mlflow_run_id": r["mlflow_run_id"]}
        if parameter:
            v = _select(r["config"], parameter)
            rec["parameter"] = float(v) if isinstance(v, (int, float)) else math.nan
        for m in metric_names:
            rec[m] = float(r["metrics"].get(m, math.nan))
        records.append(rec)
    df = pd.DataFrame.from_records(records)
    return study_table_schema(metric_names, with_parameter=bool(parameter)).validate(df)


def convergence(df, study: DictConfig, out_dir: Path) -> Dict[str, Any]:
    """Observed order between each pair of levels, GCI for three or more, a log-log plot, a gate."""
    ok = df[df["status"].isin(COMPUTED) & np.isfinite(df["parameter"]) & np.isfinite(df[study.metric])]
    h = ok["parameter"].to_numpy(float)
    if study.spacing == "inverse":
        h = 1.0 / h
    elif study.spacing != "direct":
        raise ValueError(f"study.spacing: must be 'inverse' or 'direct', got {study.spacing!r}")
    order = np.argsort(-h)  # coarse to fine
    h, e = h[order], ok[study.metric].to_numpy(float)[order]
    out: Dict[str, float] = {}
    orders = []
    for i in range(len(h) - 1):
        p = M.observed_order(e[i], e[i + 1], h[i] / h[i + 1])
        orders.append(p)
        out[f"observed_order_{i}_{i + 1}"] = p
    if orders:
        out["observed_order"] = orders[-1]
    functional = study.extra.get("functional", study.metric) if study.extra else study.metric
    if len(h) >= 3 and functional in ok:
        f = ok[functional].to_numpy(float)[order]
        try:
            g = M.gci(f[-1], f[-2], f[-3], h[-2] / h[-1], h[-3] / h[-2], study.gci_safety_factor)
            out.update({f"gci_{k}": v for k, v in g.as_dict().items()})
        except ValueError as exc:
            log.warning("study: GCI not computed: %s", exc)
    verdict = G.PASS
    if study.expected_order is not None:
        band = G.Band(pass_min=study.expected_order - study.order_tolerance,
                      pass_max=study.expected_order + study.order_tolerance)
        verdict = band.judge(out.get("observed_order", math.nan))
    _plot_convergence(h, e, orders, study, out_dir / "convergence.png")
    return {"metrics": out, "verdict": verdict}


def _plot_convergence(h, e, orders, study, path: Path) -> None:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from harness.atomic import atomic_write_bytes

    fig, ax = plt.subplots(figsize=(5, 4))
    ax.loglog(h, e, "o-", label=study.metric)
    if len(h) >= 2 and orders and np.isfinite(orders[-1]) and e[-1] > 0:
        ax.loglog(h, e[-1] * (h / h[-1]) ** orders[-1], "--", label=f"slope {orders[-1]:.3f}")
    ax.set_xlabel("h (relative)" if study.spacing == "inverse" else "h")
    ax.set_ylabel(study.metric)
    ax.set_title(f"{study.name}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def aggregate(sweep_dir: Path, study: Optional[DictConfig], family: str) -> Dict[str, Any]:
    """Aggregate a finished sweep; writes ``<sweep_dir>/study/`` (table.csv, study.json, plots)."""
    out_dir = sweep_dir / "study"
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = collect_jobs(sweep_dir)
    parameter = str(study.parameter) if study is not None and study.get("parameter") else None
    df = build_table(rows, parameter)
    n_failed = int((~df["status"].isin(COMPUTED)).sum()) if len(df) else 0
    n_unsent = int((df["status"] == "tracking_error").sum()) if len(df) else 0
    result: Dict[str, Any] = {"metrics": {}, "verdict": G.PASS}
    if study is not None and len(df):
        kind = str(study.kind)
        if kind == "convergence":
            result = convergence(df, study, out_dir)
        elif kind != "table":
            fn = study_function(kind, family)
            raw = fn(df, out_dir) or {}
            result = raw if "metrics" in raw else {"metrics": {k: float(v) for k, v in raw.items()
                                                               if isinstance(v, (int, float))}}
            result.setdefault("verdict", G.PASS)
    job_verdicts = list(df["verdict"]) if len(df) else []
    verdict = G.worst([result["verdict"], *job_verdicts])
    if n_failed:
        verdict = G.FAIL
    try:
        figures.for_study(df, study, out_dir, gated=sorted({g for r in rows for g in r.get("gated", ())}))
    except Exception as exc:  # a figure never fails a study
        log.warning("study figure: %s", exc)
    exit_code = max([G.exit_code(verdict), *(r["exit_code"] for r in rows)])
    summary = {"name": str(study.name) if study is not None else "sweep", "sweep_dir": str(sweep_dir),
               "n_jobs": int(len(df)),
               "n_failed": n_failed, "n_unsent": n_unsent, "verdict": verdict, "exit_code": exit_code,
               "metrics": {k: float(v) for k, v in result["metrics"].items()},
               "jobs": df.to_dict(orient="records")}
    atomic_write_text(out_dir / "table.csv", df.to_csv(index=False))
    atomic_write_text(out_dir / "study.json", json.dumps(summary, indent=2, default=str))
    return summary
