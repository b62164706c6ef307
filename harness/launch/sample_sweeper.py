"""Hydra sweeper of the harness's validation studies (``harness.validation``).

Hydra only instantiates sweepers registered under a ``hydra_plugins.`` name. The design card
fixes the project's top level, so instead of a ``hydra_plugins/`` package the class lives here
and :func:`register` enters it in Hydra's plugin registry under :data:`NAME` (the study callback
calls it in the launching process, before Hydra instantiates the sweeper). It is Hydra's basic sweeper with every job of the basic sweep repeated once per sample:
the job's overrides are those of the basic sweep plus the sample's own (a zip over samples, not
a product over keys). ``harness.validation.plan_sweep`` selects it for ``study.kind: validation``.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

NAME = "hydra_plugins.harness_sample_sweeper.SampleSweeper"


class SampleSweeper(BasicSweeper):
    """BasicSweeper whose jobs are (basic-sweep job) x (one override list per sample)."""

    def __init__(self, max_batch_size: Optional[int] = None, params: Optional[Any] = None,
                 samples: Optional[Sequence[Sequence[str]]] = None) -> None:
        super().__init__(max_batch_size=max_batch_size, params=params)
        self.samples: List[List[str]] = [list(s) for s in (samples or [])]

    def split_arguments(self, overrides, max_batch_size):  # type: ignore[override]
        base = BasicSweeper.split_arguments(overrides, None)[0]
        jobs = [list(b) + s for b in base for s in self.samples]
        if max_batch_size is None:
            return [jobs]
        return [list(c) for c in BasicSweeper.split_overrides_to_chunks(jobs, max_batch_size)]


def register() -> str:
    """Enter :class:`SampleSweeper` in Hydra's plugin registry; returns its registered name."""
    from hydra.core.plugins import Plugins

    Plugins.instance().class_name_to_class.setdefault(NAME, SampleSweeper)
    return NAME
