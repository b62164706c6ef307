"""A team of persistent threads for compiled loops: a spin barrier on atomic counters, run by Python
threads that each call one numba ``nogil`` function.

numba's parallel regions (``prange``) hand each pass to worker threads that sleep in between and
must be woken; a DEM step of three such passes paid that hand-over three times (and a Python call
per step). Here ``n`` threads (the calling one and ``n - 1`` :class:`threading.Thread`) enter the
same compiled function once and stay in it for many steps, meeting at :func:`barrier` between the
passes, as MPI ranks do.

Shared state is one int64 array (:func:`new_sync`): the barrier's arrival count and generation,
work counters for the hand-out of blocks (:func:`take_near`: each thread its own range of blocks
first, then the others'), and an abort flag, each on its
own cache line. A waiting thread spins a bounded number of times (about 0.25 ms: a quiet
partner arrives within a block's time), then sleeps briefly between checks, so a thread whose
partner was descheduled leaves its core idle and the scheduler can move the partner onto it
instead of both waiting behind other processes. If a thread raises, the flag is set, the others leave their barrier and
return, and :func:`run_team` re-raises the exception in the caller.
"""
from __future__ import annotations

import platform
import threading
from typing import Callable, List

import numpy as np

from models.dem.kernels import HAVE_NUMBA, njit

if HAVE_NUMBA:
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic
else:  # pragma: no cover - the team needs numba
    def intrinsic(f):
        return f

LINE = 8  # int64 slots per cache line (64 bytes)
ARRIVED, GENERATION, ABORT = 0, LINE, 2 * LINE  # slots of the sync array
N_COUNTERS = 4  # work counters of new_sync() by default, at (3 + k) * LINE
SPINS = 8000  # busy checks of a barrier (x86 pause, ~30 ns each: ~0.25 ms) before each check sleeps
NAP_US = 20  # sleep between later checks (us; ~0.1 ms with the timer slack): the core is free meanwhile


def new_sync(n_counters: int = N_COUNTERS) -> np.ndarray:
    """A zeroed sync array: barrier, abort flag and ``n_counters`` work counters."""
    return np.zeros((3 + n_counters) * LINE, np.int64)


def _int64_array(arr) -> bool:
    """The atomics below act on int64 arrays only (the sync array)."""
    return isinstance(arr, types.Array) and arr.dtype == types.int64


def _slot_pointer(context, builder, aryty, arr, idx):
    ary = context.make_array(aryty)(context, builder, arr)
    return cgutils.get_item_pointer(context, builder, aryty, ary, [idx])


@intrinsic
def _add(typingctx, arr, idx, value):
    """Atomic ``arr[idx] += value`` (acquire-release) returning the old value; int64 arrays."""
    if not _int64_array(arr):
        return None

    def codegen(context, builder, signature, args):
        a, i, val = args
        ptr = _slot_pointer(context, builder, signature.args[0], a, i)
        return builder.atomic_rmw("add", ptr, val, "acq_rel")

    return types.int64(arr, types.intp, types.int64), codegen


@intrinsic
def _load(typingctx, arr, idx):
    """Atomic load of ``arr[idx]`` (acquire): re-read from memory at every call."""
    if not _int64_array(arr):
        return None

    def codegen(context, builder, signature, args):
        a, i = args
        ptr = _slot_pointer(context, builder, signature.args[0], a, i)
        return builder.load_atomic(ptr, "acquire", 8)

    return types.int64(arr, types.intp), codegen


@intrinsic
def _store(typingctx, arr, idx, value):
    """Atomic store ``arr[idx] = value`` (release)."""
    if not _int64_array(arr):
        return None

    def codegen(context, builder, signature, args):
        a, i, val = args
        ptr = _slot_pointer(context, builder, signature.args[0], a, i)
        builder.store_atomic(val, ptr, "release", 8)
        return context.get_dummy_value()

    return types.void(arr, types.intp, types.int64), codegen


