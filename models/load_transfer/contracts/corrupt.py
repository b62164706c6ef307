"""Generators of every bad-file kind of the wall-loads contract (for tests and the bad-files case).

Each kind copies a valid file and breaks exactly one rule with h5py (values are rewritten through
the filter pipeline, so checksums stay valid unless the kind is ``checksum``). ``BAD_KINDS`` maps
the kind to the (path, rule) the validator must report; the tests check the full messages.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable, Dict, Tuple

import h5py
import numpy as np


def flip_chunk_byte(path: Path | str, dataset: str, chunk: int = 0) -> None:
    """Corrupt one stored byte in the middle of chunk ``chunk`` of ``dataset`` (raw file edit)."""
    with h5py.File(path, "r") as f:
        info = f[dataset].id.get_chunk_info(chunk)
    pos = info.byte_offset + info.size // 2
    with open(path, "r+b") as fh:
        fh.seek(pos)
        b = fh.read(1)
        fh.seek(pos)
        fh.write(bytes([b[0] ^ 0xFF]))


def _set_attr(name: str, value) -> Callable[[h5py.File], None]:
    def mut(f: h5py.File) -> None:
        f.attrs[name] = value

    return mut


def _edit(name: str, fn: Callable[[np.ndarray], None]) -> Callable[[h5py.File], None]:
    def mut(f: h5py.File) -> None:
        a = f[name][()]
        fn(a)
        f[name][...] = a

    return mut


def _set_index(idx, value):
    def fn(a: np.ndarray) -> None:
        a[idx] = value if not callable(value) else value(a)

    return fn


def _replace(name: str, make: Callable[[np.ndarray], np.ndarray]) -> Callable[[h5py.File], None]:
    def mut(f: h5py.File) -> None:
        old = f[name]
        attrs = dict(old.attrs)
        data = make(old[()])
        kw = dict(compression=old.compression, shuffle=old.shuffle, fletcher32=old.fletcher32)
        del f[name]
        new = f.create_dataset(name, data=data, **kw)
        for k, v in attrs.items():
            new.attrs[k] = v

    return mut


def _drop_metadata(key: str) -> Callable[[h5py.File], None]:
    def mut(f: h5py.File) -> None:
        meta = json.loads(f.attrs["metadata_json"])
        meta.pop(key)
        f.attrs["metadata_json"] = json.dumps(meta, sort_keys=True)

    return mut


def _delete(name: str) -> Callable[[h5py.File], None]:
    def mut(f: h5py.File) -> None:
        del f[name]

    return mut


def _edit_config(f: h5py.File) -> None:
    ds = f["provenance/configuration"]
    attrs = dict(ds.attrs)
    text = ds[()].decode("utf-8") + "# edited after the run\n"
    del f["provenance/configuration"]
    new = f.create_dataset("provenance/configuration", data=text, dtype=h5py.string_dtype("utf-8"))
    for k, v in attrs.items():
        new.attrs[k] = v


# kind -> (mutation, (path, rule) reported first)
BAD_KINDS: Dict[str, Tuple[Callable[[h5py.File], None], Tuple[str, str]]] = {
    "incomplete": (_set_attr("complete", False), ("@complete", "equals")),
    "major_version": (_set_attr("schema_version", "2.0.0"), ("@schema_version", "major_version")),
    "time_not_monotonic": (_edit("time", _set_index(3, lambda a: a[2])), ("time", "strictly_increasing")),
    "edges_not_increasing": (_edit("coordinates/radial_edges", _set_index(2, lambda a: a[1])),
                             ("coordinates/radial_edges", "strictly_increasing")),
    "edges_negative": (_edit("coordinates/radial_edges", _set_index(0, -1.0e-3)),
                       ("coordinates/radial_edges", "nonnegative")),
    "shape_mismatch": (_replace("fields/shear_radial", lambda a: np.zeros((a.shape[0], a.shape[1] + 1))),
                       ("fields/shear_radial", "shape")),
    "nan": (_edit("fields/pressure_gauge", _set_index((1, 2), np.nan)), ("fields/pressure_gauge", "finite")),
    "inf": (_edit("fields/pressure_gauge", _set_index((2, 3), np.inf)), ("fields/pressure_gauge", "finite")),
    "wrong_unit": (lambda f: f["fields/pressure_gauge"].attrs.__setitem__("unit", "bar"),
                   ("fields/pressure_gauge@unit", "unit")),
    "wrong_units_system": (_set_attr("units_system", "CGS"), ("@units_system", "equals")),
    "wrong_convention": (_set_attr("pressure_convention", "absolute"), ("@pressure_convention", "equals")),
    "wrong_coordinate_system": (_set_attr("coordinate_system", "cartesian-xyz"), ("@coordinate_system", "equals")),
    "derived_force_mismatch": (_edit("derived/force_normal", lambda a: a.__imul__(1.0 + 1.0e-6)),
                               ("derived/force_normal", "derived")),
    "derived_impulse_mismatch": (_edit("derived/impulse_pressure", _set_index(0, lambda a: a[0] + 1.0)),
                                 ("derived/impulse_pressure", "derived")),
    "missing_metadata": (_drop_metadata("R0"), ("@metadata_json.R0", "required_in_production")),
    "configuration_edited": (_edit_config, ("provenance/configuration", "sha256")),
    "missing_dataset": (_delete("derived/force_normal"), ("derived/force_normal", "required")),
    "wrong_dtype": (_replace("fields/pressure_gauge", lambda a: a.astype(np.float32)), ("fields/pressure_gauge", "dtype")),
    "checksum": (None, ("fields/pressure_gauge", "checksum")),  # raw byte flip, see make_bad_file
}


def make_bad_file(valid: Path | str, out: Path | str, kind: str) -> Path:
    """Copy the valid file ``valid`` to ``out`` and break it the way ``kind`` says."""
    if kind not in BAD_KINDS:
        raise KeyError(f"kind: {kind!r} is not one of {sorted(BAD_KINDS)}")
    out = Path(out)
    shutil.copyfile(valid, out)
    mutate, _ = BAD_KINDS[kind]
    if kind == "checksum":
        flip_chunk_byte(out, "fields/pressure_gauge")
    else:
        with h5py.File(out, "r+") as f:
            mutate(f)
    return out
