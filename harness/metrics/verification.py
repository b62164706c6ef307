"""Solution verification: the three-grid procedure of Roache / Celik et al. (2008) / ASME V&V 20-2009.

Level 1 is the finest, 3 the coarsest; h1 < h2 < h3, r21 = h2/h1 > 1, r32 = h3/h2 > 1;
ε21 = f2 − f1, ε32 = f3 − f2; convergence ratio R = ε21/ε32.

* ``R`` in (0, 1): monotonic convergence. The apparent order p comes from the fixed-point
  iteration of Celik et al. (2008), eq. (3) (exact for a constant ratio), then the
  Richardson-extrapolated value f_ext = (r21^p f1 − f2)/(r21^p − 1), the fine- and
  coarse-grid GCI (Roache: Fs |ε/f| / (r^p − 1)), the asymptotic-range ratio
  GCI23 / (r21^p GCI12) (≈ 1 in the asymptotic range) and the numerical standard
  uncertainty ``u_num = GCI12 |f1| / divisor`` (divisor = Fs by default, so that u_num is the
  magnitude of the Richardson error estimate |f_ext − f1|).
* ``R`` < 0: oscillatory; ``R`` ≥ 1: divergent. Reported as such: no order, no GCI, no u_num.
* |ε21| at or below ``roundoff_factor · eps · max|f|``: the two finest levels agree to
  round-off, there is nothing to extrapolate ("at_round_off"); u_num is that round-off bound.

With more than three levels, :func:`least_squares_order` fits f(h) = f0 + α h^p to every
level (Eça & Hoekstra 2014, the ``f0 + α h^p`` fit by least squares) beside the last-three
estimate. Error metrics (that tend to zero) get :func:`error_order` (pairwise and a log-log
least-squares slope) unless they sit at round-off (:func:`at_round_off`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Dict, Optional, Sequence

import numpy as np

EPS = float(np.finfo(np.float64).eps)
#: default multiple of machine epsilon (times the metric's scale) below which a value is round-off
ROUNDOFF_FACTOR = 1.0e3
#: coverage statement of the numbers reported by :func:`three_grid`
COVERAGE = ("GCI (Fs = {fs:g}): expanded numerical uncertainty, about 95 % coverage (Roache 1998, "
            "Celik et al. 2008); u_num = GCI/{div:g}: standard uncertainty (k = 1) as used in "
            "u_val = sqrt(u_num^2 + u_input^2 + u_D^2) (ASME V&V 20-2009)")

MONOTONIC = "monotonic"
OSCILLATORY = "oscillatory"
DIVERGENT = "divergent"
AT_ROUND_OFF = "at_round_off"
#: numeric codes of the convergence types (MLflow metrics are numbers)
CONVERGENCE_CODE = {MONOTONIC: 0.0, OSCILLATORY: 1.0, DIVERGENT: 2.0, AT_ROUND_OFF: 3.0}


def roundoff_bound(scale: float, factor: float = ROUNDOFF_FACTOR) -> float:
    """The round-off level ``factor · eps · |scale|`` of a quantity of size ``scale``."""
    return factor * EPS * abs(float(scale))


def at_round_off(values: Sequence[float], scale: float = 1.0, factor: float = ROUNDOFF_FACTOR) -> bool:
    """True when every finite value satisfies |v| ≤ factor · eps · scale.

    For a relative error metric (normalised by its reference) the scale is 1: with the
    default factor 1e3 anything at or below 2.2e-13 is round-off and has no order to fit.
    """
    v = np.abs(np.asarray(values, dtype=np.float64))
    v = v[np.isfinite(v)]
    return bool(v.size) and bool(np.all(v <= roundoff_bound(scale, factor)))


def apparent_order(e21: float, e32: float, r21: float, r32: float, tol: float = 1e-12,
                   max_iter: int = 200) -> tuple:
    """Apparent order p from ε21, ε32 (Celik et al. 2008, eqs. 3a–3c); returns (p, iterations).

    p = |ln|ε32/ε21| + q(p)| / ln r21, q(p) = ln((r21^p − s)/(r32^p − s)), s = sign(ε32/ε21);
    q = 0 for a constant ratio, where p follows in one step (negative for a monotonic divergence).
    """
    if r21 <= 1.0 or r32 <= 1.0:
        raise ValueError(f"apparent_order: refinement ratios must be > 1, got r21={r21}, r32={r32}")
    if e21 == 0.0 or e32 == 0.0:
        raise ValueError("apparent_order: two levels give identical values; the order is undefined")
    s = math.copysign(1.0, e32 / e21)
    ln_ratio = math.log(abs(e32 / e21))
    p = abs(ln_ratio) / math.log(r21)
    if r21 == r32:  # one step; a monotonic divergence (|ε21| > |ε32|) keeps its negative sign
        return (ln_ratio / math.log(r21) if s > 0 else p), 0
    it = 0
    for it in range(1, max_iter + 1):
        num, den = r21**p - s, r32**p - s
        if num <= 0.0 or den <= 0.0:  # q undefined (oscillatory with p → 0): keep the last p
            break
        p_new = abs(ln_ratio + math.log(num / den)) / math.log(r21)
        if abs(p_new - p) < tol:
            return p_new, it
        p = p_new
    return p, it


@dataclass(frozen=True)
class ThreeGrid:
    """Outcome of the three-grid procedure (1 = finest). Relative quantities are fractions."""

    convergence: str  # monotonic | oscillatory | divergent | at_round_off
    f1: float
    f2: float
    f3: float
    r21: float
    r32: float
    R: float  # convergence ratio ε21/ε32
    p: float  # apparent order (NaN unless monotonic)
    iterations: int
    f_extrapolated: float  # NaN unless monotonic
    e_a21: float  # approximate relative error |(f1 − f2)/f1|
    e_ext21: float  # extrapolated relative error |(f_ext − f1)/f_ext|
    gci_fine: float  # GCI12, relative
    gci_coarse: float  # GCI23, relative
    asymptotic_ratio: float  # GCI23 / (r21^p GCI12)
    u_num: float  # standard numerical uncertainty, in the units of f
    safety_factor: float
    divisor: float

    def as_dict(self) -> Dict[str, float]:
        d = {k: v for k, v in asdict(self).items() if k != "convergence"}
        d["convergence_code"] = CONVERGENCE_CODE[self.convergence]
        return {k: float(v) for k, v in d.items()}

    @property
    def coverage(self) -> str:
        return COVERAGE.format(fs=self.safety_factor, div=self.divisor)


def three_grid(f1: float, f2: float, f3: float, r21: float, r32: float, safety_factor: float = 1.25,
               divisor: Optional[float] = None, roundoff_factor: float = ROUNDOFF_FACTOR) -> ThreeGrid:
    """The full three-grid procedure on a solution quantity f (fine f1, medium f2, coarse f3)."""
    if r21 <= 1.0 or r32 <= 1.0:
        raise ValueError(f"three_grid: refinement ratios must be > 1, got r21={r21}, r32={r32}")
    f1, f2, f3 = float(f1), float(f2), float(f3)
    if not all(math.isfinite(v) for v in (f1, f2, f3)):
        raise ValueError(f"three_grid: non-finite solution values {f1}, {f2}, {f3}")
    div = float(safety_factor if divisor is None else divisor)
    e21, e32 = f2 - f1, f3 - f2
    nan = math.nan
    e_a21 = abs(e21 / f1) if f1 != 0.0 else nan
    common = dict(f1=f1, f2=f2, f3=f3, r21=r21, r32=r32, safety_factor=float(safety_factor), divisor=div,
                  e_a21=e_a21)
    bound = roundoff_bound(max(abs(f1), abs(f2), abs(f3)), roundoff_factor)
    if abs(e21) <= bound:  # the two finest agree to round-off (whatever the coarse one does)
        return ThreeGrid(convergence=AT_ROUND_OFF, R=nan, p=nan, iterations=0, f_extrapolated=f1, e_ext21=nan,
                         gci_fine=nan, gci_coarse=nan, asymptotic_ratio=nan, u_num=bound, **common)
    R = e21 / e32 if e32 != 0.0 else math.copysign(math.inf, e21)
    if R < 0.0 or R >= 1.0:
        kind = OSCILLATORY if R < 0.0 else DIVERGENT
        return ThreeGrid(convergence=kind, R=R, p=nan, iterations=0, f_extrapolated=nan, e_ext21=nan,
                         gci_fine=nan, gci_coarse=nan, asymptotic_ratio=nan, u_num=nan, **common)
    p, it = apparent_order(e21, e32, r21, r32)
    f_ext = (r21**p * f1 - f2) / (r21**p - 1.0)
    gci12 = safety_factor * e_a21 / (r21**p - 1.0)
    gci23 = safety_factor * abs(e32 / f2) / (r32**p - 1.0) if f2 != 0.0 else nan
    ratio = gci23 / (r21**p * gci12) if gci12 else nan
    return ThreeGrid(convergence=MONOTONIC, R=R, p=p, iterations=it, f_extrapolated=f_ext,
                     e_ext21=abs((f_ext - f1) / f_ext) if f_ext != 0.0 else nan, gci_fine=gci12,
                     gci_coarse=gci23, asymptotic_ratio=ratio, u_num=gci12 * abs(f1) / div, **common)


@dataclass(frozen=True)
class LeastSquaresOrder:
    """f(h) = f0 + α h^p fitted to every level by least squares (Eça & Hoekstra)."""

    p: float
    f0: float
    alpha: float
    residual_std: float  # standard deviation of the fit residuals, units of f
    n_levels: int

    def as_dict(self) -> Dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


def least_squares_order(h: Sequence[float], f: Sequence[float], p_bounds=(0.05, 8.0)) -> LeastSquaresOrder:
    """Least-squares fit of ``f0 + α h^p`` over all levels (≥ 4 for a meaningful residual).

    For each p, f0 and α are linear and solved exactly; p minimises the residual norm over
    ``p_bounds`` (bounded scalar minimisation on a log grid, refined by Brent's method).
    """
    from scipy.optimize import minimize_scalar

    h, f = np.asarray(h, np.float64), np.asarray(f, np.float64)
    ok = np.isfinite(h) & np.isfinite(f) & (h > 0)
    h, f = h[ok], f[ok]
    if h.size < 3:
        raise ValueError(f"least_squares_order: needs at least 3 levels, got {h.size}")
    hs = h / h.max()  # scaled spacing: conditioning of h^p

    def solve(p):
        A = np.column_stack([np.ones_like(hs), hs**p])
        coef, *_ = np.linalg.lstsq(A, f, rcond=None)
        res = f - A @ coef
        return coef, float(res @ res)

    grid = np.geomspace(p_bounds[0], p_bounds[1], 200)
    sse = np.array([solve(p)[1] for p in grid])
    k = int(np.argmin(sse))
    lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
    p = float(minimize_scalar(lambda q: solve(q)[1], bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-10}).x) if hi > lo else float(grid[k])
    (f0, a_scaled), sse_p = solve(p)
    dof = max(h.size - 3, 1)
    return LeastSquaresOrder(p=p, f0=float(f0), alpha=float(a_scaled / h.max() ** p),
                             residual_std=math.sqrt(sse_p / dof), n_levels=int(h.size))


def loglog_order(h: Sequence[float], e: Sequence[float]) -> float:
    """Least-squares slope of log e against log h over every positive level (NaN if < 2)."""
    h, e = np.asarray(h, float), np.asarray(e, float)
    ok = np.isfinite(h) & np.isfinite(e) & (h > 0) & (e > 0)
    if ok.sum() < 2 or np.ptp(np.log(h[ok])) == 0:
        return math.nan
    return float(np.polyfit(np.log(h[ok]), np.log(e[ok]), 1)[0])


def error_order(h: Sequence[float], e: Sequence[float], scale: float = 1.0,
                roundoff_factor: float = ROUNDOFF_FACTOR) -> Dict[str, object]:
    """Order of an error metric that tends to zero, levels ordered coarse to fine.

    Returns ``{"at_round_off": bool, "pairwise": [p_01, p_12, ...], "last": p,
    "least_squares": p, "n_round_off": k, "round_off_bound": b}``. Levels at or below the
    round-off bound b take part in no pair and no fit; when every level is there the metric
    is "at round-off": no pairs, NaN orders, nothing to fit.
    """
    h, e = np.asarray(h, float), np.asarray(e, float)
    bound = roundoff_bound(scale, roundoff_factor)
    low = np.isfinite(e) & (np.abs(e) <= bound)
    out: Dict[str, object] = {"round_off_bound": bound, "n_round_off": int(low.sum())}
    if at_round_off(e, scale, roundoff_factor):
        return {**out, "at_round_off": True, "pairwise": [], "last": math.nan, "least_squares": math.nan}
    pairs = []
    for i in range(len(h) - 1):
        if e[i] > bound and e[i + 1] > bound and h[i] > h[i + 1]:
            pairs.append(math.log(e[i] / e[i + 1]) / math.log(h[i] / h[i + 1]))
        else:
            pairs.append(math.nan)
    above = ~low
    return {**out, "at_round_off": False, "pairwise": pairs, "last": pairs[-1] if pairs else math.nan,
            "least_squares": loglog_order(h[above], e[above]) if above.sum() >= 3 else math.nan}
