"""AMRClaw path of the rigid-wall CFD case (issue 33): prepare (fetch sources, compile our
application), run, stopped + restarted run, leaf-only extraction, patch-layout figure.

The build cache is ``$HARNESS_CLAWPACK_CACHE``, else ``<project>/outputs/cache/clawpack`` (kept
between runs: the source distribution is fetched once and the application compiled once per
source hash).
"""
from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any, Dict, Tuple

import numpy as np

from harness.core.shipped import cache_root
from harness.core.context import HarnessInputError, RunContext
from harness.families.metric_kinds import CFD as METRIC_KINDS  # noqa: F401 - read by the runner

log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """The Clawpack sources and compiled applications: $HARNESS_CLAWPACK_CACHE, else the harness cache."""
    return Path(os.environ.get("HARNESS_CLAWPACK_CACHE") or cache_root() / "clawpack").resolve()


def _amr_config(p, full: bool):
    from models.load_transfer.cfd_amrclaw import AmrConfig

    a = p.amr
    return AmrConfig(base=a.base_full if full else a.base, levels=a.levels, ratio=a.ratio,
                     flag_threshold=a.flag_threshold, regrid_interval=a.regrid_interval)


def prepare() -> Tuple[Path, Path]:
    """(Clawpack source tree, compiled executable)."""
    from models.load_transfer import cfd_amrclaw as A

    import fcntl

    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:  # parallel jobs of a suite share the cache: one fetch, one build
        fcntl.flock(lock, fcntl.LOCK_EX)
        claw = A.clawpack_source(cache)
        return claw, A.build(cache, claw)


def _restart(exe: Path, ctx: RunContext, setup, amr, p, edges, uninterrupted) -> Dict[str, float]:
    """Stop a run at output restart_frame (checkpoint there), restart it from that checkpoint to
    t_end, and compare the wall history and the last frame with the uninterrupted run."""
    from models.load_transfer import cfd_amrclaw as A

    k = int(p.restart_frame)
    t_stop = p.t_end * k / p.n_outputs
    stop_dir = ctx.run_dir / "amr_stopped"
    A.write_data(stop_dir, setup, amr, t_stop, k, checkpoint_times=[t_stop])
    out_stop = A.run(exe, stop_dir)
    chks = sorted(out_stop.glob("fort.chk*"))
    if not chks:
        return {"restart_max_diff": float("inf")}
    chk = chks[0]  # the checkpoint at t_stop (AMRClaw writes checkpoints in step order)
    res_dir = ctx.run_dir / "amr_restarted"
    A.write_data(res_dir, setup, amr, p.t_end, p.n_outputs, restart_file=chk.name)
    (res_dir / "_output").mkdir(parents=True, exist_ok=True)
    shutil.copy2(chk, res_dir / "_output" / chk.name)
    out_res = A.run(exe, res_dir)
    frames = [f for f in A.frame_numbers(out_res) if f >= k]
    resumed = A.extract(out_res, setup, edges, frames=frames)
    a = np.vstack(uninterrupted.extractor.pressure)[frames]
    b = np.vstack(resumed.extractor.pressure)
    same_t = np.array_equal(np.asarray(uninterrupted.extractor.times)[frames], np.asarray(resumed.extractor.times))
    if a.shape != b.shape or not same_t:
        return {"restart_max_diff": float("inf")}
    return {"restart_max_diff": float(np.max(np.abs(a - b)) / np.max(np.abs(np.vstack(uninterrupted.extractor.pressure)))),
            "restart_frames_compared": float(len(frames)), "restart_stop_time": float(t_stop)}


