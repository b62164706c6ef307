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
* **cheaper copies and writes** (profiled again after the above: OmegaConf's deep copies were a
  quarter of what the workers spent between cases, the ``.hydra/`` YAML 8 %, override parsing 3 %):
  OmegaConf deep copies by a pickle round trip (:mod:`harness.launch.node_copy`), ``.hydra/``
  written through libyaml's emitter (:mod:`harness.launch.fast_yaml`), each override string parsed once.
  ``bench/suite_overhead``: parallel efficiency 0.74-0.75 -> 0.77-0.79 on a quiet machine.

Composed configs are identical with and without it (tests/core/test_core_hydra_reuse.py).

Checked against hydra-core 1.3.8 and omegaconf 2.3.1. Before it replaces anything, :func:`install`
checks (:func:`_check`) that hydra-core is 1.3 and that every private function it replaces or reads
is there with the signature it was written against: ``ConfigRepository.load_config(self,
config_path)`` and ``_find_object_source(self, config_path, object_type)``,
``CachingConfigRepository.__init__(self, delegate)`` setting ``delegate`` and ``cache``, the static
``Singleton.set_state(state)`` reading ``state["instances"]``, ``OverridesParser.parse_rule(self, s,
rule_name)``, ``defaults_list._create_interpolation_map(overrides, defaults_list, self_added)``
called by name in its module, and OmegaConf's ``grammar_parser.parse`` being what ``omegaconf.base``
and ``omegaconf._utils`` call ``parse``. Otherwise, or when ``HARNESS_PLAIN_PATHS`` names
``hydra_reuse``, Hydra composes every job as it does without the harness. The deep copies and the
``.hydra/`` YAML are separate speed-ups with their own checks (:mod:`harness.launch.node_copy`,
:mod:`harness.launch.fast_yaml`).
"""
from __future__ import annotations

import copy
import inspect
import logging
import os
from typing import Any, Dict, Optional, Tuple

from harness.launch import fast_yaml, guard, node_copy
from harness.launch.node_copy import pickle_copy

log = logging.getLogger(__name__)

GUARD = "hydra_reuse"

MEMO_SCHEMES = ("file", "pkg", "structured")
_MEMO: Dict[Tuple[Any, ...], list] = {}  # (source, path) -> [stamp, loaded, copied by pickle]


def _stamp(source, config_path: str) -> Any:
    """What identifies the version of a config a source holds: (size, mtime ns) of a file, the stored
    node object of the ConfigStore (replaced by ``ConfigStore.store``), None for package files."""
    scheme = source.scheme()
    if scheme == "structured":
        try:
            return source.store._load(source._normalize_file_name(config_path))
        except Exception:  # noqa: BLE001 - not found or a changed ConfigStore: load it the plain way
            return _NO_STAMP
    if scheme != "file":
        return None
    name = config_path if config_path.endswith(".yaml") else config_path + ".yaml"
    try:
        st = os.stat(os.path.join(source.path, name))
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


_NO_STAMP = object()


def _same_stamp(a: Any, b: Any) -> bool:
    return a is b or (isinstance(a, tuple) and a == b)


def _copy_loaded(kept: list) -> Any:
    """A deep copy of a memoised load (``kept`` = [stamp, loaded, by_pickle]): a pickle round trip
    keeping classes (:func:`harness.launch.node_copy.pickle_copy`, 4x faster than ``copy.deepcopy`` on
    OmegaConf nodes here), or ``copy.deepcopy`` from the first time pickle refuses it on."""
    if kept[2]:
        try:
            return pickle_copy(kept[1])
        except Exception:  # noqa: BLE001 - any pickling failure: the slower copy that always works
            kept[2] = False
    return copy.deepcopy(kept[1])


def _memoise_interpolation_parses() -> None:
    """OmegaConf parses an interpolation string (``${...}``) with its ANTLR grammar every time a node
    holding it is created, merged or dereferenced (16 parses a composition here, ~14 % of its time);
    the parse tree is only read by OmegaConf's visitor, so one tree per distinct string is kept."""
    import functools

    from omegaconf import _utils, base, grammar_parser

    plain_parse = grammar_parser.parse
    if getattr(base.parse, "harness_memo", False):
        return
    memo_parse = functools.lru_cache(maxsize=4096)(plain_parse)
    memo_parse.harness_memo = True
    base.parse = memo_parse
    _utils.parse = memo_parse


