"""MLflow's Databricks request-header provider asked once per process, not on every REST request.

On each REST request MLflow's client asks every registered request-header provider whether it is
in context; the Databricks provider answers by trying to import IPython, pyspark and Databricks'
runtime modules. Outside Databricks each attempt searches ``sys.path`` and fails: 0.4 ms of CPU
per request measured here, a sixth of a writer's CPU per recorded run on a tracking server.
:func:`ask_databricks_once` asks once; off Databricks (no ``DATABRICKS_RUNTIME_VERSION``) and
answered "no", the provider in MLflow's registry answers "no" from then on and adds no headers,
as before, without asking again.

Checked against MLflow 3.17: the private registry
``mlflow.tracking.request_header.registry._request_header_provider_registry`` iterates over
provider instances, among them a ``DatabricksRequestHeaderProvider`` with ``in_context()``. When it
does not (another MLflow, no registry), or ``HARNESS_PLAIN_PATHS`` names ``mlflow_headers``,
nothing is changed (one DEBUG line says why) and the provider keeps asking on every request.
"""
from __future__ import annotations

import logging
import os
from typing import List, Optional

from harness.launch import guard

log = logging.getLogger(__name__)

GUARD = "mlflow_headers"
CHECKED = ((3, 17),)  # MLflow releases (major, minor) this was checked against


def _databricks_providers() -> List[object]:
    """The Databricks providers of MLflow's private registry (raises when it is not there)."""
    from mlflow.tracking.request_header import registry as module
    from mlflow.tracking.request_header.databricks_request_header_provider import (
        DatabricksRequestHeaderProvider,
    )

    registry = module._request_header_provider_registry  # AttributeError: refused
    return [p for p in registry if isinstance(p, DatabricksRequestHeaderProvider)]


def _check() -> Optional[str]:
    release = guard.version("mlflow")
    if release[:2] not in CHECKED:
        return f"mlflow {'.'.join(map(str, release)) or 'not installed'} is not one checked ({CHECKED})"
    providers = _databricks_providers()
    if not providers:
        return "MLflow's request-header registry holds no DatabricksRequestHeaderProvider"
    for p in providers:
        if not callable(getattr(p, "in_context", None)):
            return f"{type(p).__name__} has no in_context()"
    return None


def ask_databricks_once() -> bool:
    """Ask MLflow's Databricks providers once whether they are in context; those that answer no
    answer no from then on. True when the registry was checked and used (False: nothing changed)."""
    if os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        return False  # on Databricks: its provider keeps adding its headers
    if not guard.allowed(GUARD, _check):
        return False
    for provider in _databricks_providers():
        if not provider.in_context():
            provider.in_context = lambda: False  # an instance attribute: MLflow's class is unchanged
    return True
