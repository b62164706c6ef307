"""DEM cases through the harness API, the envelope fit, and bad case params."""
import numpy as np
import pandas as pd
import pytest

from harness.core.api import run_case
from harness.families.dem import envelope, fit_mohr_coulomb


@pytest.mark.parametrize("case", ["dem/linear_spring_impact", "dem/hertz_sphere_wall", "dem/hertz_sphere_sphere",
                                  "dem/kelvin_voigt_eq22", "dem/kelvin_voigt_classic",
                                  "dem/hertz_mindlin_restitution", "dem/oblique_impact", "dem/consistency",
                                  "dem/bouncing_particle", "dem/lammps_peer"])
def test_case_passes(harness_env, case):
    out = run_case(case, overrides=["tracking.enabled=false"])
    assert out.verdict == "pass", (out.metrics, out.gates)


@pytest.mark.parametrize("integrator", ["verlet", "velocity_verlet", "leapfrog"])
def test_energy_drift_order(harness_env, integrator):
    e = [run_case("dem/energy_conservation", overrides=["tracking.enabled=false", f"integrator={integrator}",
                                                        f"integrator.dt={dt}"]).metrics["energy_drift"]
         for dt in (2e-5, 1e-5)]
    p = np.log(e[0] / e[1]) / np.log(2.0)
    assert 1.7 < p < 2.3, (e, p)


@pytest.mark.parametrize("override, message", [
    ("+case.params.nonsense=1", "case.params.nonsense"),
    ("source.nu=0.7", "source.nu: Poisson ratio must lie in (-1, 0.5), got 0.7"),
    ("case.params.radius=-0.01", "radius: must be finite and > 0, got -0.01"),
    ("integrator.dt=1.0e-5", "dt: 1e-05 s exceeds 0.1 x the estimated contact time"),
    ("case.params.kind=nope", "case.params.kind: must be one of"),
])
def test_bad_params_exit_2(harness_env, override, message):
    out = run_case("dem/hertz_sphere_wall", overrides=["tracking.enabled=false", override])
    assert out.status == "invalid" and out.exit_code == 2
    assert message in out.message


def test_envelope_fit_recovers_line(tmp_path):
    s = np.array([1000.0, 2000.0, 4000.0])
    phi, c = np.radians(30.0), 150.0
    df = pd.DataFrame({"status": "ok", "normal_stress_measured": s, "peak_shear_stress": c + s * np.tan(phi),
                       "residual_shear_stress": s * np.tan(np.radians(22.0))})
    out = envelope(df, tmp_path)
    assert out["verdict"] == "pass"
    assert out["metrics"]["peak_phi_deg"] == pytest.approx(30.0, abs=1e-9)
    assert out["metrics"]["peak_cohesion"] == pytest.approx(150.0, abs=1e-6)
    assert out["metrics"]["residual_cohesion"] == pytest.approx(0.0, abs=1e-6)
    assert (tmp_path / "envelope.png").is_file()
    assert np.isnan(fit_mohr_coulomb([1.0], [1.0])["phi_deg"])


def _multirun(args, outputs):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, HARNESS_OUTPUTS=str(outputs))
    return subprocess.run([sys.executable, "-m", "harness", "-m", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=7200)


def _latest_sweep(outputs, case):
    return sorted((outputs / "sweeps" / case).iterdir())[-1]


@pytest.mark.slow
def test_envelope_study(harness_env):
    import json

    res = _multirun(["+case=dem/direct_shear", "+study=dem/envelope"], harness_env)
    assert res.returncode == 0, res.stdout + res.stderr
    sweep = _latest_sweep(harness_env, "dem/direct_shear")
    study = json.loads((sweep / "study" / "study.json").read_text())
    table = pd.read_csv(sweep / "study" / "table.csv")
    assert study["n_jobs"] == 3 and study["verdict"] == "pass"
    # the parent-run fit is the least-squares line through the job table
    sig = table["shear_plane_normal_stress"]
    ref = fit_mohr_coulomb(sig, table["peak_shear_stress"])
    assert study["metrics"]["peak_phi_deg"] == pytest.approx(ref["phi_deg"], rel=1e-12)
    assert study["metrics"]["residual_cohesion"] == pytest.approx(
        fit_mohr_coulomb(sig, table["residual_shear_stress"])["cohesion"], rel=1e-9)
    assert (sig > table["normal_stress_measured"]).all()  # the upper half's weight adds to the platen
    assert (sweep / "study" / "envelope.png").stat().st_size > 1000
    assert (table["peak_shear_stress"] >= table["residual_shear_stress"]).all()
    assert (table["residual_shear_stress"] > 0).all() and (table["inertial_number"] > 0).all()
    ratio = table["normal_stress_measured"] / table["parameter"]  # the servo holds the normal stress
    assert ratio.between(0.5, 2.0).all(), ratio


@pytest.mark.slow
def test_restitution_curve_study(harness_env):
    import json

    res = _multirun(["+case=dem/kelvin_voigt_eq22", "+study=dem/restitution_curve",
                     "case.params.delta_over_w=0.0,0.5,7.0"], harness_env)
    assert res.returncode == 0, res.stdout + res.stderr
    sweep = _latest_sweep(harness_env, "dem/kelvin_voigt_eq22")
    study = json.loads((sweep / "study" / "study.json").read_text())
    assert study["verdict"] == "pass" and study["metrics"]["max_e_restitution"] < 5e-3
    assert (sweep / "study" / "restitution_curve.png").stat().st_size > 1000


def test_scatter_statistics(tmp_path):
    from harness.families.dem import scatter

    v = np.array([1000.0, 1200.0, 1100.0])
    df = pd.DataFrame({"status": "ok", "peak_shear_stress": v, "residual_shear_stress": v / 2,
                       "peak_ratio": v / 1e3, "residual_ratio": v / 2e3})
    out = scatter(df, tmp_path)
    assert out["verdict"] == "pass"
    assert out["metrics"]["peak_shear_stress_mean"] == pytest.approx(1100.0)
    assert out["metrics"]["peak_shear_stress_std"] == pytest.approx(100.0)
    assert out["metrics"]["residual_ratio_cv"] == pytest.approx(100.0 / 1100.0)
