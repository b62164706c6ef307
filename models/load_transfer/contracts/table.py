"""Surface quadrature table: read (CSV / Parquet), validate (pandera schema in schemas/tables.py),
and generate exact polar quadrature tables of a disk for cases and tests."""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import pandera.errors

from schemas.tables import COLUMNS, COORDINATES, NORMAL, SURFACE_QUADRATURE_TABLE

log = logging.getLogger(__name__)


class TableError(ValueError):
    """A quadrature table that breaks its schema (message names column, check and failing value)."""


@dataclass(frozen=True)
class QuadratureTable:
    """Validated table as arrays: ids (Nc,), coordinates (Nc, 3) m, areas (Nc,) m^2, normals (Nc, 3)."""

    ids: np.ndarray
    coordinates: np.ndarray
    areas: np.ndarray
    normals: np.ndarray
    sha256: str = ""

    @property
    def size(self) -> int:
        return int(self.ids.size)


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def validate_table(df: pd.DataFrame, source: str = "table") -> QuadratureTable:
    """Validate ``df`` against SURFACE_QUADRATURE_TABLE (every failure listed) and return arrays."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise TableError(f"{source}: columns {missing}: required (schema columns {COLUMNS})")
    try:
        SURFACE_QUADRATURE_TABLE.validate(df, lazy=True)
    except pandera.errors.SchemaErrors as exc:
        fc = exc.failure_cases
        parts = []
        table_level = fc["schema_context"] == "DataFrameSchema"
        for (ctx, col, check), grp in fc.assign(column=fc["column"].where(~table_level, ",".join(NORMAL))).groupby(
                ["schema_context", "column", "check"], sort=False, dropna=False):
            if ctx == "DataFrameSchema":
                rows = sorted({int(i) for i in grp["index"]})
                parts.append(f"{','.join(NORMAL)}: {check}: {len(rows)} failing row(s), first row {rows[0]}")
            else:
                first = grp.iloc[0]
                parts.append(f"{col}: {check}: {len(grp)} failing value(s), first {_py(first['failure_case'])!r} "
                             f"at row {first['index']}")
        raise TableError(f"{source}: invalid surface quadrature table: " + " | ".join(parts)) from None
    digest = hashlib.sha256(pd.util.hash_pandas_object(df[COLUMNS], index=False).values.tobytes()).hexdigest()
    return QuadratureTable(
        ids=df["condition_id"].to_numpy(np.int64),
        coordinates=df[COORDINATES].to_numpy(np.float64),
        areas=df["tributary_area"].to_numpy(np.float64),
        normals=df[NORMAL].to_numpy(np.float64),
        sha256=digest,
    )


def read_table(path: Path | str) -> QuadratureTable:
    """Read a CSV (``.csv``) or Parquet (``.parquet``/``.pq``) quadrature table and validate it."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".csv":
        df = pd.read_csv(p)
    elif suffix in (".parquet", ".pq"):
        df = pd.read_parquet(p)
    else:
        raise TableError(f"{p}: file type {suffix!r}: must be .csv or .parquet")
    return validate_table(df, source=str(p))


def polar_quadrature_table(
    *,
    radius: float,
    n_radial: int,
    n_theta: int,
    center: Sequence[float] = (0.0, 0.0),
    z: float = 0.0,
    outward: str = "-z",
    rotation: float = 0.0,
    first_id: int = 1,
) -> pd.DataFrame:
    """Exact polar-cell quadrature table of the disk of ``radius`` [m].

    Cells [r_j, r_{j+1}] x [theta_k, theta_{k+1}] with uniform spacing; the central cells
    (j = 0) merge into one full disk cell whose point lies on the axis (r = 0). Each point sits
    at the cell's area centroid radius (2/3 (r1^3 - r0^3)/(r1^2 - r0^2)) and mid angle; the
    tributary areas are the exact cell areas, so they sum to pi R^2 to round-off.
    """
    if n_radial < 1 or n_theta < 1:
        raise ValueError("n_radial, n_theta: must be >= 1")
    r = np.linspace(0.0, radius, n_radial + 1)
    dth = 2.0 * np.pi / n_theta
    r0, r1 = r[1:-1], r[2:]
    rc = (2.0 / 3.0) * (r1**3 - r0**3) / (r1**2 - r0**2)
    th = rotation + dth * (np.arange(n_theta) + 0.5)
    R, T = np.meshgrid(rc, th, indexing="ij")
    A = np.broadcast_to((0.5 * dth * (r1**2 - r0**2))[:, None], R.shape)
    rr = np.concatenate([[0.0], R.ravel()])
    tt = np.concatenate([[0.0], T.ravel()])
    aa = np.concatenate([[np.pi * r[1] ** 2], A.ravel()])
    sign = -1.0 if outward == "-z" else 1.0
    n = rr.size
    return pd.DataFrame({
        "condition_id": np.arange(first_id, first_id + n, dtype=np.int64),
        "x0": center[0] + rr * np.cos(tt),
        "y0": center[1] + rr * np.sin(tt),
        "z0": np.full(n, float(z)),
        "tributary_area": aa,
        "nx": np.zeros(n),
        "ny": np.zeros(n),
        "nz": np.full(n, sign),
    })
