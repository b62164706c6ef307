"""The case catalogue: every ``conf/case/**.yaml`` with its family, tags and description,
and every ``case/**.yaml`` of the user project's config directories (harness.core.project).

Read straight from the YAML files (no Hydra composition), so listing and selecting the
whole catalogue costs milliseconds. A suite (harness.suites) selects from it.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import yaml

from harness.core.compose import CONF_DIR, conf_dirs, shown_path, yaml_error_line
from harness.core.context import HarnessInputError

# The tags every case carries some of (case.tags); a suite may use others a case defines.
KNOWN_TAGS = ("fast", "analytic", "peer", "study", "bench", "slow", "kratos")

try:  # the C loader when PyYAML has it (ten times faster on 80 files)
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    _Loader = yaml.SafeLoader


@dataclass(frozen=True)
class CaseInfo:
    """One case file: ``name`` (FAMILY/NAME under conf/case), ``family``, ``tags``."""

    name: str
    family: str
    tags: Tuple[str, ...] = ()
    description: str = ""
    path: Path = field(default=Path(), compare=False)
    project: bool = False  # a case of the user's project (not shipped with the harness)


def _read(path: Path, root: Path, project: bool = False) -> CaseInfo:
    rel = path.relative_to(root)
    name = str(rel.with_suffix(""))
    shown = shown_path(path)
    try:
        with open(path) as fh:  # the stream's name makes the error name the file
            doc = yaml.load(fh, Loader=_Loader) or {}
    except yaml.YAMLError as exc:
        raise HarnessInputError(yaml_error_line(exc)) from exc
    case = doc.get("case") if isinstance(doc, dict) else None
    if not isinstance(case, dict):
        raise HarnessInputError(f"{shown}: case: missing (a case file defines case.name, family, tags)")
    tags = case.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
        raise HarnessInputError(f"{shown}: case.tags: must be a list of non-empty strings, got {tags!r}")
    family = str(case.get("family") or name.split("/")[0])
    return CaseInfo(name=name, family=family, tags=tuple(tags), description=str(case.get("description") or ""),
                    path=path, project=project)


def catalogue(conf_dir: Optional[Path] = None) -> List[CaseInfo]:
    """Every case of ``conf_dir/case`` (default: the shipped conf/ and the user project's
    config directories; a name defined twice is the first directory's, as Hydra finds it)."""
    dirs = [Path(conf_dir)] if conf_dir is not None else conf_dirs()
    found: Dict[str, CaseInfo] = {}
    for d in dirs:
        root = d / "case"
        if not root.is_dir():
            continue
        user = Path(d).resolve() != CONF_DIR.resolve()
        for p in root.rglob("*.yaml"):
            info = _read(p, root, project=user)
            found.setdefault(info.name, info)
    return sorted(found.values(), key=lambda c: c.name)


def matches(name: str, patterns: Sequence[str]) -> bool:
    """True if ``name`` equals or glob-matches one of ``patterns`` (``*`` spans ``/`` too)."""
    return any(name == p or fnmatch.fnmatchcase(name, p) for p in patterns)


def all_tags(cases: Sequence[CaseInfo]) -> Dict[str, int]:
    """Tag -> number of cases carrying it."""
    out: Dict[str, int] = {}
    for c in cases:
        for t in c.tags:
            out[t] = out.get(t, 0) + 1
    return dict(sorted(out.items()))
