"""A user's Python module for the generic-case tests (imported through model.pythonpath)."""
import numpy as np


def solve(n: int, rate: float):
    """y = exp(-rate t) on n samples of [0, 1], with a 1e-3 relative perturbation."""
    t = np.linspace(0.0, 1.0, n)
    return {"t": t, "y": np.exp(-rate * t) * (1.0 + 1e-3), "n": n}


def exact(t, rate: float):
    """The exact decay exp(-rate t)."""
    return np.exp(-rate * np.asarray(t))


def not_a_mapping(n: int, rate: float):
    return [1.0] * n
