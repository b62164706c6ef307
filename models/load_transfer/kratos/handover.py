"""The products handed from stage to stage in the seed-000 workflow (issue 15).

operator file (``*.operator.npz``): the conservative surface operator of the Kratos top face for the
rings of one wall-loads file: W (Nc, Nr) m^2, W_ai = int_face(a) L_a chi_i dA (sparse CSR parts),
the radial edges, the condition table (ids, initial coordinates, tributary areas, outward normals),
the face table (vertices, condition ids), the axis origin and normal convention, the SHA-256 of the
surface (table + faces) and of the wall-loads file it was built for. Seed 000: "store sparse M,
mesh hash, axis origin and normal convention".

The export stage reads it, exports the wall-loads file with its surface (the conservative path of
``cavitation-kratos-export``), and checks that every exported normal point force is the operator
applied to the ring pressures at that knot (:func:`export_with_operator`); the Kratos stages read
the kratos-point-loads file that this writes.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..face_loads import FaceTable, face_condition_matrix

log = logging.getLogger(__name__)

OPERATOR_SUFFIX = ".operator.npz"
TABLE_COLUMNS = ("condition_id", "x0", "y0", "z0", "tributary_area", "nx", "ny", "nz")


class OperatorFileError(ValueError):
    """An operator file that cannot be used (names the file, the field and the rule)."""


@dataclass
class SurfaceOperator:
    """W (Nc, Nr) CSR m^2, radial_edges (Nr+1,) m, table (conditions), faces, axis_origin (2,) m."""

    W: sp.csr_matrix
    radial_edges: np.ndarray
    table: pd.DataFrame
    faces: FaceTable
    axis_origin: np.ndarray
    surface_sha256: str
    wall_loads_sha256: str
    outward: str = "+z"

    @property
    def normals(self) -> np.ndarray:
        return self.table[["nx", "ny", "nz"]].to_numpy()


def sha256_file(path: Path | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def surface_sha256(table: pd.DataFrame, faces: FaceTable) -> str:
    """SHA-256 of the condition table and face table arrays (float64 / int64 bytes, fixed order)."""
    h = hashlib.sha256()
    for col in TABLE_COLUMNS:
        h.update(np.ascontiguousarray(table[col].to_numpy(), dtype=np.int64 if col == "condition_id" else np.float64))
    h.update(np.ascontiguousarray(faces.vertices, dtype=np.float64))
    h.update(np.ascontiguousarray(faces.condition_index, dtype=np.int64))
    return h.hexdigest()


def build_operator(table: pd.DataFrame, faces: FaceTable, radial_edges, wall_loads_sha256: str,
                   axis_origin=(0.0, 0.0)) -> SurfaceOperator:
    """The operator of ``faces`` (conditions of ``table``) for ``radial_edges`` (the export's, R_map = last edge)."""
    xyz = table[["x0", "y0", "z0"]].to_numpy()
    edges = np.asarray(radial_edges, dtype=np.float64)
    W = face_condition_matrix(faces, xyz, edges, axis_origin=tuple(axis_origin)).tocsr()
    return SurfaceOperator(W=W, radial_edges=edges, table=table.reset_index(drop=True), faces=faces,
                           axis_origin=np.asarray(axis_origin, dtype=np.float64),
                           surface_sha256=surface_sha256(table, faces), wall_loads_sha256=wall_loads_sha256)


def write_operator(path: Path | str, op: SurfaceOperator) -> Path:
    """Write ``op`` atomically (temporary file in the same directory, then rename)."""
    target = Path(path)
    if not target.name.endswith(OPERATOR_SUFFIX):
        raise OperatorFileError(f"{target}: an operator file name must end with {OPERATOR_SUFFIX}")
    arrays: Dict[str, Any] = {f"table_{c}": op.table[c].to_numpy() for c in TABLE_COLUMNS}
    arrays.update(W_data=op.W.data, W_indices=op.W.indices, W_indptr=op.W.indptr, W_shape=np.array(op.W.shape),
                  radial_edges=op.radial_edges, face_vertices=op.faces.vertices,
                  face_condition_ids=op.table["condition_id"].to_numpy()[op.faces.condition_index],
                  axis_origin=op.axis_origin,
                  meta=np.array(json.dumps({"surface_sha256": op.surface_sha256, "outward": op.outward,
                                            "wall_loads_sha256": op.wall_loads_sha256,
                                            "normal_convention": "outward normal of the body; pressure pushes against it"})))
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def read_operator(path: Path | str) -> SurfaceOperator:
    """Read an operator file; OperatorFileError names the file and the field that is wrong."""
    p = Path(path)
    try:
        with np.load(p) as z:
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise OperatorFileError(f"{p}: not a readable operator file (.npz): {exc}") from exc
    need = ["W_data", "W_indices", "W_indptr", "W_shape", "radial_edges", "face_vertices", "face_condition_ids",
            "axis_origin", "meta", *(f"table_{c}" for c in TABLE_COLUMNS)]
    missing = [k for k in need if k not in data]
    if missing:
        raise OperatorFileError(f"{p}: missing field {missing[0]!r} (an operator file holds {', '.join(need)})")
    table = pd.DataFrame({c: data[f"table_{c}"] for c in TABLE_COLUMNS})
    shape = tuple(int(v) for v in data["W_shape"])
    try:
        W = sp.csr_matrix((data["W_data"], data["W_indices"], data["W_indptr"]), shape=shape)
    except ValueError as exc:
        raise OperatorFileError(f"{p}: W: inconsistent CSR arrays: {exc}") from exc
    edges = np.asarray(data["radial_edges"], dtype=np.float64)
    if shape != (len(table), edges.size - 1):
        raise OperatorFileError(f"{p}: W_shape: must be (conditions {len(table)}, rings {edges.size - 1}), got {shape}")
    ids = table["condition_id"].to_numpy()
    cid = np.asarray(data["face_condition_ids"], dtype=np.int64)
    order = np.argsort(ids)
    pos = np.clip(np.searchsorted(ids[order], cid), 0, ids.size - 1)
    if not np.all(ids[order][pos] == cid):
        raise OperatorFileError(f"{p}: face_condition_ids: names a condition id that is not in the table")
    faces = FaceTable(vertices=np.asarray(data["face_vertices"], dtype=np.float64), condition_index=order[pos])
    meta = json.loads(str(data["meta"]))
    op = SurfaceOperator(W=W, radial_edges=edges, table=table, faces=faces,
                         axis_origin=np.asarray(data["axis_origin"], dtype=np.float64),
                         surface_sha256=str(meta.get("surface_sha256", "")),
                         wall_loads_sha256=str(meta.get("wall_loads_sha256", "")), outward=str(meta.get("outward", "+z")))
    if surface_sha256(op.table, op.faces) != op.surface_sha256:
        raise OperatorFileError(f"{p}: meta.surface_sha256: does not match the stored table and faces")
    return op


def operator_checks(op: SurfaceOperator, time: np.ndarray, pressure: np.ndarray) -> Dict[str, float]:
    """Conservation of the operator: column_error = max_i |sum_a W_ai - A_i| / A_i (ring areas on the
    common disk); e_F_knots = max_k |sum_a (W p_k)_a - sum_i A_i p_ik| / max_k |sum_i A_i p_ik|;
    surface_area_error = |sum_a A_a - pi R^2| / pi R^2 (condition areas against the disk of the last edge)."""
    e = op.radial_edges
    A = np.pi * np.diff(e**2)
    cols = np.asarray(op.W.sum(axis=0)).ravel()
    F_M = np.asarray(op.W @ np.asarray(pressure, dtype=np.float64).T).sum(axis=0)  # (Nt,)
    F_B = np.asarray(pressure, dtype=np.float64) @ A
    scale = float(np.max(np.abs(F_B))) or 1.0
    disk = np.pi * e[-1] ** 2
    return {"column_error": float(np.max(np.abs(cols - A) / A)),
            "e_F_knots": float(np.max(np.abs(F_M - F_B)) / scale),
            "surface_area_error": abs(float(op.table["tributary_area"].sum()) - disk) / disk,
            "n_conditions": float(len(op.table)), "n_rings": float(A.size), "n_knots": float(len(time))}


def export_with_operator(op: SurfaceOperator, wall_loads: Path | str, t_edges, out_dir: Path | str, *,
                         mode: str = "production", fail_above: float = 0.02,
                         metadata: Optional[Dict[str, Any]] = None) -> Tuple[Any, float]:
    """cavitation-kratos-export of ``wall_loads`` onto the operator's surface (conservative path).

    Returns (ExportResult, operator_mismatch): operator_mismatch = max over knots and conditions of
    |-f_a . n_a - (W p_k)_a| / max |W p| (the normal point forces written are the operator's).
    OperatorFileError when the wall-loads file is not the one the operator was built for.
    """
    from ..contracts.kratos_loads import read_kratos_loads
    from ..export import export_kratos_loads

    wl = Path(wall_loads)
    sha = sha256_file(wl)
    if op.wall_loads_sha256 and sha != op.wall_loads_sha256:
        raise OperatorFileError(f"{wl}: SHA-256 {sha[:12]}... is not the wall-loads file the operator was built "
                                f"for ({op.wall_loads_sha256[:12]}...)")
    meta = {"exporter_commit": "models.load_transfer.export", "command": "models.load_transfer.kratos.handover",
            "operator_surface_sha256": op.surface_sha256}
    meta.update(metadata or {})
    ex = export_kratos_loads(wl, op.table, np.asarray(t_edges, dtype=np.float64), out_dir, mode=mode,
                             fail_above=fail_above, faces=op.faces, axis_origin=tuple(op.axis_origin), metadata=meta)
    d = read_kratos_loads(ex.path)
    ids = np.asarray(d["conditions/ids"], dtype=np.int64)
    row = pd.Series(np.arange(len(op.table)), index=op.table["condition_id"].to_numpy())
    if set(ids.tolist()) != set(row.index.tolist()):
        raise OperatorFileError(f"{ex.path}: conditions/ids: the export's conditions are not the operator's")
    idx = row.loc[ids].to_numpy()
    f = np.asarray(d["loads/point_force"], dtype=np.float64)  # (Nt, Nc, 3)
    n = np.asarray(d["conditions/outward_normal"], dtype=np.float64)
    normal_load = -np.einsum("tcj,cj->tc", f, n)
    p = np.asarray(d["source/pressure_gauge"], dtype=np.float64)  # (Nt, Nr) the rings on R_map
    Wp = np.asarray(op.W @ p.T).T[:, idx]
    scale = float(np.max(np.abs(Wp))) or 1.0
    return ex, float(np.max(np.abs(normal_load - Wp)) / scale)
