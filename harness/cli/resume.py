"""``python -m harness resume <sweep or suite dir | parent run id> [tracking/paths overrides]``.

Reruns, in the same directory and the same MLflow parent run, only the jobs of a sweep or suite
that did not finish (cancelled, failed to run, interrupted, missing), on the launcher the sweep
was started with (it is in the sweep's ``multirun.yaml``), then aggregates the study or suite as
an uninterrupted run would have. A parent run id is looked up in the store the tracking and
paths overrides name (default: the embedded store under outputs/). Exit code: that of the study
or suite; 2 for a directory or run that is not a sweep's.
"""
from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Callable, List, Sequence

from harness.core.context import HarnessInputError

log = logging.getLogger(__name__)
STORE_KEYS = ("tracking=", "tracking.", "paths.")
USAGE = "usage: python -m harness resume <sweep or suite dir | parent run id> [tracking/paths overrides]"


def sweep_dir_of(target: str, rest: Sequence[str]) -> Path:
    """The sweep directory named by ``target``: a directory, or a parent run id in the store."""
    d = Path(target)
    if d.is_dir():
        if not (d / "multirun.yaml").is_file():
            raise HarnessInputError(f"{d}: not a sweep or suite directory (no multirun.yaml)")
        return d.resolve()
    from harness.core.compose import compose
    from harness.tracking import records as tracking

    cfg = compose([a for a in rest if a.lstrip("+~").startswith(STORE_KEYS)])
    uri = str(cfg.tracking.uri)
    try:
        run = tracking.client(uri).get_run(target)
    except Exception as exc:  # noqa: BLE001 - the store's own words, on one line
        raise HarnessInputError(f"resume: {target!r} is neither a directory nor a run of {uri} "
                                f"({str(exc).splitlines()[0][:200]})") from None
    tagged = run.data.tags.get("sweep_dir")
    if not tagged or not (Path(tagged) / "multirun.yaml").is_file():
        raise HarnessInputError(f"resume: run {target} of {uri} names no sweep directory (tag sweep_dir)")
    return Path(tagged).resolve()


def main(args: List[str], hydra_main: Callable[..., None], job_exit_code: Callable[[], int]) -> int:
    """Resume (module docstring); ``hydra_main(task)`` runs the Hydra app of harness.cli.main,
    ``job_exit_code()`` is the worst exit code of the jobs run in this process."""
    from omegaconf import OmegaConf

    from harness.studies import resume

    if not args or args[0].startswith("-"):
        raise HarnessInputError(USAGE)
    sweep_dir = sweep_dir_of(args[0], args[1:])
    launched = OmegaConf.load(sweep_dir / "multirun.yaml")
    # as they were typed: an override may hold an interpolation (${...}) for the job to resolve
    task = [str(o) for o in OmegaConf.to_container(launched.hydra.overrides.task, resolve=False)]
    hydra_args = [str(o) for o in OmegaConf.to_container(launched.hydra.overrides.hydra, resolve=False)]
    os.environ[resume.ENV] = str(sweep_dir)
    sys.argv = [sys.argv[0], "-m", *task, *hydra_args, f"hydra.sweep.dir={sweep_dir}"]
    try:
        if (sweep_dir / "suite_state.json").is_file():
            from harness.suites import suite as suites

            hydra_main(suites.suite_task)
            code = max(job_exit_code(), suites.last_exit_code())
        else:
            from harness.studies.aggregate import last_exit_code

            hydra_main()
            code = max(job_exit_code(), last_exit_code())
    finally:
        os.environ.pop(resume.ENV, None)
    _mark_superseded(sweep_dir)
    return code


def _mark_superseded(sweep_dir: Path) -> None:
    """Tag the runs of the attempts this resume replaced (harness.studies.superseded); best effort."""
    from harness.studies import superseded

    try:
        superseded.mark(sweep_dir)
    except Exception as exc:  # noqa: BLE001 - the study or suite is complete; only the tags are missing
        log.error("resume: could not tag the superseded runs of %s: %s", sweep_dir, exc)
