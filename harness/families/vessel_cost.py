"""Cost against simulated time for the vessel benchmark, from the timed run itself.

:class:`Clocked` wraps an integrator: every ``solve`` (one window or pass of the vessel's
stepping) records the end of its time span (simulated s) and the wall time elapsed since
:meth:`Clocked.start`; the last record per simulated time is the cost of the run so far.
:func:`plot` draws wall time against simulated time, log-log, with the 1x and 1000x real-time lines.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Tuple

import numpy as np


class Clocked:
    """An integrator that records (simulated end time, elapsed wall time) per solve."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.points: List[Tuple[float, float]] = []
        self._t0 = time.perf_counter()

    def start(self) -> "Clocked":
        self.points, self._t0 = [], time.perf_counter()
        return self

    def solve(self, problem, t_eval):
        sol = self.inner.solve(problem, t_eval)
        self.points.append((float(problem.t_span[1]), time.perf_counter() - self._t0))
        return sol

    def curve(self) -> Tuple[np.ndarray, np.ndarray]:
        """(simulated s, wall s), the last wall time per simulated time, increasing."""
        last: Dict[float, float] = {}
        for t, w in self.points:
            last[t] = w
        t = np.array(sorted(last))
        return t, np.array([last[k] for k in t])


def plot(curves: Dict[str, Tuple[np.ndarray, np.ndarray]]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from harness.core.figures import png_bytes

    fig, ax = plt.subplots(figsize=(5.5, 4))
    t_max = 1.0
    for label, (t, w) in curves.items():
        keep = (t > 0) & (w > 0)
        ax.loglog(t[keep], w[keep], "-", label=label)
        t_max = max(t_max, float(t.max(initial=1.0)))
    ts = np.array([1.0, t_max])
    ax.loglog(ts, ts, "k:", lw=0.8, label="real time")
    ax.loglog(ts, ts / 1000.0, "k--", lw=0.8, label="1000x real time")
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("wall time (s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("vessel manoeuvre: cost against simulated time")
    return png_bytes(fig)
