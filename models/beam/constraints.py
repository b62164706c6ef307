"""Algebraic constraints of the sliding beam (type-1 Lagrangian, index 3).

``g(q, t) = C(s(t)) q = 0`` with the rows

* clamp at x = 0: ``u_0 = 0``, ``w_0 = 0``, ``θ_0 = 0`` (optional, constant rows);
* slider at x = s(t): ``w(s) = Σ_k N_k(ξ(s)) q_{e,k} = 0`` with the cubic Hermite shape
  functions of the element containing s, so the row and w′(s) are continuous as the
  slider crosses a node (C¹ constraint).

The constraint is linear in q, so ``C_q = C(s)``; its time derivative is
``Ċ = ṡ ∂C/∂s`` and ``C̈ = s̈ ∂C/∂s + ṡ² ∂²C/∂s²``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.beam.fe import BeamFE, hermite, hermite_dx, hermite_dxx


@dataclass(frozen=True)
class SliderRows:
    """Sparse slider rows at N positions: 4 DOF indices and the values of w, w′, w″ weights."""

    dofs: np.ndarray  # (N, 4) int
    n: np.ndarray  # (N, 4) Hermite values      -> w(s)   = n·q[dofs]
    dn: np.ndarray  # (N, 4) d/ds               -> w′(s)  = dn·q[dofs]
    ddn: np.ndarray  # (N, 4) d²/ds²            -> w″(s)  = ddn·q[dofs]

    def dense(self, ndof: int, which: str = "n") -> np.ndarray:
        """Dense (N, ndof) rows of ``which`` ∈ {n, dn, ddn}."""
        vals = getattr(self, which)
        out = np.zeros((vals.shape[0], ndof))
        out[np.arange(vals.shape[0])[:, None], self.dofs] = vals
        return out

    def project(self, basis: np.ndarray, which: str = "n") -> np.ndarray:
        """Rows times a basis Ψ (ndof × r): (N, r) = Σ_k vals_k Ψ[dofs_k, :]."""
        return np.einsum("tk,tkr->tr", getattr(self, which), basis[self.dofs])


@dataclass(frozen=True)
class SlidingConstraint:
    """Clamp rows (if ``clamp``) followed by one slider row (if ``slider``).

    >>> from models.beam import build_beam
    >>> beam = build_beam(2.0, 10, 2.1e11, 7850.0, 1e-4, 2e-10)
    >>> SlidingConstraint(beam).matrix(1.3).shape          # 3 clamp rows + the slider row at s = 1.3 m
    (4, 33)
    """

    beam: BeamFE
    clamp: bool = True
    slider: bool = True

    @property
    def n_rows(self) -> int:
        return 3 * int(self.clamp) + int(self.slider)

    def clamp_rows(self) -> np.ndarray:
        """(3, ndof) rows selecting u_0, w_0, θ_0."""
        C = np.zeros((3, self.beam.ndof))
        C[[0, 1, 2], [0, 1, 2]] = 1.0
        return C

    def slider_rows(self, s: np.ndarray) -> SliderRows:
        """Slider rows at positions ``s`` [m] (raises ValueError off the beam)."""
        s = np.atleast_1d(np.asarray(s, dtype=np.float64))
        e, xi = self.beam.locate(s)
        le = self.beam.le
        return SliderRows(self.beam.bending_dofs(e), hermite(xi, le), hermite_dx(xi, le), hermite_dxx(xi, le))

    def matrix(self, s: float | None) -> np.ndarray:
        """Dense constraint matrix C(s), shape (n_rows, ndof)."""
        blocks = []
        if self.clamp:
            blocks.append(self.clamp_rows())
        if self.slider:
            if s is None:
                raise ValueError("slider position s is required when the slider row is active")
            blocks.append(self.slider_rows(np.array([s])).dense(self.beam.ndof))
        if not blocks:
            return np.zeros((0, self.beam.ndof))
        return np.vstack(blocks)
