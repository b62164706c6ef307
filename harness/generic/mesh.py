"""The ``mesh`` reader: what finite-element codes write (VTU, XDMF/HDF5, Gmsh, Exodus) through meshio.

``read_mesh(where, path, step)`` returns a :class:`MeshData` (points, cells by meshio type,
point and cell data) at one time step of a time series (XDMF) or of the file itself. Exodus
needs meshio's optional netCDF4 dependency (``pip install mechanics-harness[exodus]``).
As a reader of the generic case (``reader: mesh``), ``key`` picks ``points`` (n x 3),
``points_x``/``points_y``/``points_z``, a point-data name, or ``cell:<name>`` (cell data of the
supported cells, concatenated).
"""
from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np

from harness.core.context import HarnessInputError

log = logging.getLogger(__name__)
SUFFIXES = {".vtu": "mesh", ".vtk": "mesh", ".xdmf": "mesh", ".xmf": "mesh", ".msh": "mesh",
            ".exo": "mesh", ".e": "mesh"}


@dataclass
class MeshData:
    """Points (n, 3) in m, cells {meshio type: connectivity}, point and cell data by name."""

    points: np.ndarray
    cells: Dict[str, np.ndarray]
    point_data: Dict[str, np.ndarray] = field(default_factory=dict)
    cell_data: Dict[str, np.ndarray] = field(default_factory=dict)
    time: Optional[float] = None
    n_steps: int = 1

    def dimension(self) -> int:
        """2 when every cell is a surface cell in a plane z = const, else 3."""
        kinds3 = {"tetra", "tetra10", "hexahedron", "hexahedron20", "hexahedron27", "wedge", "pyramid"}
        return 3 if any(t in kinds3 for t in self.cells) else (2 if self.points.shape[1] < 3 or
                                                               np.ptp(self.points[:, 2]) == 0 else 3)


def _merge_cells(blocks) -> Dict[str, np.ndarray]:
    out: Dict[str, np.ndarray] = {}
    for block in blocks:
        out[block.type] = np.concatenate([out[block.type], block.data]) if block.type in out else np.asarray(block.data)
    return out


def _is_time_series(path: Path) -> bool:
    if path.suffix.lower() not in (".xdmf", ".xmf"):
        return False
    head = path.read_text(errors="replace")[:20000]
    return 'CollectionType="Temporal"' in head


@functools.lru_cache(maxsize=8)
def _read_cached(path: str, mtime: float, step: Optional[int]) -> MeshData:
    import meshio

    p = Path(path)
    if _is_time_series(p):
        with meshio.xdmf.TimeSeriesReader(str(p)) as reader:
            points, blocks = reader.read_points_cells()
            n = reader.num_steps
            if n == 0:
                return MeshData(np.asarray(points, float), _merge_cells(blocks), n_steps=0)
            k = n - 1 if step is None else step
            if not -n <= k < n:
                raise IndexError(f"time step {step} of {n} steps")
            t, pdata, cdata = reader.read_data(k % n)
        return MeshData(np.asarray(points, float), _merge_cells(blocks),
                        {k2: np.asarray(v, float) for k2, v in pdata.items()},
                        {k2: np.concatenate([np.asarray(b, float) for b in v]) for k2, v in cdata.items()},
                        float(t), n)
    mesh = meshio.read(str(p))
    if step not in (None, 0, -1):
        raise IndexError(f"time step {step}: {p.name} holds one step")
    cdata = {k2: np.concatenate([np.asarray(b, float) for b in v]) for k2, v in mesh.cell_data.items()
             if not k2.startswith("gmsh:")}
    return MeshData(np.asarray(mesh.points, float), _merge_cells(mesh.cells),
                    {k2: np.asarray(v, float) for k2, v in mesh.point_data.items()}, cdata)


def read_mesh(where: str, path: Path, step: Optional[int] = None) -> MeshData:
    """The mesh in ``path`` at time step ``step`` (default: the last). Errors name ``where``."""
    if not path.is_file():
        raise HarnessInputError(f"{where}.file: {path}: file not found")
    try:
        return _read_cached(str(path.resolve()), path.stat().st_mtime, step)
    except HarnessInputError:
        raise
    except IndexError as exc:
        raise HarnessInputError(f"{where}.step: {path}: {exc}") from None
    except ImportError as exc:  # Exodus without netCDF4
        raise HarnessInputError(f"{where}: {path}: needs an optional dependency ({exc}); "
                                "pip install 'mechanics-harness[exodus]'") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - meshio raises many kinds (and exits 1) for a bad file
        msg = str(exc).splitlines()[0] if str(exc) and not isinstance(exc, SystemExit) else type(exc).__name__
        if isinstance(exc, SystemExit):
            msg = f"meshio could not read it as {path.suffix.lstrip('.') or 'a known format'}"
        raise HarnessInputError(f"{where}: {path}: cannot be read as a mesh: {msg}") from None


def read(where: str, path: Path, key: Optional[str], *, step: Optional[int] = None, **_: Any) -> np.ndarray:
    """A reader of the generic case: ``key`` = points, points_x|y|z, a point-data name, cell:<name>."""
    mesh = read_mesh(where, path, step)
    if key is None:
        raise HarnessInputError(f"{where}.key: name what to read from {path.name}: points, points_x, points_y, "
                                f"points_z or a point-data name ({', '.join(mesh.point_data) or 'none'})")
    if key == "points":
        return mesh.points
    if key in ("points_x", "points_y", "points_z"):
        return mesh.points[:, "xyz".index(key[-1])]
    if key.startswith("cell:"):
        name = key[5:]
        if name not in mesh.cell_data:
            raise HarnessInputError(f"{where}.key: {path}: no cell data {name!r} "
                                    f"(cell data: {', '.join(mesh.cell_data) or 'none'})")
        return mesh.cell_data[name]
    if key not in mesh.point_data:
        raise HarnessInputError(f"{where}.key: {path}: no point data {key!r} "
                                f"(point data: {', '.join(mesh.point_data) or 'none'})")
    return mesh.point_data[key]
