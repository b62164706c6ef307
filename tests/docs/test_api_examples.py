"""The examples in the public docstrings run and print what they show (doctest), family by family."""
from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

FAMILIES = ("load_transfer", "dem", "vessel", "beam", "integrators")


def _modules(family: str):
    pkg = importlib.import_module(f"models.{family}")
    mods = {pkg.__name__: pkg}
    for name in pkg.__all__:
        obj = getattr(pkg, name)
        mod = obj if inspect.ismodule(obj) else inspect.getmodule(obj)
        if mod is not None and mod.__name__.startswith("models."):
            mods[mod.__name__] = mod
    return pkg, [mods[k] for k in sorted(mods)]


@pytest.mark.parametrize("family", FAMILIES)
def test_public_api_is_exported_documented_and_its_examples_run(family):
    pkg, mods = _modules(family)
    assert pkg.__all__ and len(set(pkg.__all__)) == len(pkg.__all__)
    for name in pkg.__all__:
        assert (getattr(pkg, name).__doc__ or "").strip(), f"models.{family}.{name} has no docstring"
    attempted = 0
    for mod in mods:
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
        assert res.failed == 0, f"{mod.__name__}: {res.failed} docstring example(s) failed (run python -m doctest -v)"
        attempted += res.attempted
    assert attempted >= 3, f"models.{family}: only {attempted} docstring examples"


# Families whose every exported name (functions, classes, exceptions, result types) carries its own
# runnable example in its own docstring; the module-wide count above cannot see a name without one.
EXAMPLE_PER_NAME = ("load_transfer",)


def _own_examples(family: str):
    pkg = importlib.import_module(f"models.{family}")
    return [(family, name) for name in pkg.__all__]


@pytest.mark.parametrize("family,name", [p for f in EXAMPLE_PER_NAME for p in _own_examples(f)])
def test_every_exported_name_has_its_own_running_example(family, name):
    obj = getattr(importlib.import_module(f"models.{family}"), name)
    finder = doctest.DocTestFinder(recurse=False)
    tests = [t for t in finder.find(obj, f"models.{family}.{name}") if t.examples]
    assert tests, f"models.{family}.{name}: no >>> example in its docstring"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t)
    res = runner.summarize(verbose=False)
    assert res.attempted >= 2 and res.failed == 0, f"models.{family}.{name}: {res}"
