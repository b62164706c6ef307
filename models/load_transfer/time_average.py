"""Exact step averages of a piecewise-linear history (impulse-conserving time synchronisation).

For target steps [t_n, t_{n+1}] that need not align with the source knots, the step value is
the exact mean of the piecewise-linear interpolant, p^{n+1/2} = (1/dt) int p_lin dt, so that the
impulse of the target equals the impulse of the source. Repeated knots are jumps.
"""
from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger(__name__)


class OutOfHistoryError(ValueError):
    """A target step lies (partly) outside the source history span.

    >>> import numpy as np
    >>> from models.load_transfer import OutOfHistoryError, exact_time_average
    >>> try:
    ...     exact_time_average(np.array([0.0, 1.0]), np.array([0.0, 2.0]), np.array([0.5, 1.5]))
    ... except OutOfHistoryError as err:
    ...     print(str(err)[:39])
    t_edges: step 0 [0.5, 1.5] s lies outsi
    """


def _cumulative(time: np.ndarray, values: np.ndarray) -> np.ndarray:
    """C_k = int_{t_0}^{t_k} p_lin dt (trapezoids are exact for linear pieces), (Nt, m)."""
    dt = np.diff(time)[:, None]
    pieces = 0.5 * dt * (values[1:] + values[:-1])
    out = np.zeros_like(values)
    np.cumsum(pieces, axis=0, out=out[1:])
    return out


def _step_integrals(time, values, cum, a, b):
    """∫_a^b p_lin dt for steps a < b inside [t_0, t_end], (Nsteps, m), locally accurate.

    A step inside one knot interval uses the local trapezoid of its end values (no
    cumulative-sum cancellation); a step over several knots adds its two partial pieces to
    C[k_b] − C[k_a + 1]. ``a`` takes the right limit and ``b`` the left limit at a jump.
    """
    nt = time.size
    ka = np.clip(np.searchsorted(time, a, side="right") - 1, 0, nt - 2)
    kb = np.clip(np.searchsorted(time, b, side="left") - 1, 0, nt - 2)

    def value(k, t):
        w = time[k + 1] - time[k]
        th = np.divide(t - time[k], w, out=np.zeros_like(t), where=w > 0.0)
        return values[k] + th[:, None] * (values[k + 1] - values[k])

    va, vb = value(ka, a), value(kb, b)
    out = (b - a)[:, None] * 0.5 * (va + vb)
    s = np.flatnonzero(kb > ka)  # steps over one or more knots
    if s.size:
        k1, k2 = ka[s] + 1, kb[s]
        head = (time[k1] - a[s])[:, None] * 0.5 * (va[s] + values[k1])
        tail = (b[s] - time[k2])[:, None] * 0.5 * (values[k2] + vb[s])
        out[s] = head + (cum[k2] - cum[k1]) + tail
    return out


def exact_time_average(time, values, t_edges, *, unloaded_ends: bool = False) -> np.ndarray:
    """Exact mean of the piecewise-linear interpolant over every step [t_n, t_{n+1}].

    time     : (Nt,) s knots, non-decreasing (a repeated knot is a jump).
    values   : (Nt, ...) knot values (any trailing shape, e.g. (Nt, Nr) Pa).
    t_edges  : (Nsteps+1,) s step edges, strictly increasing.
    unloaded_ends : values are zero outside [time[0], time[-1]]; otherwise a step outside that
               span raises OutOfHistoryError.
    Returns (Nsteps, ...) step means. Vectorised: cumulative integral + searchsorted.

    Example: p = 2 t on [0, 1] s averaged over two steps of 0.5 s has means 0.5 and 1.5.

    >>> import numpy as np
    >>> from models.load_transfer import exact_time_average
    >>> exact_time_average(np.array([0.0, 1.0]), np.array([0.0, 2.0]), np.array([0.0, 0.5, 1.0]))
    array([0.5, 1.5])
    """
    time = np.asarray(time, dtype=np.float64)
    vals = np.asarray(values, dtype=np.float64)
    edges = np.asarray(t_edges, dtype=np.float64)
    if time.ndim != 1 or time.size < 2:
        raise ValueError(f"time: must be 1-D with >= 2 knots, got shape {time.shape}")
    if np.any(np.diff(time) < 0.0) or not np.all(np.isfinite(time)):
        raise ValueError("time: must be finite and non-decreasing")
    if vals.shape[:1] != time.shape:
        raise ValueError(f"values: leading dimension must equal len(time)={time.size}, got shape {vals.shape}")
    if edges.ndim != 1 or edges.size < 2:
        raise ValueError(f"t_edges: must be 1-D with >= 2 edges, got shape {edges.shape}")
    if not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0.0):
        raise ValueError("t_edges: must be finite and strictly increasing")
    trailing = vals.shape[1:]
    flat = vals.reshape(time.size, -1)
    t0, t1 = time[0], time[-1]
    if not unloaded_ends:
        bad = np.flatnonzero((edges[:-1] < t0) | (edges[1:] > t1))
        if bad.size:
            n = int(bad[0])
            raise OutOfHistoryError(
                f"t_edges: step {n} [{float(edges[n])!r}, {float(edges[n + 1])!r}] s lies outside the history span "
                f"[{float(t0)!r}, {float(t1)!r}] s ({bad.size} step(s) outside); the source does not certify "
                f"unloaded ends (unloaded_ends=False)"
            )
    # zero outside the span: clipping the integration limits is exact.
    te = np.clip(edges, t0, t1)
    a, b = te[:-1], te[1:]
    cum = _cumulative(time, flat)
    integ = _step_integrals(time, flat, cum, a, b)
    integ = np.where((b > a)[:, None], integ, 0.0)
    means = integ / np.diff(edges)[:, None]
    return means.reshape((edges.size - 1,) + trailing)


