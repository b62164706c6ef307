"""Conservative transfer of axisymmetric ring pressures p(r, t) onto wall surface meshes (seed 000).

Plain numpy/scipy library: ring-pressure sources, surface meshes, the conservative operator
(exact ring/element overlap moments), exact time averaging onto a solver's steps, the debug
point map, shear loads and the export of Kratos point loads (HDF5/CSV contracts).

>>> import numpy as np
>>> from models.load_transfer import ConservativePressureOperator, disk_mesh
>>> surface = disk_mesh(radius=1.0, resolution=8, kind="tri")
>>> op = ConservativePressureOperator(surface, np.linspace(0.0, 1.0, 11))   # 10 rings [m]
>>> f = op.nodal_forces(np.full(10, 2.0e5))     # (n_nodes, 3) [N] of a uniform 2 bar
>>> round(float(op.normal_force(np.full(10, 2.0e5)) / (2.0e5 * np.pi)), 12)  # = p pi R^2 exactly
1.0

``export_kratos_loads`` and the file contracts load pandera/h5py on first use.
"""
from models.load_transfer.debug_map import map_axisymmetric_load
from models.load_transfer.operator import ConservativePressureOperator, GeometryError, centroid_sampling_forces
from models.load_transfer.shear import shear_nodal_forces, shear_point_forces
from models.load_transfer.sources import RingPressureHistory, analytic_ring_history, exact_force, exact_impulse
from models.load_transfer.surfaces import SurfaceMesh, disk_mesh
from models.load_transfer.time_average import OutOfHistoryError, exact_time_average, step_edges, step_times_for_end

_LAZY = {"export_kratos_loads": "models.load_transfer.export", "mapping_errors": "models.load_transfer.export",
         "ExportResult": "models.load_transfer.export", "ExportInputError": "models.load_transfer.export"}

__all__ = ["ConservativePressureOperator", "GeometryError", "SurfaceMesh", "disk_mesh", "RingPressureHistory",
           "analytic_ring_history", "exact_force", "exact_impulse", "exact_time_average", "step_edges",
           "step_times_for_end", "OutOfHistoryError", "centroid_sampling_forces", "map_axisymmetric_load",
           "shear_point_forces", "shear_nodal_forces", *_LAZY]


def __getattr__(name: str):
    """Names whose modules import pandera/h5py are loaded on first use (PEP 562)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
