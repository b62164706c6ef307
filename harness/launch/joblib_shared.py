"""Hydra's joblib launcher with the sweep's shared state sent once per worker, not once per job.

Hydra's joblib launcher hands every job its sweep's whole state as separate arguments: the
Hydra context (config loader and callbacks), the launching process's config, the task function
and a copy of every Hydra singleton (the ConfigStore with each schema, the OmegaConf resolvers).
joblib pickles those arguments anew for every job (cloudpickle; the resolvers are closures, so
by value), and the worker unpickles them again for every job. Measured on ``suite=fast`` over 2
workers: ~116 kB and 40-60 ms of the launching process's CPU per job, on the cores the workers
need; and each worker returned the job's two configs (``JobReturn.cfg``/``hydra_cfg``, 27 kB,
3-30 ms to pickle) that nothing in the launching process reads (they are in the job's ``.hydra/``).

:func:`launch` does what Hydra's joblib launcher does (the same joblib settings, logs, sweep
directory and :func:`hydra.core.utils.run_job` per job) with one difference: the shared state is
pickled once per sweep into a :class:`SharedState` (bytes and a key); a worker unpickles it once
and keeps it for the following jobs of the same sweep (:func:`run_job_shared`). Each job still
gets its own config, composed in the worker as before. The singletons of a worker are shared by
the jobs it runs one after another, as Hydra's basic launcher shares them between all jobs.
:func:`install` (called by the harness's entry point) makes ``hydra/launcher=joblib`` use it.

Checked against hydra-joblib-launcher 1.2.0, hydra-core 1.3.8, joblib 1.5.3 and 1.6.0, cloudpickle
2.2.1 and 3.1.3. The state is pickled with the ``cloudpickle`` package (joblib >= 1.6 no longer
ships its own copy as ``joblib.externals.cloudpickle``; that copy is used only where the package is
not installed). When the launcher's module is imported, :func:`_patch` checks (:func:`_check`) that
hydra-joblib-launcher is 1.2 and that what :func:`launch` replaces and calls is there as it was
written for: ``_core.launch(launcher, job_overrides, initial_job_idx)``, called by name from
``JoblibLauncher.launch``, ``_core.process_joblib_cfg(joblib_cfg)``, ``run_job`` with its directory
keys, ``Singleton.set_state`` reading ``state["instances"]``, ``JobReturn.cfg``/``hydra_cfg`` and
a cloudpickle. Otherwise, or when ``HARNESS_PLAIN_PATHS`` names ``joblib_shared``, Hydra's joblib
launcher runs as it is (its log line then has no "shared state").
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import logging
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Optional, Sequence, Tuple

from harness.launch import guard

log = logging.getLogger(__name__)

GUARD = "joblib_shared"

_UNPACKED: Dict[str, Tuple[Any, ...]] = {}  # this worker's state of the current sweep, by key


def _cloudpickle() -> Optional[ModuleType]:
    """The ``cloudpickle`` package, else the copy older joblib ships (< 1.6), else None."""
    try:
        import cloudpickle
    except ImportError:
        try:
            from joblib.externals import cloudpickle
        except ImportError:
            return None
    return cloudpickle


@dataclass(frozen=True)
class SharedState:
    """A sweep's shared state, pickled once: (hydra_context, config, task_function, singletons)."""

    key: str
    data: bytes

    @classmethod
    def pack(cls, hydra_context, config, task_function, singleton_state) -> "SharedState":
        cloudpickle = _cloudpickle()
        if cloudpickle is None:
            raise RuntimeError("neither the cloudpickle package nor joblib.externals.cloudpickle is installed")
        data = cloudpickle.dumps((hydra_context, config, task_function, singleton_state))
        return cls(key=uuid.uuid4().hex, data=data)

    def unpack(self) -> Tuple[Any, ...]:
        """The state, unpickled once per process (the previous sweep's is dropped)."""
        hit = _UNPACKED.get(self.key)
        if hit is None:
            import pickle

            _UNPACKED.clear()
            hit = _UNPACKED[self.key] = pickle.loads(self.data)
        return hit


