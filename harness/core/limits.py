"""Upper limits of size parameters, choices of enum-like options, and command-line argument checks.

A size far beyond any real case (``source.n_rings=1000000000``) would only end in an out-of-memory
crash minutes later; it is refused before anything runs, naming the key, the value and the limit.
Each limit is documented in the README (section "Bad input") and can be raised for one run through
the environment variable ``HARNESS_LIMIT_<KEY>`` (dots as underscores, upper case), e.g.
``HARNESS_LIMIT_SOURCE_N_RINGS=2000000``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Sequence, Tuple

from omegaconf import DictConfig, OmegaConf

from harness.core.context import HarnessInputError

# config key -> (upper limit, what it bounds); memory grows with the value (or its square)
SIZE_LIMITS: Dict[str, Tuple[int, str]] = {
    "source.n_rings": (1_000_000, "rings of the source history"),
    "source.n_outputs": (10_000_000, "output times of the source history"),
    "integrator.n_steps": (10_000_000, "time steps (one float64 per step and quantity)"),
    "operator.surface.resolution": (4096, "surface cells per direction (memory grows with its square)"),
}
# the size parameters of the family cases (``case.params`` of a case whose adapter is in
# harness.families; a generic case's parameters size the user's own program, not the harness):
# counts per direction of a grid (memory grows with their square or cube), and totals
PER_DIRECTION_KEYS = ("n", "nx", "ny", "nz", "n_side", "n_r", "n_z", "n_base", "resolution", "base", "grids")
PARAM_LIMITS: Dict[str, Tuple[int, str]] = {
    "per_direction": (10_000, "cells or points per direction of a grid"),
    "total": (10_000_000, "a count of steps, particles, samples, rings, repeats, ..."),
}


def _param_size_kind(key: str) -> str | None:
    """``per_direction``, ``total`` or None for a key of ``case.params`` (a ``_full`` variant and a
    ``grids`` list count like their base name)."""
    base = key[:-5] if key.endswith("_full") else key
    if base in PER_DIRECTION_KEYS:
        return "per_direction"
    if base.startswith("n_") or base in ("repeats", "levels"):
        return "total"
    return None


def _limit_from(env: str, default: int) -> int:
    """``$env`` as an integer limit if set (exit-2 error naming it if not a number), else ``default``."""
    raw = os.environ.get(env)
    if not raw:
        return default
    try:
        return int(float(raw))
    except ValueError:
        raise HarnessInputError(f"{env}: {raw!r} is not a number") from None


def param_limit(kind: str) -> int:
    """The limit of a family size parameter: ``$HARNESS_LIMIT_CASE_PARAMS_<KIND>`` or PARAM_LIMITS."""
    return _limit_from(f"HARNESS_LIMIT_CASE_PARAMS_{kind.upper()}", PARAM_LIMITS[kind][0])


def _check_param_sizes(node: Any, where: str) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            kind = _param_size_kind(str(key))
            values = value if isinstance(value, list) else [value]
            for v in values if kind else []:
                if isinstance(v, (int, float)) and not isinstance(v, bool) and v > param_limit(kind):
                    raise HarnessInputError(
                        f"{where}.{key}: {v!r} is above the limit {param_limit(kind)} ({PARAM_LIMITS[kind][1]}; "
                        f"raise it with HARNESS_LIMIT_CASE_PARAMS_{kind.upper()} if you mean it)")
            if isinstance(value, dict):
                _check_param_sizes(value, f"{where}.{key}")


def check_param_sizes(cfg: DictConfig) -> None:
    """Refuse a size parameter of a family case above its limit (PARAM_LIMITS), naming the key."""
    adapter = str(OmegaConf.select(cfg, "case.adapter", default="") or "")
    params = OmegaConf.select(cfg, "case.params", default=None)
    if not adapter.startswith("harness.families.") or not isinstance(params, DictConfig):
        return
    _check_param_sizes(OmegaConf.to_container(params, resolve=True), "case.params")


# config key -> allowed values (null allowed where the option has a default meaning)
CHOICES: Dict[str, Tuple[Any, ...]] = {
    "source.mode": ("production", "debug", None),
}
MAX_EXPORT_STEPS = 10_000_000  # cavitation-kratos-export --steps (one float64 per step and condition)
MAX_ARGUMENT_CHARS = 4096  # one command-line argument
MAX_NAME_CHARS = 200  # a config option name (case=..., a group choice): it is a file name


def size_limit(key: str) -> int:
    """The upper limit of ``key``: ``$HARNESS_LIMIT_<KEY>`` if set, else SIZE_LIMITS."""
    return _limit_from("HARNESS_LIMIT_" + key.replace(".", "_").upper(), SIZE_LIMITS[key][0])


def check_limits(cfg: DictConfig) -> None:
    """Raise HarnessInputError for the first size above its limit or option outside its choices."""
    check_param_sizes(cfg)
    for key, (_, what) in SIZE_LIMITS.items():
        value = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        limit = size_limit(key)
        if value > limit:
            env = "HARNESS_LIMIT_" + key.replace(".", "_").upper()
            raise HarnessInputError(f"{key}: {value!r} is above the limit {limit} ({what}; "
                                    f"raise it with {env} if you mean it)")
    for key, allowed in CHOICES.items():
        value = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        if OmegaConf.select(cfg, key.rsplit(".", 1)[0], default=None) is None:
            continue
        if value not in allowed:
            shown = ", ".join("null" if a is None else str(a) for a in allowed)
            raise HarnessInputError(f"{key}: {value!r} is not one of {shown}")


def _existing_ancestor_file(path: Path) -> Path | None:
    for p in [path, *path.parents]:
        if p.exists():
            return None if p.is_dir() else p
    return None


def check_arguments(args: Sequence[str]) -> None:
    """Command-line overrides the composer would crash on: one line naming the argument and the rule."""
    for arg in args:
        if arg.startswith("-"):
            continue
        key, _, value = arg.partition("=")
        bare = key.lstrip("+~")
        if "=" in arg and not bare:
            raise HarnessInputError(f"argument {arg!r}: an override is KEY=VALUE; the key is empty")
        if "=" in arg and "." not in bare and bare.replace("/", "").replace("_", "").isalnum() \
                and len(value) > MAX_NAME_CHARS:
            raise HarnessInputError(f"{bare}: option name of {len(value)} characters; at most {MAX_NAME_CHARS} "
                                    "(it names a file under conf/)")
        if len(arg) > MAX_ARGUMENT_CHARS:
            raise HarnessInputError(f"argument {arg[:40]}...: {len(arg)} characters; at most {MAX_ARGUMENT_CHARS}")
        if "=" not in arg:
            continue
        if bare in ("paths.outputs", "hydra.run.dir", "hydra.sweep.dir") and value:
            blocker = _existing_ancestor_file(Path(os.path.expanduser(value)).absolute())
            if blocker is not None:
                raise HarnessInputError(f"{bare}: {value!r} lies in or at the file {str(blocker)!r}; "
                                        "it must be a directory (existing or to be created)")
