"""Axisymmetric error norms (r, z) on P1/P2 triangles and Q1 quadrilaterals: the measure
2 pi r dr dz against closed-form integrals, the hoop term u_r / r of a vector field, interpolation
orders on meshes touching the axis and away from it, and the case path (a working norm; r < 0
nodes exit 2 in one line)."""
from __future__ import annotations

import subprocess
import sys

import meshio
import numpy as np
import pytest
import sympy as sp
from omegaconf import OmegaConf

from harness.core.context import HarnessInputError, RunContext
from harness.generic import manufactured_case
from harness.generic.manufactured import Manufactured
from harness.generic.manufactured_schema import ManufacturedConf
from harness.metrics import mesh_norms

R, Z = sp.symbols("r z", real=True, nonnegative=True)


def _rz_mesh(ctype, n, r0=0.0, r1=1.0, z0=0.0, z1=2.0):
    """Structured n x n mesh of [r0, r1] x [z0, z1]: points (m, 2), cells in VTK node order."""
    rr, zz = np.meshgrid(np.linspace(r0, r1, n + 1), np.linspace(z0, z1, n + 1), indexing="ij")
    pts = np.stack([rr.ravel(), zz.ravel()], axis=1)
    idx = np.arange((n + 1) ** 2).reshape(n + 1, n + 1)
    quads = np.stack([a.ravel() for a in (idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:])], axis=1)
    if ctype == "quad":
        return pts, quads
    tri = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    if ctype == "triangle":
        return pts, tri
    edges = [(0, 1), (1, 2), (2, 0)]  # triangle6: edge midpoints, deduplicated
    mids = np.concatenate([(pts[tri[:, i]] + pts[tri[:, j]]) / 2 for i, j in edges])
    allp = np.concatenate([pts, mids])
    uniq, inverse = np.unique(np.round(allp, 12), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    nc = len(tri)
    extra = np.stack([inverse[len(pts) + k * nc + np.arange(nc)] for k in range(3)], axis=1)
    return uniq, np.concatenate([inverse[tri], extra], axis=1)


def _functions(exprs):
    """numpy u(X) and the cylindrical gradient g(X) of a scalar or an (u_r, u_z) vector, by sympy."""
    m = Manufactured.from_spec({"coordinates": ["r", "z"], "system": "axisymmetric",
                                "fields": {"u": exprs}})
    u, g = m.function("u_exact"), m.function("grad_u_exact")
    return (lambda X: u(X[:, 0], X[:, 1])), (lambda X: g(X[:, 0], X[:, 1]))


def _volume_integral(expr, r1=1.0, z1=2.0):
    return float(sp.integrate(2 * sp.pi * R * expr, (R, 0, r1), (Z, 0, z1)))


@pytest.mark.parametrize("ctype", ["triangle", "triangle6", "quad"])
def test_weighted_norms_equal_closed_form_integrals(ctype):
    """Polynomials the element holds: the errors vanish and the norms of u are the integrals over the
    cylinder r <= 1, 0 <= z <= 2 with dV = 2 pi r dr dz, the hoop term included."""
    pts, cells = _rz_mesh(ctype, 3)
    if ctype == "triangle6":       # u = (r^2, r z): quadratic, |grad u|^2 = 4r^2 + r^2 (hoop) + z^2 + r^2
        exprs, ur, uz = ["r**2", "r*z"], R**2, R * Z
        grad2 = 4 * R**2 + R**2 + Z**2 + R**2
    else:                          # u = (3 r, r + 2 z) (bilinear for Q1): |grad u|^2 = 9 + 9 (hoop) + 1 + 4
        exprs, ur, uz = ["3*r", "r + 2*z"], 3 * R, R + 2 * Z
        grad2 = sp.Integer(9 + 9 + 1 + 4)
    u, g = _functions(exprs)
    res = mesh_norms.error_norms(pts, {ctype: cells}, u(pts), u, g, axisymmetric=True)
    assert res["measure"] == pytest.approx(2 * np.pi, rel=1e-13)           # pi r^2 h = 2 pi
    assert res["L2_exact"] ** 2 == pytest.approx(_volume_integral(ur**2 + uz**2), rel=1e-13)
    assert res["H1_exact"] ** 2 == pytest.approx(_volume_integral(grad2), rel=1e-13)
    assert res["L2"] < 1e-12 * res["L2_exact"] and res["H1"] < 1e-12 * res["H1_exact"]   # round-off
    # a scalar: no hoop term; the integral of 2 pi r (1 + r z)^2
    su, sg = _functions("1 + r*z" if ctype != "triangle" else "1 + 2*r - z")
    expr = 1 + R * Z if ctype != "triangle" else 1 + 2 * R - Z
    res = mesh_norms.error_norms(pts, {ctype: cells}, np.zeros(len(pts)), su, sg, axisymmetric=True)
    assert res["L2"] ** 2 == pytest.approx(_volume_integral(expr**2), rel=1e-13)
    gexpr = sp.diff(expr, R) ** 2 + sp.diff(expr, Z) ** 2
    assert res["H1_exact"] ** 2 == pytest.approx(_volume_integral(gexpr), rel=1e-13)


def test_the_hoop_term_is_in_the_discrete_gradient():
    """u_h = (r, 0) on P1: its (r, z) gradient alone has |.|^2 = 1; the cylindrical one adds
    (u_r / r)^2 = 1, so the seminorm of u_h is sqrt(2 V) and the error against (r, 0) is zero."""
    pts, cells = _rz_mesh("triangle", 4)
    u, g = _functions(["r", "0"])
    res = mesh_norms.error_norms(pts, {"triangle": cells}, u(pts), u, g, axisymmetric=True)
    assert res["H1_exact"] == pytest.approx(np.sqrt(2 * 2 * np.pi), rel=1e-13) and res["H1"] < 1e-13
    flat = mesh_norms.error_norms(pts, {"triangle": cells}, u(pts), u,
                                  lambda X: np.broadcast_to([[1.0, 0.0], [0.0, 0.0]], (len(X), 2, 2)))
    assert flat["H1_exact"] == pytest.approx(np.sqrt(2.0), rel=1e-13)   # Cartesian: no 2 pi r, no hoop


ORDERS = {"triangle": (2, 1), "triangle6": (3, 2), "quad": (2, 1)}


@pytest.mark.parametrize("r0", [0.0, 0.5], ids=["touching_axis", "off_axis"])
@pytest.mark.parametrize("ctype", sorted(ORDERS))
def test_interpolation_orders_on_refined_rz_meshes(ctype, r0):
    """The interpolant of a smooth vector field (u_r = 0 on the axis, as regularity demands):
    L2 order p + 1 and H1 order p (hoop term included), from the meshes' own h."""
    u, g = _functions(["sin(pi*r)*cos(z)", "cos(pi*r)*exp(z/2)"])
    errs, hs = [], []
    for n in (8, 16):
        pts, cells = _rz_mesh(ctype, n, r0=r0, r1=r0 + 1.0, z1=1.0)
        res = mesh_norms.error_norms(pts, {ctype: cells}, u(pts), u, g, axisymmetric=True)
        assert res["measure"] == pytest.approx(np.pi * ((r0 + 1) ** 2 - r0**2), rel=1e-12)
        errs.append((res["L2"], res["H1"]))
        hs.append(mesh_norms.mesh_size(pts, {ctype: cells})["h_max"])
    ratio = hs[0] / hs[1]
    p_l2, p_h1 = ORDERS[ctype]
    assert np.log(errs[0][0] / errs[1][0]) / np.log(ratio) == pytest.approx(p_l2, abs=0.1)
    assert np.log(errs[0][1] / errs[1][1]) / np.log(ratio) == pytest.approx(p_h1, abs=0.1)


def _case(mesh_path, norm):
    spec = OmegaConf.merge(OmegaConf.structured(ManufacturedConf), {
        "coordinates": ["r", "z"], "system": "axisymmetric",
        "fields": {"u": ["r*sin(z)", "cos(r)"]}, "sources": {"f": "-div(sym_grad(u))"},
        "norms": {"e": {"norm": norm, "mesh": str(mesh_path), "field": "u"}}})
    return OmegaConf.create({"manufactured": spec})


class _Names:
    def __init__(self):
        self.values = {}

    def define(self, where, name, value, unit, kind):
        self.values[name] = value

    def eval(self, where, text):
        raise AssertionError("not used")


def test_case_norm_of_an_axisymmetric_field_on_a_mesh(tmp_path):
    """The manufactured section's system selects the axisymmetric norm (no extra setting)."""
    pts, cells = _rz_mesh("triangle", 8)
    u, g = _functions(["r*sin(z)", "cos(r)"])
    meshio.Mesh(np.c_[pts, np.zeros(len(pts))], [("triangle", cells)],
                point_data={"u": np.c_[u(pts), np.zeros(len(pts))]}).write(tmp_path / "rz.vtu")
    expected = mesh_norms.error_norms(pts, {"triangle": cells}, u(pts), u, g, axisymmetric=True)["H1"]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ctx, info, ns = RunContext(run_dir=run_dir), {}, _Names()
    conf = _case(tmp_path / "rz.vtu", "H1")
    mms = manufactured_case.setup(conf, ctx, info)
    manufactured_case.define(conf, ctx, ns, mms, info)
    assert ns.values["e"] == pytest.approx(expected, rel=1e-12) and expected > 0   # was exit 2 before


def test_case_norm_on_a_mesh_with_negative_radius_is_refused(tmp_path):
    pts, cells = _rz_mesh("triangle", 2, r0=-0.5, r1=0.5)
    meshio.Mesh(np.c_[pts, np.zeros(len(pts))], [("triangle", cells)],
                point_data={"u": np.c_[pts, np.zeros(len(pts))]}).write(tmp_path / "neg.vtu")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ctx, info = RunContext(run_dir=run_dir), {}
    conf = _case(tmp_path / "neg.vtu", "L2")
    mms = manufactured_case.setup(conf, ctx, info)
    with pytest.raises(HarnessInputError, match=r"^case\.params\.manufactured\.norms\.e: neg\.vtu: axisymmetric mesh has 3 nodes "
                                                r"with r < 0 \(min r = -0\.5 m\)"):
        manufactured_case.define(conf, ctx, _Names(), mms, info)


def test_negative_radius_exits_2_in_one_line_from_the_command_line(tmp_path, harness_env):
    """The Poisson example switched to (r, z), its L2 norm pointed at a mesh reaching r = -0.5."""
    p = np.array([[-0.5, 0, 0], [0.5, 0, 0], [0.5, 1, 0], [-0.5, 1, 0.0]])
    meshio.Mesh(p, [("triangle", np.array([[0, 1, 2], [0, 2, 3]]))], point_data={"u": p[:, 0]}).write(tmp_path / "neg.vtu")
    cmd = [sys.executable, "-m", "harness", "+case=examples/mms/poisson", "tracking=none", "case.params.parameters.n=2",
           "case.params.manufactured.system=axisymmetric", "case.params.manufactured.coordinates=[r,z]",
           "case.params.manufactured.fields.u='r*sin(z)'", f"case.params.manufactured.norms.L2_u.mesh={tmp_path / 'neg.vtu'}"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = [ln for ln in (res.stdout + res.stderr).splitlines() if "r < 0" in ln]
    assert len(lines) == 1 and "case.params.manufactured.norms.L2_u: neg.vtu: axisymmetric mesh has 2 nodes with r < 0 " \
        "(min r = -0.5 m)" in lines[0], res.stdout + res.stderr
    assert "Traceback" not in res.stderr
