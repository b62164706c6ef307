"""Entry points: ``python -m harness`` (cases, sweeps, suites, --help, --list, ``init`` to scaffold a
user's verification folder, ``resume`` of an unfinished sweep or suite), ``python -m harness.sync``
and ``python -m harness.report``.

May import every other package of harness/ (the top layer); nothing imports it.
"""
