"""Wall-load extraction from an adaptive (quadtree) wall into ring averages (seed 000 pseudocode).

Stands in for the Basilisk event ``wall_loads``: for every output time, each ACTIVE leaf face on
the wall (never a parent together with its children) contributes its gauge pressure
``face_pressure - p_ref`` and viscous traction to every radial bin it intersects, weighted by the
exact axisymmetric overlap area dA = pi (b^2 - a^2), [a, b] = face ∩ ring. The accumulated area of
each ring is asserted against pi (r_{i+1}^2 - r_i^2); the ring averages sum_p / area and
sum_tau / area are written with the wall-loads writer (derived impulse and force, validation and
atomic rename happen there).

The wall of an axisymmetric quadtree over [0, L] x [0, L] (r, z) is the row of cells touching
z = 0: a cell (level l, radial index i) has wall faces [i L/2^l, (i+1) L/2^l]; its two children
touching the wall are (l+1, 2i) and (l+1, 2i+1). :class:`WallTree` stores that row for every
level, parents included, with a leaf flag, as Basilisk's tree does.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

import numpy as np
import scipy.sparse as sp

log = logging.getLogger(__name__)


class ExtractionAreaError(AssertionError):
    """The accumulated overlap area of a ring differs from pi (r_{i+1}^2 - r_i^2)."""


@dataclass(frozen=True)
class WallTree:
    """Wall row of an adaptive quadtree: every node (parents too) with its level and leaf flag.

    length : L [m], the radial extent of the domain (the root cell is [0, L]).
    level, index : (n,) int, node level l and radial index i (face [i, i+1] L / 2^l).
    leaf   : (n,) bool, True for active leaves (the faces the extraction counts).
    """

    length: float
    level: np.ndarray
    index: np.ndarray
    leaf: np.ndarray

    def faces(self, active_only: bool = True):
        """(r0, r1, level) of the wall faces [m]; with active_only=False parents are included too."""
        m = self.leaf if active_only else np.ones_like(self.leaf)
        h = self.length / 2.0 ** self.level[m]
        return self.index[m] * h, (self.index[m] + 1) * h, self.level[m]

    @property
    def levels(self) -> List[int]:
        return sorted(set(int(v) for v in self.level[self.leaf]))


def refine_wall_tree(length: float, min_level: int, max_level: int,
                     refine: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> WallTree:
    """Build a wall tree: uniform at ``min_level``, then cells where ``refine(r_center, h)`` is True
    are split, level by level (vectorised per level), up to ``max_level``."""
    levels: List[np.ndarray] = []
    indices: List[np.ndarray] = []
    leaves: List[np.ndarray] = []
    # ancestors of the min level are parents of everything
    for l in range(min_level):
        idx = np.arange(2**l)
        levels.append(np.full(idx.size, l))
        indices.append(idx)
        leaves.append(np.zeros(idx.size, bool))
    current = np.arange(2**min_level)
    for l in range(min_level, max_level + 1):
        h = length / 2.0**l
        split = np.asarray(refine((current + 0.5) * h, np.full(current.size, h)), bool) if l < max_level else \
            np.zeros(current.size, bool)
        levels.append(np.full(current.size, l))
        indices.append(current)
        leaves.append(~split)
        current = np.sort(np.concatenate([2 * current[split], 2 * current[split] + 1]))
        if current.size == 0:
            break
    return WallTree(length=float(length), level=np.concatenate(levels), index=np.concatenate(indices),
                    leaf=np.concatenate(leaves))


def overlap_matrix(r0: np.ndarray, r1: np.ndarray, radial_edges: np.ndarray) -> sp.csr_matrix:
    """Exact axisymmetric overlap areas W (Nr, Nf) [m^2]: W_if = pi (b^2 - a^2), [a, b] = face ∩ ring.

    Vectorised: each face is expanded over the rings it intersects (searchsorted + repeat).
    """
    e = np.asarray(radial_edges, dtype=np.float64)
    nr = e.size - 1
    lo = np.clip(np.searchsorted(e, r0, side="right") - 1, 0, nr)
    hi = np.clip(np.searchsorted(e, r1, side="left") - 1, -1, nr - 1)
    count = np.maximum(hi - lo + 1, 0)
    face = np.repeat(np.arange(r0.size), count)
    start = np.repeat(lo, count)
    ring = start + (np.arange(face.size) - np.repeat(np.cumsum(count) - count, count))
    a = np.maximum(r0[face], e[ring])
    b = np.minimum(r1[face], e[ring + 1])
    keep = b > a
    vals = np.pi * (b[keep] - a[keep]) * (b[keep] + a[keep])
    return sp.csr_matrix((vals, (ring[keep], face[keep])), shape=(nr, r0.size))


def face_average(r0: np.ndarray, r1: np.ndarray, primitive: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Exact axisymmetric face average of f(r): (G(r1) - G(r0)) / (pi (r1^2 - r0^2)),
    with G(r) = int_0^r f(s) 2 pi s ds given as ``primitive`` (a finite-volume face value)."""
    return (primitive(r1) - primitive(r0)) / (np.pi * (r1 - r0) * (r1 + r0))


