"""Time integrators behind one contract; see :mod:`models.integrators.registry`.

Importing this package registers every integrator module; ``sundials`` imports
scikit-sundae lazily inside ``solve``.
"""
from models.integrators.registry import available, get, register  # noqa: F401
from models.integrators import base  # noqa: F401
from models.integrators import rosenbrock, scipy_ivp, sundials, verlet  # noqa: F401
