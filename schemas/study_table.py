"""pandera schema of a study table (one row per multirun job)."""
from __future__ import annotations

from typing import Iterable

import pandera.pandas as pa

STATUSES = ["ok", "invalid", "error", "tracking_error"]
VERDICTS = ["pass", "warn", "fail"]


def study_table_schema(metric_names: Iterable[str], with_parameter: bool) -> pa.DataFrameSchema:
    """Columns: job (unique, >= 0), case, status, verdict, mlflow_run_id, [parameter], metrics."""
    columns = {
        "job": pa.Column(int, pa.Check.ge(0), unique=True),
        "case": pa.Column(str),
        "status": pa.Column(str, pa.Check.isin(STATUSES)),
        "verdict": pa.Column(str, pa.Check.isin(VERDICTS)),
        "mlflow_run_id": pa.Column(str),
    }
    if with_parameter:
        columns["parameter"] = pa.Column(float, nullable=True)
    for name in metric_names:
        columns[name] = pa.Column(float, nullable=True)
    return pa.DataFrameSchema(columns, strict=True, coerce=True)
