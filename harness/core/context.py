"""What a family adapter receives and returns: the run context and the case result.

A family adapter is a plain function ``run(cfg, ctx) -> CaseResult`` in
``harness/families/<family>.py``. ``cfg`` is the composed, resolved case config
(an OmegaConf DictConfig); ``ctx`` is a :class:`RunContext`. The adapter builds the
model objects from ``cfg`` (``hydra.utils.instantiate`` on ``_target_`` nodes),
runs them, computes metrics with :mod:`harness.metrics.library`, and returns them. It never
judges gates, writes the manifest or talks to MLflow: the runner does that.
"""
from __future__ import annotations

import contextlib
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

from harness.core.atomic import atomic_write_bytes, atomic_write_text

log = logging.getLogger(__name__)


class HarnessInputError(Exception):
    """Invalid configuration or input: the CLI prints it on one line and exits 2.

    Give the file (or config path), the field and the rule, e.g.
    ``HarnessInputError("conf/case/x.yaml: source.n_rings: must be >= 1, got 0")``.
    """


class RunFailed(RuntimeError):
    """The model ran (or tried to) and failed: a failed run (status error, exit 1), reported in one
    line (the first line of the message), without a traceback.

    info: the records made before the failure (e.g. the prepare and model commands: argument
    list, exit code, time, stdout/stderr tails); the runner keeps them in the manifest's ``info``.
    """

    def __init__(self, message: str, info: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.info: Dict[str, Any] = dict(info or {})


@dataclass
class CaseResult:
    """What an adapter returns.

    metrics : name -> float (every value a plain float; NaN allowed and gated as fail).
    series  : optional name -> 1-D array-like of per-step values (logged as MLflow
              metric histories with ``step`` = index, and saved in ``series.json``).
    info    : optional small JSON-serialisable facts for the manifest (sizes, counts).
    kinds   : optional metric name -> kind (harness.metrics.kinds) declared per metric; the
              adapter module's ``METRIC_KINDS`` table gives the others.
    """

    metrics: Dict[str, float]
    series: Dict[str, Any] = field(default_factory=dict)
    info: Dict[str, Any] = field(default_factory=dict)
    kinds: Dict[str, str] = field(default_factory=dict)


@dataclass
class RunContext:
    """Services of the runner for one case run.

    run_dir : the run directory (exists); put result files and plots here.
    """

    run_dir: Path
    timings: Dict[str, float] = field(default_factory=dict)
    inputs: List[Path] = field(default_factory=list)
    outputs: List[Path] = field(default_factory=list)

    stages_open: List[str] = field(default_factory=list)

    @property
    def active_stage(self) -> Optional[str]:
        """The innermost stage running now (None between stages)."""
        return self.stages_open[-1] if self.stages_open else None

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time a stage (seconds, wall clock); shown in the manifest as ``timings[name]``."""
        start = time.perf_counter()
        self.stages_open.append(name)
        interrupted = False
        try:
            yield
        except KeyboardInterrupt:  # SIGINT/SIGTERM: the stage it stopped stays open (not completed)
            interrupted = True
            raise
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - start
            if not interrupted and self.stages_open and self.stages_open[-1] == name:
                self.stages_open.pop()

    def add_input(self, path: Path | str) -> Path:
        """Declare an input file: its SHA-256 and size go to the manifest."""
        p = Path(path).resolve()
        self.inputs.append(p)
        return p

    def add_output(self, path: Path | str) -> Path:
        """Declare a result file written by the adapter (hashed, logged as an artifact)."""
        p = Path(path).resolve()
        self.outputs.append(p)
        return p

    def output_path(self, name: str) -> Path:
        """Path for a result file inside the run directory, declared as an output."""
        return self.add_output(self.run_dir / name)

    def write_json(self, name: str, obj: Any) -> Path:
        """Write a JSON result file atomically and declare it as an output."""
        path = self.output_path(name)
        atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default))
        return path

    def write_bytes(self, name: str, data: bytes) -> Path:
        path = self.output_path(name)
        atomic_write_bytes(path, data)
        return path

    def save_figure(self, name: str, fig: Any) -> Path:
        """Save a matplotlib figure as PNG atomically (Agg backend) and declare it."""
        import io

        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        return self.write_bytes(name, buf.getvalue())


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


Adapter = Callable[[Any, RunContext], CaseResult]
