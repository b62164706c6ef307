"""Hydra's basic sweeper, a private class, reached from here only.

``hydra._internal.core_plugins.basic_sweeper.BasicSweeper`` is Hydra's default sweeper: it expands
``key=a,b`` overrides into jobs (``split_arguments``) and checks every job's config before it
launches (``validate_batch_is_legal``). The harness counts a sweep's jobs before launching it
(:func:`count_jobs`: the progress line's total and ``n_jobs`` of ``study_state.json``) and extends it
(:mod:`harness.launch.suite_sweeper`, :mod:`harness.launch.sample_sweeper`), which saves writing its
own copy of Hydra's sweep expansion. Not a speed-up: there is no time to measure. Checked against
hydra-core 1.3.8 (:func:`check_basic_sweeper`, :func:`check_registry`); when the check fails or
``HARNESS_PLAIN_PATHS`` names ``hydra_sweeps``, :func:`count_jobs` returns None (the count is
unknown; the sweep itself is Hydra's and runs the same).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence

from harness.launch import guard

GUARD = "hydra_sweeps"
PLAIN_NAME = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"  # its _target_ in Hydra's config


def params(fn) -> list:
    """The parameter names of ``fn`` (of the function under a staticmethod too)."""
    return list(inspect.signature(fn).parameters)


def basic_sweeper() -> type:
    """Hydra's basic sweeper class (raises ImportError where it is not any more)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    return BasicSweeper


def check_basic_sweeper() -> Optional[str]:
    """None when ``BasicSweeper`` has the shape the harness uses: ``split_arguments(overrides,
    max_batch_size)`` and ``split_overrides_to_chunks(lst, n)`` static, ``__init__(max_batch_size,
    params)``, and ``sweep`` calling ``split_arguments`` and ``validate_batch_is_legal(batch)``."""
    cls = basic_sweeper()
    for name, want in (("split_arguments", ["overrides", "max_batch_size"]),
                       ("split_overrides_to_chunks", ["lst", "n"])):
        if not isinstance(inspect.getattr_static(cls, name, None), staticmethod):
            return f"BasicSweeper.{name} is not a staticmethod"
        if params(getattr(cls, name)) != want:
            return f"BasicSweeper.{name}{inspect.signature(getattr(cls, name))} is not ({', '.join(want)})"
    if params(cls.__init__)[:3] != ["self", "max_batch_size", "params"]:
        return f"BasicSweeper.__init__{inspect.signature(cls.__init__)} is not (self, max_batch_size, params)"
    if params(cls.validate_batch_is_legal) != ["self", "batch"]:
        return "BasicSweeper.validate_batch_is_legal is not (self, batch)"
    called = set(cls.sweep.__code__.co_names)
    missing = {"split_arguments", "validate_batch_is_legal"} - called
    if missing:
        return f"BasicSweeper.sweep no longer calls {', '.join(sorted(missing))}"
    return None


def check_registry() -> Optional[str]:
    """None when Hydra instantiates a sweeper from ``Plugins.class_name_to_class`` by its name."""
    from hydra.core.plugins import Plugins

    if "class_name_to_class" not in Plugins._instantiate.__code__.co_names:
        return "Plugins._instantiate does not look plugins up in class_name_to_class"
    if not isinstance(Plugins.instance().class_name_to_class, dict):
        return "Plugins.class_name_to_class is not a dict"
    return None


def register(name: str, cls: type) -> None:
    """Enter ``cls`` in Hydra's plugin registry under ``name`` (a ``hydra_plugins.`` name)."""
    from hydra.core.plugins import Plugins

    Plugins.instance().class_name_to_class.setdefault(name, cls)


def count_jobs(overrides: Sequence[str]) -> Optional[int]:
    """How many jobs the basic sweeper makes of ``overrides`` (``key=a,b`` etc.), None when the
    basic sweeper cannot be used (module docstring); raises what Hydra's override parser raises."""
    if not guard.allowed(GUARD, check_basic_sweeper):
        return None
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return sum(len(batch) for batch in basic_sweeper().split_arguments(parsed, None))



def named(cls: type, module: str) -> type:
    """``cls``, a class made inside a function, named as if defined at the top of ``module``."""
    cls.__module__, cls.__qualname__ = module, cls.__name__
    return cls


def made_on_first_use(module: str, name: str, make: Callable[[], type]) -> Callable[[str], Any]:
    """A module ``__getattr__`` giving the class ``module.name`` as ``make()`` makes it, when it is first
    asked for (Hydra's private base class is imported then)."""

    def __getattr__(attr: str) -> Any:
        if attr != name:
            raise AttributeError(f"module {module!r} has no attribute {attr!r}")
        return make()

    return __getattr__
