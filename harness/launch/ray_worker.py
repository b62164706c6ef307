"""Whether this process is a Ray worker (where ``hydra/launcher=ray_cluster`` runs a sweep's jobs).

Ray's public API tells whether Ray is initialised in a process (``ray.is_initialized()``: in the
driver too), not whether the process is a worker. Ray's own ``RuntimeContext`` answers that from
the private ``ray._private.worker.global_worker.mode``, which :func:`in_ray_worker` reads when it is
there with the shape checked against ray 2.60.0 (``global_worker.mode`` and the int
``WORKER_MODE``). Otherwise, or when ``HARNESS_PLAIN_PATHS`` names ``ray_worker``, it answers from
the environment: Ray is initialised and ``RAY_RAYLET_PID`` is set, which the raylet sets in every
worker it starts and Ray strips from the drivers of submitted jobs (the same answer in a driver and
in a task's worker, tests/core/test_core_launch_guards.py). Not a speed-up (nothing to measure):
the mode is Ray's own word, the environment variable a convention of its raylet.
"""
from __future__ import annotations

import os
import sys
from typing import Optional

from harness.launch import guard

GUARD = "ray_worker"
RAYLET_PID = "RAY_RAYLET_PID"  # set by the raylet in the worker processes it starts


def _check() -> Optional[str]:
    from ray._private import worker

    missing = guard.has(worker, "global_worker", "WORKER_MODE")
    if missing:
        return missing
    if not isinstance(worker.WORKER_MODE, int):
        return f"ray._private.worker.WORKER_MODE is {type(worker.WORKER_MODE).__name__}, not int"
    return guard.has(worker.global_worker, "mode")


def plain_in_ray_worker() -> bool:
    """The public answer: Ray is initialised here and the raylet started this process."""
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized() and bool(os.environ.get(RAYLET_PID))


def in_ray_worker() -> bool:
    """True in a Ray worker process, False in a driver or where Ray is not initialised."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return False
    if not guard.allowed(GUARD, _check):
        return plain_in_ray_worker()
    from ray._private import worker

    return worker.global_worker.mode == worker.WORKER_MODE
