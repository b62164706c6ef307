"""The case catalogue: every ``conf/case/**.yaml`` with its family, tags and description.

Read straight from the YAML files (no Hydra composition), so listing and selecting the
whole catalogue costs milliseconds. A suite (harness.suites) selects from it.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import yaml

from harness.core.compose import CONF_DIR
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


def _read(path: Path, root: Path) -> CaseInfo:
    rel = path.relative_to(root)
    name = str(rel.with_suffix(""))
    try:
        doc = yaml.load(path.read_text(), Loader=_Loader) or {}
    except yaml.YAMLError as exc:
        raise HarnessInputError(f"conf/case/{rel}: not valid YAML: {str(exc).splitlines()[0]}") from exc
    case = doc.get("case") if isinstance(doc, dict) else None
    if not isinstance(case, dict):
        raise HarnessInputError(f"conf/case/{rel}: case: missing (a case file defines case.name, family, tags)")
    tags = case.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
        raise HarnessInputError(f"conf/case/{rel}: case.tags: must be a list of non-empty strings, got {tags!r}")
    family = str(case.get("family") or name.split("/")[0])
    return CaseInfo(name=name, family=family, tags=tuple(tags), description=str(case.get("description") or ""),
                    path=path)


def catalogue(conf_dir: Path = CONF_DIR) -> List[CaseInfo]:
    """Every case of ``conf_dir/case``, sorted by name."""
    root = Path(conf_dir) / "case"
    return sorted((_read(p, root) for p in root.rglob("*.yaml")), key=lambda c: c.name)


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
