"""Every command of the README section "Manufactured solutions", run exactly as written (in a fresh
directory, the project's Python first on PATH): the observed orders of the scikit-fem, DOLFINx and C
examples within 0.1 of the expected ones, and the planted bug failing its order gate."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from tests.conftest import command_env

ROOT = Path(__file__).resolve().parents[2]

# study -> (expected L2 order of the gated metric, expected H1 order or None, exit code)
EXPECTED = {
    "examples/mms/elasticity_p1": (2.0, 1.0, 0),
    "examples/mms/elasticity_p2": (3.0, 2.0, 0),
    "examples/mms/elasticity_axisymmetric_p1": (2.0, 1.0, 0),
    "examples/mms/poisson_p1": (2.0, 1.0, 0),
    "examples/mms/poisson_p2": (3.0, 2.0, 0),
    "examples/mms/poisson_dolfinx_p1": (2.0, 1.0, 0),
    "examples/mms/heat1d_space_time": (2.0, None, 0),
    "examples/mms/heat1d_time": (1.0, None, 0),
    "examples/mms/poisson_planted_bug": (None, None, 1),
}


def section_commands():
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Manufactured solutions")
    section = readme[start:readme.index("\n## ", start + 5)]
    return [ln[2:] for lang, body in re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S) if lang == "console"
            for ln in body.splitlines() if ln.startswith("$ ")]


def _env():
    return command_env()


@pytest.mark.slow
def test_manufactured_examples_run_as_written(tmp_path):
    commands = section_commands()
    studies = [re.search(r"\+study=(\S+)", c).group(1) for c in commands]
    assert sorted(studies) == sorted(EXPECTED), studies
    for command, study in zip(commands, studies):
        l2, h1, code = EXPECTED[study]
        res = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == code, f"{command}\n{res.stdout}\n{res.stderr}"
        line = next((ln for ln in res.stdout.splitlines() if ln.startswith(f"study {study} ")), "")
        order = float(re.search(r" observed_order=([-\d.]+)", line).group(1))
        if code == 0:
            assert line.startswith(f"study {study}  PASS  jobs=3 failed=0"), line
            assert order == pytest.approx(l2, abs=0.1), line
            if h1 is not None:
                assert float(re.search(r" observed_order_e_H1=([-\d.]+)", line).group(1)) == pytest.approx(h1, abs=0.1)
        else:  # the planted bug: small errors, every level within its bands, the order gate fails
            assert line.startswith(f"study {study}  FAIL  jobs=3 failed=0"), line
            assert order < 1.5, line
            levels = [ln for ln in res.stdout.splitlines() if ln.startswith("examples/mms/poisson ")]
            assert len(levels) == 3 and all("  PASS  " in ln for ln in levels), levels
    figures = list((tmp_path / "outputs" / "sweeps").glob("examples/mms/*/*/study/convergence_e_H1.png"))
    assert len(figures) == 7, figures  # every study with an H1 order: its own log-log figure
