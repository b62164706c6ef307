"""Loader of the machine-readable HDF5 specs in ``schemas/<name>-v<major>.yaml``."""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

import yaml

SPEC_FILES = {"wall-loads": "wall-loads-v1.yaml", "kratos-point-loads": "kratos-point-loads-v1.yaml"}
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
_DIM = re.compile(r"^\s*([A-Za-z_]\w*)?\s*(?:([+-])\s*(\d+))?\s*$")


def schemas_dir() -> Path:
    """Directory of the spec YAML files (``$HARNESS_SCHEMAS_DIR`` overrides)."""
    env = os.environ.get("HARNESS_SCHEMAS_DIR")
    if env:
        return Path(env)
    try:
        import schemas  # the specs package at the project root

        return Path(list(schemas.__path__)[0])
    except ImportError:  # pragma: no cover - running from an unusual location
        return Path(__file__).resolve().parents[3] / "schemas"


def parse_semver(text: Any) -> Optional[Tuple[int, int, int]]:
    """(major, minor, patch) of a ``MAJOR.MINOR.PATCH`` string, or None if it is not one."""
    if not isinstance(text, str):
        return None
    m = _SEMVER.match(text)
    return None if m is None else (int(m.group(1)), int(m.group(2)), int(m.group(3)))


def parse_dim(expr: Any) -> Tuple[Optional[str], int]:
    """A shape entry: ``"Nt"`` -> ("Nt", 0); ``"Nr+1"`` -> ("Nr", 1); ``3`` -> (None, 3)."""
    if isinstance(expr, int):
        return None, expr
    m = _DIM.match(str(expr))
    if m is None or (m.group(1) is None and m.group(3) is None):
        raise ValueError(f"spec shape entry {expr!r}: must be SYMBOL, SYMBOL+INT or INT")
    sym = m.group(1)
    off = int(m.group(3) or 0) * (-1 if m.group(2) == "-" else 1)
    if sym is None:
        return None, off
    return sym, off


@dataclass(frozen=True)
class Spec:
    """A loaded spec: the YAML document plus helpers. ``doc`` is the parsed mapping."""

    name: str
    path: Path
    doc: Mapping[str, Any]

    @property
    def version(self) -> str:
        return str(self.doc["version"])

    @property
    def accept_major(self) -> List[int]:
        return [int(v) for v in self.doc.get("accept_major", [parse_semver(self.version)[0]])]

    @property
    def attributes(self) -> Dict[str, Dict[str, Any]]:
        return dict(self.doc.get("attributes", {}))

    @property
    def datasets(self) -> Dict[str, Dict[str, Any]]:
        return dict(self.doc.get("datasets", {}))

    @property
    def groups(self) -> List[str]:
        return list(self.doc.get("groups", []))

    @property
    def storage(self) -> Dict[str, Dict[str, Any]]:
        return dict(self.doc.get("storage", {}))

    @property
    def dimensions(self) -> Dict[str, Dict[str, Any]]:
        return dict(self.doc.get("dimensions", {}))

    @property
    def metadata(self) -> Dict[str, Any]:
        return dict(self.doc.get("metadata", {}))

    def applies(self, item: Mapping[str, Any], version: Tuple[int, int, int]) -> bool:
        """True if an attribute/dataset with an optional ``since`` exists in ``version``."""
        since = item.get("since")
        return since is None or version >= parse_semver(str(since))

    def storage_kwargs(self, dataset: str) -> Dict[str, Any]:
        """h5py ``create_dataset`` filter keywords of the storage class of ``dataset``."""
        rule = self.storage.get(self.datasets[dataset].get("storage", ""), {})
        kw: Dict[str, Any] = {}
        if rule.get("compression"):
            kw["compression"] = rule["compression"]
        if rule.get("shuffle"):
            kw["shuffle"] = True
        if rule.get("fletcher32"):
            kw["fletcher32"] = True
        return kw

    def file_name(self, case_id: str) -> str:
        return f"{case_id}{self.doc['file_suffix']}"


@functools.lru_cache(maxsize=None)
def load_spec(name: str) -> Spec:
    """Load the spec ``name`` (``wall-loads`` or ``kratos-point-loads``)."""
    if name not in SPEC_FILES:
        raise KeyError(f"unknown schema {name!r}; known: {sorted(SPEC_FILES)}")
    path = schemas_dir() / SPEC_FILES[name]
    with open(path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    if doc.get("schema_name") != name:
        raise ValueError(f"{path}: schema_name {doc.get('schema_name')!r} != {name!r}")
    return Spec(name=name, path=path, doc=doc)
