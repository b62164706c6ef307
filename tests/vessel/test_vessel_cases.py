"""Vessel cases through the harness: each closed-form case passes its gates."""
from __future__ import annotations

import math
import os

import pytest

from harness.core.api import run_case

FULL = os.environ.get("HARNESS_FULL") == "1"
FAST = ["frames", "static_wind", "ema_step", "rudder_ramp", "propeller_lag", "spinning_body", "heave_decay",
        "surge_linear_decay", "surge_quadratic_decay", "circle"]


def _run(name, *overrides):
    return run_case(f"vessel/{name}", overrides=["tracking.enabled=false", *overrides])


@pytest.mark.parametrize("name", FAST)
def test_closed_form_case_passes(harness_env, name):
    out = _run(name)
    assert out.status == "ok", out.message
    assert out.verdict == "pass", (out.gates, out.metrics)
    assert out.gates and all(v == "pass" for v in out.gates.values())


def test_case_values_match_the_data(harness_env):
    heave = _run("heave_decay").metrics
    assert heave["natural_period_s"] == pytest.approx(2 * math.pi * math.sqrt(1.04e8 / 5.09680512e7), rel=1e-6)
    assert heave["damping_ratio"] == pytest.approx(2.1842e7 / (2 * math.sqrt(1.04e8 * 5.09680512e7)), rel=1e-5)
    lag = _run("propeller_lag").metrics
    assert lag["fraction_at_tau_exp"] == pytest.approx(0.63212055882856, abs=1e-12)
    assert lag["form_difference_at_tau"] > 1e-3  # the seed's backward-Euler form lags more slowly
    wind = _run("static_wind").metrics
    assert wind["head_wind_X_N"] == pytest.approx(0.5 * 1.225 * 20.0 ** 2 * -0.70 * 640.0, rel=1e-12)


def test_bad_source_input_is_invalid_with_field(harness_env):
    out = _run("heave_decay", "+source.data_overrides.rho_air=-1.0")
    assert out.status == "invalid" and out.exit_code == 2
    assert "rho_air" in out.message and "> 0" in out.message
    out = _run("heave_decay", "case.params.sim.dt=0")
    assert out.status == "invalid" and "case.params.sim.dt" in out.message
    out = _run("heave_decay", "case.params.check=nope")
    assert out.status == "invalid" and "case.params.check" in out.message


@pytest.mark.slow
def test_energy_balance_case(harness_env):
    t_end = "60.0" if FULL else "10.0"
    out = _run("energy_balance", f"case.params.sim.t_end={t_end}")
    assert out.verdict == "pass", (out.gates, out.metrics)
    assert out.metrics["balance_reduction"] > 10


@pytest.mark.slow
def test_integrator_cross_check_case(harness_env):
    t_end = "20.0" if FULL else "3.0"
    out = _run("integrator_cross_check", f"case.params.sim.t_end={t_end}")
    assert out.verdict == "pass", (out.gates, out.metrics)
    assert out.metrics["ros2_adaptive.success"] == 1.0 and out.metrics["scipy_radau.success"] == 1.0


@pytest.mark.slow
def test_stateful_in_rhs_case(harness_env):
    t_end = "20.0" if FULL else "3.0"
    out = _run("stateful_in_rhs", f"case.params.sim.t_end={t_end}")
    assert out.verdict == "pass", (out.gates, out.metrics)
    m = out.metrics
    assert m["rhs.1.updates_per_step"] > 1 and m["step.1.updates_per_step"] == 1
    assert m["rhs.tolerance_dependence_m"] > 100 * m["step.tolerance_dependence_m"]


@pytest.mark.slow
def test_bench_case_records_ratios(harness_env):
    t_end = "3600.0" if FULL else "5.0"
    out = run_case("bench/vessel_manoeuvre", overrides=["tracking.enabled=false", f"case.params.sim.t_end={t_end}"])
    assert out.status == "ok", out.message
    m = out.metrics
    assert m["main.success"] == 1.0 and m["reference.success"] == 1.0
    assert m["jit_warmup"] == 1.0 and m["jit_warmup_s"] > 0  # the compiled field warmed up before timing
    assert m["jacobian_analytic"] == 1.0  # the compiled Jacobian went to the integrators
    assert 1.0 <= m["main.timed_runs"] <= 20.0 and 1.0 <= m["reference.timed_runs"] <= 20.0  # best of repeats
    if not FULL:  # a few milliseconds a run: timed again until 0.3 s ran
        assert m["main.timed_runs"] > 1.0
    assert (out.run_dir / "cost_vs_simulated_time.png").stat().st_size > 1000
    assert m["speedup_vs_reference"] == pytest.approx(m["main.realtime_factor"] / m["reference.realtime_factor"])
    # each track against a tight-tolerance run: small, and not zero (not the same run twice)
    assert m["accuracy_reference.success"] == 1.0 and m["track_length_m"] > 10.0
    for label in ("main", "reference"):
        assert 0.0 < m[f"{label}.max_position_error_rel"] < 1e-4


@pytest.mark.parametrize("integrator", ["scipy_radau", "scipy_lsoda"])
def test_other_integrators_of_the_group_can_be_chosen(harness_env, integrator):
    out = _run("heave_decay", f"integrator={integrator}")
    assert out.status == "ok", out.message
    assert out.verdict == "pass", (out.gates, out.metrics)


@pytest.mark.slow
def test_lag_form_study_first_order(tmp_path):
    """The seed's lag form differs from the exact one at first order in dt (backward Euler)."""
    import json
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "harness", "-m", "+case=vessel/propeller_lag", "+study=vessel/lag_form_order",
           f"paths.outputs={tmp_path}", "tracking.enabled=false"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads(next(tmp_path.rglob("study.json")).read_text())
    assert summary["verdict"] == "pass" and summary["n_jobs"] == 4
    assert summary["metrics"]["observed_order"] == pytest.approx(1.0, abs=0.05)


@pytest.mark.slow
def test_readme_benchmark_command_reproduces_the_tracks(tmp_path):
    """The vessel README's 300 s benchmark command, as written: it runs, and its tracks are the
    documented ones (the position errors are deterministic; the speeds are recorded, not asserted)."""
    import re

    from tests.docs.conftest import ROOT, run_readme_command

    cmd = "python -m harness +case=bench/vessel_manoeuvre tracking=none case.params.sim.t_end=300.0"
    proc = run_readme_command(cmd, {"HARNESS_OUTPUTS": str(tmp_path)}, readme=ROOT / "models" / "vessel" / "README.md")
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]  # 1: a missed target (verdict)
    values = dict(re.findall(r"(\S+)=([0-9.e+-]+)", proc.stdout))
    assert float(values["main.realtime_factor"]) > 0 and float(values["speedup_vs_reference"]) > 0
    assert float(values["main.max_position_error_m"]) == pytest.approx(1.172e-4, rel=0.01)
