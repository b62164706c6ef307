"""AMRClaw variant of the CFD source family: the r-z blast above a rigid wall with adaptive
refinement (issue 33), from our Fortran application in ``cfd_amrclaw_app/``.

- :func:`clawpack_source`: the Clawpack 5.14.0 source tree the application compiles against
  (``$CLAW`` if it holds ``amrclaw/src/2d``, else the source distribution fetched once from the
  package index's JSON simple API (PEP 691), checked against its pinned SHA-256 and unpacked into a
  cache directory: pip installs no Fortran sources). ``pip download`` is only the fallback, since
  it builds the whole package (meson-python has no metadata-only hook): 123-287 s here against
  about 2 s for the 9.7 MB file.
- :func:`build`: copy the application, ``make .exe`` (gfortran), return the executable; the build
  directory is keyed by the application's SHA-256, so a changed source rebuilds.
- :func:`write_data` / :func:`run`: the ``*.data`` files of a run (clawutil's writers) and the run.
- :func:`frame_rows` / :func:`extract`: read every output frame (binary64, all patches with their
  level) and apply the seed's extraction event to the leaf wall faces only.
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np

from .cfd_setup import BlastSetup, pressure
from .cfd_wall import WallFaces, WallRow, wall_faces
from .extraction import WallLoadsExtractor

log = logging.getLogger(__name__)

APP_DIR = Path(__file__).parent / "cfd_amrclaw_app"
CLAWPACK_VERSION = "5.14.0"
CLAWPACK_SDIST_SHA256 = "b9f3208fe9e1d834122ae86e2af536a3010435d0d65e6629f360416ea9cffe89"
APP_FILES = ("Makefile", "blast_module.f90", "setprob.f90", "qinit.f90", "src2.f90", "flag2refine2.f90")


class AmrBuildError(RuntimeError):
    """The Clawpack sources could not be found / fetched, or the application did not compile."""


@dataclass(frozen=True)
class AmrConfig:
    """AMR parameters: base grid cells in r (square cells), levels, refinement ratio (space and
    time), flag threshold (|dp| / p_ambient between neighbours of a cell), regrid interval."""

    base: int = 25
    levels: int = 3
    ratio: int = 2
    flag_threshold: float = 0.05
    regrid_interval: int = 2
    cfl: float = 0.8

    def dx_min(self, setup: BlastSetup) -> float:
        return setup.r_max / self.base / self.ratio ** (self.levels - 1)


def app_sha256() -> str:
    """SHA-256 over the application's source files (name and content, in a fixed order)."""
    h = hashlib.sha256()
    for name in APP_FILES:
        h.update(name.encode())
        h.update((APP_DIR / name).read_bytes())
    return h.hexdigest()


