"""Resource bounds of the expression language: nesting depth, array sizes, integer range.

An expression is short (at most 2000 characters), but a short text can still ask for a lot:
1991 unary minus signs nest 1991 levels deep, ``linspace(0, 1, int(10**10))`` asks for 74.5 GiB,
``int(1e308) * int(1e308)`` builds an integer no float64 holds. Each is refused with an
ExpressionError naming the expression and the limit, before anything is allocated:

- nesting deeper than MAX_DEPTH levels of the syntax tree;
- an array result of more than ``max_elements()`` elements (``$HARNESS_EXPR_MAX_ELEMENTS``,
  default 10^8 = 800 MB of float64), predicted from the arguments of the array-making functions
  and from the broadcast shape of elementwise operations;
- an integer result outside the int64 range (integer overflow).
"""
from __future__ import annotations

import ast
import os
from typing import Any, Mapping, Sequence

import numpy as np

MAX_DEPTH = 100  # levels of the syntax tree of one expression
DEFAULT_MAX_ELEMENTS = 10**8  # elements of one array an expression may create
INT64_MAX = 2**63 - 1


def max_elements() -> int:
    """The array-size limit: ``$HARNESS_EXPR_MAX_ELEMENTS`` if set (a positive integer), else 10^8."""
    raw = os.environ.get("HARNESS_EXPR_MAX_ELEMENTS")
    try:
        return max(1, int(float(raw))) if raw else DEFAULT_MAX_ELEMENTS
    except ValueError:
        return DEFAULT_MAX_ELEMENTS


def tree_depth(tree: ast.AST) -> int:
    """Depth of a syntax tree, counted without recursion."""
    depth, stack = 0, [(tree, 1)]
    while stack:
        node, d = stack.pop()
        depth = max(depth, d)
        stack.extend((child, d + 1) for child in ast.iter_child_nodes(node))
    return depth


def depth_problem(tree: ast.AST) -> str | None:
    """The rule broken by a too deeply nested tree, or None."""
    d = tree_depth(tree)
    if d > MAX_DEPTH:
        return f"nested {d} levels deep; at most {MAX_DEPTH}"
    return None


def _shape(value: Any) -> tuple | None:
    if isinstance(value, (np.ndarray, np.generic)):
        return tuple(np.shape(value))
    if isinstance(value, (int, float, complex, bool)):
        return ()
    return None  # lists etc.: converted by numpy; their size is bounded by the expression's length


def _count(shape: Sequence[Any]) -> float:
    n = 1.0
    for s in shape:
        n *= float(s)
    return n


def _too_many(n: float, what: str) -> str | None:
    limit = max_elements()
    if n > limit:
        return f"{what} would have {n:.4g} elements; at most {limit} (HARNESS_EXPR_MAX_ELEMENTS)"
    return None


def broadcast_problem(values: Sequence[Any], what: str) -> str | None:
    """The rule broken if the elementwise result of ``values`` would exceed the limit, else None."""
    shapes = [s for s in map(_shape, values) if s]
    if len(shapes) < 2:
        return None
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        return None  # numpy reports the mismatch itself
    return _too_many(_count(shape), what)


def call_problem(name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
    """The rule broken if calling ``name`` would create too large an array, else None."""
    if name == "linspace":
        num = kwargs.get("num", args[2] if len(args) > 2 else 50)
        try:
            n = float(num)
        except (TypeError, ValueError):
            return None
        return _too_many(n, f"linspace(..., num={num!r})")
    if name in ("full_like", "zeros_like", "ones_like") and "shape" in kwargs:
        shape = kwargs["shape"]
        try:
            n = _count(shape if isinstance(shape, (tuple, list)) else (shape,))
        except (TypeError, ValueError):
            return None
        return _too_many(n, f"{name}(..., shape={shape!r})")
    return broadcast_problem(list(args) + list(kwargs.values()), f"{name}(...)")


def int_problem(value: Any) -> str | None:
    """The rule broken by a Python integer outside the int64 range (integer overflow), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT64_MAX:
        return f"integer overflow: a result of {value.bit_length()} bits; at most 64 (int64)"
    return None
