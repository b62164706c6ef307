"""Fixtures of the suite tests: an outputs directory with its own sqlite store, the CLI in a
subprocess (with the test adapter importable), and headless Chromium."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def run_harness(args, outputs: Path, env=None, timeout: float = 600, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``python -m harness ARGS`` with HARNESS_OUTPUTS=outputs and tests/suites on the path."""
    path = os.pathsep.join(p for p in (str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    full = dict(os.environ, HARNESS_OUTPUTS=str(outputs), CI="1", PYTHONPATH=path, **(env or {}))
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="session")
def suite_outputs(tmp_path_factory) -> Path:
    """A fresh outputs directory whose sqlite store exists before any suite runs."""
    out = tmp_path_factory.mktemp("suite_outputs")
    from harness.tracking import records as tracking

    tracking.ensure_experiment(f"sqlite:///{out}/mlflow.db", "harness/_init", str(out / "mlartifacts"))
    return out


@pytest.fixture(scope="session")
def cli():
    """:func:`run_harness` for the test modules (which cannot import this conftest)."""
    return run_harness


# pass, failed gate, crashed model, invalid input: the test adapter injects each (drift_adapter.py)
MIXED_CASES = ["load_transfer/axis", "load_transfer/exterior_zero", "load_transfer/offset_axis", "load_transfer/sign"]
MIXED_ENV = {"HARNESS_TEST_FAIL": "load_transfer/axis", "HARNESS_TEST_CRASH": "load_transfer/exterior_zero",
             "HARNESS_TEST_INVALID": "load_transfer/offset_axis"}


@pytest.fixture(scope="session")
def mixed_suite(suite_outputs):
    """One suite run of MIXED_CASES with the test adapter: (process, suite dir, suite.json)."""
    import json

    res = run_harness(["suite=fast", f"suite.select.cases=[{','.join(MIXED_CASES)}]", "case.adapter=drift_adapter:run"],
                      suite_outputs, env=MIXED_ENV)
    suite_dir = sorted((suite_outputs / "suites" / "fast").iterdir())[-1]
    return res, suite_dir, json.loads((suite_dir / "suite.json").read_text())
