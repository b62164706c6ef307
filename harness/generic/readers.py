"""Readers of model outputs and reference files: CSV columns, NPZ/NPY arrays, HDF5 datasets,
JSON values. Every reader returns float64 data; a missing file, column, array, dataset or
key is a :class:`HarnessInputError` naming the config key, the file and the key.
"""
from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from harness.core.context import HarnessInputError

SUFFIXES = {".csv": "csv", ".npz": "npz", ".npy": "npy", ".h5": "hdf5", ".hdf5": "hdf5", ".json": "json"}


def _numeric(where: str, path: Path, key: Optional[str], value: Any) -> np.ndarray:
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        what = f"{path}" + (f" [{key}]" if key else "")
        raise HarnessInputError(f"{where}: {what}: not numeric data") from None


def read_csv(where: str, path: Path, key: Optional[str], *, delimiter: str = ",") -> np.ndarray:
    """Column ``key`` of a CSV file with one header row (lines starting with ``#`` skipped)."""
    lines = [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise HarnessInputError(f"{where}: {path}: empty CSV file (a header row is required)")
    header = [h.strip() for h in next(csv.reader([lines[0]], delimiter=delimiter))]
    if key is None:
        raise HarnessInputError(f"{where}.key: the CSV column to read is required (columns: {', '.join(header)})")
    if key not in header:
        raise HarnessInputError(f"{where}.key: {path}: no column {key!r} (columns: {', '.join(header)})")
    try:
        data = np.loadtxt(io.StringIO("\n".join(lines[1:])), delimiter=delimiter, ndmin=2,
                          usecols=[header.index(key)], dtype=np.float64)
    except ValueError as exc:
        raise HarnessInputError(f"{where}: {path}: column {key!r} is not numeric: {exc}") from None
    return data[:, 0]


def read_npz(where: str, path: Path, key: Optional[str], **_: Any) -> np.ndarray:
    """Array ``key`` of an ``.npz`` archive (no pickles)."""
    with np.load(path, allow_pickle=False) as archive:
        names = list(archive.files)
        if key is None or key not in names:
            rule = "is required" if key is None else f"{key!r} not found"
            raise HarnessInputError(f"{where}.key: {path}: array {rule} (arrays: {', '.join(names)})")
        return _numeric(where, path, key, archive[key])


def read_npy(where: str, path: Path, key: Optional[str], **_: Any) -> np.ndarray:
    """The array of an ``.npy`` file (``key`` must be empty)."""
    if key is not None:
        raise HarnessInputError(f"{where}.key: an .npy file holds one array; remove key {key!r}")
    return _numeric(where, path, None, np.load(path, allow_pickle=False))


def read_hdf5(where: str, path: Path, key: Optional[str], **_: Any) -> np.ndarray:
    """Dataset at the path ``key`` inside an HDF5 file (e.g. ``results/u``)."""
    import h5py

    if key is None:
        raise HarnessInputError(f"{where}.key: the dataset path inside {path} is required")
    with h5py.File(path, "r") as fh:
        node = fh.get(key)
        if not isinstance(node, h5py.Dataset):
            found = "a group, not a dataset" if node is not None else "not found"
            raise HarnessInputError(f"{where}.key: {path}: dataset {key!r} {found}")
        return _numeric(where, path, key, node[()])


def read_json(where: str, path: Path, key: Optional[str], **_: Any) -> np.ndarray:
    """Value at the dotted path ``key`` of a JSON document (``a.b.0``; empty: the whole document)."""
    try:
        doc: Any = json.loads(path.read_text())
    except ValueError as exc:
        raise HarnessInputError(f"{where}: {path}: not valid JSON: {exc}") from None
    if key:
        for part in key.split("."):
            if isinstance(doc, dict) and part in doc:
                doc = doc[part]
            elif isinstance(doc, list) and part.lstrip("-").isdigit() and -len(doc) <= int(part) < len(doc):
                doc = doc[int(part)]
            else:
                raise HarnessInputError(f"{where}.key: {path}: JSON key {key!r} not found (at {part!r})")
    return _numeric(where, path, key, doc)


def read_mesh(where: str, path: Path, key: Optional[str], **kw: Any) -> np.ndarray:
    """Points or point/cell data of a mesh file (VTU, XDMF, Gmsh, Exodus): harness.generic.mesh."""
    from harness.generic import mesh

    return mesh.read(where, path, key, **kw)


READERS: Dict[str, Callable[..., np.ndarray]] = {
    "csv": read_csv, "npz": read_npz, "npy": read_npy, "hdf5": read_hdf5, "json": read_json, "mesh": read_mesh,
}
SUFFIXES.update({s: "mesh" for s in (".vtu", ".vtk", ".xdmf", ".xmf", ".msh", ".exo", ".e")})


def reader_for(where: str, reader: Optional[str], path: Path) -> str:
    """The reader name: the declared one (checked) or the one of the file's suffix."""
    if reader is None:
        reader = SUFFIXES.get(path.suffix.lower())
        if reader is None:
            raise HarnessInputError(f"{where}.reader: cannot tell the reader of {path.name!r} from its suffix; "
                                    f"declare one of {', '.join(READERS)}")
    if reader not in READERS:
        raise HarnessInputError(f"{where}.reader: unknown reader {reader!r} (known: {', '.join(READERS)}, "
                                "and returned for a callable model)")
    return reader


def read_file(where: str, reader: Optional[str], path: Path, key: Optional[str], *,
              delimiter: str = ",") -> np.ndarray:
    """Read ``key`` from ``path`` with ``reader`` (or the suffix's); errors name ``where``."""
    name = reader_for(where, reader, path)
    if not path.is_file():
        raise HarnessInputError(f"{where}.file: {path}: file not found")
    try:
        return READERS[name](where, path, key, delimiter=delimiter)
    except HarnessInputError:
        raise
    except (OSError, ValueError, KeyError, RuntimeError, EOFError, MemoryError, zipfile.BadZipFile) as exc:
        # a damaged or hostile file (truncated archive, broken HDF5, JSON nested past the recursion limit)
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        raise HarnessInputError(f"{where}: {path}: cannot be read as {name}: {reason}") from None


def parse_slice(where: str, text: Optional[str]) -> Optional[Tuple[Any, ...]]:
    """A numpy basic index from text: ``"1:"``, ``"-1"``, ``"::2"``, ``":, 0"``."""
    if text is None or str(text).strip() == "":
        return None
    out = []
    for part in str(text).split(","):
        part = part.strip()
        try:
            if ":" in part:
                bits = part.split(":")
                if len(bits) > 3:
                    raise ValueError
                out.append(slice(*(int(b) if b.strip() else None for b in bits)))
            else:
                out.append(int(part))
        except ValueError:
            raise HarnessInputError(f"{where}.slice: {text!r} is not a numpy index such as '1:', '-1', "
                                    "'::2' or ':, 0'") from None
    return tuple(out)


def apply_slice(where: str, data: np.ndarray, text: Optional[str]) -> np.ndarray:
    index = parse_slice(where, text)
    if index is None:
        return data
    try:
        return np.asarray(data)[index]
    except IndexError as exc:
        raise HarnessInputError(f"{where}.slice: {text!r} does not fit data of shape {np.shape(data)}: {exc}") from None
