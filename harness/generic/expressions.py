"""A small, safe expression language over numpy for declarative cases.

An expression such as ``p0 * pi * R**2`` or ``sin(pi*x/L) * exp(-alpha*(pi/L)**2*t_end)``
is parsed with :mod:`ast` and evaluated node by node over a whitelist: numbers, names
(case parameters, model outputs, references, earlier metrics, the constants ``pi``, ``e``,
``inf``, ``nan``), arithmetic ``+ - * / // % **``, comparisons, subscripts/slices
(``u[-1]``, ``x[1:]``) and calls of the functions in :data:`FUNCTIONS` by their bare name.
Everything else (attribute access, imports, lambdas, comprehensions, strings, calls of
anything not in the list, ``**kwargs``) is refused with :class:`ExpressionError`: Python's
``eval`` is never used. Integer powers are taken in float64, so ``9**9**9`` is ``inf``,
not a hang.
"""
from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable, Dict, Iterable, Mapping, Optional

import numpy as np
import scipy.special

from harness.generic import expression_limits as limits

MAX_LENGTH = 2000  # characters of one expression


class ExpressionError(ValueError):
    """An expression that is not valid in the expression language (the message says the rule)."""


class _LimitError(ExpressionError):
    """A resource bound broken during evaluation (re-raised by evaluate with the expression)."""


FUNCTIONS: Dict[str, Callable[..., Any]] = {
    # elementwise
    "abs": np.abs, "sign": np.sign, "sqrt": np.sqrt, "cbrt": np.cbrt, "square": np.square,
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log10": np.log10, "log2": np.log2, "log1p": np.log1p,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos,
    "arctan": np.arctan, "arctan2": np.arctan2, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "hypot": np.hypot, "floor": np.floor, "ceil": np.ceil, "round": np.round,
    "minimum": np.minimum, "maximum": np.maximum, "clip": np.clip, "where": np.where,
    "erf": scipy.special.erf, "erfc": scipy.special.erfc, "ellipk": scipy.special.ellipk,
    # reductions and arrays
    "sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
    "cumsum": np.cumsum, "diff": np.diff, "trapezoid": np.trapezoid, "interp": np.interp,
    "gradient": np.gradient, "concatenate": np.concatenate, "linspace": np.linspace,
    "zeros_like": np.zeros_like, "ones_like": np.ones_like, "full_like": np.full_like,
    "array": np.asarray, "size": np.size, "len": len, "float": float, "int": int,
}

CONSTANTS: Dict[str, float] = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}


def _power(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        a = np.float64(a)  # float64 overflows to inf instead of building a huge integer
    if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        with np.errstate(over="ignore"):
            return np.power(a, b)
    return a ** b


_BINARY: Dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _power,
}
_UNARY: Dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_COMPARE: Dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
_FORBIDDEN = {
    ast.Attribute: "attribute access (a.b) is not allowed",
    ast.Lambda: "lambda is not allowed",
    ast.ListComp: "comprehensions are not allowed", ast.SetComp: "comprehensions are not allowed",
    ast.DictComp: "comprehensions are not allowed", ast.GeneratorExp: "comprehensions are not allowed",
    ast.NamedExpr: "assignment (:=) is not allowed", ast.Starred: "*args are not allowed",
    ast.Dict: "dict literals are not allowed", ast.Set: "set literals are not allowed",
    ast.JoinedStr: "strings are not allowed", ast.BoolOp: "and/or are not allowed (use where())",
    ast.IfExp: "conditional expressions are not allowed (use where())",
    ast.Await: "await is not allowed", ast.Yield: "yield is not allowed",
}


