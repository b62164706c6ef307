"""Jobs in joblib's worker processes: loky's safety-net garbage collection made rare.

Without ``psutil`` installed, loky (joblib's process pool, which Hydra's joblib launcher uses)
calls ``gc.collect()`` in a worker after any task that ends more than
``_MEMORY_LEAK_CHECK_DELAY`` (1 s) after the previous collection, to limit leaks it cannot
measure. A harness worker holds large heaps (NumPy, SciPy, numba, matplotlib, Hydra, the
families): measured in ``suite=fast`` over 2 workers, 21-22 full collections per worker taking
7.8-8.5 s, nearly all of the 9.0-9.8 s the workers spent between jobs. Python's own generational
collector still runs inside every job; this only spaces loky's extra full collection to
:data:`CHECK_DELAY_S`. Measured with it: 2 collections per worker, the time between jobs 18.8 s
-> 5.7 s for the suite.

Checked against joblib 1.5.3 and 1.6.0 (its vendored loky): the setting is a module number that
loky's ``_process_worker`` reads on every task. When it is not, or ``HARNESS_PLAIN_PATHS`` names
``worker_gc``, loky's interval is left as it is (results are the same; the workers collect as
often as loky chooses).
"""
from __future__ import annotations

import sys
from typing import Optional

from harness.launch import guard

GUARD = "worker_gc"
CHECK_DELAY_S = 60.0  # s between loky's full collections in a worker
_LOKY = "joblib.externals.loky.process_executor"
_SETTING = "_MEMORY_LEAK_CHECK_DELAY"


def _check(module) -> Optional[str]:
    value = getattr(module, _SETTING, None)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{_LOKY}.{_SETTING} is {value!r}, not a number of seconds"
    worker = getattr(module, "_process_worker", None)
    if worker is None or _SETTING not in worker.__code__.co_names:
        return f"{_LOKY}._process_worker no longer reads {_SETTING}"
    return None


def space_loky_collections(delay_s: float = CHECK_DELAY_S) -> bool:
    """Set loky's collection interval in this process if loky runs it (a joblib worker); True
    when the setting was checked and set (False: nothing changed)."""
    module = sys.modules.get(_LOKY)
    if module is None:
        return False  # not a loky worker: nothing to space
    if not guard.allowed(GUARD, lambda: _check(module)):
        return False
    setattr(module, _SETTING, max(float(getattr(module, _SETTING)), float(delay_s)))
    return True