@dataclass
class WallLoadsExtractor:
    """Accumulates wall-load events (one per output time) and writes the wall-loads file.

    radial_edges (Nr+1,) m; p_ref Pa (reference pressure subtracted from the face pressure);
    area_rtol: relative tolerance of the ring-area assertion.
    """

    radial_edges: np.ndarray
    p_ref: float = 0.0
    area_rtol: float = 1.0e-10
    times: List[float] = field(default_factory=list)
    pressure: List[np.ndarray] = field(default_factory=list)
    shear: List[np.ndarray] = field(default_factory=list)
    levels: set = field(default_factory=set)
    max_area_error: float = 0.0

    def __post_init__(self) -> None:
        self.radial_edges = np.asarray(self.radial_edges, dtype=np.float64)

    @property
    def ring_areas(self) -> np.ndarray:
        e = self.radial_edges
        return np.pi * (e[1:] - e[:-1]) * (e[1:] + e[:-1])

    def event(self, t: float, r0: np.ndarray, r1: np.ndarray, face_pressure: np.ndarray,
              face_shear: Optional[np.ndarray] = None, face_levels: Optional[np.ndarray] = None):
        """One output event: bin the faces [r0, r1] (m) with their pressure/traction (Pa) into rings.

        Returns (p_bar, tau_bar, area) of this event. Raises ExtractionAreaError (ring index,
        accumulated area, exact area) when a ring is not covered exactly once.
        """
        W = overlap_matrix(np.asarray(r0, float), np.asarray(r1, float), self.radial_edges)
        area = np.asarray(W.sum(axis=1)).ravel()
        exact = self.ring_areas
        err = np.abs(area - exact) / exact
        if np.any(~(err <= self.area_rtol)):
            i = int(np.argmax(np.where(np.isfinite(err), err, np.inf)))
            raise ExtractionAreaError(
                f"t={t!r} s: ring {i}: accumulated area {float(area[i])!r} m^2 != pi (r_i+1^2 - r_i^2) = {float(exact[i])!r} m^2 "
                f"(relative error {err[i]:.3g} > {self.area_rtol:g}); faces counted twice or missing")
        self.max_area_error = max(self.max_area_error, float(err.max()))
        p_load = np.asarray(face_pressure, float) - self.p_ref
        tau = np.zeros_like(p_load) if face_shear is None else np.asarray(face_shear, float)
        p_bar = (W @ p_load) / area
        tau_bar = (W @ tau) / area
        self.times.append(float(t))
        self.pressure.append(p_bar)
        self.shear.append(tau_bar)
        if face_levels is not None:
            self.levels.update(int(v) for v in np.unique(face_levels))
        return p_bar, tau_bar, area

    def event_tree(self, t: float, tree: WallTree, pressure_of_faces: Callable, shear_of_faces: Optional[Callable] = None):
        """Event on the active leaves of ``tree``; the callables map (r0, r1) -> face values (Pa)."""
        r0, r1, lev = tree.faces(active_only=True)
        tau = None if shear_of_faces is None else shear_of_faces(r0, r1)
        return self.event(t, r0, r1, pressure_of_faces(r0, r1), tau, lev)

    def write(self, path: Path | str, *, case_id: str, metadata: Optional[Mapping[str, Any]] = None,
              configuration: Optional[str] = None, mode: str = "production") -> Path:
        """On successful completion: write the wall-loads file (derived data, validation, atomic rename)."""
        from .contracts.wall_loads import write_wall_loads

        meta: Dict[str, Any] = dict(metadata or {})
        meta.setdefault("reference_pressure", float(self.p_ref))
        if self.levels:
            meta.setdefault("levels", [min(self.levels), max(self.levels)])
        return write_wall_loads(path, case_id=case_id, time=np.asarray(self.times), radial_edges=self.radial_edges,
                                pressure=np.vstack(self.pressure), shear=np.vstack(self.shear), metadata=meta,
                                configuration=configuration, mode=mode)


