"""Manufactured solutions: safe parsing, derivation against independent formulas, guard rails,
generated code compiled and run, values on a user's points, quadrature norms on every supported
element, the mesh reader on every format."""
from __future__ import annotations

import shutil
import subprocess
import sys

import meshio
import numpy as np
import pytest
import sympy as sp
from omegaconf import OmegaConf

from harness.core.context import HarnessInputError, RunContext
from harness.generic import manufactured_case, mesh as meshes
from harness.generic.manufactured import Manufactured, ManufacturedError
from harness.generic.manufactured_schema import ManufacturedConf
from harness.metrics import mesh_norms

x, y, z, r, t = sp.symbols("x y z r t", real=True)
lam, mu = sp.symbols("lam mu", real=True)


def _derive(**spec):
    return Manufactured.from_spec({"coordinates": ["x", "y"], **spec})


def _same(a, b):
    a = a if isinstance(a, sp.MatrixBase) else sp.Matrix([a])
    b = b if isinstance(b, sp.MatrixBase) else sp.Matrix([b])
    assert a.shape == b.shape
    assert all(sp.simplify(e) == 0 for e in (a - b)), (a, b)


# ----------------------------------------------------------------------------- derivation

def test_poisson_source_gradient_and_boundary_flux():
    m = _derive(fields={"u": "sin(pi*x)*sin(pi*y)"}, sources={"f": "-laplace(u)"}, fluxes={"q": "-grad(u)"},
                boundaries={"right": {"normal": [1, 0], "at": {"x": 1}}})
    u = sp.sin(sp.pi * x) * sp.sin(sp.pi * y)
    _same(m.expressions["f"], 2 * sp.pi**2 * u)
    _same(m.expressions["grad_u_exact"], sp.Matrix([sp.diff(u, x), sp.diff(u, y)]))
    _same(m.expressions["q_right"], sp.pi * sp.sin(sp.pi * y))   # -du/dx at x = 1
    _same(m.expressions["u_right"], 0)
    xs, ys = np.array([0.1, 0.7]), np.array([0.3, 0.9])
    np.testing.assert_allclose(m.function("f")(xs, ys), 2 * np.pi**2 * np.sin(np.pi * xs) * np.sin(np.pi * ys),
                               rtol=1e-14)
    assert m.function("grad_u_exact")(xs, ys).shape == (2, 2)


def test_linear_elasticity_2d_matches_navier():
    m = _derive(parameters={"lam": 1.5, "mu": 0.7}, fields={"u": ["x**2*y", "sin(x)*cos(y)"]},
                sources={"f": "-div(lam*tr(sym_grad(u))*eye + 2*mu*sym_grad(u))"})
    u = sp.Matrix([x**2 * y, sp.sin(x) * sp.cos(y)])
    divu = sp.diff(u[0], x) + sp.diff(u[1], y)
    navier = -(mu * sp.Matrix([sp.diff(c, x, 2) + sp.diff(c, y, 2) for c in u])
               + (lam + mu) * sp.Matrix([sp.diff(divu, x), sp.diff(divu, y)]))
    _same(m.expressions["f"], navier)


def test_linear_elasticity_3d_matches_navier():
    m = Manufactured.from_spec({"coordinates": ["x", "y", "z"], "parameters": {"lam": 2.0, "mu": 1.0},
                                "fields": {"u": ["y*z*exp(x)", "sin(x*z)", "x*y**2*z"]},
                                "sources": {"f": "-div(lam*tr(sym_grad(u))*eye + 2*mu*sym_grad(u))"}})
    u = sp.Matrix([y * z * sp.exp(x), sp.sin(x * z), x * y**2 * z])
    c = (x, y, z)
    divu = sum(sp.diff(u[i], c[i]) for i in range(3))
    navier = -(mu * sp.Matrix([sum(sp.diff(ui, v, 2) for v in c) for ui in u])
               + (lam + mu) * sp.Matrix([sp.diff(divu, v) for v in c]))
    _same(m.expressions["f"], navier)


