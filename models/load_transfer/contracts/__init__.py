"""HDF5 exchange contracts of the load-transfer path (seed 000).

- :mod:`.spec`       load the machine-readable specs in ``schemas/*.yaml``
- :mod:`.validator`  one generic validator driven by those specs (violations: path, rule, found)
- :mod:`.wall_loads` wall-loads v1.1 writer / reader (reads 1.0.x and 1.1.x)
- :mod:`.kratos_loads` kratos-point-loads v1 streaming writer / reader
- :mod:`.table`      surface quadrature table (CSV / Parquet) read + pandera validation
- :mod:`.corrupt`    generators of every bad-file kind (for tests and the bad-files case)
"""
from .spec import Spec, load_spec
from .validator import ContractError, UnreadableFileError, ValidationReport, Violation, validate_file

__all__ = [
    "ContractError",
    "Spec",
    "UnreadableFileError",
    "ValidationReport",
    "Violation",
    "load_spec",
    "validate_file",
]
