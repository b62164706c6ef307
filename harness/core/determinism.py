"""What a run's numbers can depend on beyond its config: recorded in the manifest (``determinism``).

* ``threads``: the thread counts of every BLAS/OpenMP library loaded in the process
  (threadpoolctl, when installed) and of numba, and the environment variables that set them;
* ``seeds``: every config key named ``seed`` or ``*_seed`` with its value (the random streams
  of a case are drawn from these seeds only, never from global random state).

The harness's determinism guarantee (README, "Determinism"): every metric that is not a
timing or memory (harness.metrics.kinds) is bit-for-bit the same whatever ran before the case
in the same process, on the basic launcher and in a joblib worker, in any job order.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, Mapping

THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
              "NUMBA_THREADING_LAYER", "NUMBA_CACHE_DIR", "PYTHONHASHSEED")


def thread_counts() -> Dict[str, Any]:
    """BLAS/OpenMP pools (library -> threads), numba threads and the thread environment variables."""
    out: Dict[str, Any] = {"env": {k: os.environ[k] for k in THREAD_ENV if k in os.environ}}
    try:
        from threadpoolctl import threadpool_info

        out["blas"] = {f"{p.get('internal_api')}:{os.path.basename(p.get('filepath', ''))}": p.get("num_threads")
                       for p in threadpool_info()}
    except ImportError:  # optional: say so rather than guess
        out["blas"] = "threadpoolctl not installed"
    numba = sys.modules.get("numba")
    if numba is not None:  # only when the case loaded numba (never imported here just to ask)
        try:
            out["numba"] = {"threads": int(numba.get_num_threads()), "version": numba.__version__}
        except Exception as exc:  # noqa: BLE001 - a record, never a failure
            out["numba"] = f"unavailable: {type(exc).__name__}"
    return out


def seeds(resolved: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """Every ``seed`` / ``*_seed`` key of a resolved config (dotted name -> value)."""
    out: Dict[str, Any] = {}
    items = resolved.items() if isinstance(resolved, Mapping) else enumerate(resolved or [])
    for key, value in items:
        name = f"{prefix}{key}"
        if isinstance(value, (Mapping, list)):
            out.update(seeds(value, name + "."))
        elif str(key) == "seed" or str(key).endswith("_seed"):
            out[name] = value
    return out


def record(resolved: Mapping[str, Any]) -> Dict[str, Any]:
    """The manifest's ``determinism`` block of a run."""
    return {"threads": thread_counts(), "seeds": seeds({k: v for k, v in resolved.items() if k != "hydra"})}
