"""The metric library (one definition per metric), gates (bands and verdicts) and the solution
verification arithmetic (observed order, GCI).

Imports nothing else of harness/.
"""
from harness.metrics.library import (  # noqa: F401  (harness.metrics.LIBRARY, harness.metrics.e_F, ... as documented)
    LIBRARY,
    GCIResult,
    LibraryMetric,
    abs_error,
    e_F,
    e_J,
    energy_drift,
    final,
    gci,
    impulse,
    impulse_error,
    library_metric,
    max_abs_error,
    maximum,
    minimum,
    observed_order,
    period,
    rel_error,
    rel_l2,
    relative_rms,
    rms_rel,
    scalar_value,
    scd,
    slope,
)
