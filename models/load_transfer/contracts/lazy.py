"""A read-only mapping of HDF5 datasets that reads a dataset only when it is asked for.

The readers keep the datasets a file holds beyond its spec (optional additions of a newer minor
version) as such a mapping: an unknown dataset declared (10^6, 10^6) costs nothing until a caller
reads it, so a valid file is never refused for the size of data the reader does not use.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterator, Mapping, Sequence, Tuple

import h5py
import numpy as np


class LazyDatasets(Mapping[str, np.ndarray]):
    """{dataset path: array} over ``names`` of the HDF5 file ``path``; each read on first access."""

    def __init__(self, path: Path, names: Sequence[str]):
        self._path = Path(path)
        self._names = list(names)
        self._cache: Dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._cache:
            with h5py.File(self._path, "r") as f:
                self._cache[name] = f[name][()]
        return self._cache[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def shape(self, name: str) -> Tuple[int, ...]:
        """Shape of ``name`` without reading its data."""
        with h5py.File(self._path, "r") as f:
            return tuple(f[name].shape)

    def __repr__(self) -> str:
        return f"LazyDatasets({str(self._path)!r}, {self._names!r})"
