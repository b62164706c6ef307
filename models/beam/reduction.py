"""Global reduction basis by POD of eigenmode snapshots at several slider positions.

Snapshots Ψ_i: the ``r_snap`` lowest mass-normalised modes of the beam constrained by the
clamp and by the slider at position s_i (the sliding condition imposed algebraically),
for ``n_snap`` positions spread uniformly over the slider's range. The pool
Ψ_all = [Ψ_1 … Ψ_nsnap] is compressed by SVD; Ψ_glob = the ``r_glob`` leading left
singular vectors (orthonormal columns). The clamp is satisfied by every column of
Ψ_glob, so the reduced model keeps only the slider constraint row.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np

from models.beam.modal import constrained_modes

log = logging.getLogger(__name__)


@dataclass
class GlobalBasis:
    """Ψ_glob (ndof × r_glob) with its provenance."""

    Psi: np.ndarray
    singular_values: np.ndarray  # of the whole pool, descending
    positions: np.ndarray  # snapshot slider positions [m]
    snapshot_frequencies_hz: np.ndarray  # (n_snap, r_snap)
    pool_rank: int
    offline_time_s: float
    info: Dict[str, float] = field(default_factory=dict)

    @property
    def r_glob(self) -> int:
        return self.Psi.shape[1]

    def retained_energy(self) -> float:
        """Σ_{k ≤ r_glob} σ_k² / Σ σ_k² of the pool."""
        s2 = self.singular_values**2
        return float(s2[: self.r_glob].sum() / s2.sum())


class GlobalPODReductor:
    """Builds a :class:`GlobalBasis` for a :class:`models.beam.problem.SlidingBeamProblem`.

    n_snap, r_snap, r_glob: snapshot positions, modes per snapshot, global modes.
    s_min, s_max: range of snapshot positions [m]; ``None`` = the slider's range on the
    simulation grid.
    weight_exponent: each snapshot mode enters the pool scaled by (ω_1/ω_k)^p (p = 0: the
    seed's plain POD of mass-normalised modes; p = 1 favours low modes, see README).

    >>> from models.beam import make_problem, time_grid
    >>> p = make_problem(2.0, 20, 2.1e11, 7850.0, 1e-4, 2e-10, slider_kind="sinusoidal",
    ...                  slider_center=1.1, slider_amplitude=0.6, slider_frequency=1.0)
    >>> basis = GlobalPODReductor(n_snap=5, r_snap=6, r_glob=12).build(p, time_grid(1.0, 1e-3))
    >>> basis.Psi.shape, basis.retained_energy() > 0.99
    ((63, 12), True)
    """

    def __init__(self, n_snap: int = 5, r_snap: int = 6, r_glob: int = 20,
                 s_min: Optional[float] = None, s_max: Optional[float] = None,
                 weight_exponent: float = 0.0):
        for name, v in (("n_snap", n_snap), ("r_snap", r_snap), ("r_glob", r_glob)):
            if int(v) != v or int(v) < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if not (np.isfinite(weight_exponent) and weight_exponent >= 0.0):
            raise ValueError(f"weight_exponent must be a finite number >= 0, got {weight_exponent!r}")
        self.n_snap, self.r_snap, self.r_glob = int(n_snap), int(r_snap), int(r_glob)
        self.s_min, self.s_max = s_min, s_max
        self.weight_exponent = float(weight_exponent)

    def positions(self, problem, t: Optional[np.ndarray] = None) -> np.ndarray:
        """Snapshot slider positions [m], uniform over [s_min, s_max] (midpoint if n_snap = 1)."""
        lo, hi = self.s_min, self.s_max
        if lo is None or hi is None:
            if problem.slider is None or t is None:
                raise ValueError("snapshot range s_min/s_max is required without a slider law and time grid")
            s = problem.slider.position(t)
            lo = float(s.min()) if lo is None else lo
            hi = float(s.max()) if hi is None else hi
        L = problem.beam.length
        if not (0.0 < lo <= hi <= L):
            raise ValueError(f"snapshot range must satisfy 0 < s_min <= s_max <= {L} m, got [{lo}, {hi}]")
        if self.n_snap == 1:
            return np.array([0.5 * (lo + hi)])
        return np.linspace(lo, hi, self.n_snap)

    def build(self, problem, t: Optional[np.ndarray] = None) -> GlobalBasis:
        start = time.perf_counter()
        beam = problem.beam
        pos = self.positions(problem, t)
        cons = problem.constraint(slider=True)
        blocks, freqs = [], []
        for s in pos:  # n_snap eigenproblems (a handful), not a hot path
            omega, Phi = constrained_modes(beam.M, beam.K, cons.matrix(float(s)), self.r_snap)
            if self.weight_exponent > 0.0:
                Phi = Phi * (omega[0] / omega)[None, :] ** self.weight_exponent
            blocks.append(Phi)
            freqs.append(omega / (2.0 * np.pi))
        pool = np.hstack(blocks)
        # every snapshot satisfies the clamp; take the SVD on the unclamped rows so that the
        # clamp rows of Ψ are exactly zero (not round-off amplified by small σ_k)
        rows = np.arange(3, beam.ndof) if problem.clamp else np.arange(beam.ndof)
        Uf, sig, _ = np.linalg.svd(pool[rows], full_matrices=False)
        U = np.zeros((beam.ndof, Uf.shape[1]))
        U[rows] = Uf
        tol = sig[0] * max(pool.shape) * np.finfo(float).eps
        rank = int(np.sum(sig > tol))
        if self.r_glob > rank:
            raise ValueError(f"r_glob = {self.r_glob} exceeds the rank {rank} of the snapshot pool "
                             f"(n_snap·r_snap = {self.n_snap * self.r_snap})")
        Psi = U[:, : self.r_glob].copy()
        wall = time.perf_counter() - start
        basis = GlobalBasis(Psi, sig, pos, np.array(freqs), rank, wall,
                            {"n_snap": self.n_snap, "r_snap": self.r_snap, "r_glob": self.r_glob,
                             "weight_exponent": self.weight_exponent})
        log.info("global POD basis: pool %d columns, rank %d, r_glob %d, retained σ² %.6f, "
                 "σ_rglob/σ_1 %.3e", pool.shape[1], rank, self.r_glob, basis.retained_energy(),
                 sig[self.r_glob - 1] / sig[0])
        return basis
