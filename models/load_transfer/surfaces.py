"""Planar target surfaces (triangle / quadrilateral meshes) and disk-mesh generators.

The wall is the plane z = const; the load axis is the line through ``axis_origin`` (x_c, y_c)
parallel to z. Elements are numbered counter-clockwise seen from the outward normal.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SurfaceMesh:
    """A planar surface mesh.

    nodes       : (Nn, 3) m node coordinates.
    elements    : (Ne, 3) triangles or (Ne, 4) quadrilaterals, node indices, ccw seen from the
                  outward normal.
    normal      : (3,) unit outward normal of the planar surface.
    axis_origin : (2,) m, (x_c, y_c) of the load axis (parallel to z).

    >>> import numpy as np
    >>> from models.load_transfer import SurfaceMesh
    >>> unit_square = SurfaceMesh(nodes=np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]]),
    ...                           elements=np.array([[0, 1, 2, 3]]), normal=np.array([0.0, 0.0, 1.0]),
    ...                           axis_origin=np.array([0.0, 0.0]))
    >>> unit_square.kind, unit_square.area()             # one quad, 1 m^2
    ('quad', 1.0)
    """

    nodes: np.ndarray
    elements: np.ndarray
    normal: np.ndarray
    axis_origin: np.ndarray

    def __post_init__(self) -> None:
        nodes = np.asarray(self.nodes, dtype=np.float64)
        if nodes.ndim != 2 or nodes.shape[1] != 3 or nodes.shape[0] < 3:
            raise ValueError(f"nodes: must have shape (Nn>=3, 3), got {nodes.shape}")
        if not np.all(np.isfinite(nodes)):
            raise ValueError("nodes: must be finite")
        elements = np.asarray(self.elements)
        if elements.ndim != 2 or elements.shape[1] not in (3, 4) or elements.shape[0] < 1:
            raise ValueError(f"elements: must have shape (Ne>=1, 3|4), got {elements.shape}")
        if not np.issubdtype(elements.dtype, np.integer):
            raise ValueError(f"elements: must be integer node indices, got dtype {elements.dtype}")
        elements = elements.astype(np.int64)
        if elements.min() < 0 or elements.max() >= nodes.shape[0]:
            raise ValueError(f"elements: node indices must be in [0, {nodes.shape[0] - 1}]")
        normal = np.asarray(self.normal, dtype=np.float64)
        if normal.shape != (3,) or not np.all(np.isfinite(normal)) or abs(np.linalg.norm(normal) - 1.0) > 1e-12:
            raise ValueError(f"normal: must be a finite unit 3-vector, got {normal!r}")
        axis = np.asarray(self.axis_origin, dtype=np.float64)
        if axis.shape != (2,) or not np.all(np.isfinite(axis)):
            raise ValueError(f"axis_origin: must be a finite (x_c, y_c) pair in m, got {axis!r}")
        for name, arr in (("nodes", nodes), ("elements", elements), ("normal", normal), ("axis_origin", axis)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        height = nodes @ normal
        size = float(np.ptp(nodes, axis=0).max())
        if np.ptp(height) > 1e-9 * max(size, 1e-300):
            raise ValueError(f"nodes: the surface must be planar and normal to `normal` (spread {np.ptp(height)!r} m)")
        areas = self.element_areas(signed=True)
        if np.any(areas <= 0.0):
            k = int(np.argmin(areas))
            raise ValueError(
                f"elements: must be non-degenerate and ccw seen from the outward normal; "
                f"element {k} has signed area {areas[k]!r} m^2"
            )

    @property
    def kind(self) -> str:
        return "tri" if self.elements.shape[1] == 3 else "quad"

    def element_areas(self, signed: bool = False) -> np.ndarray:
        """Element areas, m^2 (signed w.r.t. ``normal`` if ``signed``; quads must be planar)."""
        x = self.nodes[self.elements]
        if self.elements.shape[1] == 3:
            vec = 0.5 * np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0])
        else:
            vec = 0.5 * np.cross(x[:, 2] - x[:, 0], x[:, 3] - x[:, 1])
        s = vec @ self.normal
        return s if signed else np.abs(s)

    def area(self) -> float:
        """Total surface area, m^2."""
        return float(self.element_areas().sum())

    def sha256(self) -> str:
        """SHA-256 of nodes (float64), elements (int64) and normal (float64), little endian."""
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(self.nodes, dtype="<f8").tobytes())
        h.update(np.ascontiguousarray(self.elements, dtype="<i8").tobytes())
        h.update(np.ascontiguousarray(self.normal, dtype="<f8").tobytes())
        return h.hexdigest()


# ----------------------------------------------------------------------------- generators

def _ring_triangulation(n: int):
    """Unit-disk ring triangulation: centre + rings k=1..n of 6k nodes, 6 n^2 triangles.

    Returns (xy (Nn,2) with boundary on the unit circle, tri (Ne,3) ccw). Loops over the n ring
    layers only; each layer is generated vectorised (a merge of the two rings' angles).
    """
    counts = 6 * np.arange(1, n + 1)
    starts = np.concatenate(([1], 1 + np.cumsum(counts)[:-1]))
    k_of = np.repeat(np.arange(1, n + 1), counts)
    j_of = np.arange(counts.sum()) - np.repeat(starts - 1, counts)
    ang = 2.0 * np.pi * j_of / (6.0 * k_of)
    rad = k_of / float(n)
    xy = np.vstack([[0.0, 0.0], np.column_stack([rad * np.cos(ang), rad * np.sin(ang)])])
    tris = []
    j = np.arange(6)
    tris.append(np.column_stack([np.zeros(6, dtype=np.int64), 1 + j, 1 + (j + 1) % 6]))
    for k in range(2, n + 1):
        m, big = 6 * (k - 1), 6 * k
        inner0, outer0 = starts[k - 2], starts[k - 1]
        ji, jo = np.arange(m), np.arange(big)
        # event keys (j+1)/m and (j+1)/big scaled by m*big to integers; ties: outer first
        keys = np.concatenate([(ji + 1) * big, (jo + 1) * m])
        kind = np.concatenate([np.ones(m, dtype=np.int64), np.zeros(big, dtype=np.int64)])
        order = np.lexsort((kind, keys))
        kind = kind[order]
        n_in = np.cumsum(kind) - kind          # inner advances before this event
        n_out = np.cumsum(1 - kind) - (1 - kind)
        i_cur, o_cur = inner0 + n_in % m, outer0 + n_out % big
        i_nxt, o_nxt = inner0 + (n_in + 1) % m, outer0 + (n_out + 1) % big
        third = np.where(kind == 1, i_nxt, o_nxt)
        tris.append(np.column_stack([i_cur, o_cur, third]))
    tri = np.vstack(tris).astype(np.int64)
    return xy, _orient_ccw(xy, tri)


def _cross2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _orient_ccw(xy: np.ndarray, cells: np.ndarray) -> np.ndarray:
    p = xy[cells]
    if cells.shape[1] == 3:
        s = _cross2(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    else:
        s = _cross2(p[:, 2] - p[:, 0], p[:, 3] - p[:, 1])
    out = cells.copy()
    flip = s < 0.0
    out[flip] = out[flip][:, ::-1]
    return out


def _ogrid_quads(n: int):
    """Unit-disk O-grid: a square core of 2m x 2m cells and 4 blocks of 2m x (n - m) cells.

    m = n // 2, so there are n cell layers from the centre to the boundary along the axes (core
    half-width 1/2, cells of size 1/n there). Each block blends the core side linearly into a
    quarter of the unit circle, whose 2m nodes are equally spaced in angle (8 m = 4 n boundary
    nodes in all, for even n). Three cells meet at each core corner (angles 90°, 135°, 135°).
    """
    if n < 2:
        raise ValueError(f"resolution: quadrilateral disk meshes need resolution >= 2, got {n}")
    m = n // 2
    nr = n - m
    a = m / float(n)
    side = 2 * m + 1
    # core nodes, id = (v + m) * side + (u + m)
    u, v = np.meshgrid(np.arange(-m, m + 1), np.arange(-m, m + 1), indexing="xy")
    core_xy = a * np.column_stack([u.ravel(), v.ravel()]) / m
    n_core = side * side
    ci, cj = np.meshgrid(np.arange(2 * m), np.arange(2 * m), indexing="xy")
    n0 = (cj * side + ci).ravel()
    cells = [np.column_stack([n0, n0 + 1, n0 + side + 1, n0 + side])]
    # block 0 (right, x > 0): nodes (k, l), k = 0..2m along the side, l = 0..nr outwards
    k, l = np.meshgrid(np.arange(2 * m + 1), np.arange(nr + 1), indexing="ij")
    t = (k - m) / float(m)
    w = l / float(nr)
    phi = 0.25 * np.pi * t
    bx = (1.0 - w) * a + w * np.cos(phi)
    by = (1.0 - w) * a * t + w * np.sin(phi)
    per_block = 2 * m * nr  # new nodes per block: k = 0..2m-1, l = 1..nr
    xy_blocks, ids = [], np.empty((4, 2 * m + 1, nr + 1), dtype=np.int64)
    for b in range(4):
        x_b, y_b = bx[:-1, 1:], by[:-1, 1:]
        for _ in range(b):  # exact 90° rotations
            x_b, y_b = -y_b, x_b
        xy_blocks.append(np.column_stack([x_b.ravel(), y_b.ravel()]))
        kk, ll = np.meshgrid(np.arange(2 * m), np.arange(1, nr + 1), indexing="ij")
        ids[b, :-1, 1:] = n_core + b * per_block + (kk * nr + (ll - 1))
        # l = 0: the core side, (u, v) = (m, k - m) rotated b times by (u, v) -> (-v, u)
        uu, vv = np.full(2 * m + 1, m), np.arange(-m, m + 1)
        for _ in range(b):
            uu, vv = -vv, uu
        ids[b, :, 0] = (vv + m) * side + (uu + m)
    for b in range(4):  # seam: k = 2m of block b is k = 0 of block b + 1
        ids[b, -1, 1:] = ids[(b + 1) % 4, 0, 1:]
    for b in range(4):
        q0 = ids[b, :-1, :-1].ravel()
        q1 = ids[b, 1:, :-1].ravel()
        q2 = ids[b, 1:, 1:].ravel()
        q3 = ids[b, :-1, 1:].ravel()
        cells.append(np.column_stack([q0, q1, q2, q3]))
    xy = np.vstack([core_xy] + xy_blocks)
    quads = np.vstack(cells).astype(np.int64)
    return xy, _orient_ccw(xy, quads), 8 * m


def disk_mesh(
    *,
    radius: float,
    resolution: int,
    kind: str = "tri",
    rotation: float = 0.0,
    center=(0.0, 0.0),
    z: float = 0.0,
    outward: str = "+z",
    cover: str = "circumscribe",
) -> SurfaceMesh:
    """Mesh of the disk of ``radius`` (m) about ``center`` in the plane z.

    kind       : "tri" (ring triangulation, 6 n^2 triangles, 6 n boundary vertices) or "quad"
                 (O-grid with m = n // 2: 4 m^2 + 8 m (n - m) quads, 8 m boundary vertices).
    resolution : n, element layers from the centre to the boundary (along the axes for quads).
    rotation   : azimuthal rotation of the mesh about ``center``, rad.
    cover      : "circumscribe" (the boundary polygon's edges are tangent to the circle, so the
                 mesh covers the disk) or "inscribe" (boundary vertices on the circle).
    outward    : "+z" or "-z", the outward normal; element order is ccw seen from it.
    ``center`` is also the mesh's axis origin.

    >>> import numpy as np
    >>> from models.load_transfer import disk_mesh
    >>> s = disk_mesh(radius=1.0, resolution=4)         # 6 n^2 = 96 triangles, 1 + 3 n (n + 1) nodes
    >>> s.nodes.shape, s.elements.shape
    ((61, 3), (96, 3))
    >>> round(float(s.area() / (24 * np.tan(np.pi / 24))), 12)   # circumscribed 24-gon: N R^2 tan(pi/N)
    1.0
    >>> disk_mesh(radius=0.5, resolution=4, kind="quad").elements.shape   # m = 2: 4 m^2 + 8 m (n - m)
    (48, 4)
    """
    radius = float(radius)
    if not (np.isfinite(radius) and radius > 0.0):
        raise ValueError(f"radius: must be a positive finite length in m, got {radius!r}")
    if int(resolution) != resolution or int(resolution) < 1:
        raise ValueError(f"resolution: must be an integer >= 1, got {resolution!r}")
    n = int(resolution)
    if kind == "tri":
        xy, cells = _ring_triangulation(n)
        n_boundary = 6 * n
    elif kind == "quad":
        xy, cells, n_boundary = _ogrid_quads(n)
    else:
        raise ValueError(f"kind: must be 'tri' or 'quad', got {kind!r}")
    if cover == "circumscribe":
        rho = radius / np.cos(np.pi / n_boundary)
    elif cover == "inscribe":
        rho = radius
    else:
        raise ValueError(f"cover: must be 'circumscribe' or 'inscribe', got {cover!r}")
    c, s = np.cos(float(rotation)), np.sin(float(rotation))
    center = np.asarray(center, dtype=np.float64)
    if center.shape != (2,) or not np.all(np.isfinite(center)):
        raise ValueError(f"center: must be a finite (x, y) pair in m, got {center!r}")
    pts = rho * xy
    pts = np.column_stack([c * pts[:, 0] - s * pts[:, 1], s * pts[:, 0] + c * pts[:, 1]]) + center
    nodes = np.column_stack([pts, np.full(pts.shape[0], float(z))])
    if outward == "+z":
        normal = np.array([0.0, 0.0, 1.0])
    elif outward == "-z":
        normal = np.array([0.0, 0.0, -1.0])
        cells = cells[:, ::-1].copy()
    else:
        raise ValueError(f"outward: must be '+z' or '-z', got {outward!r}")
    return SurfaceMesh(nodes=nodes, elements=cells, normal=normal, axis_origin=center)


def disk_triangles_with_count(n_triangles: int, radius: float) -> SurfaceMesh:
    """Circumscribing triangle disk mesh with about ``n_triangles`` (6 n^2, n = round(sqrt(N/6)))."""
    if int(n_triangles) < 6:
        raise ValueError(f"n_triangles: must be >= 6, got {n_triangles!r}")
    n = max(1, int(round(np.sqrt(int(n_triangles) / 6.0))))
    return disk_mesh(radius=radius, resolution=n, kind="tri")
