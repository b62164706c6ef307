"""Debug map of ring-averaged pressure onto quadrature points (seed 000, ``map_axisymmetric_load``).

The ring average of the ring that contains each point is evaluated at the point (zero beyond the
last radial edge and beyond R_map, no extrapolation), then a uniform pressure correction
delta(t) is added to every point inside the common disk so that the total normal force equals
F_B(t) = sum_i p_i(t) |A_i ∩ disk(R_map)| at every knot. Among all corrections c_a with
sum_a c_a A_a = F_B - F_M the uniform one has the smallest L2 norm (int c^2 dA): this is the
"uniform correction of minimum L2 norm". Force is restored at every knot, hence the impulse of
the piecewise-linear interpolant over any time grid. It does NOT conserve the force ring by ring
(``ring_error``): a debug tool, not the production operator (ConservativePressureOperator).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np


@dataclass(frozen=True)
class PointRings:
    """Which ring each point lies in. ``index`` (Nc,) is -1 outside radial_edges / R_map."""

    r: np.ndarray  # (Nc,) m, distance to the axis
    index: np.ndarray  # (Nc,) int
    inside: np.ndarray  # (Nc,) bool, r <= R_map
    r_map: float  # m
    common_areas: np.ndarray  # (Nr,) m^2, |A_i ∩ disk(R_map)|


def point_rings(points, radial_edges, *, axis_origin: Sequence[float] = (0.0, 0.0),
                r_map: Optional[float] = None) -> PointRings:
    """Locate points (Nc, 2|3) m in the rings of ``radial_edges`` (Nr+1,) m about ``axis_origin``.

    R_map = min(radial_edges[-1], r_map): the common disk. A point on an edge belongs to the
    outer ring, a point at r = radial_edges[-1] (<= R_map) to the last ring.
    """
    pts = np.asarray(points, dtype=np.float64)
    edges = np.asarray(radial_edges, dtype=np.float64)
    rm = float(edges[-1] if r_map is None else min(float(r_map), edges[-1]))
    r = np.hypot(pts[:, 0] - axis_origin[0], pts[:, 1] - axis_origin[1])
    idx = np.searchsorted(edges, r, side="right") - 1
    idx = np.where(r == edges[-1], edges.size - 2, idx)
    inside = r <= rm
    valid = inside & (idx >= 0) & (idx < edges.size - 1)
    idx = np.where(valid, idx, -1)
    e = np.minimum(edges, rm)
    return PointRings(r=r, index=idx, inside=inside, r_map=rm, common_areas=np.pi * (e[1:] ** 2 - e[:-1] ** 2))


def sample_ring_values(values, rings: PointRings) -> np.ndarray:
    """Ring values (..., Nr) evaluated at the points: (..., Nc), zero where index = -1."""
    v = np.asarray(values, dtype=np.float64)
    padded = np.concatenate([v, np.zeros(v.shape[:-1] + (1,))], axis=-1)
    return padded[..., rings.index]  # index -1 picks the zero pad


@dataclass(frozen=True)
class DebugMapResult:
    """Mapped pressure (Nt, Nc) Pa, its correction (Nt,) Pa and the force bookkeeping (N)."""

    pressure: np.ndarray  # (Nt, Nc) Pa, sampled + uniform correction inside the common disk
    correction: np.ndarray  # (Nt,) Pa
    source_force: np.ndarray  # (Nt,) F_B on the common disk
    sampled_force: np.ndarray  # (Nt,) sum_a p_sampled A_a (before correction)
    target_force: np.ndarray  # (Nt,) sum_a p_a A_a (after correction)
    ring_source_force: np.ndarray  # (Nt, Nr) p_i |A_i ∩ disk(R_map)|
    ring_target_force: np.ndarray  # (Nt, Nr) sum of p_a A_a over the points of ring i
    rings: PointRings

    def ring_error(self) -> float:
        """max_{t,i} |F_i^M - F_i^B| / max_t |F_B|: the local (per-ring) non-conservation."""
        scale = float(np.max(np.abs(self.source_force)))
        return float(np.max(np.abs(self.ring_target_force - self.ring_source_force))) / scale


def map_axisymmetric_load(radial_edges, pressure, points, areas, *, axis_origin=(0.0, 0.0),
                          r_map: Optional[float] = None) -> DebugMapResult:
    """Debug map: ring averages at the points + uniform min-L2 correction restoring F_B(t).

    radial_edges (Nr+1,) m; pressure (Nt, Nr) or (Nr,) Pa ring averages; points (Nc, 2|3) m;
    areas (Nc,) m^2 tributary areas. Points outside the common disk receive zero pressure.

    Example: two points (x = 0.25, 0.75 m) with areas 0.5, 1 m² under a uniform 1 bar on the unit
    disk: the correction lifts both so that the target force is p0 π R².

    >>> import numpy as np
    >>> from models.load_transfer import map_axisymmetric_load
    >>> res = map_axisymmetric_load(np.array([0.0, 0.5, 1.0]), np.array([1.0e5, 1.0e5]),
    ...                             np.array([[0.25, 0.0], [0.75, 0.0]]), np.array([0.5, 1.0]))
    >>> res.pressure.shape                                # (Nt, Nc), Pa
    (1, 2)
    >>> round(float(res.target_force[0] / (1.0e5 * np.pi)), 12), round(float(res.correction[0]), 3)
    (1.0, 109439.51)
    """
    p = np.atleast_2d(np.asarray(pressure, dtype=np.float64))
    a = np.asarray(areas, dtype=np.float64)
    rings = point_rings(points, radial_edges, axis_origin=axis_origin, r_map=r_map)
    sampled = sample_ring_values(p, rings)
    area_inside = float(a[rings.inside].sum())
    if not area_inside > 0.0:
        raise ValueError("points: no point lies inside the common disk (R_map); nothing to map onto")
    source = p @ rings.common_areas
    before = sampled @ a
    delta = (source - before) / area_inside
    mapped = sampled + delta[:, None] * rings.inside[None, :]
    nr = p.shape[1]
    # per-ring bookkeeping: points grouped by ring (outside points dropped)
    onehot = np.zeros((rings.index.size, nr + 1))
    onehot[np.arange(rings.index.size), rings.index] = a  # index -1 -> last (dropped) column
    ring_target = mapped @ onehot[:, :nr]
    return DebugMapResult(pressure=mapped, correction=delta, source_force=source, sampled_force=before,
                          target_force=mapped @ a, ring_source_force=p * rings.common_areas[None, :],
                          ring_target_force=ring_target, rings=rings)
