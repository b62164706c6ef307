"""Ctrl-C and SIGTERM: a run that is stopped says so, on one line and in its records.

:func:`install` (called by the CLI) turns SIGINT and SIGTERM into :class:`Interrupted`,
a ``KeyboardInterrupt`` that knows its signal. When one reaches a case run,
:func:`harness.core.runner.record_interrupted` writes what happened to the run directory: ``outcome.json``,
``metrics.json`` and ``manifest.json`` with status ``interrupted``, the stages completed,
the stage that was running and the time since the run started; the MLflow run (when
tracking is on) is recorded as KILLED. The CLI then prints :func:`describe` on one line
and exits with :data:`EXIT_INTERRUPTED`. A second signal while this is being written stops
the process at once (exit 130) for a user who insists.
"""
from __future__ import annotations

import logging
import os
import signal
import time
from typing import Any, Dict, Optional

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
