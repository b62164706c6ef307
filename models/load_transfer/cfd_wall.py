"""Wall faces of (adaptive) Clawpack output: the leaf cells adjacent to the wall z = 0 only.

A Clawpack frame is a set of rectangular patches, each with its AMR level (1 = base grid). The
wall faces of a patch are the bottom edges of its first cell row when the patch touches z = 0.
A wall cell of level l is a leaf unless a patch of a finer level that touches the wall covers its
midpoint (Clawpack nests fine patches inside coarse ones, so a covered cell is covered whole).
Counting parents together with their children would count that wall area twice: the ring-area
check of :class:`models.load_transfer.extraction.WallLoadsExtractor` then fails.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np


@dataclass(frozen=True)
class WallRow:
    """The first cell row of one patch that touches the wall.

    level : AMR level (1 = base); r_edges (n+1,) [m] the wall faces; pressure (n,) [Pa] the
    cell pressure of the row (first-order face value of the wall).
    """

    level: int
    r_edges: np.ndarray
    pressure: np.ndarray


@dataclass(frozen=True)
class WallFaces:
    """The wall faces an extraction counts: [r0, r1] [m], pressure [Pa], level per face."""

    r0: np.ndarray
    r1: np.ndarray
    pressure: np.ndarray
    level: np.ndarray
    n_patches: int  # patches touching the wall
    n_covered: int  # wall cells skipped because a finer patch covers them

    @property
    def dr_min(self) -> float:
        return float(np.min(self.r1 - self.r0))


def _covered(mid: np.ndarray, finer: Sequence[Tuple[float, float]]) -> np.ndarray:
    out = np.zeros(mid.size, bool)
    for lo, hi in finer:
        out |= (mid > lo) & (mid < hi)
    return out


def wall_faces(rows: Sequence[WallRow], leaf_only: bool = True) -> WallFaces:
    """Collect the wall faces of ``rows``; with leaf_only (the extraction) parents are dropped.

    ``leaf_only=False`` keeps every level (the wrong extraction the tests must catch)."""
    r0: List[np.ndarray] = []
    r1: List[np.ndarray] = []
    p: List[np.ndarray] = []
    lev: List[np.ndarray] = []
    covered_total = 0
    for row in rows:
        e = np.asarray(row.r_edges, float)
        mid = 0.5 * (e[1:] + e[:-1])
        finer = [(float(o.r_edges[0]), float(o.r_edges[-1])) for o in rows if o.level > row.level]
        cov = _covered(mid, finer) if leaf_only else np.zeros(mid.size, bool)
        covered_total += int(cov.sum())
        keep = ~cov
        r0.append(e[:-1][keep])
        r1.append(e[1:][keep])
        p.append(np.asarray(row.pressure, float)[keep])
        lev.append(np.full(int(keep.sum()), row.level))
    order = np.argsort(np.concatenate(r0), kind="stable")
    return WallFaces(r0=np.concatenate(r0)[order], r1=np.concatenate(r1)[order], pressure=np.concatenate(p)[order],
                     level=np.concatenate(lev)[order], n_patches=len(rows), n_covered=covered_total)
