"""A user project beyond the basic launcher and the CLI. Under joblib, its jobs (in worker
processes, each in its own directory with ``hydra.job.chdir=true``) still find the user's cases
(from the project file or a relative ``$HARNESS_CASES``), give the basic launcher's metrics and
write under the project's outputs; a user's own ``hydra.searchpath`` adds to the project's folders;
``${hydra:runtime.cwd}`` resolves through ``run_case`` as on the command line."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.project.test_project_paths import in_project, make_project  # noqa: F401  (fixture)

STUDY = """\
# @package _global_
study:
  name: mine/x_table
  kind: table
  description: "y and its error against x"
  parameter: case.params.parameters.x
  metric: err
  spacing: direct
hydra:
  sweeper:
    params:
      case.params.parameters.x: 1.0,2.0,3.0
"""
SWEEP = ["-m", "+case=mine/square", "+study=mine/x_table", "tracking=none", "gate.bands.err.pass_max=10"]
JOBLIB = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "hydra.job.chdir=true"]


def _harness(args, cwd, **env):
    base = {k: v for k, v in os.environ.items() if k not in ("HARNESS_OUTPUTS", "HARNESS_CASES", "HARNESS_PROJECT")}
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env={**base, **env},
                          capture_output=True, text=True, timeout=300)


def _sweep_metrics(outputs: Path, before: set) -> dict:
    """{x: metrics} of the one sweep written under ``outputs`` since ``before``."""
    sweeps = sorted(set((outputs / "sweeps/mine/square").iterdir()) - before)
    assert len(sweeps) == 1, sweeps
    out = {}
    for metrics in sorted(sweeps[0].glob("*/metrics.json")):
        note = json.loads((metrics.parent / "note.json").read_text())["note"]
        assert note.startswith(str(outputs.parent.resolve()) + "|")  # ${project_root:} in the job
        doc = json.loads(metrics.read_text())
        out[metrics.parent.name] = (doc["verdict"], doc["metrics"])
    return out


def _files(root: Path) -> set:
    return {p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _listing(outputs: Path) -> set:
    d = outputs / "sweeps/mine/square"
    return set(d.iterdir()) if d.is_dir() else set()


def test_joblib_workers_see_the_user_project(in_project):  # noqa: F811
    root = in_project
    (root / "verification/study/mine").mkdir(parents=True)
    (root / "verification/study/mine/x_table.yaml").write_text(STUDY)
    outputs = root / "outputs"
    files = _files(root)
    res = _harness(SWEEP, cwd=root / "sub")
    assert res.returncode == 0, res.stdout + res.stderr
    basic = _sweep_metrics(outputs, set())
    assert basic == {"0": ("pass", {"err": 8.0}), "1": ("pass", {"err": 5.0}), "2": ("pass", {"err": 0.0})}
    # joblib, 2 workers, each job in its own directory: same metrics, under the same outputs
    before = _listing(outputs)
    res = _harness([*SWEEP, *JOBLIB], cwd=root / "sub")
    assert res.returncode == 0 and "Joblib.Parallel(n_jobs=2" in res.stderr, res.stdout + res.stderr
    assert _sweep_metrics(outputs, before) == basic
    res = _harness(["suite=project", "tracking=none", *JOBLIB], cwd=root / "sub")
    assert res.returncode == 0 and "\nmine/square  PASS" in res.stdout, res.stdout + res.stderr
    assert "suite project: 1 cases  pass=1 " in res.stdout
    # no project file: a relative $HARNESS_CASES, resolved against the launch directory, not the job's
    (root / "pyproject.toml").unlink()
    before = _listing(outputs)
    res = _harness([*SWEEP, *JOBLIB], cwd=root, HARNESS_CASES="verification")
    assert res.returncode == 0, res.stdout + res.stderr
    assert _sweep_metrics(outputs, before) == basic
    # every output under the project's outputs (the suite's reports too), none in the jobs' directories
    assert {p for p in _files(root) - files if not p.is_relative_to(outputs)} == set()
    assert len(list((outputs / "suites/project").glob("*/junit.xml"))) == 1


def test_a_users_searchpath_adds_to_the_project_folders(in_project, tmp_path):  # noqa: F811
    from harness.core.compose import compose

    extra = tmp_path / "extra"
    (extra / "case/other").mkdir(parents=True)
    (extra / "case/other/cube.yaml").write_text(
        (in_project / "verification/case/mine/square.yaml").read_text()
        .replace("mine/square", "other/cube").replace("${case_dir:}", "-"))
    searchpath = f"hydra.searchpath=[file://{extra}]"
    assert compose(["+case=mine/square", searchpath]).case.name == "mine/square"  # the project's folder stays
    assert compose(["+case=other/cube", searchpath]).case.name == "other/cube"  # the user's is added
    res = _harness(["+case=mine/square", "tracking=none", searchpath], cwd=in_project)
    assert res.returncode == 0 and res.stdout.startswith("mine/square  PASS  "), res.stdout + res.stderr


def test_hydra_runtime_cwd_resolves_in_run_case_as_in_the_cli(in_project):  # noqa: F811
    from hydra.core.hydra_config import HydraConfig

    from harness import run_case

    note = "case.params.model.kwargs.note=${hydra:runtime.cwd}"
    out = run_case("mine/square", overrides=["tracking=none", note])
    assert out.verdict == "pass" and out.metrics == {"err": 0.0}, out.message
    assert json.loads((Path(out.run_dir) / "note.json").read_text())["note"] == os.getcwd()
    assert not HydraConfig.initialized()  # set for the run only
    res = _harness(["+case=mine/square", "tracking=none", note], cwd=os.getcwd())
    assert res.returncode == 0, res.stdout + res.stderr
    cli_runs = sorted((in_project / "outputs/runs/mine/square").glob("*/note.json"), key=lambda p: p.stat().st_mtime)
    assert json.loads(cli_runs[-1].read_text())["note"] == os.getcwd()
