"""cavitation-kratos-export: wall-loads file + surface quadrature table -> kratos-point-loads file.

Two paths give each Kratos point-load condition a (tributary area A_a, outward normal n_a) its
point force f_a = -p_a A_a n_a [N] (POINT_LOAD, never multiplied by an area again):

* conservative (``faces`` given, mapping_method ``face-conservative``, the production operator):
  the traction is integrated exactly over each exposed face, clipped by the ring circles, and split
  among the face's conditions with the face's shape functions (:mod:`models.load_transfer.face_loads`):
  f_a = -n_a Σ_i W_ai p_i, p_a = (W p)_a / A_a. Σ_a f_a equals the source force on the common area
  and each face's conditions its exact face integral, both to round-off. The face table is written
  (faces/*, kratos-point-loads 1.1) and re-checked by the validator.
* sampled (no face table, ``quadrature-sampled``): the ring average of the ring that contains the
  condition, p_a(t_k) = p_i(t_k). Not conservative ring by ring; the export says so in its metadata
  (``point_loads: sampled``) and log.

Zero beyond the last radial edge and beyond R_map (no extrapolation). The common disk is
R_map = min(radial_edges[-1], r_map); the tributary areas (sampled) or the faces (conservative)
inside it must cover pi R_map^2 (``area_rtol``).

Mapping-only error: the source force F_B(t) = sum_i p_i |A_i ∩ disk(R_map)| and the target force
F_M(t) = -sum_a f_a . n_a are both averaged exactly over every step of the target time grid
(exact_time_average), so the time synchronisation is exact for both and the difference is the
spatial mapping alone: e_F = max_n |F_M - F_B| / max_n |F_B|, e_J = |J_M - J_B| / max(|J_B|, J_scale).
Above ``fail_above`` (2 %) the export fails and leaves no output file (checked before writing,
and again on the written diagnostics before the atomic rename).

``method="l2-uniform-correction-debug"`` adds the uniform min-L2 correction of
:func:`models.load_transfer.debug_map.map_axisymmetric_load` (force and impulse restored, no local
conservation); debug mode only.
"""
from __future__ import annotations

import logging
import time as _time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

import numpy as np

from .contracts.kratos_loads import KratosWriteStats, write_kratos_loads
from .contracts.table import QuadratureTable, read_table, validate_table
from .contracts.wall_loads import WallLoads, read_wall_loads, read_wall_loads_csv, sha256_file
from .debug_map import point_rings, sample_ring_values

log = logging.getLogger(__name__)

METHODS = ("face-conservative", "quadrature-sampled", "l2-uniform-correction-debug")
EXPORT_FILLS = ("source_case_id", "table_sha256", "e_F", "e_J")  # metadata the export computes itself


class ExportInputError(ValueError):
    """Bad export input (file, table, time grid, area check): the CLI exits 2.

    Example (written into a temporary directory): steps beyond the source history are refused.

    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from models.load_transfer import ExportInputError, ExportResult, export_kratos_loads
    >>> from models.load_transfer.contracts.table import polar_quadrature_table
    >>> from models.load_transfer.contracts.wall_loads import write_wall_loads
    >>> meta = dict(basilisk_commit="b", exporter_commit="e", compiler="c", command="doc", R0=1e-3, H=2e-3,
    ...             gamma=1.4, reference_pressure=1e5, levels=[3, 9], delta_min=1e-5, output_cadence=1e-6,
    ...             convergence_study_id="s")
    >>> tmp = tempfile.TemporaryDirectory()
    >>> src = write_wall_loads(pathlib.Path(tmp.name) / "src.wall-loads.v1.h5", case_id="src",
    ...                        time=np.linspace(0.0, 1e-4, 5), radial_edges=np.linspace(0.0, 0.01, 5),
    ...                        pressure=np.full((5, 4), 2.0e5), metadata=meta, configuration="c: 1")
    >>> table = polar_quadrature_table(radius=0.01, n_radial=4, n_theta=8)
    >>> try:
    ...     export_kratos_loads(src, table, np.linspace(0.0, 2e-4, 5), tmp.name, metadata=meta)
    ... except ExportInputError:
    ...     print("refused")
    refused
    >>> sorted(p.name for p in pathlib.Path(tmp.name).iterdir())   # nothing half-written
    ['src.wall-loads.v1.h5']
    >>> tmp.cleanup()
    """


