"""wall-loads v1.1 contract: writer, reader, every bad-file kind (exact messages), atomicity."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from models.load_transfer.contracts import ContractError, UnreadableFileError, load_spec, validate_file
from models.load_transfer.contracts import wall_loads as wlmod
from models.load_transfer.contracts.corrupt import BAD_KINDS, make_bad_file
from models.load_transfer.contracts.wall_loads import read_wall_loads, read_wall_loads_csv, write_wall_loads

META = dict(basilisk_commit="b4s1l1sk", exporter_commit="e7a0", compiler="gcc 12.2 -O2", command="qcc -O2 wall.c",
            R0=1.0e-3, H=2.0e-3, gamma=1.4, reference_pressure=101325.0, levels=[6, 11], delta_min=1.0e-5,
            output_cadence=1.0e-5, convergence_study_id="cs-7")
CONFIG = "a: 1\n"


def _data():
    t = np.linspace(0.0, 1.0e-4, 11)
    e = np.linspace(0.0, 1.0e-2, 9)
    p = 1.0e5 * np.outer(1.0 + 1.0e4 * t, 1.0 - e[1:] ** 2 / 2.0e-4)
    tau = 10.0 * np.outer(np.ones_like(t), e[1:] / e[-1])
    return t, e, p, tau


@pytest.fixture
def good(tmp_path) -> Path:
    t, e, p, tau = _data()
    return write_wall_loads(tmp_path, case_id="demo", time=t, radial_edges=e, pressure=p, shear=tau, metadata=META,
                            configuration=CONFIG)


def test_file_name_attrs_and_storage(good):
    assert good.name == "demo.wall-loads.v1.h5"
    with h5py.File(good, "r") as f:
        assert f.attrs["schema_name"] == "wall-loads" and f.attrs["schema_version"] == "1.1.0"
        assert bool(f.attrs["complete"]) is True
        assert f.attrs["units_system"] == "SI" and f.attrs["coordinate_system"] == "axisymmetric-rz"
        assert f.attrs["pressure_convention"] == "gauge-positive-in-compression"
        assert f.attrs["temporal_interpolation"] == "piecewise-linear"
        for name in ("fields/pressure_gauge", "fields/shear_radial"):
            d = f[name]
            assert (d.compression, d.shuffle, d.fletcher32, d.dtype) == ("gzip", True, True, np.float64)
        units = {n: f[n].attrs["unit"] for n in ("time", "coordinates/radial_edges", "fields/pressure_gauge",
                                                 "derived/impulse_pressure", "derived/force_normal")}
    assert units == {"time": "s", "coordinates/radial_edges": "m", "fields/pressure_gauge": "Pa",
                     "derived/impulse_pressure": "Pa s", "derived/force_normal": "N"}


def test_round_trip_bit_for_bit_and_derived(good):
    t, e, p, tau = _data()
    wl = read_wall_loads(good)
    for a, b in ((wl.time, t), (wl.radial_edges, e), (wl.pressure, p), (wl.shear, tau)):
        assert a.dtype == np.float64 and a.tobytes() == b.tobytes()
    # independent recomputation: impulse by trapezoids, force = sum p_i pi (r_i+1^2 - r_i^2)
    J = np.array([np.trapezoid(p[:, i], t) for i in range(p.shape[1])])
    np.testing.assert_allclose(wl.impulse, J, rtol=1e-14)
    A = np.array([np.pi * (e[i + 1] ** 2 - e[i] ** 2) for i in range(8)])
    np.testing.assert_allclose(wl.force, [sum(p[k, i] * A[i] for i in range(8)) for k in range(11)], rtol=1e-14)
    for k, v in META.items():
        assert wl.metadata[k] == v
    assert wl.metadata["configuration_sha256"] == hashlib.sha256(CONFIG.encode()).hexdigest()
    assert wl.configuration == CONFIG and wl.metadata["mode"] == "production"
    assert wl.sha256 == hashlib.sha256(good.read_bytes()).hexdigest()


def test_reads_1_0_and_keeps_unknown_optional_datasets(tmp_path):
    t, e, p, _ = _data()
    p10 = write_wall_loads(tmp_path / "v10.h5", case_id="v10", time=t, radial_edges=e, pressure=p, metadata=META,
                           configuration=CONFIG, version="1.0.0")
    with h5py.File(p10, "r") as f:
        assert "fields/shear_radial" not in f and "temporal_interpolation" not in f.attrs
    wl = read_wall_loads(p10)
    assert wl.schema_version == "1.0.0" and np.all(wl.shear == 0.0) and wl.pressure.tobytes() == p.tobytes()
    extra = np.arange(11.0)
    p12 = write_wall_loads(tmp_path / "v12.h5", case_id="v12", time=t, radial_edges=e, pressure=p, metadata=META,
                           configuration=CONFIG, version="1.2.0", extras={"fields/wall_temperature": extra})
    wl12 = read_wall_loads(p12)
    assert wl12.schema_version == "1.2.0" and np.array_equal(wl12.extras["fields/wall_temperature"], extra)


def test_missing_1_1_dataset_is_refused_but_not_in_1_0(tmp_path, good):
    bad = tmp_path / "noshear.h5"
    make_bad_file(good, bad, "missing_dataset")  # any copy
    with h5py.File(bad, "r+") as f:
        f["derived/force_normal"] = np.zeros(11)
        f["derived/force_normal"].attrs["unit"] = "N"
        del f["fields/shear_radial"]
    report = validate_file(bad)
    assert [(v.path, v.rule) for v in report.violations][0] == ("fields/shear_radial", "required")


# every bad-file kind, with its exact message (after "<file>: invalid wall-loads file: ")
EXPECTED = {
    "incomplete": "@complete: equals: found False; expected True",
    "major_version": "@schema_version: major_version: found '2.0.0'; expected major version 1 (1.x); "
                     "major version 2 needs an explicit migration",
    "time_not_monotonic": "time: strictly_increasing: found 2e-05 after 2e-05 at index 3; expected strictly "
                          "increasing values",
    "edges_not_increasing": "coordinates/radial_edges: strictly_increasing: found 0.00125 after 0.00125 at index 2; "
                            "expected strictly increasing values",
    "edges_negative": "coordinates/radial_edges: nonnegative: found -0.001 at index 0; expected >= 0",
    "shape_mismatch": "fields/shear_radial: shape: found (11, 9); expected (Nt, Nr) = (11, 8)",
    "nan": "fields/pressure_gauge: finite: found 1 non-finite value(s), first nan at index (1, 2); expected finite "
           "values",
    "inf": "fields/pressure_gauge: finite: found 1 non-finite value(s), first inf at index (2, 3); expected finite "
           "values",
    "wrong_unit": "fields/pressure_gauge@unit: unit: found 'bar'; expected 'Pa'",
    "wrong_units_system": "@units_system: equals: found 'CGS'; expected 'SI'",
    "wrong_convention": "@pressure_convention: equals: found 'absolute'; expected 'gauge-positive-in-compression'",
    "wrong_coordinate_system": "@coordinate_system: equals: found 'cartesian-xyz'; expected 'axisymmetric-rz'",
    "derived_force_mismatch": "derived/force_normal: derived: found max |stored - recomputed| = {dF} (relative 1e-06); "
                              "expected ring_force of fields/pressure_gauge, coordinates/radial_edges within rtol 1e-12",
    "derived_impulse_mismatch": "derived/impulse_pressure: derived: found max |stored - recomputed| = 1 (relative "
                                "{dJ}); expected trapezoid_in_time of fields/pressure_gauge, time within rtol 1e-12",
    "missing_metadata": "@metadata_json.R0: required_in_production: found missing; expected key present",
    "configuration_edited": "provenance/configuration: sha256: found {h2}; expected {h1} "
                            "(provenance/configuration@sha256) | provenance/configuration: sha256: found {h2}; "
                            "expected {h1} (@metadata_json.configuration_sha256)",
    "missing_dataset": "derived/force_normal: required: found missing; expected dataset",
    "wrong_dtype": "fields/pressure_gauge: dtype: found float32; expected float64",
    "checksum": "fields/pressure_gauge: checksum: found stored data fail the Fletcher-32/filter check on read; "
                "expected intact chunks",
}


def test_every_kind_has_an_expected_message():
    assert set(EXPECTED) == set(BAD_KINDS)


@pytest.mark.parametrize("kind", sorted(BAD_KINDS))
def test_bad_file_rejected_with_exact_message(tmp_path, good, kind):
    t, e, p, _ = _data()
    F = p @ (np.pi * (e[1:] ** 2 - e[:-1] ** 2))
    J0 = np.trapezoid(p[:, 0], t)
    fill = {
        "dF": f"{float(np.max(np.abs(F * (1.0 + 1.0e-6) - F))):.6g}",
        "dJ": f"{1.0 / np.max(np.abs(np.trapezoid(p, t, axis=0))):.3g}" if J0 else "",
        "h1": hashlib.sha256(CONFIG.encode()).hexdigest(),
        "h2": hashlib.sha256((CONFIG + "# edited after the run\n").encode()).hexdigest(),
    }
    bad = make_bad_file(good, tmp_path / f"{kind}.h5", kind)
    with pytest.raises(ContractError) as err:
        read_wall_loads(bad)
    assert str(err.value) == f"{bad}: invalid wall-loads file: " + EXPECTED[kind].format(**fill)


def test_checksum_corruption_is_caught_by_fletcher32_not_by_luck(tmp_path, good):
    bad = make_bad_file(good, tmp_path / "c.h5", "checksum")
    with h5py.File(bad, "r") as f:
        with pytest.raises(OSError):
            f["fields/pressure_gauge"][()]


def test_not_hdf5_is_unreadable(tmp_path):
    junk = tmp_path / "x.h5"
    junk.write_text("not hdf5")
    with pytest.raises(UnreadableFileError, match="not a readable HDF5 file"):
        read_wall_loads(junk)


def test_debug_mode_missing_metadata_is_a_warning_production_an_error(tmp_path, caplog):
    t, e, p, _ = _data()
    with pytest.raises(ContractError) as err:
        write_wall_loads(tmp_path, case_id="prod", time=t, radial_edges=e, pressure=p, metadata={"R0": 1e-3})
    msg = str(err.value)
    assert "@metadata_json.basilisk_commit: required_in_production: found missing" in msg
    assert "provenance/configuration: required: found missing" in msg
    assert list(tmp_path.iterdir()) == []  # nothing written
    path = write_wall_loads(tmp_path, case_id="dbg", time=t, radial_edges=e, pressure=p, metadata={}, mode="debug")
    report = validate_file(path)
    assert report.ok and report.mode == "debug"
    assert [w.path for w in report.warnings][:2] == ["@metadata_json.basilisk_commit", "@metadata_json.exporter_commit"]
    # forcing production mode on the debug file refuses it
    assert not validate_file(path, mode="production").ok


def test_writer_refuses_invalid_input_and_leaves_nothing(tmp_path):
    t, e, p, _ = _data()
    with pytest.raises(ContractError, match=r"time: strictly_increasing: found 0.0 after 1e-05 at index 2"):
        write_wall_loads(tmp_path, case_id="x", time=np.r_[t[:2], 0.0, t[3:]], radial_edges=e, pressure=p,
                         metadata=META, configuration=CONFIG)
    with pytest.raises(ContractError, match=r"fields/pressure_gauge: shape: found \(11, 7\); expected \(Nt, Nr\)"):
        write_wall_loads(tmp_path, case_id="x", time=t, radial_edges=e, pressure=p[:, :7], metadata=META,
                         configuration=CONFIG)
    with pytest.raises(ValueError, match="version: '2.0.0' is not a wall-loads 1.x version"):
        write_wall_loads(tmp_path, case_id="x", time=t, radial_edges=e, pressure=p, version="2.0.0")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_write_leaves_neither_final_nor_temporary(tmp_path, monkeypatch):
    t, e, p, tau = _data()
    real = h5py.Group.create_dataset
    calls = {"n": 0}

    def flaky(self, name, *a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("power cut")
        return real(self, name, *a, **k)

    monkeypatch.setattr(h5py.Group, "create_dataset", flaky)
    with pytest.raises(KeyboardInterrupt):
        write_wall_loads(tmp_path, case_id="cut", time=t, radial_edges=e, pressure=p, shear=tau, metadata=META,
                         configuration=CONFIG)
    assert calls["n"] == 3 and list(tmp_path.iterdir()) == []


def test_complete_is_set_only_after_every_dataset_is_closed(tmp_path, monkeypatch):
    """Record the file's state when it is reopened to set complete: every dataset exists and the
    flag is still false; during dataset creation it is false."""
    t, e, p, tau = _data()
    seen = []
    real_init = h5py.File.__init__

    def spy(self, name, mode="r", *a, **k):
        real_init(self, name, mode, *a, **k)
        if mode == "r+":
            names = []
            self.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
            seen.append((bool(self.attrs["complete"]), sorted(names)))

    monkeypatch.setattr(h5py.File, "__init__", spy)
    write_wall_loads(tmp_path, case_id="c", time=t, radial_edges=e, pressure=p, shear=tau, metadata=META,
                     configuration=CONFIG)
    spec_names = sorted(load_spec("wall-loads").datasets)
    assert seen == [(False, spec_names)]


def test_csv_is_a_debug_input_only(tmp_path):
    t, e, p, tau = _data()
    rows = ["time,r_inner,r_outer,pressure_gauge,shear_radial"]
    for k in range(t.size):
        for i in range(8):
            rows.append(",".join(repr(float(v)) for v in (t[k], e[i], e[i + 1], p[k, i], tau[k, i])))
    path = tmp_path / "w.csv"
    path.write_text("\n".join(rows) + "\n")
    wl = read_wall_loads_csv(path)
    assert wl.metadata == {"mode": "debug"} and np.array_equal(wl.pressure, p) and np.array_equal(wl.radial_edges, e)
    assert not hasattr(wlmod, "write_wall_loads_csv")  # never written as the exchange format


def test_validator_is_driven_by_the_spec(tmp_path, good):
    """Changing the spec (not code) changes the verdict: the unit rule comes from the YAML."""
    from models.load_transfer.contracts.spec import Spec

    spec = load_spec("wall-loads")
    doc = json.loads(json.dumps(spec.doc))
    doc["datasets"]["fields/pressure_gauge"]["unit"] = "kPa"
    doc["attributes"]["case_id"]["pattern"] = "^x"
    report = validate_file(good, Spec(name="wall-loads", path=spec.path, doc=doc))
    assert [str(v) for v in report.violations] == [
        "@case_id: pattern: found 'demo'; expected match ^x",
        "fields/pressure_gauge@unit: unit: found 'Pa'; expected 'kPa'",
    ]


def test_dimension_minimum_from_the_spec(tmp_path):
    t, e, p, _ = _data()
    with pytest.raises(ContractError) as err:
        write_wall_loads(tmp_path, case_id="one", time=t[:1], radial_edges=e, pressure=p[:1], metadata=META,
                         configuration=CONFIG)
    assert str(err.value).endswith("invalid wall-loads file: dimension Nt: min: found 1; expected >= 2")
    assert list(tmp_path.iterdir()) == []
