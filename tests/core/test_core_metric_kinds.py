"""Metric kinds (harness.metrics.kinds): declared per metric, recorded, and deciding the baseline
comparison; a series named like a scalar metric keeps its own MLflow name (issue 32)."""
from __future__ import annotations

import importlib
import json
import math
import pkgutil

import pytest

from harness.core.regression import compare_metrics
from harness.metrics import kinds as K

REG = {"rel": 1e-6, "abs": 0.0, "analytic_rel": 1e-12, "analytic_abs": 1e-14, "timing_patterns": ["*wall*"],
       "bands": {}}


def test_every_family_table_names_known_kinds_and_every_adapter_module_has_one():
    import re

    import harness.families as fam
    from harness.core.shipped import SHIPPED_ROOT
    from harness.families import metric_kinds as tables

    for name in ("BEAM", "DEM", "INTEGRATORS", "LOAD_TRANSFER", "VESSEL", "KRATOS", "BENCH", "CFD", "SLURM_BENCH"):
        K.check_table(getattr(tables, name), name)
    adapters = []
    for info in pkgutil.iter_modules(fam.__path__):
        module = importlib.import_module(f"harness.families.{info.name}")
        if any(callable(getattr(module, f, None)) for f in ("run", "bench", "modal", "run_export")) \
                and info.name != "metric_kinds":
            adapters.append(info.name)
            assert isinstance(getattr(module, "METRIC_KINDS", None), dict), info.name
    assert {"beam", "dem", "integrators", "load_transfer", "vessel"} <= set(adapters)
    # every module a shipped case names as its adapter, whatever its functions are called
    named = {m.group(1) for f in (SHIPPED_ROOT / "conf" / "case").rglob("*.yaml")
             for m in re.finditer(r"adapter:\s*(harness\.families\.\w+):", f.read_text())}
    assert "harness.families.load_transfer_cfd" in named
    for module_name in sorted(named):
        assert isinstance(getattr(importlib.import_module(module_name), "METRIC_KINDS", None), dict), module_name
    with pytest.raises(ValueError, match=r"unknown metric kind 'speed' \(kinds: error, value, count, timing, memory\)"):
        K.check_table({"x": "speed"}, "T")


def test_resolution_exact_names_beat_globs_and_common_table_applies():
    table = {"*_s": K.VALUE, "ramp_time_s": K.VALUE, "*_time_s": K.TIMING}
    got = K.resolve(["jit_warmup_s", "ramp_time_s", "full_time_s", "e_F", "tau_s"], {"e_F": K.ERROR}, [table])
    # jit_warmup_s: the exact COMMON entry beats the family's "*_s" glob
    assert got == {"jit_warmup_s": K.TIMING, "ramp_time_s": K.VALUE, "full_time_s": K.VALUE, "e_F": K.ERROR,
                   "tau_s": K.VALUE}
    assert K.resolve(["mystery"], {}, [table]) == {"mystery": K.UNDECLARED}
    assert K.undeclared({"a": K.UNDECLARED, "b": K.COUNT}) == ["a"]


def test_baseline_comparison_by_kind():
    base = {"jit_warmup_s": 0.2, "nfev": 100.0, "e": 1.0, "peak": 5e6, "wall_time": 1.0, "n": 3.0}
    run = {"jit_warmup_s": 15.0, "nfev": 101.0, "e": 1.0 + 5e-7, "peak": 9e6, "wall_time": 9.0, "n": 3.0}
    kinds = {"jit_warmup_s": K.TIMING, "nfev": K.COUNT, "e": K.ERROR, "peak": K.MEMORY, "wall_time": K.TIMING,
             "n": K.COUNT}
    got = compare_metrics(run, base, REG, False, kinds=kinds)
    assert set(got) == {"nfev", "e", "n"}  # timing and memory never compared
    assert got["nfev"]["verdict"] == "regression" and got["nfev"]["band"] == {"rel": 0.0, "abs": 0.0}
    assert got["n"]["verdict"] == "pass" and got["e"]["verdict"] == "pass" and got["e"]["kind"] == K.ERROR
    # a band given to a timing compares it
    banded = compare_metrics(run, base, {**REG, "bands": {"jit_warmup_s": {"rel": 0.5}}}, False, kinds=kinds)
    assert banded["jit_warmup_s"]["verdict"] == "regression"
    # without kinds (an older caller): the name rule still applies, jit_warmup_s is compared
    assert compare_metrics(run, base, REG, False)["jit_warmup_s"]["verdict"] == "regression"


