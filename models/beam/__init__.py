"""Sliding Euler–Bernoulli beam: full FE model, sliding constraint, generalised-α for
index-3 DAEs, and global-POD-basis model order reduction (seed 003, issue 6).

Plain numpy/scipy library; no Hydra, MLflow or harness imports.
"""
from models.beam.constraints import SlidingConstraint
from models.beam.fe import BeamFE, build_beam, hermite, hermite_dx, hermite_dxx

__all__ = ["BeamFE", "SlidingConstraint", "build_beam", "hermite", "hermite_dx", "hermite_dxx"]
