"""Eigenmodes of the constrained beam: K φ = ω² M φ subject to C φ = 0.

The constraint is imposed algebraically through an orthonormal null-space basis Z of C
(φ = Z y), so the slider may sit anywhere inside an element.

Axial (u) and bending (w, θ) motions of the planar Euler–Bernoulli beam are uncoupled in M, K
and in every constraint row of the clamp and the slider, so every mode is purely one or the
other. :func:`constrained_modes` labels each mode by the axial share of its shape and,
with ``kind="bending"`` or ``kind="axial"``, returns the lowest modes of that kind only (the
other kind's DOFs are added to the constraint, which is exact for uncoupled motions).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np
import scipy.linalg as sla

from models.beam.fe import DOFS_PER_NODE

KINDS = ("axial", "bending")


@dataclass(frozen=True)
class Modes:
    """The lowest modes of a constrained beam model.

    Unpacks as the pair ``(omega, shapes)`` (``omega, Phi = constrained_modes(...)``).

    Attributes
    ----------
    omega : ndarray, shape (n_modes,)
        Angular frequencies [rad/s], ascending.
    shapes : ndarray, shape (n, n_modes)
        Mass-normalised mode shapes (Φᵀ M Φ = I) in the model's coordinates.
    kind : ndarray of str, shape (n_modes,)
        ``"axial"``, ``"bending"`` or ``"unknown"`` (no DOF layout to label with).
    axial_fraction : ndarray, shape (n_modes,)
        Share of Σφ² (over the beam's DOFs) in the axial DOFs: 0 bending, 1 axial, NaN unknown.
    """

    omega: np.ndarray
    shapes: np.ndarray
    kind: np.ndarray
    axial_fraction: np.ndarray

    @property
    def frequencies_hz(self) -> np.ndarray:
        """Frequencies f = ω / 2π [Hz], shape (n_modes,)."""
        return self.omega / (2.0 * np.pi)

    def of_kind(self, kind: str) -> "Modes":
        """The subset of modes labelled ``kind`` (``"axial"`` or ``"bending"``), in order."""
        _check_kind(kind)
        keep = self.kind == kind
        return Modes(self.omega[keep], self.shapes[:, keep], self.kind[keep], self.axial_fraction[keep])

    def __iter__(self) -> Iterator[np.ndarray]:
        yield self.omega
        yield self.shapes

    def __len__(self) -> int:
        return int(self.omega.size)


def axial_dofs(n_full: int) -> np.ndarray:
    """Indices of the axial DOFs u_i (every ``DOFS_PER_NODE``-th DOF) of an ``n_full``-DOF beam."""
    if n_full % DOFS_PER_NODE:
        raise ValueError(f"{n_full} DOFs is not a beam layout ({DOFS_PER_NODE} DOFs per node)")
    return np.arange(0, n_full, DOFS_PER_NODE)


def _check_kind(kind: Optional[str]) -> None:
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be None, 'axial' or 'bending', got {kind!r}")


def constrained_modes(M: np.ndarray, K: np.ndarray, C: np.ndarray, n_modes: int,
                      kind: Optional[str] = None, basis: Optional[np.ndarray] = None) -> Modes:
    """Lowest ``n_modes`` modes of K φ = ω² M φ with C φ = 0, labelled axial or bending.

    Parameters
    ----------
    M, K : ndarray, shape (n, n)
        Mass [kg…] and stiffness [N/m…] matrices (symmetric).
    C : ndarray, shape (m, n)
        Constraint rows (m may be 0).
    n_modes : int
        How many modes, 1 ≤ n_modes ≤ number of free DOFs (of the requested kind).
    kind : {None, "axial", "bending"}
        ``None`` keeps every mode (each labelled); otherwise only modes of that kind.
    basis : ndarray, shape (n_full, n), optional
        For a reduced model q = Ψ p: the basis Ψ mapping the coordinates to the beam's DOFs
        (used to label modes and to select a kind). ``None``: the coordinates are the beam's
        own DOFs (u, w, θ per node) when n is a multiple of 3, else unlabelled.

    Returns
    -------
    Modes
        ``omega`` [rad/s] (n_modes,), mass-normalised ``shapes`` (n, n_modes), ``kind``,
        ``axial_fraction``; unpacks as ``omega, shapes``.

    Examples
    --------
    >>> from models.beam import build_beam, SlidingConstraint, constrained_modes
    >>> beam = build_beam(2.0, 20, 2.1e11, 7850.0, 1e-4, 2e-10)
    >>> C = SlidingConstraint(beam, slider=False).matrix(None)      # clamped at x = 0
    >>> modes = constrained_modes(beam.M, beam.K, C, 3, kind="bending")
    >>> [str(k) for k in modes.kind]
    ['bending', 'bending', 'bending']
    """
    _check_kind(kind)
    n = M.shape[0]
    if M.shape != (n, n) or K.shape != (n, n) or C.ndim != 2 or C.shape[1] != n:
        raise ValueError(f"shapes must be M, K (n, n) and C (m, n); got {M.shape}, {K.shape}, {C.shape}")
    to_full = np.eye(n) if basis is None else np.asarray(basis, dtype=np.float64)
    if to_full.shape[1] != n:
        raise ValueError(f"basis must have {n} columns (one per coordinate), got shape {to_full.shape}")
    ax = axial_dofs(to_full.shape[0]) if to_full.shape[0] % DOFS_PER_NODE == 0 else None
    if kind is not None:
        if ax is None:
            raise ValueError(f"kind={kind!r} needs a beam DOF layout: n = {n} is not a multiple of "
                             f"{DOFS_PER_NODE}; pass basis=Ψ for a reduced model")
        other = ax if kind == "bending" else np.setdiff1d(np.arange(to_full.shape[0]), ax)
        rows = _kind_rows(to_full[other], to_full if basis is not None else None)
        C = np.vstack([C, rows]) if C.size else rows
    Z = sla.null_space(C) if C.shape[0] else np.eye(n)
    if n_modes < 1 or n_modes > Z.shape[1]:
        what = "free DOFs" if kind is None else f"free {kind} DOFs"
        raise ValueError(f"n_modes must lie in [1, {Z.shape[1]}] ({what}), got {n_modes}")
    Kz = Z.T @ K @ Z
    Mz = Z.T @ M @ Z
    lam, Y = sla.eigh(0.5 * (Kz + Kz.T), 0.5 * (Mz + Mz.T), subset_by_index=[0, n_modes - 1])
    Phi = Z @ Y
    omega = np.sqrt(np.clip(lam, 0.0, None))
    if ax is None:
        frac = np.full(n_modes, np.nan)
        kinds = np.full(n_modes, "unknown", dtype=object)
    else:
        full = to_full @ Phi
        frac = np.sum(full[ax] ** 2, axis=0) / np.maximum(np.sum(full ** 2, axis=0), np.finfo(float).tiny)
        kinds = np.where(frac > 0.5, "axial", "bending").astype(object)
    return Modes(omega, Phi, np.asarray(kinds, dtype=object), frac)


KIND_RTOL = 1e-6  # reduced bases: the other family's content below this (relative amplitude) is round-off


def _kind_rows(rows: np.ndarray, basis: Optional[np.ndarray]) -> np.ndarray:
    """The constraint rows that select one family: the other family's DOFs held at zero.

    For a reduced basis Ψ the rows Ψ[other] of a basis built from one family's modes hold only the
    round-off of its eigenvectors (relative amplitudes 1e-18 to 1e-7 here), not a motion of the
    other family; used as they are, ``null_space`` would count every direction above its own
    round-off threshold (~1e-15 of the largest row) as a constraint and remove about half of the
    basis, and which half would depend on the LAPACK build. Directions of Ψ[other] below
    :data:`KIND_RTOL` of Ψ's largest column are dropped (an SVD of the rows); on the beam's own DOFs
    (``basis`` None: unit rows) nothing is dropped."""
    if basis is None or rows.size == 0:
        return rows
    _, sig, Vt = np.linalg.svd(rows, full_matrices=False)
    scale = float(np.max(np.linalg.norm(basis, axis=0), initial=0.0))
    return (sig[:, None] * Vt)[sig > KIND_RTOL * scale]


def static_solution(K: np.ndarray, C: np.ndarray, f: np.ndarray):
    """Static ``K q + Cᵀ λ = f``, ``C q = 0``.

    Parameters
    ----------
    K : ndarray (n, n) stiffness; C : ndarray (m, n) constraint rows; f : ndarray (n,) loads [N, N m].

    Returns
    -------
    (q, lam) : displacements (n,) [m, rad] and multipliers (m,) [N]; λ is minus the reaction force.

    Examples
    --------
    >>> import numpy as np
    >>> from models.beam import build_beam, SlidingConstraint, static_solution
    >>> beam = build_beam(1.0, 4, 2.1e11, 7850.0, 1e-4, 2e-10)
    >>> q, lam = static_solution(beam.K, SlidingConstraint(beam, slider=False).matrix(None),
    ...                          beam.point_load(1.0, -10.0))
    >>> round(float(q[beam.w_dofs[-1]]) / (-10.0 * 1.0**3 / (3 * 2.1e11 * 2e-10)), 9)   # tip = F L³/3EI
    1.0
    """
    n, m = K.shape[0], C.shape[0]
    A = np.block([[K, C.T], [C, np.zeros((m, m))]])
    sol = np.linalg.solve(A, np.concatenate([f, np.zeros(m)]))
    return sol[:n], sol[n:]
