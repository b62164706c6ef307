"""Suites as one CI gate: selection from the case catalogue, baselines and regressions, compare,
JUnit XML and the dashboard.

May import studies, families, generic, tools, core, tracking, metrics and launch.
"""

from harness._moved import forward_attributes

__getattr__ = forward_attributes(__name__)  # the names of harness 0.1's module harness.suites