def test_linear_elasticity_axisymmetric_matches_navier():
    m = Manufactured.from_spec({"coordinates": ["r", "z"], "system": "axisymmetric",
                                "parameters": {"lam": 2.0, "mu": 1.0},
                                "fields": {"u": ["r**2*sin(z)", "r*cos(z)"]},
                                "sources": {"f": "-div(lam*tr(sym_grad(u))*eye + 2*mu*sym_grad(u))"}})
    ur, uz = r**2 * sp.sin(z), r * sp.cos(z)
    divu = sp.diff(r * ur, r) / r + sp.diff(uz, z)
    omega = sp.diff(ur, z) - sp.diff(uz, r)   # (curl u)_theta
    navier = sp.Matrix([-(lam + 2 * mu) * sp.diff(divu, r) - mu * sp.diff(omega, z),
                        -(lam + 2 * mu) * sp.diff(divu, z) + mu * sp.diff(r * omega, r) / r])
    _same(m.expressions["f"], navier)


def test_transient_heat_with_variable_conductivity():
    m = Manufactured.from_spec({"coordinates": ["x"], "time": "t", "parameters": {"k": "1 + x**2"},
                                "fields": {"u": "exp(-t)*sin(pi*x)"}, "sources": {"f": "diff(u, t) - div(k*grad(u))"}})
    u = sp.exp(-t) * sp.sin(sp.pi * x)
    _same(m.expressions["f"], sp.diff(u, t) - sp.diff((1 + x**2) * sp.diff(u, x), x))
    assert [str(a) for a in m.arguments()] == ["x", "t"]


# ----------------------------------------------------------------------------- safe parsing, guard rails

ATTACKS = {
    "__import__('os')": "call of '__import__'",
    "__import__('os').system('true')": "attribute access",
    "u.__class__": "attribute access",
    "().__class__.__bases__": "attribute access",
    "__builtins__": "dunder name",
    "lambda: 1": "lambda",
    "open('/etc/passwd')": "call of 'open'",
    "eval('1')": "call of 'eval'",
    "[c for c in u]": "comprehension",
    "'abc'": "only numbers",
    "u[0]": "indexing",
    "sin(u, x=1)": "keyword arguments",
    "9**9**9": "power above",
    "u if x else u": "conditional",
}


@pytest.mark.parametrize("text", sorted(ATTACKS))
def test_attacks_are_refused_naming_the_construct(text):
    with pytest.raises(ManufacturedError, match=r"^sources\.f: .*" + ATTACKS[text].replace("(", r"\(")):
        _derive(fields={"u": "sin(x)"}, sources={"f": text})


def test_unknown_name_and_dimension_mismatch_are_named():
    with pytest.raises(ManufacturedError, match="name 'kappa' is neither a coordinate, a parameter nor a declared field"):
        _derive(fields={"u": "sin(x)"}, sources={"f": "-div(kappa*grad(u))"})
    with pytest.raises(ManufacturedError, match=r"sym_grad\(\) takes a vector, got a scalar"):
        _derive(fields={"u": "sin(x)"}, sources={"f": "-div(sym_grad(u))"})
    with pytest.raises(ManufacturedError, match=r"the operator gives a vector \(2\) but the solution u is a scalar"):
        _derive(fields={"u": "sin(x)"}, sources={"f": "grad(u)"})
    with pytest.raises(ManufacturedError, match=r"a vector field has 2 components"):
        _derive(fields={"u": ["sin(x)"]})


def test_bad_declaration_in_a_case_exits_2_in_one_line(tmp_path, harness_env):
    marker = tmp_path / "pwned"
    cmd = [sys.executable, "-m", "harness", "+case=examples/mms/poisson", "tracking=none",
           f"case.params.manufactured.sources.f=\"__import__('os').system('touch {marker}')\""]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stdout + res.stderr
    line = [ln for ln in res.stdout.splitlines() + res.stderr.splitlines() if "forbidden" in ln]
    assert line and "case.params.manufactured.sources.f: forbidden construct: attribute access" in line[-1]
    assert "Traceback" not in res.stderr and not marker.exists()


# ----------------------------------------------------------------------------- code and values

