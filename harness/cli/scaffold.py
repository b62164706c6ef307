"""The files ``harness init`` writes: a working verification folder for a user's solver.

A tiny solver (``verification/solver/heat1d.py``: the 1-D heat equation by explicit finite
differences, one CSV output file) stands in for the user's program, so the scaffold passes as
written; the user then points ``model.command`` at their own solver and edits from a working state.
"""
from __future__ import annotations

from typing import Dict

PROJECT_FILE = """\
# The harness's settings for this repository (see `harness --help`; the same keys may go in a
# [tool.harness] table of pyproject.toml instead).
cases: [verification]   # folders holding case/, study/, suite/ (and gate/, source/, ...) like the shipped conf/
outputs: outputs        # run directories, suite reports and the MLflow store (sqlite)
"""

SOLVER = '''\
"""A stand-in solver: u_t = alpha u_xx on [0, L], u = 0 at both ends, u(x, 0) = sin(pi x / L),
by explicit finite differences (FTCS); the step is shortened so that t_end is reached exactly.

usage: python heat1d.py NX ALPHA L T_END R OUT.csv   (writes the columns x [m], u [K] at t_end)
Replace it by your own program in verification/case/heat/ftcs.yaml (model.command).
"""
import math
import sys


def main(argv):
    if len(argv) != 7:
        sys.stderr.write("usage: heat1d.py NX ALPHA L T_END R OUT.csv\\n")
        return 2
    nx, alpha, length, t_end, r = int(argv[1]), float(argv[2]), float(argv[3]), float(argv[4]), float(argv[5])
    dx = length / nx
    n_steps = math.ceil(t_end / (r * dx * dx / alpha) - 1e-9)
    lam = alpha * (t_end / n_steps) / (dx * dx)
    u = [math.sin(math.pi * i * dx / length) for i in range(nx + 1)]
    u[0] = u[-1] = 0.0
    for _ in range(n_steps):
        u = [0.0] + [u[i] + lam * (u[i - 1] - 2.0 * u[i] + u[i + 1]) for i in range(1, nx)] + [0.0]
    with open(argv[6], "w") as fh:
        fh.write("x,u\\n")
        fh.writelines(f"{i * dx!r},{ui!r}\\n" for i, ui in enumerate(u))
    print(f"heat1d: nx={nx} n_steps={n_steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
'''

CASE = """\
# @package _global_
# Your solver against an exact solution, from YAML alone (a generic case):
#   harness +case=heat/ftcs
# model.command runs the program (no shell) in the run directory; it writes heat.csv, whose
# columns x and u are the outputs. ${project_root:} is the folder of harness.yaml;
# ${harness_python:} the Python running the harness. At r = alpha dt / dx^2 = 0.4 the
# relative L2 error is e_u = 1.14 dx^2 (2.85e-3 at nx = 20).
defaults:
  - /generic_case@_here_
  - override /gate: production
  - _self_
case:
  name: heat/ftcs
  family: heat
  tags: [fast]
  description: "1-D heat equation (FTCS) against the exact Fourier mode"
  gates: [e_u]
  key_metrics: [e_u, u_center]
  params:
    parameters:
      nx: 20        # intervals on [0, L]
      alpha: 1.0    # m^2/s, diffusivity
      L: 1.0        # m
      t_end: 0.1    # s
      r: 0.4        # alpha dt / dx^2 (<= 0.5)
    model:
      command: ["${harness_python:}", "${project_root:}/verification/solver/heat1d.py",
                "${case.params.parameters.nx}", "${case.params.parameters.alpha}", "${case.params.parameters.L}",
                "${case.params.parameters.t_end}", "${case.params.parameters.r}", heat.csv]
      inputs: [verification/solver/heat1d.py]   # relative: the project root; hashed into the manifest
      timeout_s: 60
    outputs:
      x: {file: heat.csv, key: x, unit: m}
      u: {file: heat.csv, key: u, unit: K}
    reference:
      u_exact: {expression: "sin(pi * x / L) * exp(-alpha * (pi / L)**2 * t_end)", unit: K}
    metrics:
      e_u: {metric: rel_l2, value: u, reference: u_exact}
      u_center: {metric: value, value: "u[nx // 2]"}
gate:
  bands:
    e_u: {pass_max: 0.02, warn_max: 0.05}
"""

STUDY = """\
# @package _global_
# Observed order in space of heat/ftcs (r fixed, so dt ~ dx^2): expected 2 +- 0.1.
#   harness -m +case=heat/ftcs +study=heat/ftcs_refinement
study:
  name: heat/ftcs_refinement
  kind: convergence
  description: "e_u against nx (h = L/nx); expected order 2; GCI on u(L/2, t_end)"
  parameter: case.params.parameters.nx
  metric: e_u
  spacing: inverse
  expected_order: 2.0
  order_tolerance: 0.1
  quantities: [u_center]
hydra:
  sweeper:
    params:
      case.params.parameters.nx: 10,20,40
"""

SUITE = """\
# This project's quick gate: its cases tagged fast.   harness suite=verify
# (`harness suite=project` runs every case of the project.)
defaults:
  - /schema_suite@_here_
  - _self_
name: verify
description: The project's cases tagged fast.
select:
  project: true
  tags: [fast]
budget_s: 600
"""

GITHUB_WORKFLOW = """\
# Verification of this repository's solver with the harness: every case of verification/,
# JUnit XML as a check, the dashboard and the run records as an artifact.
name: verification
on: [push, pull_request]
jobs:
  verify:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install the harness
        run: python -m pip install mechanics-harness
      - name: Run the project's suite
        run: harness suite=project
      - name: Publish the JUnit report
        if: always()
        uses: mikepenz/action-junit-report@v4
        with:
          report_paths: outputs/suites/project/*/junit.xml
      - name: Keep the dashboard and the records
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: verification
          path: |
            outputs/suites/project/*/dashboard.html
            outputs/suites/project/*/junit.xml
            outputs/runs/
"""


def files() -> Dict[str, str]:
    """Relative path -> text of every file ``harness init`` writes."""
    return {
        "harness.yaml": PROJECT_FILE,
        "verification/solver/heat1d.py": SOLVER,
        "verification/case/heat/ftcs.yaml": CASE,
        "verification/study/heat/ftcs_refinement.yaml": STUDY,
        "verification/suite/verify.yaml": SUITE,
        ".github/workflows/verification.yml": GITHUB_WORKFLOW,
    }
