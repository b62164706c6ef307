"""YAML of OmegaConf configs through libyaml's C emitter, for the files Hydra writes per job.

Hydra writes three files into every job's ``.hydra/`` (``config.yaml``, ``hydra.yaml``,
``overrides.yaml``) with ``OmegaConf.to_yaml``, which emits through PyYAML's pure-Python emitter:
2.6 ms a file here against 0.7 ms through libyaml (``yaml.CDumper``), ~6 ms of every job of a
suite. :func:`to_yaml` represents the config exactly as ``OmegaConf.to_yaml`` does (OmegaConf's
own representers and resolvers: strings that would read back as another type stay quoted) and
only the emitting is libyaml's. The documents load back to the same values; the text differs only
where a long double-quoted string is folded onto the next line (libyaml folds escaped strings at
other points than PyYAML), which in the harness's configs is the help text in ``hydra.yaml``.
:func:`install` makes Hydra's ``_save_config`` use it when PyYAML has libyaml.

Checked against hydra-core 1.3.8, omegaconf 2.3.1 and PyYAML 6.0.4: :func:`install` replaces
``hydra.core.utils._save_config`` only when it is ``(cfg, filename, output_dir)`` and ``run_job``
calls it by that name, PyYAML has libyaml, OmegaConf's private ``get_omega_conf_dumper`` and
``_ensure_container`` are there, and a probe config comes out as ``OmegaConf.to_yaml`` writes it.
Otherwise, or when ``HARNESS_PLAIN_PATHS`` names ``fast_yaml``, Hydra writes the files itself.
"""
from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Any, Optional

import yaml

from harness.launch import guard

GUARD = "fast_yaml"


@functools.lru_cache(maxsize=1)
def _dumper() -> type:
    """OmegaConf's dumper with libyaml's emitter: its representers and implicit resolvers on ``CDumper``."""
    from omegaconf._utils import get_omega_conf_dumper

    plain = get_omega_conf_dumper()

    class OmegaConfCDumper(yaml.CDumper):
        pass

    OmegaConfCDumper.yaml_representers = dict(plain.yaml_representers)
    OmegaConfCDumper.yaml_multi_representers = dict(plain.yaml_multi_representers)
    OmegaConfCDumper.yaml_implicit_resolvers = {k: list(v) for k, v in plain.yaml_implicit_resolvers.items()}
    return OmegaConfCDumper


def to_yaml(cfg: Any, sort_keys: bool = False) -> str:
    """``OmegaConf.to_yaml(cfg)`` emitted by libyaml (module docstring); unresolved, enums by name."""
    from omegaconf import OmegaConf
    from omegaconf._utils import _ensure_container

    container = OmegaConf.to_container(_ensure_container(cfg), resolve=False, enum_to_str=True)
    return yaml.dump(container, Dumper=_dumper(), default_flow_style=False, allow_unicode=True,
                     sort_keys=sort_keys)


def _save_config(cfg: Any, filename: str, output_dir: Path) -> None:
    """Hydra's ``hydra.core.utils._save_config`` with :func:`to_yaml`."""
    output_dir.mkdir(parents=True, exist_ok=True)
    with open(str(output_dir / filename), "w", encoding="utf-8") as file:
        file.write(to_yaml(cfg))


_PROBE = {"a": "1.0", "b": "true", "c": [1.5, "null", None], "d": {"e": "${a}", "f": "x: y"}}


def _check() -> Optional[str]:
    from hydra.core import utils
    from omegaconf import OmegaConf, _utils

    if not getattr(yaml, "__with_libyaml__", False) or not hasattr(yaml, "CDumper"):
        return "PyYAML has no libyaml"
    if list(inspect.signature(utils._save_config).parameters) != ["cfg", "filename", "output_dir"]:
        return f"hydra.core.utils._save_config{inspect.signature(utils._save_config)} is not (cfg, filename, output_dir)"
    if "_save_config" not in utils.run_job.__code__.co_names:
        return "hydra.core.utils.run_job does not call _save_config"
    missing = guard.has(_utils, "get_omega_conf_dumper", "_ensure_container")
    if missing:
        return missing
    probe = OmegaConf.create(_PROBE)
    if to_yaml(probe) != OmegaConf.to_yaml(probe):
        return "a probe config is written otherwise than by OmegaConf.to_yaml"
    return None


def install() -> bool:
    """Make Hydra write a job's ``.hydra/`` files with :func:`to_yaml` if the check passes (module
    docstring); True when newly installed."""
    from hydra.core import utils

    if utils._save_config is _save_config:
        return False
    if not guard.allowed(GUARD, _check):
        return False
    utils._save_config = _save_config
    return True
