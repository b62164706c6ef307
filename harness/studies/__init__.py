"""Studies: a multirun sweep aggregated into a parent run (solution verification, validation
sampling, the Ray attempts callback), resuming a sweep or suite (and tagging the runs it superseded),
and the HTML report of a run or a sweep (with its Slurm jobs table).

May import families, generic, tools, core, tracking, metrics and launch.
"""

from harness._moved import forward_attributes

__getattr__ = forward_attributes(__name__)  # the names of harness 0.1's module harness.studies