def _memoise_override_parses() -> None:
    """Hydra parses every override string of every job with its ANTLR grammar (15 per suite job here,
    all but ``+case=...`` the same for every job; ~3 ms a job); one parse per distinct string is
    kept and every caller gets its own deep copy of the parsed override. Errors are not kept."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    plain_parse = OverridesParser.parse_rule
    if getattr(plain_parse, "harness_memo", False):
        return
    parsed: Dict[str, Any] = {}

    def parse_rule(self, s: str, rule_name: str) -> Any:
        if rule_name != "override" or not isinstance(s, str):
            return plain_parse(self, s, rule_name)
        hit = parsed.get(s)
        if hit is None:
            hit = parsed[s] = plain_parse(self, s, rule_name)
            if len(parsed) > 4096:
                parsed.clear()
        return copy.deepcopy(hit)

    parse_rule.harness_memo = True
    OverridesParser.parse_rule = parse_rule


def _skip_unused_interpolation_maps() -> None:
    """Hydra builds an OmegaConf config of every known group choice for each config of the defaults
    tree (``_create_interpolation_map``, 19 % of a composition here) and reads it only to resolve
    defaults written as interpolations (``- db: ${...}``); none of a config's defaults is one in
    almost every config, and then the map is not built."""
    from hydra._internal import defaults_list as dl
    from hydra.core.default_element import InputDefault

    plain_map = dl._create_interpolation_map
    if getattr(plain_map, "harness_lazy", False):
        return

    def interpolation_map(overrides, defaults_list, self_added):
        if not any(isinstance(d, InputDefault) and d.is_interpolation() for d in defaults_list):
            return None  # read by nobody: only interpolated defaults resolve against it
        return plain_map(overrides, defaults_list, self_added)

    interpolation_map.harness_lazy = True
    dl._create_interpolation_map = interpolation_map


def _params(fn) -> list:
    return list(inspect.signature(fn).parameters)


def _check() -> Optional[str]:
    """None when Hydra and OmegaConf have what :func:`install` replaces, as it was written for."""
    from hydra._internal import config_repository as cr
    from hydra._internal import defaults_list as dl
    from hydra.core.default_element import InputDefault
    from hydra.core.object_type import ObjectType
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.plugins import Plugins
    from hydra.core.singleton import Singleton
    from omegaconf import _utils, base, grammar_parser

    hydra_version = guard.version("hydra-core")
    if hydra_version[:2] != (1, 3):
        return f"hydra-core {hydra_version} is not 1.3"
    shapes = (("ConfigRepository.load_config", cr.ConfigRepository.load_config, ["self", "config_path"]),
              ("ConfigRepository._find_object_source", cr.ConfigRepository._find_object_source,
               ["self", "config_path", "object_type"]),
              ("CachingConfigRepository.__init__", cr.CachingConfigRepository.__init__, ["self", "delegate"]),
              ("OverridesParser.parse_rule", OverridesParser.parse_rule, ["self", "s", "rule_name"]),
              ("defaults_list._create_interpolation_map", dl._create_interpolation_map,
               ["overrides", "defaults_list", "self_added"]),
              ("Singleton.set_state", Singleton.set_state, ["state"]))
    for name, fn, want in shapes:
        if getattr(fn, "harness_memo", False) or getattr(fn, "harness_lazy", False):
            continue  # this process's own replacement (a partial install before)
        if _params(fn) != want:
            return f"{name}{inspect.signature(fn)} is not ({', '.join(want)})"
    if not {"delegate", "cache"} <= set(cr.CachingConfigRepository.__init__.__code__.co_names):
        return "CachingConfigRepository.__init__ no longer sets delegate and cache"
    if not isinstance(inspect.getattr_static(Singleton, "set_state"), staticmethod) \
            or "instances" not in Singleton.set_state.__code__.co_consts:
        return "Singleton.set_state is not a staticmethod reading state['instances']"
    if not isinstance(Singleton._instances, dict) or not hasattr(Plugins, "instance"):
        return "Singleton._instances is not a dict of instances by class"
    if not any("_create_interpolation_map" in f.__code__.co_names for f in vars(dl).values()
               if inspect.isfunction(f)):
        return "hydra's defaults_list no longer calls _create_interpolation_map by name"
    missing = guard.has(InputDefault, "is_interpolation") or guard.has(ObjectType, "CONFIG")
    if missing:
        return missing
    if _params(grammar_parser.parse)[:1] != ["value"]:
        return f"omegaconf.grammar_parser.parse{inspect.signature(grammar_parser.parse)} does not take value first"
    for module in (base, _utils):
        if getattr(module, "parse", None) is not grammar_parser.parse \
                and not getattr(getattr(module, "parse", None), "harness_memo", False):
            return f"{module.__name__}.parse is not omegaconf.grammar_parser.parse"
    return None


def install() -> bool:
    """Keep config files and the plugin registry in this process (module docstring) if the check
    passes; True when newly installed. The deep copies and YAML writes are installed either way,
    each after its own check."""
    from hydra._internal import config_repository as cr
    from hydra.core.object_type import ObjectType

    plain_load = cr.ConfigRepository.load_config
    if getattr(plain_load, "harness_memo", False):  # installed already (here, or in the parent of a fork)
        return False
    node_copy.install()
    fast_yaml.install()
    if not guard.allowed(GUARD, _check):
        return False

    def load_config(self, config_path: str):
        source = self._find_object_source(config_path=config_path, object_type=ObjectType.CONFIG)
        if source is None or source.scheme() not in MEMO_SCHEMES:
            return plain_load(self, config_path)
        key = (type(source).__name__, source.provider, source.path, config_path)
        stamp = _stamp(source, config_path)
        if stamp is _NO_STAMP:
            return plain_load(self, config_path)
        kept = _MEMO.get(key)
        if kept is None or not _same_stamp(kept[0], stamp):
            loaded = plain_load(self, config_path)
            if loaded is None:
                return None
            kept = _MEMO[key] = [stamp, loaded, True]
        return _copy_loaded(kept)  # a composition may change what it was given; the memo stays as read

    def caching_init(self, delegate) -> None:
        # Hydra deep-copies the repository only so that initialize_sources() does not change the
        # shared one; that method assigns a new list of new sources, so a shallow copy suffices
        self.delegate = copy.copy(delegate)
        self.cache = {}

    load_config.harness_memo = True
    cr.ConfigRepository.load_config = load_config
    cr.CachingConfigRepository.__init__ = caching_init
    _keep_plugin_registry()
    _memoise_interpolation_parses()
    _memoise_override_parses()
    _skip_unused_interpolation_maps()
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
