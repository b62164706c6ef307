"""Declarative, config-driven verification harness for computational mechanics."""
from __future__ import annotations

import os as _os

from harness import _moved

# MLflow's INFO chatter (database migrations) would drown the verdict lines.
_os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
_moved.install()

__all__ = ["run_case"]


def run_case(case, overrides=(), tracking_uri=None, parent_run_id=None, project=None):
    """See :func:`harness.core.api.run_case`."""
    from harness.core.api import run_case as _run_case

    return _run_case(case, overrides=overrides, tracking_uri=tracking_uri, parent_run_id=parent_run_id,
                     project=project)
