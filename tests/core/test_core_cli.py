"""The CLI contract: help, default suite, one case, overrides, exit codes 0 / 1 / 2."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def harness(args, outputs: Path, timeout=300):
    env = dict(os.environ, HARNESS_OUTPUTS=str(outputs))
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_help_lists_cases_and_every_group(tmp_path):
    res = harness(["--help"], tmp_path)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "case/load_transfer:" in out and "uniform_pressure" in out and "partial_surface" in out
    for group in ("gate: analytic, production", "tolerance: analytic, production", "tracking:",
                  "operator:", "source:", "integrator:", "study/load_transfer:"):
        assert group in out, group
    assert "mesh_refinement" in out and "Exit codes" in out
    # the sweep launchers installed here, one line each on how to pick them
    from harness.launch.launchers import LAUNCHERS, installed

    names = [n for n, _ in installed()]
    assert {"joblib", "ray", "ray_cluster", "slurm"} <= set(names) and len(names) == len(LAUNCHERS)
    for name, how in installed():
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(name + " "))
        assert how in line and (name == "basic" or f"hydra/launcher={name}" in line)
        if name in ("ray_cluster", "slurm"):  # our own launcher configs
            assert (ROOT / "conf/hydra/launcher" / f"{name}.yaml").is_file()


def test_console_script_is_the_same_as_python_m(tmp_path):
    script = Path(sys.executable).with_name("harness")
    if not script.exists():
        pytest.skip("console script not installed in this environment")
    a = subprocess.run([str(script), "--help"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    b = harness(["--help"], tmp_path)
    assert a.returncode == 0 and a.stdout == b.stdout


@pytest.mark.parametrize("args, expected", [
    (["+case=load_transfer/unifrom_pressure"], r"unknown case 'load_transfer/unifrom_pressure'; did you mean: load_transfer/uniform_pressure"),
    (["+case=load_transfer/uniform_pressure", "source.n_ring=3"],
     r"^harness: error: source \(conf/source/analytic_uniform\.yaml\): unknown key 'n_ring'; valid keys: "
     r"amplitude, n_rings, p0, .* \(did you mean 'n_rings'\?\)$"),
    (["+case=load_transfer/uniform_pressure", "source.n_rings=abc"],
     r"^harness: error: source \(conf/source/analytic_uniform\.yaml\): n_rings: expected int, got 'abc' \(str\)$"),
    (["+case=load_transfer/uniform_pressure", "case.gatez=[e_F]"],
     r"^harness: error: case \(conf/case/load_transfer/uniform_pressure\.yaml\): unknown key 'gatez'; "
     r"valid keys: adapter, .* \(did you mean 'gates'\?\)$"),
    (["+case=load_transfer/uniform_pressure", "tracking.timeout_s=soon"],
     r"^harness: error: tracking \(conf/tracking/local\.yaml\): timeout_s: expected float, got 'soon' \(str\)$"),
    (["+case=load_transfer/uniform_pressure", "operator.surface.resolutio=3"],
     r"^harness: error: operator \(conf/operator/conservative_matrix\.yaml\): unknown key 'surface\.resolutio'; "
     r"valid keys of operator\.surface: .*resolution.* \(did you mean 'resolution'\?\)$"),
    (["+case=load_transfer/uniform_pressure", "gate=strict"], r"unknown gate 'strict'"),
])
def test_invalid_config_exits_2_with_one_line(tmp_path, args, expected):
    res = harness(args, tmp_path)
    assert res.returncode == 2
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert re.search(expected, lines[0]), lines[0]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.json"))


def test_default_suite_prints_one_line_per_case(harness_env):
    res = harness([], harness_env)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [ln for ln in res.stdout.splitlines() if re.search(r"run=[0-9a-f]{32}$", ln)]  # the verdict lines
    from harness.core.compose import compose

    suite = sorted(compose(["suite=default"]).suite.select.cases)  # conf/suite/default.yaml, run in name order
    assert len(lines) == len(suite) == 10
    for case, line in zip(suite, lines):
        assert line.startswith(case + "  PASS  "), line
    assert "suite default: 10 cases  pass=10" in res.stdout


def test_one_case_with_override(harness_env):
    res = harness(["+case=load_transfer/parabolic_pressure", "source.n_rings=24", "operator.surface.kind=quad"], harness_env)
    assert res.returncode == 0, res.stdout + res.stderr
    line = res.stdout.strip().splitlines()[-1]
    assert line.startswith("load_transfer/parabolic_pressure  PASS")
    run_dirs = sorted((harness_env / "runs" / "load_transfer" / "parabolic_pressure").iterdir())
    cfg = (run_dirs[-1] / "config.yaml").read_text()
    assert "n_rings: 24" in cfg and "kind: quad" in cfg


def test_failed_gate_exits_1_and_is_recorded(harness_env):
    res = harness(["+case=load_transfer/uniform_pressure", "case.gates=[e_F,F_M_max]",
                   "+gate.bands.F_M_max={pass_max:1.0}"], harness_env)
    assert res.returncode == 1, res.stdout + res.stderr
    line = res.stdout.strip().splitlines()[-1]
    assert "  FAIL  " in line
    run_id = re.search(r"run=([0-9a-f]{32})", line).group(1)
    from mlflow.tracking import MlflowClient

    run = MlflowClient(f"sqlite:///{harness_env}/mlflow.db").get_run(run_id)
    assert run.data.tags["verdict"] == "fail" and run.data.tags["gate.F_M_max"] == "fail"
    assert run.data.metrics["gate_F_M_max"] == 2.0


def test_unreachable_store_exits_2_and_keeps_the_run_directory(tmp_path):
    res = harness(["+case=load_transfer/uniform_pressure", "tracking.uri=http://127.0.0.1:9",
                   "tracking.timeout_s=2"], tmp_path)
    assert res.returncode == 2
    # the error on stderr, once; stdout holds only the case line
    out = [ln for ln in res.stdout.splitlines() if ln.strip()]
    assert len(out) == 1 and out[0].startswith("load_transfer/uniform_pressure  TRACKING_ERROR  "), out
    assert "tracking store http://127.0.0.1:9 unreachable" not in res.stdout
    assert res.stderr.count("tracking store http://127.0.0.1:9 unreachable") == 1, res.stderr
    assert "python -m harness.sync" in res.stderr
    run_dir = next((tmp_path / "runs" / "load_transfer" / "uniform_pressure").iterdir())
    for name in ("config.yaml", "metrics.json", "manifest.json", "outcome.json", "force.png"):
        assert (run_dir / name).is_file(), name
    assert json.loads((run_dir / "outcome.json").read_text())["status"] == "tracking_error"
    assert json.loads((run_dir / "metrics.json").read_text())["verdict"] == "pass"
    assert not list(run_dir.glob(".*.tmp"))


def test_malformed_gate_band_is_invalid_input(tmp_path):
    res = harness(["+case=load_transfer/uniform_pressure", "+gate.bands.e_F={pass_maks:1.0}", "tracking=none"], tmp_path)
    assert res.returncode == 2
    line = res.stdout.strip().splitlines()[-1]
    assert "INVALID" in line and "gate.bands.e_F.pass_maks: unknown band field" in line


@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_a_listing_piped_into_a_reader_that_stops_stops_quietly(tmp_path, reader):
    """`python -m harness --list suite=all | head -1` (or a reader that reads nothing: `| true`,
    gone before the first line is written): no BrokenPipeError traceback."""
    res = subprocess.run(f"{sys.executable} -m harness --list suite=all | {reader}", shell=True, cwd=ROOT,
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, HARNESS_OUTPUTS=str(tmp_path)))
    if reader.startswith("head"):
        assert res.stdout.startswith("suite all: ") and len(res.stdout.splitlines()) == 1
    assert "Traceback" not in res.stderr and "BrokenPipe" not in res.stderr, res.stderr