def parse_tree(text: Any) -> Optional[ast.Expression]:
    """The syntax tree of an expression string; None for a plain number (int or float, not bool).
    Raises ExpressionError for another type, an over-long text or a syntax error."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return None
    if not isinstance(text, str):
        raise ExpressionError(f"must be a string expression, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"syntax error in {text!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"{_short(text)}: nested too deeply for the parser; at most "
                              f"{limits.MAX_DEPTH} levels") from None
    problem = limits.depth_problem(tree)
    if problem:
        raise ExpressionError(f"{_short(text)}: {problem}")
    return tree


def _short(text: str) -> str:
    """The expression as quoted in a message (long ones cut, so the message stays one line)."""
    return repr(text) if len(text) <= 80 else repr(text[:77] + "...")


def evaluate(text: str, names: Mapping[str, Any]) -> Any:
    """Evaluate the expression ``text`` with the variables ``names``.

    Raises :class:`ExpressionError` naming the rule broken: a syntax error, a name not
    defined, a call of a function not in :data:`FUNCTIONS`, a forbidden construct, or an
    error of the arithmetic itself (e.g. shapes that do not broadcast).
    """
    tree = parse_tree(text)
    if tree is None:
        return text
    evaluator = _Evaluator(names)
    try:
        return evaluator.visit(tree.body)
    except _LimitError as exc:
        raise ExpressionError(f"{_short(text)}: {exc}") from None
    except ExpressionError:
        raise
    except (ArithmeticError, ValueError, TypeError, IndexError) as exc:
        raise ExpressionError(f"{_short(text)}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    except (RecursionError, MemoryError) as exc:
        raise ExpressionError(f"{_short(text)}: {type(exc).__name__} (too large or too deep)") from None


_ALLOWED_NODES = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.Compare,
                  ast.Call, ast.keyword, ast.Subscript, ast.Slice, ast.Tuple, ast.List,
                  *_BINARY, *_UNARY, *_COMPARE)


def check(text: str, names: Optional[Iterable[str]]) -> None:
    """Check an expression without evaluating it: syntax, constructs, called functions and,
    unless ``names`` is None, that every variable it reads is one of ``names`` or a constant.

    Raises :class:`ExpressionError` with the same rules as :func:`evaluate`, so a bad
    declaration is reported before the model runs.
    """
    tree = parse_tree(text)
    if tree is None:
        return
    known = None if names is None else set(names) | set(CONSTANTS)
    called = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                rule = _FORBIDDEN.get(type(node.func), "only functions of the expression language may be called")
                raise ExpressionError(f"forbidden construct: {rule}; call functions by their bare name")
            if node.func.id not in FUNCTIONS:
                raise ExpressionError(f"forbidden construct: call of {node.func.id!r}, which is not an allowed "
                                      f"function (allowed: {', '.join(sorted(FUNCTIONS))})")
            if any(kw.arg is None for kw in node.keywords):
                raise ExpressionError("forbidden construct: **kwargs are not allowed")
            called.add(id(node.func))
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise ExpressionError(f"forbidden construct: only numbers are allowed as literals, "
                                      f"got {node.value!r}")
        elif not isinstance(node, _ALLOWED_NODES):
            rule = _FORBIDDEN.get(type(node), f"{type(node).__name__} is not allowed in an expression")
            raise ExpressionError(f"forbidden construct: {rule}")
    if known is None:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and id(node) not in called and node.id not in known:
            if node.id in FUNCTIONS:
                raise ExpressionError(f"{node.id!r} is a function: call it, e.g. {node.id}(x)")
            raise ExpressionError(f"name {node.id!r} is not defined (defined: {', '.join(sorted(known))})")


class _Evaluator:
    def __init__(self, names: Mapping[str, Any]):
        self.names = names

    def visit(self, node: ast.AST) -> Any:
        """Evaluate ``node``; bounded problems raise ExpressionError (prefixed with the text by evaluate)."""
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            rule = _FORBIDDEN.get(type(node), f"{type(node).__name__} is not allowed in an expression")
            raise ExpressionError(f"forbidden construct: {rule}")
        return method(node)

    def _Constant(self, node: ast.Constant) -> Any:
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(f"forbidden construct: only numbers are allowed as literals, got {node.value!r}")
        return node.value

    def _Name(self, node: ast.Name) -> Any:
        if node.id in self.names:
            return self.names[node.id]
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        if node.id in FUNCTIONS:
            raise ExpressionError(f"{node.id!r} is a function: call it, e.g. {node.id}(x)")
        known = sorted(set(self.names) | set(CONSTANTS))
        raise ExpressionError(f"name {node.id!r} is not defined (defined: {', '.join(known)})")

    def _BinOp(self, node: ast.BinOp) -> Any:
        op = _BINARY.get(type(node.op))
        if op is None:
            raise ExpressionError(f"forbidden construct: operator {type(node.op).__name__} is not allowed")
        left, right = self.visit(node.left), self.visit(node.right)
        self._bounded(limits.broadcast_problem((left, right), f"the operands of {type(node.op).__name__}"))
        return self._checked(op(left, right))

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        op = _UNARY.get(type(node.op))
        if op is None:
            raise ExpressionError(f"forbidden construct: operator {type(node.op).__name__} is not allowed")
        return self._checked(op(self.visit(node.operand)))

    def _Compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        result: Any = True
        for op_node, right_node in zip(node.ops, node.comparators):
            op = _COMPARE.get(type(op_node))
            if op is None:
                raise ExpressionError(f"forbidden construct: comparison {type(op_node).__name__} is not allowed")
            right = self.visit(right_node)
            result = np.logical_and(result, op(left, right))
            left = right
        return result

    def _Call(self, node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name):
            rule = _FORBIDDEN.get(type(node.func), "only functions of the expression language may be called")
            raise ExpressionError(f"forbidden construct: {rule}; call functions by their bare name")
        fn = FUNCTIONS.get(node.func.id)
        if fn is None:
            raise ExpressionError(f"forbidden construct: call of {node.func.id!r}, which is not an allowed "
                                  f"function (allowed: {', '.join(sorted(FUNCTIONS))})")
        args = [self.visit(a) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise ExpressionError("forbidden construct: **kwargs are not allowed")
            kwargs[kw.arg] = self.visit(kw.value)
        self._bounded(limits.call_problem(node.func.id, args, kwargs))
        return self._checked(fn(*args, **kwargs))

    @staticmethod
    def _bounded(problem: Optional[str]) -> None:
        if problem:
            raise _LimitError(problem)

    def _checked(self, value: Any) -> Any:
        self._bounded(limits.int_problem(value))
        return value

    def _Subscript(self, node: ast.Subscript) -> Any:
        value = self.visit(node.value)
        return np.asarray(value)[self._index(node.slice)]

    def _index(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Slice):
            return slice(*(None if part is None else self._int(self.visit(part))
                           for part in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.Tuple):
            return tuple(self._index(e) for e in node.elts)
        value = self.visit(node)
        return value if isinstance(value, np.ndarray) and value.dtype == bool else self._int(value)

    @staticmethod
    def _int(value: Any) -> int:
        f = float(value)
        if f != int(f):
            raise ExpressionError(f"an index must be an integer, got {value!r}")
        return int(f)

    def _Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self.visit(e) for e in node.elts)

    def _List(self, node: ast.List) -> Any:
        return [self.visit(e) for e in node.elts]
