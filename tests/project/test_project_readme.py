"""The README section "Use it in your solver's repository": its commands run as written in an
empty directory (the project's Python first on PATH), its settings block is what the project
reader accepts, its layout is what `harness init` writes, and its CI snippets find the reports."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from harness.cli.scaffold import files

ROOT = Path(__file__).resolve().parents[2]


def section() -> str:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Use it in your solver's repository")
    return readme[start:readme.index("<!-- getting-started:end -->", start)]


def blocks(lang: str):
    return re.findall(rf"```{lang}\n(.*?)```", section(), flags=re.S)


def _env():
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_OUTPUTS", "HARNESS_CASES", "HARNESS_PROJECT")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def test_section_commands_run_as_written(tmp_path):
    (console,) = blocks("console")
    commands = [ln[2:] for ln in console.splitlines() if ln.startswith("$ ")]
    assert commands[0] == "harness init" and len(commands) == 8
    out = []
    for cmd in commands:
        res = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 0, f"{cmd}\n{res.stdout}\n{res.stderr}"
        out.append(res.stdout)
    _, single, study, listing, suite1, accept, suite2, compare = out
    assert single.startswith("heat/ftcs  PASS  e_u=0.002851  u_center=0.3716  run="), single
    assert re.search(r"^study heat/ftcs_refinement  PASS  jobs=3 failed=0 .*observed_order=2\.00", study, re.M), study
    assert listing.splitlines()[1].split() == ["heat/ftcs", "[fast]"]
    assert "pass=1 " in suite1 and "accepted baseline project: 1 case runs" in accept
    assert "regressions=0" in suite2 and "metrics: identical" in compare
    # the CI snippets' report paths find this suite's files
    ci = yaml.safe_load((tmp_path / ".github/workflows/verification.yml").read_text())
    steps = ci["jobs"]["verify"]["steps"]
    junit = next(s for s in steps if s.get("uses", "").startswith("mikepenz/action-junit-report"))
    assert len(list(tmp_path.glob(junit["with"]["report_paths"]))) == 2
    assert any(s.get("run") == "harness suite=project" for s in steps)
    (gitlab,) = blocks("yaml")
    job = yaml.safe_load(gitlab)["verify"]
    assert "harness suite=project" in job["script"]
    assert len(list(tmp_path.glob(job["artifacts"]["reports"]["junit"]))) == 2


def test_settings_block_and_layout_are_what_the_harness_reads_and_writes(tmp_path):
    from harness.core.project import find_project

    (toml,) = blocks("toml")
    (tmp_path / "verification").mkdir()
    (tmp_path / "pyproject.toml").write_text(toml)
    project = find_project(tmp_path)
    assert project.case_dirs == ((tmp_path / "verification").resolve(),)
    assert project.outputs == (tmp_path / "outputs").resolve() and project.tracking == "local"
    (layout,) = blocks("text")
    listed = [ln.split()[0] for ln in layout.splitlines() if ln.strip()]
    assert listed == [*files(), "outputs/"]