@intrinsic
def _pause(typingctx):
    """The x86 ``pause`` spin-wait hint (nothing on other processors)."""
    def codegen(context, builder, signature, args):
        if platform.machine().lower() in ("x86_64", "amd64", "i686", "i386"):
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                                "llvm.x86.sse2.pause")
            builder.call(fn, [])
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def _nap(typingctx, microseconds):
    """``usleep(microseconds)`` of the C library: the core is free for other threads meanwhile."""
    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "usleep")
        builder.call(fn, [builder.trunc(args[0], ir.IntType(32))])
        return context.get_dummy_value()

    return types.void(microseconds), codegen


@njit(nogil=True, cache=True, inline="always")
def _counter(k):  # pragma: no cover - compiled
    """Index in the sync array of work counter ``k``."""
    return (3 + k) * LINE


@njit(nogil=True, cache=True)
def take_near(sync, first, tid, n_threads, n_blocks, r):  # pragma: no cover - compiled
    """Next block in [0, n_blocks) for thread ``tid``, or ``n_blocks`` when every block is taken.

    The blocks are cut into ``n_threads`` contiguous ranges, range q handed out by work counter
    ``first + q``: a thread takes the blocks of its own range first (the particles whose data it
    wrote in the previous pass are in its cache), then helps with the next ranges in turn, so a
    thread held up elsewhere still has its blocks taken. ``r``: how many ranges this thread has
    found exhausted in this pass (0 at its start). Returns (block, r)."""
    while r < n_threads:
        q = (tid + r) % n_threads
        lo = q * n_blocks // n_threads
        j = _add(sync, _counter(first + q), 1)
        if lo + j < (q + 1) * n_blocks // n_threads:
            return lo + j, r
        r += 1
    return n_blocks, r


@njit(nogil=True, cache=True)
def reset(sync, k):  # pragma: no cover - compiled
    """Work counter ``k`` back to 0 (only when no thread can be taking from it)."""
    _store(sync, _counter(k), 0)


@njit(nogil=True, cache=True)
def aborted(sync):  # pragma: no cover - compiled
    return _load(sync, ABORT) != 0


@njit(nogil=True, cache=True)
def barrier(sync, n):  # pragma: no cover - compiled
    """Wait until all ``n`` threads arrived (sense by generation). Returns False when the team was
    aborted (a thread failed), True otherwise. Bounded spin, then short sleeps between checks."""
    if n == 1:
        return _load(sync, ABORT) == 0
    gen = _load(sync, GENERATION)
    if _add(sync, ARRIVED, 1) == n - 1:  # last to arrive: open the barrier
        _store(sync, ARRIVED, 0)
        _add(sync, GENERATION, 1)
        return _load(sync, ABORT) == 0
    spins = 0
    while _load(sync, GENERATION) == gen:
        if _load(sync, ABORT) != 0:
            return False
        if spins < SPINS:
            spins += 1
            _pause()
        else:
            _nap(NAP_US)
    return _load(sync, ABORT) == 0


def run_team(body: Callable[[int], object], n: int, sync: np.ndarray) -> object:
    """``body(tid)`` on ``n`` threads (tid 0 on the calling one) sharing ``sync``; returns tid 0's
    result. A failing thread sets the abort flag (the others leave their barriers) and its exception
    is raised here once all threads have returned."""
    errors: List[BaseException] = []
    result = [None]

    def guarded(tid: int) -> None:
        try:
            out = body(tid)
            if tid == 0:
                result[0] = out
        except BaseException as exc:  # surfaced in the caller below
            errors.append(exc)
            sync[ABORT] = 1

    helpers = [threading.Thread(target=guarded, args=(t,), name=f"dem-team-{t}", daemon=True) for t in range(1, n)]
    for th in helpers:
        th.start()
    guarded(0)
    for th in helpers:
        th.join()
    if errors:
        raise errors[0]
    return result[0]
