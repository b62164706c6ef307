"""StreamingTimeAverage (one step at a time) against exact_time_average and closed forms; bad
radial_edges name the first offending index."""
import numpy as np
import pytest

from models.load_transfer.operator import ConservativePressureOperator
from models.load_transfer.sources import RingPressureHistory, check_radial_edges
from models.load_transfer.surfaces import disk_mesh
from models.load_transfer.time_average import OutOfHistoryError, StreamingTimeAverage, exact_time_average


def _history(rng, n_knots=400, n_rings=5):
    t = np.sort(np.concatenate([[0.0, 1.0], rng.uniform(0.0, 1.0, n_knots - 2)]))
    t[100] = t[101]  # a jump (repeated knot)
    return t, rng.standard_normal((n_knots, n_rings))


def test_streaming_equals_the_batch_average_step_by_step():
    rng = np.random.default_rng(7)
    t, p = _history(rng)
    edges = np.sort(np.concatenate([[0.0, 1.0], rng.uniform(0.0, 1.0, 149)]))
    edges = np.concatenate([edges[:60], [t[100]], edges[60:]])  # a step edge on the jump
    edges = np.unique(edges)
    batch = exact_time_average(t, p, edges)
    s = StreamingTimeAverage(t, p)
    stream = np.array([s.mean(a, b) for a, b in zip(edges[:-1], edges[1:])])
    np.testing.assert_allclose(stream, batch, rtol=1e-11, atol=1e-13 * np.abs(p).max())
    # impulse: the step means times the step lengths integrate the history exactly
    J = np.diff(edges) @ stream
    np.testing.assert_allclose(J, np.trapezoid(p, t, axis=0), rtol=1e-12, atol=1e-14)


def test_cost_is_the_knots_inside_the_step():
    t = np.linspace(0.0, 1.0, 100_001)
    s = StreamingTimeAverage(t, np.sin(t)[:, None])
    m = s.mean(0.5, 0.5 + 3.5e-5)  # 3 or 4 knots inside, not 100,001
    assert s.knots_visited <= 4
    exact = (np.cos(0.5) - np.cos(0.5 + 3.5e-5)) / 3.5e-5
    assert m[0] == pytest.approx(exact, rel=1e-9)  # piecewise-linear interpolation error only


def test_triangular_pulse_between_knots_and_unloaded_ends():
    s = StreamingTimeAverage([0.0, 1.0, 2.0], [[0.0], [1.0], [0.0]], unloaded_ends=True)
    assert s.mean(-1.0, 3.0)[0] == pytest.approx(1.0 / 4.0, rel=1e-15)  # impulse 1 over 4 s
    assert s.mean(0.5, 1.5)[0] == pytest.approx(0.75, rel=1e-15)
    assert s.mean(5.0, 6.0)[0] == 0.0
    strict = StreamingTimeAverage([0.0, 1.0, 2.0], [[0.0], [1.0], [0.0]])
    with pytest.raises(OutOfHistoryError, match=r"step \[1\.5, 2\.5\] s lies outside the history span \[0\.0, 2\.0\]"):
        strict.mean(1.5, 2.5)
    with pytest.raises(ValueError, match=r"step: must satisfy t0 < t1"):
        strict.mean(1.0, 1.0)


@pytest.mark.parametrize("edges,message", [
    ([0.0, 0.1, 0.2, 0.2, 0.4, 0.3], r"first at index 3: radial_edges\[3\] = 0\.2 <= radial_edges\[2\] = 0\.2 \(2 offending"),
    ([0.0, 0.5, 0.4], r"first at index 2: radial_edges\[2\] = 0\.4 <= radial_edges\[1\] = 0\.5"),
    ([0.0, np.nan, 1.0], r"must be finite; radial_edges\[1\] = nan"),
    ([-0.1, 1.0], r"radial_edges\[0\] must be >= 0, got -0\.1"),
    ([1.0], r"must be a 1-D array of >= 2 edges"),
])
def test_bad_radial_edges_name_the_first_offending_index(edges, message):
    with pytest.raises(ValueError, match=message):
        check_radial_edges(edges)
    with pytest.raises(ValueError, match=message):
        ConservativePressureOperator(disk_mesh(radius=1.0, resolution=2), edges)
    if len(edges) >= 2:
        with pytest.raises(ValueError, match=message):
            RingPressureHistory(time=[0.0, 1.0], radial_edges=edges, pressure=np.zeros((2, len(edges) - 1)))
