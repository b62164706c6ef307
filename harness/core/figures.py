"""Standard figures of a run directory and of a study, drawn from the files already there.

``for_run(family, run_dir)`` is the runner's post-run hook: it reads what the family
adapter left in the run directory (``series.json``, ``metrics.json`` and the adapter's
result files) and writes the figures people look at for that family, unless the adapter
already drew an equivalent one. ``for_study(table, study, out_dir)`` draws a study's
metrics against its parameter on log-log axes with the least-squares slope, metrics at
round-off as a band.
Figures are PNG (matplotlib, Agg), written atomically; they never fail a run.
"""
from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from harness.core.atomic import atomic_write_bytes
from harness.metrics.verification import loglog_order

log = logging.getLogger(__name__)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig, dpi: int = 100) -> bytes:
    """``fig`` as PNG bytes (tight bounding box); the figure is closed."""
    plt = _plt()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def save(fig, path: Path, dpi: int = 100) -> Path:
    """Write ``fig`` as PNG atomically and close it."""
    atomic_write_bytes(path, png_bytes(fig, dpi))
    return Path(path)


def _load(run_dir: Path, name: str) -> Optional[Any]:
    p = run_dir / name
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        log.warning("figures: cannot read %s: %s", p, exc)
        return None


# -- per family -----------------------------------------------------------------------------
def load_transfer(run_dir: Path) -> List[Path]:
    """F_M against F_B over the averaging intervals and the per-interval error e_F(t)."""
    forces = _load(run_dir, "forces.json")
    if not forces or "F_M" not in forces or "F_B" not in forces:
        return []
    F_M, F_B = np.asarray(forces["F_M"], float), np.asarray(forces["F_B"], float)
    edges = np.asarray(forces.get("t_edges", np.arange(F_M.size + 1)), float)
    t = 0.5 * (edges[:-1] + edges[1:]) if edges.size == F_M.size + 1 else np.arange(F_M.size, dtype=float)
    scale = float(np.max(np.abs(F_B))) or 1.0
    plt = _plt()
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6, 5), sharex=True)
    a1.plot(t, F_B, "o-", ms=3, label="F_B (Basilisk, exact average)")
    a1.plot(t, F_M, "x--", ms=4, label="F_M (MPM nodal sum)")
    a1.set_ylabel("axial force [N]")
    a1.legend(fontsize=8)
    a1.grid(alpha=0.3)
    err = np.abs(F_M - F_B) / scale
    a2.semilogy(t, np.maximum(err, 1e-17), "s-", ms=3)
    a2.set_xlabel("t (interval midpoint) [s]")
    a2.set_ylabel("|F_M - F_B| / max|F_B|")
    a2.grid(alpha=0.3, which="both")
    a1.set_title("force history: MPM against Basilisk")
    return [save(fig, run_dir / "fig_force_error.png")]


def dem(run_dir: Path) -> List[Path]:
    """Energy against step (when the adapter drew none) and shear force against displacement."""
    out = []
    series = _load(run_dir, "series.json") or {}
    if "energy" in series and not (run_dir / "energy.png").exists():
        E = np.asarray(series["energy"], float)
        plt = _plt()
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot(np.arange(E.size), E)
        ax.set_xlabel("output step")
        ax.set_ylabel("total energy [J]")
        ax.grid(alpha=0.3)
        out.append(save(fig, run_dir / "fig_energy.png"))
    shear = _load(run_dir, "shear_history.json")
    if shear and not (run_dir / "shear.png").exists():
        d = np.asarray(shear["displacement"], float)
        plt = _plt()
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot(d * 1e3, shear["shear_force"], label="shear force")
        ax.set_xlabel("shear displacement [mm]")
        ax.set_ylabel("force [N]")
        ax.grid(alpha=0.3)
        out.append(save(fig, run_dir / "fig_shear.png"))
    return out


