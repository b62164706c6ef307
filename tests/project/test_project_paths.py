"""A user's project: found like pytest finds its rootdir; its cases first-class in the catalogue,
suites and close-name suggestions; ``${project_root:}``, ``${case_dir:}`` and relative paths
resolved against the project root, the same in the CLI and ``run_case``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.context import HarnessInputError

ROOT = Path(__file__).resolve().parents[2]

CALLABLE_CASE = """\
# @package _global_
defaults:
  - /generic_case@_here_
  - _self_
case:
  name: mine/square
  family: mine
  tags: [fast, mine_tag]
  gates: [err]
  params:
    parameters: {x: 3.0}
    model:
      _target_: squarer.square
      pythonpath: [lib]          # relative: the project root
      inputs: [lib/squarer.py]   # relative: the project root
      kwargs: {x: "${case.params.parameters.x}", note: "${project_root:}|${case_dir:}", out: "${run_dir:}/note.json"}
    outputs:
      y: {unit: "1"}
      note_len: {unit: "1"}
    reference:
      y_ref: {file: data/ref.json, key: y, reader: json, unit: "1"}   # relative: the project root
    metrics:
      err: {metric: abs_error, value: y, reference: y_ref}
gate:
  bands:
    err: {pass_max: 1.0e-12}
"""

SQUARER = """\
def square(x, note, out):
    import json
    with open(out, "w") as fh:
        json.dump({"note": note}, fh)
    return {"y": x * x, "note_len": len(note)}
