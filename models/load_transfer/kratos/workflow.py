"""The whole Kratos load-transfer case as plain functions (the harness adapter only wires them).

source (wall-loads v1 file) -> top-face quadrature table (ring areas on the theta = 0 meridian)
and, on the conservative path, its face table (one annulus face per grid edge)
-> cavitation-kratos-export (kratos-point-loads v1 file, mapping gate) -> Kratos MPM run with the
point-load process -> the same body, material and step loads in the FE backend -> comparison.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np
import pandas as pd

from ..fe.base import ElasticBody, FEDynamicResult, FEField, PointLoads, make_fe_solver, von_mises
from ..time_average import exact_time_average, step_edges
from .builder import MPMSpec
from .loads import MeridianLoads

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceSpec:
    """The wall-pressure source.

    kind "analytic": constant-in-time ring averages of p0 (uniform) or p0 (1 - r^2/R^2)
    (parabolic) on n_rings rings of [0, radius], knots at 0 and t_end (debug-mode file: no
    Basilisk provenance). kind "synthetic": the synthetic quadtree wall run (triangular pulse,
    parabolic profile, p_ref subtracted; production metadata), n_outputs knots on [0, t_end].
    """

    kind: str = "analytic"
    profile: str = "parabolic"
    p0: float = 1.0e5
    n_rings: int = 40
    t_end: float = 1.0
    n_outputs: int = 41
    p_ref: float = 1.0e5


def write_source(src: SourceSpec, body: ElasticBody, out_dir: Path, case_id: str,
                 configuration: Optional[str] = None) -> Path:
    """Write the wall-loads file of ``src`` into ``out_dir``; return its path."""
    from ..contracts.wall_loads import write_wall_loads

    import dataclasses
    import json

    out_dir = Path(out_dir)
    if configuration is None:  # the source and body description stand in for a configuration file
        configuration = json.dumps({"source": dataclasses.asdict(src), "body": dataclasses.asdict(body)}, indent=1)
    if src.kind == "analytic":
        from ..sources import analytic_ring_history

        h = analytic_ring_history(r_max=body.radius, n_rings=src.n_rings, profile=src.profile, p0=src.p0,
                                  pulse="constant", pulse_times=(0.0, src.t_end))
        return write_wall_loads(out_dir, case_id=case_id, time=h.time, radial_edges=h.radial_edges,
                                pressure=h.pressure, shear=h.shear, mode="debug", configuration=configuration,
                                metadata={"command": "models.load_transfer.sources.analytic_ring_history"})
    if src.kind == "synthetic":
        from ..extraction import synthetic_metadata, synthetic_wall_run

        run = synthetic_wall_run(length=body.radius, n_rings=src.n_rings, n_outputs=src.n_outputs, t_end=src.t_end,
                                 p0=src.p0, p_ref=src.p_ref)
        return run.extractor.write(out_dir, case_id=case_id, metadata=synthetic_metadata(run),
                                   configuration=configuration)
    raise ValueError(f"kind: must be 'analytic' or 'synthetic', got {src.kind!r}")


def top_face_table(body: ElasticBody, *, first_id: int = 1) -> pd.DataFrame:
    """Quadrature table of the top face: 2 Gauss points per grid edge on the theta = 0 meridian.

    Point a at radius r_a (z = height, y = 0) carries the ring area 2 pi r_a w_a (w_a the Gauss
    weight times half the edge length); the areas sum to pi R^2 exactly. Outward normal +z.
    """
    xs, _ = body.grid_lines()
    g = np.array([-1.0, 1.0]) / np.sqrt(3.0)
    mid, half = 0.5 * (xs[1:] + xs[:-1]), 0.5 * np.diff(xs)
    r = (mid[:, None] + half[:, None] * g[None, :]).ravel()
    w = np.repeat(half, 2)
    area = (2.0 * np.pi * r * w) if body.formulation == "axisymmetric" else w
    n = r.size
    return pd.DataFrame({"condition_id": np.arange(first_id, first_id + n, dtype=np.int64), "x0": r,
                         "y0": np.zeros(n), "z0": np.full(n, body.height), "tributary_area": area,
                         "nx": np.zeros(n), "ny": np.zeros(n), "nz": np.ones(n)})


def top_face_faces(body: ElasticBody, *, first_id: int = 1):
    """(table, FaceTable) of the top face for the CONSERVATIVE path: one annulus face per grid edge
    with its 2 Gauss-point conditions (the same points and areas as :func:`top_face_table`)."""
    from ..face_loads import axisymmetric_face_table

    if body.formulation != "axisymmetric":
        raise ValueError(f"formulation: conservative point loads need the axisymmetric body, got {body.formulation!r}"
                         f" (use point_loads=sampled)")
    xs, _ = body.grid_lines()
    return axisymmetric_face_table(xs, body.height, points_per_face=2, first_id=first_id)


def export_loads(wall_loads: Path, table: pd.DataFrame, spec: MPMSpec, out_dir: Path, *, mode: str,
                 fail_above: float = 0.02, metadata: Optional[Dict[str, Any]] = None, faces: Any = None):
    """cavitation-kratos-export onto the Kratos step grid of ``spec`` (returns ExportResult).

    faces: the FaceTable of ``table`` (conservative path); None samples the ring averages."""
    from ..export import export_kratos_loads

    meta = {"exporter_commit": "models.load_transfer.export", "command": "models.load_transfer.kratos.workflow"}
    meta.update(metadata or {})
    return export_kratos_loads(wall_loads, table, step_edges(spec.t0, spec.dt, spec.n_steps), out_dir, mode=mode,
                               fail_above=fail_above, metadata=meta, faces=faces)


def ring_errors(body: ElasticBody, radial_edges) -> Dict[str, np.ndarray]:
    """Per-ring force error of both paths on the top face, (Σ_a share of ring i − A_i) / A_i.

    conservative: the column sums of the face-integrated operator W; sampled: the tributary areas
    of the conditions whose point lies in ring i (the ring value times the area sampling).
    """
    from ..debug_map import point_rings
    from ..face_loads import face_condition_matrix

    edges = np.asarray(radial_edges, dtype=np.float64)
    table, faces = top_face_faces(body)
    xyz = table[["x0", "y0", "z0"]].to_numpy()
    A = np.pi * np.diff(edges**2)
    W = face_condition_matrix(faces, xyz, edges)
    rings = point_rings(xyz, edges)
    ok = rings.index >= 0
    sampled = np.bincount(rings.index[ok], weights=table["tributary_area"].to_numpy()[ok], minlength=A.size)
    return {"conservative": (np.asarray(W.sum(axis=0)).ravel() - A) / A, "sampled": (sampled - A) / A}


def step_forces(loads: MeridianLoads, spec: MPMSpec) -> np.ndarray:
    """(Nsteps, Nc, 2) N: the exact step means the Kratos process applies, for the FE model."""
    return exact_time_average(loads.time, loads.forces, step_edges(spec.t0, spec.dt, spec.n_steps))


def match_gauss(x_mp: np.ndarray, x_fe: np.ndarray, tol: float) -> np.ndarray:
    """Index of the FE Gauss point of every material point (initial positions), or ValueError."""
    from scipy.spatial import cKDTree

    d, idx = cKDTree(x_fe).query(x_mp, k=1)
    if np.any(d > tol) or np.unique(idx).size != idx.size:
        raise ValueError(f"material points do not sit on the FE Gauss points (max distance {d.max():.3e} m > {tol:g} m)")
    return idx


def _rel_l2(a: np.ndarray, b: np.ndarray, w: Optional[np.ndarray] = None) -> float:
    d2, r2 = (a - b) ** 2, b**2
    if d2.ndim > 1:
        d2, r2 = d2.reshape(d2.shape[0], -1).sum(axis=1), r2.reshape(r2.shape[0], -1).sum(axis=1)
    if w is not None:
        d2, r2 = d2 * w, r2 * w
    den = float(np.sum(r2))
    return float(np.sqrt(np.sum(d2) / den)) if den > 0 else float("nan")


def compare_static(mpm, fe: FEField, tol: float) -> Dict[str, float]:
    """Kratos MPM against the FE field at the Gauss points (final state of a static run)."""
    idx = match_gauss(mpm.x0, fe.x, tol)
    u_fe, s_fe, w = fe.u[idx], fe.stress[idx], fe.weight[idx]
    u_k = mpm.u_hist[-1]
    vm_k, vm_fe = von_mises(mpm.stress), von_mises(s_fe)
    return {
        "u_l2_rel_diff": _rel_l2(u_k, u_fe, w),
        "u_max_rel_diff": float(np.max(np.abs(u_k - u_fe)) / np.max(np.abs(u_fe))),
        "vm_l2_rel_diff": _rel_l2(vm_k, vm_fe, w),
        "u_l2_norm": float(np.sqrt(np.sum(w * np.sum(u_k**2, axis=1)))),
        "u_max_norm": float(np.max(np.linalg.norm(u_k, axis=1))),
        "vm_l2_norm": float(np.sqrt(np.sum(w * vm_k**2))),
        "u_l2_norm_fe": float(np.sqrt(np.sum(w * np.sum(u_fe**2, axis=1)))),
        "vm_l2_norm_fe": float(np.sqrt(np.sum(w * vm_fe**2))),
    }


def top_response(u_points: np.ndarray, areas: np.ndarray) -> np.ndarray:
    """Area-weighted mean axial displacement of the loaded face [m] per state (..., Nc, 2) -> (...)."""
    return np.tensordot(u_points[..., 1], areas, axes=([-1], [0])) / float(np.sum(areas))


def compare_dynamic(mpm, fe: FEDynamicResult, fe_x: np.ndarray, areas: np.ndarray, tol: float) -> Dict[str, float]:
    """Kratos MPM against the FE Newmark run (same grid, same steps, same step loads)."""
    idx = match_gauss(mpm.x0, fe_x, tol)
    u_k, u_fe = mpm.u_hist, fe.u_gauss[:, idx]
    up_k = np.concatenate([np.zeros((1,) + mpm.records["u_points"].shape[1:]), mpm.records["u_points"]])
    resp_k, resp_fe = top_response(up_k, areas), top_response(fe.u_points, areas)
    pk, pf = float(np.max(np.abs(resp_k))), float(np.max(np.abs(resp_fe)))
    wk = float(mpm.records["work"][-1])
    wf = float(fe.work[-1])
    w = fe.final.weight[idx]
    vm_k, vm_fe = von_mises(mpm.stress), von_mises(fe.final.stress[idx])
    return {
        "u_l2_rel_diff": _rel_l2(u_k.reshape(u_k.shape[0], -1), u_fe.reshape(u_fe.shape[0], -1)),
        "u_max_rel_diff": float(np.max(np.abs(u_k - u_fe)) / np.max(np.abs(u_fe))),
        "vm_l2_rel_diff": _rel_l2(vm_k, vm_fe, w),
        "peak_response": pk, "peak_response_fe": pf, "peak_rel_diff": abs(pk - pf) / pf,
        "external_work": wk, "external_work_fe": wf, "work_rel_diff": abs(wk - wf) / abs(wf),
        "u_max_norm": float(np.max(np.linalg.norm(u_k, axis=-1))),
        "u_l2_norm_final": float(np.sqrt(np.sum(w * np.sum(u_k[-1] ** 2, axis=1)))),
        "vm_l2_norm": float(np.sqrt(np.sum(w * vm_k**2))),
    }


def fe_static(body: ElasticBody, loads: MeridianLoads, spec: MPMSpec, backend: str = "skfem"):
    solver = make_fe_solver(body, backend)
    f = step_forces(loads, spec)[-1]
    return solver, solver.static(loads.points, f)


def fe_dynamic(body: ElasticBody, loads: MeridianLoads, spec: MPMSpec, backend: str = "skfem"):
    """The FE Newmark run with lumped mass (as the Kratos run: consistent_mass_matrix = false)."""
    solver = make_fe_solver(body, backend, mass="lumped")
    res = solver.dynamic(PointLoads(points=loads.points, forces=step_forces(loads, spec)), spec.dt,
                         beta=spec.newmark_beta)
    return solver, res
