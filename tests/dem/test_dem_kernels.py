"""The numba pair kernel against the numpy path; LAMMPS peer agreement; benchmark plumbing."""
import os

import numpy as np
import pytest

from models.dem import ContactLaw, DEMSystem, Material
from models.dem import lammps_peer as P
from models.dem.kernels import HAVE_NUMBA
from models.integrators.verlet import make_stepper

SOFT = Material(1e7, 0.3, 2500.0)


def _run(backend, law, steps=30):
    x, v, _ = P.dense_packing(512, 0.001, seed=3)
    rng = np.random.default_rng(1)
    w = rng.normal(scale=5.0, size=x.shape)
    v = v + rng.normal(scale=0.02, size=x.shape)
    sys_ = DEMSystem(np.full(x.shape[0], 0.001), x, SOFT, law, 2e-6, velocities=v, omegas=w, v_ref=0.1,
                     backend=backend)
    q, u = sys_.initial_state()
    st = make_stepper("velocity_verlet", 2e-6)
    s = st.run(0.0, q, u, sys_.accel, steps)
    return s, sys_


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba not installed")
@pytest.mark.parametrize("law", [
    ContactLaw("hertz_mindlin", restitution=0.5, tangential="mindlin", friction=0.3, rolling_friction=0.05),
    ContactLaw("kelvin_voigt", k_n=2e3, zeta=0.2, tangential="linear", friction=0.5, attractive=True),
])
def test_numba_matches_numpy(law):
    s1, a = _run("numpy", law)
    s2, b = _run("numba", law)
    scale = np.max(np.abs(s1.v))
    assert np.max(np.abs(s1.v - s2.v)) / scale < 1e-10
    assert np.max(np.abs(s1.x - s2.x)) < 1e-15 * 10 + 1e-12 * 0.001
    assert a.contacts_pp.i.size == b.contacts_pp.i.size > 0
    assert np.array_equal(a._hist_pp[0], b._hist_pp[0])
    assert np.allclose(a._hist_pp[1], b._hist_pp[1], rtol=0, atol=1e-12 * 0.001)


lammps = pytest.mark.skipif(not P.available(), reason="lammps not installed")


@lammps
def test_lammps_wall_impact_agrees():
    out = P.compare_wall_impact(SOFT, 0.01, 1.0)
    assert out["diff_duration"] < 1e-10 and out["diff_max_overlap"] < 1e-10 and out["diff_rebound"] < 1e-10
    assert out["lammps_e_duration"] < 1e-4  # LAMMPS itself against the Hertz closed form


@lammps
def test_lammps_gas_trajectories_agree():
    out = P.compare_gas(SOFT, 3, 0.01, 1.0, 0.02)
    assert out["gas_contact_steps"] > 0
    assert out["gas_max_position_diff"] < 1e-9


@lammps
def test_bench_reports_ratio(harness_env):
    from harness.core.api import run_case

    out = run_case("bench/dem_throughput", overrides=["tracking.enabled=false", "case.params.n_particles=[1000]",
                                                      "case.params.n_steps=3", "case.params.repeats=1"])
    assert out.status == "ok"
    assert out.metrics["ratio_to_lammps_1000"] > 0 and np.isfinite(out.metrics["ours_peak_mem_mb_1000"])
    assert out.metrics["jit_warmup"] == 1.0 and out.metrics["jit_warmup_s"] > 0
    m = out.metrics  # two threads against LAMMPS on two MPI ranks, recorded (timings are never asserted)
    assert m["ours_threads2_particle_steps_per_s_1000"] > 0 and m["ratio_to_lammps_2_1000"] > 0
    assert m["ours_speedup_1_to_2_largest"] == m["ours_speedup_1_to_2_threads_1000"]
    assert 100.0 < m["lammps_peak_mem_bytes_per_sphere_1000"] and 100.0 < m["ours_peak_mem_bytes_per_sphere_1000"]
    assert (out.run_dir / "cost_vs_spheres.png").stat().st_size > 1000
    assert m["ratio_to_lammps_min"] == m["ratio_to_lammps_1000"]  # one core only; two cores apart
    assert m["ours_serial_kernel_particle_steps_per_s_1000"] > 0  # the serial kernel, recorded beside
    assert m["load_avg_1min_start"] >= 0 and m["load_avg_1min_end"] >= 0


