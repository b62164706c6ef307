"""Safe parsing of manufactured-solution strings into sympy objects, and the operator vocabulary.

A string such as ``-div(lam*tr(sym_grad(u))*eye + 2*mu*sym_grad(u))`` is parsed with :mod:`ast`
and built node by node into sympy objects over a whitelist: numbers, the names given
(coordinates, parameters, fields), the constants ``pi`` and ``E``, ``eye`` (the identity),
``+ - * / **``, unary minus and calls of the functions in :data:`OPERATORS` and
:data:`ELEMENTARY` by their bare name. Attribute access, dunder names, imports, lambdas,
strings, subscripts, comprehensions and calls of anything else raise :class:`SymbolicError`
naming the construct: neither ``eval`` nor ``sympify``/``parse_expr`` ever sees the text.

Values are sympy scalars (``Expr``), vectors (``Matrix`` n x 1) or tensors (``Matrix`` n x n).
``Space`` holds the coordinate system: ``cartesian`` (1-3 coordinates) or ``axisymmetric``
(``r, z``; vectors have the components (r, z), tensors are 3 x 3 in (r, theta, z)).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Sequence

import sympy as sp

from harness.generic.expressions import ExpressionError, parse_tree

MAX_DEPTH = 60      # nesting of the syntax tree (length and syntax: expressions.parse_tree)
MAX_POWER = 64      # |exponent| of an integer power of an integer literal


class SymbolicError(ValueError):
    """A string that is not a valid manufactured-solution expression (the message says the rule)."""


ELEMENTARY: Dict[str, Callable[..., Any]] = {
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt,
    "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh, "asin": sp.asin, "acos": sp.acos, "atan": sp.atan,
    "atan2": sp.atan2, "abs": sp.Abs, "erf": sp.erf,
}
OPERATORS = ("diff", "grad", "div", "laplace", "curl", "sym_grad", "tr", "eye", "dot", "transpose")
CONSTANTS = {"pi": sp.pi, "E": sp.E}


@dataclass(frozen=True)
class Space:
    """The coordinate system: ``coords`` (sympy symbols, in order) and ``system``."""

    coords: tuple
    system: str = "cartesian"
    time: Any = None  # the time symbol, or None (steady)

    @property
    def dim(self) -> int:
        return len(self.coords)

    @property
    def tensor_dim(self) -> int:
        """Size of a tensor: 3 (r, theta, z) in axisymmetry, else the dimension."""
        return 3 if self.system == "axisymmetric" else self.dim


def kind(value: Any) -> str:
    """``scalar``, ``vector`` or ``tensor``."""
    if isinstance(value, sp.MatrixBase):
        return "vector" if value.shape[1] == 1 else "tensor"
    return "scalar"


def describe(value: Any) -> str:
    k = kind(value)
    return k if k == "scalar" else f"{k} ({'x'.join(map(str, value.shape if k == 'tensor' else value.shape[:1]))})"


def _need(name: str, value: Any, *kinds: str) -> None:
    if kind(value) not in kinds:
        raise SymbolicError(f"{name}() takes a {' or '.join(kinds)}, got a {describe(value)}")


def grad(space: Space, value: Any) -> Any:
    _need("grad", value, "scalar", "vector")
    c = space.coords
    if kind(value) == "scalar":
        return sp.Matrix([sp.diff(value, x) for x in c])
    if value.shape[0] != space.dim:
        raise SymbolicError(f"grad() of a vector of {value.shape[0]} components in {space.dim} dimensions")
    if space.system == "axisymmetric":
        (ur, uz), (r, z) = value, c
        return sp.Matrix([[sp.diff(ur, r), 0, sp.diff(ur, z)], [0, ur / r, 0], [sp.diff(uz, r), 0, sp.diff(uz, z)]])
    return sp.Matrix(space.dim, space.dim, lambda i, j: sp.diff(value[i], c[j]))


def div(space: Space, value: Any) -> Any:
    _need("div", value, "vector", "tensor")
    c = space.coords
    if kind(value) == "vector":
        if value.shape[0] != space.dim:
            raise SymbolicError(f"div() of a vector of {value.shape[0]} components in {space.dim} dimensions")
        if space.system == "axisymmetric":
            r, z = c
            return sp.diff(r * value[0], r) / r + sp.diff(value[1], z)
        return sum((sp.diff(value[i], c[i]) for i in range(space.dim)), sp.Integer(0))
    if value.shape[0] != space.tensor_dim:
        raise SymbolicError(f"div() of a {describe(value)} tensor; expected {space.tensor_dim}x{space.tensor_dim}")
    if space.system == "axisymmetric":
        r, z = c
        return sp.Matrix([sp.diff(value[0, 0], r) + sp.diff(value[0, 2], z) + (value[0, 0] - value[1, 1]) / r,
                          sp.diff(value[2, 0], r) + sp.diff(value[2, 2], z) + value[2, 0] / r])
    return sp.Matrix([sum((sp.diff(value[i, j], c[j]) for j in range(space.dim)), sp.Integer(0))
                      for i in range(space.dim)])


def curl(space: Space, value: Any) -> Any:
    c = space.coords
    if space.system == "axisymmetric":
        _need("curl", value, "vector")
        (ur, uz), (r, z) = value, c
        return sp.diff(ur, z) - sp.diff(uz, r)  # the theta component
    if space.dim == 2 and kind(value) == "scalar":
        return sp.Matrix([sp.diff(value, c[1]), -sp.diff(value, c[0])])
    _need("curl", value, "vector")
    if space.dim == 2 and value.shape[0] == 2:
        return sp.diff(value[1], c[0]) - sp.diff(value[0], c[1])
    if space.dim == 3 and value.shape[0] == 3:
        x, y, z = c
        return sp.Matrix([sp.diff(value[2], y) - sp.diff(value[1], z), sp.diff(value[0], z) - sp.diff(value[2], x),
                          sp.diff(value[1], x) - sp.diff(value[0], y)])
    raise SymbolicError(f"curl() of a {describe(value)} in {space.dim} dimensions")


def sym_grad(space: Space, value: Any) -> Any:
    _need("sym_grad", value, "vector")
    g = grad(space, value)
    return (g + g.T) / 2


def tr(space: Space, value: Any) -> Any:
    _need("tr", value, "tensor")
    return value.trace()


def dot(space: Space, a: Any, b: Any) -> Any:
    if kind(a) == "scalar" or kind(b) == "scalar":
        raise SymbolicError(f"dot() takes vectors or tensors, got a {describe(a)} and a {describe(b)}")
    if kind(a) == "vector" and kind(b) == "vector":
        if a.shape != b.shape:
            raise SymbolicError(f"dot() of vectors of {a.shape[0]} and {b.shape[0]} components")
        return (a.T * b)[0, 0]
    if kind(a) == "tensor" and kind(b) == "vector" and space.system == "axisymmetric" and a.shape[0] == 3 \
            and b.shape[0] == 2:  # (r, z) vector against an (r, theta, z) tensor
        t = a.extract([0, 2], [0, 2])
        return t * b
    if a.shape[1] != b.shape[0]:
        raise SymbolicError(f"dot() of a {describe(a)} and a {describe(b)}: sizes do not match")
    return a * b


def transpose(space: Space, value: Any) -> Any:
    _need("transpose", value, "tensor")
    return value.T


_ONE = sp.Integer(1)


def diff(space: Space, value: Any, var: Any, n: Any = _ONE) -> Any:
    if not isinstance(var, sp.Symbol) or var not in space.coords + ((space.time,) if space.time is not None else ()):
        raise SymbolicError(f"diff(): the variable must be a coordinate or t, got {var}")
    if not (isinstance(n, sp.Integer) and 1 <= int(n) <= 8):
        raise SymbolicError("diff(): the order must be an integer literal 1 ... 8")
    return value.diff(var, int(n)) if isinstance(value, sp.MatrixBase) else sp.diff(value, var, int(n))


def laplace(space: Space, value: Any) -> Any:
    _need("laplace", value, "scalar", "vector")
    return div(space, grad(space, value))


_OPERATOR_FUNCS = {"diff": diff, "grad": grad, "div": div, "laplace": laplace, "curl": curl,
                   "sym_grad": sym_grad, "tr": tr, "dot": dot, "transpose": transpose}

_FORBIDDEN = {
    ast.Attribute: "attribute access (a.b)", ast.Lambda: "lambda", ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension", ast.DictComp: "a comprehension", ast.GeneratorExp: "a comprehension",
    ast.NamedExpr: "assignment (:=)", ast.Starred: "*args", ast.Dict: "a dict literal", ast.Set: "a set literal",
    ast.JoinedStr: "a string", ast.BoolOp: "and/or", ast.IfExp: "a conditional expression",
    ast.Subscript: "indexing (a[i])", ast.Compare: "a comparison", ast.Await: "await", ast.Yield: "yield",
    ast.Tuple: "a tuple", ast.List: "a list",
}


def parse(text: Any, names: Mapping[str, Any], space: Space) -> Any:
    """The sympy object of ``text`` over ``names`` (symbol or value by name) in ``space``.

    A plain int or float is returned as a sympy number. Raises :class:`SymbolicError`.
    """
    if isinstance(text, bool):
        raise SymbolicError(f"must be an expression or a number, got {text!r}")
    if isinstance(text, (int, float)):
        return sp.nsimplify(text) if isinstance(text, float) and float(text).is_integer() else sp.sympify(text)
    try:  # the same syntax rules and bounds as the numeric expressions (type, length, syntax, depth)
        tree = parse_tree(text)
    except ExpressionError as exc:
        raise SymbolicError(str(exc)) from None
    return _Builder(names, space).visit(tree.body, 0)


class _Builder:
    def __init__(self, names: Mapping[str, Any], space: Space):
        self.names, self.space = names, space

    def visit(self, node: ast.AST, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise SymbolicError(f"nested deeper than {MAX_DEPTH} levels")
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            what = _FORBIDDEN.get(type(node), type(node).__name__)
            raise SymbolicError(f"forbidden construct: {what} is not allowed")
        return method(node, depth + 1)

    def _Constant(self, node: ast.Constant, depth: int) -> Any:
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SymbolicError(f"forbidden construct: only numbers are allowed as literals, got {v!r}")
        return sp.Integer(v) if isinstance(v, int) else sp.Float(v, 17)

    def _Name(self, node: ast.Name, depth: int) -> Any:
        name = node.id
        if name.startswith("__"):
            raise SymbolicError(f"forbidden construct: the dunder name {name!r}")
        if name in self.names:
            return self.names[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name == "eye":
            return sp.eye(self.space.tensor_dim)
        if name in ELEMENTARY or name in _OPERATOR_FUNCS:
            raise SymbolicError(f"{name!r} is a function: call it, e.g. {name}(u)")
        known = ", ".join(sorted(set(self.names) | set(CONSTANTS) | {"eye"}))
        raise SymbolicError(f"name {name!r} is neither a coordinate, a parameter nor a declared field "
                            f"(known: {known})")

    def _BinOp(self, node: ast.BinOp, depth: int) -> Any:
        a, b = self.visit(node.left, depth), self.visit(node.right, depth)
        op = type(node.op)
        try:
            if op is ast.Add:
                return self._add(a, b, 1)
            if op is ast.Sub:
                return self._add(a, b, -1)
            if op is ast.Mult:
                if kind(a) != "scalar" and kind(b) != "scalar":
                    raise SymbolicError(f"'*' of a {describe(a)} and a {describe(b)}: use dot()")
                return a * b
            if op is ast.Div:
                if kind(b) != "scalar":
                    raise SymbolicError(f"division by a {describe(b)}")
                return a / b
            if op is ast.Pow:
                if kind(a) != "scalar" or kind(b) != "scalar":
                    raise SymbolicError("'**' takes scalars")
                if isinstance(b, sp.Integer) and abs(int(b)) > MAX_POWER and a.is_number:
                    raise SymbolicError(f"integer power above {MAX_POWER} of a number")
                if isinstance(a, sp.Integer) and isinstance(b, sp.Number) and abs(float(b)) > MAX_POWER:
                    raise SymbolicError(f"power above {MAX_POWER} of a number")
                return a ** b
        except (TypeError, ValueError, sp.ShapeError) as exc:  # sympy's own refusals
            if isinstance(exc, SymbolicError):
                raise
            raise SymbolicError(f"{type(node.op).__name__} of a {describe(a)} and a {describe(b)}: {exc}") from None
        raise SymbolicError(f"forbidden construct: operator {type(node.op).__name__} is not allowed")

    @staticmethod
    def _add(a: Any, b: Any, sign: int) -> Any:
        if kind(a) != kind(b) or (kind(a) != "scalar" and a.shape != b.shape):
            raise SymbolicError(f"'{'+' if sign > 0 else '-'}' of a {describe(a)} and a {describe(b)}: "
                                "dimensions do not match")
        return a + b if sign > 0 else a - b

    def _UnaryOp(self, node: ast.UnaryOp, depth: int) -> Any:
        v = self.visit(node.operand, depth)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        raise SymbolicError(f"forbidden construct: operator {type(node.op).__name__} is not allowed")

    def _Call(self, node: ast.Call, depth: int) -> Any:
        if not isinstance(node.func, ast.Name):
            what = _FORBIDDEN.get(type(node.func), "a call of something other than a bare function name")
            raise SymbolicError(f"forbidden construct: {what}; call functions by their bare name")
        name = node.func.id
        if node.keywords:
            raise SymbolicError(f"forbidden construct: keyword arguments in {name}()")
        if name not in ELEMENTARY and name not in _OPERATOR_FUNCS:
            raise SymbolicError(f"forbidden construct: call of {name!r}, which is not an allowed function "
                                f"(operators: {', '.join(OPERATORS)}; functions: {', '.join(sorted(ELEMENTARY))})")
        args = [self.visit(a, depth) for a in node.args]
        if name in ELEMENTARY:
            for a in args:
                if kind(a) != "scalar":
                    raise SymbolicError(f"{name}() takes scalars, got a {describe(a)}")
            try:
                return ELEMENTARY[name](*args)
            except TypeError as exc:
                raise SymbolicError(f"{name}(): {exc}") from None
        fn = _OPERATOR_FUNCS[name]
        try:
            return fn(self.space, *args)
        except TypeError:
            raise SymbolicError(f"{name}() called with {len(args)} arguments") from None


def shape_of(value: Any) -> Sequence[int]:
    """() for a scalar, (n,) for a vector, (n, n) for a tensor."""
    k = kind(value)
    return () if k == "scalar" else ((value.shape[0],) if k == "vector" else tuple(value.shape))
