"""The user's project: their own case, study and suite folders, found like pytest finds its rootdir.

Looked up from the launch directory upwards, the first of

* ``harness.yaml``                          (``cases: [verification]``, ``outputs: ...``)
* ``pyproject.toml`` with a ``[tool.harness]`` table (``cases = ["verification"]``)

is the project file; its directory is the project root (``${project_root:}``). Keys:

cases     list of directories (relative to the project root) holding ``case/``, ``study/``,
          ``suite/``, ``gate/``, ... like the shipped ``conf/``; they join Hydra's search path
outputs   the outputs directory (default ``<project root>/outputs``)
tracking  the default option of the ``tracking`` group (e.g. ``local``)

``$HARNESS_PROJECT`` (set by ``run_case(..., project=DIR)``) starts the search in DIR instead.
``--cases DIR`` on the command line (stored in ``$HARNESS_CASES``, so sweep jobs inherit it)
and ``$HARNESS_CASES`` (directories separated by ``os.pathsep``) name case directories without
a file; relative ones resolve against the launch directory (``$HARNESS_PROJECT`` when set: the
CLI sets it to the launch directory for its jobs, whatever their working directory). Without any
of these there is no user project and the harness behaves as in its own checkout.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from harness.core.context import HarnessInputError

ENV_CASES = "HARNESS_CASES"
ENV_PROJECT = "HARNESS_PROJECT"  # a directory to look for the project file from, instead of the launch directory
PROJECT_FILES = ("harness.yaml", "pyproject.toml")
KEYS = ("cases", "outputs", "tracking")


@dataclass(frozen=True)
class Project:
    """A user project: ``root`` [directory], ``case_dirs`` (absolute), where it was declared."""

    root: Path
    case_dirs: Tuple[Path, ...] = ()
    outputs: Optional[Path] = None
    tracking: Optional[str] = None
    source: str = ""  # the project file, or "$HARNESS_CASES"
    settings: Dict[str, Any] = field(default_factory=dict, compare=False)


def _read_table(path: Path) -> Optional[Dict[str, Any]]:
    """The harness settings of a project file, or None when it has none (pyproject without the table)."""
    if path.name == "harness.yaml":
        import yaml

        try:
            doc = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise HarnessInputError(f"{path}: not valid YAML: {_yaml_where(exc)}") from None
        if not isinstance(doc, dict):
            raise HarnessInputError(f"{path}: must be a mapping of {', '.join(KEYS)}")
        return doc
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise HarnessInputError(f"{path}: not valid TOML: {exc}") from None
    table = doc.get("tool", {}).get("harness")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise HarnessInputError(f"{path}: tool.harness: must be a table of {', '.join(KEYS)}")
    return table


def _yaml_where(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark else problem


def _dirs(where: str, value: Any, base: Path) -> List[Path]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
        raise HarnessInputError(f"{where}: must be a directory or a list of directories, got {value!r}")
    out = []
    for i, v in enumerate(items):
        d = (base / os.path.expanduser(v)).resolve()
        if not d.is_dir():
            raise HarnessInputError(f"{where}[{i}]: directory {v!r} not found (looked in {base})")
        out.append(d)
    return out


def _from_file(path: Path, table: Dict[str, Any]) -> Project:
    prefix = "tool.harness" if path.name == "pyproject.toml" else ""
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise HarnessInputError(f"{path}: {prefix + '.' if prefix else ''}{unknown[0]}: unknown key "
                                f"(keys: {', '.join(KEYS)})")
    root = path.parent.resolve()
    key = f"{path}: {prefix + '.' if prefix else ''}"
    cases = _dirs(key + "cases", table.get("cases", []), root)
    outputs = table.get("outputs")
    if outputs is not None and not (isinstance(outputs, str) and outputs):
        raise HarnessInputError(f"{key}outputs: must be a directory name, got {outputs!r}")
    tracking = table.get("tracking")
    if tracking is not None and not (isinstance(tracking, str) and tracking):
        raise HarnessInputError(f"{key}tracking: must be an option of the tracking group, got {tracking!r}")
    return Project(root=root, case_dirs=tuple(cases),
                   outputs=(root / os.path.expanduser(outputs)).resolve() if outputs else None,
                   tracking=tracking, source=str(path), settings=dict(table))


def _launch_dir(start: Optional[Path] = None) -> Path:
    """Where the project is seen from: ``$HARNESS_PROJECT``, else ``start``, else the working directory."""
    return Path(os.environ.get(ENV_PROJECT) or start or os.getcwd()).resolve()


def pin_for_jobs() -> Dict[str, Optional[str]]:
    """Fix the project seen from the launch directory for every job of this command, whatever
    their working directory (``hydra.job.chdir=true``, launcher workers): ``$HARNESS_PROJECT`` =
    the launch directory (unless set) and ``$HARNESS_CASES`` absolute. Returns the previous
    values, for :func:`unpin`."""
    old = {k: os.environ.get(k) for k in (ENV_PROJECT, ENV_CASES)}
    base = _launch_dir()
    os.environ[ENV_PROJECT] = str(base)
    if old[ENV_CASES]:
        given = [p for p in old[ENV_CASES].split(os.pathsep) if p]
        os.environ[ENV_CASES] = os.pathsep.join(  # a missing one stays as given, for its error line
            str((base / os.path.expanduser(p)).resolve()) if (base / os.path.expanduser(p)).is_dir() else p
            for p in given)
    return old


def unpin(old: Dict[str, Optional[str]]) -> None:
    """Restore the environment :func:`pin_for_jobs` changed."""
    for key, value in old.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def find_file(start: Optional[Path] = None) -> Optional[Tuple[Path, Dict[str, Any]]]:
    """The nearest project file from ``$HARNESS_PROJECT``, else ``start`` (default: the launch
    directory), upwards."""
    d = _launch_dir(start)
    for folder in (d, *d.parents):
        for name in PROJECT_FILES:
            path = folder / name
            if path.is_file():
                table = _read_table(path)
                if table is not None:
                    return path, table
    return None


def find_project(start: Optional[Path] = None) -> Optional[Project]:
    """The user project seen from ``start`` (see the module docstring), or None."""
    found = find_file(start)
    project = _from_file(*found) if found else None
    env = os.environ.get(ENV_CASES, "")
    if env:
        base = _launch_dir(start)
        extra = _dirs(f"${ENV_CASES}", [p for p in env.split(os.pathsep) if p], base)
        if project is None:
            project = Project(root=base, source=f"${ENV_CASES}")
        dirs = list(project.case_dirs) + [d for d in extra if d not in project.case_dirs]
        project = Project(root=project.root, case_dirs=tuple(dirs), outputs=project.outputs,
                          tracking=project.tracking, source=project.source, settings=project.settings)
    return project


def project_root(start: Optional[Path] = None) -> Path:
    """``${project_root:}``: the folder of the project file, else the launch directory."""
    found = find_file(start)
    return found[0].parent.resolve() if found else _launch_dir(start)


def case_dirs(start: Optional[Path] = None) -> Tuple[Path, ...]:
    """The user's config directories (empty without a project)."""
    project = find_project(start)
    return project.case_dirs if project else ()


def searchpath_override(dirs: Tuple[Path, ...], extra: Sequence[str] = ()) -> Optional[str]:
    """The Hydra override that puts ``dirs`` on the config search path after the shipped conf/,
    then the entries ``extra`` (a user's own ``hydra.searchpath``) not already there."""
    if not dirs:
        return None
    entries = [f"file://{d}" for d in dirs]
    entries += [e for e in extra if e not in entries]
    return "hydra.searchpath=[" + ",".join(f"'{e}'" for e in entries) + "]"
