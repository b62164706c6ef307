"""One case run: adapter -> metrics -> gates -> run directory records -> MLflow.

The runner never raises for a failed gate or a crashed model: it returns an
:class:`Outcome` whose ``exit_code`` the CLI uses (0 pass/warn, 1 fail, 2 invalid input).
"""
from __future__ import annotations

import importlib
import json
import logging
import os
import socket
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from harness.core import determinism, interrupt
from harness.core.atomic import atomic_write_text
from harness.core.context import (
    CaseResult,
    HarnessInputError,
    RunContext,
    RunFailed,
    _json_default,
)
from harness.core.inputs import resolve_input_paths
from harness.core.limits import check_limits
from harness.core.manifest import build_manifest, canonical_json, git_state, sha256_text
from harness.core.metric_records import adapter_kinds, kind_tags, tracked_series
from harness.launch import slurm_job
from harness.metrics import gates as G
from harness.tracking import records as tracking

log = logging.getLogger(__name__)

# Keys that say where a run goes, not what it computes: excluded from the config hash.
RUNTIME_KEYS = ("paths", "tracking", "hydra", "suite")

STATUS_OK, STATUS_INVALID, STATUS_ERROR, STATUS_TRACKING = "ok", "invalid", "error", "tracking_error"


@dataclass
class Outcome:
    """What a case run returns (the API contract)."""

    case: str
    verdict: str  # pass / warn / fail
    metrics: Dict[str, float]
    gates: Dict[str, str]
    run_dir: Path
    mlflow_run_id: Optional[str] = None
    status: str = STATUS_OK  # ok / invalid / error / tracking_error
    message: Optional[str] = None
    key_metrics: List[str] = field(default_factory=list)
    regression: Optional[Dict[str, Any]] = None  # harness.core.regression.judge: status, per-metric verdicts
    no_gates: bool = False  # the case gates no metric: its PASS judged nothing
    kinds: Dict[str, str] = field(default_factory=dict)  # metric -> kind (harness.metrics.kinds)

    @property
    def exit_code(self) -> int:
        if self.status in (STATUS_INVALID, STATUS_TRACKING):
            return G.EXIT_INPUT
        if self.status == STATUS_ERROR:
            return G.EXIT_FAIL
        if self.status == interrupt.STATUS_INTERRUPTED:
            return interrupt.EXIT_INTERRUPTED
        from harness.core.regression import regression_exit_code

        return max(G.exit_code(self.verdict), regression_exit_code(self.regression))

    def line(self) -> str:
        """The one line the CLI prints for this case."""
        shown = [f"{k}={_fmt(self.metrics[k])}" for k in self.key_metrics if k in self.metrics]
        shown_verdict = self.verdict.upper() if self.status == STATUS_OK else self.status.upper()
        if self.no_gates and self.status == STATUS_OK:
            shown_verdict += "(no gates)"
        parts = [self.case, shown_verdict, *shown, f"run={self.mlflow_run_id or '-'}"]
        if self.regression and self.regression.get("status") == "regression":
            parts.append("REGRESSION(" + ",".join(self.regression.get("regressed", [])) + ")")
        if self.message and self.status != STATUS_TRACKING:  # that error went to stderr (logged once)
            parts.append(f"({self.message})")
        return "  ".join(parts)

    def as_dict(self) -> Dict[str, Any]:
        return {"case": self.case, "verdict": self.verdict, "metrics": self.metrics,
                "gates": self.gates, "run_dir": str(self.run_dir), "mlflow_run_id": self.mlflow_run_id,
                "status": self.status, "message": self.message, "exit_code": self.exit_code,
                "regression": self.regression, "no_gates": self.no_gates, "kinds": self.kinds}


NO_GATES_NOTE = "case.gates is empty: nothing is judged (verdict pass by default)"
_WARNED_NO_GATES: set = set()


def warn_no_gates(case: str) -> None:
    """Warn once per case and process that a case without gates judges nothing."""
    if case not in _WARNED_NO_GATES:
        _WARNED_NO_GATES.add(case)
        log.warning("%s: %s", case, NO_GATES_NOTE)


def _fmt(v: float) -> str:
    return f"{v:.3e}" if isinstance(v, float) and v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e4) else f"{v:.4g}"


