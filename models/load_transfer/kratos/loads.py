"""A kratos-point-loads v1 file as seen by an axisymmetric (or plane) Kratos model.

The file is in cartesian xyz: its conditions lie in the half plane theta = 0 through the axis
(y = axis_origin_y, x - axis_origin_x = r >= 0) of a surface z = const, each with the area of its
ring. The meridian model (Kratos 2D) uses X = x - axis_origin_x (radius), Y = z (axial). Forces
map (f_x, f_y, f_z) -> (f_x, f_z); f_y must vanish (no azimuthal force in an axisymmetric model).
POINT_LOAD is the total ring force in N: it is never multiplied by 2 pi r.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Tuple

import numpy as np

from ..contracts.kratos_loads import read_kratos_loads
from ..time_average import exact_time_average

log = logging.getLogger(__name__)


class MappingAbort(RuntimeError):
    """The mapping-only error exceeded the threshold during a Kratos run (raised by the process)."""

    def __init__(self, message: str, step: int, e_F: float, e_J: float):
        super().__init__(message)
        self.step, self.e_F, self.e_J = step, e_F, e_J


class LoadsFileError(ValueError):
    """The file does not describe loads of the meridian model (names the field and the rule)."""


@dataclass
class MeridianLoads:
    """Point-force history of the conditions in meridian coordinates.

    ids (Nc,), points (Nc, 2) m, normals (Nc, 2), time (Nt,) s, forces (Nt, Nc, 2) N,
    source_force (Nt,) N (diagnostics/source_force, the ring force F_B of the source).
    """

    path: Path
    ids: np.ndarray
    points: np.ndarray
    normals: np.ndarray
    time: np.ndarray
    forces: np.ndarray
    source_force: np.ndarray
    case_id: str = ""

    def step_average(self, t0: float, t1: float) -> Tuple[np.ndarray, float]:
        """Exact means over [t0, t1] of the point forces (Nc, 2) N and of the source force (N).

        Only the knots around the step enter (the piecewise-linear interpolant restricted to the
        window is the same), so the cost does not grow with the length of the history.
        """
        t = self.time
        lo = max(int(np.searchsorted(t, t0, side="right")) - 1, 0)
        hi = min(int(np.searchsorted(t, t1, side="left")) + 1, t.size)
        if hi - lo < 2:
            lo, hi = max(0, hi - 2), max(hi, 2)
        sl = slice(lo, hi)
        edges = np.array([t0, t1], dtype=np.float64)
        f = exact_time_average(t[sl], self.forces[sl], edges)[0]
        fb = exact_time_average(t[sl], self.source_force[sl], edges)[0]
        return f, float(fb)

    def normal_force(self, forces: np.ndarray) -> float:
        """F_M = -sum_a f_a . n_a [N] (positive in compression) of (Nc, 2) forces."""
        return float(-np.einsum("ij,ij->", forces, self.normals))


class UnloadedAfterSource(MeridianLoads):
    """The same loads, zero after the file's last knot (the wall is unloaded once the source ends, so
    a run may continue in free vibration; nothing is extrapolated)."""

    @classmethod
    def of(cls, loads: MeridianLoads) -> "UnloadedAfterSource":
        return cls(**{k: getattr(loads, k) for k in ("path", "ids", "points", "normals", "time", "forces",
                                                     "source_force", "case_id")})

    def step_average(self, t0: float, t1: float) -> Tuple[np.ndarray, float]:
        t_last = float(self.time[-1])
        if t0 >= t_last:
            return np.zeros_like(self.forces[0]), 0.0
        if t1 <= t_last:
            return super().step_average(t0, t1)
        f, fb = super().step_average(t0, t_last)
        share = (t_last - t0) / (t1 - t0)
        return f * share, fb * share


def read_meridian_loads(path: Path | str, *, rtol: float = 1e-9) -> MeridianLoads:
    """Validate and read ``path``; map it to meridian coordinates (see module docstring)."""
    d = read_kratos_loads(path)
    x = np.asarray(d["conditions/coordinates_initial"], dtype=np.float64)
    n = np.asarray(d["conditions/outward_normal"], dtype=np.float64)
    f = np.asarray(d["loads/point_force"], dtype=np.float64)
    a = d["attrs"]
    x0, y0 = float(a.get("axis_origin_x", 0.0)), float(a.get("axis_origin_y", 0.0))
    scale = max(float(np.max(np.abs(x))), 1e-300)
    off = np.abs(x[:, 1] - y0)
    if np.any(off > rtol * scale):
        i = int(np.argmax(off > rtol * scale))
        raise LoadsFileError(f"{path}: conditions/coordinates_initial: condition id {int(d['conditions/ids'][i])} "
                             f"has y = {x[i, 1]!r} m; a meridian (theta = 0) condition needs y = axis_origin_y = {y0!r}")
    r = x[:, 0] - x0
    if np.any(r < -rtol * scale):
        i = int(np.argmax(r < -rtol * scale))
        raise LoadsFileError(f"{path}: conditions/coordinates_initial: condition id {int(d['conditions/ids'][i])} "
                             f"has r = x - axis_origin_x = {r[i]!r} m < 0")
    fmax = max(float(np.max(np.abs(f))), 1e-300)
    if np.any(np.abs(f[..., 1]) > 1e-12 * fmax):
        raise LoadsFileError(f"{path}: loads/point_force: azimuthal (y) components must vanish in an axisymmetric model")
    return MeridianLoads(
        path=Path(path), ids=np.asarray(d["conditions/ids"], dtype=np.int64),
        points=np.stack([np.maximum(r, 0.0), x[:, 2]], axis=1), normals=n[:, [0, 2]],
        time=np.asarray(d["source/time"], dtype=np.float64), forces=f[..., [0, 2]],
        source_force=np.asarray(d["diagnostics/source_force"], dtype=np.float64), case_id=str(a.get("case_id", "")))


def match_conditions(file_ids: np.ndarray, file_points: np.ndarray, model_points: np.ndarray, *,
                     tol: float) -> np.ndarray:
    """Index into ``model_points`` of every file condition (one to one), or LoadsFileError.

    The error names the first (in file order) unmatched file condition id, or the first model
    point that no file condition claims.
    """
    from scipy.spatial import cKDTree

    fp, mp = np.asarray(file_points, float), np.asarray(model_points, float)
    if mp.shape[0] == 0:
        raise LoadsFileError("conditions: the model has no MPMParticlePointLoadCondition")
    d, idx = cKDTree(mp).query(fp, k=1)
    bad = np.flatnonzero(d > tol)
    if bad.size:
        i = int(bad[0])
        raise LoadsFileError(
            f"conditions/coordinates_initial: condition id {int(file_ids[i])} at {fp[i].tolist()} m has no Kratos "
            f"point-load condition within {tol:g} m (nearest {d[i]:.3e} m; {bad.size} unmatched)")
    counts = np.bincount(idx, minlength=mp.shape[0])
    if np.any(counts != 1):
        dup = np.flatnonzero(counts > 1)
        if dup.size:
            first = int(np.flatnonzero(idx == dup[0])[1])
            raise LoadsFileError(f"conditions/coordinates_initial: condition id {int(file_ids[first])} matches a Kratos "
                                 f"condition already matched (not one to one)")
        miss = int(np.flatnonzero(counts == 0)[0])
        raise LoadsFileError(f"conditions: Kratos point-load condition at {mp[miss].tolist()} m matches no file "
                             f"condition ({fp.shape[0]} file vs {mp.shape[0]} model conditions)")
    return idx


def read_cartesian_loads(path: Path | str) -> MeridianLoads:
    """Validate and read ``path`` for a 3-D model: points (Nc, 3) m, normals (Nc, 3), forces (Nt, Nc, 3) N."""
    d = read_kratos_loads(path)
    return MeridianLoads(
        path=Path(path), ids=np.asarray(d["conditions/ids"], dtype=np.int64),
        points=np.asarray(d["conditions/coordinates_initial"], dtype=np.float64),
        normals=np.asarray(d["conditions/outward_normal"], dtype=np.float64),
        time=np.asarray(d["source/time"], dtype=np.float64),
        forces=np.asarray(d["loads/point_force"], dtype=np.float64),
        source_force=np.asarray(d["diagnostics/source_force"], dtype=np.float64),
        case_id=str(d["attrs"].get("case_id", "")))
