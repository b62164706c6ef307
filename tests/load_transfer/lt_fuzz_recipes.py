"""Recipes of malformed HDF5 contract files for the property-based tests (issue 32), and the rule.

A recipe is a JSON-able dict applied to a copy of a valid seed file, so a failing input found by
hypothesis can be kept as one line of the regression corpus (tests/data/bad_inputs/corpus.json):

- ``{"op": "flip", "pos": P, "bit": B}``: flip bit B of byte P (P taken modulo the file size);
- ``{"op": "zero", "pos": P, "n": N}``: zero N bytes from P;
- ``{"op": "attr", "obj": "/" or a dataset, "name": A, "value": V, "as_array": bool}``: set an attribute;
- ``{"op": "dataset", "name": D, "shape": [...], "dtype": T, "write": bool, "filters": bool}``: replace
  (or add) a dataset with another shape/dtype, written with zeros or only declared, with the old
  dataset's filters (checksum, compression) when ``filters`` is true;
- ``{"op": "many", "ops": [recipe, ...]}``: several recipes in turn;
- ``{"op": "edit", "name": D, "how": "zeros" | "add" | "nan" | "negate", "value": X}``: rewrite the values
  of D in place (shape, dtype and filters kept, so the checksums stay valid): all zeros, X added,
  the first element NaN, every value negated;
- ``{"op": "metadata", "text": S}``: replace metadata_json by S;
- ``{"op": "delete", "name": D}``: delete a dataset or an attribute (``@name``).

The rule (:func:`check_rule`): ``harness-validate`` returns 0, 1 or 2 and never raises; every line
it prints names the file; 0 means the reader accepts the file, 1 that the reader raises
ContractError, 2 that it raises UnreadableFileError ("unreadable: FILE: reason").
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "bad_inputs" / "corpus.json"
SEED_ARGS = ["D", "--case-id", "seed", "--n-rings", "8", "--n-outputs", "9"]
META = dict(basilisk_commit="b", exporter_commit="e", compiler="c", command="cmd", R0=1e-3, H=2e-3, gamma=1.4,
            reference_pressure=1e5, levels=[3, 9], delta_min=1e-5, output_cadence=1e-6, convergence_study_id="s")


def make_wall_loads_seed(directory: Path) -> Path:
    """The issue's seed file: ``python -m models.load_transfer.extraction D --case-id seed ...``."""
    subprocess.run([sys.executable, "-m", "models.load_transfer.extraction", *SEED_ARGS], cwd=directory,
                   check=True, capture_output=True)
    return directory / "D" / "seed.wall-loads.v1.h5"


def make_kratos_seed(directory: Path) -> Path:
    """A conservative kratos-point-loads 1.1 file with a face table (4 faces)."""
    from models.load_transfer.contracts.wall_loads import write_wall_loads
    from models.load_transfer.export import export_kratos_loads
    from models.load_transfer.face_loads import axisymmetric_face_table

    R = 0.01
    e = R * np.sqrt(np.linspace(0.0, 1.0, 6))
    t = np.linspace(0.0, 1e-4, 7)
    p = np.outer(np.interp(t, [0.0, 3e-5, 1e-4], [0.0, 1.0, 0.0]), 1e5 * (1 - (e[1:] / R) ** 2))
    src = write_wall_loads(directory / "src.wall-loads.v1.h5", case_id="src", time=t, radial_edges=e, pressure=p,
                           metadata=META, configuration="c: 1\n")
    table, ft = axisymmetric_face_table(np.linspace(0.0, R, 5), 0.02)
    res = export_kratos_loads(src, table, np.linspace(1e-6, 9e-5, 9), directory / "out", faces=ft,
                              metadata={"exporter_commit": "x", "command": "t"})
    return res.path


def _text(v: str) -> Any:
    """A string attribute; one with NUL characters as fixed-length bytes (HDF5 variable-length strings
    cannot hold NUL)."""
    return np.bytes_(v.encode("utf-8")) if "\x00" in v else v


def _value(v: Any, as_array: bool) -> Any:
    if isinstance(v, str) and "\x00" in v:
        v = v.replace("\x00", "\\0") if as_array else v
        if not as_array:
            return _text(v)
    if as_array:
        if isinstance(v, str):
            return np.array([v, v], dtype=h5py.string_dtype())
        return np.array([v, v])
    return v


