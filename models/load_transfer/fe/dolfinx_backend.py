"""DOLFINx backend of the FE cross-check (FEniCSx peer), behind the same interface as scikit-fem.

DOLFINx 0.5 comes from Debian (``apt-get install -y python3-dolfinx``) and runs on Debian's own
interpreter with Debian's numpy, never in the project's virtual environment. Each solve writes a
request (``.npz``) into ``workdir`` (the run directory), runs ``dolfinx_worker.py`` there in its own
process (``python`` = the system interpreter, a clean environment: no PYTHONPATH / VIRTUAL_ENV,
OMP_NUM_THREADS=1) and reads the result file back. ``info`` holds the interpreter and the versions
(dolfinx, basix, ufl, numpy, petsc4py, python) for the manifest.

A missing interpreter or a missing DOLFINx raises :class:`DolfinxUnavailable` (a ValueError: the
harness reports it as invalid input, exit 2) naming what is missing and the apt command.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np

from .base import ElasticBody, FEDynamicResult, FEField, PointLoads

log = logging.getLogger(__name__)

DEFAULT_PYTHON = "/usr/bin/python3"
APT_HINT = "apt-get install -y python3-dolfinx"
WORKER = Path(__file__).with_name("dolfinx_worker.py")


class DolfinxUnavailable(ValueError):
    """The system interpreter or its DOLFINx is missing (the message names it and the apt command)."""


def _clean_env() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["OMP_NUM_THREADS"] = "1"
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:  # keep the venv's bin off PATH: the worker's compilers and tools are Debian's
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(venv))
    return env


def probe(python: str = DEFAULT_PYTHON, timeout: float = 120.0) -> Dict[str, str]:
    """Versions of DOLFINx and friends on ``python``; DolfinxUnavailable if it cannot import them."""
    exe = Path(python)
    if not exe.is_file() or not os.access(exe, os.X_OK):
        raise DolfinxUnavailable(f"dolfinx_python: interpreter {python} not found or not executable "
                                 f"(install Debian's DOLFINx: {APT_HINT})")
    code = ("import json, sys, numpy, dolfinx, basix, ufl; print(json.dumps({'dolfinx': dolfinx.__version__, "
            "'basix': basix.__version__, 'ufl': ufl.__version__, 'numpy': numpy.__version__, "
            "'python': sys.version.split()[0], 'interpreter': sys.executable}))")
    proc = subprocess.run([str(exe), "-c", code], capture_output=True, text=True, env=_clean_env(), timeout=timeout)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        raise DolfinxUnavailable(f"dolfinx_python: {python} cannot import DOLFINx ({last}); install it with: "
                                 f"{APT_HINT}")
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    if not str(info["dolfinx"]).startswith("0.5."):
        log.warning("DOLFINx %s on %s: the worker is written for the 0.5 API", info["dolfinx"], python)
    return info


class DolfinxSolver:
    """The FE model of ``body`` solved by DOLFINx in a separate process (see module docstring)."""

    def __init__(self, body: ElasticBody, mass: str = "lumped", python: str = DEFAULT_PYTHON,
                 workdir: Optional[Path | str] = None, timeout: float = 900.0):
        if mass != "lumped":
            raise ValueError(f"mass: the DOLFINx backend implements 'lumped' only, got {mass!r}")
        self.body = body
        self.python = str(python)
        self.timeout = float(timeout)
        self.info: Dict[str, Any] = probe(self.python)
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="dolfinx-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._x: Optional[np.ndarray] = None
        self._calls = 0
        log.info("DOLFINx %s on %s, exchange files in %s", self.info["dolfinx"], self.python, self.workdir)

    def _run(self, task: str, points: np.ndarray, forces: np.ndarray, dt: float = 1.0, beta: float = 0.25,
             gamma: float = 0.5) -> Dict[str, np.ndarray]:
        b = self.body
        self._calls += 1
        req = self.workdir / f"dolfinx-request-{self._calls}.npz"
        res = self.workdir / f"dolfinx-result-{self._calls}.npz"
        np.savez(req, radius=b.radius, height=b.height, E=b.E, nu=b.nu, rho=b.rho, nr=b.nr, nz=b.nz,
                 axisymmetric=b.formulation == "axisymmetric", points=np.asarray(points, np.float64),
                 forces=np.asarray(forces, np.float64), task=task, dt=float(dt), beta=float(beta), gamma=float(gamma))
        log_path = self.workdir / f"dolfinx-{self._calls}.log"
        with open(log_path, "w") as fh:
            proc = subprocess.run([self.python, str(WORKER), str(req), str(res)], stdout=fh, stderr=subprocess.STDOUT,
                                  env=_clean_env(), cwd=self.workdir, timeout=self.timeout)
        if proc.returncode != 0 or not res.is_file():
            tail = log_path.read_text().strip().splitlines()[-1:] or ["?"]
            raise RuntimeError(f"DOLFINx worker failed (exit {proc.returncode}; see {log_path}): {tail[0]}")
        with np.load(res, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
        self.info.update(json.loads(str(out.pop("versions"))))
        self.info["n_dofs"] = int(out.pop("n_dofs"))
        self.info["exchange"] = [req.name, res.name]
        self._x = out["x"]
        return out

    def gauss_points(self) -> np.ndarray:
        """(Nq, 2) m, of the last solve (the worker tabulates them)."""
        if self._x is None:
            raise RuntimeError("gauss_points: run static() or dynamic() first")
        return self._x.copy()

    def static(self, points: np.ndarray, forces: np.ndarray) -> FEField:
        out = self._run("static", points, np.asarray(forces, np.float64)[None])
        self.base_reaction = float(out["base_reaction"])  # N, axial reaction of the support y = 0
        return FEField(x=out["x"], u=out["u"], stress=out["stress"], weight=out["weight"])

    def dynamic(self, loads: PointLoads, dt: float, *, beta: float = 0.25, gamma: float = 0.5) -> FEDynamicResult:
        if not (np.isfinite(dt) and dt > 0.0):
            raise ValueError(f"dt: must be a positive finite step in s, got {dt!r}")
        out = self._run("dynamic", loads.points, loads.forces, dt, beta, gamma)
        n = np.asarray(loads.forces).shape[0]
        final = FEField(x=out["x"], u=out["u"], stress=out["stress"], weight=out["weight"])
        return FEDynamicResult(times=dt * np.arange(n + 1), u_points=out["u_points"], u_gauss=out["u_gauss"],
                               final=final, work=out["work"])


def solve_block_static(block, points, forces, *, python: str = DEFAULT_PYTHON, workdir: Optional[Path | str] = None,
                       timeout: float = 900.0):
    """The 3-D block (kratos.block3d.Block) in DOLFINx: Q1 hexahedra, 2 x 2 x 2 Gauss, rollers on the
    three coordinate planes, point forces (Nc, 3) N at points (Nc, 3) m. Returns (Field3D, info)."""
    from .skfem_block import Field3D

    info = probe(python)
    wd = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="dolfinx-"))
    wd.mkdir(parents=True, exist_ok=True)
    req, res = wd / "dolfinx-block-request.npz", wd / "dolfinx-block-result.npz"
    np.savez(req, task="block_static", Lx=block.Lx, Ly=block.Ly, Lz=block.Lz, nx=block.nx, ny=block.ny, nz=block.nz,
             E=block.E, nu=block.nu, points=np.asarray(points, np.float64),
             forces=np.asarray(forces, np.float64)[None])
    log_path = wd / "dolfinx-block.log"
    with open(log_path, "w") as fh:
        proc = subprocess.run([str(python), str(WORKER), str(req), str(res)], stdout=fh, stderr=subprocess.STDOUT,
                              env=_clean_env(), cwd=wd, timeout=timeout)
    if proc.returncode != 0 or not res.is_file():
        tail = log_path.read_text().strip().splitlines()[-1:] or ["?"]
        raise RuntimeError(f"DOLFINx worker failed (exit {proc.returncode}; see {log_path}): {tail[0]}")
    with np.load(res, allow_pickle=False) as z:
        out = {k: z[k] for k in z.files}
    info.update(json.loads(str(out.pop("versions"))))
    info["n_dofs"] = int(out.pop("n_dofs"))
    return Field3D(x=out["x"], u=out["u"], stress=out["stress"], weight=out["weight"]), info
