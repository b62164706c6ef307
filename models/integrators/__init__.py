"""Time integrators behind one contract (seed 004): ``get(name)(**options).solve(problem, t_eval)``.

Rosenbrock ROS2 (fixed step and adaptive), SUNDIALS CVODE BDF (scikit-sundae, imported lazily
inside ``solve``), SciPy Radau / BDF / LSODA, and the Verlet family of second-order steppers.
Problems are :class:`ODEProblem` (y' = f(t, y)) or :class:`ResidualProblem` (R(t, y, z) = 0,
semi-explicit index 1). Every option's default is in ``get(name).defaults`` (the config group
``conf/integrator/`` reads the same values).

>>> import numpy as np
>>> from models.integrators import ODEProblem, get
>>> prob = ODEProblem(lambda t, y: -2.0 * y, [1.0], (0.0, 1.0), jac=lambda t, y: np.array([[-2.0]]))
>>> sol = get("ros2_adaptive")(rtol=1e-8, atol=1e-10).solve(prob, np.linspace(0.0, 1.0, 3))
>>> round(float(sol.y[-1, 0] / np.exp(-2.0)), 6), sol.success
(1.0, True)
"""
from models.integrators import base  # noqa: F401
from models.integrators import rosenbrock, scipy_ivp, sundials, verlet  # noqa: F401  (registers them)
from models.integrators.base import IntegratorFailure, ODEProblem, ResidualProblem, Solution, Stats
from models.integrators.jacobians import fd_increments, fd_residual_partials
from models.integrators.problems import TestProblem, available_problems, get_problem
from models.integrators.registry import available, get, register
from models.integrators.rosenbrock import ROS2, ROS2Adaptive
from models.integrators.scipy_ivp import ScipyBDF, ScipyLSODA, ScipyRadau
from models.integrators.sundials import CVODEBDF
from models.integrators.verlet import Leapfrog, PositionVerlet, VelocityVerlet, make_stepper

__all__ = ["get", "available", "register", "ODEProblem", "ResidualProblem", "Solution", "Stats",
           "IntegratorFailure", "ROS2", "ROS2Adaptive", "CVODEBDF", "ScipyRadau", "ScipyBDF", "ScipyLSODA",
           "PositionVerlet", "VelocityVerlet", "Leapfrog", "make_stepper", "fd_increments",
           "fd_residual_partials", "get_problem", "available_problems", "TestProblem"]