"""


def make_project(root: Path, kind: str = "pyproject") -> Path:
    """A user project in ``root``: verification/case/mine/square.yaml, lib/squarer.py, data/ref.json."""
    (root / "verification/case/mine").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "data").mkdir()
    (root / "verification/case/mine/square.yaml").write_text(CALLABLE_CASE)
    (root / "lib/squarer.py").write_text(SQUARER)
    (root / "data/ref.json").write_text(json.dumps({"y": 9.0}))
    if kind == "pyproject":
        (root / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.harness]\ncases = ["verification"]\n')
    else:
        (root / "harness.yaml").write_text("cases: [verification]\n")
    return root


@pytest.fixture
def in_project(tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_OUTPUTS", raising=False)
    monkeypatch.delenv("HARNESS_CASES", raising=False)
    monkeypatch.delenv("HARNESS_PROJECT", raising=False)
    root = make_project(tmp_path / "repo")
    (root / "sub/deeper").mkdir(parents=True)
    monkeypatch.chdir(root / "sub/deeper")  # launched from below the project root
    return root


def test_project_file_is_the_nearest_with_a_harness_table(tmp_path, monkeypatch):
    from harness.core.project import find_project

    monkeypatch.delenv("HARNESS_CASES", raising=False)
    monkeypatch.delenv("HARNESS_PROJECT", raising=False)
    outer = make_project(tmp_path / "outer", kind="harness.yaml")
    inner = outer / "pkg"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "inner"\n')  # no [tool.harness]: skipped
    project = find_project(inner)
    assert project.root == outer.resolve() and project.case_dirs == ((outer / "verification").resolve(),)
    assert project.source == str((outer / "harness.yaml").resolve())
    assert find_project(tmp_path) is None
    (inner / "pyproject.toml").write_text('[tool.harness]\ncases = ["nowhere"]\n')
    with pytest.raises(HarnessInputError, match=r"pyproject.toml: tool.harness.cases\[0\]: directory 'nowhere' not found"):
        find_project(inner)
    (inner / "pyproject.toml").write_text('[tool.harness]\ncase = ["verification"]\n')
    with pytest.raises(HarnessInputError, match=r"pyproject.toml: tool.harness.case: unknown key \(keys: cases, outputs, "):
        find_project(inner)


def test_harness_cases_names_directories_without_a_file(tmp_path, monkeypatch):
    from harness.core.project import find_project

    make_project(tmp_path)
    (tmp_path / "pyproject.toml").unlink()
    monkeypatch.setenv("HARNESS_CASES", "verification")
    monkeypatch.delenv("HARNESS_PROJECT", raising=False)
    project = find_project(tmp_path)
    assert project.root == tmp_path.resolve() and project.case_dirs == ((tmp_path / "verification").resolve(),)
    # --cases DIR on the command line does the same (and reaches the jobs through $HARNESS_CASES)
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_OUTPUTS", "HARNESS_CASES", "HARNESS_PROJECT")}
    res = subprocess.run([sys.executable, "-m", "harness", "--list", "suite=project", "--cases", "verification"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines()[1].split() == ["mine/square", "[fast,", "mine_tag]"]
    res = subprocess.run([sys.executable, "-m", "harness", "--list", "suite=project"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and res.stderr.startswith("harness: error: conf/suite/project.yaml: "
                                                         "suite.select.project: no user project found"), res.stderr


def test_user_cases_join_catalogue_suites_and_suggestions(in_project):
    from harness.core.compose import compose
    from harness.suites.catalogue import catalogue
    from harness.suites.suite import select

    cases = {c.name: c for c in catalogue()}
    assert cases["mine/square"].project and not cases["load_transfer/uniform_pressure"].project
    assert [c.name for c in select(compose(["suite=project"]).suite)] == ["mine/square"]
    assert "mine/square" in [c.name for c in select(compose(["suite=fast"]).suite)]
    assert [c.name for c in select(compose(["suite=smoke", "suite.select.cases=[mine/*]"]).suite)] == ["mine/square"]
    with pytest.raises(HarnessInputError, match=r"^unknown case 'mine/squar'; did you mean: mine/square$"):
        compose(["+case=mine/squar"])
    # a suite of the user's own, found in their folder; its errors name that file
    (in_project / "verification/suite").mkdir()
    (in_project / "verification/suite/mine.yaml").write_text(
        "defaults:\n  - /schema_suite@_here_\n  - _self_\nname: mine\nselect:\n  tags: [no_such_tag]\n")
    with pytest.raises(HarnessInputError, match=r"^verification/suite/mine.yaml: suite.select.tags: unknown tag"):
        select(compose(["suite=mine"]).suite)


def test_paths_resolve_against_the_project_root_in_cli_and_api(in_project, tmp_path):
    from harness import run_case

    out = run_case("mine/square", overrides=["tracking=none"])
    assert out.verdict == "pass" and out.metrics == {"err": 0.0}, out.message
    # outputs default to <project root>/outputs, wherever below it the command ran
    assert Path(out.run_dir).is_relative_to(in_project / "outputs")
    note = json.loads((Path(out.run_dir) / "note.json").read_text())["note"]
    assert note == f"{in_project.resolve()}|{(in_project / 'verification/case/mine').resolve()}"
    manifest = json.loads((Path(out.run_dir) / "manifest.json").read_text())
    assert sorted(i["path"] for i in manifest["inputs"]) == [str((in_project / "data/ref.json").resolve()),
                                                            str((in_project / "lib/squarer.py").resolve())]
    # the CLI, launched elsewhere in the project, resolves the same paths to the same metrics
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_OUTPUTS"}
    res = subprocess.run([sys.executable, "-m", "harness", "+case=mine/square", "tracking=none"],
                         cwd=in_project / "sub", env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.startswith("mine/square  PASS  "), res.stdout + res.stderr
    res = subprocess.run([sys.executable, "-m", "harness", "--help"], cwd=in_project, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0 and "\ncase/mine: square\n" in res.stdout, res.stdout + res.stderr
    assert f"== Your project ({(in_project / 'pyproject.toml').resolve()})" in res.stdout
    # run_case(project=...) from outside the project
    os.chdir(tmp_path)
    again = run_case("mine/square", overrides=["tracking=none"], project=str(in_project))
    assert again.metrics == out.metrics and Path(again.run_dir).is_relative_to(in_project / "outputs")


def test_a_missing_relative_input_lists_the_places_tried(in_project):
    from harness import run_case

    out = run_case("mine/square", overrides=["tracking=none", "case.params.model.inputs=[lib/gone.py]"])
    assert out.status == "invalid" and out.exit_code == 2
    assert out.message == (
        f"case.params.model.inputs[0]: file 'lib/gone.py' not found; tried {in_project.resolve()}/lib/gone.py "
        f"(project root), {(in_project / 'sub/deeper').resolve()}/lib/gone.py (launch directory), "
        f"{ROOT}/lib/gone.py (files shipped with the harness)")