class MappingError(RuntimeError):
    """The mapping-only error exceeds the threshold: no output file is written (CLI exit 1)."""

    def __init__(self, message: str, e_F: float, e_J: float):
        super().__init__(message)
        self.e_F, self.e_J = e_F, e_J


@dataclass
class ExportResult:
    """Outcome of an export (forces in N, impulses in N s).

    Example (written into a temporary directory): the impulse of a uniform 2 bar held 0.1 ms on
    a disk of 1 cm is J = p0 π R² T.

    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from models.load_transfer import ExportInputError, ExportResult, export_kratos_loads
    >>> from models.load_transfer.contracts.table import polar_quadrature_table
    >>> from models.load_transfer.contracts.wall_loads import write_wall_loads
    >>> meta = dict(basilisk_commit="b", exporter_commit="e", compiler="c", command="doc", R0=1e-3, H=2e-3,
    ...             gamma=1.4, reference_pressure=1e5, levels=[3, 9], delta_min=1e-5, output_cadence=1e-6,
    ...             convergence_study_id="s")
    >>> tmp = tempfile.TemporaryDirectory()
    >>> src = write_wall_loads(pathlib.Path(tmp.name) / "src.wall-loads.v1.h5", case_id="src",
    ...                        time=np.linspace(0.0, 1e-4, 5), radial_edges=np.linspace(0.0, 0.01, 5),
    ...                        pressure=np.full((5, 4), 2.0e5), metadata=meta, configuration="c: 1")
    >>> table = polar_quadrature_table(radius=0.01, n_radial=4, n_theta=8)
    >>> res = export_kratos_loads(src, table, np.linspace(0.0, 1e-4, 5), tmp.name, metadata=meta)
    >>> isinstance(res, ExportResult), round(res.J_B / (2.0e5 * np.pi * 0.01**2 * 1e-4), 12)
    (True, 1.0)
    >>> tmp.cleanup()
    """

    path: Optional[Path]
    e_F: float
    e_J: float
    F_B_steps: np.ndarray
    F_M_steps: np.ndarray
    J_B: float
    J_M: float
    area_sum: float
    area_exact: float
    r_map: float
    n_conditions: int
    n_outside: int
    method: str
    seconds: Dict[str, float] = field(default_factory=dict)
    point_loads: str = "sampled"  # conservative | sampled
    column_error: float = float("nan")  # conservative: max_i |Σ_a W_ai - A_i^common| / A_i
    write: Optional[KratosWriteStats] = None


def mapping_errors(time, F_M, F_B, t_edges, *, unloaded_ends: bool = False, J_scale: float = 0.0):
    """(e_F, e_J, F_M_steps, F_B_steps, J_M, J_B) of knot forces over the target steps ``t_edges``.

    t_edges (Nsteps+1,) s; time (Nt,) s; F_M, F_B (Nt,) N knot forces of the map and the source.
    e_F = max |F̄_M − F̄_B| / max |F̄_B| over the steps, e_J = |J_M − J_B| / max(|J_B|, J_scale).

    >>> import numpy as np
    >>> from models.load_transfer import mapping_errors
    >>> e_F, e_J, fm, fb, jm, jb = mapping_errors(np.array([0.0, 1.0]), np.array([1.0, 3.0]),
    ...                                           np.array([1.0, 3.0]) * 1.01, np.array([0.0, 0.5, 1.0]))
    >>> fb, round(jb, 12)                                 # exact step means and impulse of the linear F_B
    (array([1.515, 2.525]), 2.02)
    >>> round(101 * e_F, 12), round(101 * e_J, 12)       # 1 % high source: both errors are 1/101
    (1.0, 1.0)
    """
    from .time_average import exact_time_average

    both = exact_time_average(time, np.stack([F_M, F_B], axis=1), t_edges, unloaded_ends=unloaded_ends)
    fm, fb = both[:, 0], both[:, 1]
    dt = np.diff(np.asarray(t_edges, dtype=np.float64))
    jm, jb = float(fm @ dt), float(fb @ dt)
    scale = float(np.max(np.abs(fb)))
    e_F = float(np.max(np.abs(fm - fb))) / scale if scale > 0 else float("nan")
    den = max(abs(jb), float(J_scale))
    e_J = abs(jm - jb) / den if den > 0 else float("nan")
    return e_F, e_J, fm, fb, jm, jb


