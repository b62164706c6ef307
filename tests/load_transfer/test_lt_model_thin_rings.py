"""Rings much thinner than the surface elements: the column check is round-off aware (issue 15).

Each column sum is a sum of differences of clipped areas; for a ring 1e-6 of its radius wide the
difference loses ~6 digits relative to A_i although the matrix is right. The check accepts that
round-off (bounded by eps x the size of the subtracted terms) and still refuses a real defect.
"""
import numpy as np
import pytest

from models.load_transfer.operator import ConservativePressureOperator, GeometryError
from models.load_transfer.surfaces import disk_mesh


def _thin_edges(seed: int = 0, n: int = 20, width: float = 1e-6) -> np.ndarray:
    base = np.sort(np.random.default_rng(seed).uniform(0.05, 0.9, n))
    return np.concatenate([[0.0], np.ravel(np.column_stack([base, base * (1.0 + width)])), [1.0]])


@pytest.mark.parametrize("kind,cover", [("tri", "circumscribe"), ("tri", "inscribe"), ("quad", "circumscribe")])
def test_rings_1e6_of_their_radius_wide_are_accepted(kind, cover):
    edges = _thin_edges()
    mesh = disk_mesh(radius=1.0, resolution=8, kind=kind, cover=cover)
    op = ConservativePressureOperator(mesh, edges, quadrature_order=4)  # default geometry_tolerance 1e-12
    ref = op.ring_areas if op.covers_disk else op.covered_areas
    thin = np.arange(1, edges.size - 1, 2)
    err = np.abs(op.column_sums - ref) / op.ring_areas
    assert err[thin].max() > 1e-12  # these rings really lose digits (the old check refused them)
    assert np.max(np.abs(op.column_sums - ref)[thin]) < 1e-15  # ... but the absolute error is round-off
    # the forces conserve: a unit pressure on every thin ring gives their exact area
    p = np.zeros(edges.size - 1)
    p[thin] = 1.0
    assert op.normal_force(p) == pytest.approx(float(ref[thin].sum()), rel=1e-9)


def test_a_missing_piece_on_a_thin_ring_is_still_refused():
    edges = _thin_edges()
    op = ConservativePressureOperator(disk_mesh(radius=1.0, resolution=8), edges)
    i = 5  # a thin ring
    bad = op.matrix.tolil()
    col = op.matrix[:, i].toarray().ravel()
    j = int(np.flatnonzero(col)[0])
    bad[j, i] = 0.0  # one node's share of that ring lost
    with pytest.raises(GeometryError, match=rf"ring {i}: .*relative error .* > allowed .* = geometry_tolerance 1\.0e-12 "
                                            r"\+ round-off bound"):
        op.verify_matrix(bad.tocsr())
    # a defect of 1e-6 of a thin ring's area is ~1e4 times its round-off bound
    assert op.allowed_column_error()[i] < 1e-7
