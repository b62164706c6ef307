"""Time-dependent transverse loads ``f(t) = g(t) b`` with a consistent FE load vector b."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from models.beam.fe import BeamFE


@dataclass(frozen=True)
class HarmonicLoad:
    """Transverse load of time law ``g(t) = Σ_k a_k sin(2π f_k t)`` [N or N/m].

    position: x [m] of a point force, or ``None`` for a uniform line load [N/m].
    static: if true, ``g(t) = Σ_k a_k`` (constant) for static checks.
    """

    amplitudes: Sequence[float] = field(default_factory=tuple)
    frequencies: Sequence[float] = field(default_factory=tuple)
    position: float | None = None
    static: bool = False

    def __post_init__(self):
        if len(self.amplitudes) != len(self.frequencies):
            raise ValueError(f"load amplitudes ({len(self.amplitudes)}) and frequencies "
                             f"({len(self.frequencies)}) must have the same length")
        if any((not math.isfinite(f)) or f < 0.0 for f in self.frequencies):
            raise ValueError(f"load frequencies must be finite and >= 0 Hz, got {list(self.frequencies)}")

    def vector(self, beam: BeamFE) -> np.ndarray:
        """Consistent load vector b for a unit time law."""
        if self.position is None:
            return beam.uniform_load(1.0)
        return beam.point_load(float(self.position), 1.0)

    def time_law(self, t) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        a = np.asarray(self.amplitudes, dtype=np.float64)
        if a.size == 0:
            return np.zeros(t.shape)
        if self.static:
            return np.full(t.shape, float(a.sum()))
        w = 2.0 * math.pi * np.asarray(self.frequencies, dtype=np.float64)
        return np.sin(t[..., None] * w) @ a
