"""Registry of time integrators: a name -> class map shared by every family.

Each integrator module registers its classes with ``@register("name")``; the names
match the option files in ``conf/integrator/``. Importing :mod:`models.integrators`
imports every integrator module so the registry is complete.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Type, TypeVar

T = TypeVar("T")
_REGISTRY: Dict[str, type] = {}


def register(name: str) -> Callable[[Type[T]], Type[T]]:
    """Class decorator: make ``cls`` available under ``name``.

    >>> from models.integrators import available
    >>> "cvode_bdf" in available()                  # modules register their classes on import
    True
    """

    def deco(cls: Type[T]) -> Type[T]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"integrator name {name!r} already registered by {_REGISTRY[name].__name__}")
        _REGISTRY[name] = cls
        return cls

    return deco


def get(name: str) -> type:
    """The integrator class registered as ``name`` (KeyError lists the known names).

    >>> from models.integrators import get
    >>> solver = get("cvode_bdf")(rtol=1e-8)          # every other option from get("cvode_bdf").defaults
    >>> solver.options["max_num_steps"]
    100000
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown integrator {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def available() -> List[str]:
    """Sorted names of every registered integrator (``cvode_bdf``, ``ros2``, ...).

    >>> {"cvode_bdf", "ros2", "ros2_adaptive", "scipy_radau", "velocity_verlet"} <= set(available())
    True
    """
    return sorted(_REGISTRY)
