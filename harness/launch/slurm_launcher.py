"""Sweeps on Slurm that end: hydra-submitit-launcher's SlurmLauncher, waiting the harness's way.

``hydra/launcher=slurm`` (conf/hydra/launcher/slurm.yaml) picks :class:`HarnessSlurmLauncher`.
It submits a sweep's jobs as one Slurm job array, as the plugin does, and then, instead of
``job.results()`` (which raises at the first job that did not finish, leaving the others and the
study behind), polls ``sacct`` every ``poll_s`` seconds until every job has ended:

* a job that ended without a result (cancelled, time limit, node failure, an exception) is
  *lost*: one line on stderr names it with its Slurm job id and state, its job directory gets
  ``slurm.json`` and no ``outcome.json``, so the study or suite counts it failed (exit 1) and
  keeps every finished job's records;
* a job pending for a reason no waiting cures (``ReqNodeNotAvail``: its node is drained or down,
  ...) for ``unrunnable_after_s`` seconds is cancelled and lost the same way;
* when the launching process is interrupted (SIGINT/SIGTERM), every job still queued or running
  is cancelled (``scancel``) and named before the interruption goes on (exit 130).

Every job directory gets ``slurm.json``: Slurm job id, state, node, submit/start/end times,
queue wait and run time in seconds; ``<sweep dir>/slurm_jobs.json`` lists them all.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, filter_overrides
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf, SlurmQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher

from harness.launch import slurm_queue as Q
from harness.launch.slurm_job import JOB_ENV

log = logging.getLogger(__name__)

JOBS_FILE = "slurm_jobs.json"
JOB_FILE = "slurm.json"


# Hydra instantiates launchers registered under a ``hydra_plugins.`` name only (the design card fixes
# the project's top level): :func:`register` enters the class in Hydra's plugin registry under NAME.
NAME = "hydra_plugins.harness_slurm_launcher.HarnessSlurmLauncher"
PLAIN = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
GUARD = "slurm_launcher"


@dataclass
class HarnessSlurmConf(SlurmQueueConf):
    """The plugin's settings plus how the harness waits for the jobs."""

    _target_: str = NAME
    poll_s: float = 1.0  # seconds between two sacct calls while jobs run
    unrunnable_after_s: float = 20.0  # a job pending for a reason no waiting cures is cancelled after this


def register() -> str:
    """Register ``hydra/launcher=harness_slurm`` (the base of conf/hydra/launcher/slurm.yaml).

    When Hydra's plugin registry is not as hydra-core 1.3.8 has it (or ``HARNESS_PLAIN_PATHS``
    says so) the config names the plugin's own SlurmLauncher: jobs run the same, but a lost job
    stops the sweep as the plugin does. Returns the launcher class name the config names.
    """
    from hydra.core.config_store import ConfigStore

    from harness.launch import guard, hydra_sweeps

    target = PLAIN
    if guard.allowed(GUARD, hydra_sweeps.check_registry):
        hydra_sweeps.register(NAME, HarnessSlurmLauncher)
        target = NAME
    ConfigStore.instance().store(group="hydra/launcher", name="harness_slurm",
                                 node=HarnessSlurmConf(_target_=target), provider="harness")
    return target


def _write_json(path: Path, doc: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, default=str))
    os.replace(tmp, path)


def _job_env_info() -> Dict[str, Any]:
    """This Slurm job's id, node, submit and start times (epoch s), from its environment and scontrol."""
    jid = os.environ.get("SLURM_JOB_ID", "")
    if os.environ.get("SLURM_ARRAY_JOB_ID"):
        jid = f"{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ.get('SLURM_ARRAY_TASK_ID', '0')}"
    info: Dict[str, Any] = {"job_id": jid, "node": os.environ.get("SLURMD_NODENAME"),
                            "started_in_job": time.time()}
    try:
        row = Q.controller_times(jid)
        info.update(submit=row.get("submit"), start=row.get("start"))
        if row.get("submit") and row.get("start"):
            info["queue_wait_s"] = float(row["start"]) - float(row["submit"])
    except Exception as exc:  # noqa: BLE001 - timing never stops a job
        log.warning("slurm: no submit/start time for job %s: %s", jid, exc)
    return info


