"""The README's "Suites, baselines and CI" section, run as written.

The suite command runs in a subprocess in a fresh working directory (outputs land in its
./outputs); the baseline, compare and --list commands are the same entry point
(``harness.__main__.main``) called with the command's own arguments in that directory. The
CI snippets' harness commands are the table's; their artifact paths must find the files the
suite wrote. ``pip install`` lines are not run (they would reinstall the shared
environment; .ci/run installs the same way). The full-catalogue command runs, marked slow,
in test_suite_all.py.
"""
from __future__ import annotations

import glob
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Suites, baselines and CI")
    end = text.find("\n## ", start + 10)
    return text[start:end if end > 0 else len(text)]


def commands(text: str):
    return re.findall(r"`(python -m harness[^`]*)`", text)


def test_readme_ci_section_runs_as_written(tmp_path, monkeypatch, capsys):
    from harness.cli.main import main

    text = section()
    shown = commands(text)
    snippets = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]
    gh = [s["run"] for s in snippets[0]["jobs"]["verify"]["steps"] if "run" in s]
    gl = snippets[1]["verify"]["script"]
    suite_cmd = "python -m harness suite=smoke hydra/launcher=joblib hydra.launcher.n_jobs=2"
    assert suite_cmd in shown and suite_cmd in gh and suite_cmd in gl
    assert [c for c in gh + gl if c.startswith("python -m harness")] == [suite_cmd, suite_cmd]

    env = {k: v for k, v in __import__("os").environ.items() if k != "HARNESS_OUTPUTS"}
    env["PYTHONPATH"] = str(ROOT)
    res = subprocess.run(shlex.split(suite_cmd.replace("python", sys.executable, 1)), cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "suite smoke: 3 cases  pass=3" in res.stdout
    # joblib ran the cases in two worker processes; the parent run has the three as children
    import json

    suite_dir = next((tmp_path / "outputs" / "suites" / "smoke").iterdir())
    summary = json.loads((suite_dir / "suite.json").read_text())
    assert "joblib" in summary["launcher"]
    workers = {json.loads((Path(r["run_dir"]) / "tracking.json").read_text())["worker"]["pid"] for r in summary["rows"]}
    assert len(workers) == 2
    from mlflow.tracking import MlflowClient

    c = MlflowClient(summary["tracking_uri"])
    parent = c.get_run(summary["parent_run_id"])
    children = c.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert len(children) == 3 == parent.data.metrics["n_cases"] and parent.info.status == "FINISHED"

    # the artifact paths of both snippets find the suite's reports
    monkeypatch.chdir(tmp_path)
    for pattern in snippets[0]["jobs"]["verify"]["steps"][-1]["with"]["path"].split():
        assert len(glob.glob(pattern, recursive=True)) == 1, pattern
    assert len(glob.glob(snippets[1]["verify"]["artifacts"]["reports"]["junit"])) == 1

    monkeypatch.delenv("HARNESS_OUTPUTS", raising=False)
    ran = {suite_cmd}
    for cmd in ["python -m harness baseline accept latest", "python -m harness baseline list",
                "python -m harness baseline show smoke", "python -m harness compare baseline:smoke latest",
                "python -m harness --list suite=fast"]:
        assert cmd in shown, cmd
        assert main(shlex.split(cmd)[3:]) == 0, cmd
        ran.add(cmd)
    out = capsys.readouterr().out
    from harness.suites.catalogue import catalogue

    fast = yaml.safe_load((ROOT / "conf" / "suite" / "fast.yaml").read_text())["select"]
    n_fast = sum("fast" in c.tags and not set(c.tags) & set(fast["exclude_tags"]) and c.name not in fast["exclude"]
                 for c in catalogue())
    assert "accepted baseline smoke: 3 case runs" in out and "baseline smoke: 3 cases" in out
    assert "compare A=baseline:smoke  B=latest: 3 cases on both sides" in out and f"suite fast: {n_fast} cases" in out
    from harness.cli import report

    assert report.main([str(suite_dir)]) == 0  # python -m harness.report <suite dir>
    assert capsys.readouterr().out.strip() == str(suite_dir / "dashboard.html")
    ran.add("python -m harness.report <suite dir>")  # just above, with this suite's directory
    elsewhere = {"python -m harness suite=all hydra/launcher=joblib hydra.launcher.n_jobs=2",  # test_suite_all.py
                 "python -m harness"}  # the default suite: tests/core/test_core_cli.py
    assert set(shown) == ran | elsewhere, set(shown) - ran - elsewhere
