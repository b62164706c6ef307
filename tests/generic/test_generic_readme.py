"""Every command of the README section "Verify your own solver", run exactly as written
(in a fresh directory, with the project's Python first on PATH), and the pendulum's order
in dt through the study machinery."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import command_env

ROOT = Path(__file__).resolve().parents[2]


def section_blocks():
    """(kind, text) of the fenced blocks of the section: console commands and python scripts."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Verify your own solver")
    section = readme[start:readme.index("\n## ", start + 5)]
    blocks = []
    for lang, body in re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S):
        if lang == "console":
            blocks += [("command", ln[2:]) for ln in body.splitlines() if ln.startswith("$ ")]
        elif lang == "python":
            blocks.append(("python", body))
    return blocks


def _env():
    return command_env()


def test_readme_walk_through_runs_as_written(tmp_path):
    blocks = section_blocks()
    assert [k for k, _ in blocks] == ["command", "command", "python"]
    outputs = []
    for kind, text in blocks:
        if kind == "command":
            res = subprocess.run(["bash", "-c", text], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                                 timeout=300)
        else:
            res = subprocess.run(["python", "-"], input=text, cwd=tmp_path, env=_env(), capture_output=True,
                                 text=True, timeout=300, executable=sys.executable)
        assert res.returncode == 0, f"{text}\n{res.stdout}\n{res.stderr}"
        outputs.append(res.stdout)
    single, study, compare = outputs
    assert re.search(r"^examples/heat1d  PASS  e_u=0\.00285\d  error_constant=1\.14", single, re.M), single
    m = re.search(r"study examples/heat1d_refinement  PASS  jobs=3 failed=0 .* observed_order=([\d.]+)", study)
    assert m and abs(float(m.group(1)) - 2.0) < 0.05, study
    assert re.search(r"u_center:monotonic p=2\.0\d* f_ext=0\.37\d* u_num=", study), study
    m = re.search(r"observed order ([\d.]+), GCI_12 ([\d.e+-]+), u_num ([\d.e+-]+)", compare)
    assert m and abs(float(m.group(1)) - 2.0) < 0.05 and 0 < float(m.group(2)) < 1e-2, compare
    assert 0 < float(m.group(3)) < 1e-3, compare
    rows = [ln.split() for ln in compare.splitlines()[1:4]]
    assert [r[0] for r in rows] == ["10", "20", "40"]
    assert (tmp_path / "outputs" / "mlflow.db").is_file()  # the README's ./outputs, not the test store


def test_pendulum_order_in_dt_through_the_study(tmp_path):
    env = dict(_env(), HARNESS_OUTPUTS=str(tmp_path))
    res = subprocess.run([sys.executable, "-m", "harness", "-m", "+case=examples/pendulum",
                          "+study=examples/pendulum_dt", "tracking=none"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    study = json.loads(next((tmp_path / "sweeps" / "examples" / "pendulum").glob("*/study/study.json")).read_text())
    assert study["verdict"] == "pass" and study["n_jobs"] == 3
    # Störmer–Verlet: energy error O(dt^2); measured 2.000 between every pair of levels
    for k in ("observed_order_0_1", "observed_order_1_2"):
        assert study["metrics"][k] == pytest.approx(2.0, abs=0.02), k
    assert study["metrics"]["gci_T_p"] == pytest.approx(2.0, abs=0.05)  # GCI on the period T
