"""The dashboard's section on Slurm jobs: id, state, node, queue wait and run time per case.

Rows carry ``slurm`` (the job directory's ``slurm.json``, written by
harness.launch.slurm_launcher) when the suite ran on ``hydra/launcher=slurm``; otherwise the
section is empty. The table itself is harness.studies.slurm_jobs's (the per-sweep report shows it too).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.studies import slurm_jobs


def section(rows: Sequence[Mapping[str, Any]]) -> str:
    """``<h2>Slurm jobs</h2>`` and a table, or "" when no row ran as a Slurm job."""
    return slurm_jobs.section(rows, label="case")
