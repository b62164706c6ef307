"""Kratos MPM dynamic case: step records against closed forms, Kratos vs scikit-fem under refinement,
the time-step study (reduced by default, HARNESS_FULL=1 full size), and the FE backend alone."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

from models.load_transfer.fe import ElasticBody, PointLoads, make_fe_solver  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FULL = os.environ.get("HARNESS_FULL") == "1"


def _triangle_integral(t0, t1, t_peak, t_end):
    """int_{t0}^{t1} a(t) dt of a = t/t_peak (t <= t_peak), (t_end - t)/(t_end - t_peak) after."""
    def A(t):
        t = np.asarray(t, float)
        up = np.minimum(t, t_peak) ** 2 / (2.0 * t_peak)
        s = np.clip(t, t_peak, t_end)
        down = ((t_end * s - s**2 / 2.0) - (t_end * t_peak - t_peak**2 / 2.0)) / (t_end - t_peak)
        return up + down
    return A(t1) - A(t0)


def test_lt_kratos_step_records_closed_form(tmp_path):
    pytest.importorskip("KratosMultiphysics.MPMApplication", reason="Kratos extra not installed")
    from models.load_transfer.kratos import workflow as W
    from models.load_transfer.kratos.analysis import run_mpm
    from models.load_transfer.kratos.builder import MPMSpec
    from models.load_transfer.kratos.loads import read_meridian_loads

    body = ElasticBody(radius=0.01, height=0.02, E=2e9, nu=0.3, rho=1200.0, nr=4, nz=4)
    n, t_run, t_end, p0 = 13, 3.7e-5, 5.0e-5, 2.0e5  # steps not aligned with the 1e-6 s source knots
    spec = MPMSpec(solver="dynamic", dt=t_run / n, n_steps=n)
    src = W.SourceSpec(kind="synthetic", p0=p0, n_rings=40, t_end=t_end, n_outputs=51)
    ex = W.export_loads(W.write_source(src, body, tmp_path, "dyn"), W.top_face_table(body), spec, tmp_path,
                        mode="production")
    loads = read_meridian_loads(ex.path)
    mpm = run_mpm(body, spec, loads, log_path=tmp_path / "kratos.log")
    r = mpm.records
    assert r["time"].size == n  # end_time = (N - 1/2) dt: no extra step
    assert np.max(np.abs(r["time"] - spec.dt * np.arange(1, n + 1))) <= 1e-12 * spec.dt * n
    # source force of the synthetic run: pi p0 R^2 / 2 a(t), its exact step means
    scale = np.pi * p0 * body.radius**2 / 2.0
    t_lo = r["time"] - r["dt"]
    F_exact = scale * _triangle_integral(t_lo, r["time"], 0.3 * t_end, t_end) / r["dt"]
    assert np.max(np.abs(r["F_B"] - F_exact)) <= 1e-12 * scale
    assert r["J_B"][-1] == pytest.approx(scale * _triangle_integral(0.0, r["time"][-1], 0.3 * t_end, t_end), rel=1e-12)
    # applied force: -sum f.n of the exact means of the point-force history (vectorised, whole grid)
    f = W.step_forces(loads, spec)
    assert np.max(np.abs(r["F_M"] + np.einsum("nci,ci->n", f, loads.normals))) <= 1e-12 * scale
    assert abs(r["J_M"][-1] - float(np.sum(r["F_M"] * r["dt"]))) <= 1e-12 * abs(r["J_M"][-1])
    assert r["e_F"][-1] == pytest.approx(ex.e_F, rel=1e-9) and r["e_F"][-1] < 0.01
    assert r["work"][-1] > 0.0  # compressive load on the moving top face does positive work


def test_lt_kratos_dynamic_case(harness_env, tracking_uri):
    pytest.importorskip("KratosMultiphysics.MPMApplication", reason="Kratos extra not installed")
    from harness.core.api import run_case

    out = run_case("load_transfer/kratos_dynamic", tracking_uri=tracking_uri)
    assert out.status == "ok", out.message
    assert out.verdict == "pass", (out.metrics, out.gates)
    m = out.metrics
    assert m["e_F"] <= 1e-12 and m["e_J"] <= 1e-12  # conservative point loads, read back from Kratos
    for name in ("u_l2_rel_diff", "u_max_rel_diff", "vm_l2_rel_diff"):  # Kratos - FE shrinks with refinement
        assert m[name] < m[f"{name}_coarse"], name
    assert m["u_l2_rel_diff_order"] >= 1.0
    assert m["u_l2_rel_diff_order"] == pytest.approx(math.log2(m["u_l2_rel_diff_coarse"] / m["u_l2_rel_diff"]))
    assert m["peak_rel_diff"] < 0.01 and m["work_rel_diff"] < 0.01
    series = json.loads((out.run_dir / "series.json").read_text())
    assert len(series["time"]) == 80 and (out.run_dir / "kratos_loads.png").is_file()


@pytest.mark.slow
def test_lt_kratos_time_step_study(harness_env):
    pytest.importorskip("KratosMultiphysics.MPMApplication", reason="Kratos extra not installed")
    env = dict(os.environ, HARNESS_OUTPUTS=str(harness_env))
    res = subprocess.run([sys.executable, "-m", "harness", "-m", "+case=load_transfer/kratos_dynamic",
                          "+study=load_transfer/kratos_time_step"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=3600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    sweep = sorted((harness_env / "sweeps" / "load_transfer" / "kratos_dynamic").iterdir())[-1]
    study = json.loads((sweep / "study" / "study.json").read_text())
    assert study["n_jobs"] == 3 and study["n_failed"] == 0
    assert study["verdict"] == "pass" or FULL
    table = pd.read_csv(sweep / "study" / "table.csv").sort_values("parameter")
    s = study["metrics"]
    for tag, col in (("peak", "peak_change"), ("work", "work_change")):
        e = table[col].to_numpy()
        assert np.all(np.diff(e) < 0), (tag, e)  # the changes shrink with the step
        assert s[f"observed_order_{tag}"] == pytest.approx(math.log2(e[-2] / e[-1]), rel=1e-12)
        assert s[f"gci_{tag}_gci_12"] > 0.0 and math.isfinite(s[f"gci_{tag}_p"])
    # the FE model with the same grid, steps and step loads: Newmark's second-order peak
    assert s["observed_order_peak_fe"] > 1.5 and table["peak_change_fe"].is_monotonic_decreasing
    if not FULL:  # reduced size (grid 4 x 8, 40..160 steps): both inside their bands
        assert 1.0 <= s["observed_order_peak"] <= 2.0 and 0.5 <= s["observed_order_work"] <= 1.5
    else:  # full size: the MPM peak converges below first order on the finest pair (measured 0.46): warn
        assert study["verdict"] in ("pass", "warn") and s["observed_order_peak"] > 0.0
    assert (sweep / "study" / "time_step.png").stat().st_size > 1000
    # the study kind is named as module:function, so the runs stay in the case's family
    from mlflow.tracking import MlflowClient

    c = MlflowClient(f"sqlite:///{harness_env}/mlflow.db")
    parent = c.get_run(json.loads((sweep / "study_state.json").read_text())["parent_run_id"])
    assert c.get_experiment(parent.info.experiment_id).name == "harness/load_transfer"


def test_lt_fe_backend_closed_forms():
    """scikit-fem backend alone: uniaxial compression, axisymmetric and plane strain (exact for Q1)."""
    p, E, nu = 1.0e4, 2.0e9, 0.3
    for form in ("axisymmetric", "plane_strain"):
        body = ElasticBody(radius=0.01, height=0.02, E=E, nu=nu, rho=1000.0, nr=3, nz=4, formulation=form)
        s = make_fe_solver(body)
        xs, _ = body.grid_lines()
        w = np.diff(xs)
        if form == "axisymmetric":  # exact ring forces of each edge split to its two nodes (linear r)
            f_lo = 2 * np.pi * p * w * (2 * xs[:-1] + xs[1:]) / 6
            f_hi = 2 * np.pi * p * w * (xs[:-1] + 2 * xs[1:]) / 6
        else:
            f_lo = f_hi = p * w / 2
        F = np.zeros(xs.size)
        F[:-1] += f_lo
        F[1:] += f_hi
        pts = np.stack([xs, np.full(xs.size, body.height)], axis=1)
        fld = s.static(pts, np.stack([np.zeros_like(F), -F], axis=1))
        ez = -p / E * (1 - nu**2) if form == "plane_strain" else -p / E
        er = nu * p / E * ((1 + nu) if form == "plane_strain" else 1.0)
        assert np.max(np.abs(fld.u[:, 1] - ez * fld.x[:, 1])) <= 1e-9 * p / E * body.height, form
        assert np.max(np.abs(fld.u[:, 0] - er * fld.x[:, 0])) <= 1e-9 * p / E * body.height, form
        assert np.max(np.abs(fld.stress[:, 1] + p)) <= 1e-9 * p, form
        # lumped mass: the total mass of the body (2 components)
        vol = np.pi * body.radius**2 * body.height if form == "axisymmetric" else body.radius * body.height
        assert s.m_lumped.sum() == pytest.approx(2 * body.rho * vol, rel=1e-12)


def test_lt_fe_newmark_free_vibration_energy():
    """Newmark average acceleration conserves E = 1/2 v.Mv + 1/2 u.Ku exactly once the load is off,
    and the external work of the load steps equals that energy (the body starts at rest)."""
    body = ElasticBody(radius=0.01, height=0.02, E=2e9, nu=0.3, rho=1200.0, nr=2, nz=4)
    s = make_fe_solver(body)
    forces = np.zeros((120, 1, 2))
    forces[:5, 0, 1] = -10.0  # N, five loaded steps, then free vibration
    res = s.dynamic(PointLoads(points=np.array([[0.005, 0.02]]), forces=forces), 2e-7)
    U, V = s.u_history, s.v_history
    m = s.m_lumped
    energy = 0.5 * np.einsum("ni,i,ni->n", V, m, V) + 0.5 * np.einsum("ni,in->n", U, s.K @ U.T)
    assert energy[6] > 0.0  # step 6 is the first whose both end forces are zero
    assert np.max(np.abs(energy[6:] - energy[6])) <= 1e-10 * energy[6]
    assert np.all(res.work[5:] == res.work[5])  # no external work after the load
