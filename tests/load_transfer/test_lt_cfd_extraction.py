"""Issue 33: the seed's extraction event on real Clawpack output (AMRClaw patches, PyClaw uniform).

The AMR run is our AMRClaw application (compiled once into the clawpack cache) at base 25^2 with 3
levels: the mandatory tests of seed 000 on this path - parents and children never counted together
(frames where coarse wall cells lie under finer patches), the axis bin, a rotated target surface,
the exterior set to zero - and a wrong extraction caught by the ring-area check and by e_F.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

from models.load_transfer.cfd_setup import BlastSetup  # noqa: E402
from models.load_transfer.cfd_wall import wall_faces  # noqa: E402
from models.load_transfer.extraction import ExtractionAreaError, WallLoadsExtractor  # noqa: E402

SETUP = BlastSetup()
R_WALL = 0.5
EDGES = np.linspace(0.0, R_WALL, 21)
T_END, N_OUT = 1.2e-3, 30


@pytest.fixture(scope="module")
def amr(tmp_path_factory):
    """(output directory, extraction) of the AMRClaw rigid-wall run, base 25^2, 3 levels, ratio 2."""
    from harness.families.load_transfer_cfd_amr import prepare
    from models.load_transfer import cfd_amrclaw as A

    _, exe = prepare()
    run_dir = tmp_path_factory.mktemp("amr")
    A.write_data(run_dir, SETUP, A.AmrConfig(base=25, levels=3, ratio=2), T_END, N_OUT)
    out = A.run(exe, run_dir)
    return out, A.extract(out, SETUP, EDGES)


def _frame_with_parents(amr):
    from models.load_transfer.cfd_amrclaw import read_frame

    out, run = amr
    k = run.frames[int(np.argmax(run.covered_counts))]
    return read_frame(out, k, SETUP)


def _wall_force(faces) -> float:
    """The CFD's own gauge force on [0, R_WALL] [N]: sum of p_f times the face area inside R_WALL."""
    a = np.minimum(faces.r0, R_WALL)
    b = np.minimum(faces.r1, R_WALL)
    return float(np.sum((faces.pressure - SETUP.p_ambient) * np.pi * (b - a) * (b + a)))


def test_amr_leaf_faces_tile_the_wall_on_every_frame(amr):
    _, run = amr
    assert run.frames == list(range(N_OUT + 1))
    assert run.levels_seen == [1, 2, 3]
    assert max(run.covered_counts) > 0  # coarse wall cells under finer patches exist ...
    assert run.extractor.max_area_error <= 1e-13  # ... and every ring is still covered exactly once
    assert run.dx_min == pytest.approx(SETUP.r_max / 100, rel=1e-12)
    p = np.vstack(run.extractor.pressure)
    assert p.shape == (N_OUT + 1, 20) and np.all(np.isfinite(p))
    assert np.all(p[0] == 0.0) and p.max() > 1e5  # at rest at t = 0; the blast reaches the wall


def test_parents_and_children_counted_together_fail_area_check_and_e_F(amr):
    fr = _frame_with_parents(amr)
    right = wall_faces(fr.rows)
    wrong = wall_faces(fr.rows, leaf_only=False)
    assert right.n_covered > 0 and wrong.r0.size == right.r0.size + right.n_covered
    ex = WallLoadsExtractor(EDGES, p_ref=SETUP.p_ambient)
    with pytest.raises(ExtractionAreaError, match=r"ring \d+: accumulated area .* counted twice or missing"):
        ex.event(fr.t, wrong.r0, wrong.r1, wrong.pressure, None, wrong.level)
    # with the check switched off the wrong force is far off the CFD's own force; the right one is exact
    F_cfd = _wall_force(right)
    p_ok, _, _ = WallLoadsExtractor(EDGES, p_ref=SETUP.p_ambient).event(fr.t, right.r0, right.r1, right.pressure)
    e_F_ok = abs(p_ok @ (np.pi * np.diff(EDGES**2)) - F_cfd) / abs(F_cfd)
    blind = WallLoadsExtractor(EDGES, p_ref=SETUP.p_ambient, area_rtol=np.inf)
    p_bad, _, area_bad = blind.event(fr.t, wrong.r0, wrong.r1, wrong.pressure)
    F_bad = float(np.sum(p_bad * area_bad))  # what the wrong accumulation sums to
    assert e_F_ok <= 1e-13
    assert abs(F_bad - F_cfd) / abs(F_cfd) > 0.02


