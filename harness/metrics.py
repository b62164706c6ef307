"""Error metrics, defined once and used by every family.

All functions take array-likes, compute in float64 and return plain floats.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Dict, Optional

import numpy as np


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def e_F(F_M, F_B) -> float:
    """Force error ``max_t |F_M − F_B| / max_t |F_B|`` (a global scale, never pointwise).

    Returns inf when F_B is identically zero and F_M is not, 0 when both are zero.
    """
    F_M, F_B = _arr(F_M), _arr(F_B)
    if F_M.shape != F_B.shape:
        raise ValueError(f"e_F: shapes differ: F_M {F_M.shape} vs F_B {F_B.shape}")
    num = float(np.max(np.abs(F_M - F_B))) if F_M.size else 0.0
    den = float(np.max(np.abs(F_B))) if F_B.size else 0.0
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def impulse(t, F) -> float:
    """Trapezoidal impulse ``∫ F dt`` of samples F(t) [N s]."""
    return float(np.trapezoid(_arr(F), _arr(t)))


def e_J(J_M, J_B, J_scale: float = 0.0) -> float:
    """Impulse error ``|J_M − J_B| / max(|J_B|, J_scale)``.

    J_scale [N s] guards histories whose impulse is (nearly) zero.
    """
    J_M, J_B = float(J_M), float(J_B)
    den = max(abs(J_B), float(J_scale))
    num = abs(J_M - J_B)
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def relative_rms(u, u_ref) -> float:
    """Relative RMS error ``sqrt(Σ(u − u_ref)²) / sqrt(Σ u_ref²)`` over all samples."""
    u, u_ref = _arr(u), _arr(u_ref)
    if u.shape != u_ref.shape:
        raise ValueError(f"relative_rms: shapes differ: {u.shape} vs {u_ref.shape}")
    num = float(np.sqrt(np.sum((u - u_ref) ** 2)))
    den = float(np.sqrt(np.sum(u_ref**2)))
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def energy_drift(E, W_ext=None, E_scale: Optional[float] = None) -> float:
    """Energy drift ``max_t |E(t) − E(0) − W_ext(t)| / E_scale``.

    W_ext: cumulative external work with W_ext(0) = 0 (omit for a closed system).
    E_scale defaults to ``max_t |E(t)|``.
    """
    E = _arr(E)
    W = np.zeros_like(E) if W_ext is None else _arr(W_ext)
    if W.shape != E.shape:
        raise ValueError(f"energy_drift: shapes differ: E {E.shape} vs W_ext {W.shape}")
    residual = np.abs(E - E[0] - W)
    scale = float(np.max(np.abs(E))) if E_scale is None else float(E_scale)
    num = float(np.max(residual))
    if scale == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / scale


def observed_order(e_coarse: float, e_fine: float, r: float) -> float:
    """Observed order ``p = ln(e_coarse / e_fine) / ln(r)`` for refinement ratio r > 1."""
    if r <= 1.0:
        raise ValueError(f"observed_order: refinement ratio must be > 1, got {r}")
    if e_coarse <= 0.0 or e_fine <= 0.0:
        return math.nan
    return math.log(e_coarse / e_fine) / math.log(r)


@dataclass(frozen=True)
class GCIResult:
    """Roache's grid convergence index for three levels (1 = finest)."""

    p: float  # observed order
    f_extrapolated: float  # Richardson extrapolation from levels 1 and 2
    gci_12: float  # fine-grid GCI (fraction, not percent)
    gci_23: float  # coarse-grid GCI
    asymptotic_ratio: float  # GCI_23 / (r21^p GCI_12), ≈ 1 in the asymptotic range
    iterations: int

    def as_dict(self) -> Dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


def gci(f1: float, f2: float, f3: float, r21: float, r32: float, safety_factor: float = 1.25,
        tol: float = 1e-12, max_iter: int = 200) -> GCIResult:
    """Roache's GCI from solutions f1 (fine), f2, f3 (coarse) and refinement ratios.

    The bare arithmetic, whatever the convergence type; the apparent order comes from
    :func:`harness.verification.apparent_order` (Celik et al. 2008 fixed point for r21 ≠ r32).
    Studies use :func:`harness.verification.three_grid`, which also classifies oscillatory,
    divergent and round-off sequences (no GCI for those) and gives u_num.
    """
    from harness.verification import apparent_order

    if r21 <= 1.0 or r32 <= 1.0:
        raise ValueError(f"gci: refinement ratios must be > 1, got r21={r21}, r32={r32}")
    e21 = f2 - f1
    e32 = f3 - f2
    if e21 == 0.0 or e32 == 0.0:
        raise ValueError("gci: two levels give identical values; the order is undefined")
    p, it = apparent_order(e21, e32, r21, r32, tol=tol, max_iter=max_iter)
    f_ext = f1 + (f1 - f2) / (r21**p - 1.0)
    gci_12 = safety_factor * abs(e21 / f1) / (r21**p - 1.0)
    gci_23 = safety_factor * abs(e32 / f2) / (r32**p - 1.0)
    ratio = gci_23 / (r21**p * gci_12) if gci_12 != 0.0 else math.nan
    return GCIResult(p=p, f_extrapolated=f_ext, gci_12=gci_12, gci_23=gci_23,
                     asymptotic_ratio=ratio, iterations=it)


def scd(y, y_ref) -> float:
    """Significant correct digits ``−log10(max_i |y_i − y_ref,i| / |y_ref,i|)``.

    Components with y_ref,i = 0 are skipped (the test-set convention uses mixed errors
    only where requested). Returns +inf for an exact match.
    """
    y, y_ref = _arr(y), _arr(y_ref)
    if y.shape != y_ref.shape:
        raise ValueError(f"scd: shapes differ: {y.shape} vs {y_ref.shape}")
    mask = y_ref != 0.0
    if not np.any(mask):
        raise ValueError("scd: every reference component is zero")
    rel = float(np.max(np.abs(y[mask] - y_ref[mask]) / np.abs(y_ref[mask])))
    if rel == 0.0:
        return math.inf
    return -math.log10(rel)
