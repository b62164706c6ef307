"""Exact step averages of piecewise-linear histories vs independent fine integration."""
import numpy as np
import pytest

from models.load_transfer.time_average import (
    OutOfHistoryError,
    exact_time_average,
    step_edges,
    step_times_for_end,
)

# knots with a jump at t = 0.45 (repeated knot) and uneven spacing
T = np.array([0.0, 0.07, 0.2, 0.21, 0.45, 0.45, 0.6, 0.93, 1.0])
V = np.array([[0.0, 1.0], [2.0, -1.0], [1.5, 0.5], [3.0, 0.0], [1.0, 2.0], [-2.0, 4.0], [0.5, 1.0], [1.0, -3.0], [0.0, 0.0]])


def _p_lin(t):
    """Independent evaluation of the interpolant: right limit at the jump (measure zero)."""
    out = np.empty((t.size, V.shape[1]))
    for j in range(V.shape[1]):
        k = np.searchsorted(T, t, side="right") - 1
        k = np.clip(k, 0, T.size - 2)
        # skip zero-width intervals: take the next one
        k = np.where(T[k + 1] == T[k], k + 1, k)
        th = (t - T[k]) / (T[k + 1] - T[k])
        out[:, j] = V[k, j] + th * (V[k + 1, j] - V[k, j])
    return out


def _fine_mean(a, b, n=4000):
    """Composite Gauss–Legendre on sub-intervals split at the knots (exact per linear piece)."""
    pts = np.unique(np.concatenate([[a, b], T[(T > a) & (T < b)]]))
    g, w = np.polynomial.legendre.leggauss(3)
    tot = 0.0
    for lo, hi in zip(pts[:-1], pts[1:]):
        s = np.linspace(lo, hi, n // len(pts) + 2)
        for l2, h2 in zip(s[:-1], s[1:]):
            x = 0.5 * (l2 + h2) + 0.5 * (h2 - l2) * g
            tot = tot + (0.5 * (h2 - l2) * w[:, None] * _p_lin(x)).sum(axis=0)
    return tot / (b - a)


def test_steps_spanning_several_knots_and_a_jump():
    edges = np.array([0.0, 0.013, 0.3, 0.44, 0.46, 0.61, 0.999, 1.0])  # steps 1 and 5 span several knots
    got = exact_time_average(T, V, edges)
    ref = np.array([_fine_mean(a, b, n=400) for a, b in zip(edges[:-1], edges[1:])])
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13)
    # impulse: sum of step means times dt equals the exact integral over the whole history
    exact_total = np.sum(0.5 * np.diff(T)[:, None] * (V[1:] + V[:-1]), axis=0)
    np.testing.assert_allclose((got * np.diff(edges)[:, None]).sum(axis=0), exact_total, rtol=1e-14, atol=1e-15)


def test_non_aligned_uniform_steps_conserve_impulse_and_match_point_means():
    edges = step_edges(0.0, 1.0 / 37.0, 37)
    got = exact_time_average(T, V, edges)
    ref = np.array([_fine_mean(a, b, n=200) for a, b in zip(edges[:-1], edges[1:])])
    np.testing.assert_allclose(got, ref, atol=1e-13)


def test_trailing_shape_is_kept():
    vals = np.random.default_rng(1).standard_normal((T.size, 2, 3))
    edges = np.linspace(0.0, 1.0, 5)
    got = exact_time_average(T, vals, edges)
    assert got.shape == (4, 2, 3)
    flat = exact_time_average(T, vals.reshape(T.size, 6), edges)
    np.testing.assert_array_equal(got.reshape(4, 6), flat)


def test_out_of_history_raises_naming_step_and_span():
    with pytest.raises(OutOfHistoryError, match=r"step 3 .*\[0\.0, 1\.0\]"):
        exact_time_average(T, V, np.array([0.0, 0.3, 0.6, 0.9, 1.2]))
    with pytest.raises(OutOfHistoryError, match="step 0"):
        exact_time_average(T, V, np.array([-0.1, 0.5]))
    assert issubclass(OutOfHistoryError, ValueError)


def test_unloaded_ends_are_zero_outside():
    tk = np.array([0.2, 0.5, 0.8])
    vk = np.array([[0.0], [3.0], [0.0]])
    edges = np.array([-1.0, 0.0, 0.35, 0.9, 2.0])
    got = exact_time_average(tk, vk, edges, unloaded_ends=True)[:, 0]
    # triangle of height 3 on [0.2, 0.8]: int over [0, 0.35] = 0.5*0.15*1.5 ; over [0.35, 0.9] = 0.9 - 0.1125
    np.testing.assert_allclose(got, [0.0, 0.1125 / 0.35, (0.9 - 0.1125) / 0.55, 0.0], rtol=1e-14, atol=1e-16)
    with pytest.raises(OutOfHistoryError):
        exact_time_average(tk, vk, edges)


def test_step_edge_helpers_and_bad_edges():
    np.testing.assert_allclose(step_edges(0.5, 0.25, 4), [0.5, 0.75, 1.0, 1.25, 1.5])
    np.testing.assert_allclose(step_times_for_end(1.0, 0.1), np.arange(11) * 0.1, atol=1e-15)
    with pytest.raises(ValueError, match="t_end"):
        step_times_for_end(1.05, 0.1)
    with pytest.raises(ValueError, match="t_edges"):
        exact_time_average(T, V, np.array([0.0, 0.5, 0.5]))
    with pytest.raises(ValueError, match="values"):
        exact_time_average(T, V[:-1], np.array([0.0, 0.5]))


def test_tiny_steps_late_in_a_long_history_keep_full_precision():
    # a cumulative-sum difference would lose ~ eps * T / dt = 1e-6 here; the local rule does not
    tk = np.array([0.0, 3000.0, 10000.0])
    vk = np.array([[1.0], [2.0], [0.5]])
    edges = 5000.0 + 1e-6 * np.arange(4)
    got = exact_time_average(tk, vk, edges)[:, 0]
    mid = 0.5 * (edges[1:] + edges[:-1])
    exact = 2.0 - 1.5 * (mid - 3000.0) / 7000.0  # mean of a linear function = value at the midpoint
    np.testing.assert_allclose(got, exact, rtol=1e-14)
    # and a tiny step across the knot at 3000 s
    e2 = np.array([3000.0 - 1e-6, 3000.0 + 1e-6])
    left, right = 2.0 - 1e-6 / 3000.0, 2.0 - 1.5e-6 / 7000.0
    ref = 0.5 * (0.5 * (left + 2.0) + 0.5 * (2.0 + right))
    np.testing.assert_allclose(exact_time_average(tk, vk, e2)[:, 0], ref, rtol=1e-14)
