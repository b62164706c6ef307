"""Waiting for the Slurm jobs of one sweep until each has ended (harness.launch.slurm_launcher).

:class:`SweepWait` asks ``sacct`` for the jobs' states every ``poll_s`` seconds and, while at
most :data:`FAST_FILES` jobs are still open, looks for their result files every
:data:`FILE_POLL_S` seconds in between, so the sweep goes on as soon as its last job has
written its result instead of up to ``poll_s`` later. It cancels:

* a job pending for a reason no waiting cures for ``unrunnable_after_s`` seconds;
* every open job when ``sacct`` has not answered for ``accounting_timeout_s`` seconds
  (slurmdbd down or unreachable): the jobs' last known states come from ``squeue``
  (slurmctld answers without accounting), else from the last answer of ``sacct``.

``why`` maps the Slurm id of every job cancelled here to the reason, for the lost-job lines.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Dict, List

from harness.launch import slurm_queue as Q

log = logging.getLogger(__name__)

FAST_FILES = 32  # at most this many open jobs: their result files are looked for between two sacct calls
FILE_POLL_S = 0.1  # seconds between two looks for the result files of the open jobs
SETTLE_POLL_S = 0.1  # seconds between two squeue/sacct calls while the ended jobs' accounting catches up


class SweepWait:
    """The jobs of one sweep: ``ids`` maps job number -> Slurm job id, ``results`` job number ->
    the result file the job writes when it returns (its absence at the end: the job is lost)."""

    def __init__(self, ids: Dict[int, str], results: Dict[int, Path], poll_s: float, unrunnable_after_s: float,
                 accounting_timeout_s: float) -> None:
        self.ids = ids
        self.results = results
        self.poll_s = float(poll_s)
        self.unrunnable_after_s = float(unrunnable_after_s)
        self.accounting_timeout_s = float(accounting_timeout_s)
        self.known: Dict[str, Dict[str, Any]] = {}  # the last state sacct (or squeue) gave of every job
        self.why: Dict[str, str] = {}
        self.accounting_lost = False

    # ------------------------------------------------------------------ accounting
    def _sacct_timeout_s(self) -> float:
        return min(60.0, max(5.0, self.accounting_timeout_s))

    def query(self) -> Dict[str, Dict[str, Any]]:
        """sacct's table of the jobs (merged into :attr:`known`); raises Q.AccountingError."""
        table = Q.job_table(self.ids.values(), timeout_s=self._sacct_timeout_s())
        self.known.update(table)
        return table

    def state(self, jid: str) -> str:
        return str((self.known.get(jid) or {}).get("state", ""))

    def _open(self) -> List[int]:
        return [num for num in self.ids if not self.results[num].exists()]

    # ------------------------------------------------------------------ waiting
    def until_ended(self) -> None:
        """Return once every job has a result file or has ended in Slurm's accounting, cancelling
        the jobs that cannot start and, when accounting stops answering, every open job."""
        unrunnable_since: Dict[str, float] = {}
        answered = time.monotonic()
        next_query = 0.0
        warned = False
        while True:
            open_nums = self._open()
            if not open_nums:
                return
            if time.monotonic() >= next_query:
                try:
                    self.query()
                    answered = time.monotonic()
                except Q.AccountingError as exc:
                    silent = time.monotonic() - answered
                    if silent >= self.accounting_timeout_s:
                        self._give_up([self.ids[n] for n in open_nums], silent, exc)
                        return
                    if not warned:
                        log.warning("slurm: %s; waiting up to %g s (accounting_timeout_s) for accounting",
                                    exc, self.accounting_timeout_s)
                        warned = True
                open_ids = [self.ids[n] for n in open_nums if not Q.is_terminal(self.state(self.ids[n]))]
                if not open_ids:
                    return
                self._cancel_unrunnable(open_ids, unrunnable_since)
                next_query = time.monotonic() + self.poll_s
            nap = FILE_POLL_S if len(open_nums) <= FAST_FILES else self.poll_s
            time.sleep(max(0.0, min(nap, next_query - time.monotonic())) or FILE_POLL_S)

    def _cancel_unrunnable(self, open_ids: List[str], unrunnable_since: Dict[str, float]) -> None:
        now = time.monotonic()
        reasons = Q.pending_reasons(open_ids)
        for jid in open_ids:
            reason = reasons.get(jid, "")
            if not Q.unrunnable(reason):
                unrunnable_since.pop(jid, None)
            elif now - unrunnable_since.setdefault(jid, now) >= self.unrunnable_after_s and jid not in self.why:
                self.why[jid] = f"cancelled after {self.unrunnable_after_s:g} s pending: {reason}"
                log.warning("slurm: job %s cannot start (%s): cancelled", jid, reason)
                Q.cancel([jid])

    def _give_up(self, open_ids: List[str], silent_s: float, exc: Exception) -> None:
        """Accounting is gone: take the open jobs' states from the controller, cancel them."""
        self.accounting_lost = True
        for jid, state in Q.queue_states(open_ids).items():
            self.known.setdefault(jid, {})["state"] = state
        for jid in open_ids:
            self.why.setdefault(jid, f"cancelled: accounting (sacct) gave no answer for {silent_s:.0f} s "
                                     f"(accounting_timeout_s={self.accounting_timeout_s:g}); state as last known; {exc}")
        log.error("slurm: accounting gave no answer for %.0f s (%s): cancelling %d jobs", silent_s, exc, len(open_ids))
        Q.cancel(open_ids)

    def settle(self, job_ids: List[str], timeout_s: float = 15.0) -> Dict[str, Dict[str, Any]]:
        """The jobs' table once ``job_ids`` have left the queue and their accounting shows them
        ended (at most ``timeout_s``; without accounting: the last known states)."""
        deadline = time.monotonic() + timeout_s
        while Q.in_queue(job_ids) and time.monotonic() < deadline:
            time.sleep(SETTLE_POLL_S)
        while not self.accounting_lost and time.monotonic() < deadline:
            try:
                self.query()
            except Q.AccountingError as exc:
                log.warning("slurm: %s", exc)
            if all(Q.is_terminal(self.state(j)) for j in job_ids):
                break
            time.sleep(SETTLE_POLL_S)
        return self.known
