"""Issue 32: every fuzzed case input is a clean rejection: exit 2, one line naming the key (or file) and
the rule, no traceback. Source files that are a directory, random bytes, empty or YAML; outputs inside
a file; a stray ``=5``; a 5000-character case name; absurd sizes (the documented limits of
harness/core/limits.py); ``source.mode`` outside its choices."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.limits import SIZE_LIMITS

ROOT = Path(__file__).resolve().parents[2]
CASE = ["+case=load_transfer/uniform_pressure", "tracking=none"]


def _run(capsys, args):
    from harness.cli.main import main

    code = main(list(args))
    cap = capsys.readouterr()
    lines = [ln for ln in (cap.out + cap.err).splitlines() if ln.strip() and not ln.startswith(("WARNING", "INFO"))]
    return code, lines


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    (d / "empty.h5").write_bytes(b"")
    (d / "random.h5").write_bytes(bytes((i * 7919 + 13) % 256 for i in range(4096)))
    (d / "case.yaml").write_text("case:\n  name: x\n")
    (d / "afile").write_text("x")
    return d


@pytest.mark.parametrize("name, reason", [
    ("", "a directory, not a file"),
    ("empty.h5", "OSError: Unable to synchronously open file (file signature not found)"),
    ("random.h5", "OSError: Unable to synchronously open file (file signature not found)"),
    ("case.yaml", "OSError: Unable to synchronously open file (file signature not found)"),
])
def test_source_path_that_is_not_an_hdf5_file(harness_env, capsys, files, name, reason):
    path = files / name if name else files
    code, lines = _run(capsys, [*CASE, "source=wall_loads_file", f"source.path={path}"])
    assert code == 2
    assert lines == [f"load_transfer/uniform_pressure  INVALID  run=-  (source: {path}: not a readable HDF5 file "
                     f"({reason}))"]


@pytest.mark.parametrize("override, expected", [
    ("source.n_rings=1000000000", "source.n_rings: 1000000000 is above the limit 1000000 (rings of the source "
                                  "history; raise it with HARNESS_LIMIT_SOURCE_N_RINGS if you mean it)"),
    ("integrator.n_steps=1000000000", "integrator.n_steps: 1000000000 is above the limit 10000000 (time steps "
                                      "(one float64 per step and quantity); raise it with "
                                      "HARNESS_LIMIT_INTEGRATOR_N_STEPS if you mean it)"),
    ("operator.surface.resolution=100000", "operator.surface.resolution: 100000 is above the limit 4096 (surface "
                                           "cells per direction (memory grows with its square); raise it with "
                                           "HARNESS_LIMIT_OPERATOR_SURFACE_RESOLUTION if you mean it)"),
])
def test_absurd_sizes_are_refused_with_the_limit_named(harness_env, capsys, override, expected):
    code, lines = _run(capsys, [*CASE, override])
    assert code == 2 and lines == [f"load_transfer/uniform_pressure  INVALID  run=-  ({expected})"]


@pytest.mark.parametrize("case, override, expected", [
    ("dem/direct_shear", "case.params.n_particles=100000000",
     "case.params.n_particles: 100000000 is above the limit 10000000 (a count of steps, particles, samples, "
     "rings, repeats, ...; raise it with HARNESS_LIMIT_CASE_PARAMS_TOTAL if you mean it)"),
    ("load_transfer/cfd_wall_convergence", "case.params.grids=[25,50000]",
     "case.params.grids: 50000 is above the limit 10000 (cells or points per direction of a grid; raise it with "
     "HARNESS_LIMIT_CASE_PARAMS_PER_DIRECTION if you mean it)"),
])
def test_family_size_parameters_are_refused_above_their_limit(harness_env, capsys, case, override, expected):
    """Every family's size parameters (case.params n, nx, n_*, grids, ...), not only the shared groups'."""
    code, lines = _run(capsys, [f"+case={case}", "tracking=none", override])
    assert code == 2 and lines == [f"{case}  INVALID  run=-  ({expected})"]


def test_a_size_at_its_limit_is_not_refused_by_the_limit(harness_env, monkeypatch):
    from harness import run_case

    monkeypatch.setenv("HARNESS_LIMIT_SOURCE_N_RINGS", "8")
    out = run_case("load_transfer/uniform_pressure", overrides=["tracking=none", "source.n_rings=8"])
    assert out.status == "ok" and out.verdict == "pass", out.message
    out = run_case("load_transfer/uniform_pressure", overrides=["tracking=none", "source.n_rings=9"])
    assert out.status == "invalid" and out.message.startswith("source.n_rings: 9 is above the limit 8 ")
    assert set(SIZE_LIMITS) >= {"source.n_rings", "integrator.n_steps", "operator.surface.resolution"}


def test_source_mode_is_checked_against_its_choices(harness_env, capsys, files):
    good = files.parent / "good"
    code, lines = _run(capsys, [*CASE, "source=wall_loads_file", f"source.path={files / 'empty.h5'}",
                                "source.mode=bogus"])
    assert code == 2
    assert lines == ["load_transfer/uniform_pressure  INVALID  run=-  (source.mode: 'bogus' is not one of "
                     "production, debug, null)"]
    assert not good.exists()


@pytest.mark.parametrize("arg, expected", [
    ("=5", "harness: error: argument '=5': an override is KEY=VALUE; the key is empty"),
    ("+case=" + "x" * 5000, "harness: error: case: option name of 5000 characters; at most 200 "
                            "(it names a file under conf/)"),
])
def test_malformed_arguments(harness_env, capsys, arg, expected):
    code, lines = _run(capsys, ["+case=load_transfer/uniform_pressure", "tracking=none", arg])
    assert code == 2 and lines == [expected]


def test_outputs_pointing_at_a_file_is_one_line_no_traceback(files):
    target = files / "afile"
    proc = subprocess.run([sys.executable, "-m", "harness", *CASE, f"paths.outputs={target}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"harness: error: paths.outputs: '{target}' lies in or at the file '{target}'; it must be a directory "
        "(existing or to be created)"]
    assert target.read_text() == "x"  # nothing written over it


def test_contract_violation_through_a_case_names_the_file_and_the_rule(harness_env, capsys, tmp_path):
    """schema_name stored as an array: before, a TypeError that named neither the file nor the rule."""
    import h5py
    import numpy as np

    subprocess.run([sys.executable, "-m", "models.load_transfer.extraction", "D", "--case-id", "seed", "--n-rings",
                    "8", "--n-outputs", "9"], cwd=tmp_path, check=True, capture_output=True)
    path = tmp_path / "D" / "seed.wall-loads.v1.h5"
    with h5py.File(path, "r+") as f:
        f.attrs["schema_name"] = np.array(["wall-loads", "wall-loads"], dtype=h5py.string_dtype())
    code, lines = _run(capsys, [*CASE, "source=wall_loads_file", f"source.path={path}"])
    assert code == 2
    assert lines == [f"load_transfer/uniform_pressure  INVALID  run=-  (source: {path}: invalid wall-loads file: "
                     "@schema_name: type: found array of shape (2,); expected string)"]
