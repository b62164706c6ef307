"""Machine-readable contracts: HDF5 file specs (``*.yaml``) and table schemas (``tables.py``).

Specs only; the generic validator that reads them lives in ``models.load_transfer.contracts``.
"""