def patch_figure(path: Path, outdir: Path, frame: int, setup) -> Path:
    """The AMR patches of one frame (level colours) with the leaf wall faces marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from models.load_transfer.cfd_amrclaw import read_frame
    from models.load_transfer.cfd_wall import wall_faces

    fr = read_frame(outdir, frame, setup)
    faces = wall_faces(fr.rows)
    fig, ax = plt.subplots(figsize=(5.2, 5.0))
    colors = {1: "0.6", 2: "tab:blue", 3: "tab:orange", 4: "tab:green", 5: "tab:red"}
    for lev, r0, r1, z0, z1 in sorted(fr.patches):
        ax.add_patch(Rectangle((r0, z0), r1 - r0, z1 - z0, fill=False, lw=0.6 + 0.4 * lev,
                               ec=colors.get(lev, "k"), label=f"level {lev}"))
    for lev in sorted(set(int(v) for v in faces.level)):
        m = faces.level == lev
        ax.hlines(np.zeros(int(m.sum())), faces.r0[m], faces.r1[m], colors=colors.get(lev, "k"), lw=5)
        ax.plot(faces.r0[m], np.zeros(int(m.sum())), "|", color="k", ms=6, mew=0.5)
    h, lab = ax.get_legend_handles_labels()
    uniq = dict(zip(lab, h))
    ax.legend(uniq.values(), uniq.keys(), loc="upper right", fontsize=8)
    ax.set_xlim(0, setup.r_max)
    ax.set_ylim(-0.02, setup.z_max)
    ax.set_aspect("equal")
    ax.set_xlabel("r [m]")
    ax.set_ylabel("z [m]")
    ax.set_title(f"AMR patches at t = {fr.t * 1e3:.3g} ms; wall leaf faces (thick, ticks)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def amr_rigid_wall(setup, p, ctx: RunContext, edges, command: str, full: bool):
    """Prepare, run and extract the AMRClaw rigid-wall blast; returns (run, metadata, metrics, info)."""
    from models.load_transfer import cfd_amrclaw as A
    from models.load_transfer.cfd_export import production_metadata
    from models.load_transfer.cfd_pyclaw import clawpack_version, fortran_compiler

    amr = _amr_config(p, full)
    with ctx.stage("prepare"):
        try:
            claw, exe = prepare()
        except A.AmrBuildError as exc:
            raise HarnessInputError(f"case.params.solver: amrclaw: {exc}") from exc
    with ctx.stage("cfd"):
        A.write_data(ctx.run_dir / "amr", setup, amr, p.t_end, p.n_outputs)
        out = A.run(exe, ctx.run_dir / "amr")
    with ctx.stage("extract_frames"):
        run = A.extract(out, setup, edges)
    metrics: Dict[str, Any] = {"patches_max": float(max(run.patch_counts)),
                               "covered_wall_cells_max": float(max(run.covered_counts)),
                               "levels_on_wall": float(len(run.levels_seen))}
    if p.restart_frame is not None:
        with ctx.stage("restart"):
            metrics.update(_restart(exe, ctx, setup, amr, p, edges, run))
    # the figure's frame: the first with the most levels on the wall (coarse cells under fine ones)
    frame = int(np.argmax(run.wall_levels)) if run.wall_levels else 0
    patch_figure(ctx.output_path("amr_patches.png"), out, run.frames[frame], setup)
    meta = production_metadata(
        setup, run.extractor, solver=f"clawpack {clawpack_version()} amrclaw 2d (euler_4wave, r-z src2)",
        application_sha256=A.app_sha256(), compiler=fortran_compiler(), command=command, delta_min=run.dx_min,
        levels=[min(run.levels_seen), max(run.levels_seen)], study_id=p.study_id,
        extra={"amr": {"base": amr.base, "levels": amr.levels, "ratio": amr.ratio, "flag_threshold": amr.flag_threshold,
                       "regrid_interval": amr.regrid_interval}, "clawpack_source": str(claw)})
    info = {"amr_patch_counts": run.patch_counts, "amr_wall_faces": run.wall_face_counts,
            "amr_covered": run.covered_counts, "executable": str(exe), "patch_figure_frame": run.frames[frame]}
    return run, meta, metrics, info
