"""MLflow records: experiments, batches, parent and child runs, the words of a run's description.

May import metrics and launch.
"""

from harness._moved import forward_attributes

__getattr__ = forward_attributes(__name__)  # the names of harness 0.1's module harness.tracking
