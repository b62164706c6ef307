"""Issue 33: the CFD cases of load transfer (PyClaw and AMRClaw rigid wall, spherical verification,
wall-impulse convergence) run through the harness at reduced size and meet their gates."""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from harness import run_case

FULL = os.environ.get("HARNESS_FULL") == "1"  # full sizes: 200^2 uniform, AMR base 50^2, grids 100-400
GRIDS = [100, 200, 400] if FULL else [25, 50, 100]


def _wall_file(out):
    from models.load_transfer.contracts.wall_loads import read_wall_loads

    files = sorted(out.run_dir.glob("*.wall-loads.v1.h5"))
    assert len(files) == 1
    return files[0], read_wall_loads(files[0], mode="production")


def _meta(path):
    import h5py

    with h5py.File(path, "r") as f:
        return json.loads(f.attrs["metadata_json"]), f["provenance/configuration"].attrs["sha256"]


def _png(path):
    from PIL import Image

    assert path.is_file()
    with Image.open(path) as im:
        w, h = im.size
        colors = len(set(im.convert("RGB").getdata()))
    assert w >= 400 and h >= 300 and colors > 20  # a drawn figure, not a blank canvas


def test_pyclaw_rigid_wall_case_restarts_bit_for_bit_and_writes_production_file(harness_env):
    out = run_case("load_transfer/cfd_rigid_wall", overrides=["tracking=none"])
    assert out.status == "ok" and out.verdict == "pass", (out.message, out.gates)
    m = out.metrics
    assert m["restart_max_diff"] == 0.0 and m["restart_state_diff"] == 0.0 and m["restart_stopped"] == 1.0
    assert m["area_error_max"] <= 1e-13 and m["violations"] == 0.0
    path, wl = _wall_file(out)
    meta, cfg_sha = _meta(path)
    assert meta["mode"] == "production" and meta["configuration_sha256"] == cfg_sha
    assert re.fullmatch(r"clawpack 5\.14\.0 pyclaw .*; application sha256 [0-9a-f]{64}", meta["basilisk_commit"])
    assert meta["compiler"].startswith("GNU Fortran")
    assert (meta["R0"], meta["H"], meta["gamma"], meta["reference_pressure"]) == (0.2, 0.5, 1.4, 1.0e5)
    assert meta["levels"] == [1, 1] and meta["delta_min"] == pytest.approx(1.0 / (200 if FULL else 50), rel=1e-12)
    assert meta["output_cadence"] == pytest.approx(4.0e-5, rel=1e-9) and meta["convergence_study_id"] == "cfd-rigid-wall"
    assert wl.time.size == 31 and wl.radial_edges[-1] == 0.5
    F = wl.pressure @ (np.pi * np.diff(wl.radial_edges**2))
    assert F.max() == pytest.approx(m["force_peak"], rel=1e-14)
    _png(out.run_dir / "wall_force.png")


def test_amrclaw_rigid_wall_case_counts_leaves_only_and_restarts_to_round_off(harness_env):
    out = run_case("load_transfer/cfd_rigid_wall_amr", overrides=["tracking=none"])
    assert out.status == "ok" and out.verdict == "pass", (out.message, out.gates)
    m = out.metrics
    assert m["levels_on_wall"] == 3.0 and m["covered_wall_cells_max"] > 0
    assert m["restart_max_diff"] <= 1e-13 and m["restart_frames_compared"] == 19.0
    path, wl = _wall_file(out)
    meta, _ = _meta(path)
    assert "amrclaw" in meta["basilisk_commit"] and meta["levels"] == [1, 3]
    assert meta["delta_min"] == pytest.approx(1.0 / (200 if FULL else 100), rel=1e-12) and meta["amr"]["levels"] == 3
    _png(out.run_dir / "amr_patches.png")
    _png(out.run_dir / "wall_force.png")


def test_spherical_verification_is_first_order(harness_env):
    out = run_case("load_transfer/cfd_spherical", overrides=["tracking=none"])
    assert out.status == "ok" and out.verdict == "pass", (out.message, out.gates)
    m = out.metrics
    e = [m[f"l1_error_{n}"] for n in GRIDS]
    assert e[0] > e[1] > e[2] and m["observed_order_min"] >= 0.8
    assert m["shock_radius_error_cells_max"] <= 1.0
    _png(out.run_dir / "spherical_profile.png")


def test_wall_impulse_convergence_study_reports_gci(harness_env):
    out = run_case("load_transfer/cfd_wall_convergence", overrides=["tracking=none"])
    assert out.status == "ok", out.message
    m = out.metrics
    J = [m[f"impulse_{n}"] for n in GRIDS]
    assert J[0] < J[1] < J[2] and J[2] - J[1] < J[1] - J[0]  # monotone, converging
    assert 0.0 < m["impulse_order"] < 3.0 and 0.0 < m["impulse_gci_fine"] < 0.10
    assert 0.0 < m["force_peak_gci_fine"] < 0.05 and m["impulse_extrapolated"] > J[2]
    files = sorted(out.run_dir.glob("cfd-rigid-wall-*.wall-loads.v1.h5"))
    assert sorted(f.name.split(".")[0] for f in files) == sorted(f"cfd-rigid-wall-{n}" for n in GRIDS)
    assert {_meta(f)[0]["convergence_study_id"] for f in files} == {"cfd-rigid-wall"}
    # the GCI is about 6 % on the reduced grids, 1.1 % on the full ones (warn band), never a silent pass
    assert out.gates["impulse_gci_fine"] == ("pass" if m["impulse_gci_fine"] <= 0.01 else "warn")


def test_bad_setup_is_one_line_exit_2(harness_env):
    out = run_case("load_transfer/cfd_rigid_wall", overrides=["tracking=none", "case.params.setup.R0=-1.0"])
    assert out.exit_code == 2 and out.status != "ok"
    assert "case.params.setup.R0: must be > 0" in out.message and "\n" not in out.message
    out = run_case("load_transfer/cfd_rigid_wall", overrides=["tracking=none", "case.params.solver=fluent"])
    assert out.exit_code == 2 and "solver" in out.message


def test_workflow_runs_the_spherical_verification_only_without_an_accepted_baseline(harness_env, tracking_uri):
    from harness.families.load_transfer_workflow import STAGES, Stage
    from harness.families.load_transfer_workflow_cfd import VERIFICATION_CASE, stages
    from harness.suites.baseline import accept

    def names(uri):
        return [s.name for s in stages("cfd", STAGES, Stage, uri)]

    assert names(None)[:2] == ["verification", "wall_loads"]  # no store: always verify
    assert names(tracking_uri)[:2] == ["verification", "wall_loads"]  # nothing accepted yet
    out = run_case(VERIFICATION_CASE)
    assert out.verdict == "pass" and out.mlflow_run_id
    assert names(tracking_uri)[:2] == ["verification", "wall_loads"]  # recorded, not accepted
    accept(tracking_uri, out.mlflow_run_id, name="cfd_verification")
    assert names(tracking_uri)[0] == "wall_loads" and "verification" not in names(tracking_uri)
    assert [s.name for s in stages("synthetic", STAGES, Stage, tracking_uri)] == [s.name for s in STAGES]
