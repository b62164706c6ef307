"""Sliding Euler–Bernoulli beam: full FE model, sliding constraint, generalised-α for
index-3 DAEs, global-POD-basis model order reduction, and modes (seed 003).

Plain numpy/scipy library; no Hydra, MLflow or harness imports.

>>> from models.beam import make_problem, GlobalPODReductor, time_grid
>>> p = make_problem(2.0, 20, 2.1e11, 7850.0, 1e-4, 2e-10, slider_kind="sinusoidal",
...                  slider_center=1.1, slider_amplitude=0.6, slider_frequency=1.0,
...                  load_amplitudes=[5.0], load_frequencies=[3.0], load_position=2.0)
>>> basis = GlobalPODReductor(n_snap=5, r_snap=6, r_glob=12).build(p, time_grid(1.0, 1e-3))
>>> full, red = p.simulate(0.2, 1e-3), p.simulate(0.2, 1e-3, basis=basis)
"""
from models.beam.constraints import SlidingConstraint
from models.beam.fe import BeamFE, build_beam, hermite, hermite_dx, hermite_dxx
from models.beam.genalpha import GeneralizedAlpha
from models.beam.modal import Modes, constrained_modes, static_solution
from models.beam.problem import (BeamResponse, BeamSpec, LoadSpec, ProblemSpec, SliderSpec,
                                 SlidingBeamProblem, make_problem, time_grid)
from models.beam.reduction import GlobalBasis, GlobalPODReductor

__all__ = ["BeamFE", "SlidingConstraint", "build_beam", "hermite", "hermite_dx", "hermite_dxx",
           "GeneralizedAlpha", "Modes", "constrained_modes", "static_solution",
           "BeamSpec", "SliderSpec", "LoadSpec", "ProblemSpec", "SlidingBeamProblem", "BeamResponse",
           "make_problem", "time_grid", "GlobalBasis", "GlobalPODReductor"]
