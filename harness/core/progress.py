"""Progress bars for sweeps and long simulations: on a terminal only, quiet in CI.

Shown when stderr is a terminal and neither ``CI`` nor ``HARNESS_PROGRESS=0`` is set
(``HARNESS_PROGRESS=1`` forces them on, e.g. for a log file). Bars are written to stderr
with a carriage return, so they never mix with the verdict lines on stdout.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Optional, TextIO

WIDTH = 28


def enabled(stream: Optional[TextIO] = None) -> bool:
    flag = os.environ.get("HARNESS_PROGRESS")
    if flag is not None:
        return flag not in ("0", "", "false", "no")
    if os.environ.get("CI"):
        return False
    s = stream or sys.stderr
    return bool(getattr(s, "isatty", lambda: False)())


def render(done: int, total: Optional[int], label: str, elapsed_s: float) -> str:
    """One bar line, e.g. ``[#######.....]  7/16  12.3 s  sweep load_transfer/sign``."""
    if total:
        frac = min(max(done / total, 0.0), 1.0)
        fill = int(round(frac * WIDTH))
        head = f"[{'#' * fill}{'.' * (WIDTH - fill)}] {done:>{len(str(total))}}/{total}"
    else:
        head = f"[{done} done]"
    return f"{head}  {elapsed_s:6.1f} s  {label}"


class Bar:
    """A throttled progress bar: ``with Bar(total, "dem steps") as b: b.update(k)``."""

    def __init__(self, total: Optional[int], label: str, stream: Optional[TextIO] = None,
                 min_interval_s: float = 0.2) -> None:
        self.total, self.label = total, label
        self.stream = stream or sys.stderr
        self.on = enabled(self.stream)
        self.min_interval_s = min_interval_s
        self.start = time.monotonic()
        self._last = -1e9
        self.done = 0

    def update(self, done: int, force: bool = False) -> None:
        self.done = done
        now = time.monotonic()
        if not self.on or (not force and now - self._last < self.min_interval_s):
            return
        self._last = now
        self.stream.write("\r" + render(done, self.total, self.label, now - self.start))
        self.stream.flush()

    def close(self) -> None:
        if self.on:
            self.update(self.done, force=True)
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> "Bar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def bar(total: Optional[int], label: str) -> Bar:
    """A bar for a long simulation (steps, snapshots); a no-op outside a terminal."""
    return Bar(total, label)


def _sweep_counts(sweep_dir: Path):
    from harness.core.sweep_state import state_file as sweep_state_file

    state_file = sweep_state_file(sweep_dir)  # a study's or a suite's
    total = None
    started = None
    if state_file is not None:
        try:
            total = json.loads(state_file.read_text()).get("n_jobs")
        except (OSError, ValueError):
            pass
        started = state_file.stat().st_mtime
    done = sum(1 for p in sweep_dir.glob("*/outcome.json"))
    return done, total, started


def job_done(sweep_dir: Path, suffix: str = "") -> None:
    """After a job of a sweep: redraw the sweep bar (jobs done / jobs launched)."""
    if not enabled():
        return
    sweep_dir = Path(sweep_dir)
    done, total, started = _sweep_counts(sweep_dir)
    elapsed = time.time() - started if started else 0.0
    # one full line per finished job: jobs of parallel workers print their verdicts in between
    sys.stderr.write(render(done, total, f"sweep {sweep_dir.name}{suffix}", elapsed) + "\n")
    sys.stderr.flush()


def sweep_end(sweep_dir: Path) -> None:
    """Before the study summary, in the launching process: the final count of the sweep
    (the only bar line of a sweep whose jobs ran on other machines)."""
    job_done(sweep_dir, "  (all jobs returned)")
