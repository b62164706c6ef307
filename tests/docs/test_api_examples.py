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
