"""DEM cases through the harness API, the envelope fit, and bad case params."""
import numpy as np
import pandas as pd
import pytest

from harness.api import run_case
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


@pytest.mark.slow
def test_direct_shear_reduced(harness_env):
    out = run_case("dem/direct_shear", overrides=["tracking.enabled=false"])
    m = out.metrics
    assert m["peak_shear_stress"] >= m["residual_shear_stress"] > 0
    assert 0.3 < m["normal_stress_measured"] / m["normal_stress"] < 3.0
    assert m["inertial_number"] > 0
