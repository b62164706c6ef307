"""Entry points: ``python -m harness`` (cases, sweeps, suites, --help, --list, resume), ``python -m harness.sync``
and ``python -m harness.report``.

May import every other package of harness/ (the top layer); nothing imports it.
"""
