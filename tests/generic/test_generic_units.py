"""Small in-process checks of the generic case's parts: the expression language, the
readers and the metric library (closed forms, independent computations)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import h5py
import numpy as np
import pytest

from harness.metrics import library as M
from harness.core.context import HarnessInputError
from harness.generic import readers
from harness.generic.expressions import FUNCTIONS, ExpressionError, evaluate

ROOT = Path(__file__).resolve().parents[2]


# -- expressions -----------------------------------------------------------------------------
def test_expressions_compute_over_numpy_and_names():
    x = np.linspace(0.0, 1.0, 5)
    assert evaluate("p0 * pi * R**2", {"p0": 2.0, "R": 3.0}) == pytest.approx(2.0 * math.pi * 9.0)
    np.testing.assert_allclose(evaluate("sin(pi * x / L) * exp(-t / tau)", {"x": x, "L": 1.0, "t": 2.0, "tau": 4.0}),
                               np.sin(np.pi * x) * np.exp(-0.5), rtol=0, atol=0)
    assert evaluate("u[-1] + sum(u[1:3])", {"u": x}) == pytest.approx(1.0 + 0.25 + 0.5)
    assert evaluate("u[n // 2]", {"u": x, "n": 4}) == 0.5
    np.testing.assert_array_equal(evaluate("where(x < 0.5, 0, 1)", {"x": x}), [0, 0, 1, 1, 1])
    assert evaluate("4 * sqrt(1 / 9.81) * ellipk(sin(0.1)**2)", {}) > 2 * math.pi * math.sqrt(1 / 9.81)
    assert evaluate("9**9**9", {}) == math.inf  # float power: no endless big-integer arithmetic
    assert evaluate("max(x, axis=0) - min(x)", {"x": x}) == 1.0


@pytest.mark.parametrize("text, rule", [
    ("x.__class__", "forbidden construct: attribute access"),
    ("np.sin(x)", "forbidden construct: attribute access"),
    ("__import__('os')", "forbidden construct: call of '__import__'"),
    ("open(1)", "forbidden construct: call of 'open'"),
    ("(lambda: 1)()", "forbidden construct: lambda is not allowed"),
    ("[a for a in x]", "forbidden construct: comprehensions are not allowed"),
    ("'text'", "forbidden construct: only numbers are allowed as literals"),
    ("x if x else 1", "forbidden construct: conditional expressions"),
    ("sin(*x)", "forbidden construct: *args are not allowed"),
    ("y + 1", "name 'y' is not defined (defined: e, inf, nan, pi, x)"),
    ("exp", "'exp' is a function: call it"),
    ("x +", "syntax error in 'x +'"),
    ("x[0.5]", "an index must be an integer"),
    ("x + ones_like(x)[:2]", "ValueError: operands could not be broadcast"),
])
def test_expressions_refuse_what_is_not_in_the_language(text, rule):
    with pytest.raises(ExpressionError) as err:
        evaluate(text, {"x": np.arange(3.0)})
    assert rule in str(err.value)


def test_no_escape_hatch_among_the_functions():
    for name in ("eval", "exec", "open", "getattr", "setattr", "__import__", "compile", "globals", "vars", "type"):
        assert name not in FUNCTIONS
    assert all(callable(fn) for fn in FUNCTIONS.values())


# -- readers ---------------------------------------------------------------------------------
def test_readers_and_their_errors_name_file_and_key(tmp_path):
    y = np.arange(6.0)
    (tmp_path / "a.csv").write_text("# comment\nt;y\n" + "".join(f"{i};{v}\n" for i, v in enumerate(y)))
    np.savez(tmp_path / "a.npz", y=y)
    np.save(tmp_path / "a.npy", y.reshape(2, 3))
    with h5py.File(tmp_path / "a.h5", "w") as fh:
        fh.create_dataset("g/y", data=y)
    (tmp_path / "a.json").write_text(json.dumps({"r": {"y": y.tolist(), "list": [1.5, 2.5]}}))
    np.testing.assert_array_equal(readers.read_file("o.y", None, tmp_path / "a.csv", "y", delimiter=";"), y)
    np.testing.assert_array_equal(readers.read_file("o.y", None, tmp_path / "a.npz", "y"), y)
    np.testing.assert_array_equal(readers.apply_slice("o.y", readers.read_file("o.y", None, tmp_path / "a.npy", None),
                                                      ":, 1"), [1.0, 4.0])
    np.testing.assert_array_equal(readers.read_file("o.y", "hdf5", tmp_path / "a.h5", "g/y"), y)
    assert readers.read_file("o.y", None, tmp_path / "a.json", "r.list.-1") == 2.5
    cases = [
        ("csv", "a.csv", "z", r"o\.y\.key: .*a\.csv: no column 'z' \(columns: t, y\)"),
        ("npz", "a.npz", "z", r"o\.y\.key: .*a\.npz: array 'z' not found \(arrays: y\)"),
        ("npy", "a.npy", "z", r"o\.y\.key: an \.npy file holds one array"),
        ("hdf5", "a.h5", "g", r"o\.y\.key: .*a\.h5: dataset 'g' a group, not a dataset"),
        ("hdf5", "a.h5", "g/z", r"o\.y\.key: .*a\.h5: dataset 'g/z' not found"),
        ("json", "a.json", "r.x", r"o\.y\.key: .*a\.json: JSON key 'r\.x' not found \(at 'x'\)"),
        ("csv", "none.csv", "y", r"o\.y\.file: .*none\.csv: file not found"),
        ("xlsx", "a.csv", "y", r"o\.y\.reader: unknown reader 'xlsx' \(known: csv, npz, npy, hdf5, json"),
    ]
    for reader, name, key, pattern in cases:
        with pytest.raises(HarnessInputError, match=pattern):
            readers.read_file("o.y", reader, tmp_path / name, key, delimiter=";")
    with pytest.raises(HarnessInputError, match=r"o\.y\.slice: '5:x' is not a numpy index"):
        readers.apply_slice("o.y", y, "5:x")
    with pytest.raises(HarnessInputError, match=r"o\.y\.slice: '9' does not fit data of shape \(6,\)"):
        readers.apply_slice("o.y", y, "9")


# -- the metric library ----------------------------------------------------------------------
def test_library_metrics_against_closed_forms():
    t = np.linspace(0.0, 10.0, 4001)
    assert M.period(t, np.sin(2 * np.pi * t / 1.7 + 0.3)) == pytest.approx(1.7, rel=1e-6)
    assert M.period(t, 2.0 + np.cos(2 * np.pi * t / 2.5), level=2.0) == pytest.approx(2.5, rel=1e-6)
    h = np.array([0.1, 0.05, 0.025])
    assert M.slope(h, 3.0 * h**2) == pytest.approx(2.0, abs=1e-12)
    assert math.isnan(M.slope([1.0], [1.0]))
    v, r = np.array([1.0, 2.0, 2.0]), np.array([1.0, 2.0, 4.0])
    assert M.rel_l2(v, r) == pytest.approx(2.0 / math.sqrt(21.0)) == M.rms_rel(v, r) == M.relative_rms(v, r)
    x = np.array([0.0, 1.0, 3.0])  # trapezoid: ∫(v-r)² = 2·(0+4)/2 = 4, ∫r² = (1+4)/2 + 2·(4+16)/2 = 22.5
    assert M.rel_l2(v, r, x=x) == pytest.approx(math.sqrt(4.0 / 22.5))
    assert M.max_abs_error(v, r) == 2.0 and M.rel_error(1.01, 1.0) == pytest.approx(0.01)
    assert M.abs_error(3.0, 1.0) == 2.0 and M.final(v) == 2.0 and M.maximum(r) == 4.0 and M.minimum(r) == 1.0
    F = np.full(4, 2.0)
    assert M.impulse_error(F * 1.01, F, dt=0.25) == pytest.approx(0.01)
    ts = np.linspace(0.0, 1.0, 5)
    assert M.impulse_error(ts, np.ones(5), t=ts) == pytest.approx(0.5)  # ∫t = 1/2 vs ∫1 = 1
    assert M.impulse_error(np.zeros(4), np.zeros(4), dt=0.1, J_scale=1.0) == 0.0
    with pytest.raises(ValueError, match="exactly one of t"):
        M.impulse_error(F, F)
    with pytest.raises(ValueError, match="needs a scalar"):
        M.rel_error(v, r)
    with pytest.raises(ValueError, match="two upward crossings"):
        M.period(t, t)


def test_library_is_documented_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### The metric library"):]
    section = section[:section.index("\n### ", 5)]
    rows = {line.split("|")[1].strip().strip("`") for line in section.splitlines() if line.startswith("| `")}
    assert rows == set(M.LIBRARY)
    for name, entry in M.LIBRARY.items():
        assert entry.formula and entry.fn.__doc__, name
        assert set(entry.inputs) | set(entry.optional) <= set(entry.fn.__code__.co_varnames), name
    expr = readme[readme.index("### The expression language"):]
    expr = expr[:expr.index("\n### ", 5)] if "\n### " in expr[5:] else expr
    for name in FUNCTIONS:
        assert f"`{name}`" in expr, name


# -- the model runner ------------------------------------------------------------------------
def _command(command, **fields):
    from omegaconf import OmegaConf

    from harness.generic.schema import CommandConf

    return OmegaConf.merge(OmegaConf.structured(CommandConf), {"command": command, **fields})


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def test_run_command_exit_code_and_process_group_kill(tmp_path):
    import sys
    import time

    from harness.core.context import RunContext
    from harness.generic.model import ModelFailed, run_command

    ctx = RunContext(run_dir=tmp_path)
    rec = run_command(ctx, _command([sys.executable, "-c", "import sys; print('bye'); sys.exit(3)"],
                                    expected_exit_code=3), "ok3", "m")
    assert rec.returncode == 3 and rec.stdout_tail == ["bye"] and (tmp_path / "ok3.stdout.txt").is_file()
    spawn = ("import subprocess, sys, time; "
             "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
             "open('child.pid', 'w').write(str(p.pid)); print('started', flush=True); time.sleep(60)")
    start = time.perf_counter()
    with pytest.raises(ModelFailed, match=r"m.command: .* timed out after 1 s and was killed") as err:
        run_command(ctx, _command([sys.executable, "-c", spawn], timeout_s=1.0), "slow", "m")
    assert time.perf_counter() - start < 30
    assert "started" in str(err.value)  # the stdout tail is in the error (log and manifest)
    child = int((tmp_path / "child.pid").read_text())
    for _ in range(50):  # the grandchild died with its process group
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child)
    assert not list(tmp_path.glob(".*.tmp"))


def test_callable_kwargs_are_instantiated_and_placeholders_replaced():
    from omegaconf import OmegaConf

    from harness.generic.model import instantiate_kwargs

    node = OmegaConf.create({"a": 1, "b": {"_target_": "numpy.linspace", "start": 0, "stop": 1, "num": 3},
                             "c": ["<run_dir>/x", "<project_dir>/y"]})
    kwargs = instantiate_kwargs("m", node, Path("/rd"))
    np.testing.assert_array_equal(kwargs["b"], [0.0, 0.5, 1.0])
    assert kwargs["a"] == 1 and kwargs["c"] == ["/rd/x", f"{ROOT}/y"]
