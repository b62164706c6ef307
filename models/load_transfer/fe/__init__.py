"""Finite-element cross-check of the Kratos MPM load-transfer case: one small interface, backends.

``make_fe_solver(body, backend="skfem")`` returns an :class:`~.base.FESolver`. The scikit-fem
backend is always available; a dolfinx backend can implement the same interface where FEniCSx is
installed (it is not installable from the package index here).
"""
from __future__ import annotations

from .base import BACKENDS, ElasticBody, FEDynamicResult, FEField, FESolver, PointLoads, make_fe_solver, von_mises

__all__ = ["BACKENDS", "ElasticBody", "FEDynamicResult", "FEField", "FESolver", "PointLoads", "make_fe_solver",
           "von_mises"]
