"""The persistent thread team of models/dem/team.py: the barrier orders the threads' writes, a failing
thread surfaces in the caller instead of leaving its partner waiting."""
import time

import numpy as np
import pytest

from models.dem.kernels import HAVE_NUMBA, njit

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba not installed")

if HAVE_NUMBA:
    from models.dem import team

    @njit(nogil=True)
    def _rounds(tid, n, sync, slots, seen, rounds):
        """Each round: write the round into this thread's slot, meet, read every slot (all must hold
        the round), meet again before the next write. ``seen[tid]``: rounds where a slot lagged."""
        for r in range(1, rounds + 1):
            slots[tid * 8] = r
            if not team.barrier(sync, n):
                return -1
            for t in range(n):
                if slots[t * 8] != r:
                    seen[tid] += 1
            if not team.barrier(sync, n):
                return -1
        return rounds

    @njit(nogil=True)
    def _blocks(tid, n, sync, owner, rounds):
        """Blocks handed out by the per-thread range counters 0 .. n - 1 (take_near): every block taken
        exactly once per round."""
        C = owner.shape[1]
        for r in range(rounds):
            q = 0
            while True:
                b, q = team.take_near(sync, 0, tid, n, C, q)
                if b >= C:
                    break
                owner[r, b] += tid + 1
            if not team.barrier(sync, n):
                return -1
            if tid == 0:
                for k in range(n):
                    team.reset(sync, k)
            if not team.barrier(sync, n):
                return -1
        return rounds


@pytest.mark.parametrize("n", [1, 2, 3])
def test_barrier_orders_the_threads_writes(n):
    sync = team.new_sync()
    slots = np.zeros(8 * n, np.int64)
    seen = np.zeros(n, np.int64)
    assert team.run_team(lambda tid: _rounds(tid, n, sync, slots, seen, 2000), n, sync) == 2000
    assert np.all(slots[::8] == 2000) and np.all(seen == 0)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_every_block_taken_once(n):
    sync = team.new_sync(n)
    owner = np.zeros((300, 64), np.int64)
    assert team.run_team(lambda tid: _blocks(tid, n, sync, owner, 300), n, sync) == 300
    assert np.all((owner >= 1) & (owner <= n))  # one thread's mark: taken once


def test_blocks_of_a_late_thread_are_taken_by_the_others():
    """Thread 1 starts late: thread 0 takes its own range first (in order), then all of thread 1's."""
    sync = team.new_sync(2)
    owner = np.zeros((1, 64), np.int64)
    order = np.full(64, -1, np.int64)

    @njit(nogil=True)
    def first_pass(tid, n, sync, owner, order):
        q, k = 0, 0
        while True:
            b, q = team.take_near(sync, 0, tid, n, owner.shape[1], q)
            if b >= owner.shape[1]:
                break
            owner[0, b] += tid + 1
            if tid == 0:
                order[k] = b
                k += 1
        return k

    def body(tid):
        if tid == 1:
            time.sleep(0.2)
        return first_pass(tid, 2, sync, owner, order)

    first_pass(0, 1, team.new_sync(1), np.zeros((1, 4), np.int64), np.zeros(4, np.int64))  # compiled beforehand
    assert team.run_team(body, 2, sync) == 64
    assert np.all(owner == 1)
    assert list(order) == list(range(64))  # its own half 0..31 first, then the late thread's 32..63


@pytest.mark.parametrize("failing", [0, 1])
def test_a_failing_thread_surfaces_and_releases_its_partner(failing):
    """One thread raises before reaching the barrier; the other, waiting there, leaves (abort flag) and
    run_team raises the exception in the caller, within seconds rather than never."""
    sync = team.new_sync()
    slots = np.zeros(16, np.int64)
    seen = np.zeros(2, np.int64)
    out = {}

    def body(tid):
        if tid == failing:
            time.sleep(0.05)  # the partner is already waiting at the barrier
            raise ValueError(f"thread {tid} failed")
        out[tid] = _rounds(tid, 2, sync, slots, seen, 10)
        return out[tid]

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=f"thread {failing} failed"):
        team.run_team(body, 2, sync)
    assert time.perf_counter() - t0 < 10.0
    assert out[1 - failing] == -1  # the partner saw the abort and returned
