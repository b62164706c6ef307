"""Benchmark of the manufactured-solution norms (case ``bench/manufactured_l2``).

On an n x n square split into 2 n^2 triangles (n = 708: 1.0e6 triangles) with the P1 interpolant
of u = sin(pi x) sin(pi y) at the nodes, measured in one run, best of ``repeats`` after one
warm-up call of each (its time recorded):

* ``l2_time_s``: the quadrature L2 error (mapping, interpolation with the shape functions, the
  exact solution at the quadrature points, the weighted sum: :func:`harness.metrics.mesh_norms.error_norms`);
* ``numpy_time_s``: numpy evaluating the exact solution at the same quadrature points (precomputed,
  in the same chunks of cells as the norm);
* ``time_ratio`` = l2_time_s / numpy_time_s (target <= 2);
* ``derive_time_s`` / ``lambdify_time_s``: sympy's derivation of the source term and the compile
  of the exact solution into a numpy function, recorded separately.
"""
from __future__ import annotations

import time
from typing import Dict

import numpy as np

from harness.generic.manufactured import Manufactured
from harness.metrics import mesh_norms


def square_triangles(n: int):
    """Points (m) and P1 triangles of the unit square, n x n cells, each split in two."""
    g = np.linspace(0.0, 1.0, n + 1)
    X, Y = np.meshgrid(g, g, indexing="ij")
    points = np.stack([X.ravel(), Y.ravel()], axis=1)
    idx = np.arange((n + 1) ** 2).reshape(n + 1, n + 1)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    return points, np.concatenate([np.stack([a, b, c], axis=1), np.stack([a, c, d], axis=1)])


def _best(fn, repeats: int):
    times, value = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), value


def run(n: int = 708, repeats: int = 3, quadrature_degree: int = 5) -> Dict[str, float]:
    """The timings above, and the L2 error itself (for a sanity check: O(h^2))."""
    if n < 2 or repeats < 1:
        raise ValueError(f"n >= 2 and repeats >= 1, got n={n}, repeats={repeats}")
    mms = Manufactured.from_spec({"coordinates": ["x", "y"], "fields": {"u": "sin(pi*x)*sin(pi*y)"},
                                  "sources": {"f": "-laplace(u)"}})
    u = mms.function("u_exact")
    points, cells = square_triangles(n)
    values = u(points[:, 0], points[:, 1])

    def exact(X):
        return u(X[:, 0], X[:, 1])

    xq = mesh_norms.quadrature_points(points, cells, "triangle", quadrature_degree)

    def norm():
        return mesh_norms.error_norms(points, {"triangle": cells}, values, exact,
                                      quadrature_degree=quadrature_degree)["L2"]

    per_chunk = mesh_norms.CHUNK * (len(xq) // len(cells))

    def reference():  # in the norm's chunks, so both see the same cache sizes
        return np.concatenate([exact(xq[i:i + per_chunk]) for i in range(0, len(xq), per_chunk)])

    w0 = time.perf_counter()
    norm()
    warm_norm = time.perf_counter() - w0
    w0 = time.perf_counter()
    reference()
    warm_ref = time.perf_counter() - w0
    t_ref, ref_values = 0.0, None
    t_norm, err = 0.0, None
    best_ref, best_norm = [], []
    for _ in range(repeats):  # interleaved, so both see the same machine load
        t, ref_values = _best(reference, 1)
        best_ref.append(t)
        t, err = _best(norm, 1)
        best_norm.append(t)
    t_ref, t_norm = min(best_ref), min(best_norm)
    return {"n_triangles": float(len(cells)), "n_quadrature_points": float(len(xq)),
            "l2_error": float(err), "l2_time_s": t_norm, "numpy_time_s": t_ref, "time_ratio": t_norm / t_ref,
            "warmup_l2_time_s": warm_norm, "warmup_numpy_time_s": warm_ref,
            "derive_time_s": mms.timings.get("derive_s", float("nan")),
            "lambdify_time_s": mms.timings.get("lambdify_s", float("nan")),
            "checksum_numpy": float(np.sum(ref_values))}