@dataclass(frozen=True)
class SyntheticWallRun:
    """A synthetic stand-in for a Basilisk run: closed forms of what the extraction must give.

    Wall pressure p(r, t) = a(t) p0 (1 - r^2/R^2) (gauge, on r <= R = length) plus p_ref, viscous
    traction tau(r, t) = a(t) tau0 r / R, a(t) triangular (0 at t0, 1 at t_peak, 0 at t1).
    The quadtree is refined around a front r_f(t) moving from the axis to the rim, so the active
    leaves change at every output and span several levels.
    """

    extractor: WallLoadsExtractor
    p0: float
    tau0: float
    length: float
    amplitude: np.ndarray  # a(t_k)
    force_exact: np.ndarray  # (Nt,) N, pi p0 R^2 / 2 a(t)
    impulse_exact: float  # N s, int F dt of the piecewise-linear a (exact trapezoids)
    trees: List[WallTree]


def synthetic_wall_run(*, length: float = 0.01, n_rings: int = 40, n_outputs: int = 41, t_end: float = 4.0e-5,
                       p0: float = 2.0e5, tau0: float = 50.0, p_ref: float = 1.0e5, min_level: int = 3,
                       max_level: int = 9, ring_edges: Optional[np.ndarray] = None) -> SyntheticWallRun:
    """Run the extraction events of the synthetic wall (see :class:`SyntheticWallRun`)."""
    R = float(length)
    edges = np.linspace(0.0, R, n_rings + 1) if ring_edges is None else np.asarray(ring_edges, float)
    t = np.linspace(0.0, t_end, n_outputs)
    t_peak = 0.3 * t_end
    a = np.interp(t, [0.0, t_peak, t_end], [0.0, 1.0, 0.0])
    ex = WallLoadsExtractor(edges, p_ref=p_ref)

    def g_p(r):  # int_0^r p0 (1 - s^2/R^2) 2 pi s ds
        return np.pi * p0 * (r**2 - r**4 / (2.0 * R**2))

    def g_tau(r):  # int_0^r tau0 s/R 2 pi s ds
        return 2.0 * np.pi * tau0 * r**3 / (3.0 * R)

    trees = []
    for k, tk in enumerate(t):  # one Basilisk output event per time
        front = R * tk / t_end
        tree = refine_wall_tree(R, min_level, max_level, lambda rc, h: np.abs(rc - front) < 2.0 * h)
        trees.append(tree)
        ex.event_tree(tk, tree, lambda r0, r1: p_ref + a[k] * face_average(r0, r1, g_p),
                      lambda r0, r1: a[k] * face_average(r0, r1, g_tau))
    F = np.pi * p0 * R**2 / 2.0 * a
    J = float(np.sum(np.diff(t) * 0.5 * (F[1:] + F[:-1])))
    return SyntheticWallRun(extractor=ex, p0=p0, tau0=tau0, length=R, amplitude=a, force_exact=F, impulse_exact=J,
                            trees=trees)


def synthetic_metadata(run: SyntheticWallRun, **extra: Any) -> Dict[str, Any]:
    """Production metadata of the synthetic run (fields of the wall-loads spec)."""
    t = np.asarray(run.extractor.times)
    lev = sorted(run.extractor.levels)
    meta = {
        "basilisk_commit": "synthetic-quadtree (no Basilisk build here)",
        "exporter_commit": "models.load_transfer.extraction",
        "compiler": "python (synthetic extraction)",
        "command": "models.load_transfer.extraction.synthetic_wall_run",
        "R0": run.length / 4.0,
        "H": run.length / 2.0,
        "gamma": 1.4,
        "reference_pressure": float(run.extractor.p_ref),
        "levels": [lev[0], lev[-1]],
        "delta_min": run.length / 2.0 ** lev[-1],
        "output_cadence": float(t[1] - t[0]),
        "convergence_study_id": "synthetic-none",
    }
    meta.update(extra)
    return meta


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m models.load_transfer.extraction OUT_DIR [--case-id ID] [--n-rings N]``.

    Writes the synthetic wall run (production metadata) as ``OUT_DIR/{ID}.wall-loads.v1.h5``:
    a valid wall-loads file to try the readers, the validator and the file-source cases with.
    """
    import argparse

    ap = argparse.ArgumentParser(prog="python -m models.load_transfer.extraction", description=main.__doc__)
    ap.add_argument("out_dir", help="directory of the written file (created if needed)")
    ap.add_argument("--case-id", default="demo")
    ap.add_argument("--n-rings", type=int, default=16)
    ap.add_argument("--n-outputs", type=int, default=11)
    args = ap.parse_args(argv)
    if args.n_rings < 1 or args.n_outputs < 2:
        ap.error("--n-rings must be >= 1 and --n-outputs >= 2")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    run = synthetic_wall_run(length=1.0, n_rings=args.n_rings, n_outputs=args.n_outputs, t_end=1.0)
    path = run.extractor.write(args.out_dir, case_id=args.case_id, metadata=synthetic_metadata(run),
                               configuration=f"synthetic_wall_run: {{length: 1.0, n_rings: {args.n_rings}}}\n")
    log.info("wrote %s", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