def clawpack_source(cache_dir: Path) -> Path:
    """The Clawpack source tree: $CLAW, or the cached / freshly fetched source distribution."""
    env = os.environ.get("CLAW")
    if env and (Path(env) / "amrclaw" / "src" / "2d" / "amr2.f90").is_file():
        return Path(env)
    root = Path(cache_dir) / f"clawpack-{CLAWPACK_VERSION}"
    if (root / "amrclaw" / "src" / "2d" / "amr2.f90").is_file():
        return root
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    sdist = cache_dir / f"clawpack-{CLAWPACK_VERSION}.tar.gz"
    if not sdist.is_file():
        _fetch_sdist(cache_dir, sdist)
    tmp = cache_dir / f".unpack-{os.getpid()}"
    with tarfile.open(sdist) as tf:
        tf.extractall(tmp, filter="data")
    if root.exists():
        shutil.rmtree(tmp)
    else:
        os.replace(tmp / f"clawpack-{CLAWPACK_VERSION}", root)
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def _fetch_sdist(cache_dir: Path, sdist: Path) -> None:
    """Download the pinned source distribution to ``sdist`` (atomically, SHA-256 checked)."""
    try:
        _fetch_sdist_from_index(sdist)
        return
    except (OSError, ValueError, KeyError) as exc:
        log.warning("clawpack %s sources not fetched from the index's JSON API (%s); trying pip download",
                    CLAWPACK_VERSION, exc)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    cmd = [sys.executable, "-m", "pip", "download", f"clawpack=={CLAWPACK_VERSION}", "--no-deps", "--no-binary",
           ":all:", "--no-build-isolation", "-d", str(cache_dir)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if res.returncode != 0 or not sdist.is_file():
        raise AmrBuildError(f"pip download of the clawpack {CLAWPACK_VERSION} sources failed: "
                            f"{(res.stderr or res.stdout).strip().splitlines()[-1:]}")


def _fetch_sdist_from_index(sdist: Path) -> None:
    """Fetch ``clawpack-<version>.tar.gz`` named by the index's PEP 691 JSON page ($PIP_INDEX_URL or
    PyPI); the bytes must match :data:`CLAWPACK_SDIST_SHA256` or nothing is written."""
    import json
    import urllib.request

    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    request = urllib.request.Request(f"{index}/clawpack/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    url = next(f["url"] for f in files if f["filename"] == sdist.name)
    with urllib.request.urlopen(url, timeout=300) as response:
        data = response.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != CLAWPACK_SDIST_SHA256:
        raise ValueError(f"{sdist.name} from {url} has SHA-256 {digest}, expected {CLAWPACK_SDIST_SHA256}")
    tmp = sdist.with_name(f".{sdist.name}.{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, sdist)


def build(cache_dir: Path, claw: Optional[Path] = None) -> Path:
    """Compile the application (``make .exe``) into cache_dir/amrclaw-app-<sha12>/xamr."""
    claw = claw or clawpack_source(cache_dir)
    sha = app_sha256()
    bdir = Path(cache_dir) / f"amrclaw-app-{sha[:12]}"
    exe = bdir / "xamr"
    if exe.is_file():
        return exe
    tmp = Path(cache_dir) / f".build-{sha[:12]}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in APP_FILES:
        shutil.copy2(APP_DIR / name, tmp / name)
    env = dict(os.environ, CLAW=str(claw), FC=os.environ.get("FC", "gfortran"), CLAW_PYTHON=sys.executable)
    res = subprocess.run(["make", ".exe"], cwd=tmp, capture_output=True, text=True, env=env, check=False)
    (tmp / "build.log").write_text(res.stdout + res.stderr)
    if res.returncode != 0 or not (tmp / "xamr").is_file():
        raise AmrBuildError(f"make .exe failed in {tmp} (see build.log): {res.stderr.strip().splitlines()[-3:]}")
    if bdir.exists():
        shutil.rmtree(tmp)
    else:
        os.replace(tmp, bdir)
    return exe


def write_data(run_dir: Path, setup: BlastSetup, amr: AmrConfig, t_end: float, n_outputs: int, *,
               checkpoint_times: Sequence[float] = (), restart_file: Optional[str] = None) -> None:
    """Write claw.data, amr.data, setprob.data (and the other files AMRClaw reads) into run_dir."""
    from clawpack.clawutil import data

    rd = data.ClawRunData("amrclaw", 2)
    prob = rd.new_UserData(name="probdata", fname="setprob.data")
    for name, value in (("gamma", setup.gamma), ("R0", setup.R0), ("H", setup.H), ("pressure_ratio", setup.pressure_ratio),
                        ("density_ratio", setup.density_ratio), ("p_ambient", setup.p_ambient),
                        ("rho_ambient", setup.rho_ambient), ("flag_threshold", amr.flag_threshold)):
        prob.add_param(name, float(value))
    c = rd.clawdata
    c.lower = [0.0, 0.0]
    c.upper = [setup.r_max, setup.z_max]
    nz = max(1, int(round(amr.base * setup.z_max / setup.r_max)))
    c.num_cells = [amr.base, nz]
    c.num_eqn = 4
    c.num_aux = 0
    c.capa_index = 0
    c.t0 = 0.0
    c.output_style = 1
    c.num_output_times = n_outputs
    c.tfinal = t_end
    c.output_t0 = True
    c.output_format = "binary64"
    c.output_q_components = "all"
    c.output_aux_components = "none"
    c.dt_variable = True
    c.dt_initial = 0.2 * setup.r_max / amr.base / setup.sound_speed
    c.dt_max = 1.0e99
    c.cfl_desired = amr.cfl
    c.cfl_max = 1.0
    c.steps_max = 10**6
    c.order = 2
    c.dimensional_split = "unsplit"
    c.transverse_waves = 2
    c.num_waves = 4
    c.limiter = ["mc"] * 4
    c.use_fwaves = False
    c.source_split = "godunov"
    c.num_ghost = 2
    c.bc_lower = ["wall", "wall"]  # axis r = 0, rigid wall z = 0
    c.bc_upper = ["extrap", "extrap"]
    c.restart = restart_file is not None
    c.restart_file = restart_file or ""
    if checkpoint_times:
        c.checkpt_style = 2
        c.checkpt_times = [float(t) for t in checkpoint_times]
    else:
        c.checkpt_style = 0
    a = rd.amrdata
    a.amr_levels_max = amr.levels
    a.refinement_ratios_x = [amr.ratio] * max(1, amr.levels - 1)
    a.refinement_ratios_y = [amr.ratio] * max(1, amr.levels - 1)
    a.refinement_ratios_t = [amr.ratio] * max(1, amr.levels - 1)
    a.aux_type = []
    a.flag_richardson = False
    a.flag2refine = True
    a.flag2refine_tol = amr.flag_threshold
    a.regrid_interval = amr.regrid_interval
    a.regrid_buffer_width = 2
    a.clustering_cutoff = 0.7
    a.verbosity_regrid = 0
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    rd.write(out_dir=str(run_dir))


def run(exe: Path, run_dir: Path, outdir: str = "_output") -> Path:
    """Run the executable in run_dir (reads its *.data); output frames in run_dir/outdir."""
    out = Path(run_dir) / outdir
    out.mkdir(parents=True, exist_ok=True)
    for f in Path(run_dir).glob("*.data"):
        shutil.copy2(f, out / f.name)
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    with open(out / "xamr.log", "w") as log_fh:
        res = subprocess.run([str(exe)], cwd=out, stdout=log_fh, stderr=subprocess.STDOUT, env=env, check=False)
    if res.returncode != 0:
        tail = (out / "xamr.log").read_text().strip().splitlines()[-5:]
        raise RuntimeError(f"AMRClaw run failed (exit {res.returncode}) in {out}: {tail}")
    return out


@dataclass(frozen=True)
class FramePatches:
    """All patches of one output frame: time [s], per patch (level, r0, r1, z0, z1), the wall rows."""

    t: float
    patches: List[Tuple[int, float, float, float, float]]
    rows: List[WallRow]


def read_frame(outdir: Path, frame: int, setup: BlastSetup) -> FramePatches:
    from clawpack.pyclaw import Solution

    sol = Solution(frame, path=str(outdir), file_format="binary64")
    patches = []
    rows = []
    for st in sol.states:
        pt = st.patch
        dx, dy = pt.dimensions
        patches.append((int(pt.level), float(dx.lower), float(dx.upper), float(dy.lower), float(dy.upper)))
        if abs(dy.lower) <= 1e-12 * setup.z_max:  # touches the wall z = 0
            rows.append(WallRow(level=int(pt.level), r_edges=np.asarray(dx.nodes, float),
                                pressure=pressure(np.asarray(st.q)[:, :, 0], setup.gamma)))
    return FramePatches(t=float(sol.t), patches=patches, rows=rows)


def frame_numbers(outdir: Path) -> List[int]:
    return sorted(int(p.name[len("fort.t"):]) for p in Path(outdir).glob("fort.t[0-9]*"))


@dataclass
class AmrRun:
    extractor: WallLoadsExtractor
    frames: List[int]
    patch_counts: List[int]
    wall_face_counts: List[int]
    covered_counts: List[int]
    levels_seen: List[int]
    dx_min: float
    wall_levels: List[int]  # number of distinct levels on the wall, per frame


def extract(outdir: Path, setup: BlastSetup, radial_edges: Sequence[float], frames: Optional[Sequence[int]] = None,
            leaf_only: bool = True) -> AmrRun:
    """The seed's extraction event on every frame: leaf wall faces, gauge pressure, ring areas checked."""
    ex = WallLoadsExtractor(np.asarray(radial_edges, float), p_ref=setup.p_ambient)
    frames = list(frames if frames is not None else frame_numbers(outdir))
    pc, wc, cc, wl, lev = [], [], [], [], set()
    dxm = np.inf
    for k in frames:
        fr = read_frame(outdir, k, setup)
        faces: WallFaces = wall_faces(fr.rows, leaf_only=leaf_only)
        ex.event(fr.t, faces.r0, faces.r1, faces.pressure, None, faces.level)
        pc.append(len(fr.patches))
        wc.append(int(faces.r0.size))
        cc.append(faces.n_covered)
        wl.append(len(set(int(v) for v in faces.level)))
        lev.update(int(v) for v in faces.level)
        dxm = min(dxm, faces.dr_min)
    return AmrRun(extractor=ex, frames=frames, patch_counts=pc, wall_face_counts=wc, covered_counts=cc,
                  levels_seen=sorted(lev), dx_min=float(dxm), wall_levels=wl)

