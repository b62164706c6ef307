"""What Hydra rebuilds for every job of a sweep or suite, kept once per worker process.

Every job of a sweep or suite is set up by Hydra in the process that runs it, as if that
process had never run a job: profiled in ``suite=fast`` over 2 joblib workers, the workers spent
59 % of their time in the cases, 20 % composing job configs and 5.5 % rescanning Hydra's plugins.
:func:`install` (called by the task at the start of each job; a no-op after the first) keeps,
per process:

* **config files read once**: composing a job deep-copies the config repository and reads and
  parses again every YAML file of the defaults tree (``config.yaml`` and one file per group,
  ~25 here). The memo keeps what the repository made of each file (the parsed config, its
  header, its defaults list) keyed by the source and the file's size and modification time
  (package files of Hydra itself by name) and hands every composition its own deep copy, so no
  job can see another job's changes to a loaded config. The repository is copied shallowly (its
  sources are rebuilt by Hydra on every composition anyway). Measured: 0.142 s -> 0.078 s per
  composition.
* **the plugin registry kept**: the joblib launcher restores the launching process's singletons
  before each job (``Singleton.set_state``), which drops the plugin registry and rebuilds it by
  re-executing every plugin module (~50 ms a job); the registry depends only on what is
  installed, so the one this process built for its first job is kept.

Composed configs are identical with and without it (tests/core/test_core_hydra_reuse.py).
"""
from __future__ import annotations

import copy
import logging
import os
from typing import Any, Dict, Optional, Tuple

log = logging.getLogger(__name__)

MEMO_SCHEMES = ("file", "pkg")  # files; the ConfigStore (structured://) copies on every load anyway
_MEMO: Dict[Tuple[Any, ...], Any] = {}


def _file_stamp(source, config_path: str) -> Optional[Tuple[int, int]]:
    """(size, mtime ns) of the file a file source reads for ``config_path``; None for other sources."""
    if source.scheme() != "file":
        return None
    name = config_path if config_path.endswith(".yaml") else config_path + ".yaml"
    try:
        st = os.stat(os.path.join(source.path, name))
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def install() -> bool:
    """Keep config files and the plugin registry in this process (module docstring); True when
    newly installed."""
    from hydra._internal import config_repository as cr
    from hydra.core.object_type import ObjectType

    plain_load = cr.ConfigRepository.load_config
    if getattr(plain_load, "harness_memo", False):  # installed already (here, or in the parent of a fork)
        return False

    def load_config(self, config_path: str):
        source = self._find_object_source(config_path=config_path, object_type=ObjectType.CONFIG)
        if source is None or source.scheme() not in MEMO_SCHEMES:
            return plain_load(self, config_path)
        key = (type(source).__name__, source.provider, source.path, config_path, _file_stamp(source, config_path))
        hit = _MEMO.get(key)
        if hit is None:
            hit = plain_load(self, config_path)
            if hit is None:
                return None
            _MEMO[key] = hit
        return copy.deepcopy(hit)  # a composition may change what it was given; the memo stays as read

    def caching_init(self, delegate) -> None:
        # Hydra deep-copies the repository only so that initialize_sources() does not change the
        # shared one; that method assigns a new list of new sources, so a shallow copy suffices
        self.delegate = copy.copy(delegate)
        self.cache = {}

    load_config.harness_memo = True
    cr.ConfigRepository.load_config = load_config
    cr.CachingConfigRepository.__init__ = caching_init
    _keep_plugin_registry()
    log.debug("hydra config loads memoised in process %d", os.getpid())
    return True


def _keep_plugin_registry() -> None:
    """``Singleton.set_state`` with this process's plugin registry carried over (see module docstring)."""
    from hydra.core.plugins import Plugins
    from hydra.core.singleton import Singleton

    plain_set_state = Singleton.set_state

    def set_state(state) -> None:
        registry = Singleton._instances.get(Plugins)
        if registry is not None and Plugins not in state["instances"]:
            state = {**state, "instances": {**state["instances"], Plugins: registry}}
        plain_set_state(state)

    Singleton.set_state = staticmethod(set_state)
