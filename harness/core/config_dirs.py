"""The config directories: the shipped conf/ and a user project's, and how their files are named.

Shared by composition (harness.core.compose) and its error lines (harness.core.config_errors).
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Sequence

from harness.core import project as user_project
from harness.core.shipped import SHIPPED_ROOT

CONF_DIR = SHIPPED_ROOT / "conf"


def conf_dirs() -> List[Path]:
    """The config directories: the shipped conf/, then the user project's (search-path order)."""
    return [CONF_DIR, *user_project.case_dirs()]


def config_file(name: str) -> Optional[Path]:
    """The file of config ``name`` (``case/mine/heat``) in the first config directory holding it."""
    for d in conf_dirs():
        path = d / f"{name}.yaml"
        if path.is_file():
            return path
    return None


def shown_path(path: Path) -> str:
    """A config file as the user knows it: ``conf/...`` for shipped ones, else relative to the
    user's project root (or the launch directory) when below it, else absolute."""
    path = Path(path)
    if path.is_relative_to(CONF_DIR):
        return f"conf/{path.relative_to(CONF_DIR)}"
    for base in (user_project.project_root(), Path.cwd()):
        try:
            return str(path.resolve().relative_to(base.resolve()))
        except ValueError:
            continue
    return str(path)


def _sets_searchpath(arg: str) -> bool:
    return arg.lstrip("+").startswith("hydra.searchpath=")


def _user_searchpath(overrides: Sequence[str]) -> List[str]:
    """The entries of the last ``hydra.searchpath=[...]`` on the command line (empty without one)."""
    given = [a for a in overrides if _sets_searchpath(a)]
    if not given:
        return []
    from hydra.core.override_parser.overrides_parser import OverridesParser

    value = OverridesParser.create().parse_override(given[-1]).value()
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def project_overrides(overrides: Sequence[str] = ()) -> List[str]:
    """The overrides a user project adds: its config directories on Hydra's search path (then the
    entries of a ``hydra.searchpath=[...]`` of the command line) and its default tracking option
    (unless the command line chooses one)."""
    project = user_project.find_project()
    if project is None:
        return []
    out = []
    searchpath = user_project.searchpath_override(project.case_dirs, _user_searchpath(overrides))
    if searchpath:
        out.append(searchpath)  # after the user's own hydra.searchpath=[...], which it keeps
    if project.tracking and not any(a.lstrip("+~").startswith("tracking=") for a in overrides):
        out.append(f"tracking={project.tracking}")
    return out


def with_project(overrides: Sequence[str]) -> List[str]:
    """``overrides`` plus :func:`project_overrides`; a ``hydra.searchpath=[...]`` of the user's is
    replaced by the merged one (Hydra keeps the first of two), so the project's folders stay."""
    extra = project_overrides(overrides)
    if any(_sets_searchpath(a) for a in extra):
        overrides = [a for a in overrides if not _sets_searchpath(a)]
    return [*overrides, *extra]
