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
"""
from __future__ import annotations

import logging
import sys

log = logging.getLogger(__name__)

CHECK_DELAY_S = 60.0  # s between loky's full collections in a worker
_LOKY = "joblib.externals.loky.process_executor"


def space_loky_collections(delay_s: float = CHECK_DELAY_S) -> bool:
    """Set loky's collection interval in this process if loky runs it (a joblib worker); True
    when the setting exists in the installed joblib (False: nothing changed)."""
    module = sys.modules.get(_LOKY)
    if module is None:
        return False  # not a loky worker: nothing to space
    if not hasattr(module, "_MEMORY_LEAK_CHECK_DELAY"):
        log.debug("joblib's loky has no _MEMORY_LEAK_CHECK_DELAY any more; collections left as they are")
        return False
    module._MEMORY_LEAK_CHECK_DELAY = max(float(module._MEMORY_LEAK_CHECK_DELAY), float(delay_s))
    return True
