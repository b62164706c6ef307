"""CLI: ``python -m harness [+case=FAMILY/NAME] [key=value ...] [-m]``.

With no case, runs the suite ``conf/suite/default.yaml``; ``suite=NAME`` runs another
(harness.suites), ``--list [suite=NAME]`` lists its cases; ``baseline ...`` and
``compare A B`` are harness.baseline and harness.compare. Prints one line per case: case,
verdict, key metrics, MLflow run id. Exit code: 0 pass/warn, 1 a gate failed, 2 invalid
config or input, 130 interrupted (SIGINT/SIGTERM, see harness.interrupt).
"""
from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from harness.core import interrupt
from harness.core.compose import (
    CONF_DIR,
    CONFIG_NAME,
    describe_config_error,
    is_config_error,
    register_resolvers,
)
from harness.core.context import HarnessInputError
from harness.metrics.gates import EXIT_INPUT
from harness.tracking import records

log = logging.getLogger("harness")


class _State:
    exit_code = 0


def _say(line: str) -> None:
    print(line, flush=True)


def _say_stores_too_new() -> None:
    """The one line of each store found written by a newer MLflow, on stderr, once per process."""
    for line in records.unsaid_too_new():
        print(line, file=sys.stderr, flush=True)


def _task(cfg) -> dict:
    """The Hydra task function: one job of a run or a multirun. It never raises.

    Hydra skips ``on_multirun_end`` (the study) when a job raises, so every failure comes
    back as an outcome. In a multirun the parent run id and the tracking URI are read from
    this job's own config (``hydra.job.env_set``, pinned by the study callback), so a worker
    on another machine gets them with the job.
    """
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from harness.core import progress
    from harness.core.runner import Outcome, run_case_config
    from harness.launch.job_process import prepare
    from harness.studies.aggregate import PARENT_RUN_KEY, read_study_state

    prepare()
    run_dir = Path(".")
    try:
        hc = HydraConfig.get()
        run_dir = Path(hc.runtime.output_dir)
        parent = None
        multirun = hc.mode == RunMode.MULTIRUN
        if multirun:
            parent = (hc.job.get("env_set") or {}).get(PARENT_RUN_KEY)
            if parent is None:  # a launcher that ran the callback elsewhere: the sweep's state file
                state = read_study_state(Path(hc.sweep.dir))
                parent = state.get("parent_run_id") if state else None
        outcome = run_case_config(cfg, run_dir, command=[sys.argv[0], *sys.argv[1:]],
                                  overrides=list(hc.overrides.task), parent_run_id=parent)
        _say(outcome.line())
        _say_stores_too_new()
        if multirun:
            progress.job_done(Path(hc.sweep.dir))
    except Exception as exc:  # noqa: BLE001 - reported as a crashed job, never raised
        log.exception("job crashed outside the runner")
        from omegaconf import OmegaConf

        from harness.core.runner import STATUS_ERROR

        outcome = Outcome(case=str(OmegaConf.select(cfg, "case.name", default="?")), verdict="fail",
                          metrics={}, gates={}, run_dir=run_dir, status=STATUS_ERROR,
                          message=f"{type(exc).__name__}: {exc}".splitlines()[0])
        _say(outcome.line())
    _State.exit_code = max(_State.exit_code, outcome.exit_code)
    return outcome.as_dict()


def _hydra_main(task=None) -> None:
    import hydra

    from harness.core.configs import register_all
    from harness.launch.joblib_shared import install as share_joblib_state

    from harness.core.compose import with_project

    register_resolvers()
    register_all()
    share_joblib_state()
    sys.argv = [sys.argv[0], *with_project(sys.argv[1:])]  # the user's config dirs on the search path
    hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name=CONFIG_NAME)(task or _task)()


def _selects_case(args: Sequence[str]) -> bool:
    return any(a.lstrip("+~").startswith(("case=", "study=")) for a in args)


def _hydra_flag(args: Sequence[str]) -> bool:
    return any(a.startswith("-") for a in args)


def _suite_choice(args: Sequence[str]):
    """(suite option, the other arguments): ``suite=NAME`` (default ``default``); ``-m`` dropped."""
    choice, rest = "default", []
    for a in args:
        if a.startswith("suite="):
            choice = a.split("=", 1)[1]
        elif a not in ("-m", "--multirun"):
            rest.append(a)
    return choice, rest


_STORE_KEYS = ("tracking=", "tracking.", "paths.")  # the overrides that say which store a run writes


def _suite_selection(choice: str, rest: Sequence[str], check_store: bool = False):
    """(suite config, selected cases); with ``check_store`` the suite's store is checked too."""
    from harness.core.compose import compose
    from harness.suites.suite import select

    # only the suite's own overrides: the others (case.*, source.*) need a case to compose
    keys = ("suite.", *_STORE_KEYS) if check_store else ("suite.",)
    cfg = compose([f"suite={choice}", *(a for a in rest if a.lstrip("+~").startswith(keys))])
    cases = select(cfg.suite)
    if check_store:
        _check_store(cfg)
    return cfg.suite, cases


def _check_store(cfg) -> None:
    """Raise StoreTooNew when the store ``cfg`` tracks to was written by a newer MLflow.

    A sweep or suite is checked before any job runs (its jobs could record nothing there); a
    single case checks when it records, keeping its run directory for ``python -m harness.sync``.
    """
    from omegaconf import OmegaConf

    t = OmegaConf.select(cfg, "tracking")
    if t is not None and t.enabled:
        records.check_store(str(t.uri))