def beam(run_dir: Path) -> List[Path]:
    """Energy against time of the full and reduced models (responses.npz), if not drawn."""
    p = run_dir / "responses.npz"
    if not p.is_file() or (run_dir / "tip_and_energy.png").exists():
        return []
    with np.load(p) as z:
        if not {"t", "E_full", "E_red"} <= set(z.files):
            return []
        t, Ef, Er = z["t"], z["E_full"], z["E_red"]
        Wf = z["W_ext_full"] if "W_ext_full" in z.files else None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(t, Ef, label="E full")
    ax.plot(t, Er, "--", label="E reduced")
    if Wf is not None:
        ax.plot(t, Ef[0] + Wf, ":", label="E(0) + W_ext")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("energy [J]")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return [save(fig, run_dir / "fig_energy.png")]


def vessel(run_dir: Path) -> List[Path]:
    """The track in the horizontal plane (north against east) of every ``*.json`` with ``q``."""
    out = []
    for p in sorted(run_dir.glob("*.json")):
        if p.name in ("metrics.json", "manifest.json", "outcome.json", "series.json", "tracking.json"):
            continue
        doc = _load(run_dir, p.name)
        if not isinstance(doc, dict) or "q" not in doc:
            continue
        q = np.asarray(doc["q"], float)
        if q.ndim != 2 or q.shape[1] < 2:
            continue
        plt = _plt()
        fig, ax = plt.subplots(figsize=(5, 5))
        ax.plot(q[:, 1], q[:, 0])
        ax.plot(q[:1, 1], q[:1, 0], "o", label="start")
        ax.set_xlabel("y East [m]")
        ax.set_ylabel("x North [m]")
        ax.set_aspect("equal", adjustable="datalim")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(f"trajectory ({p.stem})")
        name = "fig_trajectory.png" if p.stem == "trajectory" else f"fig_trajectory_{p.stem}.png"
        out.append(save(fig, run_dir / name))
    return out


def integrators(run_dir: Path) -> List[Path]:
    """Work-precision (significant digits against wall time) from a benchmark's bench.json."""
    rows = _load(run_dir, "bench.json")
    if not isinstance(rows, list) or not rows:
        return []
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    groups: Dict[tuple, List[tuple]] = {}
    for r in rows:
        if all(k in r for k in ("problem", "variant", "wall", "scd")):
            groups.setdefault((r["problem"], r["variant"]), []).append((float(r["wall"]), float(r["scd"])))
    for (prob, var), pts in sorted(groups.items()):
        pts = sorted(pts)
        ax.semilogx([w for w, _ in pts], [s for _, s in pts], "o-", ms=3, label=f"{prob} {var}")
    ax.set_xlabel("wall time [s]")
    ax.set_ylabel("significant correct digits")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title("work-precision")
    return [save(fig, run_dir / "fig_work_precision.png")]


FAMILIES: Dict[str, Callable[[Path], List[Path]]] = {
    "load_transfer": load_transfer, "dem": dem, "beam": beam, "vessel": vessel, "integrators": integrators,
}


