"""Issue 32: every malformed wall-loads / kratos-point-loads file the fuzzer found is a clean rejection.

Each example is the project's own seed file (``python -m models.load_transfer.extraction D --case-id
seed --n-rings 8 --n-outputs 9``) edited with h5py or byte by byte; the test checks the exit code of
``harness-validate`` (0 valid, 1 violations, 2 unreadable) and its one line.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from harness.tools.validate import main as validate_main
from tests.load_transfer.lt_fuzz_recipes import make_kratos_seed

SEED_ARGS = ["D", "--case-id", "seed", "--n-rings", "8", "--n-outputs", "9"]


@pytest.fixture(scope="module")
def seed(tmp_path_factory) -> Path:
    """The seed file, written by the extraction CLI exactly as the issue reproduces it."""
    d = tmp_path_factory.mktemp("seed")
    subprocess.run([sys.executable, "-m", "models.load_transfer.extraction", *SEED_ARGS], cwd=d, check=True,
                   capture_output=True)
    return d / "D" / "seed.wall-loads.v1.h5"


def _copy(seed: Path, tmp_path: Path, name: str = "m.h5") -> Path:
    out = tmp_path / name
    out.write_bytes(seed.read_bytes())
    return out


def _validate(capsys, path: Path):
    code = validate_main([str(path)])
    cap = capsys.readouterr()
    return code, (cap.out + cap.err).strip().splitlines()


def test_seed_file_is_valid(seed, capsys):
    code, lines = _validate(capsys, seed)
    assert code == 0 and lines == [f"{seed}: valid wall-loads 1.1.0 (production; Nt=9, Nr=8)"]


def test_flipped_byte_in_hdf5_internals_is_unreadable_not_a_traceback(seed, tmp_path, capsys):
    bad = _copy(seed, tmp_path)
    b = bytearray(bad.read_bytes())
    b[19139] ^= 0x80
    bad.write_bytes(bytes(b))
    code, lines = _validate(capsys, bad)
    assert code == 2 and len(lines) == 1
    assert lines[0].startswith(f"unreadable: {bad}: ") and "Traceback" not in lines[0]


def test_zeroed_attribute_heap_is_unreadable_within_the_time_limit(seed, tmp_path):
    """HDF5 spins forever reading the root attributes of this file: the probe's limit bounds it."""
    bad = _copy(seed, tmp_path)
    b = bytearray(bad.read_bytes())
    b[2184:2328] = bytes(144)
    bad.write_bytes(bytes(b))
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness.validate", str(bad)], capture_output=True, text=True,
                          timeout=60, env={**__import__("os").environ, "HARNESS_HDF5_PROBE_TIMEOUT_S": "2"})
    elapsed = time.monotonic() - t0
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (f"unreadable: {bad}: HDF5 did not finish reading the file's headers within 2 s "
                                   "(damaged internals)")
    assert elapsed < 30  # the limit (2 s) plus interpreter start-up, not an endless spin


@pytest.mark.parametrize("where, expected", [
    (("root", "schema_name"), "@schema_name: known_schema: found array of shape (2,); expected one of "
                              "['kratos-point-loads', 'wall-loads']"),
    (("root", "case_id"), "@case_id: type: found array of shape (2,); expected string"),
    (("fields/pressure_gauge", "unit"), "fields/pressure_gauge@unit: type: found array of shape (2,) "
                                        "array(['Pa', 'Pa'], dtype=object); expected string 'Pa'"),
])
def test_attribute_stored_as_an_array_is_a_violation_naming_it(seed, tmp_path, capsys, where, expected):
    bad = _copy(seed, tmp_path)
    obj, name = where
    with h5py.File(bad, "r+") as f:
        target = f if obj == "root" else f[obj]
        old = target.attrs[name]
        old = old.decode() if isinstance(old, bytes) else str(old)
        target.attrs[name] = np.array([old, old], dtype=h5py.string_dtype())
    code, lines = _validate(capsys, bad)
    assert code == 1 and lines[0] == f"{bad}: {expected}"


@pytest.mark.parametrize("text, found", [("[1, 2]", "JSON list [1, 2]"), ("null", "JSON null None"),
                                         ('"x"', "JSON string 'x'")])
