"""Suites: a selection of cases run as one CI gate through the configured Hydra launcher.

``python -m harness suite=NAME [hydra/launcher=joblib ...]`` becomes one Hydra multirun
sweeping ``+case=<every selected case>`` with :func:`suite_task` as the task function and
:class:`SuiteCallback` in place of the study callback:

* before any job, the callback creates the MLflow parent run ``suite:<name>`` (experiment
  ``<prefix>suite/<name>``) and pins, for every job, the tracking URI, the parent run id,
  that experiment and the suite's deadline (``budget_s``) into the job configs;
* each job (:func:`suite_task`) applies the suite's per-case overrides, runs the case with
  the runner, never raises, and writes ``suite_job.json`` (wall time, real start/end);
  a job that starts after the deadline is skipped;
* at the end the callback reads every job directory and writes ``suite.json``, the
  summary table (printed), ``junit.xml`` and ``dashboard.html`` in the suite directory
  (``<outputs>/suites/<name>/<stamp>-<id>/``), logs counts and those files on the parent
  run and ends it FAILED when the exit code is not 0.

Exit code of the suite: the worst over its cases (0 pass/warn, 1 fail, crash, regression
or skipped, 2 invalid input).
"""
from __future__ import annotations

import json
import logging
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from harness.core.atomic import atomic_write_text
from harness.core.context import HarnessInputError
from harness.metrics import gates as G
from harness.suites.catalogue import KNOWN_TAGS, CaseInfo, all_tags, catalogue, matches
from harness.suites.rows import (  # noqa: F401  (part of this module's names)
    STATUS_SKIPPED,
    counts,
    is_regression,
    key_metric_text,
    regression_status,
    row_verdict,
)

log = logging.getLogger(__name__)

STATE_FILE = "suite_state.json"
SUMMARY_FILE = "suite.json"
JOB_FILE = "suite_job.json"
DEADLINE_KEY = "HARNESS_SUITE_DEADLINE"  # hydra.job.env_set key: epoch seconds after which jobs skip
_LAST = {"exit_code": 0, "summary": None}


# ----------------------------------------------------------------------------- selection
def _where(suite: DictConfig) -> str:
    from harness.core.compose import config_file, shown_path

    name = OmegaConf.select(suite, 'name', default='?')
    path = config_file(f"suite/{name}")
    return shown_path(path) if path is not None else f"conf/suite/{name}.yaml"


def select(suite: DictConfig, cases: Optional[Sequence[CaseInfo]] = None) -> List[CaseInfo]:
    """The cases ``suite.select`` picks from the catalogue, in catalogue (name) order, or
    shuffled with ``suite.order_seed``.

    Raises HarnessInputError for a tag no case carries, a family without cases, a pattern
    or an override pattern matching no case of the catalogue, or an empty selection.
    """
    cases = list(catalogue() if cases is None else cases)
    sel = suite.select
    where = _where(suite)
    known_tags = set(all_tags(cases)) | set(KNOWN_TAGS)
    for key in ("tags", "any_tags", "exclude_tags"):
        for t in sel.get(key) or []:
            if t not in known_tags:
                raise HarnessInputError(f"{where}: suite.select.{key}: unknown tag {t!r} "
                                        f"(tags in use: {', '.join(sorted(known_tags))})")
    families = sorted({c.family for c in cases})
    for f in sel.families or []:
        if f not in families:
            raise HarnessInputError(f"{where}: suite.select.families: unknown family {f!r} "
                                    f"(families: {', '.join(families)})")
    names = [c.name for c in cases]
    for key in ("cases", "exclude"):
        for p in sel.get(key) or []:
            if not any(matches(n, [p]) for n in names):
                raise HarnessInputError(f"{where}: suite.select.{key}: {p!r} matches no case "
                                        f"(see `python -m harness --list suite=all`)")
    if sel.get("project") and not any(c.project for c in cases):
        raise HarnessInputError(f"{where}: suite.select.project: no user project found (a [tool.harness] "
                                "table in pyproject.toml, a harness.yaml, --cases DIR or $HARNESS_CASES)")
    out = []
    for c in cases:
        if sel.get("project") and not c.project:
            continue
        if sel.cases and not matches(c.name, sel.cases):
            continue
        if sel.families and c.family not in sel.families:
            continue
        if any(t not in c.tags for t in sel.tags or []):
            continue
        if sel.any_tags and not any(t in c.tags for t in sel.any_tags):
            continue
        if any(t in c.tags for t in sel.exclude_tags or []):
            continue
        if sel.exclude and matches(c.name, sel.exclude):
            continue
        out.append(c)
    if not out:
        raise HarnessInputError(f"{where}: suite.select: selects no case")
    for pattern in (suite.overrides or {}):  # a typo, not a narrowed selection
        if not any(matches(n, [pattern]) for n in names):
            raise HarnessInputError(f"{where}: suite.overrides: {pattern!r} matches no case")
    if suite.get("order_seed") is not None:  # the same order in the CLI and in the callback
        import random

        random.Random(int(suite.order_seed)).shuffle(out)
    return out


