"""One-line descriptions of composition errors, in the user's terms.

An unknown key or a value of the wrong type is reported against the config group and the
option file the user chose, never against an internal dataclass::

    source (conf/source/analytic_uniform.yaml): unknown key 'no_such_key'; valid keys: n_rings, p0, ... (did you mean 'n_rings'?)
    source (conf/source/analytic_uniform.yaml): n_rings: expected int, got 'abc' (str)
"""
from __future__ import annotations

import dataclasses
import difflib
import re
import typing
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

GROUPS = ("case", "study", "source", "operator", "integrator", "tolerance", "gate", "tracking")
_TYPE_WORDS = {"Integer": "int", "Float": "float", "Boolean": "bool", "String": "str"}


def type_words(tp: Any) -> str:
    """A readable name of a type annotation: ``int``, ``float or null``, ``list of str``."""
    origin = typing.get_origin(tp)
    args = [a for a in typing.get_args(tp)]
    if origin is typing.Union:
        names = [type_words(a) for a in args if a is not type(None)]
        return " or ".join(names) + (" or null" if type(None) in args else "")
    if origin in (list, List, tuple, Sequence):
        return f"list of {type_words(args[0])}" if args else "list"
    if origin in (dict, Dict):
        return "mapping"
    if tp is Any:
        return "any value"
    if dataclasses.is_dataclass(tp):
        return "mapping"
    return getattr(tp, "__name__", str(tp))


def schema_fields(object_type: Any) -> Dict[str, Any]:
    """Field name -> annotation of a structured-config dataclass (empty when it is not one)."""
    if not (isinstance(object_type, type) and dataclasses.is_dataclass(object_type)):
        return {}
    try:
        hints = typing.get_type_hints(object_type)
    except Exception:  # an annotation that does not resolve: the names alone still help
        hints = {}
    return {f.name: hints.get(f.name, f.type) for f in dataclasses.fields(object_type)}


def _chain(exc: BaseException) -> List[BaseException]:
    out: List[BaseException] = []
    e: Optional[BaseException] = exc
    while e is not None and len(out) < 8:
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def _override_key(arg: str) -> str:
    return arg.split("=", 1)[0].lstrip("+~")


def chosen_option(group: str, overrides: Sequence[str], bad_key: str, conf_dir: Path) -> Optional[str]:
    """The option of ``group`` that the command line selects, read by composing it again
    without the override that failed (None when that does not compose either)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from harness.core.config_dirs import with_project

    kept = [a for a in overrides if not a.startswith("-") and _override_key(a) != bad_key]
    kept = with_project(kept)  # a user project's config directories
    gh = GlobalHydra.instance()
    if gh.is_initialized():
        gh.clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3", job_name="harness"):
            cfg = hydra_compose(config_name="config", overrides=kept, return_hydra_config=True)
        choice = cfg.hydra.runtime.choices.get(group)
        return None if choice in (None, "None") else str(choice)
    except Exception:  # noqa: BLE001 - only a hint for the message
        return None
    finally:
        if GlobalHydra.instance().is_initialized():
            GlobalHydra.instance().clear()


def where(full_key: str, overrides: Sequence[str], conf_dir: Path) -> str:
    """``group (conf/group/option.yaml)`` for the first segment of ``full_key``."""
    group = full_key.split(".", 1)[0]
    if group not in GROUPS:
        return f"{group} (conf/config.yaml)"
    from harness.core.config_dirs import config_file, shown_path

    option = chosen_option(group, overrides, full_key, conf_dir)
    if option is None:  # the bad key is in the chosen file itself: the option as the command line names it
        named = [a.split("=", 1)[1] for a in overrides if "=" in a and _override_key(a) == group]
        option = named[-1] if named else None
    if option and (conf_dir / group / f"{option}.yaml").is_file():
        return f"{group} (conf/{group}/{option}.yaml)"
    path = config_file(f"{group}/{option}") if option else None
    if path is not None:  # an option file of the user's project
        return f"{group} ({shown_path(path)})"
    return group


def describe_key_error(exc: BaseException, overrides: Sequence[str], conf_dir: Path) -> Optional[str]:
    """The line for an unknown key or a wrong type, or None when ``exc`` is neither."""
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, ValidationError

    for e in _chain(exc):
        full_key = getattr(e, "full_key", None)
        if not full_key:
            continue
        fields = schema_fields(getattr(e, "object_type", None))
        text = str(e).splitlines()[0]
        head = where(str(full_key), overrides, conf_dir)
        group, _, inner = str(full_key).partition(".")
        node_path, _, leaf = inner.rpartition(".")
        if isinstance(e, (ConfigAttributeError, ConfigKeyError)) and "not in" in text:
            valid = sorted(k for k in fields if not k.startswith("_"))
            where_keys = f" of {group}.{node_path}" if node_path else ""
            line = f"{head}: unknown key {inner!r}"
            if valid:
                line += f"; valid keys{where_keys}: {', '.join(valid)}"
                close = difflib.get_close_matches(leaf, valid, n=3, cutoff=0.6)
                if close:
                    line += f" (did you mean {' or '.join(repr(c) for c in close)}?)"
            return line
        if isinstance(e, ValidationError):
            expected = type_words(fields[leaf]) if leaf in fields else None
            if expected is None:
                m = re.search(r"converted to (\w+)", text)
                expected = _TYPE_WORDS.get(m.group(1), m.group(1)) if m else None
            m = re.search(r"Value '(.*)' of type '([\w.]+)'", text)
            given = [a.split("=", 1)[1] for a in overrides if "=" in a and _override_key(a) == full_key]
            got = f"{m.group(1)!r} ({m.group(2)})" if m else (repr(given[-1]) if given else text)
            if expected:
                return f"{head}: {inner}: expected {expected}, got {got}"
            return f"{head}: {inner}: {text}"
    return None
