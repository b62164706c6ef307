"""Baselines and regressions end to end: accept a suite, rerun it with the model changed
(the test adapter's result depends on HARNESS_TEST_DRIFT, outside the config, as a code
change would) and see the regression in the table, in MLflow, in JUnit and in the exit
code; rerun unchanged: no regression; enforce=false: reported, exit 0; compare two runs."""
from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CASES = ["load_transfer/exterior_zero", "load_transfer/sign"]
ADAPTER = "case.adapter=drift_adapter:run"
ARGS = ["suite=fast", f"suite.select.cases=[{','.join(CASES)}]", ADAPTER]


def baseline_cli(args, outputs: Path):
    """``python -m harness baseline ARGS`` in this process: (exit code, stdout, stderr)."""
    from harness.suites import baseline

    old = os.environ.get("HARNESS_OUTPUTS")
    os.environ["HARNESS_OUTPUTS"] = str(outputs)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = baseline.main(args)
    finally:
        if old is None:
            os.environ.pop("HARNESS_OUTPUTS")
        else:
            os.environ["HARNESS_OUTPUTS"] = old
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def accepted(mixed_suite, suite_outputs):
    """The mixed suite (test_suite_run.py) accepted as 'ci': the runs with status ok only."""
    _, suite_dir, _ = mixed_suite
    code, out, err = baseline_cli(["accept", str(suite_dir), "--name", "ci"], suite_outputs)
    assert code == 0, err
    assert ("accepted baseline ci: 2 case runs; not accepted: load_transfer/exterior_zero (error), "
            "load_transfer/offset_axis (invalid)") in out
    return suite_dir


@pytest.fixture(scope="module")
def drifted(accepted, suite_outputs, cli):
    res = cli(ARGS, suite_outputs, env={"HARNESS_TEST_DRIFT": "1e-6"})
    suite_dir = sorted((suite_outputs / "suites" / "fast").iterdir())[-1]
    return res, suite_dir, json.loads((suite_dir / "suite.json").read_text())


def test_baseline_list_and_show(accepted, suite_outputs):
    code, out, err = baseline_cli(["show", "ci"], suite_outputs)
    assert code == 0, err
    assert "baseline ci: 2 cases" in out and "load_transfer/sign  PASS" in out and "load_transfer/axis  FAIL" in out
    code, out, _ = baseline_cli(["list"], suite_outputs)
    assert code == 0 and out.splitlines()[1].startswith("ci ")
    code, _, err = baseline_cli(["show", "nope"], suite_outputs)
    assert code == 2 and "baseline 'nope': not found (baselines: ci)" in err


def test_changed_model_is_a_regression_everywhere(drifted, suite_outputs):
    from junitparser import Failure, JUnitXml
    from mlflow.tracking import MlflowClient

    res, suite_dir, summary = drifted
    assert res.returncode == 1, res.stdout + res.stderr  # every gate passes: the regression alone fails it
    assert "load_transfer/sign  PASS  e_F=0" in res.stdout and "REGRESSION(F_M_max)" in res.stdout
    table = res.stdout[res.stdout.index("case  "):]
    assert any(ln.startswith("load_transfer/sign") and "  PASS  " in ln and "REGRESSION" in ln for ln in table.splitlines())
    assert any(ln.startswith("load_transfer/exterior_zero") and "no_baseline" in ln for ln in table.splitlines())
    assert "regressions=1" in res.stdout and summary["counts"]["regression"] == 1
    cases = {c.name: c for c in next(iter(JUnitXml.fromfile(str(suite_dir / "junit.xml"))))}
    fail = cases["sign"].result[0]
    assert isinstance(fail, Failure) and fail.type == "regression" and "F_M_max" in fail.message
    assert cases["exterior_zero"].is_passed
    row = next(r for r in summary["rows"] if r["case"] == "load_transfer/sign")
    run = MlflowClient(f"sqlite:///{suite_outputs}/mlflow.db").get_run(row["mlflow_run_id"])
    m, t = run.data.metrics, run.data.tags
    assert t["regression"] == "regression" and t["regression.metrics"] == "F_M_max"
    assert m["regression_F_M_max"] == 2.0 and m["regression_e_F"] == 0.0
    assert m["baseline_F_M_max"] * (1 + 1e-6) == pytest.approx(m["F_M_max"], rel=1e-14)
    assert m["rel_change_F_M_max"] == pytest.approx(1e-6, rel=1e-8)
    assert "regression: **regression**" in t["mlflow.note.content"]


def test_unchanged_rerun_and_enforce_false(accepted, suite_outputs, monkeypatch):
    from harness.core.api import run_case

    monkeypatch.setenv("HARNESS_OUTPUTS", str(suite_outputs))
    monkeypatch.syspath_prepend(str(HERE))
    uri = f"sqlite:///{suite_outputs}/mlflow.db"
    same = run_case("load_transfer/sign", overrides=[ADAPTER], tracking_uri=uri)
    assert same.regression["status"] == "ok" and same.regression["regressed"] == [] and same.exit_code == 0
    assert same.regression["metrics"]["F_M_max"]["rel_change"] == 0.0
    monkeypatch.setenv("HARNESS_TEST_DRIFT", "1e-6")
    loose = run_case("load_transfer/sign", overrides=[ADAPTER, "gate.regression.enforce=false"], tracking_uri=uri)
    assert loose.regression["status"] == "regression" and loose.exit_code == 0
    banded = run_case("load_transfer/sign", overrides=[ADAPTER, "+gate.regression.bands.F_M_max={rel:1e-5}",
                                                       "+gate.regression.bands.F_M={rel:1e-5}"], tracking_uri=uri)
    assert banded.regression["status"] == "ok" and banded.exit_code == 0  # inside a per-metric band
    other = run_case("load_transfer/sign", overrides=[ADAPTER, "source.n_rings=12"], tracking_uri=uri)
    assert other.regression["status"] == "config_changed" and other.exit_code == 0


def test_compare_lists_exactly_the_changed_keys(accepted, suite_outputs, monkeypatch, capsys):
    from harness.suites import compare
    from harness.core.api import run_case

    monkeypatch.setenv("HARNESS_OUTPUTS", str(suite_outputs))
    monkeypatch.syspath_prepend(str(HERE))
    uri = f"sqlite:///{suite_outputs}/mlflow.db"
    a = run_case("load_transfer/sign", overrides=[ADAPTER, "source.n_rings=24"], tracking_uri=uri)
    b = run_case("load_transfer/sign", overrides=[ADAPTER, "source.n_rings=32", "operator.surface.kind=quad"],
                 tracking_uri=uri)
    assert compare.main([str(a.run_dir), str(b.run_dir), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    (case,) = result["cases"]
    assert sorted(k for k, _, _ in case["config"]["changed"]) == ["operator.surface.kind", "source.n_rings"]
    assert case["config"]["added"] == [] and case["config"]["removed"] == []
    assert ["source.n_rings", "24", "32"] in case["config"]["changed"]
    assert case["inputs"] == {"added": [], "removed": [], "changed": []}
    assert compare.main(["baseline:ci", str(a.run_dir)]) == 0  # a baseline against a run, as text
    text = capsys.readouterr().out
    assert "== load_transfer/sign  verdict PASS (same)" in text and "~ source.n_rings: 16 -> 24" in text
    assert compare.main(["nope", "latest"]) == 2