def case_overrides(suite: DictConfig, case: str) -> List[str]:
    """The suite's ``key=value`` overrides of ``case`` (every matching pattern, in file order)."""
    out: List[str] = []
    for pattern, items in (suite.overrides or {}).items():
        if matches(case, [pattern]):
            out.extend(str(x) for x in items)
    return out


def listing(suite: DictConfig, cases: Sequence[CaseInfo]) -> str:
    """The text of ``python -m harness --list``: one line per selected case with its tags."""
    width = max(len(c.name) for c in cases)
    lines = [f"suite {suite.name}: {len(cases)} cases" + (f" — {suite.description}" if suite.description else "")]
    for c in cases:
        extra = case_overrides(suite, c.name)
        lines.append(f"  {c.name:<{width}}  [{', '.join(c.tags)}]" + (f"  {' '.join(extra)}" if extra else ""))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- launching
def sweep_dir_pattern() -> str:
    return "${paths.outputs}/suites/${suite.name}/${now:%Y%m%d-%H%M%S}-${harness_uid:}"


# overrides the launching config itself needs (it has no case): applied there as given
_LAUNCH_KEYS = ("hydra", "suite", "tracking", "paths")


def per_job(arg: str) -> str:
    """A user override as every job of the suite gets it.

    The launching config of the multirun has no case (``+case`` is the swept key), so a
    value override of a case's key (``source.n_rings=8``) cannot apply there; written as a
    one-value sweep (``source.n_rings=choice(8)``) Hydra applies it in each job only.
    Group choices, sweeps, deletions and the hydra/suite/tracking/paths keys stay as given.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        o = OverridesParser.create().parse_overrides([arg])[0]
    except Exception:  # Hydra reports it, with its own message, when it parses the line
        return arg
    key = o.key_or_group
    if (o.is_sweep_override() or o.is_delete() or "/" in key or "." not in key
            or key.split(".")[0] in _LAUNCH_KEYS or "=" not in arg):
        return arg
    head, _, value = arg.partition("=")
    return f"{head}=choice({value})"


def hydra_args(suite_choice: str, cases: Sequence[CaseInfo], user_args: Sequence[str]) -> List[str]:
    """The multirun command line that runs ``cases`` as one suite (Hydra's own launch log off:
    the suite prints one line per case and its table)."""
    # warnings only (on stderr, as conf/config.yaml routes them); "disabled" would drop the
    # console handler that conf/config.yaml extends
    quiet = ([] if any(a.startswith(("hydra/hydra_logging=", "hydra.hydra_logging.")) for a in user_args)
             else ["hydra.hydra_logging.root.level=WARNING"])
    return ["-m", f"suite={suite_choice}", "+case=" + ",".join(c.name for c in cases),
            f"hydra.sweep.dir={sweep_dir_pattern()}",
            "hydra.callbacks.study._target_=harness.suites.suite.SuiteCallback", *quiet, *(per_job(a) for a in user_args)]


def _apply_overrides(cfg: DictConfig, overrides: Sequence[str], case: str) -> None:
    """Apply the suite's ``key=value`` overrides of one case to its composed config."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import open_dict

    where = f"{_where(cfg.suite)}: suite.overrides of {case}"
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception as exc:
        raise HarnessInputError(f"{where}: {str(exc).splitlines()[0]}") from exc
    for o in parsed:
        key = o.key_or_group
        if o.is_delete() or o.is_sweep_override() or "/" in key:
            raise HarnessInputError(f"{where}: {o.input_line!r}: only single key=value overrides are allowed")
        current = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        exists = OmegaConf.select(cfg, key, default="__absent__") != "__absent__"
        if not exists and not (o.is_add() or o.is_force_add()):
            raise HarnessInputError(f"{where}: {key}: no such key in the case config (use +{key}=... to add one)")
        value = o.value()
        if isinstance(current, DictConfig) and not isinstance(value, dict):
            raise HarnessInputError(f"{where}: {key}: is a config group or mapping; a suite override sets values only")
        try:
            if exists:
                OmegaConf.update(cfg, key, value, merge=True)
            else:
                with open_dict(cfg):
                    OmegaConf.update(cfg, key, value, merge=True, force_add=True)
        except Exception as exc:
            raise HarnessInputError(f"{where}: {key}: {str(exc).splitlines()[0]}") from exc


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat()