def export_kratos_loads(
    wall_loads: Any,
    table: Any,
    t_edges: Any,
    out: Path | str,
    *,
    r_map: Optional[float] = None,
    axis_origin: Sequence[float] = (0.0, 0.0),
    area_rtol: float = 1.0e-6,
    method: Optional[str] = None,
    faces: Any = None,
    partial_surface: bool = False,
    mode: str = "production",
    fail_above: float = 0.02,
    J_scale: float = 0.0,
    unloaded_ends: bool = False,
    case_id: Optional[str] = None,
    metadata: Optional[Dict[str, Any]] = None,
    block_rows: Optional[int] = None,
    validate: str = "structure",
) -> ExportResult:
    """Export ``wall_loads`` (path or WallLoads) onto ``table`` (path, DataFrame or QuadratureTable).

    t_edges (Nsteps+1,) s: the target (Kratos) step edges. out: output directory or file path.
    faces: FaceTable, or a ``.npz`` with ``vertices`` (Nf, Kv, 3) and ``condition_ids`` (Nf, Kc)
    (the table's condition ids of each face): the conservative path. method: default
    ``face-conservative`` with faces, ``quadrature-sampled`` without. partial_surface (faces only):
    the faces need not cover disk(R_map); the common area is their coverage, and F_B is the source
    integral over it (seed: the Basilisk integral is cut to the common area too).
    Raises ExportInputError for bad input, MappingError when e_F or e_J > fail_above.

    Example (written into a temporary directory): a uniform 2 bar on a disk of 1 cm maps with
    F = p0 π R² at every step, so e_F = e_J = 0.

    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from models.load_transfer import ExportInputError, ExportResult, export_kratos_loads
    >>> from models.load_transfer.contracts.table import polar_quadrature_table
    >>> from models.load_transfer.contracts.wall_loads import write_wall_loads
    >>> meta = dict(basilisk_commit="b", exporter_commit="e", compiler="c", command="doc", R0=1e-3, H=2e-3,
    ...             gamma=1.4, reference_pressure=1e5, levels=[3, 9], delta_min=1e-5, output_cadence=1e-6,
    ...             convergence_study_id="s")
    >>> tmp = tempfile.TemporaryDirectory()
    >>> src = write_wall_loads(pathlib.Path(tmp.name) / "src.wall-loads.v1.h5", case_id="src",
    ...                        time=np.linspace(0.0, 1e-4, 5), radial_edges=np.linspace(0.0, 0.01, 5),
    ...                        pressure=np.full((5, 4), 2.0e5), metadata=meta, configuration="c: 1")
    >>> table = polar_quadrature_table(radius=0.01, n_radial=4, n_theta=8)
    >>> res = export_kratos_loads(src, table, np.linspace(0.0, 1e-4, 5), tmp.name, metadata=meta)
    >>> res.path.name, res.n_conditions == len(table)
    ('src.kratos-loads.v1.h5', True)
    >>> bool(np.allclose(res.F_B_steps, 2.0e5 * np.pi * 0.01**2, rtol=1e-12)), res.e_F < 1e-12, res.e_J < 1e-12
    (True, True, True)
    >>> tmp.cleanup()
    """
    secs: Dict[str, float] = {}
    c0 = _time.perf_counter()
    if method is None:
        method = "face-conservative" if faces is not None else "quadrature-sampled"
    if partial_surface and faces is None:
        raise ExportInputError("partial_surface: needs a face table (the common area is the faces' coverage)")
    if (method == "face-conservative") != (faces is not None):
        raise ExportInputError(f"method: {method!r} " + ("needs a face table (faces)" if faces is None else
                                                        "does not use a face table; drop faces or the method"))
    if method not in METHODS:
        raise ExportInputError(f"method: {method!r} must be one of {list(METHODS)}")
    if method == "l2-uniform-correction-debug" and mode == "production":
        raise ExportInputError(f"method: {method!r} is a debug map; allowed only in debug mode")
    if mode == "production":
        from .contracts.spec import load_spec

        required = load_spec("kratos-point-loads").metadata.get("required_in_production", [])
        missing = [k for k in required if k not in EXPORT_FILLS and not (metadata or {}).get(k)]
        if missing:
            raise ExportInputError(f"metadata: {', '.join(missing)}: required in production mode (kratos-point-loads spec)")
    try:
        if isinstance(wall_loads, WallLoads):
            wl = wall_loads
        elif str(wall_loads).lower().endswith(".csv"):
            if mode == "production":
                raise ExportInputError(f"{wall_loads}: CSV wall loads are a debug input only (use --mode debug)")
            wl = read_wall_loads_csv(wall_loads)
        else:
            wl = read_wall_loads(wall_loads, mode=mode)
        if isinstance(table, QuadratureTable):
            qt = table
        elif hasattr(table, "columns"):
            qt = validate_table(table)
        else:
            qt = read_table(table)
    except ExportInputError:
        raise
    except (ValueError, OSError) as exc:
        raise ExportInputError(str(exc)) from exc
    secs["read"] = _time.perf_counter() - c0

    edges = wl.radial_edges
    if r_map is not None and not r_map > 0:
        raise ExportInputError(f"r_map: must be > 0, got {r_map!r}")
    rings = point_rings(qt.coordinates, edges, axis_origin=axis_origin, r_map=r_map)
    area_exact = float(np.pi * rings.r_map**2)
    P = wl.pressure
    nn = np.einsum("ij,ij->i", qt.normals, qt.normals)
    nr = edges.size - 1
    fc = None
    if method == "face-conservative":
        fc = _conservative(faces, qt, edges, rings, axis_origin)
        area_sum = fc.covered
    else:
        area_sum = float(qt.areas[rings.inside].sum())
    rel = abs(area_sum - area_exact) / area_exact
    if partial_surface:
        if not (0.0 < area_sum <= area_exact * (1.0 + area_rtol)):
            raise ExportInputError(f"faces/vertices: common area {area_sum!r} m^2 must lie in (0, pi R_map^2 = "
                                   f"{area_exact!r}] m^2 (overlapping or empty faces)")
        log.info("export: partial surface: common area %.6g m^2 = %.4f of pi R_map^2", area_sum, area_sum / area_exact)
    elif not rel <= area_rtol:
        what = "faces/vertices: area of the faces" if fc is not None else "conditions/tributary_area: sum"
        raise ExportInputError(
            f"{what} over the common disk R_map={rings.r_map!r} m is {area_sum!r} m^2, "
            f"pi R_map^2 = {area_exact!r} m^2 (relative error {rel:.3g} > area_rtol {area_rtol:g})")
    te = np.asarray(t_edges, dtype=np.float64)

    # knot forces from ring weights: F_M = sum_a p_a A_a |n_a|^2 = P @ w (the written -sum f.n)
    if fc is not None:
        w = fc.column_sums
    else:
        w = np.bincount(rings.index[rings.index >= 0], weights=(qt.areas * nn)[rings.index >= 0], minlength=nr)
        log.warning("export: no face table: point loads SAMPLED (ring average at each condition x its tributary "
                    "area); force is not conserved ring by ring. Give the face table for the conservative path.")
    common = fc.common_areas if fc is not None else rings.common_areas
    F_B = P @ common
    F_M = P @ w
    delta = np.zeros(P.shape[0])
    if method == "l2-uniform-correction-debug":
        delta = (F_B - F_M) / area_sum  # uniform pressure correction of minimum L2 norm
        F_M = F_M + delta * float((qt.areas * nn)[rings.inside].sum())
    try:
        e_F, e_J, fm, fb, jm, jb = mapping_errors(wl.time, F_M, F_B, te, unloaded_ends=unloaded_ends, J_scale=J_scale)
    except ValueError as exc:
        raise ExportInputError(f"target time grid: {exc}") from exc
    secs["map"] = _time.perf_counter() - c0 - secs["read"]
    n_out = int((rings.index < 0).sum())
    res = ExportResult(path=None, e_F=e_F, e_J=e_J, F_B_steps=fb, F_M_steps=fm, J_B=jb, J_M=jm, area_sum=area_sum,
                       area_exact=area_exact, r_map=rings.r_map, n_conditions=qt.size, n_outside=n_out, method=method,
                       seconds=secs, point_loads="conservative" if fc is not None else "sampled",
                       column_error=fc.column_error if fc is not None else float("nan"))
    log.info("export %s: e_F=%.3e e_J=%.3e (R_map=%g m, %d conditions, %d outside)", wl.case_id, e_F, e_J,
             rings.r_map, qt.size, n_out)
    _gate(e_F, e_J, fail_above)

    def condition_pressure(sl: slice) -> np.ndarray:
        if fc is not None:  # p_a = (W p)_a / A_a: f_a = -p_a A_a n_a = -n_a (W p)_a
            return np.asarray(fc.W @ P[sl].T).T / qt.areas[None, :]
        p = sample_ring_values(P[sl], rings)
        if method == "l2-uniform-correction-debug":
            p = p + delta[sl, None] * rings.inside[None, :]
        return p

    def before_commit(target_force: np.ndarray, source_force: np.ndarray) -> None:
        e_F2, e_J2, *_ = mapping_errors(wl.time, target_force, source_force, te, unloaded_ends=unloaded_ends,
                                        J_scale=J_scale)
        res.e_F, res.e_J = e_F2, e_J2
        _gate(e_F2, e_J2, fail_above)

    cid = case_id or wl.case_id
    meta = {"source_case_id": wl.case_id, "table_sha256": qt.sha256, "e_F": e_F, "e_J": e_J,
            "target_grid": {"t_start": float(te[0]), "t_end": float(te[-1]), "n_steps": int(te.size - 1)},
            "point_loads": res.point_loads}
    if fc is None:
        meta["point_loads_note"] = ("sampled: ring average at each condition times its tributary area (no face "
                                    "table); not conservative ring by ring")
    else:
        meta["face_column_error"] = fc.column_error
    meta.update(metadata or {})
    c1 = _time.perf_counter()
    stats = write_kratos_loads(
        out, case_id=cid, time=wl.time, radial_edges=edges, source_pressure=P, ids=qt.ids,
        coordinates=qt.coordinates, areas=qt.areas, normals=qt.normals, condition_pressure=condition_pressure,
        r_map=rings.r_map, axis_origin=axis_origin, mapping_method=method,
        source_schema_version=wl.schema_version if wl.schema_version != "csv-debug" else "0.0.0",
        source_sha256=wl.sha256 or sha256_file(wl.path), metadata=meta, mode=mode, block_rows=block_rows,
        validate=validate, before_commit=before_commit,
        faces=None if fc is None else {"vertices": fc.faces.vertices, "condition_index": fc.faces.condition_index,
                                       "force": lambda sl: P[sl] @ fc.face_areas_T},
        common_areas=None if fc is None else fc.common_areas)
    secs["write"] = _time.perf_counter() - c1
    res.path = stats.path
    res.write = stats
    return res