def _check_sweep_store(args: Sequence[str]) -> None:
    """:func:`_check_store` for a sweep, its store composed from the tracking and paths overrides."""
    from harness.core.compose import compose

    try:
        cfg = compose([a for a in args if a.lstrip("+~").startswith(_STORE_KEYS)])
    except Exception:  # noqa: BLE001 - Hydra reports a bad override itself, with the whole command line
        return
    _check_store(cfg)


def list_suite(args: Sequence[str]) -> int:
    """``python -m harness --list [suite=NAME]``: the cases a suite selects, with their tags."""
    from harness.suites.suite import listing

    choice, rest = _suite_choice(args)
    suite, cases = _suite_selection(choice, rest)
    _say(listing(suite, cases))
    return 0


def run_suite(args: Sequence[str]) -> int:
    """Run a suite (``suite=NAME``, default ``default``) through the configured Hydra launcher."""
    from harness.suites import suite as suites

    choice, rest = _suite_choice(args)
    # a bad suite or a store written by a newer MLflow is one line and exit 2 before anything runs
    _, cases = _suite_selection(choice, rest, check_store=True)
    sys.argv = [sys.argv[0], *suites.hydra_args(choice, cases, rest)]
    _hydra_main(suites.suite_task)
    if suites.last_summary() is None:
        raise RuntimeError("the suite stopped before its summary (see the log above)")
    return max(_State.exit_code, suites.last_exit_code())


def _close_parents(reason: str, status: str = "FAILED") -> None:
    """A sweep or suite that stopped before its summary leaves no parent run RUNNING."""
    for module in ("harness.studies.aggregate", "harness.suites.suite"):
        if module in sys.modules:
            sys.modules[module].close_open_parents(reason.splitlines()[0] if reason else "aborted", status)


def take_cases_option(args: List[str]) -> List[str]:
    """Remove ``--cases DIR`` / ``--cases=DIR`` from ``args``; the directories go to
    ``$HARNESS_CASES`` (absolute), where composition and every sweep job find them."""
    from harness.core.project import ENV_CASES

    out, dirs, i = [], [], 0
    while i < len(args):
        a = args[i]
        if a == "--cases" and i + 1 < len(args):
            dirs.append(args[i + 1])
            i += 2
            continue
        if a.startswith("--cases="):
            dirs.append(a.split("=", 1)[1])
        else:
            out.append(a)
        i += 1
    if dirs:
        known = [p for p in os.environ.get(ENV_CASES, "").split(os.pathsep) if p]
        os.environ[ENV_CASES] = os.pathsep.join([*(str(Path(d).resolve()) for d in dirs), *known])
    return out


def _finish(code: int, argv: Optional[List[str]]) -> int:
    if argv is None:
        sys.exit(code)
    return code


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    os.environ["HYDRA_FULL_ERROR"] = "1"  # let composition errors reach us, to exit 2
    args = take_cases_option(args)
    if args and args[0] == "init":
        from harness.cli.init import main as init_main

        return _finish(init_main(args[1:]), argv)
    from harness.core import project as user_project

    pinned = user_project.pin_for_jobs()  # jobs see the launch directory's project, whatever their cwd
    previous_handlers = interrupt.install()
    runs_cases = not (args and args[0] in ("baseline", "compare")) and "--list" not in args
    records.forget_too_new()  # a new command (tests call main() more than once per process)
    try:
        from harness.core.limits import check_arguments

        check_arguments(args)  # a stray '=5', a 5000-character name, outputs inside a file: one line
        if args and args[0] in ("baseline", "compare"):
            if args[0] == "baseline":
                from harness.suites import baseline as command
            else:
                from harness.suites import compare as command
            code = command.main(args[1:])
        elif args and args[0] == "resume":  # rerun what a sweep or suite did not finish (harness.cli.resume)
            from harness.cli import resume as resume_command

            code = resume_command.main(args[1:], _hydra_main, lambda: _State.exit_code)
        elif "--list" in args:
            code = list_suite([a for a in args if a != "--list"])
        elif any(a.startswith("suite=") for a in args) or (not _selects_case(args) and not _hydra_flag(args)):
            code = run_suite(args)
        else:
            if any(a in ("-m", "--multirun") for a in args):
                _check_sweep_store(args)
            sys.argv = [sys.argv[0], *args]
            _hydra_main()
            from harness.studies.aggregate import last_exit_code

            # jobs of a parallel launcher ran in other processes: their codes come from the study
            code = max(_State.exit_code, last_exit_code())
    except BrokenPipeError:  # `python -m harness --list | head`: the reader has gone; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except KeyboardInterrupt as exc:  # SIGINT/SIGTERM: one line; the run's records say the rest
        _close_parents(interrupt.describe(exc), "KILLED")
        print(f"harness: {interrupt.describe(exc)}", file=sys.stderr, flush=True)
        code = interrupt.EXIT_INTERRUPTED
    except records.StoreTooNew as exc:  # its one line, as it is
        _close_parents(str(exc))
        records.unsaid_too_new()
        print(str(exc), file=sys.stderr, flush=True)
        code = EXIT_INPUT
    except HarnessInputError as exc:
        _close_parents(str(exc))
        print(f"harness: error: {exc}", file=sys.stderr)
        code = EXIT_INPUT
    except Exception as exc:
        _close_parents(f"{type(exc).__name__}: {exc}")
        if not is_config_error(exc):
            user_project.unpin(pinned)
            raise
        print(f"harness: error: {describe_config_error(exc, args)}", file=sys.stderr)
        code = EXIT_INPUT
    if runs_cases and records.found_too_new():  # found by a job of this process: its runs are kept, unsent
        _say_stores_too_new()
        code = max(code, EXIT_INPUT)
    if argv is None:
        sys.exit(code)
    interrupt.restore(previous_handlers)
    user_project.unpin(pinned)
    return code


if __name__ == "__main__":
    main()
