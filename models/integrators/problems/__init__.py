"""Test problems of the integrator family, each with a reference solution.

``get_problem(name, **params) -> TestProblem``; ``available_problems()`` lists the names.
Stiff problems come from the public IVP test set (Mazzia & Magherini, Test Set for IVP
Solvers, release 2.4, University of Bari, https://archimede.uniba.it/~testset/); the
analytic ones have closed forms or an independent matrix-exponential solution.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from models.integrators.base import ODEProblem, ResidualProblem


@dataclass
class TestProblem:
    """A problem with its reference.

    t_eval : output times (s); y_ref : (len(t_eval), n) reference states, or (n,) at t_eval[-1]
    reference : where the reference comes from (citation / method)
    scd_floor : components with |y_ref| <= scd_floor are left out of scd (documented per problem)
    z_ref : optional reference of the residual unknowns at t_eval (residual-form problems)
    rtol, atol : default tolerances for adaptive solvers
    """

    name: str
    problem: Any  # ODEProblem | ResidualProblem
    t_eval: np.ndarray
    y_ref: np.ndarray
    reference: str
    scd_floor: float = 0.0
    z_ref: Optional[np.ndarray] = None
    rtol: float = 1.0e-6
    atol: float = 1.0e-8
    stiff: bool = True
    info: Dict[str, Any] = field(default_factory=dict)

    __test__ = False  # not a pytest class

    def reference_at_end(self) -> np.ndarray:
        y = np.asarray(self.y_ref)
        return y if y.ndim == 1 else y[-1]


_FACTORIES: Dict[str, Callable[..., TestProblem]] = {}


def problem_factory(name: str):
    def deco(fn):
        _FACTORIES[name] = fn
        return fn

    return deco


def get_problem(name: str, **params: Any) -> TestProblem:
    """The test problem ``name`` (see :func:`available_problems`) built with ``params``.

    Returns a :class:`TestProblem`: ``problem`` (ODEProblem or ResidualProblem), output times
    ``t_eval`` [s], reference solution ``y_ref`` (n_t, n) and its source.

    >>> tp = get_problem("linear", lam=-3.0)
    >>> tp.problem.n, float(tp.t_eval[-1])
    (1, 1.0)
    """
    _load()
    try:
        fn = _FACTORIES[name]
    except KeyError:
        raise KeyError(f"unknown test problem {name!r}; known: {', '.join(sorted(_FACTORIES))}") from None
    return fn(**params)


def available_problems() -> List[str]:
    """Sorted names of the test problems (HIRES, ROBER, Van der Pol, ... and closed forms).

    >>> "rober" in available_problems() and "hires" in available_problems()
    True
    """
    _load()
    return sorted(_FACTORIES)


def _load() -> None:
    from models.integrators.problems import analytic, reaction_diffusion, testset  # noqa: F401


__all__ = ["TestProblem", "get_problem", "available_problems", "ODEProblem", "ResidualProblem"]
