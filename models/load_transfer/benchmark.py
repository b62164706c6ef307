"""Assembly measurement of the conservative operator (a measurement, never a timed assertion).

``python -m models.load_transfer.benchmark [n_triangles] [n_rings]`` logs the assembly time,
the throughput in element–annulus pieces per second and the worst column-sum error of a
circumscribing triangle disk mesh. The harness benchmark case (conf/case/bench/operator_apply)
records the same quantities as ratios to a bare CSR product.
"""
from __future__ import annotations

import logging
import sys
import time

import numpy as np

from .operator import ConservativePressureOperator
from .surfaces import disk_triangles_with_count

log = logging.getLogger(__name__)


def measure_assembly(n_triangles: int = 200_000, n_rings: int = 1_000, radius: float = 1.0) -> dict:
    """Build the operator once and return timings (s) and sizes."""
    t0 = time.perf_counter()
    mesh = disk_triangles_with_count(n_triangles, radius)
    t_mesh = time.perf_counter() - t0
    edges = np.linspace(0.0, radius, int(n_rings) + 1)
    t1, c1 = time.perf_counter(), time.process_time()
    op = ConservativePressureOperator(mesh, edges)
    t_asm, c_asm = time.perf_counter() - t1, time.process_time() - c1
    err = float(np.max(np.abs(op.column_sums - op.ring_areas) / op.ring_areas))
    return {
        "n_triangles": int(mesh.elements.shape[0]),
        "n_rings": int(n_rings),
        "mesh_seconds": t_mesh,
        "assembly_seconds": t_asm,
        "assembly_cpu_seconds": c_asm,
        "n_pieces": op.n_pieces,
        "n_clipped_pairs": op.n_clipped_pairs,
        "pieces_per_second": op.n_pieces / t_asm,
        "nnz": int(op.matrix.nnz),
        "max_column_error": err,
    }


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = list(sys.argv[1:] if argv is None else argv)
    n_tri = int(args[0]) if args else 200_000
    n_rings = int(args[1]) if len(args) > 1 else 1_000
    res = measure_assembly(n_tri, n_rings)
    for k, v in res.items():
        log.info("%-18s %s", k, f"{v:.6g}" if isinstance(v, float) else v)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
