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
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml


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


def install() -> bool:
    """Make Hydra write a job's ``.hydra/`` files with :func:`to_yaml`; False without libyaml."""
    if not getattr(yaml, "__with_libyaml__", False):
        return False
    from hydra.core import utils

    utils._save_config = _save_config
    return True
