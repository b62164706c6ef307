"""The FEniCSx peer: Debian's DOLFINx 0.5 on /usr/bin/python3 in its own process (issue 15)."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

from harness.core.api import run_case  # noqa: E402
from models.load_transfer.fe.base import ElasticBody, make_fe_solver  # noqa: E402
from models.load_transfer.fe.dolfinx_backend import DolfinxUnavailable, probe  # noqa: E402

E, NU, P = 2.0e9, 0.3, 1.0e4


def test_dolfinx_uniform_pressure_closed_form(tmp_path):
    """Uniform axial ring loads on the top face: u_z = -p z / E, u_r = nu p r / E, sigma_zz = -p (DOLFINx alone)."""
    body = ElasticBody(radius=0.01, height=0.02, E=E, nu=NU, rho=1200.0, nr=3, nz=4)
    xs = np.linspace(0.0, body.radius, body.nr + 1)
    g = np.array([-1.0, 1.0]) / np.sqrt(3.0)
    r = (0.5 * (xs[1:] + xs[:-1])[:, None] + 0.5 * np.diff(xs)[:, None] * g).ravel()
    area = 2 * np.pi * r * np.repeat(0.5 * np.diff(xs), 2)  # consistent nodal loads of a uniform pressure
    pts = np.stack([r, np.full(r.size, body.height)], axis=1)
    f = np.stack([np.zeros(r.size), -P * area], axis=1)
    dx = make_fe_solver(body, "dolfinx", workdir=tmp_path)
    fld = dx.static(pts, f)
    exact = np.stack([NU * P * fld.x[:, 0] / E, -P * fld.x[:, 1] / E], axis=1)
    assert np.max(np.abs(fld.u - exact)) <= 1e-9 * P * body.height / E
    assert np.max(np.abs(fld.stress[:, 1] + P)) <= 1e-8 * P
    assert fld.weight.sum() == pytest.approx(np.pi * body.radius**2 * body.height, rel=1e-13)
    assert dx.info["dolfinx"].startswith("0.5.") and dx.info["interpreter"] == "/usr/bin/python3"
    assert (tmp_path / "dolfinx-request-1.npz").is_file() and (tmp_path / "dolfinx-result-1.npz").is_file()


def test_dolfinx_static_three_way(harness_env):
    out = run_case("load_transfer/dolfinx_static", overrides=["tracking=none"])
    assert out.status == "ok", out.message
    assert out.verdict == "pass", (out.metrics, out.gates)
    m = out.metrics
    for k in ("dolfinx_skfem_u_l2_rel_diff", "dolfinx_skfem_u_max_rel_diff", "dolfinx_skfem_vm_l2_rel_diff"):
        assert m[k] <= 1e-10, k  # same mesh, element, quadrature and weak form
    assert m["kratos_dolfinx_u_l2_rel_diff"] <= 1e-6 and m["kratos_dolfinx_u_max_rel_diff"] <= 1e-6
    assert m["e_F"] <= 1e-12 and m["e_J"] <= 1e-12
    # force through all three: each FE model's support reaction equals the force read back from Kratos
    assert m["dolfinx_reaction_rel_diff"] <= 1e-10 and m["skfem_reaction_rel_diff"] <= 1e-10
    assert m["dolfinx_u_l2_norm"] == pytest.approx(m["u_l2_norm_fe"], rel=1e-10)
    info = json.loads((out.run_dir / "manifest.json").read_text())["info"]["levels"][0]["dolfinx"]
    assert info["dolfinx"].startswith("0.5.") and info["interpreter"] == "/usr/bin/python3"
    assert list((out.run_dir / "level0" / "dolfinx").glob("dolfinx-result-*.npz"))


@pytest.mark.parametrize("python,expect", [
    ("/usr/bin/python9", "interpreter /usr/bin/python9 not found or not executable"),
    (sys.executable, "cannot import DOLFINx"),  # the project's venv: no DOLFINx there
])
def test_missing_interpreter_or_dolfinx_is_invalid_input(harness_env, python, expect):
    with pytest.raises(DolfinxUnavailable, match="apt-get install -y python3-dolfinx"):
        probe(python)
    out = run_case("load_transfer/dolfinx_static", overrides=["tracking=none", f"case.params.dolfinx_python={python}"])
    assert out.status == "invalid" and out.exit_code == 2
    assert out.message.startswith("case.params.dolfinx_python: ") and expect in out.message
    assert "apt-get install -y python3-dolfinx" in out.message


@pytest.mark.slow
def test_dolfinx_dynamic_three_way(harness_env):
    out = run_case("load_transfer/dolfinx_dynamic", overrides=["tracking=none"])
    assert out.verdict == "pass", (out.metrics, out.gates)
    m = out.metrics
    assert m["dolfinx_skfem_u_hist_rel_diff"] <= 1e-10 and m["dolfinx_skfem_work_rel_diff"] <= 1e-10
    assert m["kratos_dolfinx_u_l2_rel_diff"] < m["kratos_dolfinx_u_l2_rel_diff_coarse"]
    assert m["kratos_dolfinx_u_l2_rel_diff_order"] >= 1.0


@pytest.mark.slow
def test_dolfinx_3d_block_three_way(harness_env):
    """The 3-D block (off-axis, partially covered disk): DOLFINx / scikit-fem / Kratos on the same point loads."""
    pytest.importorskip("KratosMultiphysics.MPMApplication", reason="Kratos extra not installed")
    out = run_case("load_transfer/dolfinx_3d", overrides=["tracking=none"])
    assert out.status == "ok", out.message
    assert out.verdict == "pass", (out.metrics, out.gates)
    m = out.metrics
    assert max(m["dolfinx_skfem_u_l2_rel_diff"], m["dolfinx_skfem_u_max_rel_diff"], m["dolfinx_skfem_vm_l2_rel_diff"]) <= 1e-10
    assert m["kratos_dolfinx_u_l2_rel_diff"] <= 1e-6 and m["e_F"] <= 1e-12
    info = json.loads((out.run_dir / "manifest.json").read_text())["info"]["dolfinx"]
    assert info["dolfinx"].startswith("0.5.") and info["interpreter"] == "/usr/bin/python3"
