"""kratos-point-loads v1 HDF5 file (``{case_id}.kratos-loads.v1.h5``): streaming writer and reader.

The writer streams loads/pressure_gauge (Nt, Nc) and loads/point_force (Nt, Nc, 3) over blocks of
time rows (bounded memory: one block at a time, never the whole (Nt, Nc, 3) array), computes
f_a = -p_a A_a n_a and diagnostics/target_force = -sum_a f_a . n_a from each written block, writes a
temporary file, marks ``complete = true`` after every dataset is closed, validates it against
``schemas/kratos-point-loads-v1.yaml`` and renames it atomically. ``before_commit`` may veto the
file (e.g. a mapping error above the gate): then nothing is left behind.
"""
from __future__ import annotations

import json
import logging
import time as _time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

import h5py
import numpy as np

from ._atomic import atomic_target
from .lazy import LazyDatasets
from .relations import normal_force, point_forces, ring_force
from .spec import load_spec
from .validator import ContractError, validate_file

log = logging.getLogger(__name__)

SCHEMA = "kratos-point-loads"
FIXED_ATTRS = {
    "units_system": "SI",
    "coordinate_system": "cartesian-xyz",
    "pressure_convention": "gauge-positive-in-compression",
    "force_convention": "point-force-newton-opposite-outward-normal",
    "load_variable": "POINT_LOAD",
    "temporal_interpolation": "piecewise-linear",
}
CHUNK_BYTES = 2**20
STREAMED = ("loads/pressure_gauge", "loads/point_force", "faces/force")  # checked in memory block by block when written


def chunk_rows(nt: int, row_items: int) -> int:
    """Time rows per chunk of an (Nt, Nc[, 3]) dataset: 16, or fewer for a short history."""
    return int(max(1, min(nt, 16)))


