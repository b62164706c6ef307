"""The workflow's products (issue 15): the operator file of the Kratos top face, the export on its
surface, and the Kratos cases reading a handed-over kratos-point-loads file."""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

from models.load_transfer.contracts.kratos_loads import read_kratos_loads  # noqa: E402
from models.load_transfer.contracts.wall_loads import read_wall_loads  # noqa: E402
from models.load_transfer.fe.base import ElasticBody  # noqa: E402
from models.load_transfer.kratos import workflow as W  # noqa: E402
from models.load_transfer.kratos.handover import (  # noqa: E402
    OperatorFileError, build_operator, export_with_operator, operator_checks, read_operator, sha256_file,
    write_operator)
from models.load_transfer.time_average import step_edges  # noqa: E402

BODY = ElasticBody(radius=0.01, height=0.02, E=2e9, nu=0.3, rho=1200.0, nr=4, nz=8)


def _wall(tmp_path, name="w", p0=2e5):
    src = W.SourceSpec(kind="synthetic", p0=p0, n_rings=40, t_end=5e-5, n_outputs=51)
    return W.write_source(src, BODY, tmp_path / name, name)


@pytest.fixture()
def operator(tmp_path):
    wl = _wall(tmp_path)
    table, faces = W.top_face_faces(BODY)
    op = build_operator(table, faces, read_wall_loads(wl).radial_edges, sha256_file(wl))
    return wl, op, write_operator(tmp_path / "top.operator.npz", op)


def test_operator_file_round_trip_and_conservation(operator):
    wl, op, path = operator
    back = read_operator(path)
    assert (back.W != op.W).nnz == 0 and back.surface_sha256 == op.surface_sha256
    assert back.wall_loads_sha256 == sha256_file(wl) and np.array_equal(back.faces.condition_index, op.faces.condition_index)
    w = read_wall_loads(wl)
    m = operator_checks(back, w.time, w.pressure)
    assert m["column_error"] <= 1e-13 and m["e_F_knots"] <= 1e-13 and m["surface_area_error"] <= 1e-13
    assert m["n_conditions"] == 8 and m["n_rings"] == 40


def test_bad_operator_files_name_the_field(operator, tmp_path):
    _, op, path = operator
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    tampered = dict(data, table_x0=data["table_x0"] * 1.01)  # the surface no longer matches its hash
    np.savez(tmp_path / "t.operator.npz", **tampered)
    with pytest.raises(OperatorFileError, match="surface_sha256"):
        read_operator(tmp_path / "t.operator.npz")
    np.savez(tmp_path / "m.operator.npz", **{k: v for k, v in data.items() if k != "W_indptr"})
    with pytest.raises(OperatorFileError, match="missing field 'W_indptr'"):
        read_operator(tmp_path / "m.operator.npz")
    with pytest.raises(OperatorFileError, match="must end with .operator.npz"):
        write_operator(tmp_path / "x.npz", op)


def test_export_writes_the_operators_forces_and_refuses_another_wall_file(operator, tmp_path):
    wl, op, _ = operator
    edges = step_edges(0.0, 5e-5 / 40, 40)
    ex, mismatch = export_with_operator(op, wl, edges, tmp_path / "out")
    assert mismatch <= 1e-14 and ex.e_F <= 1e-14
    d = read_kratos_loads(ex.path)
    assert d["metadata"]["operator_surface_sha256"] == op.surface_sha256
    other = _wall(tmp_path, "other", p0=3e5)
    with pytest.raises(OperatorFileError, match="is not the wall-loads file the operator was built for"):
        export_with_operator(op, other, edges, tmp_path / "out2")


def test_export_case_needs_an_existing_operator_file(harness_env, tmp_path):
    from harness.core.api import run_case

    out = run_case("load_transfer/kratos_export",
                   overrides=["tracking=none", f"++case.params.operator_file={tmp_path / 'none.operator.npz'}"])
    assert out.exit_code == 2 and "case.params.operator_file" in out.message


def test_static_case_on_a_handed_over_file_applies_its_peak_knot(operator, harness_env, tmp_path):
    """kratos_static with case.params.loads_file: the constant load is the file's largest-force knot;
    the force read back from Kratos equals that knot's source force (conservative loads)."""
    pytest.importorskip("KratosMultiphysics.MPMApplication", reason="Kratos extra not installed")
    from harness.core.api import run_case

    wl, op, _ = operator
    ex, _ = export_with_operator(op, wl, step_edges(0.0, 5e-5 / 40, 40), tmp_path / "out")
    out = run_case("load_transfer/kratos_static", overrides=["tracking=none", f"++case.params.loads_file={ex.path}"])
    assert out.exit_code == 0 and out.verdict == "pass", (out.message, out.gates)
    peak = float(np.max(np.abs(read_kratos_loads(ex.path)["diagnostics/source_force"])))
    # one static step of unit length: the impulses are the step forces (source J_B, applied J_M)
    assert out.metrics["J_B"] == pytest.approx(peak, rel=1e-12) and out.metrics["J_M"] == pytest.approx(peak, rel=1e-12)
    assert out.metrics["e_F"] <= 1e-12


def test_dynamic_levels_on_a_handed_over_file_need_its_wall_loads_file(operator, harness_env, tmp_path):
    """kratos_dynamic exports ``source`` on its finer levels: with loads_file, that must be the wall-loads
    file the loads file was exported from (its SHA-256), else exit 2 naming case.params.loads_file."""
    pytest.importorskip("KratosMultiphysics.MPMApplication", reason="Kratos extra not installed")
    from harness.core.api import run_case

    wl, op, _ = operator
    ex, _ = export_with_operator(op, wl, step_edges(0.0, 5e-5 / 40, 40), tmp_path / "out")
    out = run_case("load_transfer/kratos_dynamic", overrides=["tracking=none", f"++case.params.loads_file={ex.path}"])
    assert out.exit_code == 2 and "case.params.loads_file" in out.message and "source.kind='synthetic'" in out.message
