"""Candidate contact pairs in O(N log N) with a k-d tree and a Verlet skin.

The list holds every pair closer than ``R_i + R_j + skin``; it is rebuilt only when a
particle has moved more than ``skin / 2`` since the last build, so between rebuilds no
contact can be missed.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree


class NeighborList:
    """Pairs (i < j) within ``R_i + R_j + skin`` (m)."""

    def __init__(self, radius: np.ndarray, skin: float) -> None:
        self.radius = np.asarray(radius, dtype=np.float64)
        self.skin = float(skin)
        self.x_ref: np.ndarray | None = None
        self.pairs = np.empty((0, 2), dtype=np.int64)
        self.n_builds = 0

    def update(self, x: np.ndarray) -> np.ndarray:
        """Candidate pairs for positions ``x`` (N, 3), rebuilt when needed."""
        if self.x_ref is None or np.max(np.sum((x - self.x_ref) ** 2, axis=1)) > (0.5 * self.skin) ** 2:
            self._build(x)
        return self.pairs

    def _build(self, x: np.ndarray) -> None:
        r = self.radius
        cutoff = 2.0 * float(r.max()) + self.skin
        pairs = cKDTree(x).query_pairs(cutoff, output_type="ndarray").astype(np.int64)
        if pairs.size:
            d2 = np.sum((x[pairs[:, 1]] - x[pairs[:, 0]]) ** 2, axis=1)
            keep = d2 < (r[pairs[:, 0]] + r[pairs[:, 1]] + self.skin) ** 2
            pairs = pairs[keep]
            pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
        self.pairs = pairs.reshape(-1, 2)
        self.x_ref = x.copy()
        self.n_builds += 1