def series_overview(run_dir: Path) -> List[Path]:
    """Every series of ``series.json`` against its index, when the run has no figure at all."""
    series = _load(run_dir, "series.json") or {}
    if not series or any(run_dir.glob("*.png")):
        return []
    plt = _plt()
    names = list(series)[:6]
    fig, axes = plt.subplots(len(names), 1, figsize=(6, 2.2 * len(names)), squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        ax.plot(np.asarray(series[name], float))
        ax.set_ylabel(name, fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step")
    return [save(fig, run_dir / "fig_series.png")]


def for_run(family: str, run_dir: Path) -> List[Path]:
    """The post-run hook: write the family's standard figures; returns the files written."""
    run_dir = Path(run_dir)
    out = []
    fn = FAMILIES.get(family)
    if fn is not None:
        out += fn(run_dir)
    out += series_overview(run_dir)
    return out


# -- per study -----------------------------------------------------------------------------
# least-squares slope of log y against log x over the positive finite pairs (NaN if < 2)
loglog_slope = loglog_order


def round_off_band(ax, x, bound: float, label: str) -> None:
    """A metric at round-off: a shaded band from 1e-3 of the bound up to the bound over ``x``."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x) & (x > 0)]
    if not x.size:
        return
    ax.fill_between([x.min(), x.max()], [bound * 1e-3] * 2, [bound] * 2, alpha=0.25, label=f"{label} (<= {bound:.2g})")
    ax.set_xscale("log")
    ax.set_yscale("log")


def for_study(table, study, out_dir: Path, gated: Sequence[str] = ()) -> List[Path]:
    """Metrics of a study against its parameter, log-log: only metrics with a fitted order.

    Draws the study's own metric and the jobs' gated metrics (``gated``) that are positive
    and not constant over at least two jobs, each with its least-squares slope and, when the
    study expects an order, the expected-order line through the finest level. A metric at
    round-off (every value <= ``study.roundoff_factor`` eps) gets a band, no fitted line.
    ``study_metrics.png`` in ``out_dir``. No parameter, no figure.
    """
    from harness.metrics import verification as V

    if study is None or "parameter" not in table or len(table) < 2 or study.get("kind") == "validation":
        return []
    computed = table[table["status"].isin(("ok", "tracking_error"))]
    x = computed["parameter"].to_numpy(float)
    if np.sum(np.isfinite(x)) < 2:  # a non-numeric swept key
        return []
    factor = float(study.get("roundoff_factor") or V.ROUNDOFF_FACTOR)
    bound = V.roundoff_bound(1.0, factor)
    skip = {"job", "case", "status", "verdict", "mlflow_run_id", "parameter"}
    candidates = [str(study.metric)] if study.get("metric") and str(study.metric) in computed else []
    candidates += [n for n in computed.columns if n not in skip and n not in candidates and n in gated]
    fitted, round_off = [], []
    for name in candidates:
        y = computed[name].to_numpy(float)
        fin = np.isfinite(y)
        if V.at_round_off(y, 1.0, factor):
            round_off.append(name)
        elif np.sum(fin & (y > bound)) >= 2 and np.ptp(y[fin]) > 0:
            fitted.append(name)
    fitted, round_off = fitted[:6], round_off[:4]
    if not fitted and not round_off:
        return []
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    order = np.argsort(x)
    expected = study.get("expected_order")
    sign = -1.0 if str(study.get("spacing", "direct")) == "inverse" else 1.0
    for name in fitted:
        y = computed[name].to_numpy(float)[order]
        xs = x[order]
        ok = np.isfinite(y) & (y > bound) & (xs > 0)
        slope = loglog_slope(xs[ok], y[ok])
        (line,) = ax.loglog(xs[ok], y[ok], "o", ms=4, label=f"{name} (least-squares slope {slope:.3g})")
        if np.isfinite(slope):
            c = np.exp(np.mean(np.log(y[ok]) - slope * np.log(xs[ok])))
            ax.loglog(xs[ok], c * xs[ok] ** slope, "-", color=line.get_color(), lw=1)
        if expected is not None and name == str(study.get("metric")):
            i_f = int(np.argmin(y[ok]))
            xf, yf = xs[ok][i_f], y[ok][i_f]
            ax.loglog(xs[ok], yf * (xs[ok] / xf) ** (sign * float(expected)), ":", color="0.3",
                      label=f"expected order {float(expected):g}")
    if round_off:
        round_off_band(ax, x, bound, f"{', '.join(round_off)} at round-off, no order")
    ax.set_xlabel(str(study.get("parameter")))
    ax.set_ylabel("metric")
    ax.set_title(f"{study.get('name')}: metrics against parameter (log-log)")
    ax.grid(alpha=0.3, which="both")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    return [save(fig, Path(out_dir) / "study_metrics.png")]
