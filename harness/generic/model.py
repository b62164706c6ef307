"""Running the model of a generic case: an external command or a Python callable.

Commands run without a shell (the argument list goes to ``execve`` as it is), in their
own process group, with the declared environment; stdout and stderr go to
``<name>.stdout.txt`` / ``<name>.stderr.txt`` in the run directory (renamed into place
when the program has ended) and their tails to the manifest. A program that is not
found, exits with another code or times out raises :class:`ModelFailed`: the runner
records the run as failed (exit 1) with the tails in the log and the manifest.
"""
from __future__ import annotations

import importlib
import inspect
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from harness.core.atomic import atomic_path
from harness.core.context import HarnessInputError, RunContext, RunFailed
from harness.core.inputs import find_input, project_root
from harness.core.manifest import PROJECT_ROOT
from harness.generic.schema import PROJECT_DIR, RUN_DIR

log = logging.getLogger(__name__)
TAIL_LINES = 20


class ModelFailed(RunFailed):
    """The model ran but failed (not found, exit code, timeout): a failed run, exit 1.

    The first line of the message names the program, what happened and the last stderr line;
    the tails of stdout and stderr follow on the next lines; ``record`` is the command's
    :class:`CommandRecord` (None when it never started)."""

    def __init__(self, message: str, record: "Optional[CommandRecord]" = None) -> None:
        super().__init__(message)
        self.record = record


@dataclass
class CommandRecord:
    """What a command did (for the manifest)."""

    argv: List[str]
    cwd: str
    returncode: Optional[int] = None
    seconds: float = 0.0
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    stdout_tail: List[str] = field(default_factory=list)
    stderr_tail: List[str] = field(default_factory=list)

    def as_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)


