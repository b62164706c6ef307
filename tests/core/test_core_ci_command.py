"""CI runs exactly the README's test command (the guide's rule), nothing else."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("Set up and run the tests", 1)[1]
    command = re.search(r"\n\n    (\S.*)\n", block).group(1)
    ci_lines = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln and not ln.startswith("#")]
    assert ci_lines[-1] == command
    assert command.endswith("python -m pytest -q")
    for package in ("chromium-driver", "python3-dolfinx", "postgresql"):  # so no test is skipped in CI
        assert package in command
