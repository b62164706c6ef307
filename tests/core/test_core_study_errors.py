"""Study errors are verdicts (issue 32): a study option that cannot work is one line and exit 2
before any job runs; an error while the study aggregates is exit 2 (invalid input) or 1 (a
crash) with one line, study.json records it and the parent MLflow run ends FAILED with the
reason in its note."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parents[2]
CASE = ["+case=load_transfer/inscribed_surface", "+study=load_transfer/mesh_refinement"]

STUDY_MODULE = '''
from harness.core.context import HarnessInputError


def crash(df, out_dir):
    raise RuntimeError("the aggregation broke")


def invalid(df, out_dir):
    raise HarnessInputError("study.extra.window: must be > 0, got -1")
'''


def multirun(args, outputs: Path, pythonpath: str = ""):
    path = os.pathsep.join(p for p in (pythonpath, str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, HARNESS_OUTPUTS=str(outputs), PYTHONPATH=path)
    return subprocess.run([sys.executable, "-m", "harness", "-m", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("args, line", [
    (["study.spacing=invers"], "harness: error: study.spacing: 'invers' is not one of inverse, direct"),
    (["operator.surface.resolution=4,0,16"],
     "harness: error: study levels: operator.surface.resolution=0: must be > 0 with spacing inverse (h = 1/value)"),
    (["operator.surface.resolution=4,eight"],
     "harness: error: study levels: operator.surface.resolution='eight': a convergence level must be a finite number"),
    (["study.kind=nosuch"],
     "harness: error: study.kind: 'nosuch' is neither built in nor a function of harness.families.load_transfer "
     "(valid: convergence, validation, table, module:function, or a function of harness.families.load_transfer)"),
    (["study.quantities=[e_disk]"],
     "harness: error: study.quantities: 'e_disk' is the error metric (study.metric); a GCI goes on solution "
     "quantities only"),
    (["study.order_tolerance=-1"], "harness: error: study.order_tolerance: must be >= 0, got -1.0"),
])
def test_bad_study_option_is_exit_2_before_any_job(tmp_path, args, line):
    res = multirun([*CASE, *args], tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip().splitlines() == [line] and "Traceback" not in res.stdout + res.stderr
    assert not (tmp_path / "sweeps").exists() and not (tmp_path / "runs").exists()  # nothing ran, nothing written


def test_validation_study_without_its_u_num_study_is_exit_2_before_any_job(tmp_path):
    res = multirun(["+case=dem/hertz_sphere_wall", "+study=dem/contact_time_validation",
                    f"study.validation.u_num_study={tmp_path}/missing"], tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip().splitlines() == [
        f"harness: error: study.validation.u_num_study: {tmp_path}/missing: no such study.json or sweep directory "
        "(a solution-verification sweep's directory or its study/study.json)"]
    assert not (tmp_path / "sweeps").exists()


@pytest.mark.parametrize("function, code, reason", [
    ("crash", 1, "RuntimeError: the aggregation broke"),
    ("invalid", 2, "study.extra.window: must be > 0, got -1"),
])
def test_aggregation_error_is_the_study_verdict(tmp_path, function, code, reason):
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "failing_study.py").write_text(STUDY_MODULE)
    res = multirun([*CASE, f"study.kind=failing_study:{function}", "operator.surface.resolution=4"], tmp_path,
                   pythonpath=str(tmp_path / "mod"))
    assert res.returncode == code, res.stdout + res.stderr
    line = f"study load_transfer/mesh_refinement: {reason}"
    said = [x for x in res.stderr.splitlines() if not x.startswith("[")]  # Hydra's own "[time][HYDRA] Launching"
    assert said == [f"harness: error: {line}"] and "Traceback" not in res.stdout + res.stderr
    sweep = next((tmp_path / "sweeps" / "load_transfer/inscribed_surface").iterdir())
    study = json.loads((sweep / "study" / "study.json").read_text())
    assert study["verdict"] == "fail" and study["exit_code"] == code
    assert study["error"]["message"] == reason and study["error"]["kind"] == ("crash" if code == 1 else "invalid_input")
    assert ("traceback" in study["error"]) == (code == 1)
    state = json.loads((sweep / "study_state.json").read_text())
    parent = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db").get_run(state["parent_run_id"])
    assert parent.info.status == "FAILED" and parent.info.end_time is not None
    assert parent.data.tags["error"] == line and line in parent.data.tags["mlflow.note.content"]


def test_suite_summary_error_is_one_line_an_exit_code_and_the_parent_failed(tmp_path, monkeypatch, capsys):
    """The suite's end-of-sweep summary raising (Hydra would make it a warning): one line on
    stderr, exit code 1, the suite's parent run FAILED with the reason."""
    from omegaconf import OmegaConf

    from harness.suites import suite
    from harness.tracking import records as tracking

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    exp = tracking.ensure_experiment(uri, "harness/suite/x", None)
    parent = tracking.start_run(uri, exp, "suite:x")
    monkeypatch.setitem(suite._OPEN, parent, uri)
    monkeypatch.setitem(suite._LAST, "exit_code", 0)
    monkeypatch.setitem(suite._LAST, "summary", None)

    def broken(sweep_dir):
        raise OSError("[Errno 28] No space left on device")

    monkeypatch.setattr(suite, "finish", broken)
    (tmp_path / "sweep").mkdir()
    suite.SuiteCallback().on_multirun_end(OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path / "sweep")}},
                                                            "suite": {"name": "x"}}))
    line = "suite x: summary failed: OSError: [Errno 28] No space left on device"
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"harness: error: {line}"
    assert suite.last_exit_code() == 1 and suite.last_summary()["error"] == line
    run = MlflowClient(uri).get_run(parent)
    assert run.info.status == "FAILED" and run.data.tags["error"] == line and parent not in suite._OPEN
