"""Hydra composition shared by the CLI and the API: config dir, resolvers, error lines."""
from __future__ import annotations

import difflib
import os
import re
import sys
import uuid
from pathlib import Path
from typing import List, Optional, Sequence

from omegaconf import OmegaConf

from harness.core import project as user_project
from harness.core.config_dirs import (  # noqa: F401  (part of this module's names)
    CONF_DIR,
    conf_dirs,
    config_file,
    project_overrides,
    shown_path,
    with_project,
)

CONFIG_NAME = "config"
_CASE_CHOICE = {"case": None}  # the +case=... of the last compose() (for ${case_dir:} in the API)


def default_outputs() -> str:
    """Absolute outputs directory: $HARNESS_OUTPUTS, else the user project's outputs
    (``outputs`` of its project file, default ``<project root>/outputs``), else ./outputs."""
    env = os.environ.get("HARNESS_OUTPUTS")
    if env:
        return str(Path(env).resolve())
    project = user_project.find_project()
    if project is not None and project.source != f"${user_project.ENV_CASES}":
        return str(project.outputs or project.root / "outputs")
    return str((Path.cwd() / "outputs").resolve())


def project_help() -> str:
    """The ``--help`` lines of the user project's config directories: each group with its options."""
    project = user_project.find_project()
    if project is None or not project.case_dirs:
        return ""
    lines = [f"== Your project ({project.source}): its cases and options, first-class beside the shipped ones =="]
    for d in project.case_dirs:
        groups = {}
        for p in sorted(d.rglob("*.yaml")):
            rel = p.relative_to(d)
            if len(rel.parts) < 2:
                continue
            groups.setdefault(str(rel.parent), []).append(rel.stem)
        lines += [f"{g}: {', '.join(names)}" for g, names in sorted(groups.items())]
    return "\n".join(lines) + "\n\n"


def case_dir() -> str:
    """``${case_dir:}``: the directory of the selected case's YAML file (absolute)."""
    choice = None
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            choice = HydraConfig.get().runtime.choices.get("case")
    except Exception:  # noqa: BLE001 - no Hydra job: the API
        choice = None
    choice = choice or _CASE_CHOICE["case"]
    path = config_file(f"case/{choice}") if choice else None
    if path is None:
        raise ValueError("${case_dir:} needs a case selected with +case=NAME")
    return str(path.parent.resolve())


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("harness_outputs"):
        OmegaConf.register_new_resolver("harness_outputs", default_outputs)
    if not OmegaConf.has_resolver("harness_launchers"):
        from harness.launch.launchers import help_text

        OmegaConf.register_new_resolver("harness_launchers", help_text)
    if not OmegaConf.has_resolver("harness_uid"):
        OmegaConf.register_new_resolver("harness_uid", lambda: uuid.uuid4().hex[:8], use_cache=True)
    if not OmegaConf.has_resolver("project_root"):
        OmegaConf.register_new_resolver("project_root", lambda: str(user_project.project_root()))
    if not OmegaConf.has_resolver("harness_project_help"):
        OmegaConf.register_new_resolver("harness_project_help", project_help)
    if not OmegaConf.has_resolver("harness_python"):  # the Python running the harness (a user's command)
        OmegaConf.register_new_resolver("harness_python", lambda: sys.executable)
    if not OmegaConf.has_resolver("case_dir"):
        OmegaConf.register_new_resolver("case_dir", case_dir)


def available_cases() -> List[str]:
    return group_options("case")


