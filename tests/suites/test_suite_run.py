"""A suite end to end through the CLI: one verdict per case, the worst exit code, the table,
JUnit XML (schema-valid, read by junitparser), the dashboard in headless Chromium, and the
MLflow parent run with its children; all four agree on the counts."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = ["load_transfer/axis", "load_transfer/exterior_zero", "load_transfer/offset_axis", "load_transfer/sign"]


def test_worst_exit_code_and_table(mixed_suite):
    res, suite_dir, summary = mixed_suite
    assert res.returncode == 2, res.stdout + res.stderr  # invalid input is the worst of the four
    out = res.stdout
    expected = {"load_transfer/sign": "PASS", "load_transfer/axis": "FAIL", "load_transfer/exterior_zero": "ERROR",
                "load_transfer/offset_axis": "INVALID"}
    table = out[out.index("case  "):]
    for case, word in expected.items():
        assert re.search(rf"^{re.escape(case)}\s+{word}\s", table, re.M), (case, table)
    assert "suite fast: 4 cases  pass=1 warn=0 fail=1 error=1 invalid=1 skipped=0  regressions=0" in out
    assert summary["exit_code"] == 2 and summary["counts"]["cases"] == 4
    assert f"{suite_dir}/junit.xml" in out


def test_junit_is_schema_valid_and_read_by_junitparser(mixed_suite):
    from junitparser import Error, Failure, JUnitXml, Properties
    from lxml import etree

    _, suite_dir, summary = mixed_suite
    schema = etree.XMLSchema(etree.parse(str(ROOT / "schemas" / "junit.xsd")))
    doc = etree.parse(str(suite_dir / "junit.xml"))
    assert schema.validate(doc), schema.error_log
    xml = JUnitXml.fromfile(str(suite_dir / "junit.xml"))
    suites = list(xml)
    assert len(suites) == 1 and suites[0].tests == 4 and suites[0].failures == 1 and suites[0].errors == 2
    cases = {c.name: c for c in suites[0]}
    assert set(cases) == {c.split("/", 1)[1] for c in CASES}
    assert all(c.classname == "load_transfer" for c in cases.values())
    assert cases["sign"].is_passed
    assert isinstance(cases["axis"].result[0], Failure) and cases["axis"].result[0].type == "gate"
    assert isinstance(cases["exterior_zero"].result[0], Error) and cases["exterior_zero"].result[0].type == "error"
    assert "injected crash" in cases["exterior_zero"].result[0].message
    assert cases["offset_axis"].result[0].type == "invalid"
    ids = {r["case"].split("/", 1)[1]: r["mlflow_run_id"] for r in summary["rows"]}
    for name, case in cases.items():
        props = {p.name: p.value for p in case.child(Properties)}
        assert props["mlflow_run_id"] == ids[name]
        assert case.system_out.startswith(f"load_transfer/{name}  ")
    assert "metric.F_M_max" in {p.name for p in cases["sign"].child(Properties)}


def test_mlflow_parent_children_notes_and_real_times(mixed_suite, suite_outputs):
    from mlflow.tracking import MlflowClient

    _, suite_dir, summary = mixed_suite
    c = MlflowClient(f"sqlite:///{suite_outputs}/mlflow.db")
    parent = c.get_run(summary["parent_run_id"])
    assert parent.info.run_name == "suite:fast" and parent.info.status == "FAILED"
    m = parent.data.metrics
    assert (m["n_cases"], m["n_pass"], m["n_fail"], m["n_error"], m["n_invalid"]) == (4, 1, 1, 1, 1)
    assert "Suite `fast`" in parent.data.tags["mlflow.note.content"]
    children = c.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert sorted(r.info.run_name for r in children) == sorted(CASES)
    rows = {r["case"]: r for r in summary["rows"]}
    for run in children:
        row = rows[run.info.run_name]
        note = run.data.tags["mlflow.note.content"]
        assert note.startswith(f"### {run.info.run_name}: ") and "regression:" in note
        duration = (run.info.end_time - run.info.start_time) / 1000
        manifest = json.loads((Path(row["run_dir"]) / "manifest.json").read_text())
        # the recorded run spans the case: at least the model's time, at most the job's wall time
        assert manifest["timings_s"].get("run", 0.0) <= duration <= row["wall_s"] + 0.05
    sign = next(r for r in children if r.info.run_name == "load_transfer/sign")
    assert "| e_F |" in sign.data.tags["mlflow.note.content"]


def test_dashboard_in_headless_chromium(mixed_suite, browser):
    import subprocess
    import sys

    _, suite_dir, summary = mixed_suite
    (suite_dir / "dashboard.html").unlink()  # rebuilt by python -m harness.report <suite dir>
    res = subprocess.run([sys.executable, "-m", "harness.report", str(suite_dir)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert res.returncode == 0 and res.stdout.strip() == str(suite_dir / "dashboard.html"), res.stderr
    browser.get((suite_dir / "dashboard.html").as_uri())
    cells = browser.find_elements("css selector", "table.matrix td.cell")
    assert len(cells) == summary["counts"]["cases"] == 4
    verdicts = {c.get_attribute("data-case"): c.get_attribute("data-verdict") for c in cells}
    assert verdicts == {"load_transfer/sign": "pass", "load_transfer/axis": "fail",
                        "load_transfer/exterior_zero": "error", "load_transfer/offset_axis": "invalid"}
    axis = next(c for c in cells if c.get_attribute("data-case") == "load_transfer/axis")
    assert "fail" in axis.get_attribute("class").split()
    assert axis.value_of_css_property("background-color") != \
        next(c for c in cells if c.get_attribute("data-case") == "load_transfer/sign").value_of_css_property("background-color")
    assert browser.find_element("id", "suite-verdict").text == "FAILED"
    # a run's own report is linked and opens
    link = axis.find_element("css selector", "a").get_attribute("href")
    browser.get(link)
    assert "load_transfer/axis" in browser.find_element("tag name", "body").text



def test_spent_budget_skips_cases(tmp_path, cli):
    from junitparser import JUnitXml, Skipped

    res = cli(["suite=smoke", "suite.budget_s=0", "tracking=none"], tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr  # a suite that did not run its cases did not verify them
    assert "suite smoke: 3 cases  pass=0 warn=0 fail=0 error=0 invalid=0 skipped=3" in res.stdout
    suite_dir = next((tmp_path / "suites" / "smoke").iterdir())
    xml = next(iter(JUnitXml.fromfile(str(suite_dir / "junit.xml"))))
    assert xml.skipped == 3 and all(isinstance(c.result[0], Skipped) for c in xml)
    assert not list(suite_dir.glob("*/metrics.json"))  # no case ran
