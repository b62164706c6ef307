"""ROS2 against CVODE at equal accuracy: work-precision curves and their ratio at fixed scd.

Part of ``bench/integrators_ros2``. For each problem, ros2_adaptive and cvode_bdf (CV_NORMAL,
CVODE's own loop in C; banded LU when the problem declares ``jac_band``, as ROS2) are run
over a list of rtols (atol = rtol * the problem's atol/rtol), each after an untimed warm-up
solve, best of ``repeats`` wall times (short solves repeated further, up to ``max_repeats``,
until they ran ``min_total_s``). Both curves (scd against log10 wall time) are
interpolated linearly at scd = 2, 3, 4; ``ratio_ros2_to_cvode_scd<k>_<problem>`` is ROS2's
wall time over CVODE's there (NaN where a curve does not reach that scd). One log-log figure
(wall time against the error 10^-scd) per run, ``work_precision_vs_cvode.png``.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List, Sequence

import numpy as np

SCD_LEVELS = (2.0, 3.0, 4.0)


def at_scd(scd: Sequence[float], wall: Sequence[float], level: float) -> float:
    """Wall time at ``level`` significant digits by linear interpolation of log10(wall) in scd
    over the points sorted by scd; NaN when ``level`` lies outside the curve's scd range."""
    pts = sorted((s, w) for s, w in zip(scd, wall) if math.isfinite(s) and math.isfinite(w) and w > 0)
    if len(pts) < 2 or not pts[0][0] <= level <= pts[-1][0]:
        return math.nan
    s = np.array([p[0] for p in pts])
    lw = np.log10([p[1] for p in pts])
    # scd is monotone in rtol only roughly: keep the cheapest point of each scd order (running min of cost)
    lw = np.minimum.accumulate(lw[::-1])[::-1]
    return float(10.0 ** np.interp(level, s, lw))


def _best(solve: Callable[[], Any], repeats: int, min_total_s: float = 0.0, max_repeats: int = 0):
    """Best wall time of ``repeats`` solves after a warm-up; short solves are repeated further
    (up to ``max_repeats``) until they have run ``min_total_s`` in all: the best of three
    millisecond solves on a loaded machine is still mostly the scheduler's."""
    solve()  # warm-up: compiled kernels and first-call costs out of the timing
    best, sol, total, k = math.inf, None, 0.0, 0
    while k < repeats or (total < min_total_s and k < max_repeats):
        t0 = time.perf_counter()
        sol = solve()
        wall = time.perf_counter() - t0
        best, total, k = min(best, wall), total + wall, k + 1
        if not sol.success:
            break
    return best, sol


def versus_cvode(problems: Sequence[str], rtols: Sequence[float], repeats: int, get_problem, get_integrator,
                 scd_of, ros2_options: Dict[str, Any] | None = None, min_total_s: float = 0.0,
                 max_repeats: int = 0, ros2_variants: Dict[str, Dict[str, Any]] | None = None) -> tuple:
    """(metrics, rows, curves): the work-precision comparison described in the module docstring;
    ``ros2_options`` go to every ros2_adaptive (e.g. ``{"loop": "compiled"}``); every point is the
    best of ``repeats`` timings, or of more (up to ``max_repeats``) until ``min_total_s`` ran.
    ``ros2_variants`` (label -> further ros2_adaptive options, e.g. ``{"ros2w": {"reuse_steps":
    20}}``) adds a curve per label and ``ratio_<label>_to_cvode_scd<k>_<problem>``."""
    metrics: Dict[str, float] = {}
    rows: List[Dict[str, Any]] = []
    curves: Dict[str, Dict[str, tuple]] = {}
    for pname in problems:
        tp = get_problem(pname)
        ratio_atol = tp.atol / tp.rtol
        curves[pname] = {}
        curve_options = {"ros2_adaptive": ("ros2_adaptive", {}), "cvode_bdf": ("cvode_bdf", {}),
                         **{label: ("ros2_adaptive", dict(o)) for label, o in (ros2_variants or {}).items()}}
        for label, (method, extra) in curve_options.items():
            scds, walls = [], []
            for rtol in rtols:
                opts: Dict[str, Any] = {"rtol": float(rtol), "atol": float(rtol) * ratio_atol}
                if method == "cvode_bdf":
                    opts.update(max_num_steps=100000, output_mode="interpolate")
                else:
                    opts.update(ros2_options or {}, **extra)
                integ = get_integrator(method, **opts)
                wall, sol = _best(lambda: integ.solve(tp.problem, tp.t_eval), repeats, min_total_s, max_repeats)
                scd = scd_of(sol, tp) if sol.success else math.nan
                wall = wall if sol.success else math.nan
                scds.append(scd)
                walls.append(wall)
                rows.append({"problem": pname, "method": label, "rtol": float(rtol), "scd": scd, "wall": wall,
                             "n_steps": sol.stats.n_steps, "nfev": sol.stats.nfev, "njev": sol.stats.njev,
                             "nlu": sol.stats.nlu, "n": tp.problem.n})
            curves[pname][label] = (scds, walls)
        for level in SCD_LEVELS:
            tag = f"scd{level:g}_{pname}"
            w_c = at_scd(*curves[pname]["cvode_bdf"], level)
            metrics[f"wall_cvode_{tag}"] = w_c
            for label in curve_options:
                if label == "cvode_bdf":
                    continue
                name = "ros2" if label == "ros2_adaptive" else label
                w_r = at_scd(*curves[pname][label], level)
                metrics[f"wall_{name}_{tag}"] = w_r
                metrics[f"ratio_{name}_to_cvode_{tag}"] = w_r / w_c if w_c > 0 else math.nan
        metrics[f"n_states_{pname}"] = float(tp.problem.n)
    return metrics, rows, curves


def plot(curves: Dict[str, Dict[str, tuple]]) -> bytes:
    """Log-log work-precision figure: wall time (s) against the error 10^-scd, one panel per problem."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from harness.core.figures import png_bytes

    fig, axes = plt.subplots(1, len(curves), figsize=(4.2 * len(curves), 3.6), squeeze=False)
    for ax, (pname, by_method) in zip(axes[0], curves.items()):
        for method, (scd, wall) in by_method.items():
            pts = [(10.0 ** -s, w) for s, w in zip(scd, wall) if math.isfinite(s) and math.isfinite(w)]
            if pts:
                ax.loglog(*zip(*pts), "o-", label=method)
        ax.set_xlabel("error 10^-scd")
        ax.set_ylabel("wall time (s)")
        ax.set_title(pname)
        ax.invert_xaxis()
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("work-precision: ros2_adaptive vs CVODE (best of repeats, warm)")
    return png_bytes(fig)
