"""Table schemas (pandera): the surface quadrature table read by cavitation-kratos-export.

One row per Kratos point-load condition: ``condition_id`` (unique, >= 0), initial coordinates
``x0, y0, z0`` [m], ``tributary_area`` [m^2] (> 0), outward unit normal ``nx, ny, nz`` [-]; all
values finite. A spec (data) like the YAML files beside it: validation code lives in
models.load_transfer.contracts.table.
"""
from __future__ import annotations

import numpy as np
import pandera.pandas as pa

UNIT_NORMAL_ATOL = 1.0e-9
COORDINATES = ["x0", "y0", "z0"]
NORMAL = ["nx", "ny", "nz"]
COLUMNS = ["condition_id", *COORDINATES, "tributary_area", *NORMAL]


def _finite() -> pa.Check:
    return pa.Check(lambda s: np.isfinite(s), element_wise=False, name="finite")


def _unit_normals(df) -> "np.ndarray":
    n = df[NORMAL].to_numpy(dtype=np.float64)
    import pandas as pd

    return pd.Series(np.abs(np.sqrt(np.einsum("ij,ij->i", n, n)) - 1.0) <= UNIT_NORMAL_ATOL, index=df.index)


SURFACE_QUADRATURE_TABLE = pa.DataFrameSchema(
    columns={
        "condition_id": pa.Column("int64", checks=[pa.Check.ge(0)], unique=True, nullable=False),
        **{c: pa.Column("float64", checks=[_finite()], nullable=False) for c in COORDINATES},
        "tributary_area": pa.Column("float64", checks=[_finite(), pa.Check.gt(0.0)], nullable=False),
        **{c: pa.Column("float64", checks=[_finite()], nullable=False) for c in NORMAL},
    },
    checks=[pa.Check(_unit_normals, name="unit_normal")],  # | |n| - 1 | <= UNIT_NORMAL_ATOL
    strict=False,
    coerce=False,
    name="surface-quadrature-table-v1",
)
