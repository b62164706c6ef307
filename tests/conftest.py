"""Shared fixtures: an isolated outputs directory with a real sqlite MLflow store."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

FULL = os.environ.get("HARNESS_FULL") == "1"


def full_size() -> bool:
    """True when slow studies and benchmarks should run at full size (HARNESS_FULL=1)."""
    return FULL


@pytest.fixture(scope="session")
def harness_env(tmp_path_factory) -> Path:
    """Point the harness at a fresh outputs directory (run dirs, sqlite store, artifacts).

    The sqlite store and its schema are created here, once, in this process, before any
    case runs. Returns the outputs directory; the store is ``sqlite:///<dir>/mlflow.db``.
    """
    out = tmp_path_factory.mktemp("outputs")
    os.environ["HARNESS_OUTPUTS"] = str(out)
    from harness import tracking

    tracking.ensure_experiment(f"sqlite:///{out}/mlflow.db", "harness/_init", str(out / "mlartifacts"))
    return out


@pytest.fixture(scope="session")
def tracking_uri(harness_env) -> str:
    return f"sqlite:///{harness_env}/mlflow.db"
