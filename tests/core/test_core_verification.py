"""harness.verification (three-grid procedure, least-squares order, round-off) and the
convergence study built on it, against closed forms and the NASA NPARC example."""
import json
import math

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from harness.metrics import verification as V

EPS = np.finfo(float).eps


def test_three_grid_reproduces_nasa_nparc_example():
    # NPARC Alliance "Examining spatial (grid) convergence": f = 0.970500, 0.968540, 0.961780, r = 2
    g = V.three_grid(0.970500, 0.968540, 0.961780, 2.0, 2.0)
    assert g.convergence == V.MONOTONIC
    assert g.p == pytest.approx(1.78617, abs=5e-6)
    assert g.f_extrapolated == pytest.approx(0.9713003, abs=5e-8)
    assert 100 * g.gci_fine == pytest.approx(0.10308, abs=5e-6)
    assert 100 * g.gci_coarse == pytest.approx(0.35625, abs=5e-5)
    # constant ratio: GCI23 / (r^p GCI12) = f1 / f2 exactly (eps32/eps21 = r^p); 1.0020, in the range
    assert g.asymptotic_ratio == pytest.approx(0.970500 / 0.968540, rel=1e-12)
    # u_num = GCI12 |f1| / Fs is the magnitude of the Richardson error estimate |f_ext - f1|
    assert g.u_num == pytest.approx(abs(g.f_extrapolated - g.f1), rel=1e-12)
    assert "95 %" in g.coverage and "k = 1" in g.coverage


def test_three_grid_varying_ratio_recovers_order_and_limit():
    f_ext, C, p = 2.0, -0.4, 1.3
    h = (0.1, 0.17, 0.4)  # r21 = 1.7, r32 = 2.35
    f = [f_ext + C * x**p for x in h]
    g = V.three_grid(f[0], f[1], f[2], h[1] / h[0], h[2] / h[1])
    assert g.convergence == V.MONOTONIC and g.iterations > 1
    assert g.p == pytest.approx(p, rel=1e-9)
    assert g.f_extrapolated == pytest.approx(f_ext, rel=1e-12)
    # exact power law: GCI23 / (r21^p GCI12) = |f1 / f2| (the relative GCI divides by f1, f2)
    assert g.asymptotic_ratio == pytest.approx(abs(f[0] / f[1]), rel=1e-9)


def test_three_grid_oscillatory_case_has_no_gci():
    # f = f_ext + C (-1)^k h^p: the differences alternate in sign (eps32/eps21 < 0)
    h = np.array([0.05, 0.1, 0.2])
    f = 1.0 + 0.3 * np.array([1, -1, 1]) * h**2
    g = V.three_grid(*f, 2.0, 2.0)
    assert g.convergence == V.OSCILLATORY and g.R < 0
    assert all(math.isnan(x) for x in (g.p, g.gci_fine, g.gci_coarse, g.u_num, g.f_extrapolated))
    assert g.as_dict()["convergence_code"] == V.CONVERGENCE_CODE[V.OSCILLATORY]


def test_three_grid_divergent_case_has_no_gci():
    # the change grows under refinement: f = 1 + 0.01 / h
    h = np.array([0.05, 0.1, 0.2])
    f = 1.0 + 0.01 / h
    g = V.three_grid(*f, 2.0, 2.0)
    assert g.convergence == V.DIVERGENT and g.R == pytest.approx(2.0, rel=1e-9)
    assert math.isnan(g.p) and math.isnan(g.gci_fine) and math.isnan(g.u_num)


def test_quantity_at_round_off_is_not_extrapolated():
    f1 = 3.0
    g = V.three_grid(f1, f1 + 2 * EPS * f1, f1 - 3 * EPS * f1, 2.0, 2.0)
    assert g.convergence == V.AT_ROUND_OFF
    assert math.isnan(g.p) and g.f_extrapolated == f1
    assert g.u_num == pytest.approx(1e3 * EPS * f1)  # the round-off bound, not a GCI
    # converged to round-off on the two finest levels only: still nothing to extrapolate
    assert V.three_grid(f1, f1 + EPS * f1, f1 + 1e-6, 2.0, 2.0).convergence == V.AT_ROUND_OFF


def test_error_metric_at_round_off_gets_no_order():
    h = np.array([0.25, 0.125, 0.0625])
    e = np.array([1.5e-15, 5.2e-15, 2.5e-14])  # e_F of load_transfer/inscribed_surface
    eo = V.error_order(h, e)
    assert eo["at_round_off"] and eo["pairwise"] == [] and math.isnan(eo["least_squares"])
    # one level above the bound: that level still gives no pair with a round-off neighbour
    eo2 = V.error_order(np.array([0.5, 0.25, 0.125]), np.array([1e-10, 2.5e-11, 1e-15]))
    assert not eo2["at_round_off"] and eo2["n_round_off"] == 1
    assert eo2["pairwise"][0] == pytest.approx(2.0) and math.isnan(eo2["pairwise"][1])
    assert math.isnan(eo2["last"])


