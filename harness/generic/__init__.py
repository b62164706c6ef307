"""The generic case: verify your own solver from YAML alone (``case.adapter: harness.generic:run``).

``model``   an external program (``command``, run without a shell) or a Python callable
            (``_target_``) returning a mapping of arrays and numbers;
``outputs`` what it produced: CSV columns, NPZ/NPY arrays, HDF5 datasets, JSON keys or the
            returned mapping, each with a unit and an optional slice;
``reference`` closed-form expressions (a safe evaluator over numpy), files, callables;
``metrics`` named metrics of the library in :mod:`harness.metrics.library`;
``manufactured`` a manufactured solution: sympy derives sources, gradients and fluxes
            (:mod:`.symbolic`, :mod:`.manufactured`), hands them to the solver as names, code
            or values (:mod:`.manufactured_case`); meshes are read by :mod:`.mesh` (meshio).
Importing this package registers the schema (``schema_generic``, ``generic_case``) and the
``${run_dir:}`` / ``${project_dir:}`` resolvers.

May import tools, core, tracking, metrics, launch and schemas (not families, nor anything above).
"""
from harness.generic import schema as _schema  # noqa: F401  (registers the schema and resolvers)
from harness.generic.case import run

__all__ = ["run"]