def load_adapter(spec: str):
    """Import ``"package.module:function"``."""
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise HarnessInputError(f"case.adapter: must be 'module:function', got {spec!r}")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise HarnessInputError(f"case.adapter: cannot load {spec!r}: {exc}") from exc
    if not callable(fn):
        raise HarnessInputError(f"case.adapter: {spec!r} is not callable")
    return fn


def resolved_container(cfg: DictConfig) -> Dict[str, Any]:
    try:
        return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)  # type: ignore[return-value]
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None)
        raise HarnessInputError(f"config: {key or '?'}: {str(exc).splitlines()[0]}") from exc


def config_hash(resolved: Dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the resolved config without runtime-only keys and
    without ``gate.regression`` (how a run is judged against its baseline, not what it computes)."""
    kept = {k: v for k, v in resolved.items() if k not in RUNTIME_KEYS}
    if isinstance(kept.get("gate"), dict):
        kept["gate"] = {k: v for k, v in kept["gate"].items() if k != "regression"}
    return sha256_text(canonical_json(kept))


def gate_bands(cfg: DictConfig):
    gate = cfg.gate
    default = None if gate.get("default") is None else G.Band.from_mapping(gate.default)
    bands = {}
    allowed = ("pass_max", "warn_max", "pass_min", "warn_min")
    for name, b in (gate.get("bands") or {}).items():
        if not hasattr(b, "items"):
            raise HarnessInputError(f"gate.bands.{name}: must be a mapping of {', '.join(allowed)}, got {b!r}")
        for key, value in b.items():
            if key not in allowed:
                raise HarnessInputError(f"gate.bands.{name}.{key}: unknown band field (allowed: {', '.join(allowed)})")
            if value is not None and not isinstance(value, (int, float)):
                raise HarnessInputError(f"gate.bands.{name}.{key}: must be a number, got {value!r}")
        bands[name] = G.Band.from_mapping(b)
    return bands, default


def run_case_config(cfg: DictConfig, run_dir: Path, *, command: Sequence[str] = (),
                    overrides: Sequence[str] = (), parent_run_id: Optional[str] = None,
                    run_name: Optional[str] = None) -> Outcome:
    """Run the composed case ``cfg`` in ``run_dir`` and record it; never raises for a gate.

    run_name: the MLflow run name; default the case name, or for a child of a sweep its
    overrides (:func:`harness.reports.notes.child_run_name`).
    SIGINT/SIGTERM (KeyboardInterrupt) is recorded as status ``interrupted`` (see
    :mod:`harness.interrupt`) and re-raised as :class:`harness.interrupt.Interrupted`.
    """
    ctx = RunContext(run_dir=Path(run_dir))
    started = time.perf_counter()
    try:
        return _run_case_config(cfg, ctx, command=command, overrides=overrides, parent_run_id=parent_run_id,
                                run_name=run_name)
    except KeyboardInterrupt as exc:
        raise record_interrupted(exc, cfg, ctx, started, command=command, overrides=overrides,
                               parent_run_id=parent_run_id) from None


def _run_case_config(cfg: DictConfig, ctx: RunContext, *, command: Sequence[str] = (),
                     overrides: Sequence[str] = (), parent_run_id: Optional[str] = None,
                     run_name: Optional[str] = None) -> Outcome:
    start_ms = int(time.time() * 1000)  # the MLflow run's real start
    run_dir = ctx.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    case_name = str(OmegaConf.select(cfg, "case.name", default="?"))
    key_metrics = list(OmegaConf.select(cfg, "case.key_metrics", default=[]) or [])
    status, message, result = STATUS_OK, None, CaseResult(metrics={})
    resolved: Dict[str, Any] = {}
    gate_results: Dict[str, G.GateResult] = {}
    try:
        if OmegaConf.select(cfg, "case") is None:
            raise HarnessInputError("case: no case selected (use +case=FAMILY/NAME)")
        with ctx.stage("resolve"):
            resolved = resolved_container(cfg)
            gate_bands(cfg)  # a malformed band is invalid input before anything runs
            atomic_write_text(run_dir / "config.yaml", OmegaConf.to_yaml(OmegaConf.create(
                {k: v for k, v in resolved.items() if k != "hydra"})))
            ctx.outputs.append((run_dir / "config.yaml").resolve())
            adapter = load_adapter(cfg.case.adapter)
            resolve_input_paths(cfg)  # relative input files: launch directory, then shipped files
            check_limits(cfg)  # absurd sizes and enum-like options outside their choices
        with ctx.stage("run"):
            result = adapter(cfg, ctx)
        if not isinstance(result, CaseResult):
            raise TypeError(f"adapter {cfg.case.adapter} returned {type(result).__name__}, not CaseResult")
        result.metrics = {k: float(v) for k, v in result.metrics.items()}
        try:
            result.kinds = adapter_kinds(adapter, result.metrics, dict(result.kinds or {}))
        except ValueError as exc:
            raise HarnessInputError(str(exc)) from exc
        with ctx.stage("gates"):
            bands, default = gate_bands(cfg)
            try:
                gate_results = G.judge(result.metrics, list(cfg.case.gates), bands, default)
            except ValueError as exc:
                raise HarnessInputError(f"gate.bands: {exc}") from exc
    except HarnessInputError as exc:
        status, message = STATUS_INVALID, str(exc)
        log.info("%s: invalid input: %s", case_name, exc)
    except RunFailed as exc:  # the model failed: one line, its records kept next to the error
        status, message = STATUS_ERROR, str(exc).splitlines()[0]
        log.error("%s: %s", case_name, message)
        result.info.update(exc.info)
        result.info["error"] = str(exc)
    except Exception as exc:  # a crashed model is a failed run, recorded, not raised
        status, message = STATUS_ERROR, f"{type(exc).__name__}: {exc}".splitlines()[0]
        log.error("%s crashed:\n%s", case_name, traceback.format_exc())
        result.info["traceback"] = traceback.format_exc()

    verdict = G.worst(g.verdict for g in gate_results.values()) if status == STATUS_OK else G.FAIL
    outcome = Outcome(case=case_name, verdict=verdict, metrics=dict(result.metrics),
                      gates={k: g.verdict for k, g in gate_results.items()}, run_dir=run_dir,
                      status=status, message=message, key_metrics=key_metrics, kinds=dict(result.kinds))
    if status == STATUS_OK and not gate_results:
        outcome.no_gates = True
        result.info["no_gates"] = NO_GATES_NOTE
        warn_no_gates(case_name)
    config_sha = config_hash(resolved) if resolved else ""
    if status == STATUS_OK:
        from harness.core.regression import judge_outcome

        with ctx.stage("regression"):
            outcome.regression = judge_outcome(cfg, outcome, config_sha)
    with ctx.stage("figures"):
        ctx.outputs.extend(p.resolve() for p in _figures(cfg, run_dir))
    git = git_state()  # once per run: the manifest and the MLflow tags carry the same state
    with ctx.stage("records"):
        _write_records(ctx, outcome, result, gate_results, resolved, config_sha, command, overrides, git)
    from harness.tracking.notes import child_run_name, run_note, swept_keys

    name = run_name or (child_run_name(case_name, overrides, swept_keys(run_dir.parent)) if parent_run_id
                        else case_name)
    with ctx.stage("tracking"):
        _track(cfg, resolved, outcome, result, config_sha, parent_run_id, git, run_name=name, start_ms=start_ms,
               note=run_note(cfg, outcome, gate_results))
    atomic_write_text(run_dir / "outcome.json", json.dumps(outcome.as_dict(), indent=2, default=_json_default))
    return outcome


def _figures(cfg: DictConfig, run_dir: Path) -> List[Path]:
    """Post-run hook: the family's standard figures from the run directory (never raises)."""
    from harness.core import figures

    family = str(OmegaConf.select(cfg, "case.family", default="") or "")
    try:
        return figures.for_run(family, run_dir)
    except Exception as exc:  # a figure never fails a run
        log.warning("figures for %s: %s", run_dir, exc)
        return []


def _write_records(ctx: RunContext, outcome: Outcome, result: CaseResult, gate_results, resolved,
                   config_sha: str, command, overrides, git: Dict[str, Any]) -> None:
    run_dir = ctx.run_dir
    metrics_doc = {"case": outcome.case, "verdict": outcome.verdict, "status": outcome.status,
                   "metrics": outcome.metrics, "kinds": outcome.kinds,
                   "gates": {k: g.as_dict() for k, g in gate_results.items()}}
    if outcome.no_gates:
        metrics_doc["no_gates"] = True
    atomic_write_text(run_dir / "metrics.json", json.dumps(metrics_doc, indent=2, default=_json_default))
    if result.series:
        atomic_write_text(run_dir / "series.json", json.dumps(result.series, default=_json_default))
    outputs = [p for p in ctx.outputs if p.name not in ("manifest.json",)]
    outputs += [(run_dir / "metrics.json").resolve()]
    if result.series:
        outputs.append((run_dir / "series.json").resolve())
    manifest = build_manifest(
        case=outcome.case, command=command, overrides=overrides,
        resolved_config={k: v for k, v in resolved.items() if k != "hydra"}, config_sha256=config_sha,
        inputs=ctx.inputs, outputs=sorted(set(outputs)), run_dir=run_dir, timings=ctx.timings,
        gates={k: g.as_dict() for k, g in gate_results.items()}, verdict=outcome.verdict,
        metrics=outcome.metrics, info=result.info, status=outcome.status, error=outcome.message, git=git)
    manifest["metric_kinds"] = outcome.kinds
    manifest["determinism"] = determinism.record(resolved or {})
    slurm = slurm_job.job_block()  # a job of hydra/launcher=slurm: its Slurm id, node, queue wait, run time
    if slurm:
        manifest["slurm"] = slurm
    atomic_write_text(run_dir / "manifest.json", json.dumps(manifest, indent=2, default=_json_default))


TRACKING_FILE = "tracking.json"


def _track(cfg: DictConfig, resolved, outcome: Outcome, result: CaseResult, config_sha: str,
           parent_run_id: Optional[str], git: Dict[str, Any], *, run_name: Optional[str] = None,
           start_ms: Optional[int] = None, note: str = "") -> None:
    """Record the run in MLflow, then write ``tracking.json`` (state ``sent`` or ``unsent``).

    ``tracking.json`` holds what a later upload needs beyond the run directory's records:
    the store, experiment, run name, tags, parent run id and the run's own uid (tagged on
    the MLflow run, so ``python -m harness.sync`` never uploads a run twice).
    """
    tcfg = OmegaConf.select(cfg, "tracking")
    if tcfg is None or not tcfg.enabled:
        return
    run_name = run_name or outcome.case
    family = str(OmegaConf.select(cfg, "case.family", default="unknown") or "unknown")
    tags = {"verdict": outcome.verdict, "case": outcome.case, "status": outcome.status,
            "config_sha256": config_sha, "git_commit": git["commit"], "git_dirty": str(git["dirty"]),
            "family": family, "run_dir": str(outcome.run_dir)}
    tags.update({f"gate.{k}": v for k, v in outcome.gates.items()})
    if outcome.no_gates:
        tags["no_gates"] = "true"
    if outcome.message:
        tags["message"] = outcome.message[:5000]
    from harness.core.regression import regression_metrics, regression_tags

    tags.update(regression_tags(outcome.regression))
    tags.update(kind_tags(outcome.kinds))
    tags.update(slurm_job.job_tags())
    if note:
        tags["mlflow.note.content"] = note
    record = {"state": "unsent", "uri": str(tcfg.uri), "artifact_root": tcfg.get("artifact_root"),
              "experiment": str(tcfg.get("experiment") or tracking.experiment_name(str(tcfg.experiment_prefix), family)),
              "run_name": run_name, "tags": tags, "parent_run_id": parent_run_id,
              "status": {STATUS_OK: "FINISHED", interrupt.STATUS_INTERRUPTED: "KILLED"}.get(outcome.status, "FAILED"),
              "run_uid": tracking.new_run_uid(), "run_id": None, "error": None,
              "worker": {"host": socket.gethostname(), "pid": os.getpid()}}
    params = tracking.flatten({k: v for k, v in resolved.items() if k not in ("hydra", "suite")})
    try:
        outcome.mlflow_run_id = tracking.record_run(
            uri=record["uri"], artifact_root=record["artifact_root"], experiment=record["experiment"],
            run_name=run_name, params=params,
            metrics={**tracking.run_metrics(outcome.metrics, outcome.gates), **regression_metrics(outcome.regression)},
            series=tracked_series(outcome.metrics, result.series), tags=tags, artifacts_dir=outcome.run_dir,
            status=record["status"],
            parent_run_id=parent_run_id, timeout_s=float(tcfg.timeout_s), run_uid=record["run_uid"],
            start_ms=start_ms, end_ms=int(time.time() * 1000))
        record.update(state="sent", run_id=outcome.mlflow_run_id)
    except tracking.TrackingError as exc:
        record["error"] = str(exc)
        if outcome.status == STATUS_OK:  # an invalid or crashed run keeps its own status
            outcome.status = STATUS_TRACKING
        if isinstance(exc, tracking.StoreTooNew):  # its one line: the CLI says it once per process
            note = str(exc)
            log.info("%s; run directory complete at %s (upload later: python -m harness.sync)", note,
                     outcome.run_dir)
        else:
            note = f"{exc}; run directory complete at {outcome.run_dir} (upload later: python -m harness.sync)"
            log.error("%s", note)
        outcome.message = f"{outcome.message}; {note}" if outcome.message else note
    atomic_write_text(outcome.run_dir / TRACKING_FILE, json.dumps(record, indent=2))


def record_interrupted(exc: BaseException, cfg: Any, ctx: Any, started: float, *, command: Sequence[str] = (),
                       overrides: Sequence[str] = (), parent_run_id: Optional[str] = None) -> interrupt.Interrupted:
    """Write the records of a case run stopped by ``exc``; returns the exception to raise.

    ``ctx`` is the run's RunContext (its timings say which stages ran), ``started`` the
    ``time.perf_counter()`` of the run's start. Never raises except for a second signal.
    """
    elapsed = time.perf_counter() - started
    completed = [s for s in ctx.timings if s not in ctx.stages_open]
    if ctx.stages_open:  # the runner's stage (the outermost one open)
        stage, where = ctx.stages_open[0], f"in stage {ctx.stages_open[0]}"
    else:  # between two stages
        stage = f"after {completed[-1]}" if completed else "setup"
        where = f"after stage {completed[-1]}" if completed else "before the first stage"
    case = str(OmegaConf.select(cfg, "case.name", default="?"))
    sig = interrupt.signal_name(exc)
    message = f"interrupted ({sig}) after {elapsed:.1f} s {where}"
    outcome = Outcome(case=case, verdict="fail", metrics={}, gates={}, run_dir=ctx.run_dir,
                             status=interrupt.STATUS_INTERRUPTED, message=message)
    block: Dict[str, Any] = {"signal": sig, "stage": stage, "after_s": round(elapsed, 3),
                             "stages_completed": completed}
    try:
        try:
            resolved = resolved_container(cfg)
        except Exception:  # noqa: BLE001 - an unresolvable config still gets its records
            resolved = {}
        sha = config_hash(resolved) if resolved else ""
        git = git_state()
        result = CaseResult(metrics={}, info={"interrupted": block})
        _write_records(ctx, outcome, result, {}, resolved, sha, command, overrides, git)
        manifest_path = ctx.run_dir / "manifest.json"
        manifest = json.loads(manifest_path.read_text())
        manifest["interrupted"] = block
        atomic_write_text(manifest_path, json.dumps(manifest, indent=2, default=_json_default))
        if stage not in ("tracking", "after tracking"):  # tracking ended a started run KILLED itself
            _track(cfg, resolved, outcome, result, sha, parent_run_id, git)
        atomic_write_text(ctx.run_dir / "outcome.json",
                          json.dumps(outcome.as_dict(), indent=2, default=_json_default))
    except KeyboardInterrupt:
        raise
    except Exception as err:  # noqa: BLE001 - the one line below still tells the user
        log.error("records of the interrupted run are incomplete: %s", err)
    line = f"{case}: {message}; records in {ctx.run_dir} (status {interrupt.STATUS_INTERRUPTED})"
    if outcome.mlflow_run_id:
        line += f", MLflow run {outcome.mlflow_run_id} KILLED"
    return interrupt.Interrupted(sig, line)
