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
    :func:`harness.metrics.verification.apparent_order` (Celik et al. 2008 fixed point for r21 ≠ r32).
    Studies use :func:`harness.metrics.verification.three_grid`, which also classifies oscillatory,
    divergent and round-off sequences (no GCI for those) and gives u_num.
    """
    from harness.metrics.verification import apparent_order

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


# -- the metric library of declarative cases --------------------------------------------------
# Functions below are used by the generic case (harness.generic) through the registry
# ``LIBRARY`` and by family adapters directly. Inputs are array-likes (float64); a scalar
# reference is broadcast to the shape of the value by the generic case, not here.


def _same_shape(name: str, value: np.ndarray, reference: np.ndarray) -> None:
    if value.shape != reference.shape:
        raise ValueError(f"{name}: shapes differ: value {value.shape} vs reference {reference.shape}")


def _scalar(name: str, x) -> float:
    a = _arr(x)
    if a.size != 1:
        raise ValueError(f"{name}: needs a scalar, got an array of shape {a.shape}")
    return float(a.reshape(()))


def _ratio(num: float, den: float) -> float:
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def rel_error(value, reference) -> float:
    """Relative error of a scalar ``|v − r| / |r|`` (inf when r = 0 ≠ v)."""
    v, r = _scalar("rel_error", value), _scalar("rel_error", reference)
    return _ratio(abs(v - r), abs(r))


def abs_error(value, reference) -> float:
    """Absolute error of a scalar ``|v − r|`` (in the unit of v)."""
    return abs(_scalar("abs_error", value) - _scalar("abs_error", reference))


def max_abs_error(value, reference) -> float:
    """``max_i |v_i − r_i|`` over all samples (in the unit of v)."""
    v, r = _arr(value), _arr(reference)
    _same_shape("max_abs_error", v, r)
    return float(np.max(np.abs(v - r))) if v.size else 0.0


def rel_l2(value, reference, x=None) -> float:
    """Relative L2 error ``‖v − r‖ / ‖r‖``.

    Without ``x`` the norms are sums over all samples (then equal to :func:`relative_rms`);
    with the 1-D sample coordinates ``x`` they are trapezoidal integrals over x, the
    discrete L2(x) norm of a field on a non-uniform grid.
    """
    v, r = _arr(value), _arr(reference)
    _same_shape("rel_l2", v, r)
    if x is None:
        return relative_rms(v, r)
    xs = _arr(x)
    if v.ndim != 1 or xs.shape != v.shape:
        raise ValueError(f"rel_l2: x must be 1-D with the shape of the value {v.shape}, got {xs.shape}")
    num = math.sqrt(float(np.trapezoid((v - r) ** 2, xs)))
    den = math.sqrt(float(np.trapezoid(r ** 2, xs)))
    return _ratio(num, den)


def rms_rel(value, reference) -> float:
    """Relative RMS error of seed 003 (beam MOR): ``sqrt(Σ(u − u_ref)²) / sqrt(Σ u_ref²)``
    over every sample of the field (space and time together); the same as :func:`relative_rms`."""
    return relative_rms(value, reference)


def impulse_error(value, reference, t=None, dt=None, J_scale: float = 0.0) -> float:
    """``e_J`` from force histories: impulses of the value and the reference, then :func:`e_J`.

    With ``dt`` (per-sample step lengths, s) the impulse is the sum ``Σ F_n dt_n`` of step
    values; with ``t`` (sample times, s) the trapezoidal integral ``∫ F dt``. Exactly one.
    """
    v, r = _arr(value), _arr(reference)
    _same_shape("e_J", v, r)
    if (t is None) == (dt is None):
        raise ValueError("e_J: give exactly one of t (trapezoid over sample times) or dt (sum of step values)")
    if dt is not None:
        d = np.broadcast_to(_arr(dt), v.shape)
        return e_J(float(np.sum(v * d)), float(np.sum(r * d)), J_scale)
    ts = _arr(t)
    if ts.shape != v.shape:
        raise ValueError(f"e_J: t has shape {ts.shape}, the value {v.shape}")
    return e_J(impulse(ts, v), impulse(ts, r), J_scale)


def maximum(value) -> float:
    """Largest sample ``max_i v_i``."""
    return float(np.max(_arr(value)))


def minimum(value) -> float:
    """Smallest sample ``min_i v_i``."""
    return float(np.min(_arr(value)))


def final(value) -> float:
    """Last sample ``v[-1]`` of the flattened value (a scalar is its own final value)."""
    v = _arr(value).ravel()
    if not v.size:
        raise ValueError("final: empty value")
    return float(v[-1])


def scalar_value(value) -> float:
    """A scalar quantity or expression as it is (size 1)."""
    return _scalar("value", value)


def period(t, value, level: float = 0.0) -> float:
    """Mean period from the upward crossings of ``value − level``, s.

    Crossing times are linearly interpolated between samples; the period is
    ``(t_last − t_first) / (n_crossings − 1)``. Needs two upward crossings.
    """
    ts, y = _arr(t), _arr(value) - float(level)
    if ts.shape != y.shape or y.ndim != 1:
        raise ValueError(f"period: t and value must be 1-D of one shape, got {ts.shape} and {y.shape}")
    i = np.nonzero((y[:-1] < 0.0) & (y[1:] >= 0.0))[0]
    if i.size < 2:
        raise ValueError(f"period: needs at least two upward crossings of {level}, found {i.size}")
    tc = ts[i] - y[i] * (ts[i + 1] - ts[i]) / (y[i + 1] - y[i])
    return float((tc[-1] - tc[0]) / (tc.size - 1))


def slope(x, value) -> float:
    """Least-squares slope of ``log value`` against ``log x`` over positive finite pairs
    (the order of a power law ``value ∝ x^p``); NaN with fewer than two pairs."""
    xs, y = _arr(x).ravel(), _arr(value).ravel()
    if xs.shape != y.shape:
        raise ValueError(f"slope: x and value differ in size: {xs.size} vs {y.size}")
    ok = np.isfinite(xs) & np.isfinite(y) & (xs > 0) & (y > 0)
    if ok.sum() < 2 or np.ptp(np.log(xs[ok])) == 0.0:
        return math.nan
    return float(np.polyfit(np.log(xs[ok]), np.log(y[ok]), 1)[0])


@dataclass(frozen=True)
class LibraryMetric:
    """One entry of the metric library.

    inputs:   required array inputs (names of the function's parameters)
    optional: optional array inputs
    options:  scalar keyword options (numbers from the config)
    unit:     "1" (dimensionless), "value" (the unit of the value) or "t" (the unit of t)
    formula:  the definition, as documented in the README table
    kind:     error (a distance from a reference) or value (a quantity of the value), see
              harness.metrics.kinds
    """

    fn: object  # the function computing the metric
    inputs: tuple
    optional: tuple = ()
    options: tuple = ()
    unit: str = "1"
    formula: str = ""
    kind: str = "error"


def _energy_drift(value, W_ext=None, E_scale: Optional[float] = None) -> float:
    """:func:`energy_drift` of the energy history ``value``."""
    return energy_drift(value, W_ext, E_scale)


def _e_F(value, reference) -> float:
    """:func:`e_F` of the value against the reference."""
    return e_F(value, reference)


def _scd(value, reference) -> float:
    """:func:`scd` of the value against the reference."""
    return scd(value, reference)


LIBRARY: Dict[str, LibraryMetric] = {
    "rel_error": LibraryMetric(rel_error, ("value", "reference"), formula="|v − r| / |r| (scalars)"),
    "abs_error": LibraryMetric(abs_error, ("value", "reference"), unit="value", formula="|v − r| (scalars)"),
    "max_abs_error": LibraryMetric(max_abs_error, ("value", "reference"), unit="value",
                                   formula="max_i |v_i − r_i|"),
    "rel_l2": LibraryMetric(rel_l2, ("value", "reference"), optional=("x",),
                            formula="‖v − r‖₂ / ‖r‖₂ (sums; trapezoid over x if given)"),
    "rms_rel": LibraryMetric(rms_rel, ("value", "reference"),
                             formula="sqrt(Σ(v − r)²) / sqrt(Σ r²) over all samples (seed 003)"),
    "e_F": LibraryMetric(_e_F, ("value", "reference"), formula="max_t |v − r| / max_t |r|"),
    "e_J": LibraryMetric(impulse_error, ("value", "reference"), optional=("t", "dt"), options=("J_scale",),
                         formula="|J_v − J_r| / max(|J_r|, J_scale), J = Σ F dt (dt) or ∫ F dt (t)"),
    "energy_drift": LibraryMetric(_energy_drift, ("value",), optional=("W_ext",), options=("E_scale",),
                                  formula="max_t |E(t) − E(0) − W_ext(t)| / E_scale (default max |E|)"),
    "scd": LibraryMetric(_scd, ("value", "reference"), formula="−log10(max_i |v_i − r_i| / |r_i|), r_i ≠ 0"),
    "max": LibraryMetric(maximum, ("value",), unit="value", formula="max_i v_i", kind="value"),
    "min": LibraryMetric(minimum, ("value",), unit="value", formula="min_i v_i", kind="value"),
    "final": LibraryMetric(final, ("value",), unit="value", formula="v[-1]", kind="value"),
    "value": LibraryMetric(scalar_value, ("value",), unit="value", formula="v (a scalar or size-1 expression)",
                           kind="value"),
    "period": LibraryMetric(period, ("t", "value"), options=("level",), unit="t",
                            formula="mean spacing of the upward crossings of v − level (linear interpolation)",
                            kind="value"),
    "slope": LibraryMetric(slope, ("x", "value"), formula="least-squares slope of log v against log x",
                           kind="value"),
}


def library_metric(name: str) -> LibraryMetric:
    """The library entry ``name``; KeyError naming the known metrics otherwise."""
    try:
        return LIBRARY[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r} (known: {', '.join(sorted(LIBRARY))})") from None
