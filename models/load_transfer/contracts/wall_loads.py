"""wall-loads v1.1 HDF5 file: writer and reader (``{case_id}.wall-loads.v1.h5``, seed 000).

The writer stores float64 SI arrays with the storage classes of ``schemas/wall-loads-v1.yaml``,
computes the derived datasets (trapezoidal ring impulse, normal force sum_i p_i A_i), writes to a
temporary file, sets ``complete = true`` only after every dataset is closed (the file is closed and
reopened for that), validates the temporary file against the spec and only then renames it onto
the final name. Any exception leaves neither the final nor the temporary file.

The reader accepts every 1.x version (1.0.x files have no shear and no temporal_interpolation
attribute: zero shear, piecewise-linear), rejects any other major version (explicit migration
required) and every violation of the spec, and keeps datasets it does not know (optional 1.x
additions) in :attr:`WallLoads.extras`, read only when asked for. CSV is a debug input only (:func:`read_wall_loads_csv`);
there is no CSV writer.
"""
from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

import h5py
import numpy as np

from ._atomic import atomic_target
from .lazy import LazyDatasets
from .relations import ring_force, trapezoid_impulse
from .spec import load_spec, parse_semver
from .validator import ContractError, validate_file

log = logging.getLogger(__name__)

SCHEMA = "wall-loads"
FIXED_ATTRS = {
    "units_system": "SI",
    "coordinate_system": "axisymmetric-rz",
    "pressure_convention": "gauge-positive-in-compression",
    "temporal_interpolation": "piecewise-linear",
}


@dataclass(frozen=True)
class WallLoads:
    """Content of a wall-loads file (SI). pressure, shear: (Nt, Nr) Pa ring averages."""

    case_id: str
    schema_version: str
    time: np.ndarray  # (Nt,) s
    radial_edges: np.ndarray  # (Nr+1,) m
    pressure: np.ndarray  # (Nt, Nr) Pa, gauge, positive in compression
    shear: np.ndarray  # (Nt, Nr) Pa, radial viscous traction (zeros for 1.0 files)
    impulse: np.ndarray  # (Nr,) Pa s, stored derived/impulse_pressure
    force: np.ndarray  # (Nt,) N, stored derived/force_normal
    metadata: Dict[str, Any]
    attrs: Dict[str, Any]
    configuration: Optional[str] = None
    configuration_name: Optional[str] = None
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)  # unknown datasets, read on access
    path: Optional[Path] = None
    sha256: Optional[str] = None

    @property
    def ring_areas(self) -> np.ndarray:
        return np.pi * (self.radial_edges[1:] ** 2 - self.radial_edges[:-1] ** 2)

    def history(self, unloaded_ends: bool = False):
        """The content as a :class:`models.load_transfer.sources.RingPressureHistory`."""
        from models.load_transfer.sources import RingPressureHistory

        return RingPressureHistory(time=self.time, radial_edges=self.radial_edges, pressure=self.pressure,
                                   shear=self.shear, unloaded_ends=unloaded_ends)


