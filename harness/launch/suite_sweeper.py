"""Hydra sweeper of the harness's suites: the basic sweep, validated once per family.

Hydra's basic sweeper composes every job's config in the launching process before the
launcher composes it again in the worker ("validate_batch_is_legal"): for ``suite=fast``
(72 cases, 0.12 s per composition here) that is 8-9 s before the first case starts, on one
core, while the workers wait. A suite's jobs differ only in ``+case=FAMILY/NAME``; the rest
of each job's overrides is the user's, the same for all. :class:`SuiteSweeper` composes one job
per family and distinct override list, which catches what the user's overrides break (a key a
family does not have, a bad group choice) before anything runs; the shipped case files
themselves are composed one by one by the catalogue test (tests/core/test_core_compose.py).
Registered in Hydra's plugin registry by :func:`register` (see :mod:`harness.launch.sample_sweeper`
for why the class is not under ``hydra_plugins/``); :class:`harness.suites.SuiteCallback`
selects it when the suite is launched through Hydra's basic sweeper.

Hydra's basic sweeper is a private class (:mod:`harness.launch.hydra_sweeps`). Checked against
hydra-core 1.3.8: :func:`register` first checks that ``BasicSweeper.sweep`` still calls
``validate_batch_is_legal(batch)`` and that Hydra instantiates sweepers from its plugin registry.
When it does not, or ``HARNESS_PLAIN_PATHS`` names ``suite_sweeper``, :func:`register` returns the
basic sweeper's own name: every job is validated, as plain Hydra does (8-9 s more for
``suite=fast``), and the suite's jobs are the same.
"""
from __future__ import annotations

import functools
import logging
from typing import Dict, Optional, Sequence, Tuple

from harness.launch import guard, hydra_sweeps

log = logging.getLogger(__name__)

GUARD = "suite_sweeper"
NAME = "hydra_plugins.harness_suite_sweeper.SuiteSweeper"
CASE_KEY = "+case="


def validation_key(overrides: Sequence[str]) -> Tuple[str, Tuple[str, ...]]:
    """(family of the job's case, the job's other overrides): jobs with equal keys compose alike."""
    case = next((o[len(CASE_KEY):] for o in overrides if o.startswith(CASE_KEY)), "")
    return case.split("/", 1)[0], tuple(o for o in overrides if not o.startswith(CASE_KEY))


def representatives(batch: Sequence[Sequence[str]]) -> Dict[Tuple[str, Tuple[str, ...]], Sequence[str]]:
    """The first job of every validation key, in batch order."""
    out: Dict[Tuple[str, Tuple[str, ...]], Sequence[str]] = {}
    for job in batch:
        out.setdefault(validation_key(job), job)
    return out


def _check() -> Optional[str]:
    return hydra_sweeps.check_basic_sweeper() or hydra_sweeps.check_registry()


@functools.lru_cache(maxsize=1)
def sweeper_class() -> type:
    """:class:`SuiteSweeper`, made on first use (Hydra's private base class is imported then)."""

    class SuiteSweeper(hydra_sweeps.basic_sweeper()):
        """BasicSweeper that validates one job per family and override list (module docstring)."""

        def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
            reps = list(representatives(batch).values())
            log.debug("suite sweeper: composing %d of %d jobs to validate the batch", len(reps), len(batch))
            super().validate_batch_is_legal(reps)

    return hydra_sweeps.named(SuiteSweeper, __name__)


__getattr__ = hydra_sweeps.made_on_first_use(__name__, "SuiteSweeper", sweeper_class)  # ``harness.launch.suite_sweeper.SuiteSweeper``


def register() -> str:
    """Enter :class:`SuiteSweeper` in Hydra's plugin registry and return its registered name; or,
    when the check refuses it (module docstring), return Hydra's basic sweeper's name."""
    if not guard.allowed(GUARD, _check):
        return hydra_sweeps.PLAIN_NAME
    hydra_sweeps.register(NAME, sweeper_class())
    return NAME
