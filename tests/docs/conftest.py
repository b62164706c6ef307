"""The documentation site, built once per session with the README's command (warnings are errors)."""
from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BUILD_COMMAND = "python -m sphinx -E -W --keep-going -b html docs docs/_build/html"
HTML = ROOT / "docs" / "_build" / "html"


def run_readme_command(command: str, env_extra=None, timeout: float = 300.0,
                       readme: Path = README) -> subprocess.CompletedProcess:
    """Run a README command exactly as written, from the repository root."""
    text = readme.read_text(encoding="utf-8")
    assert f"`{command}`" in text or f"    {command}\n" in text, f"{readme.name} no longer shows {command!r}"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", **(env_extra or {})}
    return subprocess.run(shlex.split(command), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def docs_html() -> Path:
    """Build the site (about 10 s) and return the HTML directory; fails on any Sphinx warning."""
    if os.environ.get("CI") != "true":  # in CI the test extra brings the docs extra: a missing one fails
        for mod in ("sphinx", "myst_parser", "furo"):
            pytest.importorskip(mod, reason="the docs extra: python -m pip install -e '.[docs]'")
    proc = run_readme_command(BUILD_COMMAND)
    assert proc.returncode == 0, f"docs build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    assert "warning" not in proc.stderr.lower(), proc.stderr[-3000:]
    return HTML
