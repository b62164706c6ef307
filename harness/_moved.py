"""The flat module names of harness 0.1 (``harness.figures``, ``python -m harness.sync``, ...) kept.

harness/ was one flat folder of modules until it became packages along its pipeline. A user's code,
YAML ``_target_`` or command line that names an old module still works: :class:`MovedFinder` (put on
``sys.meta_path`` by ``harness/__init__.py``) imports the new module under the old name as well (the
same module object, so state and classes are shared), and ``python -m OLD`` runs the new module's code.
An old module whose name is now a package's (``harness.tracking``) forwards attributes from the
package to the module (``harness.tracking.client`` is ``harness.tracking.records.client``).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
from typing import Any, Callable, Dict

MOVED: Dict[str, str] = {
    "harness.api": "harness.core.api",
    "harness.atomic": "harness.core.atomic",
    "harness.baseline": "harness.suites.baseline",
    "harness.catalogue": "harness.suites.catalogue",
    "harness.compare": "harness.suites.compare",
    "harness.compose": "harness.core.compose",
    "harness.config_errors": "harness.core.config_errors",
    "harness.configs": "harness.core.configs",
    "harness.context": "harness.core.context",
    "harness.export_cli": "harness.tools.export",
    "harness.fast_yaml": "harness.launch.fast_yaml",
    "harness.figures": "harness.core.figures",
    "harness.gates": "harness.metrics.gates",
    "harness.gunicorn_balance": "harness.launch.gunicorn_balance",
    "harness.hydra_reuse": "harness.launch.hydra_reuse",
    "harness.inputs": "harness.core.inputs",
    "harness.interrupt": "harness.core.interrupt",
    "harness.job_process": "harness.launch.job_process",
    "harness.joblib_shared": "harness.launch.joblib_shared",
    "harness.launchers": "harness.launch.launchers",
    "harness.manifest": "harness.core.manifest",
    "harness.mlflow_sqlite": "harness.launch.mlflow_sqlite",
    "harness.node_copy": "harness.launch.node_copy",
    "harness.params": "harness.core.params",
    "harness.progress": "harness.core.progress",
    "harness.ray_attempts": "harness.studies.ray_attempts",
    "harness.report": "harness.cli.report",
    "harness.reports.dashboard": "harness.suites.dashboard",
    "harness.reports.junit": "harness.suites.junit",
    "harness.reports.notes": "harness.tracking.notes",
    "harness.runner": "harness.core.runner",
    "harness.sample_sweeper": "harness.launch.sample_sweeper",
    "harness.suite_sweeper": "harness.launch.suite_sweeper",
    "harness.sync": "harness.cli.sync",
    "harness.validate": "harness.tools.validate",
    "harness.validation": "harness.studies.validation",
    "harness.verification": "harness.metrics.verification",
    "harness.warmup": "harness.core.warmup",
    "harness.worker_gc": "harness.launch.worker_gc",
}

# old module -> module that now holds its names, where the old name is a package now
PACKAGE_FORWARDS: Dict[str, str] = {
    "harness.metrics": "harness.metrics.library",
    "harness.studies": "harness.studies.aggregate",
    "harness.suites": "harness.suites.suite",
    "harness.tracking": "harness.tracking.records",
}


class _MovedLoader(importlib.abc.InspectLoader):
    """Loads an old name as the module at its new name (one module object, two names in ``sys.modules``)."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec):
        module = importlib.import_module(self.new)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        """Nothing to run (the new module ran when it was imported); only its own ``__spec__``, which
        the import system replaced by the old name's, is put back."""
        module.__spec__ = self.own_spec

    def get_source(self, fullname: str):
        return importlib.util.find_spec(self.new).loader.get_source(self.new)

    def get_code(self, fullname: str):
        """The new module's code, for ``python -m OLD`` (runpy runs it as ``__main__``)."""
        return importlib.util.find_spec(self.new).loader.get_code(self.new)


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds every name of :data:`MOVED` at its new home."""

    def find_spec(self, name, path=None, target=None):
        new = MOVED.get(name)
        if new is None:
            return None
        origin = importlib.util.find_spec(new).origin
        return importlib.machinery.ModuleSpec(name, _MovedLoader(new), origin=origin)


def install() -> None:
    """Put :class:`MovedFinder` on ``sys.meta_path`` once."""
    import sys

    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())


def forward_attributes(package: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: a submodule not imported yet, else the name in the module
    that held it in harness 0.1."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if importlib.util.find_spec(f"{package}.{name}") is not None:  # a submodule not imported yet
            return importlib.import_module(f"{package}.{name}")
        module = importlib.import_module(PACKAGE_FORWARDS[package])
        try:
            return getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__
