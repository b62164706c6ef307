"""Named relations between datasets, used by the specs' ``derived`` entries.

Each relation is a generator ``rel(read, attrs, shape) -> (start, block)`` that yields the
recomputed value of the derived dataset block by block along axis 0 (``read(name, sl)`` reads
rows ``sl`` of an input; ``attrs`` are the root attributes named by the spec). The validator
compares every block with the stored rows; the writers use the same functions, so a file is
self-consistent by construction. Streaming keeps memory bounded for (Nt, Nc, 3) datasets.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterator, Mapping, Tuple

import numpy as np

Reader = Callable[[str, slice], np.ndarray]
Relation = Callable[..., Iterator[Tuple[int, np.ndarray]]]


def ring_areas(edges: np.ndarray, r_map: float | None = None) -> np.ndarray:
    """pi (r_{i+1}^2 - r_i^2) [m^2]; with ``r_map`` the part of each ring inside disk(r_map)."""
    e = np.asarray(edges, dtype=np.float64)
    if r_map is not None:
        e = np.minimum(e, float(r_map))
    return np.pi * (e[1:] ** 2 - e[:-1] ** 2)


def ring_force(pressure: np.ndarray, edges: np.ndarray, r_map: float | None = None) -> np.ndarray:
    """F_B = sum_i p_i A_i [N] for pressure (..., Nr) [Pa]."""
    return np.asarray(pressure, dtype=np.float64) @ ring_areas(edges, r_map)


def trapezoid_impulse(values: np.ndarray, time: np.ndarray) -> np.ndarray:
    """Trapezoidal time integral of values (Nt, ...) over time (Nt,) [unit*s]."""
    v = np.asarray(values, dtype=np.float64)
    dt = np.diff(np.asarray(time, dtype=np.float64))
    return np.tensordot(dt, 0.5 * (v[1:] + v[:-1]), axes=(0, 0))


def point_forces(pressure: np.ndarray, area: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """f_a = -p_a A_a n_a [N] for pressure (..., Nc) [Pa], area (Nc,) [m^2], normal (Nc, 3)."""
    an = np.asarray(area, dtype=np.float64)[:, None] * np.asarray(normal, dtype=np.float64)
    return -np.asarray(pressure, dtype=np.float64)[..., None] * an


def normal_force(force: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """F_M = -sum_a f_a . n_a [N] for force (..., Nc, 3)."""
    return -np.einsum("...ak,ak->...", force, normal)


def _blocks(n: int, rows: int) -> Iterator[slice]:
    for s in range(0, n, max(1, rows)):
        yield slice(s, min(n, s + rows))


def _rel_trapezoid(read: Reader, attrs: Mapping, shape: tuple, *, rows: int) -> Iterator:
    time = read("time", slice(None))
    nt = time.shape[0]
    acc = None
    prev = None
    for sl in _blocks(nt, rows):
        lo = sl.start if prev is None else sl.start - 1
        v = read("values", slice(lo, sl.stop))
        part = trapezoid_impulse(v, time[lo : sl.stop])
        acc = part if acc is None else acc + part
        prev = sl
    yield 0, acc


def _rel_ring_force(read: Reader, attrs: Mapping, shape: tuple, *, rows: int, r_map=None) -> Iterator:
    edges = read("edges", slice(None))
    for sl in _blocks(shape[0], rows):
        yield sl.start, ring_force(read("pressure", sl), edges, r_map)


def _rel_ring_force_common(read: Reader, attrs: Mapping, shape: tuple, *, rows: int) -> Iterator:
    return _rel_ring_force(read, attrs, shape, rows=rows, r_map=float(attrs["r_map"]))


def _rel_point_force(read: Reader, attrs: Mapping, shape: tuple, *, rows: int) -> Iterator:
    area = read("area", slice(None))
    normal = read("normal", slice(None))
    for sl in _blocks(shape[0], rows):
        yield sl.start, point_forces(read("pressure", sl), area, normal)


def _rel_normal_force(read: Reader, attrs: Mapping, shape: tuple, *, rows: int) -> Iterator:
    normal = read("normal", slice(None))
    for sl in _blocks(shape[0], rows):
        yield sl.start, normal_force(read("force", sl), normal)


def _rel_exact_face_force(read: Reader, attrs: Mapping, shape: tuple, *, rows: int) -> Iterator:
    """faces/force = P @ |face ∩ ring ∩ disk(r_map)|^T, the overlaps recomputed from faces/vertices."""
    from ..face_loads import face_ring_areas

    Wf = face_ring_areas(read("vertices", slice(None)), read("edges", slice(None)),
                         axis_origin=(float(attrs["x0"]), float(attrs["y0"])), r_map=float(attrs["r_map"]))
    for sl in _blocks(shape[0], rows):
        yield sl.start, np.asarray(Wf @ read("pressure", sl).T).T


def _rel_ring_force_faces(read: Reader, attrs: Mapping, shape: tuple, *, rows: int) -> Iterator:
    """F_B on the common area of the faces: P @ Σ_f |face ∩ ring_i ∩ disk(r_map)| (a partial surface)."""
    from ..face_loads import face_ring_areas

    common = np.asarray(face_ring_areas(read("vertices", slice(None)), read("edges", slice(None)),
                                        axis_origin=(float(attrs["x0"]), float(attrs["y0"])),
                                        r_map=float(attrs["r_map"])).sum(axis=0)).ravel()
    for sl in _blocks(shape[0], rows):
        yield sl.start, read("pressure", sl) @ common


def _rel_face_sum(read: Reader, attrs: Mapping, shape: tuple, *, rows: int) -> Iterator:
    """faces/force = Σ over each face's conditions of p_a A_a (the split partitions the face integral)."""
    area = read("area", slice(None))
    idx = read("index", slice(None))
    for sl in _blocks(shape[0], rows):
        load = read("pressure", sl) * area
        yield sl.start, load[:, idx].sum(axis=-1)


RELATIONS: Dict[str, Relation] = {
    "exact_face_force": _rel_exact_face_force,
    "face_sum_of_condition_loads": _rel_face_sum,
    "ring_force_common_faces": _rel_ring_force_faces,
    "trapezoid_in_time": _rel_trapezoid,
    "ring_force": _rel_ring_force,
    "ring_force_common_disk": _rel_ring_force_common,
    "point_force": _rel_point_force,
    "normal_force_of_point_forces": _rel_normal_force,
}
