"""Declarative, config-driven verification harness for computational mechanics."""
from __future__ import annotations

import os as _os

# MLflow's INFO chatter (database migrations) would drown the verdict lines.
_os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")

__all__ = ["run_case"]


def run_case(case, overrides=(), tracking_uri=None, parent_run_id=None):
    """See :func:`harness.api.run_case`."""
    from harness.api import run_case as _run_case

    return _run_case(case, overrides=overrides, tracking_uri=tracking_uri, parent_run_id=parent_run_id)
