"""Axisymmetric wall-pressure histories: ring averages on radial edges, piecewise linear in time.

A history holds, at every time knot, the average gauge pressure (positive in compression) of
each source annulus ``[r_i, r_{i+1}]``. Between knots the history is the piecewise-linear
interpolant; a repeated knot is a jump. All quantities are SI (s, m, Pa) and float64.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

log = logging.getLogger(__name__)


def check_radial_edges(radial_edges) -> np.ndarray:
    """Validate ring edges [m]: a finite 1-D array of >= 2 edges, radial_edges[0] >= 0, strictly
    increasing. Every error names the first offending index and its value(s). Returns float64."""
    e = np.asarray(radial_edges, dtype=np.float64)
    if e.ndim != 1 or e.size < 2:
        raise ValueError(f"radial_edges: must be a 1-D array of >= 2 edges, got shape {e.shape}")
    bad = np.flatnonzero(~np.isfinite(e))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"radial_edges: must be finite; radial_edges[{k}] = {float(e[k])!r} ({bad.size} non-finite)")
    if e[0] < 0.0:
        raise ValueError(f"radial_edges: radial_edges[0] must be >= 0, got {float(e[0])!r}")
    bad = np.flatnonzero(np.diff(e) <= 0.0)
    if bad.size:
        k = int(bad[0]) + 1
        raise ValueError(f"radial_edges: must be strictly increasing; first at index {k}: radial_edges[{k}] = "
                         f"{float(e[k])!r} <= radial_edges[{k - 1}] = {float(e[k - 1])!r} ({bad.size} offending edge(s))")
    return e

PROFILES = ("uniform", "parabolic")
PULSES = ("constant", "triangular", "rectangular")


def _as_float_array(name: str, value, ndim: int) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"{name}: must be a {ndim}-D array, got shape {arr.shape}")
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        idx = ", ".join(str(int(i)) for i in bad[0])
        raise ValueError(f"{name}: must be finite; {name}[{idx}] = {float(arr[tuple(bad[0])])!r} "
                         f"({len(bad)} non-finite)")
    return arr


@dataclass(frozen=True)
class RingPressureHistory:
    """Ring-averaged wall pressure history.

    time          : (Nt,) s, non-decreasing; a repeated knot is a jump.
    radial_edges  : (Nr+1,) m, strictly increasing, radial_edges[0] >= 0.
    pressure      : (Nt, Nr) Pa, ring averages, gauge, positive in compression.
    shear         : (Nt, Nr) Pa radial shear ring averages, or None.
    unloaded_ends : the history certifies unloaded initial and final states; the load is then
                    zero outside [time[0], time[-1]] (requires pressure/shear zero at both ends).

    >>> import numpy as np
    >>> from models.load_transfer import RingPressureHistory
    >>> h = RingPressureHistory(time=np.array([0.0, 1.0]), radial_edges=np.array([0.0, 0.5, 1.0]),
    ...                         pressure=np.array([[1.0e5, 1.0e5], [3.0e5, 3.0e5]]))
    >>> h.n_rings, h.ring_areas() / np.pi                # A_i = π (r_{i+1}² − r_i²), m^2
    (2, array([0.25, 0.75]))
    >>> h.force() / np.pi                                # F_B = p π R² at the knots, N
    array([100000., 300000.])
    """

    time: np.ndarray
    radial_edges: np.ndarray
    pressure: np.ndarray
    shear: Optional[np.ndarray] = None
    unloaded_ends: bool = False

    def __post_init__(self) -> None:
        time = _as_float_array("time", self.time, 1)
        edges = _as_float_array("radial_edges", self.radial_edges, 1)
        pressure = _as_float_array("pressure", self.pressure, 2)
        if time.size < 2:
            raise ValueError(f"time: needs at least 2 knots, got {time.size}")
        if np.any(np.diff(time) < 0.0):
            k = int(np.argmax(np.diff(time) < 0.0))
            raise ValueError(f"time: must be non-decreasing, time[{k + 1}]={time[k + 1]!r} < time[{k}]={time[k]!r}")
        if time[-1] <= time[0]:
            raise ValueError("time: must span a positive interval (time[-1] > time[0])")
        if np.any(time[2:] == time[:-2]):
            raise ValueError("time: a knot may be repeated at most twice (one jump per instant)")
        check_radial_edges(edges)
        expected = (time.size, edges.size - 1)
        if pressure.shape != expected:
            raise ValueError(f"pressure: shape must be (Nt, Nr) = {expected}, got {pressure.shape}")
        shear = None
        if self.shear is not None:
            shear = _as_float_array("shear", self.shear, 2)
            if shear.shape != expected:
                raise ValueError(f"shear: shape must be (Nt, Nr) = {expected}, got {shear.shape}")
        unloaded = bool(self.unloaded_ends)
        if unloaded:
            for name, arr in (("pressure", pressure), ("shear", shear)):
                if arr is not None and (np.any(arr[0] != 0.0) or np.any(arr[-1] != 0.0)):
                    raise ValueError(
                        f"{name}: unloaded_ends=True certifies unloaded initial and final states, "
                        f"so {name}[0] and {name}[-1] must be exactly zero"
                    )
        for name, arr in (("time", time), ("radial_edges", edges), ("pressure", pressure), ("shear", shear)):
            if arr is not None:
                arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "unloaded_ends", unloaded)

    @property
    def n_rings(self) -> int:
        return int(self.radial_edges.size - 1)

    def ring_areas(self) -> np.ndarray:
        """Exact annulus areas A_i = pi (r_{i+1}^2 - r_i^2), m^2, shape (Nr,)."""
        r = self.radial_edges
        return np.pi * (r[1:] - r[:-1]) * (r[1:] + r[:-1])

    def force(self) -> np.ndarray:
        """Normal force F_B(t_k) = sum_i p_i(t_k) A_i at the knots, N, shape (Nt,)."""
        return self.pressure @ self.ring_areas()

    def radial_centers(self) -> np.ndarray:
        """Ring mid-radii (for plotting only), m."""
        return 0.5 * (self.radial_edges[1:] + self.radial_edges[:-1])


# ----------------------------------------------------------------------------- analytic cases

def _pulse_knots(pulse: str, pulse_times: Sequence[float], amplitude: float):
    times = tuple(float(t) for t in pulse_times)
    if pulse == "constant":
        if len(times) != 2:
            raise ValueError(f"pulse_times: 'constant' needs (t0, t1), got {times}")
        t, a = np.array(times), np.array([1.0, 1.0])
    elif pulse == "triangular":
        if len(times) != 3:
            raise ValueError(f"pulse_times: 'triangular' needs (t0, t1, t2), got {times}")
        t, a = np.array(times), np.array([0.0, 1.0, 0.0])
    elif pulse == "rectangular":
        if len(times) != 2:
            raise ValueError(f"pulse_times: 'rectangular' needs (t0, t1), got {times}")
        t0, t1 = times
        t, a = np.array([t0, t0, t1, t1]), np.array([0.0, 1.0, 1.0, 0.0])
    else:
        raise ValueError(f"pulse: must be one of {PULSES}, got {pulse!r}")
    if not np.all(np.isfinite(times)) or np.any(np.diff(np.asarray(times)) <= 0.0):
        raise ValueError(f"pulse_times: must be finite and strictly increasing, got {times}")
    return t, a * float(amplitude)


def _pulse_integral(pulse: str, pulse_times: Sequence[float]) -> float:
    """Integral of the unit-amplitude pulse over its knots, s."""
    times = [float(t) for t in pulse_times]
    if pulse in ("constant", "rectangular"):
        return times[1] - times[0]
    if pulse == "triangular":
        return 0.5 * (times[2] - times[0])
    raise ValueError(f"pulse: must be one of {PULSES}, got {pulse!r}")


def _parabolic_ring_averages(edges: np.ndarray, p0: float, R: float) -> np.ndarray:
    """Exact ring averages of p0 * max(0, 1 - r^2/R^2) over [r_i, r_{i+1}], Pa.

    Uses G(r) = r^2 - r^4/(2 R^2) (G' = 2r (1 - r^2/R^2)) clipped at r = R, so that the
    average is p0 (G(c_{i+1}) - G(c_i)) / (r_{i+1}^2 - r_i^2); inside R this is exactly
    p0 (1 - (r_i^2 + r_{i+1}^2) / (2 R^2)).
    """
    lo, hi = edges[:-1], edges[1:]
    inside = hi <= R
    avg_inside = p0 * (1.0 - (lo * lo + hi * hi) / (2.0 * R * R))
    c_lo, c_hi = np.minimum(lo, R), np.minimum(hi, R)
    g_lo = c_lo * c_lo - c_lo ** 4 / (2.0 * R * R)
    g_hi = c_hi * c_hi - c_hi ** 4 / (2.0 * R * R)
    avg_straddle = p0 * (g_hi - g_lo) / ((hi - lo) * (hi + lo))
    return np.where(inside, avg_inside, avg_straddle)


def analytic_ring_history(
    *,
    r_max: float,
    n_rings: int,
    profile: str = "uniform",
    p0: float,
    profile_radius: Optional[float] = None,
    pulse: str = "constant",
    pulse_times: Sequence[float] = (0.0, 1.0),
    amplitude: float = 1.0,
    unloaded_ends: bool = False,
    shear: float = 0.0,
) -> RingPressureHistory:
    """Analytic ring history on ``n_rings`` equal-width rings of [0, r_max].

    profile  : "uniform" p = p0, or "parabolic" p = p0 (1 - r^2/R^2) for r <= R and 0 beyond,
               R = profile_radius or r_max; ring values are EXACT ring averages.
    pulse    : time factor g(t) * amplitude; "constant" knots (t0, t1) at 1; "triangular"
               (t0,0),(t1,1),(t2,0); "rectangular" (t0,0),(t0,1),(t1,1),(t1,0) (jumps).
    shear    : uniform radial shear amplitude, Pa, with the same time factor (0 -> zeros).

    Example: exact ring averages of a parabolic profile give F = π p0 R²/2.

    >>> import numpy as np
    >>> from models.load_transfer import analytic_ring_history
    >>> h = analytic_ring_history(r_max=1.0, n_rings=4, profile="parabolic", p0=2.0e5)
    >>> h.pressure.shape                                  # (Nt, Nr), knots (0, 1) s
    (2, 4)
    >>> h.pressure[0]                                     # Pa
    array([193750., 168750., 118750.,  43750.])
    >>> round(float(h.force()[0] / (np.pi * 2.0e5 / 2)), 12)
    1.0
    """
    r_max = float(r_max)
    if not (np.isfinite(r_max) and r_max > 0.0):
        raise ValueError(f"r_max: must be a positive finite radius in m, got {r_max!r}")
    if int(n_rings) != n_rings or int(n_rings) < 1:
        raise ValueError(f"n_rings: must be an integer >= 1, got {n_rings!r}")
    if not np.isfinite(p0):
        raise ValueError(f"p0: must be finite, got {p0!r}")
    edges = np.linspace(0.0, r_max, int(n_rings) + 1)
    if profile == "uniform":
        radial = np.full(int(n_rings), float(p0))
    elif profile == "parabolic":
        R = r_max if profile_radius is None else float(profile_radius)
        if not (np.isfinite(R) and R > 0.0):
            raise ValueError(f"profile_radius: must be a positive radius in m, got {profile_radius!r}")
        radial = _parabolic_ring_averages(edges, float(p0), R)
    else:
        raise ValueError(f"profile: must be one of {PROFILES}, got {profile!r}")
    t, g = _pulse_knots(pulse, pulse_times, amplitude)
    pressure = g[:, None] * radial[None, :]
    shear_arr = g[:, None] * np.full(int(n_rings), float(shear))[None, :]
    return RingPressureHistory(
        time=t, radial_edges=edges, pressure=pressure, shear=shear_arr, unloaded_ends=unloaded_ends
    )


def exact_force(profile: str, p0: float, R: float, *, r_max: Optional[float] = None) -> float:
    """Closed-form normal force of the profile over the disk of radius r_max (default R), N.

    uniform   : p0 pi R^2 (R = the loaded disk radius; r_max, if given, replaces R).
    parabolic : pi p0 R^2 / 2 when r_max >= R; pi p0 (c^2 - c^4/(2R^2)) with c = min(r_max, R).

    >>> import numpy as np
    >>> from models.load_transfer import exact_force
    >>> round(exact_force("uniform", 1.0e5, 2.0) / (1.0e5 * np.pi * 2.0**2), 12)
    1.0
    >>> round(exact_force("parabolic", 1.0e5, 2.0) / (np.pi * 1.0e5 * 2.0**2 / 2), 12)
    1.0
    """
    R = float(R)
    if profile == "uniform":
        rad = R if r_max is None else float(r_max)
        return float(p0) * np.pi * rad * rad
    if profile == "parabolic":
        c = R if r_max is None else min(float(r_max), R)
        return float(np.pi * p0 * (c * c - c ** 4 / (2.0 * R * R)))
    raise ValueError(f"profile: must be one of {PROFILES}, got {profile!r}")


def exact_impulse(
    profile: str,
    p0: float,
    R: float,
    pulse: str,
    pulse_times: Sequence[float],
    amplitude: float = 1.0,
    *,
    r_max: Optional[float] = None,
) -> float:
    """Closed-form impulse J = F * amplitude * integral of the unit pulse over its knots, N s.

    constant/rectangular: (t1 - t0); triangular: (t2 - t0)/2.

    >>> import numpy as np
    >>> from models.load_transfer import exact_impulse
    >>> J = exact_impulse("uniform", 1.0e5, 1.0, "triangular", (0.0, 1.0e-3, 2.0e-3))
    >>> round(J / (1.0e5 * np.pi * 1.0e-3), 12)          # F (t2 - t0)/2, N s
    1.0
    """
    return exact_force(profile, p0, R, r_max=r_max) * float(amplitude) * _pulse_integral(pulse, pulse_times)
