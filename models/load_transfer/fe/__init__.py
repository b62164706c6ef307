"""Finite-element cross-check of the Kratos MPM load-transfer case: one small interface, backends.

``make_fe_solver(body, backend="skfem")`` returns an :class:`~.base.FESolver`. The scikit-fem
backend is always available; ``backend="dolfinx"`` runs Debian's DOLFINx 0.5 on the system
interpreter in its own process (``dolfinx_backend``; ``apt-get install -y python3-dolfinx``).
"""
from __future__ import annotations

from .base import BACKENDS, ElasticBody, FEDynamicResult, FEField, FESolver, PointLoads, make_fe_solver, von_mises

__all__ = ["BACKENDS", "ElasticBody", "FEDynamicResult", "FEField", "FESolver", "PointLoads", "make_fe_solver",
           "von_mises"]
