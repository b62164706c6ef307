"""Ctrl-C and SIGTERM: a run that is stopped says so, on one line and in its records.

:func:`install` (called by the CLI) turns SIGINT and SIGTERM into :class:`Interrupted`,
a ``KeyboardInterrupt`` that knows its signal. When one reaches a case run,
:func:`record` writes what happened to the run directory: ``outcome.json``,
``metrics.json`` and ``manifest.json`` with status ``interrupted``, the stages completed,
the stage that was running and the time since the run started; the MLflow run (when
tracking is on) is recorded as KILLED. The CLI then prints :func:`describe` on one line
and exits with :data:`EXIT_INTERRUPTED`. A second signal while this is being written stops
the process at once (exit 130) for a user who insists.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import time
from typing import Any, Dict, Optional, Sequence

log = logging.getLogger(__name__)

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C
STATUS_INTERRUPTED = "interrupted"
_PROCESS_START = time.perf_counter()


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; ``signal_name`` says which, ``line`` what was stopped."""

    def __init__(self, signal_name: str = "SIGINT", line: Optional[str] = None) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.line = line


_state = {"raised": False}


def _handler(signum: int, frame: Any) -> None:
    if _state["raised"]:  # the second signal: stop now, the records are being written
        os._exit(EXIT_INTERRUPTED)
    _state["raised"] = True
    raise Interrupted(signal.Signals(signum).name)


def install() -> Dict[int, Any]:
    """Route SIGINT and SIGTERM to :class:`Interrupted` (main thread only); returns the
    previous handlers for :func:`restore`."""
    _state["raised"] = False
    return {sig: signal.signal(sig, _handler) for sig in (signal.SIGINT, signal.SIGTERM)}


def restore(previous: Dict[int, Any]) -> None:
    """Put back the handlers :func:`install` replaced (an in-process ``main(argv)`` call)."""
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def signal_name(exc: BaseException) -> str:
    return getattr(exc, "signal_name", "SIGINT")


def describe(exc: BaseException) -> str:
    """The one line the CLI prints for an interruption."""
    line = getattr(exc, "line", None)
    if line:
        return line
    return f"interrupted ({signal_name(exc)}) after {time.perf_counter() - _PROCESS_START:.1f} s"


def record(exc: BaseException, cfg: Any, ctx: Any, started: float, *, command: Sequence[str] = (),
           overrides: Sequence[str] = (), parent_run_id: Optional[str] = None) -> Interrupted:
    """Write the records of a case run stopped by ``exc``; returns the exception to raise.

    ``ctx`` is the run's RunContext (its timings say which stages ran), ``started`` the
    ``time.perf_counter()`` of the run's start. Never raises except for a second signal.
    """
    from omegaconf import OmegaConf

    from harness import runner
    from harness.atomic import atomic_write_text
    from harness.context import CaseResult, _json_default
    from harness.manifest import git_state

    elapsed = time.perf_counter() - started
    completed = [s for s in ctx.timings if s not in ctx.stages_open]
    if ctx.stages_open:  # the runner's stage (the outermost one open)
        stage, where = ctx.stages_open[0], f"in stage {ctx.stages_open[0]}"
    else:  # between two stages
        stage = f"after {completed[-1]}" if completed else "setup"
        where = f"after stage {completed[-1]}" if completed else "before the first stage"
    case = str(OmegaConf.select(cfg, "case.name", default="?"))
    sig = signal_name(exc)
    message = f"interrupted ({sig}) after {elapsed:.1f} s {where}"
    outcome = runner.Outcome(case=case, verdict="fail", metrics={}, gates={}, run_dir=ctx.run_dir,
                             status=STATUS_INTERRUPTED, message=message)
    block: Dict[str, Any] = {"signal": sig, "stage": stage, "after_s": round(elapsed, 3),
                             "stages_completed": completed}
    try:
        try:
            resolved = runner.resolved_container(cfg)
        except Exception:  # noqa: BLE001 - an unresolvable config still gets its records
            resolved = {}
        sha = runner.config_hash(resolved) if resolved else ""
        git = git_state()
        result = CaseResult(metrics={}, info={"interrupted": block})
        runner._write_records(ctx, outcome, result, {}, resolved, sha, command, overrides, git)
        manifest_path = ctx.run_dir / "manifest.json"
        manifest = json.loads(manifest_path.read_text())
        manifest["interrupted"] = block
        atomic_write_text(manifest_path, json.dumps(manifest, indent=2, default=_json_default))
        if stage not in ("tracking", "after tracking"):  # tracking ended a started run KILLED itself
            runner._track(cfg, resolved, outcome, result, sha, parent_run_id, git)
        atomic_write_text(ctx.run_dir / "outcome.json",
                          json.dumps(outcome.as_dict(), indent=2, default=_json_default))
    except KeyboardInterrupt:
        raise
    except Exception as err:  # noqa: BLE001 - the one line below still tells the user
        log.error("records of the interrupted run are incomplete: %s", err)
    line = f"{case}: {message}; records in {ctx.run_dir} (status {STATUS_INTERRUPTED})"
    if outcome.mlflow_run_id:
        line += f", MLflow run {outcome.mlflow_run_id} KILLED"
    return Interrupted(sig, line)
