"""Importing Kratos quietly and describing it: version, applications, thread count.

Kratos prints its banner and its log on the C-level stdout; :func:`captured_stdout` sends file
descriptor 1 to a log file while Kratos works, so the harness CLI prints only its verdict line.
OMP_NUM_THREADS is set (default 1) before the first import, and Kratos' thread count is set to it
after the import (the OpenMP runtime may have been loaded, and its environment read, earlier).
"""
from __future__ import annotations

import contextlib
import importlib.metadata as md
import logging
import os
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, Optional

log = logging.getLogger(__name__)

APPLICATIONS = ("KratosMultiphysics", "KratosMPMApplication", "KratosLinearSolversApplication")


class KratosUnavailable(ImportError):
    """KratosMultiphysics / KratosMPMApplication are not installed (pip extra ``kratos``)."""


@contextlib.contextmanager
def captured_stdout(path: Optional[Path | str]) -> Iterator[None]:
    """Redirect file descriptor 1 (C and Python stdout) to ``path`` (append); no-op for None."""
    if path is None:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    with open(path, "ab") as fh:
        os.dup2(fh.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def import_kratos(log_path: Optional[Path | str] = None, threads: int = 1):
    """Import (KratosMultiphysics, KratosMultiphysics.MPMApplication); banner to ``log_path``."""
    os.environ.setdefault("OMP_NUM_THREADS", str(int(threads)))
    try:
        with captured_stdout(log_path):
            import KratosMultiphysics as K
            import KratosMultiphysics.MPMApplication as MPM
    except ImportError as exc:
        raise KratosUnavailable(f"Kratos is not installed: pip install 'KratosMultiphysics==10.4.*' "
                                f"'KratosMPMApplication==10.4.*' ({exc})") from exc
    K.Logger.GetDefaultOutput().SetSeverity(K.Logger.Severity.WARNING)
    # the OpenMP runtime may have read its environment before (another library loaded it first)
    K.ParallelUtilities.SetNumThreads(int(os.environ.get("OMP_NUM_THREADS", threads)))
    return K, MPM


def kratos_available() -> bool:
    try:
        md.version("KratosMultiphysics")
        md.version("KratosMPMApplication")
    except md.PackageNotFoundError:
        return False
    return True


def kratos_info() -> Dict[str, Any]:
    """Versions of the Kratos packages, the kernel version string, the OpenMP thread count."""
    info: Dict[str, Any] = {"applications": {}}
    for name in APPLICATIONS:
        try:
            info["applications"][name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    info["kratos_version"] = info["applications"].get("KratosMultiphysics")
    info["omp_num_threads"] = os.environ.get("OMP_NUM_THREADS")
    if "KratosMultiphysics" in sys.modules:
        K = sys.modules["KratosMultiphysics"]
        info["kernel_version"] = str(K.KratosGlobals.Kernel.Version()) if hasattr(K.KratosGlobals, "Kernel") else None
        try:
            info["threads"] = int(K.ParallelUtilities.GetNumThreads())
        except AttributeError:
            info["threads"] = None
        info["registered_applications"] = [a for a in ("MPMApplication", "LinearSolversApplication")
                                           if f"KratosMultiphysics.{a}" in sys.modules]
    return info


def solution_steps(stage: Any) -> Iterator[bool]:
    """Kratos' solution loop of an analysis stage, one step per iteration: advance the time,
    initialise, solve, finalise; yields whether the solver reported convergence."""
    while stage.KeepAdvancingSolutionLoop():
        stage.time = stage._AdvanceTime()
        stage.InitializeSolutionStep()
        converged = bool(stage._GetSolver().SolveSolutionStep())
        stage.FinalizeSolutionStep()
        yield converged
