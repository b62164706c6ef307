"""Typed schema of the ``manufactured:`` section of a generic case (``case.params.manufactured``).

See :mod:`harness.generic.manufactured` for what is derived and
:mod:`harness.generic.manufactured_case` for how a run uses it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from omegaconf import MISSING


@dataclass
class BoundaryConf:
    """A named boundary: its outward unit ``normal`` (one entry per coordinate) and, optionally,
    the coordinate value on it (``at: {x: 1}``) substituted into the boundary data."""

    normal: List[Any] = field(default_factory=list)
    at: Dict[str, Any] = field(default_factory=dict)


@dataclass
class CodeConf:
    """Source code written into the run directory before ``prepare``.

    languages: any of c (``<prefix>.h``), fortran (``<prefix>.f90``), python (``<prefix>.py``)
    prefix:    file stem (and C include guard / Fortran module name)
    names:     derived names to emit (default: every ``<field>_exact`` and every source)
    """

    languages: List[str] = field(default_factory=list)
    prefix: str = "mms"
    names: List[str] = field(default_factory=list)


@dataclass
class ValuesConf:
    """Values on a point set the user gives, written before ``prepare`` to the file named by the
    entry's key (relative: the run directory; ``.csv`` or a mesh suffix such as ``.vtu``).

    points: a CSV with one column per coordinate, or a mesh file (relative: the project root)
    names:  derived names to write (default: every source)
    t:      s, the time at which they are evaluated (transient solutions)
    """

    points: str = MISSING
    names: List[str] = field(default_factory=list)
    t: Optional[float] = None


@dataclass
class NormConf:
    """A mesh quantity defined as a name after the model ran.

    norm:  L2 | H1 (seminorm) of u_h - u; L2_exact | H1_exact (of u); h_max | h_mean (m, cell
           diameters); relative_L2 | relative_H1 (error over the norm of u)
           (system axisymmetric: over the body of revolution, dV = 2 pi r dr dz, H1 with the
           hoop term u_r / r; see harness.metrics.mesh_norms)
    mesh:  the file the solver wrote (relative: the run directory); read by meshio
    field: its point-data name holding u_h (not needed for h_max / h_mean)
    exact: the manufactured field it is compared with (default: the only one)
    step:  time step of a time series (default: the last)
    t:     an expression (case namespace) for the time of the exact solution
    quadrature_degree: polynomial degree integrated exactly (default 2 p + 3; axisymmetric 2 p + 4)
    """

    norm: str = MISSING
    mesh: str = MISSING
    field: Optional[str] = None
    exact: Optional[str] = None
    step: Optional[int] = None
    t: Optional[str] = None
    quadrature_degree: Optional[int] = None


@dataclass
class ManufacturedConf:
    """A manufactured solution: coordinates, parameters, fields, the operators applied to them
    (``sources``), fluxes and boundaries; what the run does with them: names evaluated on the
    solver's points (``at``), code (``code``), values on a point set (``values``), mesh norms
    (``norms``)."""

    coordinates: List[str] = field(default_factory=lambda: ["x", "y"])
    system: str = "cartesian"  # cartesian | axisymmetric (coordinates [r, z])
    time: Optional[str] = None
    parameters: Dict[str, Any] = field(default_factory=dict)
    fields: Dict[str, Any] = field(default_factory=dict)
    sources: Dict[str, str] = field(default_factory=dict)
    fluxes: Dict[str, str] = field(default_factory=dict)
    boundaries: Dict[str, BoundaryConf] = field(default_factory=dict)
    at: Dict[str, str] = field(default_factory=dict)
    code: CodeConf = field(default_factory=CodeConf)
    values: Dict[str, ValuesConf] = field(default_factory=dict)
    norms: Dict[str, NormConf] = field(default_factory=dict)
