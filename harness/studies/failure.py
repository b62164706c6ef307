"""A study whose aggregation raised: a verdict, not a warning.

Hydra turns an exception in a multirun callback into a UserWarning (exit 0, nothing recorded).
:func:`record` turns it into the study's result instead: one line on stderr, exit 2 for
invalid input (a :class:`HarnessInputError`: the study's config or its inputs) or 1 for a crash,
``study/study.json`` with the error, and the parent MLflow run ended FAILED with the reason
in its tags ``error`` and its note.
"""
from __future__ import annotations

import json
import logging
import sys
import traceback
from pathlib import Path
from typing import Any, Dict, Optional

from omegaconf import DictConfig, OmegaConf

from harness.core.atomic import atomic_write_text
from harness.core.context import HarnessInputError
from harness.metrics import gates as G

log = logging.getLogger(__name__)


def exit_code_of(exc: BaseException) -> int:
    """2 for invalid input, 1 for a crash."""
    return G.EXIT_INPUT if isinstance(exc, HarnessInputError) else G.EXIT_FAIL


def reason_of(exc: BaseException) -> str:
    """The one line naming what went wrong."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return text if isinstance(exc, HarnessInputError) else f"{type(exc).__name__}: {text}".rstrip(": ")


def record(exc: BaseException, sweep_dir: Path, study: Optional[DictConfig], state: Dict[str, Any]) -> int:
    """Say, write and track the failed aggregation of ``sweep_dir``; returns the exit code."""
    from harness.tracking import records as tracking

    code = exit_code_of(exc)
    name = str(OmegaConf.select(study, "name", default="sweep")) if study is not None else "sweep"
    reason = f"study {name}: {reason_of(exc)}"
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    log.debug("study %s: aggregation stopped:\n%s", name, trace)  # the traceback goes to study.json
    print(f"harness: error: {reason}", file=sys.stderr, flush=True)
    out_dir = Path(sweep_dir) / "study"
    summary = {"name": name, "sweep_dir": str(sweep_dir),
               "kind": str(OmegaConf.select(study, "kind", default="table")) if study is not None else "table",
               "verdict": G.FAIL, "exit_code": code, "metrics": {},
               "error": {"type": type(exc).__name__, "message": reason_of(exc), "exit_code": code,
                         "kind": "invalid_input" if code == G.EXIT_INPUT else "crash",
                         **({"traceback": trace} if code == G.EXIT_FAIL else {})}}
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out_dir / "study.json", json.dumps(summary, indent=2, default=str))
    except OSError as err:
        log.error("study %s: could not write %s: %s", name, out_dir / "study.json", err)
    uri, parent = state.get("tracking_uri"), state.get("parent_run_id")
    if uri and parent:
        try:
            tracking.log_batch(uri, parent, tags={
                "error": reason[:5000], "verdict": G.FAIL, "exit_code": str(code),
                "mlflow.note.content": f"Study **{name}** failed (exit {code}): {reason}"})
            if out_dir.is_dir():
                tracking.log_artifacts(uri, parent, out_dir)
            tracking.end_run(uri, parent, "FAILED")
        except Exception as err:  # noqa: BLE001 - the one line above already told the user
            log.error("study %s: could not close the parent run %s: %s", name, parent, err)
    return code