class StreamingTimeAverage:
    """Exact step means of a piecewise-linear history, one target step at a time.

    For a solver that learns its step [t_n, t_{n+1}] only when it takes it (Kratos' TIME and
    DELTA_TIME): ``mean(t0, t1)`` returns the same value as ``exact_time_average`` over that one
    step (knot values (Nt, ...), any trailing shape) at a cost proportional to the knots inside
    the step: two binary searches and one trapezoid sum over the knots in [t0, t1], never a
    pass over the whole history. Steps may come in any order (no state but the history).

    time, values, unloaded_ends: as :func:`exact_time_average` (validated once here).
    """

    def __init__(self, time, values, *, unloaded_ends: bool = False) -> None:
        t = np.asarray(time, dtype=np.float64)
        v = np.asarray(values, dtype=np.float64)
        if t.ndim != 1 or t.size < 2 or not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0.0):
            raise ValueError("time: must be finite, 1-D, non-decreasing, with >= 2 knots")
        if v.shape[:1] != t.shape:
            raise ValueError(f"values: leading dimension must equal len(time)={t.size}, got shape {v.shape}")
        self.time, self.values, self.unloaded_ends = t, v, bool(unloaded_ends)
        self.knots_visited = 0  # knots read by the last call (a cost counter for tests)

    def _value(self, x: float, side: str) -> np.ndarray:
        """The one-sided value at x inside the span (side "right" just after x, "left" just before)."""
        t, v = self.time, self.values
        k = int(np.searchsorted(t, x, side=side))
        k = min(max(k, 1), t.size - 1)
        w = t[k] - t[k - 1]
        th = (x - t[k - 1]) / w if w > 0.0 else 0.0
        return v[k - 1] + th * (v[k] - v[k - 1])

    def mean(self, t0: float, t1: float) -> np.ndarray:
        """(1 / (t1 - t0)) ∫_{t0}^{t1} p_lin dt, shape values.shape[1:]."""
        t0, t1 = float(t0), float(t1)
        if not (np.isfinite(t0) and np.isfinite(t1) and t1 > t0):
            raise ValueError(f"step: must satisfy t0 < t1 (finite), got [{t0!r}, {t1!r}] s")
        ts, te = self.time[0], self.time[-1]
        if not self.unloaded_ends and (t0 < ts or t1 > te):
            raise OutOfHistoryError(
                f"step [{t0!r}, {t1!r}] s lies outside the history span [{float(ts)!r}, {float(te)!r}] s; the "
                f"source does not certify unloaded ends (unloaded_ends=False)")
        a, b = max(t0, ts), min(t1, te)
        if b <= a:  # wholly outside an unloaded history
            self.knots_visited = 0
            return np.zeros(self.values.shape[1:])
        lo = int(np.searchsorted(self.time, a, side="right"))
        hi = int(np.searchsorted(self.time, b, side="left"))
        tt = np.concatenate([[a], self.time[lo:hi], [b]])
        vv = np.concatenate([self._value(a, "right")[None], self.values[lo:hi], self._value(b, "left")[None]])
        self.knots_visited = hi - lo
        dt = np.diff(tt).reshape((-1,) + (1,) * (vv.ndim - 1))
        return np.sum(0.5 * dt * (vv[1:] + vv[:-1]), axis=0) / (t1 - t0)


def step_edges(t0: float, dt: float, n_steps: int) -> np.ndarray:
    """Uniform step edges t0 + n dt, n = 0..n_steps, s.

    >>> from models.load_transfer import step_edges
    >>> step_edges(0.0, 0.25, 4)
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    if not (np.isfinite(dt) and dt > 0.0):
        raise ValueError(f"dt: must be a positive finite step in s, got {dt!r}")
    if int(n_steps) != n_steps or int(n_steps) < 1:
        raise ValueError(f"n_steps: must be an integer >= 1, got {n_steps!r}")
    return float(t0) + float(dt) * np.arange(int(n_steps) + 1, dtype=np.float64)


def step_times_for_end(t_end: float, dt: float, *, t0: float = 0.0) -> np.ndarray:
    """Uniform edges t0, t0+dt, ..., t0+N dt covering [t0, t_end] with N = round((t_end-t0)/dt).

    (t_end - t0)/dt must be an integer to 1e-9; (Kratos' end_time = (N - 1/2) dt rule belongs
    to the exporter, not here.)

    >>> from models.load_transfer import step_times_for_end
    >>> step_times_for_end(1.0e-3, 2.5e-4) * 1e3        # ms
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    span = float(t_end) - float(t0)
    if not (np.isfinite(span) and span > 0.0):
        raise ValueError(f"t_end: must be > t0={t0!r}, got {t_end!r}")
    n = int(round(span / float(dt)))
    if n < 1 or abs(n * float(dt) - span) > 1e-9 * float(dt) * max(n, 1):
        raise ValueError(f"t_end: (t_end - t0)/dt must be a positive integer, got {span / float(dt)!r}")
    return step_edges(t0, dt, n)
