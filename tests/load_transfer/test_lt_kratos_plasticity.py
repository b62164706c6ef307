"""The plasticity case of seed 000 (issue 15): elasto-plastic Kratos MPM (Tresca limit of the
Mohr-Coulomb law, implicit Newmark) under the conservative point loads of the synthetic wall run."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

from models.load_transfer.kratos.energy import EnergyTracker, grid_strain_increment, tresca_stress  # noqa: E402
from models.load_transfer.kratos.plasticity import PlasticitySpec  # noqa: E402


def test_grid_strain_increment_of_a_linear_displacement_field_is_exact():
    """u_r = a r + b z, u_z = c r + d z on a 3 x 4 grid: strains a, d, a (hoop u_r / r), gamma b + c."""
    xs, ys = np.linspace(0.0, 0.01, 4), np.linspace(0.0, 0.02, 5)
    X, Y = np.meshgrid(xs, ys)
    a, b, c, d = 1e-4, -2e-5, 3e-5, -5e-4
    du = np.stack([a * X.ravel() + b * Y.ravel(), c * X.ravel() + d * Y.ravel()], axis=1)
    pts = np.array([[0.001, 0.003], [0.0066, 0.0199], [0.009, 0.011]])
    eps = grid_strain_increment(xs, ys, du, pts)
    hoop = (a * pts[:, 0] + b * pts[:, 1]) / pts[:, 0]
    np.testing.assert_allclose(eps, np.column_stack([np.full(3, a), np.full(3, d), hoop, np.full(3, b + c)]),
                               rtol=1e-12, atol=1e-18)


def test_energy_tracker_elastic_loading_path_has_no_dissipation():
    """Uniaxial stress ramp sigma_zz = E eps_zz in 10 steps: stress work = elastic energy, no residual."""
    E, nu, n = 2e9, 0.3, 10
    tr = EnergyTracker(1, E, nu, top_area=1.0)
    for k in range(1, n + 1):
        eps = 1e-4 * k / n
        s = np.array([[0.0, E * eps, 0.0, 0.0]])
        d = np.array([[-nu * 1e-4 / n, 1e-4 / n, -nu * 1e-4 / n, 0.0]])
        tr.update(np.ones(1), np.zeros((1, 2)), np.ones(1), s, d)
    r = tr.records()
    assert r["stress_work"][-1] == pytest.approx(0.5 * E * 1e-8, rel=1e-12)
    assert abs(r["dissipation"][-1]) <= 1e-12 * r["stress_work"][-1]
    assert abs(r["u_residual"][-1]) <= 1e-20
    assert tresca_stress(np.array([[1.0, -2.0, 0.5, 0.0]]))[0] == pytest.approx(3.0)
    assert np.all(r["plastic_volume_fraction"] == 0.0)  # no plastic strain given: no plastic zone


def test_energy_tracker_plastic_volume_fraction_is_the_yielded_volume_share():
    """Three points of volume 1, 2, 5 m^3; the law's plastic strain > 0 at the second only: 2 / 8."""
    tr = EnergyTracker(3, 2e9, 0.3, top_area=1.0)
    z = np.zeros((3, 4))
    tr.update(np.ones(3), np.zeros((3, 2)), np.array([1.0, 2.0, 5.0]), z, z, np.array([0.0, 1e-6, 0.0]), 1e5)
    tr.update(np.ones(3), np.zeros((3, 2)), np.array([1.0, 2.0, 5.0]), z, z, np.array([3e-6, 1e-6, 0.0]), 1e5)
    assert tr.records()["plastic_volume_fraction"].tolist() == [0.25, 0.375]


@pytest.mark.parametrize("kw, field", [({"n_steps": (240,)}, "n_steps"), ({"n_steps": (240, 400)}, "n_steps"),
                                       ({"below_factor": 0.9}, "below_factor"), ({"above_factor": 1.0}, "above_factor"),
                                       ({"t_run": -1.0}, "t_run")])
def test_bad_plasticity_spec_names_the_field(kw, field):
    args = {"t_run": 1.2e-4, "n_steps": (240, 480), **kw}
    with pytest.raises(ValueError, match=field):
        PlasticitySpec(**args)


