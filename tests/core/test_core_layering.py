"""The layering contracts of pyproject.toml (import-linter): kept by the tree, broken by a planted
upward import or circle."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")
CONTRACTS = ("harness/ imports run down its layers", "no import circle", "models/ knows nothing of the harness",
             "model families are independent", "models.integrators imports no model family", "schemas/ imports neither")


def lint(where: Path, *flags: str) -> subprocess.CompletedProcess:
    """``lint-imports`` on the tree at ``where`` (its packages first on the path)."""
    env = dict(os.environ, PYTHONPATH=str(where))
    return subprocess.run([str(LINT), *flags], cwd=where, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture()
def tree(tmp_path) -> Path:
    """A copy of the packages and pyproject.toml, to plant imports in."""
    for name in ("harness", "models", "schemas"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def plant(path: Path, line: str) -> None:
    text = path.read_text()
    head, sep, body = text.partition("from __future__ import annotations\n")
    path.write_text(head + sep + line + "\n" + body if sep else line + "\n" + text)


def test_the_tree_keeps_every_contract():
    res = lint(ROOT, "--no-cache")  # as the README's test command runs it
    assert res.returncode == 0, res.stdout[-3000:]
    for name in CONTRACTS:
        assert any(name in ln and ln.rstrip().endswith("KEPT") for ln in res.stdout.splitlines()), name


def test_an_upward_import_breaks_the_layers(tree):
    plant(tree / "harness" / "metrics" / "gates.py", "from harness.core import runner  # planted")
    res = lint(tree, "--no-cache")
    assert res.returncode == 1
    assert "harness/ imports run down its layers BROKEN" in res.stdout
    assert "harness.metrics.gates -> harness.core.runner" in res.stdout


def test_a_circle_inside_a_package_is_found(tree):
    plant(tree / "harness" / "core" / "atomic.py", "from harness.core import context  # planted")
    res = lint(tree, "--no-cache")
    assert res.returncode == 1
    assert "no import circle among the packages and modules of harness/ and models/ BROKEN" in res.stdout
    assert "harness/ imports run down its layers KEPT" in res.stdout  # within one layer: only the circle


def test_a_model_importing_the_harness_is_refused(tree):
    plant(tree / "models" / "dem" / "__init__.py", "import mlflow  # planted")
    res = lint(tree, "--no-cache")
    assert res.returncode == 1
    assert "models/ knows nothing of the harness, Hydra, OmegaConf or MLflow BROKEN" in res.stdout