def _dense_run(backend, threads, law, steps=40, compiled=False, walls=()):
    """A dense packing with spin and random velocities; a small skin so the neighbour list is rebuilt
    several times (history carried across rebuilds)."""
    from models.dem.stepping import CompiledVelocityVerlet

    x, v, _ = P.dense_packing(1000, 0.001, seed=3)
    rng = np.random.default_rng(1)
    w = rng.normal(scale=5.0, size=x.shape)
    v = v + rng.normal(scale=0.02, size=x.shape)
    sys_ = DEMSystem(np.full(x.shape[0], 0.001), x, SOFT, law, 2e-6, velocities=v, omegas=w, v_ref=0.1,
                     backend=backend, threads=threads, skin=5e-7, walls=list(walls), gravity=(0, 0, -9.81))
    q, u = sys_.initial_state()
    if compiled:
        return CompiledVelocityVerlet(sys_).run(0.0, q, u, steps), sys_
    return make_stepper("velocity_verlet", 2e-6).run(0.0, q, u, sys_.accel, steps), sys_


_HM = ContactLaw("hertz_mindlin", restitution=0.5, tangential="mindlin", friction=0.3, rolling_friction=0.05)


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba not installed")
@pytest.mark.parametrize("threads,compiled,law,floor", [
    (1, False, _HM, False), (2, False, _HM, False), (2, True, _HM, False), (1, True, _HM, False),
    (2, True, ContactLaw("kelvin_voigt", k_n=2e3, zeta=0.2, tangential="linear", friction=0.5), True),
])
def test_parallel_path_matches_the_serial_kernel(threads, compiled, law, floor):
    """Per-pair slots and the per-particle gather on 1 and 2 threads (numpy or compiled velocity Verlet)
    against the serial kernel over 40 steps with 14 neighbour-list rebuilds: the same contacts (i, j,
    overlap, normal force), the same history keys and springs, the same trajectory (each particle adds
    its pairs in the serial kernel's order, so equal to the last bit here; the tolerances are those of
    round-off), dissipated energy to round-off (summed per block of pairs)."""
    from models.dem import Wall

    walls = [Wall(np.array([0.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]))] if floor else []
    (s1, a), (s2, b) = _dense_run("numba", 1, law, walls=walls), _dense_run("parallel", threads, law, compiled=compiled,
                                                                             walls=walls)
    assert a.backend == "numba" and b.backend == "parallel" and b.nlist.n_builds >= 10
    ca, cb = a.contacts_pp, b.contacts_pp
    assert ca.i.size > 1000 and np.array_equal(ca.i, cb.i) and np.array_equal(ca.j, cb.j)
    assert np.max(np.abs(ca.delta - cb.delta)) <= 1e-15 * 0.001 and np.allclose(ca.fn, cb.fn, rtol=1e-12, atol=0)
    assert np.array_equal(a._hist_pp[0], b._hist_pp[0]) and a._hist_pp[0].size == ca.i.size
    assert np.max(np.abs(a._hist_pp[1] - b._hist_pp[1])) <= 1e-15 * np.max(np.abs(a._hist_pp[1]))
    assert np.max(np.abs(s1.x - s2.x)) <= 1e-15 * 0.03
    assert np.max(np.abs(s1.v - s2.v)) <= 1e-13 * np.max(np.abs(s1.v))
    assert a.dissipated > 0 and b.dissipated == pytest.approx(a.dissipated, rel=1e-12)
    if floor:
        assert a.contacts_pw.i.size > 0 and np.array_equal(a.contacts_pw.i, b.contacts_pw.i)


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba not installed")
def test_parallel_path_does_not_depend_on_the_thread_count():
    """Fixed blocks of pairs: 1 and 2 threads give bitwise the same state and dissipated energy."""
    (s1, a), (s2, b) = _dense_run("parallel", 1, _HM, compiled=True), _dense_run("parallel", 2, _HM, compiled=True)
    assert np.array_equal(s1.x, s2.x) and np.array_equal(s1.v, s2.v) and a.dissipated == b.dissipated


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba not installed")
@pytest.mark.parametrize("threads", [1, 2])
def test_compiled_step_loop_equals_step_by_step(threads):
    """advance() (the steps between neighbour-list builds in one compiled loop per thread, two passes a
    step) against step() called 40 times: bitwise the same state, accelerations, contacts, history,
    neighbour-list builds and dissipated energy, also when calls end between two builds and mix with step()."""
    from models.dem.stepping import CompiledVelocityVerlet

    def dense(stepwise):
        x, v, _ = P.dense_packing(1000, 0.001, seed=3)
        rng = np.random.default_rng(1)
        w = rng.normal(scale=5.0, size=x.shape)
        v = v + rng.normal(scale=0.02, size=x.shape)
        sys_ = DEMSystem(np.full(x.shape[0], 0.001), x, SOFT, _HM, 2e-6, velocities=v, omegas=w, v_ref=0.1,
                         backend="parallel", threads=threads, skin=5e-7, gravity=(0, 0, -9.81))
        stepper = CompiledVelocityVerlet(sys_)
        s = stepper.start(0.0, *sys_.initial_state())
        if stepwise:
            for _ in range(40):
                s = stepper.step(s)
        else:
            s = stepper.advance(stepper.advance(s, 5), 2)  # the second call continues in the working arrays
            s = stepper.advance(stepper.step(s), 32)  # from a state of step(): copied into them
        return s, sys_, stepper

    (s1, a, st1), (s2, b, st2) = dense(True), dense(False)
    assert s2.step == 40 and s2.t == s1.t and st2.n_accel == st1.n_accel == 41
    for key in ("x", "v", "a"):
        assert np.array_equal(getattr(s1, key), getattr(s2, key)), key
    assert np.array_equal(s1.aux["x_next"], s2.aux["x_next"]) and s1.aux["disp2"] == s2.aux["disp2"]
    assert b.nlist.n_builds == a.nlist.n_builds >= 10 and a.dissipated > 0 and b.dissipated == a.dissipated
    assert np.array_equal(a.contacts_pp.fn, b.contacts_pp.fn) and np.array_equal(a._hist_pp[1], b._hist_pp[1])


