"""Hydra sweeper of ``python -m harness resume``: only the jobs of a sweep that did not finish.

:class:`ResumeSweeper` is Hydra's basic sweeper whose jobs are a given list of override lists
(``jobs``), each ending in ``hydra.sweep.subdir=<its original job number>`` so that it writes in
its own job directory again; an empty list launches nothing. The launcher is the sweep's own
(basic, joblib, Ray, Slurm). Registered in Hydra's plugin registry by :func:`register` (see
:mod:`harness.launch.sample_sweeper` for why the class is not under ``hydra_plugins/``), after the
check that Hydra's basic sweeper and registry have the shape hydra-core 1.3.8 has.
"""
from __future__ import annotations

import functools
from typing import Any, List, Optional, Sequence

from harness.launch import guard, hydra_sweeps

NAME = "hydra_plugins.harness_resume_sweeper.ResumeSweeper"
GUARD = "resume_sweeper"


class ResumeUnavailable(RuntimeError):
    """The installed Hydra's basic sweeper is not the one :class:`ResumeSweeper` extends."""


def _check() -> Optional[str]:
    return hydra_sweeps.check_basic_sweeper() or hydra_sweeps.check_registry()


@functools.lru_cache(maxsize=1)
def sweeper_class() -> type:
    """:class:`ResumeSweeper`, made on first use (Hydra's private base class is imported then)."""
    basic = hydra_sweeps.basic_sweeper()

    class ResumeSweeper(basic):
        """BasicSweeper launching exactly ``jobs`` (one override list per job), in one batch."""

        def __init__(self, max_batch_size: Optional[int] = None, params: Optional[Any] = None,
                     jobs: Optional[Sequence[Sequence[str]]] = None) -> None:
            super().__init__(max_batch_size=max_batch_size, params=params)
            self.jobs: List[List[str]] = [list(j) for j in (jobs or [])]

        def split_arguments(self, overrides, max_batch_size):  # type: ignore[override]
            return [self.jobs] if self.jobs else []

    return hydra_sweeps.named(ResumeSweeper, __name__)


__getattr__ = hydra_sweeps.made_on_first_use(__name__, "ResumeSweeper", sweeper_class)


def register() -> str:
    """Enter :class:`ResumeSweeper` in Hydra's plugin registry; returns its registered name."""
    if not guard.allowed(GUARD, _check):
        installed = ".".join(map(str, guard.version("hydra-core"))) or "not installed"
        raise ResumeUnavailable(f"resume extends Hydra's basic sweeper as hydra-core 1.3.8 has it; the one of "
                                f"hydra-core {installed} differs ({guard.refused().get(GUARD)})")
    hydra_sweeps.register(NAME, sweeper_class())
    return NAME
