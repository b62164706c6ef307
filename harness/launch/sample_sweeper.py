"""Hydra sweeper of the harness's validation studies (``harness.studies.validation``).

Hydra only instantiates sweepers registered under a ``hydra_plugins.`` name. The design card
fixes the project's top level, so instead of a ``hydra_plugins/`` package the class lives here
and :func:`register` enters it in Hydra's plugin registry under :data:`NAME` (the study callback
calls it in the launching process, before Hydra instantiates the sweeper). It is Hydra's basic
sweeper with every job of the basic sweep repeated once per sample: the job's overrides are those
of the basic sweep plus the sample's own (a zip over samples, not a product over keys).
``harness.studies.validation.plan_sweep`` selects it for ``study.kind: validation``.

It subclasses Hydra's private basic sweeper (:mod:`harness.launch.hydra_sweeps`) and reuses its
sweep expansion; not a speed-up (nothing to measure): a validation study has no plain path.
Checked against hydra-core 1.3.8: :func:`register` checks that ``BasicSweeper`` still has
``__init__(max_batch_size, params)``, the static ``split_arguments(overrides, max_batch_size)`` and
``split_overrides_to_chunks(lst, n)`` and that ``sweep`` calls ``split_arguments``, and raises
:class:`SweeperUnavailable` (naming the installed hydra-core) when it does not. ``HARNESS_PLAIN_PATHS``
does not apply: it chooses between a speed-up and the plain path, and here there is none.
"""
from __future__ import annotations

import functools
from typing import Any, List, Optional, Sequence

from harness.launch import guard, hydra_sweeps

NAME = "hydra_plugins.harness_sample_sweeper.SampleSweeper"


class SweeperUnavailable(RuntimeError):
    """The installed Hydra's basic sweeper is not the one :class:`SampleSweeper` extends."""


def _check() -> Optional[str]:
    return hydra_sweeps.check_basic_sweeper() or hydra_sweeps.check_registry()


def _reason() -> Optional[str]:
    """Why :class:`SampleSweeper` cannot be used with the installed Hydra (None: it can)."""
    try:
        return _check()
    except Exception as exc:  # noqa: BLE001 - any surprise in Hydra means: do not subclass it
        return f"{type(exc).__name__}: {exc}"


@functools.lru_cache(maxsize=1)
def sweeper_class() -> type:
    """:class:`SampleSweeper`, made on first use (Hydra's private base class is imported then)."""
    basic = hydra_sweeps.basic_sweeper()

    class SampleSweeper(basic):
        """BasicSweeper whose jobs are (basic-sweep job) x (one override list per sample)."""

        def __init__(self, max_batch_size: Optional[int] = None, params: Optional[Any] = None,
                     samples: Optional[Sequence[Sequence[str]]] = None) -> None:
            super().__init__(max_batch_size=max_batch_size, params=params)
            self.samples: List[List[str]] = [list(s) for s in (samples or [])]

        def split_arguments(self, overrides, max_batch_size):  # type: ignore[override]
            base = basic.split_arguments(overrides, None)[0]
            jobs = [list(b) + s for b in base for s in self.samples]
            if max_batch_size is None:
                return [jobs]
            return [list(c) for c in basic.split_overrides_to_chunks(jobs, max_batch_size)]

    return hydra_sweeps.named(SampleSweeper, __name__)


__getattr__ = hydra_sweeps.made_on_first_use(__name__, "SampleSweeper", sweeper_class)  # ``harness.launch.sample_sweeper.SampleSweeper``


def register() -> str:
    """Enter :class:`SampleSweeper` in Hydra's plugin registry; returns its registered name.

    Raises :class:`SweeperUnavailable` when the installed Hydra's basic sweeper is not the one it
    extends (module docstring)."""
    reason = _reason()
    if reason is not None:
        installed = ".".join(map(str, guard.version("hydra-core"))) or "not installed"
        raise SweeperUnavailable(
            f"a validation study extends Hydra's basic sweeper as hydra-core 1.3.8 has it; "
            f"the one of the installed hydra-core {installed} differs: {reason}")
    hydra_sweeps.register(NAME, sweeper_class())
    return NAME