@pytest.mark.parametrize("override, field", [("case.params.levels=1", "case.params.levels"),
                                             ("++case.params.loads_file=/nonexistent.kratos-loads.v1.h5",
                                              "case.params.loads_file"),
                                             ("case.params.above_factor=1.5", "above_factor")])
def test_bad_case_input_is_exit_2_naming_the_field(override, field, harness_env):
    pytest.importorskip("KratosMultiphysics.MPMApplication", reason="Kratos extra not installed")
    from harness.core.api import run_case

    out = run_case("load_transfer/kratos_plasticity", overrides=["tracking=none", override])
    assert out.exit_code == 2 and field in out.message, out.message


README_COMMAND = "python -m harness +case=load_transfer/kratos_plasticity"


def test_plasticity_case_below_yield_residual_dissipation_and_energy_balance(tmp_path, harness_env):
    """The README's command as written (reduced size: 4 x 8 grid, 120 us, levels 240 / 480 steps).
    Measured: below yield identical (0); residual 0.39 of the elastic peak response, constant in the
    free phase (spread 0.035); D = 0.60 max W, never decreasing; energy balance 6.9e-3 -> 4.9e-3 (order 0.50)."""
    pytest.importorskip("KratosMultiphysics.MPMApplication", reason="Kratos extra not installed")
    readme = (Path(__file__).resolve().parents[2] / "models/load_transfer/kratos/README.md").read_text()
    assert f"\n  {README_COMMAND}\n" in readme  # in the kratos_plasticity item
    env = dict(os.environ, HARNESS_OUTPUTS=str(harness_env), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    proc = subprocess.run(README_COMMAND, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1].startswith("load_transfer/kratos_plasticity  PASS")
    runs = sorted((harness_env / "runs" / "load_transfer" / "kratos_plasticity").glob("*/manifest.json"))
    man = json.loads(runs[-1].read_text())
    m = {k: v["value"] for k, v in man["metrics"].items()}
    assert all(v["gate"]["verdict"] == "pass" for v in man["metrics"].values() if v.get("gate"))
    assert m["below_yield_rel_diff"] == 0.0 and m["below_yield_plastic_strain"] == 0.0
    assert m["e_F"] <= 1e-12 and m["e_J"] <= 1e-12
    assert m["residual_displacement"] < 0.0 and 0.2 < m["residual_ratio"] < 0.6
    # the residual of the plastic strain is what the top oscillates about after unloading
    assert m["free_mean_response"] == pytest.approx(m["residual_displacement"], rel=0.1)
    assert abs(m["free_mean_response_elastic"]) < 0.1 * abs(m["free_mean_response"])
    # issue 33: with Newmark's work (energy.newmark_work) the balance is 6.9e-3 -> 4.9e-3, order 0.50 (the
    # step-end work had added a first-order error: 1.2e-2 -> 7.4e-3, order 0.69); the case gates >= 0.4
    assert m["energy_balance"] < m["energy_balance_coarse"] and m["energy_balance_order"] >= 0.4
    assert 0.3 < m["dissipation_ratio"] < 0.9 and m["dissipation_drop"] < 1e-3
    # Kratos' own plastic strain (region-1 formula sigma_y sum V eps_p_eq) accounts for most of D
    assert 0.7 < m["dissipation_law_ratio"] < 1.0
    # the plastic zone's share of the body volume (measured 0.81: the slow pulse yields most of the body while
    # it loads; issue 33: on the CFD blast the zone at the same factor is 0.24 of the 4 x 8 body, 0.022 of 16 x 32)
    assert 0.6 < m["plastic_volume_fraction"] < 0.95
    assert 1e-5 < m["elastic_vs_linear_rel_diff"] < 1e-3  # Hencky finite strain vs linear elastic
    assert man["info"]["law"] == "HenckyMCPlasticAxisym2DLaw" and man["info"]["friction_angle"] == 0.01
    assert (runs[-1].parent / "plasticity.png").is_file()
    assert math.isclose(man["info"]["t_run"], 1.2e-4)
