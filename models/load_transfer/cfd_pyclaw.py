"""PyClaw uniform-grid variant of the CFD source family: axisymmetric Euler in r-z (issue 33).

The blast of :mod:`.cfd_setup` is solved with Clawpack's PyClaw 2-D Euler (``euler_4wave_2D``:
Roe with entropy fix, unsplit with transverse corrections, MC limiter, CFL 0.8) plus the
cylindrical geometric source terms -(1/r)(rho u, rho u^2, rho u w, u (E + p)) (u radial, w axial),
integrated by a two-stage Runge-Kutta step after each hyperbolic step (Godunov splitting). The
Harten-Lax-van Leer solver ``euler_hlle_2D`` is NOT usable here: its transverse solver is a dummy
and the unsplit scheme returns NaN silently.

:func:`run_uniform` advances to every output time and, at each, hands the wall row (the first cell
row above z = 0, one patch of level 1) to a :class:`~.extraction.WallLoadsExtractor`; it can write
a checkpoint (``checkpoint.npz``: q, t, the solver's next dt, the wall history so far) after every
output and restart from one, which continues bit-for-bit: the state of the time stepping is
exactly (q, t, dt, dt_old and the last step's CFL number, from which PyClaw computes the next dt).

The 1-D spherical reference of the verification (``euler_with_efix_1D`` with the spherical source
-(2/r)(rho u, rho u^2, u (E + p))) is :func:`spherical_reference`.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np

from .cfd_setup import BlastSetup, grid_shape, initial_state, pressure
from .cfd_wall import WallRow, wall_faces
from .extraction import WallLoadsExtractor

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint.npz"


def _cylindrical_source(gamma: float):
    def step_source(solver, state, dt):
        """Two-stage RK integral of the r-z geometric source over dt (radial direction x)."""
        q = state.q
        r = state.aux[0]

        def rhs(qq):
            rho = qq[0]
            u = qq[1] / rho
            w = qq[2] / rho
            p = (gamma - 1.0) * (qq[3] - 0.5 * rho * (u * u + w * w))
            return np.stack([qq[1], qq[1] * u, qq[1] * w, u * (qq[3] + p)]) / r

        qstar = q - 0.5 * dt * rhs(q)
        q[...] = q - dt * rhs(qstar)

    return step_source


def _spherical_source(gamma: float):
    def step_source(solver, state, dt):
        q = state.q
        r = state.aux[0]

        def rhs(qq):
            u = qq[1] / qq[0]
            p = (gamma - 1.0) * (qq[2] - 0.5 * qq[1] * u)
            return 2.0 * np.stack([qq[1], qq[1] * u, u * (qq[2] + p)]) / r

        qstar = q - 0.5 * dt * rhs(q)
        q[...] = q - dt * rhs(qstar)

    return step_source


def make_solver_2d(setup: BlastSetup, n_r: int, cfl: float = 0.8):
    """(solver, solution) of the r-z blast on an n_r x n_z uniform grid (square cells)."""
    from clawpack import pyclaw, riemann

    n_r, n_z = grid_shape(setup, n_r)
    solver = pyclaw.ClawSolver2D(riemann.euler_4wave_2D)
    solver.transverse_waves = 2
    solver.dimensional_split = False
    solver.limiters = pyclaw.limiters.tvd.MC
    solver.cfl_max = 1.0
    solver.cfl_desired = cfl
    solver.step_source = _cylindrical_source(setup.gamma)
    solver.source_split = 1
    solver.bc_lower[0] = pyclaw.BC.wall  # axis
    solver.bc_upper[0] = pyclaw.BC.extrap
    solver.bc_lower[1] = pyclaw.BC.wall  # the rigid wall z = 0
    solver.bc_upper[1] = pyclaw.BC.extrap
    solver.aux_bc_lower[0] = solver.aux_bc_upper[0] = pyclaw.BC.extrap
    solver.aux_bc_lower[1] = solver.aux_bc_upper[1] = pyclaw.BC.extrap
    solver.max_steps = 10**7
    x = pyclaw.Dimension(0.0, setup.r_max, n_r, name="r")
    y = pyclaw.Dimension(0.0, setup.z_max, n_z, name="z")
    domain = pyclaw.Domain([x, y])
    state = pyclaw.State(domain, 4, 1)
    state.problem_data["gamma"] = setup.gamma
    state.problem_data["gamma1"] = setup.gamma - 1.0
    rc, _ = domain.grid.p_centers
    state.aux[0] = rc
    state.q[...] = initial_state(setup, x.nodes, y.nodes)
    solution = pyclaw.Solution(state, domain)
    solver.setup(solution)
    return solver, solution


def wall_row(setup: BlastSetup, solution) -> WallRow:
    """The wall row (level 1) of a uniform solution: faces = the r edges, pressure of row z_0."""
    x = solution.domain.grid.dimensions[0]
    return WallRow(level=1, r_edges=np.asarray(x.nodes, float), pressure=pressure(solution.state.q[:, :, 0], setup.gamma))


@dataclass
class UniformRun:
    """Result of :func:`run_uniform`: the extractor (wall history), grid and step counts."""

    extractor: WallLoadsExtractor
    n_r: int
    n_z: int
    dr: float
    n_steps: int
    frames_done: int
    stopped: bool = False
    q_final: Optional[np.ndarray] = None
    face_counts: List[int] = field(default_factory=list)


def output_times(t_end: float, n_outputs: int) -> np.ndarray:
    """Output times t_k = k t_end / n_outputs, k = 0..n_outputs [s] (t_0 = 0 is the initial state)."""
    return np.linspace(0.0, t_end, n_outputs + 1)


def _save_checkpoint(path: Path, solver, solution, frame: int, ex: WallLoadsExtractor) -> None:
    from .contracts._atomic import atomic_target

    with atomic_target(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, q=solution.state.q, t=np.float64(solution.t), dt=np.float64(solver.dt),
                     dt_old=np.float64(np.nan if solver.dt_old is None else solver.dt_old),
                     cfl=np.float64(solver.cfl.get_cached_max()), frame=np.int64(frame),
                     times=np.asarray(ex.times), pressure=np.vstack(ex.pressure), shear=np.vstack(ex.shear),
                     levels=np.asarray(sorted(ex.levels), dtype=np.int64), max_area_error=ex.max_area_error)


def run_uniform(setup: BlastSetup, n_r: int, t_end: float, n_outputs: int, radial_edges: Sequence[float], *,
                cfl: float = 0.8, checkpoint_dir: Optional[Path] = None, restart: Optional[Path] = None,
                stop_after_frame: Optional[int] = None) -> UniformRun:
    """Run the r-z blast on a uniform grid, extracting the wall loads at every output time.

    checkpoint_dir: write ``checkpoint.npz`` there after every output (atomic replace).
    restart: a checkpoint file to continue from (same setup, grid and outputs).
    stop_after_frame: stop (as if interrupted) after this output frame.
    """
    setup.check()
    solver, solution = make_solver_2d(setup, n_r, cfl)
    times = output_times(t_end, n_outputs)
    ex = WallLoadsExtractor(np.asarray(radial_edges, float), p_ref=setup.p_ambient)
    first = 0
    if restart is not None:
        with np.load(restart) as z:
            if z["q"].shape != solution.state.q.shape:
                raise ValueError(f"restart: {restart}: grid {z['q'].shape} differs from {solution.state.q.shape}")
            solution.state.q[...] = z["q"]
            solution.t = float(z["t"])
            solver.dt = float(z["dt"])
            solver.dt_old = None if np.isnan(z["dt_old"]) else float(z["dt_old"])
            solver.cfl.set_global_max(float(z["cfl"]))
            first = int(z["frame"]) + 1
            ex.times = [float(v) for v in z["times"]]
            ex.pressure = [row.copy() for row in z["pressure"]]
            ex.shear = [row.copy() for row in z["shear"]]
            ex.levels = set(int(v) for v in z["levels"])
            ex.max_area_error = float(z["max_area_error"])
        log.info("restart from %s at frame %d, t = %.6g s", restart, first - 1, solution.t)
    counts: List[int] = []
    run = UniformRun(extractor=ex, n_r=solution.state.q.shape[1], n_z=solution.state.q.shape[2],
                     dr=setup.r_max / solution.state.q.shape[1], n_steps=0, frames_done=first, face_counts=counts)
    for k in range(first, times.size):
        if k > 0:
            solver.evolve_to_time(solution, times[k])
            solution.t = float(times[k])  # exact output time (evolve_to_time hits it up to round-off)
            if not np.all(np.isfinite(solution.state.q)):
                raise FloatingPointError(f"non-finite state at t = {times[k]!r} s (n_r = {n_r})")
        faces = wall_faces([wall_row(setup, solution)])
        ex.event(times[k], faces.r0, faces.r1, faces.pressure, None, faces.level)
        counts.append(int(faces.r0.size))
        run.frames_done = k + 1
        if checkpoint_dir is not None:
            _save_checkpoint(Path(checkpoint_dir) / CHECKPOINT, solver, solution, k, ex)
        if stop_after_frame is not None and k >= stop_after_frame and k < times.size - 1:
            run.stopped = True
            break
    run.n_steps = int(solver.status.get("numsteps", 0))
    run.q_final = solution.state.q.copy()
    return run


def make_solver_1d(setup: BlastSetup, n: int, radius: float, cfl: float = 0.8):
    """(solver, solution) of the free-space spherical blast in 1-D: rho in [0, radius] [m]."""
    from clawpack import pyclaw, riemann

    solver = pyclaw.ClawSolver1D(riemann.euler_with_efix_1D)
    solver.limiters = pyclaw.limiters.tvd.MC
    solver.cfl_max = 1.0
    solver.cfl_desired = cfl
    solver.step_source = _spherical_source(setup.gamma)
    solver.source_split = 1
    solver.bc_lower[0] = pyclaw.BC.wall
    solver.bc_upper[0] = pyclaw.BC.extrap
    solver.aux_bc_lower[0] = solver.aux_bc_upper[0] = pyclaw.BC.extrap
    solver.max_steps = 10**7
    x = pyclaw.Dimension(0.0, radius, n, name="rho")
    domain = pyclaw.Domain([x])
    state = pyclaw.State(domain, 3, 1)
    state.problem_data["gamma"] = setup.gamma
    state.problem_data["gamma1"] = setup.gamma - 1.0
    rc = x.centers
    state.aux[0] = rc
    e = x.nodes
    # exact volume fraction of the shells [e_i, e_i+1] inside R0
    inner = np.clip(e[:-1], 0, setup.R0)
    outer = np.clip(e[1:], 0, setup.R0)
    f = (outer**3 - inner**3) / (e[1:] ** 3 - e[:-1] ** 3)
    rho = setup.rho_ambient * (1.0 + f * (setup.density_ratio - 1.0))
    p = setup.p_ambient * (1.0 + f * (setup.pressure_ratio - 1.0))
    state.q[0] = rho
    state.q[1] = 0.0
    state.q[2] = p / (setup.gamma - 1.0)
    solution = pyclaw.Solution(state, domain)
    solver.setup(solution)
    return solver, solution


@dataclass(frozen=True)
class Profile:
    """A radial pressure profile: cell edges [m] and cell pressure [Pa] at time t [s]."""

    t: float
    edges: np.ndarray
    pressure: np.ndarray

    def at(self, rho: np.ndarray) -> np.ndarray:
        c = 0.5 * (self.edges[1:] + self.edges[:-1])
        return np.interp(rho, c, self.pressure)


def spherical_reference(setup: BlastSetup, t: float, n: int = 16000, radius: Optional[float] = None) -> Profile:
    """1-D spherical Euler solution of the free-space blast at time t (PyClaw, ``n`` cells)."""
    radius = radius or float(np.hypot(setup.r_max, setup.z_max))
    solver, solution = make_solver_1d(setup, n, radius)
    solver.evolve_to_time(solution, t)
    q = solution.state.q
    p = (setup.gamma - 1.0) * (q[2] - 0.5 * q[1] ** 2 / q[0])
    return Profile(t=float(t), edges=np.asarray(solution.domain.grid.dimensions[0].nodes, float), pressure=p)


def shock_radius(centers: np.ndarray, overpressure: np.ndarray, fraction: float = 0.5) -> float:
    """Radius [m] of the leading shock: the outermost point where the overpressure (sorted by
    ``centers``) crosses ``fraction`` of its maximum beyond the location of that maximum
    (linear interpolation between the two straddling samples)."""
    order = np.argsort(centers)
    c = np.asarray(centers, float)[order]
    dp = np.asarray(overpressure, float)[order]
    level = fraction * float(np.max(dp))
    above = np.nonzero(dp >= level)[0]
    i = int(above[-1])
    if i + 1 >= c.size:
        return float(c[-1])
    a, b = dp[i], dp[i + 1]
    return float(c[i] + (c[i + 1] - c[i]) * (a - level) / (a - b))


def solution_2d_pressure(setup: BlastSetup, n_r: int, t: float, cfl: float = 0.8):
    """(r_edges, z_edges, p (n_r, n_z)) of the r-z blast at time t."""
    solver, solution = make_solver_2d(setup, n_r, cfl)
    solver.evolve_to_time(solution, t)
    d = solution.domain.grid.dimensions
    return np.asarray(d[0].nodes, float), np.asarray(d[1].nodes, float), pressure(solution.state.q, setup.gamma)


def clawpack_version() -> str:
    import clawpack

    return str(getattr(clawpack, "__version__", "unknown"))


def source_sha256(*modules: str) -> str:
    """SHA-256 of the source files of the named sibling modules (the 'application' of a run)."""
    import hashlib

    h = hashlib.sha256()
    here = Path(__file__).parent
    for m in modules:
        h.update((here / f"{m}.py").read_bytes())
    return h.hexdigest()


def fortran_compiler() -> str:
    """First line of ``$FC --version`` (gfortran by default): the compiler of the Fortran kernels."""
    import shutil
    import subprocess

    fc = os.environ.get("FC", "gfortran")
    exe = shutil.which(fc)
    if exe is None:
        return f"{fc} (not found)"
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    return out.splitlines()[0].strip() if out else fc
