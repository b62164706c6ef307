"""3-D Kratos MPM case (issue 15): conservative point loads on a triangulated top surface, off-axis
partially covered disk, Kratos against the scikit-fem hexahedral model."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
pytest.importorskip("KratosMultiphysics.MPMApplication", reason="Kratos extra not installed")

from harness.core.api import run_case  # noqa: E402


def test_lt_kratos_3d_case(harness_env):
    out = run_case("load_transfer/kratos_3d", overrides=["tracking=none"])
    assert out.status == "ok", out.message
    assert out.verdict == "pass", (out.metrics, out.gates)
    m = out.metrics
    assert m["e_F"] <= 1e-12 and m["e_J"] <= 1e-12  # POINT_LOAD read back from Kratos vs F_B (common area)
    assert m["u_l2_rel_diff"] <= 1e-6 and m["u_max_rel_diff"] <= 1e-6
    # the common-area rule: F_B is the source over the face's coverage of the disk, computed here
    # independently (arcs of each ring circle inside the square, sampled)
    e = np.linspace(0.0, 0.01, 41)
    p0, R, (xc, yc), L = 1.0e4, 0.01, (0.013, 0.008), 0.02
    p_bar = p0 * (1.0 - (e[1:] ** 2 + e[:-1] ** 2) / (2 * R**2))  # exact ring averages of p0 (1 - r²/R²)
    th = np.linspace(0.0, 2 * np.pi, 4001)[:-1]
    g, w = np.polynomial.legendre.leggauss(8)
    cover = []
    for a, b in zip(e[:-1], e[1:]):
        r = 0.5 * (a + b) + 0.5 * (b - a) * g
        x, y = xc + r[:, None] * np.cos(th), yc + r[:, None] * np.sin(th)
        frac = np.mean((x >= 0) & (x <= L) & (y >= 0) & (y <= L), axis=1)
        cover.append(np.sum(0.5 * (b - a) * w * 2 * np.pi * r * frac))
    assert m["F_B"] == pytest.approx(float(p_bar @ np.array(cover)), rel=2e-3)
    assert m["F_B"] < m["F_disk"] and 0.8 < m["common_area_fraction"] < 0.9
    info = json.loads((out.run_dir / "manifest.json").read_text())["info"]
    assert info["kratos"]["formulation"] == "3d" and info["kratos"]["material_points"] == 4 * 4 * 2 * 8
    assert info["point_loads"] == "conservative"
    assert list(out.run_dir.glob("*.kratos-loads.v1.h5"))