def substitute(value: Any, run_dir: Path) -> Any:
    """Replace the ``<run_dir>`` / ``<project_dir>`` placeholders in strings (recursively)."""
    if isinstance(value, str):
        return value.replace(RUN_DIR, str(run_dir)).replace(PROJECT_DIR, str(PROJECT_ROOT))
    if isinstance(value, Mapping):
        return {k: substitute(v, run_dir) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [substitute(v, run_dir) for v in value]
    return value


def _tail(path: Path, n: int = TAIL_LINES) -> List[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-n:]
    except OSError:
        return []


def declare_inputs(ctx: RunContext, where: str, files: Sequence[str], cwd: Optional[Path] = None) -> None:
    """Hash the declared input files into the manifest; a missing one is invalid input.

    A relative file is looked up as :mod:`harness.core.inputs` says (the user's project root,
    the launch directory, the shipped files), then in the command's working directory ``cwd``;
    the error lists the places tried."""
    extra = [("working directory of the command", Path(cwd))] if cwd is not None else []
    for i, f in enumerate(files):
        p = find_input(str(substitute(str(f), ctx.run_dir)), f"{where}.inputs[{i}]", extra=extra)
        if not p.is_file():
            raise HarnessInputError(f"{where}.inputs[{i}]: {p}: not a file")
        ctx.add_input(p)


def run_command(ctx: RunContext, spec: Any, name: str, where: str) -> CommandRecord:
    """Run the command of ``spec`` (a CommandConf-like node) as ``name``; see the module doc."""
    run_dir = ctx.run_dir
    argv = [str(a) for a in substitute(list(spec.command or []), run_dir)]
    if not argv or not argv[0]:
        raise HarnessInputError(f"{where}.command: must be a non-empty list (executable, arguments...)")
    cwd = run_dir if spec.cwd is None else Path(substitute(str(spec.cwd), run_dir))
    cwd = cwd if cwd.is_absolute() else run_dir / cwd
    if not cwd.is_dir():
        raise HarnessInputError(f"{where}.cwd: {cwd}: not a directory")
    declare_inputs(ctx, where, list(spec.inputs or []), cwd)
    env = dict(os.environ) if spec.inherit_env else {}
    env.update({str(k): str(substitute(str(v), run_dir)) for k, v in (spec.env or {}).items()})
    record = CommandRecord(argv=argv, cwd=str(cwd), stdout=f"{name}.stdout.txt", stderr=f"{name}.stderr.txt")
    exe = argv[0]
    if os.sep not in exe:
        found = shutil.which(exe, path=env.get("PATH", ""))
    else:
        found = exe if (Path(exe) if Path(exe).is_absolute() else cwd / exe).is_file() else None
    if found is None:
        raise ModelFailed(f"{where}.command: executable {exe!r} not found "
                          f"({'on PATH' if os.sep not in exe else f'relative to {cwd}'})", record)
    timeout = float(spec.timeout_s)
    start = time.perf_counter()
    with atomic_path(run_dir / record.stdout) as out_tmp, atomic_path(run_dir / record.stderr) as err_tmp:
        with open(out_tmp, "wb") as out, open(err_tmp, "wb") as err:
            try:
                proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=err, shell=False, start_new_session=True)
            except OSError as exc:
                raise ModelFailed(f"{where}.command: cannot start {exe!r}: {exc}", record) from None
            try:
                record.returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                record.timed_out = True
                _kill_group(proc)
                record.returncode = proc.wait()
    record.seconds = time.perf_counter() - start
    for f in (record.stdout, record.stderr):
        ctx.add_output(run_dir / f)
    record.stdout_tail = _tail(run_dir / record.stdout)
    record.stderr_tail = _tail(run_dir / record.stderr)
    expected = int(spec.expected_exit_code)
    if record.timed_out or record.returncode != expected:
        why = (f"timed out after {timeout:g} s and was killed" if record.timed_out
               else f"exited with {record.returncode} (expected {expected})")
        tails = "\n".join([f"--- {record.stderr} (last {TAIL_LINES} lines) ---", *record.stderr_tail,
                           f"--- {record.stdout} (last {TAIL_LINES} lines) ---", *record.stdout_tail])
        last = next((ln.strip() for ln in reversed(record.stderr_tail) if ln.strip()), None)
        said = f"; last stderr line: {last[:300]!r}" if last else "; stderr empty"
        raise ModelFailed(f"{where}.command: {exe} {why}{said}; see {record.stderr} in the run directory\n{tails}",
                          record)
    log.info("%s: %s finished in %.3f s", where, exe, record.seconds)
    return record


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def import_callable(where: str, target: str, pythonpath: Sequence[str], run_dir: Path) -> Callable[..., Any]:
    """Import ``package.module.function`` or ``package.module:function``."""
    for entry in pythonpath:  # a relative entry: against the user's project root (else the launch directory)
        d = str((project_root() / substitute(str(entry), run_dir)).resolve())
        if d not in sys.path:
            sys.path.insert(0, d)
    module_name, sep, attr = target.partition(":")
    if not sep:
        module_name, _, attr = target.rpartition(".")
    if not module_name or not attr:
        raise HarnessInputError(f"{where}._target_: must be 'package.module.function', got {target!r}")
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except ImportError as exc:
        raise HarnessInputError(f"{where}._target_: cannot import {module_name!r}: {exc}") from None
    except AttributeError:
        raise HarnessInputError(f"{where}._target_: module {module_name!r} has no {attr!r}") from None
    if not callable(obj):
        raise HarnessInputError(f"{where}._target_: {target!r} is not callable")
    return obj


def call(where: str, fn: Callable[..., Any], kwargs: Dict[str, Any]) -> Any:
    """Call ``fn(**kwargs)``; keywords the function does not take are invalid input."""
    try:
        inspect.signature(fn).bind(**kwargs)
    except TypeError as exc:
        raise HarnessInputError(f"{where}.kwargs: {exc}") from None
    except ValueError:  # no signature (a builtin): let the call tell
        pass
    return fn(**kwargs)


def instantiate_kwargs(where: str, node: Any, run_dir: Path) -> Dict[str, Any]:
    """Plain keyword arguments from a config node; nested ``_target_`` nodes are instantiated."""
    from hydra.utils import instantiate
    from omegaconf import DictConfig, OmegaConf

    if node is None:
        return {}
    if isinstance(node, DictConfig):
        try:
            value = instantiate(node, _convert_="all")
        except Exception as exc:
            raise HarnessInputError(f"{where}.kwargs: {str(exc).splitlines()[0]}") from None
        value = OmegaConf.to_container(value) if isinstance(value, DictConfig) else value
    else:
        value = dict(node)
    return substitute(dict(value), run_dir)