def run_job_shared(idx: int, overrides: Sequence[str], shared: SharedState):
    """One job in a worker: Hydra's joblib ``execute_job`` on the worker's copy of the shared state.

    Returns the :class:`~hydra.core.utils.JobReturn` without its two configs (see module docstring)."""
    from hydra.core.singleton import Singleton
    from hydra.core.utils import run_job, setup_globals
    from omegaconf import open_dict

    from harness.launch.job_process import prepare

    prepare()
    hydra_context, config, task_function, singleton_state = shared.unpack()
    setup_globals()
    Singleton.set_state({"instances": dict(singleton_state["instances"]),
                         "omegaconf_resolvers": singleton_state["omegaconf_resolvers"]})
    sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    with open_dict(sweep_config):
        sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
        sweep_config.hydra.job.num = idx
    ret = run_job(hydra_context=hydra_context, config=sweep_config, task_function=task_function,
                  job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")
    ret.cfg = ret.hydra_cfg = None
    return ret


def launch(launcher, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> List[Any]:
    """``JoblibLauncher.launch`` with the shared state sent once (module docstring)."""
    from hydra.core.singleton import Singleton
    from hydra.core.utils import (
        JobReturn,
        configure_log,
        filter_overrides,
        setup_globals,
    )
    from hydra_plugins.hydra_joblib_launcher._core import process_joblib_cfg
    from joblib import Parallel, delayed

    setup_globals()
    if launcher.config is None or launcher.task_function is None or launcher.hydra_context is None:
        raise RuntimeError("the joblib launcher was not set up before launch")
    configure_log(launcher.config.hydra.hydra_logging, launcher.config.hydra.verbose)
    sweep_dir = Path(str(launcher.config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    joblib_cfg = launcher.joblib
    joblib_cfg["backend"] = "loky"  # as Hydra's launcher: its threading backend cannot run Hydra jobs
    process_joblib_cfg(joblib_cfg)
    shared = SharedState.pack(launcher.hydra_context, launcher.config, launcher.task_function,
                              Singleton.get_state())
    log.info("Joblib.Parallel(%s) is launching %d jobs (shared state %.0f kB, unpickled once per worker)",
             ",".join(f"{k}={v}" for k, v in joblib_cfg.items()), len(job_overrides), len(shared.data) / 1e3)
    log.info("Launching jobs, sweep output dir : %s", sweep_dir)
    for idx, overrides in enumerate(job_overrides):
        log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
    runs = Parallel(**joblib_cfg)(delayed(run_job_shared)(initial_job_idx + idx, overrides, shared)
                                  for idx, overrides in enumerate(job_overrides))
    if not all(isinstance(r, JobReturn) for r in runs):
        raise RuntimeError("a joblib job returned something other than a JobReturn")
    return runs


CORE = "hydra_plugins.hydra_joblib_launcher._core"  # Hydra's joblib launcher calls CORE.launch


def _params(fn) -> list:
    return list(inspect.signature(fn).parameters)


def _check(core: ModuleType) -> Optional[str]:
    """None when the joblib launcher's module ``core`` and Hydra are as :func:`launch` was written for."""
    from hydra.core.singleton import Singleton
    from hydra.core.utils import JobReturn, run_job
    from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher

    plugin = guard.version("hydra-joblib-launcher")
    if plugin[:2] != (1, 2):
        return f"hydra-joblib-launcher {plugin} is not 1.2"
    if _params(core.launch) != ["launcher", "job_overrides", "initial_job_idx"]:
        return f"{CORE}.launch{inspect.signature(core.launch)} is not (launcher, job_overrides, initial_job_idx)"
    if _params(core.process_joblib_cfg) != ["joblib_cfg"]:
        return f"{CORE}.process_joblib_cfg{inspect.signature(core.process_joblib_cfg)} is not (joblib_cfg)"
    if not {"_core", "launch"} <= set(JoblibLauncher.launch.__code__.co_names):
        return "JoblibLauncher.launch does not call _core.launch"
    if not {"config", "task_function", "hydra_context"} <= set(JoblibLauncher.setup.__code__.co_names) \
            or "joblib" not in JoblibLauncher.__init__.__code__.co_names:
        return "JoblibLauncher keeps its config, task, context or joblib settings elsewhere"
    if not {"hydra_context", "config", "task_function", "job_dir_key", "job_subdir_key"} <= set(_params(run_job)):
        return f"hydra.core.utils.run_job{inspect.signature(run_job)} lacks the arguments the launcher passes"
    if "instances" not in Singleton.set_state.__code__.co_consts or not hasattr(Singleton, "get_state"):
        return "Singleton.get_state/set_state keep the state otherwise"
    if not {"cfg", "hydra_cfg"} <= set(getattr(JobReturn, "__dataclass_fields__", {})):
        return "JobReturn has no cfg and hydra_cfg fields"
    if _cloudpickle() is None:
        return "neither the cloudpickle package nor joblib.externals.cloudpickle is installed"
    return None


def _patch(core: ModuleType) -> bool:
    """Point ``core.launch`` to :func:`launch` if the check passes; True when it does."""
    if getattr(core.launch, "harness_shared", False):
        return True
    if not guard.allowed(GUARD, lambda: _check(core)):
        return False

    def shared_launch(launcher, job_overrides, initial_job_idx):
        return launch(launcher, job_overrides, initial_job_idx)

    shared_launch.harness_shared = True
    core.launch = shared_launch
    return True


class _PatchingLoader(importlib.abc.Loader):
    """Loads the joblib launcher's core module as usual, then points its ``launch`` to :func:`launch`."""

    def __init__(self, loader) -> None:
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        _patch(module)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds CORE like Python's path finder does, with a :class:`_PatchingLoader`; joblib (90 ms to
    import here) stays unimported by runs that never launch through it."""

    def find_spec(self, name, path, target=None):
        if name != CORE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader)
        return spec


def install() -> bool:
    """Make Hydra's joblib launcher (``hydra/launcher=joblib``) use :func:`launch`, now or when it is
    first imported (Hydra's plugin scan re-executes the launcher's class module, so the module
    function ``launch`` that the class calls is what is replaced); the check runs then. False when
    the launcher is not installed, or its module is imported already and the check refuses it."""
    core = sys.modules.get(CORE)
    if core is not None:
        return _patch(core)
    try:
        if importlib.util.find_spec("hydra_plugins.hydra_joblib_launcher") is None:
            return False
    except (ImportError, ValueError):
        return False
    if not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
    return True