def suite_task(cfg: DictConfig) -> Dict[str, Any]:
    """The task function of a suite job: one case, never raises (a crash is a failed case)."""
    from hydra.core.hydra_config import HydraConfig

    from harness.core import progress
    from harness.core.runner import (
        STATUS_ERROR,
        STATUS_INVALID,
        Outcome,
        run_case_config,
    )
    from harness.launch.job_process import prepare
    from harness.studies.aggregate import PARENT_RUN_KEY

    prepare()
    start = time.time()
    hc = HydraConfig.get()
    run_dir = Path(hc.runtime.output_dir)
    sweep_dir = Path(hc.sweep.dir)
    env = hc.job.get("env_set") or {}
    case = str(OmegaConf.select(cfg, "case.name", default="?"))
    key_metrics = list(OmegaConf.select(cfg, "case.key_metrics", default=[]) or [])
    tags = list(OmegaConf.select(cfg, "case.tags", default=[]) or [])
    deadline = env.get(DEADLINE_KEY)
    record: Dict[str, Any] = {"case": case, "family": str(OmegaConf.select(cfg, "case.family", default="?")),
                              "tags": tags, "key_metrics": key_metrics, "job": hc.job.num}
    if deadline is not None and start > float(deadline):
        out = {"case": case, "verdict": G.FAIL, "metrics": {}, "gates": {}, "run_dir": str(run_dir),
               "mlflow_run_id": None, "status": STATUS_SKIPPED, "exit_code": G.EXIT_FAIL,
               "message": "skipped: the suite's time budget was spent before this case started"}
        atomic_write_text(run_dir / "outcome.json", json.dumps(out, indent=2))
        print(f"{case}  SKIPPED  (time budget spent)", flush=True)
    else:
        try:
            _apply_overrides(cfg, OmegaConf.select(cfg, "suite") and case_overrides(cfg.suite, case) or [], case)
            outcome = run_case_config(cfg, run_dir, command=[sys.argv[0], *sys.argv[1:]],
                                      overrides=list(hc.overrides.task), parent_run_id=env.get(PARENT_RUN_KEY),
                                      run_name=case)
        except HarnessInputError as exc:
            outcome = Outcome(case=case, verdict=G.FAIL, metrics={}, gates={}, run_dir=run_dir,
                              status=STATUS_INVALID, message=str(exc), key_metrics=key_metrics)
            atomic_write_text(run_dir / "outcome.json", json.dumps(outcome.as_dict(), indent=2, default=str))
        except Exception as exc:  # noqa: BLE001 - a crash is a failed case, never a stopped suite
            log.exception("%s crashed outside the runner", case)
            outcome = Outcome(case=case, verdict=G.FAIL, metrics={}, gates={}, run_dir=run_dir,
                              status=STATUS_ERROR, message=f"{type(exc).__name__}: {exc}".splitlines()[0],
                              key_metrics=key_metrics)
            atomic_write_text(run_dir / "outcome.json", json.dumps(outcome.as_dict(), indent=2, default=str))
        print(outcome.line(), flush=True)
        out = outcome.as_dict()
    end = time.time()
    record.update(wall_s=end - start, started_utc=_utc(start), ended_utc=_utc(end), status=out["status"])
    atomic_write_text(run_dir / JOB_FILE, json.dumps(record, indent=2))
    progress.job_done(sweep_dir)
    return {**out, **record}


