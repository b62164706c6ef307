"""What Slurm says about a sweep's jobs: states and times from ``sacct``, ``scancel``.

Every function calls the Slurm client programs of the machine (``sacct``, ``squeue``,
``scancel``) with the environment of this process (``SLURM_CONF`` picks the cluster). Job
ids are Slurm's text ids: ``1234`` or, for a task of a job array, ``1234_5``.
"""
from __future__ import annotations

import logging
import re
import subprocess
from datetime import datetime
from typing import Dict, Iterable, List, Optional

log = logging.getLogger(__name__)

# states after which a job never runs again (sacct spells CANCELLED as "CANCELLED by 0")
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
            "BOOT_FAIL", "DEADLINE", "REVOKED")
# reasons of a pending job that no waiting cures: no node of its partition can take it
UNRUNNABLE = ("ReqNodeNotAvail", "PartitionDown", "PartitionInactive", "PartitionNodeLimit",
              "PartitionTimeLimit", "Nodes_required_for_job_are_DOWN",
              "BadConstraints", "InvalidAccount",
              "InvalidQOS", "QOSMaxWallDurationPerJobLimit", "AssocMaxWallDurationPerJobLimit")
_FIELDS = ("JobID", "State", "Submit", "Start", "End", "NodeList", "Reason", "ExitCode")


class AccountingError(RuntimeError):
    """``sacct`` did not answer: it failed (slurmdbd down or unreachable) or did not return in time."""


def base_state(state: str) -> str:
    """``CANCELLED by 0`` -> ``CANCELLED``; ``RUNNING`` stays."""
    return (state or "").split(" ")[0].rstrip("+")


def is_terminal(state: str) -> bool:
    return base_state(state) in TERMINAL


def _expand(job_id: str) -> List[str]:
    """``12_[0-2,5]`` -> ``12_0 12_1 12_2 12_5`` (sacct folds pending array tasks); ``%4`` dropped."""
    m = re.fullmatch(r"(\d+)_\[([0-9,\-]+)(?:%\d+)?\]", job_id)
    if not m:
        return [job_id]
    out = []
    for part in m.group(2).split(","):
        lo, _, hi = part.partition("-")
        out += [f"{m.group(1)}_{i}" for i in range(int(lo), int(hi or lo) + 1)]
    return out


def _time(text: str) -> Optional[float]:
    """Epoch seconds of a sacct time (local time of the cluster), None for Unknown/None."""
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp()
    except (TypeError, ValueError):
        return None


def job_table(job_ids: Iterable[str], timeout_s: float = 60.0) -> Dict[str, Dict[str, object]]:
    """``{job id: {state, reason, submit, start, end (epoch s or None), node, exit_code}}`` from sacct.

    Jobs sacct does not know yet (accounting lags a submission by a moment) are absent. Raises
    :class:`AccountingError` when sacct fails or takes longer than ``timeout_s`` seconds.
    """
    ids = sorted({j.split("_")[0] for j in job_ids})
    if not ids:
        return {}
    try:
        res = subprocess.run(["sacct", "-n", "-X", "-P", "-j", ",".join(ids), "-o", ",".join(_FIELDS)],
                             capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise AccountingError(f"sacct did not return within {timeout_s:g} s") from exc
    if res.returncode != 0:
        lines = [ln.strip() for ln in res.stderr.splitlines() if ln.strip()]
        err = lines[-1].replace("sacct: error: ", "")[:300] if lines else f"exit code {res.returncode}"
        raise AccountingError(f"sacct failed: {err}")
    table: Dict[str, Dict[str, object]] = {}
    for line in res.stdout.splitlines():
        parts = line.split("|")
        if len(parts) != len(_FIELDS):
            continue
        row = dict(zip(_FIELDS, parts))
        info = {"state": base_state(row["State"]), "reason": row["Reason"], "submit": _time(row["Submit"]),
                "start": _time(row["Start"]), "end": _time(row["End"]),
                "node": row["NodeList"] if row["NodeList"] not in ("", "None assigned") else None,
                "exit_code": row["ExitCode"]}
        for jid in _expand(row["JobID"]):
            table[jid] = dict(info)
    return table


def controller_times(job_id: str) -> Dict[str, Optional[float]]:
    """``{"submit", "start"}`` (epoch s) of a job as slurmctld has them now (``scontrol show job``);
    accounting (sacct) may not know a job that has just started."""
    res = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, timeout=60)
    fields = dict(f.split("=", 1) for f in res.stdout.split() if "=" in f)
    return {"submit": _time(fields.get("SubmitTime")), "start": _time(fields.get("StartTime"))}


def _squeue(job_ids: Iterable[str], field: str, *extra: str) -> Dict[str, str]:
    """``{job id: value of squeue's %-field}`` for the array tasks of ``job_ids`` still in the queue
    (slurmctld answers this without accounting). ``extra``: more squeue options, e.g. a state filter."""
    ids = sorted({j.split("_")[0] for j in job_ids})
    if not ids:
        return {}
    res = subprocess.run(["squeue", "-h", "-r", *extra, "-j", ",".join(ids), "-o", f"%i|{field}"],
                         capture_output=True, text=True, timeout=60)
    out = {}
    for line in res.stdout.splitlines():
        jid, _, value = line.partition("|")
        out[jid.strip()] = value.strip()
    return out


def pending_reasons(job_ids: Iterable[str]) -> Dict[str, str]:
    """``{job id: reason}`` of the pending jobs among ``job_ids`` (squeue, up to date)."""
    return _squeue(job_ids, "%r", "-t", "PENDING")


def unrunnable(reason: str) -> bool:
    """True for a pending reason that says no node can take the job as things stand
    (squeue spells some with spaces, sacct with underscores)."""
    return any(reason.startswith(r) or reason.replace(" ", "_").startswith(r.replace(" ", "_")) for r in UNRUNNABLE)


def cancel(job_ids: Iterable[str]) -> None:
    """``scancel`` the jobs (queued or running); a job already ended is no error."""
    ids = sorted(set(job_ids))
    if ids:
        res = subprocess.run(["scancel", *ids], capture_output=True, text=True, timeout=60)
        if res.returncode != 0:
            log.warning("scancel %s: %s", " ".join(ids), res.stderr.strip()[:300])


def in_queue(job_ids: Iterable[str]) -> List[str]:
    """The jobs among ``job_ids`` still in the queue (pending, running, completing)."""
    return list(queue_states(job_ids))


def queue_states(job_ids: Iterable[str]) -> Dict[str, str]:
    """``{job id: state}`` of the jobs among ``job_ids`` still in the queue, from slurmctld
    (``squeue``: it answers when accounting does not)."""
    wanted = set(job_ids)
    return {jid: state for jid, state in _squeue(wanted, "%T").items() if jid in wanted}
