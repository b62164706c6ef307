"""Input files named in a config: relative paths are found where the user expects them.

A relative path (``source.data_file=my.yaml``, ``source.path=loads.wall-loads.v1.h5``,
``case.params.descriptor=...``, and in a generic case ``prepare.inputs``, ``model.inputs``,
reference files) is looked up, in order,

1. in the user's project root (``${project_root:}``: the folder of the nearest pyproject.toml
   with ``[tool.harness]`` or harness.yaml, see :mod:`harness.core.project`), when there is one;
2. in the launch directory: the directory the command was run from (Hydra's original
   working directory; the process's working directory for the Python API), then
3. among the files shipped with the harness (``models/.../tanker.yaml``, ``examples/...``).

The first existing file wins and the config the adapter receives holds its absolute path,
so a worker in another directory (Ray, Slurm) opens the same file. The recorded config
(``config.yaml``, the config hash) keeps the value as the user wrote it; the manifest lists
the absolute input with its SHA-256. A path found in neither place is invalid input, and
the error lists the places tried.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from omegaconf import DictConfig, OmegaConf, flag_override

from harness.core import project
from harness.core.context import HarnessInputError
from harness.core.shipped import PACKAGES_ROOT, SHIPPED_ROOT

# config keys whose value is an input file
INPUT_PATH_KEYS = ("source.path", "source.data_file", "case.params.descriptor")


def launch_dir() -> Path:
    """Where the command was run from: Hydra's original cwd inside a Hydra job, else os.getcwd()."""
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            return Path(HydraConfig.get().runtime.cwd)
    except Exception:  # noqa: BLE001 - no Hydra job: the API, a plain script
        pass
    return Path(os.getcwd())


def project_root() -> Path:
    """``${project_root:}`` seen from the launch directory."""
    return project.project_root(launch_dir())


def search_places(base: Optional[Path] = None) -> List[Tuple[str, Path]]:
    """The directories a relative input path is tried in, with a name for the error message."""
    start = Path(base or launch_dir())
    places = []
    if project.find_file(start) is not None:
        places.append(("project root", project.project_root(start)))
    places += [("launch directory", start), ("files shipped with the harness", SHIPPED_ROOT),
               ("installed packages", PACKAGES_ROOT)]
    out, seen = [], set()
    for label, root in places:
        key = Path(root).resolve()
        if key not in seen:
            seen.add(key)
            out.append((label, Path(root)))
    return out


def find_input(value: str, key: str, base: Optional[Path] = None,
               extra: Sequence[Tuple[str, Path]] = ()) -> Path:
    """The absolute path of input ``value`` (config key ``key``); HarnessInputError if absent.

    extra: more (label, directory) places tried after the usual ones (module docstring)."""
    p = Path(os.path.expanduser(value))
    if p.is_absolute():
        if p.exists():
            return p
        raise HarnessInputError(f"{key}: file {value!r} not found")
    tried = []
    for label, root in [*search_places(base), *extra]:
        candidate = (root / p).resolve()
        if candidate.exists():
            return candidate
        tried.append(f"{candidate} ({label})")
    raise HarnessInputError(f"{key}: file {value!r} not found; tried {', '.join(tried)}")


def resolve_input_paths(cfg: DictConfig, base: Optional[Path] = None) -> List[Path]:
    """Replace every relative input path of ``cfg`` (keys in INPUT_PATH_KEYS) by its absolute
    path, found as described in the module docstring; returns the paths found."""
    found = []
    for key in INPUT_PATH_KEYS:
        value = OmegaConf.select(cfg, key, default=None)
        if not isinstance(value, str) or not value or value == "???":
            continue
        path = find_input(value, key, base)
        found.append(path)
        if str(path) != value:
            with flag_override(cfg, ["readonly", "struct"], [False, False]):
                OmegaConf.update(cfg, key, str(path), merge=False)
    return found
