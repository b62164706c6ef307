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
* when ``sacct`` gives no answer for ``accounting_timeout_s`` seconds (slurmdbd down), every job
  still open is cancelled and lost the same way, named with its last known state;
* when the launching process is interrupted (SIGINT/SIGTERM), every job still queued or running
  is cancelled (``scancel``) and named before the interruption goes on (exit 130).

The waiting is :class:`harness.launch.slurm_wait.SweepWait`. The launching process composes every
job's config (as the basic launcher does) and sends it with the job, without Hydra's config store:
a job then imports only what its own config names (about 0.4 s less per job than composing on the
node; a sweep whose configs do not compose here composes on the nodes, as the plugin does).

Every job directory gets ``slurm.json``: Slurm job id, state, node, submit/start/end times,
queue wait and run time in seconds; ``<sweep dir>/slurm_jobs.json`` lists them all.
"""
from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from hydra.core.singleton import Singleton
from hydra.core.utils import (
    JobReturn,
    JobStatus,
    filter_overrides,
    run_job,
    setup_globals,
)
from hydra.types import HydraContext
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf, SlurmQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher

from harness.launch import slurm_queue as Q
from harness.launch.slurm_job import JOB_ENV
from harness.launch.slurm_wait import SweepWait

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
    accounting_timeout_s: float = 300.0  # sacct silent this long: the open jobs are cancelled and lost


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


def _job_singletons() -> Dict[str, Any]:
    """Hydra's singleton state for jobs whose configs the launching process composed: without the
    ConfigStore and the global Hydra (its config loader), whose structured configs a job would
    otherwise import (every family module, sympy: about 0.4 s per job). A job that composes after
    all starts both afresh, as any process does (harness.core.compose)."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.global_hydra import GlobalHydra

    state = Singleton.get_state()
    instances = state.get("instances") if isinstance(state, dict) else None
    if isinstance(instances, dict):  # the shape of hydra-core 1.3 (else the whole state: slower, same result)
        for cls in (ConfigStore, GlobalHydra):
            instances.pop(cls, None)
    return state


def _positive_seconds(name: str, value: Any) -> float:
    """``value`` as a finite positive number of seconds, else ValueError naming ``hydra.launcher.<name>``
    (Hydra reports it as a config error: one line, exit 2)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0.0):
        raise ValueError(f"hydra.launcher.{name}: must be a positive number of seconds, got {value!r}")
    return seconds


class HarnessSlurmLauncher(SlurmLauncher):
    def __init__(self, poll_s: float = 1.0, unrunnable_after_s: float = 20.0, accounting_timeout_s: float = 300.0,
                 **params: Any) -> None:
        super().__init__(**params)
        self.poll_s = _positive_seconds("poll_s", poll_s)
        self.unrunnable_after_s = _positive_seconds("unrunnable_after_s", unrunnable_after_s)
        self.accounting_timeout_s = _positive_seconds("accounting_timeout_s", accounting_timeout_s)
        self._composed = False  # True while submitting jobs that carry their composed config

    def __getstate__(self) -> Dict[str, Any]:
        """What a job gets pickled: with composed configs, no config loader and no multirun config
        (the job needs neither, and unpickling them costs the job time)."""
        state = dict(self.__dict__)
        if state.get("_composed") and self.hydra_context is not None:
            state["config"] = None
            state["hydra_context"] = HydraContext(config_loader=None, callbacks=self.hydra_context.callbacks)
        return state

    def __call__(self, sweep_overrides: List[str], job_dir_key: str, job_num: int, job_id: str,
                 singleton_state: Dict[str, Any], sweep_config: Any = None) -> JobReturn:  # on the compute node
        os.environ[JOB_ENV] = json.dumps(_job_env_info())
        if sweep_config is None:  # composed here, as the plugin does
            return super().__call__(sweep_overrides, job_dir_key, job_num, job_id, singleton_state)
        import submitit
        from omegaconf import open_dict

        Singleton.set_state(singleton_state)
        setup_globals()
        with open_dict(sweep_config.hydra.job) as job:
            job.id = submitit.JobEnvironment().job_id
            sweep_config.hydra.job.num = job_num
        return run_job(hydra_context=self.hydra_context, task_function=self.task_function, config=sweep_config,
                       job_dir_key=job_dir_key, job_subdir_key="hydra.sweep.subdir")

    def _job_args(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> List[tuple]:
        """The arguments of every job: each job's config composed here (as the basic launcher does,
        so a job need not load the config repository); if one does not compose, every job composes
        its own as the plugin does (and fails there as it would)."""
        configs: List[Any] = []
        for overrides in job_overrides:
            try:
                configs.append(self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides)))
            except Exception as exc:  # noqa: BLE001 - the job reports it, as before
                log.debug("slurm: jobs compose their own configs (%s: %s)", type(exc).__name__, exc)
                configs = []
                break
        self._composed = bool(configs)
        state = _job_singletons() if configs else Singleton.get_state()
        args = []
        for i, overrides in enumerate(job_overrides):
            idx = initial_job_idx + i
            log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
            extra = (configs[i],) if configs else ()
            args.append((list(overrides), "hydra.sweep.dir", idx, f"job_id_for_{idx}", state, *extra))
        return args

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
        args = self._job_args(job_overrides, initial_job_idx)
        try:
            jobs = self._executor().map_array(self, *zip(*args))
        finally:
            self._composed = False
        by_num = {num: job for num, job in zip(nums, jobs)}
        ids = {num: str(job.job_id) for num, job in by_num.items()}
        log.info("slurm: %d jobs submitted as job array %s", len(jobs), str(jobs[0].job_id).split("_")[0])
        self._record(sweep_dir, ids, {}, {})
        wait = SweepWait(ids, {num: job.paths.result_pickle for num, job in by_num.items()}, self.poll_s,
                         self.unrunnable_after_s, self.accounting_timeout_s)
        why = wait.why
        try:
            wait.until_ended()
        except KeyboardInterrupt:
            left = Q.in_queue(ids.values())
            Q.cancel(left)
            table = wait.settle(left)
            for num in nums:
                if ids[num] in left:
                    why[ids[num]] = "cancelled: the launching process was interrupted"
            self._record(sweep_dir, ids, table, why)
            self._say_lost(ids, table, why, [n for n in nums if ids[n] in left])
            raise
        table = wait.settle(list(ids.values()))  # accounting lags a job's result file by a moment
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