def test_metadata_json_must_be_an_object(seed, tmp_path, capsys, text, found):
    bad = _copy(seed, tmp_path)
    with h5py.File(bad, "r+") as f:
        f.attrs["metadata_json"] = text
    code, lines = _validate(capsys, bad)
    assert code == 1
    assert f"{bad}: @metadata_json: format: found {found}; expected JSON object" in lines


def test_empty_datasets_are_violations_not_a_crash(seed, tmp_path, capsys):
    bad = _copy(seed, tmp_path)
    with h5py.File(bad, "r+") as f:
        for name in ("time", "fields/pressure_gauge", "fields/shear_radial", "derived/force_normal"):
            old = f[name]
            shape, attrs = (0,) + old.shape[1:], dict(old.attrs)
            del f[name]
            new = f.create_dataset(name, shape=shape, dtype="f8")
            new.attrs.update(attrs)
    code, lines = _validate(capsys, bad)
    assert code == 1
    assert f"{bad}: dimension Nt: min: found 0; expected >= 2" in lines


def test_declared_never_written_dataset_is_refused_from_its_shape(seed, tmp_path, capsys):
    """time declared (2^30,) and never written: 8 GiB the validator must not read."""
    bad = _copy(seed, tmp_path)
    with h5py.File(bad, "r+") as f:
        attrs = dict(f["time"].attrs)
        del f["time"]
        f.create_dataset("time", shape=(2**30,), dtype="f8", chunks=(2**17,), fletcher32=True).attrs.update(attrs)
    t0 = time.monotonic()
    code, lines = _validate(capsys, bad)
    assert code == 1 and time.monotonic() - t0 < 20
    assert f"{bad}: time: stored: found no data stored for shape (1073741824,); expected written data" in lines


def test_size_limit_refuses_a_whole_read_before_it_happens(seed, tmp_path, capsys, monkeypatch):
    import models.load_transfer.contracts.validator as validator

    monkeypatch.setattr(validator, "MAX_READ_BYTES", 64)  # time (9 float64 = 72 bytes) is read whole
    code, lines = _validate(capsys, seed)
    assert code == 1
    assert f"{seed}: time: size: found 72 bytes for shape (9,); expected <= 64 bytes read whole " \
           "(HARNESS_MAX_READ_BYTES)" in lines


def test_unknown_huge_optional_dataset_is_accepted_and_never_loaded(seed, tmp_path, capsys):
    from models.load_transfer.contracts.wall_loads import load_history, read_wall_loads

    ok = _copy(seed, tmp_path)
    with h5py.File(ok, "r+") as f:  # 7.28 TiB declared, nothing stored
        f.create_dataset("fields/huge", shape=(10**6, 10**6), dtype="f8", chunks=(1000, 1000))
    code, lines = _validate(capsys, ok)
    assert code == 0 and lines[0].endswith("; 1 optional dataset(s) kept: fields/huge")
    wl = read_wall_loads(ok)
    assert list(wl.extras) == ["fields/huge"] and wl.extras.shape("fields/huge") == (10**6, 10**6)
    assert load_history(str(ok)).pressure.shape == (9, 8)


def test_directory_and_missing_file_are_unreadable(tmp_path, capsys):
    code, lines = _validate(capsys, tmp_path)
    assert code == 2 and lines == [f"unreadable: {tmp_path}: a directory, not a file"]
    code, lines = _validate(capsys, tmp_path / "nope.h5")
    assert code == 2 and lines == [f"unreadable: {tmp_path / 'nope.h5'}: no such file"]


# ---------------------------------------------------------------- kratos-point-loads


@pytest.fixture(scope="module")
def kratos(tmp_path_factory) -> Path:
    """A conservative export with a face table (kratos-point-loads 1.1)."""
    return make_kratos_seed(tmp_path_factory.mktemp("kratos"))


def _kratos_mutant(kratos: Path, tmp_path: Path, edit) -> Path:
    bad = _copy(kratos, tmp_path, "k.h5")
    with h5py.File(bad, "r+") as f:
        edit(f)
    return bad