def sha256_file(path: Path | str, block: int = 2**22) -> str:
    """SHA-256 hex digest of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(block), b""):
            h.update(chunk)
    return h.hexdigest()


def _chunks_2d(shape: tuple, target_bytes: int = 2**20) -> tuple:
    nt, nr = shape
    cr = min(nr, max(1, target_bytes // 8))
    ct = min(nt, max(1, target_bytes // (8 * cr)))
    return (ct, cr)


def write_wall_loads(
    path: Path | str,
    *,
    case_id: str,
    time: Any,
    radial_edges: Any,
    pressure: Any,
    shear: Any = None,
    metadata: Optional[Mapping[str, Any]] = None,
    configuration: Optional[str] = None,
    configuration_name: str = "configuration.yaml",
    mode: str = "production",
    version: Optional[str] = None,
    extras: Optional[Mapping[str, Any]] = None,
) -> Path:
    """Write a wall-loads file atomically and return its path.

    path: the file (``*.h5``), or a directory (then ``{case_id}.wall-loads.v1.h5`` inside it).
    time (Nt,) s, radial_edges (Nr+1,) m, pressure and shear (Nt, Nr) Pa (shear None -> zeros in
    1.1; omitted in 1.0). metadata: the production metadata (see the spec); ``mode`` is stored in
    it. configuration: text of the original configuration file, stored in
    ``provenance/configuration`` with its SHA-256 (also set as metadata configuration_sha256 if
    absent). version: "1.1.0" (current) or "1.0.0". extras: optional additional datasets
    {path: array} (stored with the large storage class).
    Raises ContractError (nothing written) if the result would violate the spec: in production
    mode a missing metadata field is an error, in debug mode a logged warning.
    """
    spec = load_spec(SCHEMA)
    version = version or spec.version
    ver = parse_semver(version)
    if ver is None or ver[0] not in spec.accept_major:
        raise ValueError(f"version: {version!r} is not a {SCHEMA} 1.x version")
    target = Path(path)
    if target.is_dir() or not target.name.endswith(".h5"):
        target = target / spec.file_name(case_id)  # a directory (created if needed)
    t = np.asarray(time, dtype=np.float64)
    edges = np.asarray(radial_edges, dtype=np.float64)
    p = np.asarray(pressure, dtype=np.float64)
    tau = None
    if spec.applies(spec.datasets["fields/shear_radial"], ver):
        tau = np.zeros_like(p) if shear is None else np.asarray(shear, dtype=np.float64)
    elif shear is not None:
        raise ValueError(f"shear: not part of {SCHEMA} {version}; write version {spec.version}")
    meta = dict(metadata or {})
    meta["mode"] = mode
    if configuration is not None:
        meta.setdefault("configuration_sha256", hashlib.sha256(configuration.encode("utf-8")).hexdigest())
    derived = {}
    if p.ndim == 2 and t.ndim == 1 and edges.ndim == 1 and p.shape == (t.size, edges.size - 1):
        derived = {"derived/impulse_pressure": trapezoid_impulse(p, t), "derived/force_normal": ring_force(p, edges)}
    arrays: Dict[str, np.ndarray] = {"time": t, "coordinates/radial_edges": edges, "fields/pressure_gauge": p}
    if tau is not None:
        arrays["fields/shear_radial"] = tau
    arrays.update(derived)

    with atomic_target(target) as tmp:
        with h5py.File(tmp, "w") as f:
            f.attrs["schema_name"] = SCHEMA
            f.attrs["schema_version"] = version
            f.attrs["case_id"] = case_id
            f.attrs["complete"] = False
            for key, value in FIXED_ATTRS.items():
                if spec.applies(spec.attributes[key], ver):
                    f.attrs[key] = value
            f.attrs["metadata_json"] = json.dumps(meta, sort_keys=True)
            for g in spec.groups:
                f.require_group(g)
            for name, arr in arrays.items():
                item = spec.datasets[name]
                kw = spec.storage_kwargs(name)
                if arr.ndim == 2 and arr.size:
                    kw["chunks"] = _chunks_2d(arr.shape)
                elif arr.ndim == 1 and arr.size:
                    kw["chunks"] = (min(arr.size, 2**17),)
                f.create_dataset(name, data=arr, **kw).attrs["unit"] = item["unit"]
            for name, arr in (extras or {}).items():
                a = np.asarray(arr)
                f.create_dataset(name, data=a, **(spec.storage_kwargs("fields/pressure_gauge") if a.ndim else {}))
            if configuration is not None:
                ds = f.create_dataset("provenance/configuration", data=configuration, dtype=h5py.string_dtype("utf-8"))
                ds.attrs["filename"] = configuration_name
                ds.attrs["sha256"] = hashlib.sha256(configuration.encode("utf-8")).hexdigest()
        # every dataset is closed with the file; only now the file is marked complete
        with h5py.File(tmp, "r+") as f:
            f.attrs["complete"] = True
        report = validate_file(tmp, spec, mode=mode, guard=False)
        if not report.ok:
            report.file = str(target)
            raise ContractError(report)
    log.info("wrote %s (%s %s, Nt=%d, Nr=%d)", target, SCHEMA, version, t.size, edges.size - 1)
    return target


def read_wall_loads(path: Path | str, *, mode: Optional[str] = None) -> WallLoads:
    """Read and validate a wall-loads file; raise ContractError naming every violation.

    mode: None (the file's declared mode), "production" or "debug" (see validate_file).
    """
    p = Path(path)
    spec = load_spec(SCHEMA)
    report = validate_file(p, spec, mode=mode)
    if not report.ok:
        raise ContractError(report)
    with h5py.File(p, "r") as f:
        attrs = {k: (v.decode() if isinstance(v, bytes) else (v.item() if isinstance(v, np.generic) else v))
                 for k, v in f.attrs.items()}
        p_arr = f["fields/pressure_gauge"][()]
        shear = f["fields/shear_radial"][()] if "fields/shear_radial" in f else np.zeros_like(p_arr)
        conf = conf_name = None
        if "provenance/configuration" in f:
            ds = f["provenance/configuration"]
            raw = ds[()]
            conf = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
            conf_name = ds.attrs.get("filename")
        extras = LazyDatasets(p, report.unknown)
        out = WallLoads(
            case_id=str(attrs["case_id"]),
            schema_version=str(attrs["schema_version"]),
            time=f["time"][()],
            radial_edges=f["coordinates/radial_edges"][()],
            pressure=p_arr,
            shear=shear,
            impulse=f["derived/impulse_pressure"][()],
            force=f["derived/force_normal"][()],
            metadata=json.loads(attrs["metadata_json"]),
            attrs=attrs,
            configuration=conf,
            configuration_name=None if conf_name is None else str(conf_name),
            extras=extras,
            path=p,
            sha256=sha256_file(p),
        )
    if report.unknown:
        log.info("%s: kept %d optional dataset(s) unknown to this reader (read on access): %s", p,
                 len(report.unknown), report.unknown)
    return out


def read_wall_loads_csv(path: Path | str) -> WallLoads:
    """DEBUG input only: a long CSV with columns time, r_inner, r_outer, pressure_gauge[, shear_radial].

    One row per (time, ring); rings must be the same at every time. Never an exchange format:
    the result is marked mode=debug and has no production metadata.
    """
    import pandas as pd

    df = pd.read_csv(path)
    need = ["time", "r_inner", "r_outer", "pressure_gauge"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: columns {missing}: required (debug CSV: {need} [+ shear_radial])")
    df = df.sort_values(["time", "r_inner"], kind="stable")
    times = np.unique(df["time"].to_numpy(np.float64))
    nt = times.size
    if len(df) % nt:
        raise ValueError(f"{path}: rows: every time must list the same rings ({len(df)} rows, {nt} times)")
    nr = len(df) // nt
    r_in = df["r_inner"].to_numpy(np.float64).reshape(nt, nr)
    r_out = df["r_outer"].to_numpy(np.float64).reshape(nt, nr)
    if not (np.all(r_in == r_in[0]) and np.all(r_out == r_out[0]) and np.all(r_out[0, :-1] == r_in[0, 1:])):
        raise ValueError(f"{path}: r_inner/r_outer: rings must be contiguous and identical at every time")
    edges = np.concatenate([r_in[0, :1], r_out[0]])
    p = df["pressure_gauge"].to_numpy(np.float64).reshape(nt, nr)
    tau = df["shear_radial"].to_numpy(np.float64).reshape(nt, nr) if "shear_radial" in df else np.zeros_like(p)
    log.warning("%s: CSV wall loads accepted as DEBUG input only (not an exchange format)", path)
    return WallLoads(case_id=Path(path).stem, schema_version="csv-debug", time=times, radial_edges=edges,
                     pressure=p, shear=tau, impulse=trapezoid_impulse(p, times), force=ring_force(p, edges),
                     metadata={"mode": "debug"}, attrs={}, path=Path(path))


def load_history(path: str, mode: Optional[str] = None, unloaded_ends: bool = False):
    """Source factory (``_target_`` of conf/source/wall_loads_file.yaml): a RingPressureHistory.

    ``.h5`` files are read with :func:`read_wall_loads`; ``.csv`` only as debug input.
    """
    wl = read_wall_loads_csv(path) if str(path).lower().endswith(".csv") else read_wall_loads(path, mode=mode)
    return wl.history(unloaded_ends=unloaded_ends)