def test_generated_c_fortran_and_python_agree_with_numpy(tmp_path):
    m = Manufactured.from_spec({"coordinates": ["x"], "time": "t", "parameters": {"k": "1 + x**2", "a": 0.5},
                                "fields": {"u": "exp(-a*t)*sin(pi*x) + x*cos(t)"},
                                "sources": {"f": "diff(u, t) - div(k*grad(u))"}})
    names = ["u_exact", "f"]
    (tmp_path / "mms.h").write_text(m.code("c", names, "mms"))
    (tmp_path / "mms.f90").write_text(m.code("fortran", names, "mms"))
    (tmp_path / "mms.py").write_text(m.code("python", names, "mms"))
    (tmp_path / "main.c").write_text('#include <stdio.h>\n#include "mms.h"\nint main(void) {\n'
                                     '  printf("%.17g %.17g\\n", u_exact(0.3, 0.2), f(0.3, 0.2)); return 0; }\n')
    subprocess.run(["cc", "-std=c99", "-I.", "-o", "main", "main.c", "-lm"], cwd=tmp_path, check=True)
    c_vals = [float(v) for v in subprocess.run(["./main"], cwd=tmp_path, capture_output=True, text=True,
                                                check=True).stdout.split()]
    fc = shutil.which("gfortran") or shutil.which("gfortran-12")
    assert fc, "gfortran (Debian: gfortran-12, a dependency of python3-dolfinx) is needed"
    (tmp_path / "main.f90").write_text("program main\n  use mms\n  implicit none\n"
                                       "  print '(2ES25.16)', u_exact(0.3d0, 0.2d0), f(0.3d0, 0.2d0)\nend program main\n")
    subprocess.run([fc, "-o", "fmain", "mms.f90", "main.f90"], cwd=tmp_path, check=True)
    f_vals = [float(v) for v in subprocess.run(["./fmain"], cwd=tmp_path, capture_output=True, text=True,
                                                check=True).stdout.split()]
    ns: dict = {}
    exec(compile((tmp_path / "mms.py").read_text(), "mms.py", "exec"), ns)  # noqa: S102 - our generated file
    py_vals = [float(ns["u_exact"](0.3, 0.2)), float(ns["f"](0.3, 0.2))]
    ref = [float(m.function(n)(0.3, 0.2)) for n in names]
    for vals in (c_vals, f_vals, py_vals):
        np.testing.assert_allclose(vals, ref, rtol=1e-13)


def _ctx(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    return RunContext(run_dir=run_dir)


def test_values_on_the_users_points_csv_and_mesh(tmp_path):
    pts = np.array([[0.1, 0.2], [0.5, 0.5], [0.9, 0.3]])
    np.savetxt(tmp_path / "points.csv", pts, delimiter=",", header="x,y", comments="")
    grid = meshio.Mesh(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0]]), [("triangle", np.array([[0, 1, 2]]))])
    grid.write(tmp_path / "points.vtu")
    spec = OmegaConf.merge(OmegaConf.structured(ManufacturedConf), {
        "fields": {"u": "sin(pi*x)*y"}, "sources": {"f": "-laplace(u)"},
        "values": {"source.csv": {"points": str(tmp_path / "points.csv")},
                   "source.vtu": {"points": str(tmp_path / "points.vtu"), "names": ["f", "u_exact"]}}})
    ctx, info = _ctx(tmp_path), {}
    manufactured_case.setup(OmegaConf.create({"manufactured": spec}), ctx, info)
    table = np.genfromtxt(ctx.run_dir / "source.csv", delimiter=",", names=True)
    np.testing.assert_allclose(table["f"], np.pi**2 * np.sin(np.pi * pts[:, 0]) * pts[:, 1], rtol=1e-14)
    back = meshio.read(ctx.run_dir / "source.vtu")
    np.testing.assert_allclose(back.point_data["u_exact"], np.sin(np.pi * back.points[:, 0]) * back.points[:, 1])
    assert len(info["manufactured"]["expressions_sha256"]) == 64
    assert {p.name for p in ctx.outputs} >= {"source.csv", "source.vtu"}


# ----------------------------------------------------------------------------- norms and meshes

def _box(n, dim):
    g = np.linspace(0, 1, n + 1)
    pts = np.stack([a.ravel() for a in np.meshgrid(*([g] * dim), indexing="ij")], axis=1)
    idx = np.arange((n + 1) ** dim).reshape((n + 1,) * dim)
    if dim == 2:
        a, b, c, d = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
        return pts, np.stack([x_.ravel() for x_ in (a, b, c, d)], axis=1)
    corners = [idx[i:n + i, j:n + j, k:n + k] for (i, j, k) in
               [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)]]
    return pts, np.stack([c_.ravel() for c_ in corners], axis=1)


def _simplices(quads):
    if quads.shape[1] == 4:
        return np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    h = quads  # Kuhn: six tetrahedra along the diagonal 0-6
    paths = [(1, 2), (2, 3), (3, 7), (7, 4), (4, 5), (5, 1)]
    return np.concatenate([h[:, [0, a, b, 6]] for a, b in paths])


