"""Manufactured solutions: from a declared solution and operator to source terms, exact
gradients, boundary values and fluxes (sympy), as vectorised numpy functions and as C,
Fortran and Python source code.

``Manufactured.from_spec`` takes the plain mapping of a ``manufactured:`` section
(see :class:`harness.generic.manufactured_schema.ManufacturedConf`). Every string goes
through :func:`harness.generic.symbolic.parse` (an ``ast`` walk, never ``eval``/``sympify``).
Derived quantities by name (``u`` a field, ``f`` a source, ``q`` a flux, ``right`` a boundary):

- ``u_exact`` the solution, ``grad_u_exact`` its gradient (vector, or tensor for a vector field)
- ``f`` the operator applied to the solution (the source term of the equation ``operator = f``)
- ``q`` a flux (e.g. ``-k*grad(u)`` or a stress tensor), ``q_right`` = q . n on the boundary
  ``right`` (its outward ``normal``), ``u_right`` = u there; ``at: {x: 1}`` substitutes the
  boundary's coordinate value into both.
"""
from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np
import sympy as sp

from harness.generic.symbolic import Space, SymbolicError, describe, kind, parse, shape_of

log = logging.getLogger(__name__)
SYSTEMS = ("cartesian", "axisymmetric")
LANGUAGES = ("c", "fortran", "python")


class ManufacturedError(ValueError):
    """An invalid manufactured-solution declaration; the message starts with the field."""