def test_dropped_r_weighting_fails_area_check_and_e_F(amr):
    fr = _frame_with_parents(amr)
    f = wall_faces(fr.rows)
    # the wrong overlap: lengths (b - a) instead of pi (b^2 - a^2)
    i0 = np.clip(np.searchsorted(EDGES, 0.5 * (f.r0 + f.r1)) - 1, 0, EDGES.size - 2)
    inside = f.r1 <= R_WALL
    length = np.bincount(i0[inside], weights=(f.r1 - f.r0)[inside], minlength=20)
    ring = np.pi * np.diff(EDGES**2)
    assert np.max(np.abs(length - ring) / ring) > 0.5  # the bin-area check fails
    sum_p = np.bincount(i0[inside], weights=((f.pressure - SETUP.p_ambient) * (f.r1 - f.r0))[inside], minlength=20)
    F_wrong = float(np.sum(sum_p / ring * ring))
    F_cfd = _wall_force(f)
    assert abs(F_wrong - F_cfd) / abs(F_cfd) > 0.02  # and e_F fails


def test_axis_bin_is_finite_and_exact(amr):
    _, run = amr
    ex = run.extractor
    assert ex.radial_edges[0] == 0.0 and ex.ring_areas[0] == pytest.approx(np.pi * EDGES[1] ** 2, rel=1e-15)
    p = np.vstack(ex.pressure)
    tau = np.vstack(ex.shear)
    assert np.all(np.isfinite(p[:, 0])) and np.all(tau == 0.0)  # no 1/r at the axis; inviscid: tau_r = 0
    assert p[:, 0].max() > 0.0


def test_rotated_surface_keeps_force_and_exterior_is_zero(amr):
    from models.load_transfer.operator import ConservativePressureOperator
    from models.load_transfer.surfaces import disk_mesh

    _, run = amr
    p = np.vstack(run.extractor.pressure)
    F_B = p @ run.extractor.ring_areas
    forces = []
    for rot in (0.0, 0.37, 1.1):
        op = ConservativePressureOperator(disk_mesh(radius=R_WALL, resolution=8, rotation=rot), EDGES)
        forces.append(op.normal_force(p))
    scale = np.max(np.abs(F_B))
    for F in forces:
        assert np.max(np.abs(F - F_B)) / scale <= 1e-12
    big = ConservativePressureOperator(disk_mesh(radius=1.6 * R_WALL, resolution=16), EDGES)
    loads = big.nodal_pressure_loads(p)
    r_node = np.hypot(big.surface.nodes[:, 0], big.surface.nodes[:, 1])
    h = 1.6 * R_WALL / 16
    outside = r_node > R_WALL + 1.01 * h
    assert outside.sum() > 10 and np.all(loads[:, outside] == 0.0)  # no extrapolation beyond the last edge
    assert np.max(np.abs(big.normal_force(p) - F_B)) / scale <= 1e-12


def test_amr_wall_loads_agree_with_uniform_grid_of_the_finest_spacing(amr):
    from models.load_transfer.cfd_pyclaw import run_uniform

    _, run = amr
    uni = run_uniform(SETUP, 100, T_END, N_OUT, EDGES)

    def impulse_and_peak(ex):
        t = np.asarray(ex.times)
        F = np.vstack(ex.pressure) @ ex.ring_areas
        return float(np.sum(np.diff(t) * 0.5 * (F[1:] + F[:-1]))), float(F.max())

    J_amr, F_amr = impulse_and_peak(run.extractor)
    J_uni, F_uni = impulse_and_peak(uni.extractor)
    assert abs(J_amr - J_uni) / J_uni < 0.01 and abs(F_amr - F_uni) / F_uni < 0.01
    assert J_amr != J_uni  # two different solvers, not one result twice
