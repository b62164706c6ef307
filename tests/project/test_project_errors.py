"""Errors in a user's files and runs, through the CLI as a user meets them: a YAML syntax error,
an unknown group option, a failing model, a case without gates; and `harness init`'s refusal."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.init import init
from tests.conftest import command_env


def _env():
    return command_env(drop=("HARNESS_OUTPUTS", "HARNESS_CASES", "HARNESS_PROJECT"), checkout_on_path=False)


def harness(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("user_repo")
    init(root)
    return root


def _last_run(root: Path, case: str) -> Path:
    return sorted((root / "outputs/runs" / case).iterdir())[-1]


def test_yaml_syntax_error_names_file_line_and_column(project):
    bad = project / "verification/case/heat/broken.yaml"
    bad.write_text("# @package _global_\ncase:\n  name: heat/broken\n  tags: [fast\n  gates: []\n")
    try:
        for args in (["+case=heat/broken"], ["--list", "suite=project"]):
            res = harness(project, *args)
            assert res.returncode == 2, res.stdout + res.stderr
            assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1, res.stderr
            assert res.stderr.startswith("harness: error: verification/case/heat/broken.yaml:5:8: not valid YAML: "), \
                res.stderr
            assert "at line 4, column 9" in res.stderr  # where the unclosed list started
    finally:
        bad.unlink()


def test_unknown_group_option_in_a_user_file_names_the_file(project):
    case = (project / "verification/case/heat/ftcs.yaml").read_text()
    bad = project / "verification/case/heat/typo.yaml"
    bad.write_text(case.replace("override /gate: production", "override /gate: prodution")
                   .replace("name: heat/ftcs", "name: heat/typo"))
    line = bad.read_text().splitlines().index("  - override /gate: prodution") + 1
    try:
        res = harness(project, "+case=heat/typo")
    finally:
        bad.unlink()
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr == (f"harness: error: verification/case/heat/typo.yaml:{line}: unknown gate 'prodution'; "
                          "did you mean: production\n")


def test_unknown_key_in_a_user_case_file_names_the_file(project):
    case = (project / "verification/case/heat/ftcs.yaml").read_text()
    bad = project / "verification/case/heat/key.yaml"
    bad.write_text(case.replace("  key_metrics:", "  key_metricz:").replace("name: heat/ftcs", "name: heat/key"))
    try:
        res = harness(project, "+case=heat/key")
    finally:
        bad.unlink()
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith("harness: error: case (verification/case/heat/key.yaml): unknown key "
                                 "'key_metricz'; valid keys: "), res.stderr
    assert res.stderr.endswith("(did you mean 'key_metrics'?)\n") and res.stderr.count("\n") == 1


def test_failing_model_is_a_failed_run_in_one_line_with_its_records(project):
    command = f"case.params.model.command=[{sys.executable},-c,'import sys; print(1); sys.stderr.write(\"solver: diverged at step 7\"); sys.exit(3)']"
    res = harness(project, "+case=heat/ftcs", command, "tracking=none")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and "ModelFailed" not in res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(errors) == 1, res.stderr
    assert errors[0].endswith(f"heat/ftcs: case.params.model.command: {sys.executable} exited with 3 (expected 0); "
                              "last stderr line: 'solver: diverged at step 7'; see model.stderr.txt in the run "
                              "directory"), errors[0]
    assert res.stdout.startswith("heat/ftcs  ERROR  ")
    manifest = json.loads((_last_run(project, "heat/ftcs") / "manifest.json").read_text())
    assert manifest["status"] == "error" and manifest["error"].startswith("case.params.model.command: ")
    model = manifest["info"]["model"]
    assert model["argv"][0] == sys.executable and model["returncode"] == 3 and not model["timed_out"]
    assert model["stderr_tail"] == ["solver: diverged at step 7"] and model["stdout_tail"] == ["1"]
    assert model["seconds"] > 0 and "traceback" not in manifest["info"]


def test_case_without_gates_warns_and_says_so(project):
    res = harness(project, "+case=heat/ftcs", "case.gates=[]", "tracking=none")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("heat/ftcs  PASS(no gates)  e_u=0.002851"), res.stdout
    warnings = [ln for ln in res.stderr.splitlines() if "nothing is judged" in ln]
    assert len(warnings) == 1 and "WARNING" in warnings[0], res.stderr
    run = _last_run(project, "heat/ftcs")
    assert json.loads((run / "metrics.json").read_text())["no_gates"] is True
    assert json.loads((run / "outcome.json").read_text())["no_gates"] is True
    assert "nothing is judged" in json.loads((run / "manifest.json").read_text())["info"]["no_gates"]
    # in a suite: the table and the dashboard say PASS(no gates), JUnit carries the property
    case = (project / "verification/case/heat/ftcs.yaml").read_text()
    gateless = project / "verification/case/heat/gateless.yaml"
    gateless.write_text(case.replace("gates: [e_u]", "gates: []").replace("name: heat/ftcs", "name: heat/gateless"))
    try:
        res = harness(project, "suite=project", "suite.select.cases=[heat/gateless]", "tracking=none")
    finally:
        gateless.unlink()
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"^heat/gateless +PASS\(no gates\) ", res.stdout, re.M), res.stdout
    from junitparser import JUnitXml

    suite_dir = sorted((project / "outputs/suites/project").iterdir())[-1]
    (tc,) = [c for s in JUnitXml.fromfile(str(suite_dir / "junit.xml")) for c in s]
    assert tc.is_passed and tc.name == "gateless"
    import xml.etree.ElementTree as ET

    props = {p.get("name"): p.get("value") for p in ET.parse(suite_dir / "junit.xml").iter("property")}
    assert props["no_gates"] == "true"
    assert "PASS(no gates)" in (suite_dir / "dashboard.html").read_text()


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path):
    (tmp_path / "verification/case/heat").mkdir(parents=True)
    (tmp_path / "verification/case/heat/ftcs.yaml").write_text("mine\n")
    res = harness(tmp_path, "init")
    assert res.returncode == 2
    assert res.stderr == ("harness init: error: verification/case/heat/ftcs.yaml: already there; "
                          "init overwrites nothing (no file written)\n")
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == \
        ["verification/case/heat/ftcs.yaml"]
    assert (tmp_path / "verification/case/heat/ftcs.yaml").read_text() == "mine\n"
