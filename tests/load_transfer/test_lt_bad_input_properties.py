"""Property-based tests (hypothesis) of the bad-input rule of issue 32, plus the kept regression corpus.

Generated: malformed wall-loads and kratos-point-loads files (bytes flipped or zeroed, attributes of
every kind, datasets of other shapes/dtypes, declared and never written, metadata_json of any JSON),
case overrides (size keys with absurd or odd values, enum-like options) and expressions (deep
nesting, huge arrays, big integers, ragged lists). The property: a clean verdict, never a crash.
Bounded example counts keep CI short; HARNESS_FULL=1 runs ten times as many.
"""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _recipes_module():
    """tests/load_transfer/lt_fuzz_recipes.py (the suite imports test files with --import-mode=importlib)."""
    import importlib.util
    import sys
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("lt_fuzz_recipes", Path(__file__).with_name("lt_fuzz_recipes.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("lt_fuzz_recipes", mod)
    spec.loader.exec_module(mod)
    return mod


_R = _recipes_module()
apply_recipe, check_rule, load_corpus = _R.apply_recipe, _R.check_rule, _R.load_corpus
make_kratos_seed, make_wall_loads_seed = _R.make_kratos_seed, _R.make_wall_loads_seed

FULL = os.environ.get("HARNESS_FULL") == "1"
N_FILES = 300 if FULL else 40
N_OVERRIDES = 60 if FULL else 6
N_EXPR = 1000 if FULL else 100
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
                derandomize=True, database=None)

WALL_DATASETS = ["time", "coordinates/radial_edges", "fields/pressure_gauge", "fields/shear_radial",
                 "derived/impulse_pressure", "derived/force_normal", "provenance/configuration", "fields/extra"]
KRATOS_DATASETS = ["source/time", "conditions/ids", "conditions/tributary_area", "conditions/outward_normal",
                   "loads/pressure_gauge", "loads/point_force", "faces/vertices", "faces/condition_index",
                   "faces/force", "diagnostics/target_force"]
WALL_ATTRS = ["schema_name", "schema_version", "case_id", "complete", "units_system", "metadata_json",
              "temporal_interpolation"]
KRATOS_ATTRS = ["schema_name", "schema_version", "r_map", "axis_origin_x", "mapping_method", "source_sha256",
                "complete", "metadata_json"]

scalars = st.one_of(st.integers(-2**40, 2**40), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=12), st.booleans())
json_texts = st.one_of(
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                 lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                 max_leaves=6).map(json.dumps),
    st.text(max_size=20))


def recipes(datasets, attrs, objects):
    shapes = st.lists(st.sampled_from([0, 1, 2, 3, 9, 2**20, 2**30]), min_size=0, max_size=3)
    return st.one_of(
        st.fixed_dictionaries({"op": st.just("flip"), "pos": st.integers(0, 2**20), "bit": st.integers(0, 7)}),
        st.fixed_dictionaries({"op": st.just("zero"), "pos": st.integers(0, 2**20),
                               "n": st.sampled_from([1, 8, 64, 144, 512])}),
        st.fixed_dictionaries({"op": st.just("attr"), "obj": st.sampled_from(objects),
                               "name": st.sampled_from(attrs + ["unit", "extra"]), "value": scalars,
                               "as_array": st.booleans()}),
        st.fixed_dictionaries({"op": st.just("metadata"), "text": json_texts}),
        st.fixed_dictionaries({"op": st.just("edit"), "name": st.sampled_from(datasets),
                               "how": st.sampled_from(["zeros", "add", "nan", "negate"]),
                               "value": st.sampled_from([1, -1, 1000, 10**6, 0.5])}),
        st.fixed_dictionaries({"op": st.just("delete"),
                               "name": st.sampled_from(datasets + ["@" + a for a in attrs])}),
        st.fixed_dictionaries({"op": st.just("dataset"), "name": st.sampled_from(datasets), "shape": shapes,
                               "dtype": st.sampled_from(["f8", "f4", "i8", "u1", "S4"]),
                               "write": st.booleans()}),
    )


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    d = tmp_path_factory.mktemp("seeds")
    return {"wall-loads": make_wall_loads_seed(d), "kratos-point-loads": make_kratos_seed(d)}


@pytest.fixture(autouse=True)
def short_probe(monkeypatch):
    monkeypatch.setenv("HARNESS_HDF5_PROBE_TIMEOUT_S", "3")


