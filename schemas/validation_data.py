"""Contract of a validation reference data file (CSV) and of its metadata (``<file>.meta.yaml``).

CSV columns, one row per (point, quantity):

- ``point``     (str)   name of the experimental condition, e.g. ``v1``
- ``quantity``  (str)   name of the measured quantity, e.g. ``contact_time``
- ``D``         (float) measured value, finite
- ``u_D``       (float) its standard uncertainty (k = 1), finite and > 0, same unit as D
- any number of condition columns named by a dotted config key (``case.params.v_n``), float,
  constant within a point: the job of that point runs with the key set to the value.

(point, quantity) is unique. Metadata (YAML mapping): ``source`` (str, where the numbers come
from), ``constructed`` (bool: true for numbers made up for tests, never measurements),
``citation`` (str, required when constructed is false), optional ``units`` (quantity -> unit)
and ``notes``.
"""
from __future__ import annotations

import re
from typing import Iterable

import pandera.pandas as pa

CONDITION_KEY = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
REQUIRED = ("point", "quantity", "D", "u_D")
META_REQUIRED = {"source": str, "constructed": bool}


def validation_data_schema(condition_columns: Iterable[str]) -> pa.DataFrameSchema:
    columns = {
        "point": pa.Column(str),
        "quantity": pa.Column(str),
        "D": pa.Column(float, pa.Check(lambda s: s.abs() < float("inf"), error="D must be finite")),
        "u_D": pa.Column(float, [pa.Check.gt(0.0), pa.Check(lambda s: s < float("inf"), error="u_D must be finite")]),
    }
    for c in condition_columns:
        columns[c] = pa.Column(float, pa.Check(lambda s: s.abs() < float("inf"), error="condition must be finite"))
    return pa.DataFrameSchema(columns, strict=True, coerce=True,
                              unique=["point", "quantity"], report_duplicates="all")
