"""Beam cases through the harness: verification cases, the evolved case, bad input, study."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness import run_case

ROOT = Path(__file__).resolve().parents[2]
FULL = os.environ.get("HARNESS_FULL") == "1"
VERIFICATION = ["beam/cantilever_modes", "beam/clamped_pinned_modes", "beam/slider_midelement_modes",
                "beam/cantilever_tip_load", "beam/propped_uniform_load"]


@pytest.mark.parametrize("case", VERIFICATION)
def test_verification_case_passes(harness_env, case):
    out = run_case(case, overrides=["tracking=none"])
    assert out.status == "ok", out.message
    assert out.verdict == "pass", {k: (out.metrics.get(k), v) for k, v in out.gates.items()}


def test_frequency_errors_are_below_0_1_percent(harness_env):
    out = run_case("beam/cantilever_modes", overrides=["tracking=none"])
    assert out.metrics["freq_error_max"] < 1e-3
    assert out.metrics["freq_1_hz"] == pytest.approx(1.0444, rel=1e-3)  # 1.8751² √(EI/ρA) / (2π L²)


def test_evolved_case_meets_the_seed_gates(harness_env):
    out = run_case("beam/evolved", overrides=["tracking=none"])
    assert out.status == "ok", out.message
    m = out.metrics
    assert out.verdict == "pass", {k: (m.get(k), v) for k, v in out.gates.items()}
    assert 0.0 < m["rms_error"] < 0.02 and 0.0 < m["tip_rms_error"] < 0.02
    assert m["energy_residual_full"] < 0.01 and m["energy_residual_reduced"] < 0.01
    assert m["n_dof_full"] == 153 and m["r_glob"] == 20
    # the constraint work is a real part of the balance, not a rounding term
    assert m["max_constraint_work_J"] > 10 * m["energy_residual_full"] * m["max_energy_full_J"]
    with np.load(out.run_dir / "responses.npz") as z:
        w_full, w_red = z["w_full"], z["w_red"]
        err = np.sqrt(np.sum((w_red - w_full) ** 2)) / np.sqrt(np.sum(w_full**2))
        assert err == pytest.approx(m["rms_error"], rel=1e-12)
        s = z["s"]
        assert s.min() == pytest.approx(0.5, abs=1e-6) and s.max() == pytest.approx(1.7, abs=1e-6)
    assert (out.run_dir / "tip_and_energy.png").stat().st_size > 1000
    assert (out.run_dir / "singular_values.png").stat().st_size > 1000


@pytest.mark.parametrize("override,needle", [
    (["source.slider_amplitude=1.2"], "slider law leaves the beam"),
    (["operator.r_glob=40"], "r_glob = 40 exceeds the rank"),
    (["source.area=0.0"], "area must be a finite number > 0"),
    (["source.second_moment=-1e-9"], "second_moment must be a finite number > 0"),
    (["case.params.dt=3e-4"], "integer multiple of dt"),
    (["case.params.solver=lu"], "case.params.solver"),
])
def test_bad_input_is_a_clear_invalid_run(harness_env, override, needle):
    out = run_case("beam/evolved", overrides=["tracking=none", *override])
    assert out.status == "invalid" and out.exit_code == 2, (out.status, out.message)
    assert needle in out.message


def test_bad_input_on_the_cli_exits_2(harness_env):
    env = dict(os.environ, HARNESS_OUTPUTS=str(harness_env))
    res = subprocess.run([sys.executable, "-m", "harness", "+case=beam/evolved", "tracking=none",
                          "operator.r_glob=31"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "r_glob = 31 exceeds the rank" in res.stdout + res.stderr


@pytest.mark.slow
def test_snapshot_map_study(harness_env):
    grid = [] if FULL else ["operator.n_snap=4,8", "operator.r_snap=5,10", "case.params.t_end=1.0"]
    env = dict(os.environ, HARNESS_OUTPUTS=str(harness_env))
    res = subprocess.run([sys.executable, "-m", "harness", "-m", "+case=beam/evolved_map",
                          "+study=beam/snapshot_map", *grid], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=1200)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    sweep = sorted((harness_env / "sweeps" / "beam" / "evolved_map").iterdir())[-1]
    table = pd.read_csv(sweep / "study" / "table.csv")
    n_jobs = 36 if FULL else 4
    assert len(table) == n_jobs and (table["status"] == "ok").all()
    study = json.loads((sweep / "study" / "study.json").read_text())
    best = table.loc[table["rms_error"].idxmin()]
    assert study["metrics"]["best_rms_error"] == pytest.approx(best["rms_error"])
    assert study["metrics"]["best_product"] == best["n_snap"] * best["r_snap"]
    assert (sweep / "study" / "snapshot_heatmap.png").stat().st_size > 1000


@pytest.mark.slow
def test_reduction_bench_records_ratios(harness_env):
    size = [] if FULL else ["case.params.t_end=0.5", "case.params.repeats=1"]
    out = run_case("bench/beam_reduction", overrides=["tracking=none", *size])
    assert out.status == "ok", out.message
    for solver in ("schur", "kkt"):
        r = out.metrics[f"time_ratio_{solver}"]
        assert r == pytest.approx(out.metrics[f"reduced_time_s_{solver}"] / out.metrics[f"full_time_s_{solver}"])
        assert 0.0 < r < 1.0  # the reduced model is cheaper; the target (<= 0.1) is the gate's job
    assert out.metrics["offline_time_s"] > 0.0
    assert out.metrics["jit_warmup"] == 1.0  # the compiled step loops warmed up before timing


@pytest.mark.slow
def test_energy_residual_converges_at_second_order_in_dt(harness_env):
    size = [] if FULL else ["case.params.t_end=0.5", "case.params.figures=false"]
    env = dict(os.environ, HARNESS_OUTPUTS=str(harness_env))
    res = subprocess.run([sys.executable, "-m", "harness", "-m", "+case=beam/evolved", "+study=beam/dt_refinement",
                          *size], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    sweep = sorted((harness_env / "sweeps" / "beam" / "evolved").iterdir())[-1]
    study = json.loads((sweep / "study" / "study.json").read_text())
    assert study["verdict"] == "pass" and abs(study["metrics"]["observed_order"] - 2.0) < 0.2
    table = pd.read_csv(sweep / "study" / "table.csv")
    e = table.sort_values("parameter")["energy_residual_full"].to_numpy()
    assert e[0] < e[1] < e[2]  # finer dt, smaller residual


def test_frequency_weighted_pod_avoids_the_large_pool_breakdown(harness_env):
    # 8 snapshots x 12 modes, r_glob = 20: the plain POD of equally weighted mass-normalised
    # modes loses the low modes (error >> 100 %); weighting each mode by ω1/ωk keeps them
    common = ["tracking=none", "case.params.t_end=1.0", "operator.n_snap=8", "operator.r_snap=12"]
    plain = run_case("beam/evolved_map", overrides=common)
    weighted = run_case("beam/evolved_map", overrides=[*common, "operator=global_pod_basis_weighted"])
    assert plain.status == "ok" and weighted.status == "ok", (plain.message, weighted.message)
    assert plain.metrics["rms_error"] > 0.5
    assert weighted.metrics["rms_error"] < 0.02
    assert weighted.verdict == "pass"