def _rewrite(name: str, make):
    def edit(f):
        old = f[name]
        attrs, kw = dict(old.attrs), dict(chunks=True, fletcher32=True)
        data = make(old[()])
        del f[name]
        f.create_dataset(name, data=data, **kw).attrs.update(attrs)
    return edit


def test_kratos_seed_is_valid(kratos, capsys):
    code, lines = _validate(capsys, kratos)
    assert code == 0 and lines[0].startswith(f"{kratos}: valid kratos-point-loads 1.1.0")


def test_kratos_condition_index_past_nc_is_a_violation(kratos, tmp_path, capsys):
    bad = _kratos_mutant(kratos, tmp_path, _rewrite("faces/condition_index", lambda a: a + 1000))
    code, lines = _validate(capsys, bad)
    assert code == 1
    nc = h5py.File(kratos, "r")["conditions/ids"].shape[0]
    first = h5py.File(kratos, "r")["faces/condition_index"][0, 0] + 1000
    assert f"{bad}: faces/condition_index: less_than_dim: found {first} at index (0, 0); expected < Nc = {nc} " \
           "(an index into Nc)" in lines


def test_kratos_non_numeric_r_map_is_a_type_violation(kratos, tmp_path, capsys):
    bad = _kratos_mutant(kratos, tmp_path, lambda f: f.attrs.__setitem__("r_map", "ten"))
    code, lines = _validate(capsys, bad)
    assert code == 1 and lines == [f"{bad}: @r_map: type: found string 'ten'; expected float"]


@pytest.mark.parametrize("make", [lambda v: np.zeros_like(v),  # every face collapsed onto a point
                                  lambda v: np.full_like(v, np.nan)[:, :1]])  # one vertex per face (malformed)
def test_kratos_degenerate_or_malformed_face_table_is_a_violation(kratos, tmp_path, capsys, make):
    bad = _kratos_mutant(kratos, tmp_path, _rewrite("faces/vertices", make))
    code, lines = _validate(capsys, bad)
    assert code == 1 and lines and all(line.startswith(f"{bad}: ") for line in lines)
    assert any(line.startswith(f"{bad}: faces/") or line.startswith(f"{bad}: dimension Kv") for line in lines)


@pytest.mark.parametrize("args, expected", [
    (["--dt", "1e-6", "--steps", "1000000000"],
     "cavitation-kratos-export: --steps: 1000000000 is above the limit 10000000 (target steps of the export)"),
    (["--dt", "nan", "--steps", "3"], "cavitation-kratos-export: --dt/--steps: must be > 0 and >= 1, got nan, 3"),
])
def test_export_arguments_out_of_range_are_one_line(seed, tmp_path, capsys, args, expected):
    from harness.tools.export import main as export_main
    from models.load_transfer.contracts.table import polar_quadrature_table

    table = tmp_path / "table.csv"
    polar_quadrature_table(radius=0.01, n_radial=4, n_theta=8).to_csv(table, index=False)
    code = export_main([str(seed), str(table), "--r-map", "0.01", "--out", str(tmp_path / "out"), *args])
    cap = capsys.readouterr()
    assert code == 2 and cap.err.strip().splitlines() == [expected]
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())  # nothing written


def test_export_of_a_file_hdf5_cannot_read_is_one_line(seed, tmp_path, capsys, monkeypatch):
    from harness.tools.export import main as export_main
    from models.load_transfer.contracts.table import polar_quadrature_table

    monkeypatch.setenv("HARNESS_HDF5_PROBE_TIMEOUT_S", "2")
    bad = _copy(seed, tmp_path)
    b = bytearray(bad.read_bytes())
    b[2184:2328] = bytes(144)
    bad.write_bytes(bytes(b))
    table = tmp_path / "table.csv"
    polar_quadrature_table(radius=0.01, n_radial=4, n_theta=8).to_csv(table, index=False)
    code = export_main([str(bad), str(table), "--dt", "1e-6", "--steps", "3", "--out", str(tmp_path / "out")])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"cavitation-kratos-export: {bad}: not a readable HDF5 file (HDF5 did not finish reading the file's "
        "headers within 2 s (damaged internals))"]