@dataclass
class _Conservative:
    faces: Any
    W: Any  # (Nc, Nr) CSR m²
    column_sums: np.ndarray  # (Nr,) m²
    column_error: float
    face_areas_T: Any  # (Nr, Nf) CSR m²: |face ∩ ring ∩ disk(R_map)|
    covered: float  # m², faces ∩ disk(R_map)
    common_areas: np.ndarray  # (Nr,) m², Σ_f |face ∩ ring_i ∩ disk(R_map)|


def _conservative(faces, qt: QuadratureTable, edges, rings, axis_origin) -> _Conservative:
    """The face-integrated operator W on the common disk, checked against the table and the rings."""
    from .face_loads import (FaceTable, FaceTableError, condition_areas, face_condition_matrix,
                             face_ring_areas)

    try:
        ft = faces if isinstance(faces, FaceTable) else _read_faces(faces, qt)
        W = face_condition_matrix(ft, qt.coordinates, edges, axis_origin=axis_origin, r_map=rings.r_map)
        A = condition_areas(ft, qt.coordinates, axis_origin=axis_origin)
    except FaceTableError as exc:
        raise ExportInputError(f"{faces if not isinstance(faces, FaceTable) else 'faces'}: {exc}") from exc
    rel = np.abs(A - qt.areas) / qt.areas
    if np.any(rel > 1e-9):
        a = int(np.argmax(rel > 1e-9))
        raise ExportInputError(
            f"conditions/tributary_area: condition id {int(qt.ids[a])} has {float(qt.areas[a])!r} m^2 but its face "
            f"shape function integrates to {float(A[a])!r} m^2 (relative {rel[a]:.3g} > 1e-9): the table and the "
            f"face table disagree")
    sums = np.asarray(W.sum(axis=0)).ravel()
    ring = rings.common_areas
    scale = np.where(ring > 0, ring, 1.0)
    Wf = face_ring_areas(ft.vertices, edges, axis_origin=axis_origin, r_map=rings.r_map)
    common = np.asarray(Wf.sum(axis=0)).ravel()
    covered = float(common.sum())
    err = float(np.max(np.abs(sums - common) / scale))
    log.info("export: conservative point loads on %d %s faces, max column error %.2e", ft.size, ft.kind, err)
    return _Conservative(faces=ft, W=W.tocsr(), column_sums=sums, column_error=err, face_areas_T=Wf.T.tocsr(),
                         covered=covered, common_areas=common)


