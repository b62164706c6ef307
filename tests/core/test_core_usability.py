"""The harness as a person meets it: input paths, file modes, interruption, help, stderr.

Each test runs the real CLI (a subprocess) or the real functions; none mocks MLflow.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cli(args, outputs: Path, cwd: Path = ROOT, timeout: float = 300, **kw):
    env = dict(os.environ, HARNESS_OUTPUTS=str(outputs))
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, **kw)


def last_run(outputs: Path, case: str) -> Path:
    return sorted((outputs / "runs" / case).iterdir())[-1]


# -- relative input paths: launch directory, then the files shipped with the harness ---------

def test_relative_data_file_is_found_in_the_launch_directory(tmp_path):
    launch = tmp_path / "elsewhere"
    launch.mkdir()
    shutil.copy(ROOT / "models/vessel/data/tanker.yaml", launch / "my.yaml")
    res = cli(["+case=vessel/static_wind", "tracking=none", "source.data_file=my.yaml"], tmp_path / "out", cwd=launch)
    assert res.returncode == 0, res.stdout + res.stderr
    manifest = json.loads((last_run(tmp_path / "out", "vessel/static_wind") / "manifest.json").read_text())
    assert [i["path"] for i in manifest["inputs"]] == [str(launch / "my.yaml")]
    assert manifest["config"]["source"]["data_file"] == "my.yaml"  # recorded as written


def test_shipped_file_is_the_fallback_and_a_missing_file_lists_the_places_tried(tmp_path):
    from harness.core.context import HarnessInputError
    from harness.core.inputs import find_input

    assert find_input("models/vessel/data/tanker.yaml", "source.data_file", base=tmp_path) == \
        ROOT / "models/vessel/data/tanker.yaml"
    (tmp_path / "models/vessel/data").mkdir(parents=True)
    (tmp_path / "models/vessel/data/tanker.yaml").write_text("mine")
    assert find_input("models/vessel/data/tanker.yaml", "source.data_file", base=tmp_path) == \
        tmp_path / "models/vessel/data/tanker.yaml"  # the launch directory comes first
    with pytest.raises(HarnessInputError) as err:
        find_input("no/such.yaml", "source.data_file", base=tmp_path)
    assert str(err.value) == (f"source.data_file: file 'no/such.yaml' not found; tried {tmp_path}/no/such.yaml "
                              f"(launch directory), {ROOT}/no/such.yaml (files shipped with the harness)")


def test_wall_loads_path_is_resolved_in_the_shared_place(tmp_path):
    from harness.core.compose import compose
    from harness.core.inputs import resolve_input_paths

    (tmp_path / "x.wall-loads.v1.h5").write_bytes(b"")
    cfg = compose(["+case=load_transfer/uniform_pressure", "source=wall_loads_file", "source.path=x.wall-loads.v1.h5"])
    assert resolve_input_paths(cfg, base=tmp_path) == [tmp_path / "x.wall-loads.v1.h5"]
    assert cfg.source.path == str(tmp_path / "x.wall-loads.v1.h5")


# -- SIGINT / SIGTERM: one line, records with status interrupted, MLflow KILLED, exit 130 ----

HELPERS = Path(__file__).resolve().parent / "helpers"
SLEEPY = ["+case=load_transfer/uniform_pressure", "case.adapter=sleepy_adapter:run"]


def signalled(args, outputs: Path, sig) -> subprocess.CompletedProcess:
    """Run the CLI, wait until a run of the sleepy adapter has started, send ``sig``."""
    import time

    env = dict(os.environ, HARNESS_OUTPUTS=str(outputs),
               PYTHONPATH=os.pathsep.join([str(ROOT), str(HELPERS), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(outputs.rglob("started")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_sigterm_mid_run_records_an_interrupted_run(tmp_path, tracking_uri):
    import signal

    from mlflow.tracking import MlflowClient

    res = signalled([*SLEEPY, "+case.params.sleep_s=120", f"tracking.uri={tracking_uri}"], tmp_path, signal.SIGTERM)
    assert res.returncode == 130, res.stdout + res.stderr
    assert res.stdout == "" and "Traceback" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and " interrupted (SIGTERM) after " in lines[0] and " in stage run;" in lines[0], lines
    run_dir = last_run(tmp_path, "load_transfer/uniform_pressure")
    outcome = json.loads((run_dir / "outcome.json").read_text())
    assert outcome["status"] == "interrupted" and outcome["exit_code"] == 130
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    assert manifest["interrupted"]["stage"] == "run" and manifest["interrupted"]["stages_completed"] == ["resolve"]
    assert manifest["interrupted"]["signal"] == "SIGTERM" and manifest["interrupted"]["after_s"] >= 0
    run = MlflowClient(tracking_uri).get_run(outcome["mlflow_run_id"])
    assert run.info.status == "KILLED" and run.data.tags["status"] == "interrupted"
    assert outcome["mlflow_run_id"] in lines[0]


def test_sigint_in_a_sweep_kills_the_parent_and_keeps_finished_jobs(tmp_path, tracking_uri):
    import signal

    from mlflow.tracking import MlflowClient

    res = signalled(["-m", *SLEEPY, "+case.params.sleep_s=0,120,0", f"tracking.uri={tracking_uri}"],
                    tmp_path, signal.SIGINT)
    assert res.returncode == 130, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    ours = [ln for ln in res.stderr.splitlines() if ln.strip() and "[HYDRA]" not in ln]  # not the launcher's log
    assert len(ours) == 1 and ours[0].startswith("harness: load_transfer/uniform_pressure: interrupted (SIGINT)"), ours
    sweep = sorted((tmp_path / "sweeps" / "load_transfer/uniform_pressure").iterdir())[-1]
    state = json.loads((sweep / "study_state.json").read_text())
    client = MlflowClient(tracking_uri)
    parent = client.get_run(state["parent_run_id"])
    assert parent.info.status == "KILLED"
    children = {r.info.run_id: r for r in client.search_runs(
        [parent.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")}
    done = json.loads((sweep / "0" / "outcome.json").read_text())
    stopped = json.loads((sweep / "1" / "outcome.json").read_text())
    assert done["status"] == "ok" and children[done["mlflow_run_id"]].info.status == "FINISHED"
    assert children[done["mlflow_run_id"]].data.metrics["e_F"] == done["metrics"]["e_F"]
    assert stopped["status"] == "interrupted" and children[stopped["mlflow_run_id"]].info.status == "KILLED"
    assert len(children) == 2 and not (sweep / "2").exists()  # the third job never started


# -- shared run directories: files get the umask mode of a plain open(), not mkstemp's 0600 ---

def test_run_and_study_files_get_the_mode_of_the_umask(tmp_path, tracking_uri):
    """umask 002 (a group share): every file is 0664, the study table and figures included."""
    from harness.core.atomic import atomic_write_text, umask_mode

    old = os.umask(0o022)
    try:
        assert umask_mode() == 0o644
        plain = atomic_write_text(tmp_path / "umask022" / "plain.txt", "x")
        assert stat.S_IMODE(plain.stat().st_mode) == 0o644
    finally:
        os.umask(old)

    out = tmp_path / "outputs"
    res = cli(["-m", "+case=load_transfer/inscribed_surface", "+study=load_transfer/mesh_refinement",
               "operator.surface.resolution=4,8",  # two levels are enough here
               f"tracking.uri={tracking_uri}", f"tracking.artifact_root={out / 'mlartifacts'}",
               "tracking.experiment_prefix=modes/"],
              out, preexec_fn=lambda: os.umask(0o002))
    assert res.returncode == 0, res.stdout + res.stderr
    sweep = sorted((out / "sweeps" / "load_transfer/inscribed_surface").iterdir())[-1]
    files = [p for p in out.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"table.csv", "study.json", "convergence.png", "manifest.json", "outcome.json", "metrics.json",
            "config.yaml", "study_state.json"} <= names, names
    assert (sweep / "study" / "table.csv").is_file() and list((sweep / "study").glob("*.png"))
    assert any("mlartifacts" in p.parts for p in files)  # the MLflow artifact copies too
    wrong = {str(p.relative_to(out)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files
             if stat.S_IMODE(p.stat().st_mode) != 0o664}
    assert not wrong, wrong


def test_loky_workers_collect_rarely():
    """harness.worker_gc finds loky's collection interval in the installed joblib and raises it
    to 60 s (a joblib upgrade that drops the setting makes this fail, not the runs slow)."""
    import joblib.externals.loky.process_executor as pe

    from harness.launch.worker_gc import CHECK_DELAY_S, space_loky_collections

    before = pe._MEMORY_LEAK_CHECK_DELAY
    try:
        pe._MEMORY_LEAK_CHECK_DELAY = 1.0
        assert space_loky_collections() is True
        assert pe._MEMORY_LEAK_CHECK_DELAY == CHECK_DELAY_S == 60.0
    finally:
        pe._MEMORY_LEAK_CHECK_DELAY = before
