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
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from harness.core import figures, progress
from harness.core.atomic import atomic_write_text
from harness.metrics import gates as G
from harness.metrics import library as M
from harness.metrics import verification as V
from harness.studies import manufactured
from harness.tracking import records as tracking

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
    from harness.launch.hydra_sweeps import count_jobs as count_basic_sweep

    try:
        args = [f"{k}={v}" for k, v in (OmegaConf.select(config, "hydra.sweeper.params") or {}).items()]
        args += list(config.hydra.overrides.task)
        return count_basic_sweep(args)
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


def _sweeps(overrides) -> Dict[str, str]:
    """``{key: value text}`` of the sweep overrides among ``overrides`` (e.g. ``key=a,b,c``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    out = {}
    try:
        parsed = OverridesParser.create().parse_overrides([str(o) for o in overrides])
    except Exception:  # a syntax only another sweeper knows: nothing to say about it here
        return out
    for o in parsed:
        if o.is_sweep_override():
            out[o.key_or_group] = str(o.input_line).split("=", 1)[1]
    return out


def sweep_notes(config: DictConfig) -> Dict[str, Any]:
    """What the launching config says about the levels of a sweep.

    ``levels_replaced``: keys whose levels the study declares (``hydra.sweeper.params``) and
    the command line also sweeps; the command line wins (Hydra's basic sweeper), and the
    study records it. ``swept_key``: the one key a plain sweep (no ``+study``) sweeps.
    """
    task = _sweeps(list(OmegaConf.select(config, "hydra.overrides.task") or []))
    own = {str(k): str(v) for k, v in (OmegaConf.select(config, "hydra.sweeper.params") or {}).items()}
    notes: Dict[str, Any] = {}
    if OmegaConf.select(config, "study") is not None:
        replaced = {k: {"study": own[k], "command_line": v} for k, v in task.items() if k in own and own[k] != v}
        if replaced:
            notes["levels_replaced"] = [f"{k}={v['command_line']} (study: {v['study']})" for k, v in replaced.items()]
            for line in notes["levels_replaced"]:
                log.warning("study %s: the command line replaces the study's levels: %s",
                            OmegaConf.select(config, "study.name"), line)
    else:
        swept = {k: v for k, v in {**_sweeps([f"{k}={v}" for k, v in own.items()]), **task}.items()}
        if len(swept) == 1:
            notes["swept_key"] = next(iter(swept)).lstrip("+~")
    return notes


def _safe_notes(config: DictConfig) -> Dict[str, Any]:
    try:
        return sweep_notes(config)
    except Exception as exc:  # noqa: BLE001 - notes never stop a sweep
        log.warning("study: could not read the sweep's levels: %s", exc)
        return {}


def _no_jobs(sweep_dir: Path) -> bool:
    d = Path(sweep_dir)
    return not d.is_dir() or not any(p.is_dir() and p.name.isdigit() for p in d.iterdir())


class StudyCallback(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from harness.core.context import HarnessInputError
        from harness.studies.options import check_study

        try:  # the study's own options: one line and exit 2 before any job runs or any file is written
            check_study(config, _family(config), study_function)
        except HarnessInputError as exc:  # Hydra turns a callback's exception into a warning
            print(f"harness: error: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(G.EXIT_INPUT) from None
        from harness.studies import resume

        if resume.resuming(config):  # `python -m harness resume`: the same directory and parent run
            resume.start(config, STATE_FILE, _OPEN_PARENTS, pin_for_workers, (PARENT_RUN_KEY, TRACKING_URI_KEY))
            return
        sweep_dir = Path(config.hydra.sweep.dir).resolve()
        sweep_dir.mkdir(parents=True, exist_ok=True)
        pins: Dict[str, str] = {"hydra.sweep.dir": str(sweep_dir)}
        per_job = 0
        if str(OmegaConf.select(config, "study.kind", default="")) == "validation":
            from harness.studies import (
                validation,  # the samples become the sweep before anything is recorded
            )

            try:
                per_job = validation.plan_sweep(config)
            except HarnessInputError as exc:  # Hydra turns a callback's exception into a warning
                print(f"harness: error: {exc}", file=sys.stderr, flush=True)
                raise SystemExit(G.EXIT_INPUT) from None
            except Exception:  # noqa: BLE001 - would become a warning and a sweep without samples
                log.exception("validation: the sweep could not be planned")
                raise SystemExit(G.EXIT_FAIL) from None
        n_jobs = count_jobs(config)
        if n_jobs is not None and per_job:
            n_jobs *= per_job
        state: Dict[str, Any] = {"sweep_dir": str(sweep_dir), "parent_run_id": None, "tracking_uri": None,
                                 "n_jobs": n_jobs, "run_uid": tracking.new_run_uid(),
                                 "notes": _safe_notes(config)}
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
        if _no_jobs(sweep_dir):
            reason = ("the sweep selected no job (overrides: "
                      + " ".join(str(o) for o in (OmegaConf.select(config, "hydra.overrides.task") or [])) + ")")
            print(f"harness: error: {reason}", file=sys.stderr, flush=True)
            _LAST["exit_code"] = max(_LAST["exit_code"], G.EXIT_INPUT)
            close_open_parents(reason)
            return
        try:
            summary = aggregate(sweep_dir, OmegaConf.select(config, "study"), _family(config), state.get("notes"))
        except Exception as exc:  # noqa: BLE001 - an error of the study is its verdict (harness.studies.failure)
            from harness.studies import failure

            parent = state.get("parent_run_id")
            _OPEN_PARENTS.pop(parent, None)
            _LAST["exit_code"] = max(_LAST["exit_code"], failure.record(exc, sweep_dir, OmegaConf.select(
                config, "study"), state))
            return
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
    tags = {"verdict": summary["verdict"], "n_jobs": str(summary["n_jobs"]),
            "n_failed": str(summary["n_failed"]), "n_unsent": str(summary.get("n_unsent", 0))}
    for q, v in (summary.get("verification") or {}).items():
        tags[f"convergence.{q}"] = str(v.get("convergence"))
    if (summary.get("error_metric") or {}).get("at_round_off"):
        tags[f"convergence.{summary['error_metric']['name']}"] = V.AT_ROUND_OFF
    if summary.get("levels_replaced"):
        tags["levels_source"] = "command_line: " + "; ".join(summary["levels_replaced"])
    tracking.log_batch(uri, parent, metrics=summary["metrics"], tags=tags)
    tracking.log_artifacts(uri, parent, Path(sweep_dir) / "study")
    tracking.end_run(uri, parent, "FAILED" if summary["n_failed"] else "FINISHED")


_LAST = {"exit_code": 0}
_OPEN_PARENTS: Dict[str, str] = {}  # parent run id -> tracking URI, of sweeps not yet aggregated


def close_open_parents(reason: str, status: str = "FAILED") -> None:
    """End with ``status`` (FAILED; KILLED on SIGINT/SIGTERM) the parent runs of sweeps that
    stopped before their study (e.g. a job's config did not compose); the reason goes to tag ``error``."""
    tracking.close_parents(_OPEN_PARENTS, reason, status, "study")


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
    custom = "verification" not in summary  # a family's kind: its orders and GCI as it named them
    shown = "  ".join(f"{k}={v:.4g}" for k, v in summary["metrics"].items()
                      if (k.startswith("observed_order") and not re.search(r"_\d+_\d+$", k))
                      or (custom and k.startswith("gci")))
    em = summary.get("error_metric") or {}
    if em.get("at_round_off"):
        shown += f"  {em['name']}=at_round_off(<={em['round_off_bound']:.2g})"
    for q, v in (summary.get("verification") or {}).items():
        shown += f"  {q}:{v.get('convergence')}"
        if v.get("convergence") == V.MONOTONIC:
            shown += (f" p={v['p']:.4g} f_ext={v['f_extrapolated']:.6g} u_num={v['u_num']:.3g}"
                      f" GCI12={100 * v['gci_fine']:.3g}% ratio={v['asymptotic_ratio']:.4g}")
    for q, v in ((summary.get("validation") or {}).get("summary") or {}).items():
        shown += f"  {q}:max|E|/u_val={v:.3g}"
    line = f"study {summary['name']}  {summary['verdict'].upper()}  jobs={summary['n_jobs']} failed={summary['n_failed']}  {shown}"
    if summary.get("levels_replaced"):
        line += "  levels from the command line: " + ", ".join(summary["levels_replaced"])
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


def _levels(ok, study: DictConfig):
    """Spacing h of the computed levels, coarse to fine, and the row order that sorts them."""
    if manufactured.h_metric(study):  # h read from the meshes (a job metric)
        return manufactured.levels_from_metric(ok, study)
    h = ok["parameter"].to_numpy(float)
    if study.spacing == "inverse":
        h = 1.0 / h
    elif study.spacing != "direct":
        raise ValueError(f"study.spacing: must be 'inverse' or 'direct', got {study.spacing!r}")
    order = np.argsort(-h)
    return h[order], order


def _quantities(study: DictConfig) -> List[str]:
    """The solution quantities whose numerical uncertainty is estimated (``study.quantities``;
    the older ``study.extra.functional`` is read as one)."""
    q = [str(x) for x in (study.get("quantities") or [])]
    functional = (study.get("extra") or {}).get("functional")
    if functional and str(functional) not in q:
        q.append(str(functional))
    return q


def solution_verification(ok, study: DictConfig) -> Dict[str, Any]:
    """The three-grid procedure on every declared solution quantity, on the three finest levels,
    and the least-squares order over all levels when there are more than three.

    Returns ``{"metrics": {...}, "verification": {quantity: {...}}, "verdict": ...}``. An
    oscillatory or divergent quantity has no GCI and warns; a quantity at round-off passes
    with u_num at the round-off bound; an asymptotic ratio off 1 by more than
    ``study.asymptotic_tolerance`` (when set) warns.
    """
    h, order = _levels(ok, study)
    metrics: Dict[str, float] = {}
    report: Dict[str, Any] = {}
    verdicts = [G.PASS]
    factor = float(study.get("roundoff_factor") or V.ROUNDOFF_FACTOR)
    tol = study.get("asymptotic_tolerance")
    for q in _quantities(study):
        if q not in ok:
            log.warning("study: solution quantity %r is not a metric of the jobs", q)
            report[q] = {"convergence": "missing", "note": "not a metric of the jobs"}
            verdicts.append(G.WARN)
            continue
        f = ok[q].to_numpy(float)[order]
        keep = np.isfinite(f)
        hq, fq = h[keep], f[keep]
        if len(fq) < 3:
            report[q] = {"convergence": "too_few_levels", "n_levels": int(len(fq))}
            verdicts.append(G.WARN)
            continue
        g = V.three_grid(fq[-1], fq[-2], fq[-3], hq[-2] / hq[-1], hq[-3] / hq[-2],
                         float(study.gci_safety_factor), study.get("u_num_divisor"), factor)
        entry: Dict[str, Any] = {"convergence": g.convergence, **g.as_dict(), "coverage": g.coverage,
                                 "levels_h": hq.tolist(), "values": fq.tolist()}
        metrics.update({f"gci_{q}_{k}": v for k, v in g.as_dict().items()
                        if k in ("p", "f_extrapolated", "gci_fine", "gci_coarse", "asymptotic_ratio", "u_num",
                                 "convergence_code", "R", "e_a21", "e_ext21")})
        if g.convergence in (V.OSCILLATORY, V.DIVERGENT):
            verdicts.append(G.WARN)
            entry["note"] = f"{g.convergence} (R = {g.R:.4g}): no order, no GCI, no u_num"
        elif g.convergence == V.MONOTONIC and tol is not None and not abs(g.asymptotic_ratio - 1.0) <= float(tol):
            verdicts.append(G.WARN)
            entry["note"] = (f"outside the asymptotic range: GCI23/(r^p GCI12) = {g.asymptotic_ratio:.4g}, "
                             f"not within 1 +- {float(tol):g}")
        if len(fq) > 3 and g.convergence != V.AT_ROUND_OFF:
            try:
                ls = V.least_squares_order(hq, fq)
                entry["least_squares"] = ls.as_dict()
                metrics.update({f"gci_{q}_ls_{k}": v for k, v in ls.as_dict().items() if k != "n_levels"})
            except ValueError as exc:
                log.warning("study: least-squares order of %s: %s", q, exc)
        report[q] = entry
    return {"metrics": metrics, "verification": report, "verdict": G.worst(verdicts)}


def convergence(df, study: DictConfig, out_dir: Path) -> Dict[str, Any]:
    """Observed order of the study's error metric (gated), and solution verification of the
    declared solution quantities (GCI, u_num); a log-log plot of the error metric.

    The error metric tends to zero: its order comes from pairs of levels and, over three or
    more, a log-log least-squares slope; it is never given a GCI. At round-off (every level
    below ``roundoff_factor`` eps) it has no order and the order gate does not apply.
    """
    ok = df[df["status"].isin(COMPUTED) & np.isfinite(df["parameter"]) & np.isfinite(df[study.metric])]
    h, order = _levels(ok, study)
    e = ok[study.metric].to_numpy(float)[order]
    factor = float(study.get("roundoff_factor") or V.ROUNDOFF_FACTOR)
    eo = V.error_order(h, e, 1.0, factor)
    out: Dict[str, float] = {}
    for i, p in enumerate(eo["pairwise"]):
        out[f"observed_order_{i}_{i + 1}"] = p
    if eo["pairwise"]:
        out["observed_order"] = eo["last"]
    if np.isfinite(eo["least_squares"]):
        out["observed_order_ls"] = eo["least_squares"]
    out[f"{study.metric}_at_round_off"] = 1.0 if eo["at_round_off"] else 0.0
    error_metric = {"name": str(study.metric), "at_round_off": eo["at_round_off"],
                    "round_off_bound": eo["round_off_bound"], "n_round_off": eo["n_round_off"],
                    "pairwise": eo["pairwise"], "least_squares": eo["least_squares"]}
    verdict = G.PASS
    if study.expected_order is not None:
        if eo["at_round_off"]:
            error_metric["order_gate"] = "not applied: the metric is at round-off"
            log.warning("study %s: %s is at round-off (<= %.3g) at every level: no order, no order gate",
                        study.name, study.metric, eo["round_off_bound"])
        else:
            band = G.Band(pass_min=study.expected_order - study.order_tolerance,
                          pass_max=study.expected_order + study.order_tolerance)
            verdict = band.judge(out.get("observed_order", math.nan))
            error_metric["order_gate"] = {"expected": float(study.expected_order),
                                          "tolerance": float(study.order_tolerance), "verdict": verdict}
    extra_orders = manufactured.gate_orders(ok, study, h, order)
    out.update(extra_orders["metrics"])
    if extra_orders["orders"]:
        error_metric["orders"] = extra_orders["orders"]
        verdict = G.worst([verdict, extra_orders["verdict"]])
    sv = solution_verification(ok, study)
    out.update(sv["metrics"])
    _plot_convergence(h, e, eo, study, out_dir / "convergence.png")
    for name, entry in extra_orders["orders"].items():  # one log-log figure per further gated error
        if name in ok:
            other = OmegaConf.merge(study, {"metric": name, "expected_order": entry["expected"]})
            e_k = ok[name].to_numpy(float)[order]
            _plot_convergence(h, e_k, V.error_order(h, e_k, 1.0, factor), other, out_dir / f"convergence_{name}.png")
    return {"metrics": out, "verdict": G.worst([verdict, sv["verdict"]]), "error_metric": error_metric,
            "verification": sv["verification"]}


def _plot_convergence(h, e, eo, study, path: Path) -> None:
    plt = figures._plt()
    fig, ax = plt.subplots(figsize=(5, 4))
    if eo["at_round_off"]:
        figures.round_off_band(ax, h, eo["round_off_bound"], f"{study.metric} at round-off")
    else:
        ax.loglog(h, np.where(e > 0, e, np.nan), "o-", label=study.metric)
        p, ok = eo["last"], e[-1] > eo["round_off_bound"]
        if np.isfinite(p) and ok:
            ax.loglog(h, e[-1] * (h / h[-1]) ** p, "--", label=f"observed order {p:.3f} (last pair)")
        if study.expected_order is not None and ok:
            ax.loglog(h, e[-1] * (h / h[-1]) ** float(study.expected_order), ":", color="0.4",
                      label=f"expected order {float(study.expected_order):g}")
        ax.set_xscale("log")
    ax.set_xlabel("h (relative)" if study.spacing == "inverse" else "h")
    ax.set_ylabel(study.metric)
    ax.set_title(f"{study.name}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    figures.save(fig, path)


def aggregate(sweep_dir: Path, study: Optional[DictConfig], family: str,
              notes: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Aggregate a finished sweep; writes ``<sweep_dir>/study/`` (table.csv, study.json, plots).

    ``notes`` (from the launching process) go into study.json and the parent's tags: the
    swept key of a plain sweep, the levels a command line put in place of the study's own.
    """
    notes = dict(notes or {})
    out_dir = sweep_dir / "study"
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = collect_jobs(sweep_dir)
    if study is None and notes.get("swept_key"):
        # a plain `-m key=a,b,c` sweep over one key: the table gets the parameter column and the
        # figure the gated metrics against it (slopes where above round-off); no order gate
        study = OmegaConf.create({"name": "sweep", "kind": "table", "parameter": notes["swept_key"],
                                  "spacing": "direct"})
    parameter = str(study.parameter) if study is not None and study.get("parameter") else None
    df = build_table(rows, parameter)
    n_failed = int((~df["status"].isin(COMPUTED)).sum()) if len(df) else 0
    n_unsent = int((df["status"] == "tracking_error").sum()) if len(df) else 0
    result: Dict[str, Any] = {"metrics": {}, "verdict": G.PASS}
    if study is not None and len(df):
        kind = str(study.kind)
        if kind == "convergence":
            result = convergence(df, study, out_dir)
        elif kind == "validation":
            from harness.studies import validation

            result = validation.aggregate(df, rows, study, out_dir)
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
               "kind": str(study.kind) if study is not None else "table",
               "n_jobs": int(len(df)),
               "n_failed": n_failed, "n_unsent": n_unsent, "verdict": verdict, "exit_code": exit_code,
               "metrics": {k: float(v) for k, v in result["metrics"].items()},
               **{k: result[k] for k in ("error_metric", "verification", "validation") if k in result},
               **notes,
               "jobs": df.to_dict(orient="records")}
    atomic_write_text(out_dir / "table.csv", df.to_csv(index=False))
    atomic_write_text(out_dir / "study.json", json.dumps(summary, indent=2, default=str))
    return summary