def _quadratic(pts, cells, edges):
    """Add edge midpoints (deduplicated) to P1 simplices: P2 cells in VTK order."""
    mids = np.concatenate([(pts[cells[:, i]] + pts[cells[:, j]]) / 2 for i, j in edges])
    allp = np.concatenate([pts, mids])
    _, first, inverse = np.unique(np.round(allp, 12), axis=0, return_index=True, return_inverse=True)
    keep = np.sort(first)
    remap = np.empty(len(first), int)
    remap[np.argsort(first)] = np.arange(len(first))
    new_index = remap[inverse.ravel()]
    nc = len(cells)
    extra = np.stack([new_index[len(pts) + k * nc + np.arange(nc)] for k in range(len(edges))], axis=1)
    return allp[keep], np.concatenate([new_index[cells], extra], axis=1)


def _smooth(dim):
    def u(X):
        return np.prod(np.sin(np.pi * X[:, :dim]), axis=1) + X[:, 0] ** 3

    def g(X):
        s, c = np.sin(np.pi * X[:, :dim]), np.cos(np.pi * X[:, :dim])
        out = np.stack([np.pi * c[:, i] * np.prod(np.delete(s, i, axis=1), axis=1) for i in range(dim)], axis=1)
        out[:, 0] += 3 * X[:, 0] ** 2
        return out
    return u, g


CASES = {
    "triangle": (2, lambda p, c: (p, _simplices(c)), (4, 8), 2, 1),
    "triangle6": (2, lambda p, c: _quadratic(p, _simplices(c), [(0, 1), (1, 2), (2, 0)]), (4, 8), 3, 2),
    "quad": (2, lambda p, c: (p, c), (4, 8), 2, 1),
    "tetra": (3, lambda p, c: (p, _simplices(c)), (3, 6), 2, 1),
    "tetra10": (3, lambda p, c: _quadratic(p, _simplices(c), [(0, 1), (1, 2), (0, 2), (0, 3), (1, 3), (2, 3)]),
                (2, 4), 3, 2),
    "hexahedron": (3, lambda p, c: (p, c), (3, 6), 2, 1),
}


@pytest.mark.parametrize("ctype", sorted(CASES))
def test_interpolation_error_orders_on_every_element(ctype):
    dim, build, levels, p_l2, p_h1 = CASES[ctype]
    u, g = _smooth(dim)
    errs, hs = [], []
    for n in levels:
        pts, cells = build(*_box(n, dim))
        res = mesh_norms.error_norms(pts, {ctype: cells}, u(pts), u, g)
        assert res["measure"] == pytest.approx(1.0, rel=1e-12)
        errs.append((res["L2"], res["H1"]))
        hs.append(mesh_norms.mesh_size(pts, {ctype: cells})["h_max"])
    ratio = hs[0] / hs[1]
    assert ratio == pytest.approx(2.0, rel=1e-12)
    assert np.log(errs[0][0] / errs[1][0]) / np.log(ratio) == pytest.approx(p_l2, abs=0.25)
    assert np.log(errs[0][1] / errs[1][1]) / np.log(ratio) == pytest.approx(p_h1, abs=0.25)


def test_norm_of_a_known_function_and_exact_representation():
    pts, cells = _box(8, 2)
    tri = _simplices(cells)

    def u(X):
        return np.sin(np.pi * X[:, 0]) * np.sin(np.pi * X[:, 1])
    res = mesh_norms.error_norms(pts, {"triangle": tri}, np.zeros(len(pts)), u)
    assert res["L2"] == pytest.approx(0.5, rel=1e-4)    # ||sin(pi x) sin(pi y)||_L2 = 1/2
    lin = lambda X: 1 + 2 * X[:, 0] - X[:, 1]           # noqa: E731
    glin = lambda X: np.broadcast_to([2.0, -1.0], (len(X), 2))  # noqa: E731
    res = mesh_norms.error_norms(pts, {"triangle": tri}, lin(pts), lin, glin)
    assert res["L2"] < 1e-14 and res["H1"] < 1e-13


def _write_formats(tmp_path, pts, cells, data):
    mesh = meshio.Mesh(pts, [("triangle", cells)], point_data={"u": data})
    out = {}
    for name, kw in (("m.vtu", {}), ("m.xdmf", {}), ("m.msh", {"file_format": "gmsh22", "binary": True}),
                     ("m.exo", {})):
        mesh.write(tmp_path / name, **kw)
        out[name] = tmp_path / name
    with meshio.xdmf.TimeSeriesWriter(tmp_path / "series.xdmf") as writer:
        writer.write_points_cells(pts, [("triangle", cells)])
        writer.write_data(0.0, point_data={"u": 0 * data})
        writer.write_data(1.0, point_data={"u": data})
    out["series.xdmf"] = tmp_path / "series.xdmf"
    return out


