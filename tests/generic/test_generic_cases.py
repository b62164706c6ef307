"""Generic (YAML-only) cases through the runner: the examples, every reader, the
agreement with a family adapter, bad input (exit 2) and failing commands (exit 1)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness import run_case

ROOT = Path(__file__).resolve().parents[2]
SEARCH = f"hydra.searchpath=[file://{ROOT}/tests/generic/conf]"
PY = f"case.params.parameters.python={sys.executable}"


def run(case, *overrides):
    return run_case(case, overrides=["tracking=none", SEARCH, *overrides])


def manifest(out):
    return json.loads((Path(out.run_dir) / "manifest.json").read_text())


def test_heat1d_compiles_runs_and_matches_the_fourier_mode(harness_env):
    out = run("examples/heat1d")
    assert out.status == "ok" and out.verdict == "pass", out.message
    # e_u = C dx^2 with C = 1.14 (FTCS at r = 0.4); nx = 20
    assert 2.7e-3 < out.metrics["e_u"] < 3.0e-3
    assert out.metrics["n_steps_exact"] < 1e-12
    run_dir = Path(out.run_dir)
    assert (run_dir / "heat1d").is_file() and (run_dir / "solution.png").is_file()
    m = manifest(out)
    assert m["info"]["model"]["argv"][:2] == ["./heat1d", "20"] and m["info"]["model"]["returncode"] == 0
    assert m["info"]["model"]["stdout_tail"] == ["heat1d: nx=20 n_steps=100 dt=0.001 lambda=0.4"]
    assert [Path(i["path"]).name for i in m["inputs"]] == ["heat1d.c"] and m["inputs"][0]["sha256"]
    outputs = {Path(o["path"]).name for o in m["outputs"]}
    assert {"heat1d.csv", "heat1d.json", "model.stdout.txt", "prepare.stderr.txt", "quantities.npz"} <= outputs
    assert m["info"]["metric_units"]["max_error_u"] == "K" and m["info"]["metric_units"]["e_u"] == "1"
    # the config (and its hash) carries the placeholder, not this run's directory
    assert "<project_dir>/examples/heat1d/heat1d.c" in (run_dir / "config.yaml").read_text()


def test_pendulum_callable_energy_and_period(harness_env):
    out = run("examples/pendulum")
    assert out.status == "ok" and out.verdict == "pass", out.message
    T0 = 2 * np.pi * np.sqrt(1.0 / 9.81)
    assert out.metrics["T"] == pytest.approx(T0 * (1 + 0.2**2 / 16), rel=1e-4)  # first amplitude correction
    assert out.metrics["e_T"] < 5e-5 and 2.3e-3 < out.metrics["e_T_small"] < 2.6e-3
    assert 2.3e-4 < out.metrics["energy_drift"] < 2.6e-4
    assert manifest(out)["info"]["metric_units"]["T"] == "s"


def test_generic_path_gives_the_metrics_of_the_family_adapter(harness_env):
    generic = run("examples/load_transfer_uniform")
    family = run("load_transfer/uniform_pressure")
    assert generic.verdict == family.verdict == "pass", (generic.message, family.message)
    for k in ("e_F", "e_J", "e_F_closed", "e_J_closed"):
        assert abs(generic.metrics[k] - family.metrics[k]) <= 1e-15, k
    for k in ("F_M_max", "J_M"):
        assert generic.metrics[k] == pytest.approx(family.metrics[k], rel=1e-14), k
    # a non-trivial error: an inscribed mesh misses part of the disk (e_disk ~ 1 %)
    generic = run("examples/load_transfer_uniform", "case.params.parameters.cover=inscribe",
                  "case.params.parameters.resolution=4")
    family = run("load_transfer/inscribed_surface", "operator.surface.resolution=4")
    assert family.metrics["e_disk"] > 1e-2
    for k in ("e_F", "e_J", "e_disk", "F_M_max"):
        assert generic.metrics[k] == pytest.approx(family.metrics[k], rel=1e-12, abs=1e-16), k


def test_every_reader_slice_reference_file_and_literal_arguments(harness_env):
    value = "a b $HOME; `x`"
    out = run("generic_test/formats", PY, f"+case.params.model.env.HARNESS_TEST_VAR='{value}'")
    assert out.status == "ok", out.message
    for k in ("e_csv", "e_npz", "e_npy", "e_h5", "e_json", "e_file", "e_slice"):
        assert out.metrics[k] == 0.0, k
    assert out.metrics["n"] == 21.0
    run_dir = Path(out.run_dir)
    q = np.load(run_dir / "quantities.npz")
    assert q["y_tail"].shape == (11,) and q["y_h5"].shape == (21,)
    assert [Path(i["path"]).name for i in manifest(out)["inputs"]] == ["writer.py", "sine_reference.csv"]
    # no shell: the label with shell metacharacters reaches the program as one literal argument
    from harness.core.compose import compose

    label = compose(["+case=generic_test/formats", SEARCH]).case.params.parameters.label
    assert all(c in label for c in ";|&$`*>")
    assert json.loads((run_dir / "argv.json").read_text()) == [label, "0", "0.0", f"{run_dir}/marker"]
    for name in ("PWNED", "SUBST", "TICK", "redirected.txt"):
        assert not (run_dir / name).exists(), name
    # the declared environment on top of the inherited one, values literal
    env = json.loads((run_dir / "env.json").read_text())
    assert env["HARNESS_TEST_VAR"] == value and env["PATH"] == os.environ["PATH"]


def test_inherit_env_false_gives_only_the_declared_environment(harness_env):
    out = run("generic_test/formats", PY, "case.params.model.inherit_env=false", "+case.params.model.env.ONLY=1")
    assert out.status == "ok", out.message
    env = json.loads((Path(out.run_dir) / "env.json").read_text())
    assert env.get("ONLY") == "1" and "PATH" not in env and "HARNESS_OUTPUTS" not in env


def test_callable_model_and_callable_reference(harness_env):
    out = run("generic_test/callables")
    assert out.status == "ok" and out.metrics["e_y"] == pytest.approx(1e-3, rel=1e-9)
    out = run("generic_test/callables", "case.params.metrics.e_y.metric=rms_rel")  # as the README shows
    assert out.status == "ok" and out.metrics["e_y"] == pytest.approx(1e-3, rel=1e-9)
    out = run("generic_test/callables", "case.params.metrics.e_y.metric=max_abs_error")
    assert out.status == "ok" and out.metrics["e_y"] == pytest.approx(1e-3, rel=1e-9)  # at t = 0, y = 1


def _check_failed(out, status, pattern):
    import re

    assert out.status == status and re.search(pattern, out.message), out.message
    assert out.exit_code == (2 if status == "invalid" else 1)
    assert "\n" not in out.message
    run_dir = Path(out.run_dir)
    assert not list(run_dir.glob(".*.tmp")), "a temporary file was left behind"
    m = manifest(out)
    assert m["status"] == status and m["error"] == out.message
    return m


@pytest.mark.parametrize("overrides, status, pattern", [
    (["case.params.outputs.y_npz.reader=parquet"], "invalid",
     "case.params.outputs.y_npz.reader: unknown reader 'parquet'"),
    (["case.params.outputs.y_csv.key=z"], "invalid", "case.params.outputs.y_csv.key: .*data.csv: no column 'z' "
                                                      r"\(columns: t, y\)"),
    (["case.params.outputs.y_npy.file=missing.npy"], "invalid",
     "case.params.outputs.y_npy.file: .*missing.npy: the model did not write this file"),
    (["case.params.parameters.exit_code=3"], "error", r"model.command: .* exited with 3 \(expected 0\)"),
    (["case.params.parameters.sleep_s=30", "case.params.model.timeout_s=0.5"], "error",
     r"timed out after 0.5 s and was killed"),
    (["case.params.parameters.python=no-such-solver-xyz"], "error", "executable 'no-such-solver-xyz' not found"),
])
def test_missing_outputs_and_failing_commands(harness_env, caplog, overrides, status, pattern):
    out = run("generic_test/formats", PY, *overrides)
    m = _check_failed(out, status, pattern)
    assert "traceback" not in m["info"]  # a failing model is no crash of the harness
    if "exited with 3" in pattern:  # one line with the last stderr line; the tails and records in the manifest
        assert "last stderr line: 'writer: a line on stderr'" in out.message
        assert "writer: a line on stderr" in caplog.text
        assert m["info"]["model"]["returncode"] == 3 and m["info"]["model"]["argv"][0] == sys.executable
        assert m["info"]["model"]["stderr_tail"] == ["writer: a line on stderr"]
        assert any("writer: label=" in ln for ln in m["info"]["model"]["stdout_tail"])
        assert "writer: label=" in m["info"]["error"]
        assert (Path(out.run_dir) / "model.stderr.txt").read_text() == "writer: a line on stderr\n"


@pytest.mark.parametrize("overrides, pattern", [
    (["case.params.metrics.e_y.metric=rel_l3"], r"case.params.metrics.e_y.metric: unknown metric 'rel_l3' \(known: "),
    (["case.params.reference.y_exact={expression: 't.__class__'}", "case.params.reference.y_exact._target_=null"],
     r"case.params.reference.y_exact.expression: forbidden construct: attribute access"),
    (["case.params.reference.y_exact={expression: 'exp(-tau * t)'}", "case.params.reference.y_exact._target_=null"],
     r"case.params.reference.y_exact.expression: name 'tau' is not defined"),
    (["case.params.reference.y_exact={expression: '__import__(1)'}", "case.params.reference.y_exact._target_=null"],
     r"forbidden construct: call of '__import__', which is not an allowed function"),
    (["case.params.reference.y_exact.kind=baseline"],
     r"case.params.reference.y_exact: a baseline reference reads the tracking store; tracking is off"),
    (["+case.params.metrics.e_y.options.J_scale=1.0"], "case.params.metrics.e_y.options: rel_l2 has no option J_scale"),
    (["case.params.reference.y_exact.unit=s"],
     r"case.params.metrics.e_y: units differ: value y \[m\] vs reference y_exact \[s\]"),
    (["+case.params.model.kwargs.speed=1"], "case.params.model.kwargs: got an unexpected keyword argument 'speed'"),
    (["case.params.model._target_=user_module.not_a_mapping"], "returned list, not a mapping"),
])
def test_bad_declarations_are_invalid_input(harness_env, overrides, pattern):
    _check_failed(run("generic_test/callables", *overrides), "invalid", pattern)


@pytest.mark.parametrize("overrides, pattern", [
    (["case.params.metrics.e_csv.metric=rel_l3"], r"case.params.metrics.e_csv.metric: unknown metric 'rel_l3'"),
    (["case.params.outputs.y_npz.reader=parquet"], "case.params.outputs.y_npz.reader: unknown reader 'parquet'"),
    (["case.params.metrics.e_csv.value='y_csv + y_nope'"],
     "case.params.metrics.e_csv.value: name 'y_nope' is not defined"),
    (["case.params.reference.y_exact.expression='t.real'"],
     "case.params.reference.y_exact.expression: forbidden construct: attribute access"),
    (["+case.params.parameters.t=1"], "case.params.outputs.t: the name 't' is already defined"),
    (["case.params.outputs.t.unit=ms", "case.params.metrics.e_csv.value=t"],
     r"case.params.metrics.e_csv: units differ: value t \[ms\] vs reference y_exact \[1\]"),
])
def test_bad_declarations_are_refused_before_the_model_runs(harness_env, overrides, pattern):
    out = run("generic_test/formats", PY, *overrides)
    _check_failed(out, "invalid", pattern)
    assert not (Path(out.run_dir) / "argv.json").exists() and "model" not in manifest(out)["timings_s"]


def test_schema_rejects_a_misspelt_key_at_composition(harness_env):
    from harness.core.context import HarnessInputError

    with pytest.raises(HarnessInputError, match=r"case \(conf/case/examples/heat1d\.yaml\): unknown key 'params\.model\.timeout'.*did you mean 'timeout_s'"):
        run("examples/heat1d", "case.params.model.timeout=5")


def test_cli_exit_code_2_and_one_line(harness_env, tmp_path):
    env = dict(os.environ, HARNESS_OUTPUTS=str(tmp_path))
    res = subprocess.run([sys.executable, "-m", "harness", "+case=generic_test/formats", SEARCH, PY, "tracking=none",
                          "case.params.metrics.e_npy.metric=nope"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1 and "INVALID" in lines[0], res.stdout
    assert "case.params.metrics.e_npy.metric: unknown metric 'nope'" in lines[0]


def test_baseline_reference_reads_the_accepted_run(harness_env, tracking_uri):
    """kind: baseline: the period of the accepted examples/pendulum run is the reference of
    examples/pendulum_regression; the same step agrees exactly, another step does not."""
    from harness.suites.baseline import main as baseline_main

    def tracked(case, *overrides):
        return run_case(case, overrides=[SEARCH, *overrides], tracking_uri=tracking_uri)

    first = tracked("examples/pendulum_regression")
    _check_failed(first, "invalid", "no accepted baseline run of case examples/pendulum")
    accepted = tracked("examples/pendulum")
    assert accepted.verdict == "pass"
    assert baseline_main(["accept", str(accepted.run_dir), f"tracking.uri={tracking_uri}"]) == 0
    same = tracked("examples/pendulum_regression")
    assert same.verdict == "pass" and same.metrics["e_T_accepted"] == 0.0
    assert same.metrics["T_accepted"] == accepted.metrics["T"]
    ref = manifest(same)["info"]["baseline_references"]["T_base"]
    assert ref["run_id"] == accepted.mlflow_run_id and ref["metric"] == "T"
    coarse = tracked("examples/pendulum_regression", "case.params.parameters.dt=0.02")
    assert coarse.verdict == "fail" and coarse.metrics["e_T_accepted"] > 1e-5
    _check_failed(run("examples/pendulum_regression", "tracking=none"), "invalid", "tracking is off")