@settings(max_examples=N_FILES, **SETTINGS)
@given(recipe=recipes(WALL_DATASETS, WALL_ATTRS, ["/", "time", "fields/pressure_gauge"]))
def test_malformed_wall_loads_files_get_a_clean_verdict(seeds, tmp_path, recipe):
    check_rule(apply_recipe(seeds["wall-loads"], tmp_path / "m.h5", recipe), "wall-loads")


@settings(max_examples=N_FILES, **SETTINGS)
@given(recipe=recipes(KRATOS_DATASETS, KRATOS_ATTRS, ["/", "faces/condition_index", "conditions/ids"]))
def test_malformed_kratos_files_get_a_clean_verdict(seeds, tmp_path, recipe):
    check_rule(apply_recipe(seeds["kratos-point-loads"], tmp_path / "k.h5", recipe), "kratos-point-loads")


@pytest.mark.parametrize("entry", load_corpus(), ids=lambda e: e["id"])
def test_regression_corpus(seeds, tmp_path, entry):
    """Inputs that once broke the rule (found by these properties or by the issue's fuzzer)."""
    seed = seeds[entry["schema"]]
    code = check_rule(apply_recipe(seed, tmp_path / "c.h5", entry["recipe"]), entry["schema"])
    same_seed = hashlib.sha256(seed.read_bytes()).hexdigest() == _R.seed_digests()[entry["schema"]]
    if same_seed or entry["recipe"]["op"] not in ("flip", "zero"):
        assert code == entry["exit_code"], (code, entry)
    # else: another HDF5 release lays the seed out differently; a byte recipe then hits other bytes and
    # only the rule itself (checked above) still applies


# ---------------------------------------------------------------- overrides

SIZE_KEYS = ["source.n_rings", "integrator.n_steps", "operator.surface.resolution"]
# small values that run in a moment, values far above the limits, and values of the wrong kind
override_values = st.sampled_from(["-5", "0", "2", str(10**7 + 1), str(10**9), str(10**12), "1e9", "abc", "",
                                   "null", "[1,2]", "1.5", "-0"])


@settings(max_examples=N_OVERRIDES, **SETTINGS)
@given(key=st.sampled_from(SIZE_KEYS + ["source.mode"]), value=override_values)
def test_overrides_are_run_or_refused_in_one_line(harness_env, key, value):
    from harness import run_case

    if key == "source.mode":
        value = value if value not in ("", "null") else "x"
        overrides = ["tracking=none", "source=wall_loads_file", "source.path=/nonexistent.h5", f"{key}={value}"]
    else:
        overrides = ["tracking=none", f"{key}={value}"]
    try:
        out = run_case("load_transfer/uniform_pressure", overrides=overrides)
    except Exception as exc:  # the API raises the composition errors (the CLI prints them in one line)
        from harness.core.compose import is_config_error

        assert is_config_error(exc), repr(exc)
        return
    assert out.status in ("ok", "invalid"), (out.status, out.message)
    if out.status == "invalid":
        assert out.message and "\n" not in out.message and "Traceback" not in out.message
    if key in SIZE_KEYS and value.lstrip("-").isdigit() and int(value) > 10**7:
        assert out.status == "invalid" and "is above the limit" in out.message


# ---------------------------------------------------------------- expressions

leaf = st.one_of(st.integers(-10**20, 10**20).map(str), st.sampled_from(["x", "1e308", "pi", "nan", "int(1e308)"]))


def _expr(children):
    return st.one_of(
        st.tuples(children, st.sampled_from(["+", "-", "*", "/", "**", "//", "%"]), children).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["-", "+"]), children).map(lambda t: t[0] + t[1]),
        children.map(lambda c: f"int({c})"),
        children.map(lambda c: f"linspace(0, 1, int({c}))"),
        children.map(lambda c: f"full_like(x, 1, shape=(int({c}), 3))"),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: "[" + ", ".join(cs) + "]"),
        st.tuples(children, st.integers(0, 3000)).map(lambda t: "-" * t[1] + t[0]),
    )


expressions = st.recursive(leaf, _expr, max_leaves=8)


@settings(max_examples=N_EXPR, **SETTINGS)
@given(text=expressions)
def test_expressions_evaluate_or_raise_expression_error(text):
    from harness.generic.expressions import ExpressionError, evaluate

    try:
        value = evaluate(text, {"x": np.ones(4)})
    except ExpressionError as exc:
        assert "\n" not in str(exc)
        return
    arr = np.asarray(value, dtype=object)
    assert arr.size <= 10**8
