"""The README's "Verdicts a CI can trust" section: its commands run exactly as written."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHUFFLED = "python -m harness suite=smoke suite.order_seed=7"
BAD_SPACING = ("python -m harness -m +case=load_transfer/inscribed_surface +study=load_transfer/mesh_refinement "
               "study.spacing=invers")


def section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Verdicts a CI can trust")
    end = text.find("\n## ", start + 10)
    return text[start:end if end > 0 else len(text)]


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    assert f"`{command}`" in section(), command
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_OUTPUTS"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(shlex.split(command.replace("python", sys.executable, 1)), cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def test_readme_verdict_commands_run_as_written(tmp_path):
    assert set(re.findall(r"`(python -m harness[^`]*)`", section())) == {SHUFFLED, BAD_SPACING}
    res = run(SHUFFLED, tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    suite_dir = next((tmp_path / "outputs" / "suites" / "smoke").iterdir())
    order = json.loads((suite_dir / "suite_state.json").read_text())["cases"]
    # the seed's order, not the name order, and the jobs ran in it (basic launcher: one after another)
    assert order == ["load_transfer/sign", "dem/linear_spring_impact", "integrators/rlc6_cvode"] != sorted(order)
    rows = json.loads((suite_dir / "suite.json").read_text())["rows"]
    assert [r["case"] for r in sorted(rows, key=lambda r: r["started_utc"])] == order
    res = run(BAD_SPACING, tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == ["harness: error: study.spacing: 'invers' is not one of inverse, direct"]
    assert "`harness: error: study.spacing: 'invers' is not one of inverse, direct`" in section()
    assert not (tmp_path / "outputs" / "sweeps").exists()
