"""A three-level sweep: parent and child MLflow runs, the study table, the observed order."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parents[2]


def multirun(args, outputs):
    env = dict(os.environ, HARNESS_OUTPUTS=str(outputs))
    return subprocess.run([sys.executable, "-m", "harness", "-m", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def latest_sweep(outputs: Path, case: str) -> Path:
    return sorted((outputs / "sweeps" / case).iterdir())[-1]


def test_three_level_refinement_study(harness_env, tracking_uri):
    res = multirun(["+case=load_transfer/inscribed_surface", "+study=load_transfer/mesh_refinement"], harness_env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "study load_transfer/mesh_refinement  PASS  jobs=3 failed=0" in res.stdout
    sweep = latest_sweep(harness_env, "load_transfer/inscribed_surface")
    table = pd.read_csv(sweep / "study" / "table.csv")
    assert list(table["parameter"]) == [4.0, 8.0, 16.0]
    assert (table["status"] == "ok").all() and (table["e_F"] < 1e-10).all()
    study = json.loads((sweep / "study" / "study.json").read_text())
    p = study["metrics"]["observed_order"]
    assert abs(p - 2.0) <= 0.2, p
    # the fitted order equals the one recomputed from the table
    e = table["e_disk"].to_numpy()
    assert p == pytest.approx(math.log(e[1] / e[2]) / math.log(2.0), rel=1e-12)
    # the GCI is on the solution quantity F_M_max, never on the error metric e_disk
    assert not any(k.startswith("gci_e_disk") or k in ("gci_p", "gci_gci_12") for k in study["metrics"])
    v = study["verification"]["F_M_max"]
    assert v["convergence"] == "monotonic" and abs(v["p"] - 2.0) < 0.05
    f = table["F_M_max"].to_numpy()
    assert v["f1"] == f[2] and v["p"] == pytest.approx(math.log((f[1] - f[0]) / (f[2] - f[1])) / math.log(2.0), rel=1e-12)
    # the extrapolated peak force is the disk force p0 pi R^2 (the polygons converge to the disk)
    # within the stated numerical uncertainty
    F_disk = 1.0e5 * math.pi * 1.0**2
    assert abs(v["f_extrapolated"] - F_disk) <= v["u_num"] and v["u_num"] < 1e-3 * F_disk
    assert v["asymptotic_ratio"] == pytest.approx(1.0, abs=0.01) and "95 %" in v["coverage"]
    assert study["error_metric"]["at_round_off"] is False
    assert (sweep / "study" / "convergence.png").stat().st_size > 1000
    assert "F_M_max:monotonic" in res.stdout and "u_num=" in res.stdout

    c = MlflowClient(tracking_uri)
    state = json.loads((sweep / "study_state.json").read_text())
    parent = c.get_run(state["parent_run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["verdict"] == "pass"
    assert parent.data.metrics["observed_order"] == pytest.approx(p)
    assert parent.data.metrics["gci_F_M_max_u_num"] == pytest.approx(v["u_num"])
    assert parent.data.tags["convergence.F_M_max"] == "monotonic"
    children = c.search_runs([parent.info.experiment_id],
                             filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert len(children) == 3
    assert sorted(ch.info.run_id for ch in children) == sorted(table["mlflow_run_id"])
    assert all("e_disk" in ch.data.metrics and ch.info.status == "FINISHED" for ch in children)
    assert {a.path for a in c.list_artifacts(parent.info.run_id)} >= {"table.csv", "study.json", "convergence.png"}


def test_a_failed_job_fails_the_study(harness_env, tracking_uri):
    res = multirun(["+case=load_transfer/sign",
                    "case.adapter=harness.families.load_transfer:run,harness.gates:exit_code"],
                   harness_env)
    assert res.returncode == 1, res.stdout + res.stderr
    sweep = latest_sweep(harness_env, "load_transfer/sign")
    table = pd.read_csv(sweep / "study" / "table.csv")
    assert sorted(table["status"]) == ["error", "ok"]
    state = json.loads((sweep / "study_state.json").read_text())
    parent = MlflowClient(tracking_uri).get_run(state["parent_run_id"])
    assert parent.info.status == "FAILED" and parent.data.tags["n_failed"] == "1"


def test_study_kind_by_module_and_function():
    from harness.studies.aggregate import study_function
    from harness.families import load_transfer

    assert study_function("harness.families.load_transfer:bench_operator_apply", "dem") is load_transfer.bench_operator_apply
    assert study_function("bench_operator_apply", "load_transfer") is load_transfer.bench_operator_apply
    with pytest.raises(ValueError, match="neither built in nor a function of harness.families.dem"):
        study_function("nope", "dem")
    with pytest.raises(ValueError, match="cannot import 'harness.families.nosuch'"):
        study_function("harness.families.nosuch:f", "dem")


def test_command_line_levels_replace_the_study_levels_and_are_recorded(harness_env, tracking_uri):
    res = multirun(["+case=load_transfer/inscribed_surface", "+study=load_transfer/mesh_refinement",
                    "operator.surface.resolution=4,8,16,24"], harness_env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "the command line replaces the study's levels: operator.surface.resolution=4,8,16,24 (study: 4,8,16)" in res.stdout + res.stderr
    assert "levels from the command line: operator.surface.resolution=4,8,16,24 (study: 4,8,16)" in res.stdout
    sweep = latest_sweep(harness_env, "load_transfer/inscribed_surface")
    study = json.loads((sweep / "study" / "study.json").read_text())
    assert study["n_jobs"] == 4 and study["levels_replaced"] == ["operator.surface.resolution=4,8,16,24 (study: 4,8,16)"]
    # four levels: the least-squares order over all of them beside the last-three estimate
    v = study["verification"]["F_M_max"]
    assert v["convergence"] == "monotonic" and v["least_squares"]["n_levels"] == 4
    # r21 = 24/16 = 1.5, r32 = 2: the apparent order by the fixed-point iteration
    assert v["r21"] == 1.5 and v["r32"] == 2.0 and v["iterations"] > 1 and abs(v["p"] - 2.0) < 0.05
    assert abs(v["f_extrapolated"] - 1.0e5 * math.pi) <= v["u_num"]
    assert abs(v["least_squares"]["p"] - 2.0) < 0.05 and abs(v["least_squares"]["f0"] - 1.0e5 * 3.141592653589793) < 5.0
    state = json.loads((sweep / "study_state.json").read_text())
    tags = MlflowClient(tracking_uri).get_run(state["parent_run_id"]).data.tags
    assert tags["levels_source"].startswith("command_line: operator.surface.resolution=4,8,16,24")


def test_a_sweep_that_selects_no_job_exits_2_with_one_line(harness_env):
    res = multirun(["+case=glob(load_transfer/*)"], harness_env)
    assert res.returncode == 2, res.stdout + res.stderr
    errors = [l for l in res.stderr.splitlines() if l.startswith("harness: error:")]
    assert errors == ["harness: error: the sweep selected no job (overrides: +case=glob(load_transfer/*))"]
    assert "SchemaError" not in res.stderr and "Traceback" not in res.stderr


def test_a_plain_sweep_over_one_key_gets_the_parameter_table(harness_env):
    res = multirun(["+case=load_transfer/sign", "source.n_rings=4,8"], harness_env)
    assert res.returncode == 0, res.stdout + res.stderr
    sweep = latest_sweep(harness_env, "load_transfer/sign")
    table = pd.read_csv(sweep / "study" / "table.csv")
    assert list(table["parameter"]) == [4.0, 8.0]
    study = json.loads((sweep / "study" / "study.json").read_text())
    assert study["name"] == "sweep" and study["swept_key"] == "source.n_rings" and study["kind"] == "table"
    assert "observed_order" not in study["metrics"]  # no order gate without a declared study