def test_least_squares_order_over_five_levels():
    h = np.array([0.4, 0.2, 0.1, 0.05, 0.025])
    f = 2.0 + 0.7 * h**1.6
    ls = V.least_squares_order(h, f)
    assert ls.p == pytest.approx(1.6, abs=1e-6) and ls.f0 == pytest.approx(2.0, abs=1e-9)
    assert ls.alpha == pytest.approx(0.7, rel=1e-5) and ls.n_levels == 5
    # a perturbation of the coarsest level moves the last-three estimate not at all, the fit a little
    f_pert = f.copy()
    f_pert[0] *= 1.002
    assert V.three_grid(f_pert[-1], f_pert[-2], f_pert[-3], 2.0, 2.0).p == pytest.approx(1.6, rel=1e-9)
    ls2 = V.least_squares_order(h, f_pert)
    assert 1.0 < ls2.p < 2.5 and ls2.p != pytest.approx(1.6, abs=1e-3) and ls2.residual_std > 0


def _study(**kw):
    base = dict(name="t", kind="convergence", parameter="n", metric="err", spacing="inverse",
                expected_order=2.0, order_tolerance=0.2, gci_safety_factor=1.25, quantities=["q"],
                roundoff_factor=1000.0, u_num_divisor=None, asymptotic_tolerance=0.05, extra={})
    base.update(kw)
    return OmegaConf.create(base)


def _table(n, err, q):
    return pd.DataFrame({"job": range(len(n)), "case": "c", "status": "ok", "verdict": "pass",
                         "mlflow_run_id": "", "parameter": np.asarray(n, float), "err": err, "q": q})


def test_convergence_study_gates_the_error_metric_and_gives_gci_on_the_quantity(tmp_path):
    from harness.studies.aggregate import convergence

    n = np.array([8, 16, 32, 64])
    h = 1.0 / n
    res = convergence(_table(n, 0.5 * h**2, 1.0 + 0.5 * h**2), _study(), tmp_path)
    m = res["metrics"]
    assert res["verdict"] == "pass" and m["observed_order"] == pytest.approx(2.0, rel=1e-9)
    assert m["observed_order_ls"] == pytest.approx(2.0, rel=1e-9)
    assert not any(k.startswith("gci_err") for k in m)  # never a GCI on the error metric
    assert m["gci_q_p"] == pytest.approx(2.0, rel=1e-9) and m["gci_q_f_extrapolated"] == pytest.approx(1.0, rel=1e-12)
    assert m["gci_q_ls_p"] == pytest.approx(2.0, abs=1e-6)
    assert res["verification"]["q"]["convergence"] == V.MONOTONIC
    assert (tmp_path / "convergence.png").stat().st_size > 1000


def test_convergence_study_with_oscillatory_quantity_and_round_off_metric(tmp_path):
    from harness.core import figures
    from harness.studies.aggregate import convergence

    n = np.array([8, 16, 32])
    h = 1.0 / n
    err = np.array([1e-15, 3e-15, 2e-15])  # at round-off: no order, no order gate
    q = 1.0 + 0.3 * np.array([1, -1, 1]) * h**2  # oscillatory: no GCI, warns
    study = _study()
    res = convergence(_table(n, err, q), study, tmp_path)
    assert res["error_metric"]["at_round_off"] and "not applied" in res["error_metric"]["order_gate"]
    assert "observed_order" not in res["metrics"] and res["metrics"]["err_at_round_off"] == 1.0
    v = res["verification"]["q"]
    assert v["convergence"] == V.OSCILLATORY and "no GCI" in v["note"]
    assert res["verdict"] == "warn"
    assert "gci_q_gci_fine" in res["metrics"] and math.isnan(res["metrics"]["gci_q_gci_fine"])
    # the study figure draws the round-off metric as a band and fits no line to it
    paths = figures.for_study(_table(n, err, q), study, tmp_path, gated=["err"])
    assert paths and paths[0].stat().st_size > 1000


def test_asymptotic_range_check_warns_outside_tolerance(tmp_path):
    from harness.studies.aggregate import convergence

    n = np.array([4, 8, 16])
    h = 1.0 / n
    q = 1.0 + h**2 + 2.0 * h**3  # higher-order term still visible on these levels
    res = convergence(_table(n, h**2, q), _study(asymptotic_tolerance=0.01), tmp_path)
    v = res["verification"]["q"]
    assert v["convergence"] == V.MONOTONIC and abs(v["asymptotic_ratio"] - 1.0) > 0.01
    assert "asymptotic range" in v["note"] and res["verdict"] == "warn"
    res_loose = convergence(_table(n, h**2, q), _study(asymptotic_tolerance=0.5), tmp_path)
    assert res_loose["verdict"] == "pass"
    json.dumps(res_loose["verification"])  # study.json can hold it