def test_mesh_reader_every_format_gives_the_same_norm(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # meshio's TimeSeriesWriter puts its .h5 into the working directory
    p2, quads = _box(6, 2)
    tri = _simplices(quads)
    pts = np.column_stack([p2, np.zeros(len(p2))])
    u, g = _smooth(2)
    ref = mesh_norms.error_norms(p2, {"triangle": tri}, u(p2), u, g)
    for name, path in _write_formats(tmp_path, pts, tri, u(p2)).items():
        data = meshes.read_mesh(f"outputs.{name}", path)
        res = mesh_norms.error_norms(data.points[:, :2], data.cells, data.point_data["u"], u, g)
        assert res["L2"] == pytest.approx(ref["L2"], rel=1e-12), name
        assert res["H1"] == pytest.approx(ref["H1"], rel=1e-12), name
    # an ASCII Gmsh mesh as Gmsh writes it (meshio 5.3.5 reads ASCII $NodeData wrongly: binary above)
    meshio.Mesh(pts, [("triangle", tri)]).write(tmp_path / "plain.msh", file_format="gmsh22", binary=False)
    plain = meshes.read_mesh("outputs.plain", tmp_path / "plain.msh")
    assert mesh_norms.mesh_size(plain.points[:, :2], plain.cells)["h_max"] == pytest.approx(np.sqrt(2) / 6)
    first = meshes.read_mesh("outputs.series", tmp_path / "series.xdmf", step=0)
    assert first.time == 0.0 and first.n_steps == 2 and not first.point_data["u"].any()
    with pytest.raises(HarnessInputError, match=r"^outputs\.series\.step: .*time step 5 of 2 steps"):
        meshes.read_mesh("outputs.series", tmp_path / "series.xdmf", step=5)
    (tmp_path / "bad.vtu").write_text("<VTKFile>not a mesh")
    with pytest.raises(HarnessInputError, match=r"^outputs\.bad: .*bad\.vtu: cannot be read as a mesh"):
        meshes.read_mesh("outputs.bad", tmp_path / "bad.vtu")


def test_a_solution_the_space_holds_exactly_is_warned_about(harness_env):
    import json

    from harness import run_case

    out = run_case("examples/mms/poisson", overrides=["tracking=none", "case.params.parameters.n=4",
                                                      "case.params.manufactured.fields.u=1 + 2*x - 3*y"])
    assert out.status == "ok", out.message
    assert out.metrics["e_L2"] < 1e-13 and out.metrics["e_H1"] < 1e-12   # at round-off: no order to measure
    info = json.loads((out.run_dir / "manifest.json").read_text())["info"]["manufactured"]
    assert any("represents the manufactured solution exactly" in w and "polynomial of degree 1" in w
               for w in info["warnings"]), info.get("warnings")
    assert info["polynomial_degree"] == {"u": 1} and len(info["expressions_sha256"]) == 64
    assert {"mms.py", "mms.h", "mms.f90"} <= {p.name for p in out.run_dir.iterdir()}


@pytest.mark.slow
def test_bench_case_logs_its_ratio_and_times(harness_env, tracking_uri):
    import math
    import os

    from mlflow.tracking import MlflowClient

    from harness import run_case

    size = [] if os.environ.get("HARNESS_FULL") == "1" else ["case.params.parameters.n=150",
                                                                "case.params.parameters.repeats=1"]
    out = run_case("bench/manufactured_l2", overrides=size, tracking_uri=tracking_uri)
    assert out.status == "ok", out.message
    for name in ("time_ratio", "l2_time_s", "numpy_time_s", "warmup_l2_time_s", "derive_time_s", "lambdify_time_s"):
        assert math.isfinite(out.metrics[name]) and out.metrics[name] > 0, name
    assert out.metrics["l2_error_constant"] == pytest.approx(1.007, abs=0.01)  # C h^2: a real norm was timed
    assert out.gates["l2_error_constant"] == "pass"
    logged = MlflowClient(tracking_uri).get_run(out.mlflow_run_id).data.metrics
    assert logged["time_ratio"] == pytest.approx(out.metrics["time_ratio"])
