"""Warm-up before timed comparisons: JIT compilation (numba) out of every recorded time.

A numba kernel compiles on its first call for a type signature (seconds on a cold cache,
``NUMBA_CACHE_DIR`` empty; a cache load of tens of ms otherwise). A timed comparison that
makes that first call inside the timing charges one side with it. Every benchmark and timed
case runs each timed path once, on a short version of the same input (same array types and
layouts, so the same compiled specialisations), before it starts the clock, and records:

* ``jit_warmup`` -- 1.0 when a warm-up ran before the timings (0.0 when none ran);
* ``jit_warmup_s`` -- the wall time of the warm-up calls (s): compilation on a cold cache,
  a cache load when warm; its size says which of the two the run met.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict


class WarmUp:
    """Runs and times warm-up calls; ``metrics()`` gives ``jit_warmup`` and ``jit_warmup_s``."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, untimed for the comparison; its wall time is added up."""
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1

    def metrics(self) -> Dict[str, float]:
        return {"jit_warmup": 1.0 if self.calls else 0.0, "jit_warmup_s": self.seconds}
