"""Resume a sweep or suite in its own directory and parent run: rerun only what did not finish.

``python -m harness resume DIR`` (harness.cli.resume) relaunches the sweep's command with
``HARNESS_RESUME=DIR``. The study or suite callback then calls :func:`start` instead of opening a
new parent run: the jobs of the original sweep (Hydra's basic split of the same overrides) whose
directory holds no finished outcome (no ``outcome.json``, or status error / interrupted /
skipped) are rerun in their own job directories (the old contents move to
``.resumed/<stamp>/<job>``), the parent run is set RUNNING again and pinned for the new jobs,
and the callback's end aggregates every job directory into the same parent run.

A validation study's jobs are its basic jobs x points x samples (harness.studies.validation
draws the same samples from the same seed again). A finished job whose ``.hydra/overrides.yaml``
says other than the sweep now gives it (the study, its data or the command changed) stops the
resume before anything moves (one line, exit 2). After the resume, harness.studies.superseded
tags the runs the replaced attempts left.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from omegaconf import DictConfig, OmegaConf, flag_override

from harness.core.atomic import atomic_write_text
from harness.core.context import HarnessInputError
from harness.metrics import gates as G

log = logging.getLogger(__name__)
ENV = "HARNESS_RESUME"  # the sweep directory being resumed
UNFINISHED = ("error", "interrupted", "skipped")


def resuming(config: DictConfig) -> bool:
    """True when this multirun resumes its own sweep directory."""
    want = os.environ.get(ENV)
    return bool(want) and Path(want).resolve() == Path(str(config.hydra.sweep.dir)).resolve()


def original_jobs(config: DictConfig) -> List[List[str]]:
    """The override list of every job of the sweep, in job-number order (Hydra's basic split)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from harness.launch.hydra_sweeps import basic_sweeper

    params = [f"{k}={v}" for k, v in (OmegaConf.select(config, "hydra.sweeper.params") or {}).items()]
    args = params + [str(o) for o in OmegaConf.to_container(config.hydra.overrides.task, resolve=False)]
    parsed = OverridesParser.create().parse_overrides(args)
    samples = OmegaConf.select(config, "hydra.sweeper.samples")
    if samples is not None:  # a validation study (harness.launch.sample_sweeper): basic jobs x samples
        from harness.launch.sample_sweeper import sweeper_class

        sweeper = sweeper_class()(samples=OmegaConf.to_container(samples, resolve=False))
        return [list(j) for batch in sweeper.split_arguments(parsed, None) for j in batch]
    return [list(j) for batch in basic_sweeper().split_arguments(parsed, None) for j in batch]


def _meaning(overrides: List[str]) -> List[Tuple[str, str, str]]:
    """What overrides set, in a comparable form: sorted (kind, key, value) of every non-hydra.*
    override (Hydra's ``.hydra/overrides.yaml`` holds these, in its own order and quoting)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides([str(o) for o in overrides])
    return sorted((o.type.name, o.key_or_group, repr(o.value())) for o in parsed
                  if not o.key_or_group.startswith("hydra."))


def check_same_sweep(jobs: List[List[str]], sweep_dir: Path) -> None:
    """Raise HarnessInputError when a finished job ran with other overrides than the sweep now
    gives it (the study, its data or the command changed since): its result would not belong."""
    import yaml

    for num, job in enumerate(jobs):
        f = sweep_dir / str(num) / ".hydra" / "overrides.yaml"
        if not finished(sweep_dir / str(num)) or not f.is_file():
            continue
        try:
            ran = _meaning([str(o) for o in (yaml.safe_load(f.read_text()) or [])])
        except Exception as exc:  # noqa: BLE001 - a file Hydra did not write: nothing to compare
            log.warning("resume: cannot read %s (%s); job %s is not compared with the sweep", f, exc, num)
            continue
        if ran != _meaning(job):
            differ = sorted(set(ran) ^ set(_meaning(job)))
            raise HarnessInputError(f"{f}: job {num} ran with other overrides than the sweep now gives it "
                                    f"({', '.join(f'{k}={v}' for _, k, v in differ[:4])}): the study, its data or "
                                    "the command changed since; resume needs the same sweep")


def finished(job_dir: Path) -> bool:
    """A job whose outcome says it ran to the end (pass, warn or fail, recorded or not)."""
    f = job_dir / "outcome.json"
    if not f.is_file():
        return False
    try:
        return json.loads(f.read_text()).get("status") not in UNFINISHED
    except ValueError:
        return False


def plan(config: DictConfig, sweep_dir: Path) -> Dict[int, List[str]]:
    """``{job number: overrides}`` of the jobs to rerun (HarnessInputError: the sweep changed)."""
    jobs = original_jobs(config)
    check_same_sweep(jobs, sweep_dir)
    return {n: job for n, job in enumerate(jobs) if not finished(sweep_dir / str(n))}


def _reopen(uri: str, run_id: str) -> None:
    from harness.tracking import records as tracking

    tracking.client(uri).update_run(run_id, status="RUNNING")
    tracking.log_batch(uri, run_id, tags={"resumed": time.strftime("%Y-%m-%dT%H:%M:%S")})


def start(config: DictConfig, state_file: str, open_parents: Dict[str, str], pin: Callable[..., None],
          keys: Tuple[str, str], extra_pins: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """Prepare the resumed multirun (module docstring); returns the updated state.

    ``pin(config, pins)`` adds overrides to every job config; ``keys``: the ``hydra.job.env_set``
    keys of the parent run id and the tracking URI (harness.studies.aggregate).
    """
    from harness.launch.resume_sweeper import register

    parent_key, uri_key = keys

    sweep_dir = Path(str(config.hydra.sweep.dir)).resolve()
    state = json.loads((sweep_dir / state_file).read_text())
    try:
        if str(OmegaConf.select(config, "study.kind", default="")) == "validation":
            from harness.studies import validation

            validation.plan_sweep(config)  # the same points x samples (seeded) as the first launch
        todo = plan(config, sweep_dir)
    except HarnessInputError as exc:  # Hydra turns a callback's exception into a warning
        print(f"harness: error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(G.EXIT_INPUT) from None
    except Exception:  # noqa: BLE001 - as a warning, the original sweep would run again over finished jobs
        log.exception("resume %s: the jobs to rerun could not be planned", sweep_dir)
        raise SystemExit(G.EXIT_FAIL) from None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for num in todo:
        old = sweep_dir / str(num)
        if old.exists():
            target = sweep_dir / ".resumed" / stamp / str(num)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(old), str(target))
    pins: Dict[str, str] = {"hydra.sweep.dir": str(sweep_dir), **(extra_pins or {})}
    if OmegaConf.select(config, "paths.outputs") is not None:
        pins["paths.outputs"] = str(Path(config.paths.outputs).resolve())
    uri, parent = state.get("tracking_uri"), state.get("parent_run_id")
    if uri and parent:
        _reopen(uri, parent)
        open_parents[parent] = uri
        pins.update({"tracking.uri": uri, f"hydra.job.env_set.{uri_key}": uri,
                     f"hydra.job.env_set.{parent_key}": parent})
    pin(config, pins)
    name = register()
    with flag_override(config, ["readonly", "struct"], [False, False]):
        config.hydra.sweeper = OmegaConf.create({
            "_target_": name, "max_batch_size": None,
            "jobs": [[*job, f"hydra.sweep.subdir={num}"] for num, job in todo.items()]})
    state.setdefault("resumed", []).append({"at": stamp, "jobs": sorted(todo)})
    state.pop("parent_complete", None)
    atomic_write_text(sweep_dir / state_file, json.dumps(state, indent=2))
    log.warning("resume %s: rerunning %d job(s) %s in parent run %s", sweep_dir, len(todo), sorted(todo), parent)
    return state
