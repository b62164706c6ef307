"""Gunicorn server hooks that move a kept-alive connection off a worker busy with another one.

A gunicorn worker of the threaded class (``gthread``) accepts any connection that reaches it,
busy or not, and a client's kept-alive connection stays with the worker that accepted it. Two
clients can so end up on one worker process, served on one core, while another worker idles
(measured with ``bench/tracking_server``: 24-28 runs/s against 30-47 when the connections are
spread). With these hooks each worker counts the requests it is serving in a table shared by
all workers; a request that arrives while its worker is already serving another one, and while
some other worker serves none, is answered with ``Connection: close``. The client's next
request opens a new connection, which any worker may accept: a pinned pair of clients is
spread out after a few requests, and connections on workers that are not over-loaded are never
closed. Use (the MLflow server runs gunicorn)::

    mlflow server ... --gunicorn-opts "-c python:harness.launch.gunicorn_balance --worker-class gthread ..."

A worker takes its slot once it has loaded the application (a worker still starting counts as
no idle worker). The hooks never fail a request: a worker without a slot (more than
``MAX_WORKERS``) serves as plain gunicorn does.

Nothing private of gunicorn is touched, so there is no check to make: the module is a gunicorn
config file defining gunicorn's documented server hooks (``post_worker_init``, ``pre_request``,
``post_request``, ``worker_exit``, see gunicorn's settings reference) and calls the public
``force_close()`` of the request a hook is given. Checked with gunicorn 26.2.0
(tests/core/test_core_gunicorn_balance.py runs a real one). The plain path is to leave out
``-c python:harness.launch.gunicorn_balance``.
"""
from __future__ import annotations

import multiprocessing
import os
import threading

MAX_WORKERS = 64
# Made when gunicorn loads this module in its master process; the workers inherit the mappings.
_in_flight = multiprocessing.RawArray("i", MAX_WORKERS)  # requests being served, per worker slot
_owner = multiprocessing.RawArray("i", MAX_WORKERS)  # pid of the worker holding each slot, 0 if free
_claim = multiprocessing.Lock()
_slot = None  # this worker's slot
_count_lock = threading.Lock()  # the threads of one worker update its slot under this lock


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # PermissionError: alive, under another user
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def claim_slot(pid: int) -> int | None:
    """A free slot (or one left by a dead worker) for worker ``pid``; None when all are taken."""
    with _claim:
        for i in range(MAX_WORKERS):
            owner = _owner[i]
            if owner == 0 or (owner != pid and not _alive(owner)):
                _owner[i] = pid
                _in_flight[i] = 0
                return i
    return None


def release_slot(slot: int | None, pid: int) -> None:
    if slot is not None:
        with _claim:
            if _owner[slot] == pid:
                _owner[slot] = 0
                _in_flight[slot] = 0


def should_hand_off(slot: int, in_flight_here: int) -> bool:
    """True when this worker serves more than this request and another live worker serves none."""
    if in_flight_here < 2:
        return False
    return any(_owner[i] != 0 and i != slot and _in_flight[i] == 0 for i in range(MAX_WORKERS))


def post_worker_init(worker) -> None:  # gunicorn hook: the worker has loaded the app and serves now
    global _slot
    _slot = claim_slot(os.getpid())


def pre_request(worker, req) -> None:  # gunicorn hook, before the request is handled
    slot = _slot
    if slot is None:
        return
    with _count_lock:
        _in_flight[slot] += 1
        here = _in_flight[slot]
    if should_hand_off(slot, here):
        req.force_close()  # answered with "Connection: close"


def post_request(worker, req, environ, resp) -> None:  # gunicorn hook, after it (always runs)
    slot = _slot
    if slot is None:
        return
    with _count_lock:
        _in_flight[slot] = max(0, _in_flight[slot] - 1)


def worker_exit(server, worker) -> None:  # gunicorn hook, in the exiting worker
    release_slot(_slot, os.getpid())
