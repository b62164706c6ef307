"""The Python API: run a case without the CLI.

>>> from harness import run_case
>>> out = run_case("load_transfer/uniform_pressure", overrides=["source.n_rings=32"])
>>> out.verdict, out.metrics["e_F"], out.run_dir, out.mlflow_run_id
"""
from __future__ import annotations

import contextlib
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Optional, Sequence

from harness.core.compose import compose
from harness.core.hydra_runtime import hydra_node
from harness.core.runner import Outcome, run_case_config


def new_run_dir(outputs: str, case: str) -> Path:
    import uuid

    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return Path(outputs) / "runs" / case / f"{stamp}-{uuid.uuid4().hex[:6]}"


def run_case(case: str, overrides: Sequence[str] = (), tracking_uri: Optional[str] = None,
             parent_run_id: Optional[str] = None, project: Optional[str] = None) -> Outcome:
    """Compose ``case`` (a name under conf/case or a user project's case/) with ``overrides`` and run it.

    tracking_uri: an MLflow tracking URI replacing the configured one.
    project: a directory of a user project (holding, or below, its harness.yaml or pyproject.toml
    with [tool.harness]); default: found from the working directory (harness.core.project). Raises
    :class:`harness.core.context.HarnessInputError` (one line) for an unknown case, an
    unknown key or a wrong type; everything after composition is reported in the outcome.
    """
    all_overrides = [f"+case={case}", *overrides]
    if tracking_uri is not None:
        all_overrides.append(f"tracking.uri={tracking_uri}")
    with _project(project), hydra_node(compose(all_overrides, hydra_config=True)) as cfg:
        run_dir = new_run_dir(cfg.paths.outputs, case)
        return run_case_config(cfg, run_dir, command=[sys.argv[0], "run_case", case, *overrides],
                               overrides=all_overrides, parent_run_id=parent_run_id,
                               run_name=case)  # a named case, also as a child (sweep jobs are named by their overrides)


@contextlib.contextmanager
def _project(directory: Optional[str]):
    """``$HARNESS_PROJECT`` = ``directory`` (absolute) for the duration, then as before."""
    from harness.core.project import ENV_PROJECT

    if directory is None:
        yield
        return
    old = os.environ.get(ENV_PROJECT)
    os.environ[ENV_PROJECT] = str(Path(directory).resolve())
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ENV_PROJECT, None)
        else:
            os.environ[ENV_PROJECT] = old