def large_chunks(shape: Sequence[int]) -> tuple:
    """Chunk shape of about 1 MiB: (ct, cc[, 3]) for (Nt, Nc[, 3]); ct time rows cover full chunks."""
    nt, nc = int(shape[0]), int(shape[1])
    tail = tuple(int(s) for s in shape[2:])
    per = int(np.prod(tail, dtype=np.int64)) if tail else 1
    ct = chunk_rows(nt, nc * per)
    cc = int(max(1, min(nc, CHUNK_BYTES // (8 * ct * per))))
    return (ct, cc) + tail


@dataclass
class KratosWriteStats:
    """What the writer measured: path, seconds per stage, the diagnostics it wrote."""

    path: Path
    target_force: np.ndarray
    source_force: np.ndarray
    seconds: Dict[str, float] = field(default_factory=dict)
    block_rows: int = 0


def write_kratos_loads(
    path: Path | str,
    *,
    case_id: str,
    time: Any,
    radial_edges: Any,
    source_pressure: Any,
    ids: Any,
    coordinates: Any,
    areas: Any,
    normals: Any,
    condition_pressure: Callable[[slice], np.ndarray],
    r_map: float,
    axis_origin: Sequence[float],
    mapping_method: str,
    source_schema_version: str,
    source_sha256: str,
    metadata: Optional[Mapping[str, Any]] = None,
    mode: str = "production",
    block_rows: Optional[int] = None,
    validate: str = "structure",
    before_commit: Optional[Callable[[np.ndarray, np.ndarray], None]] = None,
    faces: Optional[Mapping[str, Any]] = None,
    common_areas: Optional[Any] = None,
) -> KratosWriteStats:
    """Write a kratos-point-loads file by streaming time blocks; return the written diagnostics.

    path: the file (``*.h5``), or a directory (then ``{case_id}.kratos-loads.v1.h5``).
    time (Nt,) s, radial_edges (Nr+1,) m, source_pressure (Nt, Nr) Pa: the source history.
    ids (Nc,) int, coordinates (Nc, 3) m, areas (Nc,) m^2, normals (Nc, 3): the conditions.
    condition_pressure(rows) -> (len(rows), Nc) Pa: mapped pressure of a block of time rows.
    validate: "structure" (do not re-read the streamed loads/* datasets: the writer checks every
    block in memory and derives point_force and target_force from it) or "full". before_commit(target_force, source_force) may
    raise to veto the file (nothing is left on disk).
    faces: the optional face table (1.1) of the conservative export: ``vertices`` (Nf, Kv, 3) m,
    ``condition_index`` (Nf, Kc) and ``force(rows) -> (len(rows), Nf)`` N, the exact face integrals,
    streamed with the loads. common_areas (Nr,) m²: the faces' common area per ring (written
    source_force = P @ common_areas); default the rings inside disk(r_map).
    """
    spec = load_spec(SCHEMA)
    target = Path(path)
    if target.is_dir() or not target.name.endswith(".h5"):
        target = target / spec.file_name(case_id)  # a directory (created if needed)
    t = np.asarray(time, dtype=np.float64)
    edges = np.asarray(radial_edges, dtype=np.float64)
    P = np.asarray(source_pressure, dtype=np.float64)
    A = np.asarray(areas, dtype=np.float64)
    N = np.asarray(normals, dtype=np.float64)
    nt, nc = t.size, A.size
    ct = chunk_rows(nt, nc * 3)
    rows = block_rows or ct * max(1, int((32 * 2**20) // max(1, ct * nc * 3 * 8)))
    rows = max(ct, (rows // ct) * ct)
    meta = dict(metadata or {})
    meta["mode"] = mode
    secs: Dict[str, float] = {"compute": 0.0, "write": 0.0}
    # F_B on the common area: the disk of r_map, or (with a face table) the faces' coverage of it
    source_force = ring_force(P, edges, r_map) if common_areas is None else P @ np.asarray(common_areas, np.float64)
    target_force = np.empty(nt)
    with atomic_target(target) as tmp:
        with h5py.File(tmp, "w") as f:
            f.attrs["schema_name"] = SCHEMA
            f.attrs["schema_version"] = spec.version
            f.attrs["case_id"] = case_id
            f.attrs["complete"] = False
            for k, v in FIXED_ATTRS.items():
                f.attrs[k] = v
            f.attrs["mapping_method"] = mapping_method
            f.attrs["source_schema_version"] = source_schema_version
            f.attrs["source_sha256"] = source_sha256
            f.attrs["r_map"] = float(r_map)
            f.attrs["axis_origin_x"] = float(axis_origin[0])
            f.attrs["axis_origin_y"] = float(axis_origin[1])
            for g in spec.groups:
                f.require_group(g)

            def put(name: str, data: Any = None, shape=None, dtype="f8"):
                kw = spec.storage_kwargs(name)
                arr = None if data is None else np.asarray(data)
                shp = arr.shape if arr is not None else tuple(shape)
                if len(shp) >= 2:
                    kw["chunks"] = large_chunks(shp)
                elif len(shp) == 1 and shp[0]:
                    kw["chunks"] = (min(shp[0], 2**17),)
                if arr is not None:
                    ds = f.create_dataset(name, data=arr, **kw)
                else:
                    ds = f.create_dataset(name, shape=shp, dtype=dtype, **kw)
                ds.attrs["unit"] = spec.datasets[name]["unit"]
                return ds

            put("source/time", t)
            put("source/radial_edges", edges)
            put("source/pressure_gauge", P)
            put("conditions/ids", np.asarray(ids, dtype=np.int64))
            put("conditions/coordinates_initial", np.asarray(coordinates, dtype=np.float64))
            put("conditions/tributary_area", A)
            put("conditions/outward_normal", N)
            dp = put("loads/pressure_gauge", shape=(nt, nc))
            df = put("loads/point_force", shape=(nt, nc, 3))
            dff = None
            if faces is not None:
                f.require_group("faces")
                put("faces/vertices", np.asarray(faces["vertices"], dtype=np.float64))
                put("faces/condition_index", np.asarray(faces["condition_index"], dtype=np.int64))
                dff = put("faces/force", shape=(nt, int(np.shape(faces["vertices"])[0])))
            for s in range(0, nt, rows):
                sl = slice(s, min(nt, s + rows))
                c0 = _time.perf_counter()
                p = np.asarray(condition_pressure(sl), dtype=np.float64)
                if p.shape != (sl.stop - sl.start, nc):
                    raise ValueError(f"condition_pressure: block {sl} has shape {p.shape}, expected {(sl.stop - sl.start, nc)}")
                if not np.all(np.isfinite(p)):
                    raise ValueError(f"loads/pressure_gauge: non-finite mapped pressure in time rows {sl.start}..{sl.stop - 1}")
                fb = point_forces(p, A, N)
                target_force[sl] = normal_force(fb, N)
                c1 = _time.perf_counter()
                dp[sl] = p
                df[sl] = fb
                if dff is not None:  # the face integrals, checked against their conditions' loads in memory
                    ff = np.asarray(faces["force"](sl), dtype=np.float64)
                    split = (p * A)[:, faces["condition_index"]].sum(axis=-1)
                    scale = float(np.max(np.abs(ff), initial=0.0))
                    if not float(np.max(np.abs(split - ff), initial=0.0)) <= 1e-12 * scale:
                        raise ValueError(f"faces/force: the conditions of a face do not sum to its exact integral "
                                         f"(time rows {sl.start}..{sl.stop - 1})")
                    dff[sl] = ff
                secs["compute"] += c1 - c0
                secs["write"] += _time.perf_counter() - c1
            put("diagnostics/source_force", source_force)
            put("diagnostics/target_force", target_force)
            f.attrs["metadata_json"] = json.dumps(meta, sort_keys=True, default=float)
        with h5py.File(tmp, "r+") as f:  # all datasets closed: mark complete
            f.attrs["complete"] = True
        c0 = _time.perf_counter()
        streamed = () if validate == "full" else STREAMED
        report = validate_file(tmp, spec, mode=mode, skip_scan=streamed, guard=False)
        secs["validate"] = _time.perf_counter() - c0
        if not report.ok:
            report.file = str(target)
            raise ContractError(report)
        if before_commit is not None:
            before_commit(target_force, source_force)
    log.info("wrote %s (Nt=%d, Nc=%d, %d rows per block)", target, nt, nc, rows)
    return KratosWriteStats(path=target, target_force=target_force, source_force=source_force, seconds=secs,
                            block_rows=rows)


def read_kratos_loads(path: Path | str, *, mode: Optional[str] = None, load_large: bool = True) -> Dict[str, Any]:
    """Validate (fully) and read a kratos-point-loads file: {dataset path: array, "attrs": {...}}.

    load_large=False leaves loads/* out (read them by slices with h5py after validation).
    Datasets the spec does not know are never loaded: ``out["unknown"]`` maps their paths to a
    mapping that reads one when asked for.
    """
    spec = load_spec(SCHEMA)
    report = validate_file(path, spec, mode=mode)
    if not report.ok:
        raise ContractError(report)
    out: Dict[str, Any] = {}
    with h5py.File(path, "r") as f:
        out["attrs"] = {k: (v.decode() if isinstance(v, bytes) else (v.item() if isinstance(v, np.generic) else v))
                        for k, v in f.attrs.items()}
        for name in spec.datasets:
            if name in f and (load_large or not name.startswith("loads/")):
                out[name] = f[name][()]
    out["unknown"] = LazyDatasets(Path(path), report.unknown)
    out["metadata"] = json.loads(out["attrs"]["metadata_json"])
    return out