class SuiteCallback(Callback):
    """Parent run before the jobs, summary, JUnit XML, dashboard and parent run after them."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from harness.studies.aggregate import (
            PARENT_RUN_KEY,
            TRACKING_URI_KEY,
            pin_for_workers,
        )
        from harness.tracking import records as tracking

        from harness.studies import resume

        if resume.resuming(config):  # `python -m harness resume`: the same directory and parent run
            pins = {f"hydra.job.env_set.{DEADLINE_KEY}": repr(time.time() + float(config.suite.budget_s))} \
                if config.suite.budget_s is not None else {}
            resume.start(config, STATE_FILE, _OPEN, pin_for_workers, (PARENT_RUN_KEY, TRACKING_URI_KEY), pins)
            return
        t0 = time.perf_counter()
        suite = config.suite
        cases = select(suite)
        timings = {"select": time.perf_counter() - t0}
        sweep_dir = Path(config.hydra.sweep.dir).resolve()
        sweep_dir.mkdir(parents=True, exist_ok=True)
        now = time.time()
        state: Dict[str, Any] = {"suite": str(suite.name), "sweep_dir": str(sweep_dir), "cases": [c.name for c in cases],
                                 "n_jobs": _count_jobs(config, len(cases)), "started": now,
                                 "started_utc": _utc(now), "budget_s": suite.budget_s, "deadline": None,
                                 "parent_run_id": None, "tracking_uri": None, "experiment": None,
                                 "launcher": str(OmegaConf.select(config, "hydra.launcher._target_", default="?"))}
        pins: Dict[str, str] = {"hydra.sweep.dir": str(sweep_dir)}
        if OmegaConf.select(config, "paths.outputs") is not None:
            pins["paths.outputs"] = str(Path(config.paths.outputs).resolve())
        for key, value in (suite.env or {}).items():
            pins[f"hydra.job.env_set.{key}"] = str(value)
        if suite.budget_s is not None:
            state["deadline"] = now + float(suite.budget_s)
            pins[f"hydra.job.env_set.{DEADLINE_KEY}"] = repr(state["deadline"])
        t = OmegaConf.select(config, "tracking")
        if t is not None and t.enabled:
            uri = str(t.uri)
            experiment = str(t.get("experiment") or tracking.experiment_name(str(t.experiment_prefix),
                                                                               f"suite/{suite.name}"))
            pins.update({"tracking.uri": uri, f"hydra.job.env_set.{TRACKING_URI_KEY}": uri,
                         "tracking.experiment": experiment})
            try:
                t1 = time.perf_counter()
                import mlflow  # noqa: F401 - its import is timed apart from the suite's own work

                timings["mlflow_import"] = time.perf_counter() - t1
                t1 = time.perf_counter()
                tracking.probe(uri, float(t.timeout_s))
                exp = tracking.ensure_experiment(uri, experiment, t.get("artifact_root"))
                from harness.core.manifest import git_state

                git = git_state()
                parent = tracking.start_run(uri, exp, f"suite:{suite.name}", tags={
                    "harness.kind": "suite", "suite": str(suite.name), "sweep_dir": str(sweep_dir),
                    "n_cases": str(len(cases)), "git_commit": git["commit"], "git_dirty": str(git["dirty"]),
                    "mlflow.note.content": f"Suite **{suite.name}** running: {len(cases)} cases. "
                                           f"{suite.description}"})
                timings["parent_run"] = time.perf_counter() - t1
                state.update(parent_run_id=parent, tracking_uri=uri, experiment=experiment, experiment_id=exp)
                pins[f"hydra.job.env_set.{PARENT_RUN_KEY}"] = parent
                _OPEN[parent] = uri
            except tracking.TrackingError as exc:
                raise HarnessInputError(str(exc)) from exc
        pin_for_workers(config, pins)
        _use_suite_sweeper(config)
        state["timings_s"] = timings
        atomic_write_text(sweep_dir / STATE_FILE, json.dumps(state, indent=2))
        log.info("suite %s: %d cases in %s", suite.name, len(cases), sweep_dir)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from harness.core import progress

        sweep_dir = Path(config.hydra.sweep.dir)
        progress.sweep_end(sweep_dir)
        try:
            summary = finish(sweep_dir)
        except Exception as exc:  # noqa: BLE001 - Hydra would make it a warning: a verdict instead
            from harness.studies.failure import exit_code_of, reason_of

            reason = f"suite {OmegaConf.select(config, 'suite.name', default='?')}: summary failed: {reason_of(exc)}"
            log.debug("%s", reason, exc_info=True)
            print(f"harness: error: {reason}", file=sys.stderr, flush=True)
            close_open_parents(reason)
            summary = {"exit_code": exit_code_of(exc), "error": reason}
        _LAST["exit_code"] = max(_LAST["exit_code"], summary["exit_code"])
        _LAST["summary"] = summary


_OPEN: Dict[str, str] = {}  # parent run id -> uri of suites not yet finished

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def _use_suite_sweeper(config: DictConfig) -> None:
    """Swap Hydra's basic sweeper for :class:`harness.suite_sweeper.SuiteSweeper` (validates
    one job per family instead of every job); any other configured sweeper is kept."""
    from omegaconf import flag_override

    from harness.launch.suite_sweeper import register

    if OmegaConf.select(config, "hydra.sweeper._target_") != BASIC_SWEEPER:
        return
    with flag_override(config, ["readonly", "struct"], [False, False]):
        config.hydra.sweeper._target_ = register()


def close_open_parents(reason: str, status: str = "FAILED") -> None:
    """End with ``status`` (FAILED; KILLED on SIGINT/SIGTERM) the parent run of a suite that
    stopped before its summary."""
    from harness.tracking import records as tracking

    tracking.close_parents(_OPEN, reason, status, "suite")


def _count_jobs(config: DictConfig, n_cases: int) -> int:
    from harness.studies.aggregate import count_jobs

    n = count_jobs(config)
    return int(n) if n else n_cases


def last_exit_code() -> int:
    return int(_LAST["exit_code"])


def last_summary() -> Optional[Dict[str, Any]]:
    return _LAST["summary"]


# ----------------------------------------------------------------------------- summary
def _load(path: Path) -> Optional[Dict[str, Any]]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _case_of(job_dir: Path) -> Optional[str]:
    """``FAMILY/NAME`` of the ``+case=`` override in ``<job_dir>/.hydra/overrides.yaml``, if any."""
    import yaml

    f = job_dir / ".hydra" / "overrides.yaml"
    for o in (yaml.safe_load(f.read_text()) or []) if f.is_file() else []:
        if str(o).lstrip("+~").startswith("case="):
            return str(o).split("=", 1)[1]
    return None


def collect(sweep_dir: Path) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """(state, rows): one row per job directory, plus one per selected case without a job."""
    sweep_dir = Path(sweep_dir)
    state = _load(sweep_dir / STATE_FILE) or {}
    rows: List[Dict[str, Any]] = []
    seen = set()
    for job_dir in sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)):
        out = _load(job_dir / "outcome.json")
        job = _load(job_dir / JOB_FILE) or {}
        slurm = _load(job_dir / "slurm.json")  # hydra/launcher=slurm (harness.launch.slurm_launcher)
        if out is None:
            out = {"case": job.get("case", "?"), "verdict": G.FAIL, "status": "error", "metrics": {}, "gates": {},
                   "mlflow_run_id": None, "exit_code": G.EXIT_FAIL, "message": "the job left no outcome.json"}
            if not job.get("case"):  # a job that never started: its case is in the overrides it was given
                out["case"] = _case_of(job_dir) or "?"
            if slurm and slurm.get("lost"):
                out["message"] = f"Slurm job {slurm.get('job_id')} {slurm.get('state')}: {slurm['lost']}"
        case = out.get("case") or job.get("case", "?")
        row = {"job": int(job_dir.name), "case": case, "family": job.get("family") or case.split("/")[0],
               "tags": job.get("tags", []), "status": out.get("status", "error"),
               "verdict": out.get("verdict", G.FAIL), "exit_code": int(out.get("exit_code", G.EXIT_FAIL)),
               "metrics": out.get("metrics") or {}, "gates": out.get("gates") or {},
               "key_metrics": job.get("key_metrics") or [], "wall_s": job.get("wall_s"),
               "started_utc": job.get("started_utc"), "ended_utc": job.get("ended_utc"),
               "mlflow_run_id": out.get("mlflow_run_id"), "message": out.get("message"),
               "regression": out.get("regression"), "run_dir": str(job_dir), "no_gates": bool(out.get("no_gates"))}
        if slurm:
            row["slurm"] = slurm
        seen.add(case)
        rows.append(row)
    for case in state.get("cases", []):
        if case not in seen:
            rows.append({"job": None, "case": case, "family": case.split("/")[0], "tags": [], "status": "error",
                         "verdict": G.FAIL, "exit_code": G.EXIT_FAIL, "metrics": {}, "gates": {}, "key_metrics": [],
                         "wall_s": None, "started_utc": None, "ended_utc": None, "mlflow_run_id": None,
                         "message": "no job ran this case (the launcher stopped early)", "regression": None,
                         "run_dir": None})
    return state, rows


def table(rows: Sequence[Dict[str, Any]]) -> str:
    """The summary table printed at the end of a suite."""
    head = ("case", "verdict", "regression", "wall [s]", "key metrics")
    body = []
    for r in rows:
        reg = regression_status(r)
        if is_regression(r):
            reg = "REGRESSION"
        wall = "-" if r["wall_s"] is None else f"{r['wall_s']:.2f}"
        tail = key_metric_text(r)
        if r["status"] not in ("ok",) and r.get("message"):
            # an unsent run's message says what to do about the store: never cut
            message = str(r["message"]) if r["status"] == "tracking_error" else str(r["message"])[:120]
            tail = (tail + "  " if tail else "") + f"({message})"
        body.append((r["case"], row_verdict(r), reg, wall, tail))
    widths = [max(len(head[i]), *(len(b[i]) for b in body)) for i in range(4)]
    fmt = lambda t: f"{t[0]:<{widths[0]}}  {t[1]:<{widths[1]}}  {t[2]:<{widths[2]}}  {t[3]:>{widths[3]}}  {t[4]}"
    return "\n".join([fmt(head), "  ".join("-" * w for w in widths) + "  " + "-" * 11, *(fmt(b) for b in body)])


def summary_line(name: str, c: Dict[str, int], wall_s: float, exit_code: int) -> str:
    return (f"suite {name}: {c['cases']} cases  pass={c['pass']} warn={c['warn']} fail={c['fail']} "
            f"error={c['error']} invalid={c['invalid']} skipped={c['skipped']}  regressions={c['regression']}"
            f"  wall {wall_s:.1f} s  exit {exit_code}")


def finish(sweep_dir: Path) -> Dict[str, Any]:
    """Summarise a suite directory: table (printed), suite.json, junit.xml, dashboard, parent run."""
    from harness.suites import dashboard, junit

    t0 = time.perf_counter()
    sweep_dir = Path(sweep_dir)
    state, rows = collect(sweep_dir)
    c = counts(rows)
    exit_code = max([G.EXIT_OK, *(r["exit_code"] for r in rows)])
    if c["skipped"]:
        exit_code = max(exit_code, G.EXIT_FAIL)
    ended = time.time()
    wall = ended - float(state.get("started", ended))
    name = str(state.get("suite", sweep_dir.parent.name))
    summary = {"suite": name, "sweep_dir": str(sweep_dir), "started_utc": state.get("started_utc"),
               "ended_utc": _utc(ended), "wall_s": wall, "counts": c, "exit_code": exit_code,
               "verdict": G.FAIL if exit_code else G.PASS, "parent_run_id": state.get("parent_run_id"),
               "tracking_uri": state.get("tracking_uri"), "launcher": state.get("launcher"),
               "model_time_s": sum(float(r["wall_s"] or 0.0) for r in rows), "rows": rows}
    text = table(rows) + "\n" + summary_line(name, c, wall, exit_code)
    print(text + f"\nreports: {sweep_dir}/junit.xml, {sweep_dir}/dashboard.html", flush=True)
    atomic_write_text(sweep_dir / "summary.txt", text + "\n")
    junit.write(summary, sweep_dir / "junit.xml")
    atomic_write_text(sweep_dir / SUMMARY_FILE, json.dumps(summary, indent=2, default=str))
    dashboard.write(sweep_dir)
    timings = dict(state.get("timings_s") or {})
    timings["summary"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    _finish_parent(summary, sweep_dir)
    timings["parent_end"] = time.perf_counter() - t1
    summary["timings_s"] = timings
    # the suite's own work: selection, parent run, table + JUnit + dashboard, closing the parent
    summary["bookkeeping_s"] = sum(v for k, v in timings.items() if k != "mlflow_import")
    atomic_write_text(sweep_dir / SUMMARY_FILE, json.dumps(summary, indent=2, default=str))
    return summary


def parent_note(summary: Dict[str, Any]) -> str:
    """Markdown description of the suite's parent run."""
    c = summary["counts"]
    lines = [f"### Suite `{summary['suite']}`: {'FAILED' if summary['exit_code'] else 'PASSED'} "
             f"(exit {summary['exit_code']})", "",
             f"{c['cases']} cases: pass {c['pass']}, warn {c['warn']}, fail {c['fail']}, error {c['error']}, "
             f"invalid {c['invalid']}, skipped {c['skipped']}; regressions {c['regression']}; "
             f"wall {summary['wall_s']:.1f} s.", ""]
    bad = [r for r in summary["rows"] if r["exit_code"] or is_regression(r)]
    if bad:
        lines += ["| case | verdict | regression |", "|---|---|---|"]
        lines += [f"| {r['case']} | {row_verdict(r)} | {regression_status(r)} |" for r in bad]
    return "\n".join(lines)


def _finish_parent(summary: Dict[str, Any], sweep_dir: Path) -> None:
    from harness.tracking import records as tracking

    uri, parent = summary.get("tracking_uri"), summary.get("parent_run_id")
    if not (uri and parent):
        return
    _OPEN.pop(parent, None)
    c = summary["counts"]
    metrics = {f"n_{k}": float(v) for k, v in c.items()}
    metrics.update(wall_s=float(summary["wall_s"]), model_time_s=float(summary["model_time_s"]),
                   exit_code=float(summary["exit_code"]))
    tags = {"verdict": summary["verdict"], "exit_code": str(summary["exit_code"]),
            "mlflow.note.content": parent_note(summary)}
    try:
        tracking.log_batch(uri, parent, metrics=metrics, tags=tags)
        for name in ("suite.json", "junit.xml", "dashboard.html", "summary.txt"):
            if (sweep_dir / name).is_file():
                tracking.client(uri).log_artifact(parent, str(sweep_dir / name))
        tracking.end_run(uri, parent, "FAILED" if summary["exit_code"] else "FINISHED")
    except Exception as exc:  # the files on disk stay complete
        log.error("suite: could not record the parent run %s: %s", parent, exc)