def group_options(group: str) -> List[str]:
    """Every option of ``group`` in the shipped conf/ and the user's config directories."""
    names = set()
    for d in conf_dirs():
        root = d / group
        if root.is_dir():
            names.update(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.yaml"))
    return sorted(names)


def yaml_error(exc: BaseException) -> Optional[BaseException]:
    """The YAML syntax error in the chain of ``exc`` (a config file Hydra could not parse), or None."""
    import yaml

    e: Optional[BaseException] = exc
    for _ in range(8):
        if e is None:
            return None
        if isinstance(e, yaml.YAMLError):
            return e
        e = e.__cause__ or e.__context__
    return None


def yaml_error_line(exc: BaseException) -> str:
    """``FILE:LINE:COLUMN: not valid YAML: PROBLEM`` of a YAML syntax error (1-based)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is None:
        return f"not valid YAML: {problem}"
    name = str(getattr(mark, "name", "") or "")
    shown = shown_path(Path(name)) if name and not name.startswith("<") else "<config>"
    context, cmark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    started = (f" ({context} at line {cmark.line + 1}, column {cmark.column + 1})"
               if context and cmark is not None and cmark.line != mark.line else "")
    return f"{shown}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {problem}{started}"


def choosing_line(group: str, name: str, overrides: Sequence[str]) -> Optional[str]:
    """``FILE:LINE`` of the defaults-list entry choosing option ``name`` of ``group`` in the case,
    study or suite file the command line selects (Hydra names only the root config)."""
    pattern = re.compile(rf"^\s*-\s*(?:override\s+)?/?{re.escape(group)}(?:@\S+)?\s*:\s*['\"]?{re.escape(name)}['\"]?\s*(?:#.*)?$")
    for a in overrides:
        key, sep, choice = a.lstrip("+~").partition("=")
        if not sep or key not in ("case", "study", "suite"):
            continue
        path = config_file(f"{key}/{choice}")
        if path is None:
            continue
        for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if pattern.match(line):
                return f"{shown_path(path)}:{i}"
    return None


def _missing_config_line(text: str, overrides: Sequence[str] = ()) -> Optional[str]:
    m = re.search(r"Could not find '([^']+)'", text)
    if not m:
        return None
    path = m.group(1)
    group, _, name = path.partition("/")
    inside = re.search(r"In '([^']+)': Could not", text)
    user_file = config_file(inside.group(1)) if inside else None
    # a user's file is named (a shipped one keeps the short line: the option is on the command line)
    head = f"{shown_path(user_file)}: " if user_file is not None and not user_file.is_relative_to(CONF_DIR) else ""
    chosen_in = choosing_line(group, name, overrides) if name else None
    if chosen_in:
        head = f"{chosen_in}: "
    if group in ("case", "study", "source", "operator", "integrator", "tolerance", "gate", "tracking", "suite"):
        options = available_cases() if group == "case" else group_options(group)
        close = difflib.get_close_matches(name, options, n=3, cutoff=0.6)
        hint = f"; did you mean: {', '.join(close)}" if close else f"; see `python -m harness --help`"
        return f"{head}unknown {group} {name!r}{hint}"
    return f"{head}config not found: {path!r}"


def _self_named_rule(chain: Sequence[BaseException]) -> Optional[str]:
    """The message of a ValueError raised by an instantiated object (e.g. a launcher) that already
    names its config key (``hydra.launcher.poll_s: must be ...``), without Hydra's wrapper text."""
    innermost = chain[-1] if chain else None
    if len(chain) > 1 and isinstance(innermost, ValueError):
        text = str(innermost).strip()
        if re.match(r"^hydra\.[\w.]+: ", text) and "\n" not in text:
            return text
    return None


def describe_config_error(exc: BaseException, overrides: Sequence[str] = ()) -> str:
    """One line naming what is wrong with a composed config (file, key and rule).

    ``overrides``: the command line's overrides; with them an unknown key or a wrong type
    names the option file the user chose (see :mod:`harness.core.config_errors`).
    """
    from harness.core.config_errors import describe_key_error

    bad_yaml = yaml_error(exc)
    if bad_yaml is not None:
        return yaml_error_line(bad_yaml)
    keyed = describe_key_error(exc, overrides, CONF_DIR)
    if keyed:
        return keyed
    chain: List[BaseException] = []
    e: Optional[BaseException] = exc
    while e is not None and len(chain) < 6:
        chain.append(e)
        e = e.__cause__ or e.__context__
    texts = [str(x) for x in chain]
    for t in texts:
        line = _missing_config_line(t, overrides)
        if line:
            return line
    named = _self_named_rule(chain)
    if named:
        return named
    full_key = None
    for x in chain:
        fk = getattr(x, "full_key", None)
        if fk:
            full_key = fk
            break
    if full_key is None:
        for t in texts:
            m = re.search(r"full_key: (\S+)", t)
            if m:
                full_key = m.group(1)
                break
    where = None
    for t in texts:
        m = re.search(r"(?:In|in) '([^']+)'", t) or re.search(r"Error merging '([^']+)'", t)
        if m:
            where = m.group(1)
            break
    reasons = []
    for t in texts:
        for raw in t.splitlines():
            ln = raw.strip()
            if not ln or ln.startswith(("full_key", "object_type", "reference_type", "To append",
                                        "Set the environment")):
                continue
            ln = ln.rstrip(".;: ")
            if ln not in reasons and "$VALUE" not in ln:
                reasons.append(ln)
    reason = "; ".join(reasons[:3]) if reasons else type(exc).__name__
    parts = []
    where_file = config_file(where) if where else None
    if where_file is not None:
        parts.append(shown_path(where_file))
    if full_key:
        parts.append(str(full_key))
    parts.append(reason)
    return ": ".join(parts)


def is_config_error(exc: BaseException) -> bool:
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from harness.core.context import HarnessInputError

    return isinstance(exc, (HydraException, OmegaConfBaseException, HarnessInputError)) or yaml_error(exc) is not None


def compose(overrides: Sequence[str] = (), hydra_config: bool = False):
    """Compose the root config with ``overrides`` through Hydra's compose API (with its ``hydra``
    node when ``hydra_config``)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from harness.core.configs import register_all
    from harness.core.context import HarnessInputError

    register_resolvers()
    register_all()
    overrides = with_project(overrides)
    for a in overrides:
        if a.lstrip("+~").startswith("case="):
            _CASE_CHOICE["case"] = a.split("=", 1)[1]
    gh = GlobalHydra.instance()
    if gh.is_initialized():
        gh.clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="harness"):
            return hydra_compose(config_name=CONFIG_NAME, overrides=list(overrides),
                                 return_hydra_config=hydra_config)
    except Exception as exc:
        if is_config_error(exc):
            raise HarnessInputError(describe_config_error(exc, overrides)) from exc
        raise