def _subdir(idx: int, overrides: Sequence[str]) -> int:
    """The job directory number of a job: its ``hydra.sweep.subdir=N`` override (a resumed job), else ``idx``."""
    for o in overrides:
        key, _, value = str(o).lstrip("+~").partition("=")
        if key == "hydra.sweep.subdir" and value.isdigit():
            return int(value)
    return idx


class HarnessSlurmLauncher(SlurmLauncher):
    def __init__(self, poll_s: float = 1.0, unrunnable_after_s: float = 20.0, **params: Any) -> None:
        super().__init__(**params)
        self.poll_s = float(poll_s)
        self.unrunnable_after_s = float(unrunnable_after_s)

    def __call__(self, *args: Any, **kwargs: Any) -> JobReturn:  # runs on the compute node
        os.environ[JOB_ENV] = json.dumps(_job_env_info())
        return super().__call__(*args, **kwargs)

    # ------------------------------------------------------------------ launching process
    def _executor(self):
        import submitit
        from omegaconf import OmegaConf

        params = dict(self.params)
        init = {"folder": params.pop("submitit_folder")}
        if "max_num_timeout" in params:
            init["slurm_max_num_timeout"] = params.pop("max_num_timeout")
        executor = submitit.AutoExecutor(cluster="slurm", **init)
        base = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(**{k if k in base else f"slurm_{k}": v for k, v in params.items()})
        return executor

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.config is not None and job_overrides
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        nums = [_subdir(initial_job_idx + i, o) for i, o in enumerate(job_overrides)]
        args = []
        for i, (num, overrides) in enumerate(zip(nums, job_overrides)):
            idx = initial_job_idx + i
            log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
            args.append((list(overrides), "hydra.sweep.dir", idx, f"job_id_for_{idx}", Singleton.get_state()))
        jobs = self._executor().map_array(self, *zip(*args))
        by_num = {num: job for num, job in zip(nums, jobs)}
        ids = {num: str(job.job_id) for num, job in by_num.items()}
        log.info("slurm: %d jobs submitted as job array %s", len(jobs), str(jobs[0].job_id).split("_")[0])
        self._record(sweep_dir, ids, {}, {})
        why: Dict[str, str] = {}
        try:
            table = self._wait(by_num, ids, why)
        except KeyboardInterrupt:
            left = Q.in_queue(ids.values())
            Q.cancel(left)
            table = self._settle(left, ids)
            for num in nums:
                if ids[num] in left:
                    why[ids[num]] = "cancelled: the launching process was interrupted"
            self._record(sweep_dir, ids, table, why)
            self._say_lost(ids, table, why, [n for n in nums if ids[n] in left])
            raise
        table = self._settle(list(ids.values()), ids)  # accounting lags a job's result file by a moment
        returns, lost = [], []
        for num, overrides in zip(nums, job_overrides):
            job = by_num[num]
            ret = None
            if job.paths.result_pickle.exists():
                try:
                    ret = job.results()[0]
                except Exception as exc:  # noqa: BLE001 - the job raised: lost, named below
                    why[ids[num]] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:200]}"
            if ret is None:
                lost.append(num)
                why.setdefault(ids[num], "ended without a result")
                ret = self._lost_return(sweep_dir, num, overrides)
            returns.append(ret)
        self._record(sweep_dir, ids, table, why)
        self._say_lost(ids, table, why, lost)
        return returns

    def _wait(self, by_num, ids: Dict[int, str], why: Dict[str, str]) -> Dict[str, Dict[str, Any]]:
        """Poll until every job has ended; cancel jobs pending for a reason no waiting cures."""
        unrunnable_since: Dict[str, float] = {}
        table: Dict[str, Dict[str, Any]] = {}
        while True:
            table = Q.job_table(ids.values())
            open_ids = [jid for num, jid in ids.items()
                        if not by_num[num].paths.result_pickle.exists()
                        and not Q.is_terminal(str((table.get(jid) or {}).get("state", "")))]
            if not open_ids:
                return table
            now = time.monotonic()
            reasons = Q.pending_reasons(open_ids)
            for jid in open_ids:
                reason = reasons.get(jid, "")
                if not Q.unrunnable(reason):
                    unrunnable_since.pop(jid, None)
                elif now - unrunnable_since.setdefault(jid, now) >= self.unrunnable_after_s and jid not in why:
                    why[jid] = f"cancelled after {self.unrunnable_after_s:g} s pending: {reason}"
                    log.warning("slurm: job %s cannot start (%s): cancelled", jid, reason)
                    Q.cancel([jid])
            time.sleep(self.poll_s)

    def _settle(self, job_ids: List[str], ids: Dict[int, str], timeout_s: float = 15.0):
        """The sacct table once the cancelled jobs have left the queue (at most ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while Q.in_queue(job_ids) and time.monotonic() < deadline:
            time.sleep(0.3)
        table: Dict[str, Dict[str, Any]] = {}
        while time.monotonic() < deadline:
            table = Q.job_table(ids.values())
            if all(Q.is_terminal(str((table.get(j) or {}).get("state", ""))) for j in job_ids):
                break
            time.sleep(0.3)
        return table

    def _lost_return(self, sweep_dir: Path, num: int, overrides: Sequence[str]) -> JobReturn:
        """A job that left no result: its directory (so the study counts it) and a plain return."""
        job_dir = sweep_dir / str(num)
        overrides_file = job_dir / ".hydra" / "overrides.yaml"
        if not overrides_file.is_file():  # never started: the overrides it was given, as Hydra writes them
            overrides_file.parent.mkdir(parents=True, exist_ok=True)
            _write_json(overrides_file, list(overrides))  # JSON is YAML
        ret = JobReturn(overrides=list(overrides), working_dir=str(job_dir), task_name="harness",
                        status=JobStatus.COMPLETED)
        ret.return_value = None
        return ret

    @staticmethod
    def _job_record(jid: str, row: Dict[str, Any], why: Optional[str]) -> Dict[str, Any]:
        rec: Dict[str, Any] = {"job_id": jid, **row}
        submit, start, end = row.get("submit"), row.get("start"), row.get("end")
        rec["queue_wait_s"] = (start - submit) if submit and start else None
        rec["run_s"] = (end - start) if start and end else None
        if why:
            rec["lost"] = why
        return rec

    def _record(self, sweep_dir: Path, ids: Dict[int, str], table, why: Dict[str, str]) -> None:
        """``slurm_jobs.json`` in the sweep directory, ``slurm.json`` in every existing job directory."""
        jobs_file = sweep_dir / JOBS_FILE
        doc = json.loads(jobs_file.read_text()) if jobs_file.is_file() else {"jobs": {}}
        for num, jid in ids.items():
            rec = self._job_record(jid, table.get(jid) or {"state": "SUBMITTED"}, why.get(jid))
            doc["jobs"][str(num)] = rec
            job_dir = sweep_dir / str(num)
            if table and job_dir.is_dir():
                _write_json(job_dir / JOB_FILE, rec)
        _write_json(jobs_file, doc)

    def _say_lost(self, ids: Dict[int, str], table, why: Dict[str, str], lost: List[int]) -> None:
        for num in lost:
            jid = ids[num]
            state = str((table.get(jid) or {}).get("state") or "UNKNOWN")
            extra = f" ({why[jid]})" if jid in why else ""
            print(f"harness: lost job #{num}: Slurm job {jid} {state}{extra}", file=sys.stderr, flush=True)
