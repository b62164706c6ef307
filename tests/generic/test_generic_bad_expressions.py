"""Issue 32: expressions and a user's output files that asked for too much or were malformed.

Nesting is bounded (1991 unary minus signs, 996 additions), arrays above the configurable limit are
refused before they are allocated, integer overflow names the expression, ragged lists in ``series``
or ``plots`` and damaged CSV/JSON/NPZ/NPY outputs are invalid input (exit 2, one line)."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

from harness import run_case
from harness.core.context import HarnessInputError
from harness.generic import expression_limits
from harness.generic.expressions import ExpressionError, evaluate
from harness.generic.readers import read_file

ROOT = Path(__file__).resolve().parents[2]
SEARCH = f"hydra.searchpath=[file://{ROOT}/tests/generic/conf]"


@pytest.mark.parametrize("text, message", [
    ("-" * 1991 + "1", "'" + "-" * 77 + "...': nested 1993 levels deep; at most 100"),
    ("+".join(["1"] * 996), "'" + ("1+" * 39)[:77] + "...': nested 997 levels deep; at most 100"),
    ("linspace(0, 1, int(10**10))", "'linspace(0, 1, int(10**10))': linspace(..., num=10000000000) would have "
                                    "1e+10 elements; at most 100000000 (HARNESS_EXPR_MAX_ELEMENTS)"),
    ("full_like(x, 1, shape=(100000, 100000))", "'full_like(x, 1, shape=(100000, 100000))': full_like(..., "
                                                "shape=(100000, 100000)) would have 1e+10 elements; at most "
                                                "100000000 (HARNESS_EXPR_MAX_ELEMENTS)"),
    ("int(1e308) * int(1e308)", "'int(1e308) * int(1e308)': integer overflow: a result of 1024 bits; at most 64 "
                                "(int64)"),
    ("int(2**62) * 4", "'int(2**62) * 4': integer overflow: a result of 65 bits; at most 64 (int64)"),
])
def test_fuzzed_expressions_are_refused_naming_the_rule(text, message):
    with pytest.raises(ExpressionError) as err:
        evaluate(text, {"x": np.ones(3)})
    assert str(err.value) == message


def test_the_array_limit_is_configurable_and_checked_before_allocation(monkeypatch):
    x = np.ones((1000, 1))
    y = np.ones(1000)
    assert evaluate("x * y", {"x": x, "y": y}).shape == (1000, 1000)  # 10^6 elements: under the default
    monkeypatch.setenv("HARNESS_EXPR_MAX_ELEMENTS", "999999")
    with pytest.raises(ExpressionError, match=r"'x \* y': the operands of Mult would have 1e\+06 elements; "
                                              r"at most 999999 \(HARNESS_EXPR_MAX_ELEMENTS\)"):
        evaluate("x * y", {"x": x, "y": y})
    assert evaluate("linspace(0, 1, 999999)", {}).size == 999999  # at the limit: allowed
    assert expression_limits.max_elements() == 999999


def test_depth_limit_leaves_real_expressions_alone():
    assert evaluate("sin(pi*x/L) * exp(-alpha*(pi/L)**2*t)", {"x": 0.5, "L": 1.0, "alpha": 0.0, "t": 1.0}) == 1.0
    assert evaluate("+".join(["1"] * 90), {}) == 90


@pytest.fixture(scope="module")
def bad_outputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("outputs")
    (d / "deep.json").write_text("[" * 100000 + "]" * 100000)
    (d / "ragged.json").write_text('{"y": [[1, 2], [3]]}')
    (d / "short.csv").write_text("t,y\n1,2\n3\n")
    buf = io.BytesIO()
    np.savez(buf, y=np.arange(10.0))
    (d / "truncated.npz").write_bytes(buf.getvalue()[:200])
    (d / "truncated.npy").write_bytes(b"\x93NUMPY\x01\x00v\x00{'descr': '<f8'")
    return d


@pytest.mark.parametrize("name, key, message", [
    ("deep.json", None, "case.params.outputs.y: {p}: cannot be read as json: RecursionError: maximum recursion "
                        "depth exceeded while decoding a JSON array from a unicode string"),
    ("ragged.json", "y", "case.params.outputs.y: {p} [y]: not numeric data"),
    ("short.csv", "y", "case.params.outputs.y: {p}: column 'y' is not numeric: invalid column index 1 at row 2 "
                       "with 1 columns"),
    ("truncated.npz", "y", "case.params.outputs.y: {p}: cannot be read as npz: BadZipFile: File is not a zip file"),
    ("truncated.npy", None, "case.params.outputs.y: {p}: cannot be read as npy: ValueError: EOF: reading array "
                            "header, expected 118 bytes got 15"),
])
def test_damaged_output_files_are_invalid_input(bad_outputs, name, key, message):
    p = bad_outputs / name
    with pytest.raises(HarnessInputError) as err:
        read_file("case.params.outputs.y", None, p, key)
    assert str(err.value) == message.format(p=p)


@pytest.mark.parametrize("override, where", [
    ("case.params.series=['[[1, 2], [3]]']", "case.params.series[0]"),
    ("+case.params.plots={ragged: {x: t, y: ['[[1, 2], [3]]']}}", "case.params.plots.ragged.y[0]"),
    ("+case.params.plots={ragged: {x: '[[1, 2], [3]]', y: [t]}}", "case.params.plots.ragged.x"),
])
def test_ragged_list_in_series_or_plots_is_invalid_input(harness_env, override, where):
    out = run_case("generic_test/callables", overrides=["tracking=none", SEARCH, override])
    assert out.status == "invalid" and out.exit_code == 2
    assert out.message.startswith(f"{where}: '[[1, 2], [3]]' is not a numeric array (a ragged or non-numeric "
                                  "list: ")
    assert "\n" not in out.message


def test_expression_limits_reach_a_case_as_one_line(harness_env):
    out = run_case("generic_test/callables", overrides=[
        "tracking=none", SEARCH, "case.params.series=['linspace(0, 1, int(10**10))']"])
    assert out.status == "invalid" and out.message == (
        "case.params.series[0]: 'linspace(0, 1, int(10**10))': linspace(..., num=10000000000) would have 1e+10 "
        "elements; at most 100000000 (HARNESS_EXPR_MAX_ELEMENTS)")
    assert sys.getrecursionlimit() >= 1000  # nothing lowered or raised it for the test