def apply_recipe(seed: Path, out: Path, recipe: Dict[str, Any]) -> Path:
    """Copy ``seed`` to ``out`` and apply ``recipe`` (see the module docstring)."""
    op = recipe["op"]
    if op == "many":
        out.write_bytes(seed.read_bytes())
        tmp = out.with_name(out.name + ".step")
        for step in recipe["ops"]:
            apply_recipe(out, tmp, step)
            tmp.replace(out)
        return out
    data = bytearray(seed.read_bytes())
    if op in ("flip", "zero"):
        pos = int(recipe["pos"]) % len(data)
        if op == "flip":
            data[pos] ^= 1 << int(recipe["bit"])
        else:
            n = min(int(recipe["n"]), len(data) - pos)
            data[pos:pos + n] = bytes(n)
        out.write_bytes(bytes(data))
        return out
    out.write_bytes(bytes(data))
    with h5py.File(out, "r+") as f:
        if op == "attr":
            obj = f if recipe["obj"] == "/" else f[recipe["obj"]]
            obj.attrs[recipe["name"]] = _value(recipe["value"], bool(recipe.get("as_array")))
        elif op == "edit":
            ds = f.get(recipe["name"])  # a dataset the file does not have: nothing to edit
            if isinstance(ds, h5py.Dataset) and h5py.check_string_dtype(ds.dtype) is None and ds.size:
                a = ds[()]
                how = recipe["how"]
                if how == "zeros":
                    a = np.zeros_like(a)
                elif how == "add":
                    a = a + np.asarray(recipe.get("value", 1)).astype(a.dtype)
                elif how == "nan" and a.dtype.kind == "f":
                    a.flat[0] = np.nan
                elif how == "negate":
                    a = -a
                ds[...] = a
        elif op == "metadata":
            f.attrs["metadata_json"] = _text(recipe["text"])
        elif op == "delete":
            name = recipe["name"]
            if name.startswith("@"):
                if name[1:] in f.attrs:
                    del f.attrs[name[1:]]
            elif name in f:
                del f[name]
        elif op == "dataset":
            name = recipe["name"]
            attrs = dict(f[name].attrs) if name in f else {}
            kw: Dict[str, Any] = {}
            if name in f and recipe.get("filters") and isinstance(f[name], h5py.Dataset):
                old = f[name]
                kw = dict(compression=old.compression, shuffle=old.shuffle, fletcher32=old.fletcher32)
            if name in f:
                del f[name]
            shape = tuple(int(s) for s in recipe["shape"])
            dtype = np.dtype(recipe["dtype"])
            chunks = tuple(max(1, min(s, 1024)) for s in shape) if shape and all(shape) else None
            if chunks is None and shape:
                chunks = tuple(max(1, s) for s in shape)  # an empty dataset: filters need chunks
            if not shape:
                kw, chunks = {}, None
            ds = f.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks, maxshape=None if all(shape) else
                                  tuple(None for _ in shape), **kw)
            if recipe.get("write") and 0 < int(np.prod(shape, dtype=np.float64)) <= 10**5:
                ds[...] = np.zeros(shape, dtype)
            ds.attrs.update(attrs)
        else:
            raise ValueError(f"recipe op {op!r}")
    return out


def check_rule(path: Path, schema: str) -> int:
    """Assert the bad-input rule for ``path`` (see the module docstring) and return the exit code."""
    import contextlib
    import io

    from harness.tools.validate import main
    from models.load_transfer.contracts import ContractError, UnreadableFileError

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(path)])
    lines = [ln for ln in (out.getvalue() + err.getvalue()).splitlines() if ln]
    assert code in (0, 1, 2), code
    assert lines, "harness-validate printed nothing"
    for ln in lines:
        assert ln.startswith(f"{path}: ") or ln.startswith(f"unreadable: {path}: "), ln
        assert "Traceback" not in ln
    if schema == "wall-loads":
        from models.load_transfer.contracts.wall_loads import read_wall_loads as read
    else:
        from models.load_transfer.contracts.kratos_loads import read_kratos_loads as read
    if code == 0:
        assert lines[-1].startswith(f"{path}: valid "), lines
        read(path)  # accepted by the validator: the reader reads it (unknown datasets are not loaded)
    elif code == 1:
        try:
            read(path)
        except ContractError as exc:
            assert str(exc).startswith(f"{path}: invalid "), str(exc)
        else:  # pragma: no cover - the assertion message is the point
            raise AssertionError(f"{path}: violations reported but the reader accepted it: {lines}")
    else:
        assert len(lines) == 1 and lines[0].startswith(f"unreadable: {path}: "), lines
        try:
            read(path)
        except UnreadableFileError:
            pass
        else:  # pragma: no cover
            raise AssertionError(f"{path}: unreadable for the validator but read by the reader")
    return code


def load_corpus() -> List[Dict[str, Any]]:
    """The kept inputs: [{"id", "schema", "recipe", "exit_code", "found": what main did}]."""
    return json.loads(CORPUS.read_text())["inputs"]


def seed_digests() -> Dict[str, str]:
    """SHA-256 of the seed files the corpus's byte offsets refer to (schema -> digest)."""
    return json.loads(CORPUS.read_text())["seed_sha256"]
