"""Declarative, config-driven verification harness for computational mechanics."""
from __future__ import annotations

import os as _os

from harness import _moved

# MLflow's INFO chatter (database migrations) would drown the verdict lines.
_os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
# Installed (not a checkout): numba's compiled-function cache goes to the user's cache folder,
# never into site-packages (its default is a __pycache__ beside the source).
if not _os.path.isfile(_os.path.join(_os.path.dirname(_os.path.dirname(__file__)), "conf", "config.yaml")):
    _os.environ.setdefault("NUMBA_CACHE_DIR", _os.path.join(
        _os.environ.get("XDG_CACHE_HOME") or _os.path.join(_os.path.expanduser("~"), ".cache"),
        "mechanics-harness", "numba"))
_moved.install()

__all__ = ["run_case"]


def run_case(case, overrides=(), tracking_uri=None, parent_run_id=None, project=None):
    """See :func:`harness.core.api.run_case`."""
    from harness.core.api import run_case as _run_case

    return _run_case(case, overrides=overrides, tracking_uri=tracking_uri, parent_run_id=parent_run_id,
                     project=project)
