"""cavitation-kratos-export: wall-loads file + surface quadrature table -> kratos-point-loads file.

Each Kratos point-load condition a (tributary area A_a, outward normal n_a) receives the ring
average of the ring that contains it, p_a(t_k) = p_i(t_k) (zero beyond the last radial edge and
beyond R_map: no extrapolation), and the point force f_a = -p_a A_a n_a [N] (POINT_LOAD, never
multiplied by an area again). The common disk is R_map = min(radial_edges[-1], r_map); the
tributary areas inside it must sum to pi R_map^2 (``area_rtol``).

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

METHODS = ("quadrature-sampled", "l2-uniform-correction-debug")
EXPORT_FILLS = ("source_case_id", "table_sha256", "e_F", "e_J")  # metadata the export computes itself


class ExportInputError(ValueError):
    """Bad export input (file, table, time grid, area check): the CLI exits 2."""


class MappingError(RuntimeError):
    """The mapping-only error exceeds the threshold: no output file is written (CLI exit 1)."""

    def __init__(self, message: str, e_F: float, e_J: float):
        super().__init__(message)
        self.e_F, self.e_J = e_F, e_J


@dataclass
class ExportResult:
    """Outcome of an export (forces in N, impulses in N s)."""

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
    write: Optional[KratosWriteStats] = None


def mapping_errors(time, F_M, F_B, t_edges, *, unloaded_ends: bool = False, J_scale: float = 0.0):
    """(e_F, e_J, F_M_steps, F_B_steps, J_M, J_B) of knot forces over the target steps ``t_edges``."""
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
    method: str = "quadrature-sampled",
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
    Raises ExportInputError for bad input, MappingError when e_F or e_J > fail_above.
    """
    secs: Dict[str, float] = {}
    c0 = _time.perf_counter()
    if method not in METHODS:
        raise ExportInputError(f"method: {method!r} must be one of {list(METHODS)}")
    if method != "quadrature-sampled" and mode == "production":
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
    area_sum = float(qt.areas[rings.inside].sum())
    rel = abs(area_sum - area_exact) / area_exact
    if not rel <= area_rtol:
        raise ExportInputError(
            f"conditions/tributary_area: sum over the common disk R_map={rings.r_map!r} m is {area_sum!r} m^2, "
            f"pi R_map^2 = {area_exact!r} m^2 (relative error {rel:.3g} > area_rtol {area_rtol:g})")
    te = np.asarray(t_edges, dtype=np.float64)

    # knot forces from ring weights: F_M = sum_a p_a A_a |n_a|^2 = P @ w (the written -sum f.n)
    P = wl.pressure
    nn = np.einsum("ij,ij->i", qt.normals, qt.normals)
    nr = edges.size - 1
    w = np.bincount(rings.index[rings.index >= 0], weights=(qt.areas * nn)[rings.index >= 0], minlength=nr)
    F_B = P @ rings.common_areas
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
                       seconds=secs)
    log.info("export %s: e_F=%.3e e_J=%.3e (R_map=%g m, %d conditions, %d outside)", wl.case_id, e_F, e_J,
             rings.r_map, qt.size, n_out)
    _gate(e_F, e_J, fail_above)

    def condition_pressure(sl: slice) -> np.ndarray:
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
            "target_grid": {"t_start": float(te[0]), "t_end": float(te[-1]), "n_steps": int(te.size - 1)}}
    meta.update(metadata or {})
    c1 = _time.perf_counter()
    stats = write_kratos_loads(
        out, case_id=cid, time=wl.time, radial_edges=edges, source_pressure=P, ids=qt.ids,
        coordinates=qt.coordinates, areas=qt.areas, normals=qt.normals, condition_pressure=condition_pressure,
        r_map=rings.r_map, axis_origin=axis_origin, mapping_method=method,
        source_schema_version=wl.schema_version if wl.schema_version != "csv-debug" else "0.0.0",
        source_sha256=wl.sha256 or sha256_file(wl.path), metadata=meta, mode=mode, block_rows=block_rows,
        validate=validate, before_commit=before_commit)
    secs["write"] = _time.perf_counter() - c1
    res.path = stats.path
    res.write = stats
    return res


def _gate(e_F: float, e_J: float, fail_above: float) -> None:
    if not (e_F <= fail_above and e_J <= fail_above):
        raise MappingError(f"mapping-only error above {fail_above:.0%}: e_F = {e_F:.4g}, e_J = {e_J:.4g}; "
                           f"refine the quadrature table (no output file written)", e_F, e_J)
