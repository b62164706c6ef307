"""What a process does before it runs a job of a sweep or suite (once per process in effect)."""
from __future__ import annotations


def prepare() -> None:
    """Space loky's garbage collections (:mod:`harness.launch.worker_gc`) and read Hydra's config
    files and plugins once per process (:mod:`harness.launch.hydra_reuse`); both are no-ops after
    the first job, and each checks first what it changes in its library (:mod:`harness.launch.guard`)."""
    from harness.launch.hydra_reuse import install
    from harness.launch.worker_gc import space_loky_collections

    space_loky_collections()
    install()
