"""The ``hydra`` node for runs outside a Hydra application (``run_case``), so that
``${hydra:runtime.cwd}`` and friends resolve as on the command line."""
from __future__ import annotations

import contextlib
from typing import Iterator

from omegaconf import DictConfig, open_dict


@contextlib.contextmanager
def hydra_node(cfg: DictConfig) -> Iterator[DictConfig]:
    """``cfg`` (composed with ``return_hydra_config=True``) without its ``hydra`` node, which is
    Hydra's current one for the duration (``runtime.cwd`` = the working directory at composition,
    as the CLI sets it). Inside a Hydra job (a case run from a CLI job) the job's node is kept."""
    from hydra.core.hydra_config import HydraConfig

    config = HydraConfig.instance()
    ours = not HydraConfig.initialized()
    if ours:
        config.set_config(cfg)
    with open_dict(cfg):
        del cfg["hydra"]
    try:
        yield cfg
    finally:
        if ours:
            config.cfg = None