@dataclass
class Manufactured:
    """The derived expressions of one manufactured solution (sympy), by name."""

    space: Space
    time: Optional[sp.Symbol]
    parameters: Dict[str, float]
    symbols: Dict[str, sp.Symbol]
    expressions: Dict[str, Any] = field(default_factory=dict)
    fields: List[str] = field(default_factory=list)
    sources: List[str] = field(default_factory=list)
    timings: Dict[str, float] = field(default_factory=dict)
    polynomial_degree: Dict[str, Optional[int]] = field(default_factory=dict)

    # ------------------------------------------------------------------ derivation
    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> "Manufactured":
        """Derive everything the spec declares. Raises :class:`ManufacturedError`."""
        start = time.perf_counter()
        system = str(spec.get("system") or "cartesian")
        if system not in SYSTEMS:
            raise ManufacturedError(f"system: unknown coordinate system {system!r} (known: {', '.join(SYSTEMS)})")
        coords = [str(c) for c in (spec.get("coordinates") or [])]
        if system == "axisymmetric" and coords != ["r", "z"]:
            raise ManufacturedError(f"coordinates: axisymmetric takes [r, z], got {coords}")
        if not 1 <= len(coords) <= 3 or len(set(coords)) != len(coords):
            raise ManufacturedError(f"coordinates: 1 to 3 distinct names, got {coords}")
        tname = spec.get("time")
        names_taken = list(coords) + ([str(tname)] if tname else [])
        for n in names_taken:
            if not n.isidentifier() or n.startswith("_"):
                raise ManufacturedError(f"coordinates: {n!r} is not a valid name")
        real = {n: sp.Symbol(n, real=True) for n in names_taken}
        t = real.get(str(tname)) if tname else None
        space = Space(tuple(real[c] for c in coords), system, t)
        m = cls(space=space, time=t, parameters={}, symbols=dict(real))
        names: Dict[str, Any] = dict(real)
        if t is not None:
            names[str(tname)] = t
        for pname, value in (spec.get("parameters") or {}).items():
            m._name_free(f"parameters.{pname}", pname, names)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                sym = sp.Symbol(pname, real=True)
                m.parameters[pname] = float(value)
                m.symbols[pname] = sym
                names[pname] = sym
            else:  # an expression of the coordinates and earlier parameters (e.g. a variable conductivity)
                names[pname] = m._parse(f"parameters.{pname}", value, names)
                m.expressions[pname] = names[pname]  # for code and values (e.g. k(x) for the solver)
        fields_spec = spec.get("fields") or {}
        if not fields_spec:
            raise ManufacturedError("fields: declare at least one solution field, e.g. u: \"sin(pi*x)*sin(pi*y)\"")
        for fname, value in fields_spec.items():
            m._name_free(f"fields.{fname}", fname, names)
            if isinstance(value, (list, tuple)):
                comps = [m._parse(f"fields.{fname}[{i}]", v, names) for i, v in enumerate(value)]
                for i, c in enumerate(comps):
                    if kind(c) != "scalar":
                        raise ManufacturedError(f"fields.{fname}[{i}]: a component must be a scalar, got {describe(c)}")
                if len(comps) != space.dim:
                    raise ManufacturedError(f"fields.{fname}: a vector field has {space.dim} components "
                                            f"({', '.join(coords)}), got {len(comps)}")
                expr: Any = sp.Matrix(comps)
            else:
                expr = m._parse(f"fields.{fname}", value, names)
                if kind(expr) != "scalar":
                    raise ManufacturedError(f"fields.{fname}: give a vector field as a list of components")
            names[fname] = expr
            m.fields.append(fname)
            m.expressions[f"{fname}_exact"] = expr
            m.expressions[f"grad_{fname}_exact"] = m._op(f"fields.{fname}", "grad", expr)
            m.polynomial_degree[fname] = _polynomial_degree(expr, space.coords)
        for sname, text in (spec.get("sources") or {}).items():
            m._name_free(f"sources.{sname}", sname, names)
            value = m._parse(f"sources.{sname}", text, names)
            used = [f for f in m.fields if _mentions(text, f)]
            if not used:
                raise ManufacturedError(f"sources.{sname}: the operator {text!r} applies to no declared field "
                                        f"({', '.join(m.fields)})")
            want = shape_of(names[used[0]])
            if tuple(shape_of(value)) != tuple(want):
                raise ManufacturedError(f"sources.{sname}: the operator gives a {describe(value)} but the solution "
                                        f"{used[0]} is a {describe(names[used[0]])}: dimensions do not match")
            m.expressions[sname] = _simplify(value)
            m.sources.append(sname)
        fluxes: Dict[str, Any] = {}
        for qname, text in (spec.get("fluxes") or {}).items():
            m._name_free(f"fluxes.{qname}", qname, names)
            value = m._parse(f"fluxes.{qname}", text, names)
            if kind(value) == "scalar":
                raise ManufacturedError(f"fluxes.{qname}: a flux is a vector or a tensor, got a scalar")
            fluxes[qname] = value
            m.expressions[qname] = value
        for bname, bspec in (spec.get("boundaries") or {}).items():
            m._boundary(f"boundaries.{bname}", str(bname), bspec or {}, fluxes)
        m.timings["derive_s"] = time.perf_counter() - start
        return m

    def _name_free(self, where: str, name: str, names: Mapping[str, Any]) -> None:
        if not str(name).isidentifier() or str(name).startswith("_"):
            raise ManufacturedError(f"{where}: {name!r} is not a valid name (letters, digits, _)")
        if name in names or name in ("pi", "E", "eye"):
            raise ManufacturedError(f"{where}: the name {name!r} is already taken")

    def _parse(self, where: str, text: Any, names: Mapping[str, Any]) -> Any:
        try:
            return parse(text, names, self.space)
        except SymbolicError as exc:
            raise ManufacturedError(f"{where}: {exc}") from None

    def _op(self, where: str, op: str, value: Any) -> Any:
        from harness.generic import symbolic

        try:
            return getattr(symbolic, op)(self.space, value)
        except SymbolicError as exc:
            raise ManufacturedError(f"{where}: {exc}") from None

    def _boundary(self, where: str, bname: str, bspec: Mapping[str, Any], fluxes: Mapping[str, Any]) -> None:
        normal = list(bspec.get("normal") or [])
        if len(normal) != self.space.dim:
            raise ManufacturedError(f"{where}.normal: the outward normal has {self.space.dim} components, "
                                    f"got {normal}")
        n = sp.Matrix([self._parse(f"{where}.normal[{i}]", v, self.symbols) for i, v in enumerate(normal)])
        subs = {}
        for cname, value in (bspec.get("at") or {}).items():
            if cname not in self.symbols or self.symbols[cname] not in self.space.coords:
                raise ManufacturedError(f"{where}.at: {cname!r} is not a coordinate")
            subs[self.symbols[cname]] = self._parse(f"{where}.at.{cname}", value, self.symbols)
        for fname in self.fields:
            self.expressions[f"{fname}_{bname}"] = _subs(self.expressions[f"{fname}_exact"], subs)
        for qname, q in fluxes.items():
            if kind(q) == "vector":
                if q.shape[0] != self.space.dim:
                    raise ManufacturedError(f"fluxes.{qname}: {describe(q)} in {self.space.dim} dimensions")
                qn = (q.T * n)[0, 0]
            else:
                from harness.generic.symbolic import dot

                qn = dot(self.space, q, n)
            self.expressions[f"{qname}_{bname}"] = _subs(qn, subs)

    # ------------------------------------------------------------------ numbers
    def arguments(self) -> Tuple[sp.Symbol, ...]:
        """The arguments of every generated function: the coordinates, then the time."""
        return self.space.coords + ((self.time,) if self.time is not None else ())

    def numeric(self, name: str) -> Any:
        """The expression ``name`` with the parameter values substituted."""
        expr = self.expressions[name]
        subs = {self.symbols[p]: v for p, v in self.parameters.items()}
        return _subs(expr, subs)

    def function(self, name: str) -> Callable[..., np.ndarray]:
        """A vectorised numpy function of (coordinates..., t) returning float64 of shape
        ``points + shape_of(expression)`` (broadcast over the arguments)."""
        if name not in self.expressions:
            raise KeyError(name)
        start = time.perf_counter()
        expr = self.numeric(name)
        args = self.arguments()
        comps = list(expr) if isinstance(expr, sp.MatrixBase) else [expr]
        shape = shape_of(expr)
        funcs = [sp.lambdify(args, c, modules="numpy") for c in comps]
        self.timings["lambdify_s"] = self.timings.get("lambdify_s", 0.0) + time.perf_counter() - start

        def evaluate(*values: Any) -> np.ndarray:
            arrays = [np.asarray(v, dtype=np.float64) for v in values]
            base = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
            with np.errstate(all="ignore"):
                out = [np.broadcast_to(np.asarray(f(*arrays), dtype=np.float64), base) for f in funcs]
            stacked = np.stack(out, axis=-1) if shape else out[0]
            return stacked.reshape(base + tuple(shape)) if shape else np.array(stacked, dtype=np.float64)

        return evaluate

    def sha256(self) -> str:
        """SHA-256 of every derived expression (name = srepr), in name order: the manifest's
        record of what was derived."""
        text = "\n".join(f"{k} = {sp.srepr(self.numeric(k))}" for k in sorted(self.expressions))
        return hashlib.sha256(text.encode()).hexdigest()

    def as_text(self) -> Dict[str, str]:
        """Every derived expression as text (parameters kept as symbols)."""
        return {k: str(v.tolist() if isinstance(v, sp.MatrixBase) else v) for k, v in self.expressions.items()}

    # ------------------------------------------------------------------ source code
    def code(self, language: str, names: List[str], prefix: str) -> str:
        """Source code defining one function per scalar component of each name, arguments
        (coordinates..., t), double precision; components of vectors and tensors get the
        suffixes _0, _1, ... (row-major)."""
        if language not in LANGUAGES:
            raise ManufacturedError(f"code.languages: unknown language {language!r} (known: {', '.join(LANGUAGES)})")
        args = [str(a) for a in self.arguments()]
        items: List[Tuple[str, Any]] = []
        for name in names:
            expr = self.numeric(name)
            if language != "python":  # pi as a literal: M_PI is not C99, and Fortran has no pi
                expr = expr.subs(sp.pi, sp.Float(sp.pi, 20))
            if isinstance(expr, sp.MatrixBase):
                items += [(f"{name}_{i}", c) for i, c in enumerate(expr)]
            else:
                items.append((name, expr))
        head = f"manufactured solution code generated by the harness (sympy {sp.__version__}); do not edit"
        if language == "c":
            guard = f"{prefix.upper()}_H"
            lines = [f"/* {head} */", f"#ifndef {guard}", f"#define {guard}", "#include <math.h>", ""]
            for fname, e in items:
                lines.append(f"static inline double {fname}({', '.join('double ' + a for a in args)}) {{")
                lines.append(f"    return {sp.ccode(e, standard='c99')};")
                lines.append("}")
            lines += ["", f"#endif /* {guard} */", ""]
            return "\n".join(lines)
        if language == "fortran":
            lines = [f"! {head}", f"module {prefix}", "  implicit none", "contains"]
            for fname, e in items:
                body = sp.fcode(e, assign_to=fname, standard=95, source_format="free")
                lines += [f"  pure real(8) function {fname}({', '.join(args)})",
                          f"    real(8), intent(in) :: {', '.join(args)}",
                          *("    " + ln for ln in body.splitlines()),
                          f"  end function {fname}"]
            lines += [f"end module {prefix}", ""]
            return "\n".join(lines)
        from sympy.printing.numpy import NumPyPrinter

        printer = NumPyPrinter({"fully_qualified_modules": True})
        lines = [f'"""{head}"""', "import numpy", ""]
        for fname, e in items:
            lines += [f"def {fname}({', '.join(args)}):",
                      f"    return {printer.doprint(e)} + 0.0 * ({' + '.join(args)})", "", ""]
        return "\n".join(lines).rstrip() + "\n"


def _subs(expr: Any, subs: Mapping[Any, Any]) -> Any:
    if not subs:
        return expr
    return expr.subs(subs) if isinstance(expr, sp.MatrixBase) else sp.sympify(expr).subs(subs)


def _simplify(value: Any) -> Any:
    if isinstance(value, sp.MatrixBase):
        return value.applyfunc(lambda e: sp.simplify(e) if sp.count_ops(e) < 400 else e)
    return sp.simplify(value) if sp.count_ops(value) < 400 else value


def _mentions(text: Any, name: str) -> bool:
    import re

    return isinstance(text, str) and re.search(rf"\b{re.escape(name)}\b", text) is not None


def _polynomial_degree(expr: Any, coords: Tuple[sp.Symbol, ...]) -> Optional[int]:
    """Total degree in the coordinates when every component is a polynomial in them, else None."""
    comps = list(expr) if isinstance(expr, sp.MatrixBase) else [expr]
    degree = 0
    for c in comps:
        c = sp.expand(c)
        if not c.is_polynomial(*coords):
            return None
        degree = max(degree, sp.Poly(c, *coords).total_degree() if c.free_symbols & set(coords) else 0)
    return degree