def test_series_named_like_a_metric_gets_its_own_history_name():
    from harness.core.metric_records import kind_tags, tracked_series

    got = tracked_series({"energy_residual_full": 1.8e-3}, {"energy_residual_full": [0.0, -1.3e-3], "e_F_t": [1.0]})
    assert got == {"series.energy_residual_full": [0.0, -1.3e-3], "e_F_t": [1.0]}
    assert kind_tags({"a": K.ERROR, "b": K.TIMING, "c": K.ERROR}) == {"metric_kinds.error": "a,c",
                                                                      "metric_kinds.timing": "b"}


def test_a_case_records_kinds_and_its_scalar_metric_is_the_mlflow_value(tmp_path):
    """beam/evolved_map at a short t_end: metrics.json, manifest and MLflow carry the kinds; the
    MLflow value of energy_residual_full is the scalar, its per-step series is series.<name>."""
    from mlflow.tracking import MlflowClient

    from harness.core.api import run_case

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    out = run_case("beam/evolved_map", overrides=["case.params.t_end=0.1", f"paths.outputs={tmp_path}"],
                   tracking_uri=uri)
    assert out.status == "ok", out.message
    doc = json.loads((out.run_dir / "metrics.json").read_text())
    man = json.loads((out.run_dir / "manifest.json").read_text())
    assert doc["kinds"]["jit_warmup_s"] == "timing" and doc["kinds"]["n_steps"] == "count"
    assert doc["kinds"]["energy_residual_full"] == "error" and man["metric_kinds"] == doc["kinds"]
    assert K.UNDECLARED not in doc["kinds"].values()
    threads = man["determinism"]["threads"]
    assert threads["numba"]["threads"] >= 1 and all(isinstance(n, int) for n in threads["blas"].values())
    run = MlflowClient(uri).get_run(out.mlflow_run_id)
    assert run.data.metrics["energy_residual_full"] == doc["metrics"]["energy_residual_full"] >= 0.0
    hist = MlflowClient(uri).get_metric_history(out.mlflow_run_id, "series.energy_residual_full")
    assert len(hist) > 2 and min(h.value for h in hist) < 0.0  # the signed residual per step
    assert "jit_warmup_s" in run.data.tags["metric_kinds.timing"].split(",")
    assert not math.isnan(run.data.metrics["energy_residual_reduced"])


def test_generic_metric_kind_declared_checked_and_defaulted(tmp_path):
    from harness.core.api import run_case
    from harness.metrics import library as M

    assert M.library_metric("e_F").kind == "error" and M.library_metric("max").kind == "value"
    out = run_case("examples/heat1d", overrides=[f"paths.outputs={tmp_path}", "tracking=none"])
    kinds = json.loads((out.run_dir / "metrics.json").read_text())["kinds"]
    assert out.status == "ok" and kinds == {"e_u": "error", "max_error_u": "error", "error_constant": "error",
                                            "u_center": "value", "n_steps_exact": "error"}
    bad = run_case("examples/heat1d", overrides=[f"paths.outputs={tmp_path}", "tracking=none",
                                                 "case.params.metrics.u_center.kind=speed"])
    assert bad.exit_code == 2 and bad.message == (
        "case.params.metrics.u_center.kind: unknown metric kind 'speed' (kinds: error, value, count, timing, memory)")