def test_backend_selection_and_compiled_stepper_refuses_the_serial_path():
    from models.dem.stepping import CompiledVelocityVerlet

    law = ContactLaw("hertz")
    two = ([[0, 0, 0], [0.01, 0, 0]], SOFT, law, 1e-6)
    if HAVE_NUMBA:
        assert DEMSystem(np.full(2, 0.001), *two, backend="numba", threads=2).backend == "parallel"
        assert DEMSystem(np.full(2, 0.001), *two, backend="numba").backend == "numba"
    s = DEMSystem(np.full(2, 0.001), *two)
    assert s.backend == "numpy"
    with pytest.raises(ValueError, match="parallel backend"):
        CompiledVelocityVerlet(s)


def test_threads_must_be_a_positive_integer():
    from models.dem.materials import DEMInputError

    with pytest.raises(DEMInputError, match="threads"):
        DEMSystem(np.full(2, 0.001), [[0, 0, 0], [0.01, 0, 0]], SOFT, ContactLaw("hertz"), 1e-6, threads=0)


@lammps
@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("HARNESS_FULL") != "1",
                    reason="the README's benchmark command: HARNESS_FULL=1 (reduced in test_bench_reports_ratio)")
def test_readme_bench_command(tmp_path):
    """The DEM README's benchmark command, as written: both codes at every size, on one and two cores."""
    import re

    from tests.docs.conftest import ROOT, run_readme_command

    proc = run_readme_command("python -m harness +case=bench/dem_throughput", {"HARNESS_OUTPUTS": str(tmp_path)},
                              readme=ROOT / "models" / "dem" / "README.md", timeout=3600)
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]  # 1: a missed target (verdict)
    values = dict(re.findall(r"(\S+)=([0-9.e+-]+|nan)", proc.stdout))
    assert 0 < float(values["ratio_to_lammps_min"]) < np.inf