def _read_faces(path, qt: QuadratureTable):
    """A face table file (.npz: vertices (Nf, Kv, 3) m, condition_ids (Nf, Kc)) as a FaceTable."""
    from .face_loads import FaceTable, FaceTableError

    p = Path(path)
    try:
        with np.load(p) as z:
            verts = np.asarray(z["vertices"], dtype=np.float64)
            cid = np.asarray(z["condition_ids"], dtype=np.int64)
    except (OSError, ValueError, KeyError) as exc:
        raise ExportInputError(f"{p}: cannot read the face table (.npz with vertices, condition_ids): {exc}") from exc
    order = np.argsort(qt.ids)
    pos = np.searchsorted(qt.ids[order], cid)
    pos = np.clip(pos, 0, qt.size - 1)
    found = qt.ids[order][pos] == cid
    if not np.all(found):
        bad = int(cid.ravel()[np.flatnonzero(~found.ravel())[0]])
        raise FaceTableError(f"condition_ids: condition id {bad} is not in the quadrature table")
    return FaceTable(vertices=verts, condition_index=order[pos])


def write_faces(path: Path | str, faces, ids) -> Path:
    """Write ``faces`` (FaceTable) as the export's face-table file (.npz, condition ids), atomically."""
    from .contracts._atomic import atomic_target

    target = Path(path)
    with atomic_target(target) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, vertices=faces.vertices, condition_ids=np.asarray(ids)[faces.condition_index])
    return target


def _gate(e_F: float, e_J: float, fail_above: float) -> None:
    if not (e_F <= fail_above and e_J <= fail_above):
        raise MappingError(f"mapping-only error above {fail_above:.0%}: e_F = {e_F:.4g}, e_J = {e_J:.4g}; "
                           f"refine the quadrature table (no output file written)", e_F, e_J)
