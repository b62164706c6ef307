"""Typed schema of the generic (YAML-only) case, registered in Hydra's ConfigStore.

A case file selects it with the defaults entry ``- /generic_case@_here_``, which sets
``case.adapter: harness.generic:run`` and types ``case.params`` by :class:`GenericConf`,
so a misspelt key or a wrong type is rejected at composition, like every other group.
The OmegaConf resolvers ``${run_dir:}`` and ``${project_dir:}`` resolve to the
placeholders ``<run_dir>`` / ``<project_dir>``, which the case replaces by the run
directory and the project root when it runs (so the config hash does not depend on them).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from harness.core.configs import store_schema
from harness.generic.manufactured_schema import ManufacturedConf

RUN_DIR = "<run_dir>"
PROJECT_DIR = "<project_dir>"


@dataclass
class CommandConf:
    """An external program, run without a shell (an argument list).

    command:            executable and arguments; ``${...}`` interpolates config values,
                        ``${run_dir:}`` the run directory, ``${project_dir:}`` the project root
    cwd:                working directory (default: the run directory; relative: to it)
    env:                variables added to the environment
    inherit_env:        start from the harness's environment (false: only ``env``)
    timeout_s:          s, the program is killed (with its process group) after this
    expected_exit_code: any other exit code fails the run
    inputs:             input files, hashed (SHA-256, size) into the manifest (relative: to cwd)
    """

    command: List[str] = MISSING
    cwd: Optional[str] = None
    env: Dict[str, str] = field(default_factory=dict)
    inherit_env: bool = True
    timeout_s: float = 600.0
    expected_exit_code: int = 0
    inputs: List[str] = field(default_factory=list)


@dataclass
class ModelConf(CommandConf):
    """The model: ``command`` (an external program) or ``_target_`` (a Python callable).

    _target_:   ``package.module.function`` (or ``package.module:function``), called with
                ``kwargs`` (nested ``_target_`` nodes are instantiated); returns a mapping
    pythonpath: directories put on ``sys.path`` to import the callable
    The remaining fields are those of :class:`CommandConf` (for ``command`` only).
    """

    command: Optional[List[str]] = None  # type: ignore[assignment]  # optional here: or _target_
    _target_: Optional[str] = None
    kwargs: Dict[str, Any] = field(default_factory=dict)
    pythonpath: List[str] = field(default_factory=list)


@dataclass
class OutputConf:
    """One quantity the model produced.

    reader:    csv | npz | npy | hdf5 | json | returned (the callable's mapping);
               default: from the file suffix, or ``returned`` without a file
    file:      path of the file (relative: to the run directory)
    key:       CSV column, NPZ array, HDF5 dataset path, JSON dotted key, returned key
               (default for ``returned``: the quantity's name)
    unit:      unit of the quantity ("1" for dimensionless)
    slice:     numpy basic index applied after reading: "1:", "-1", "::2", ":, 0"
    delimiter: CSV delimiter
    """

    reader: Optional[str] = None
    file: Optional[str] = None
    key: Optional[str] = None
    unit: str = "1"
    slice: Optional[str] = None
    delimiter: str = ","


@dataclass
class ReferenceConf:
    """One reference quantity: an ``expression``, a ``file``, a callable ``_target_`` or a
    ``baseline`` (``kind`` is inferred from the one given).

    expression: over case parameters, outputs and earlier references (see the README table)
    file/reader/key/slice/delimiter: as for outputs (relative paths: to the project root)
    _target_/kwargs/pythonpath: a Python callable returning an array, a number or a mapping
                (then ``key`` picks the entry); ``inputs`` are expressions passed as keywords
    kind: baseline: the metric ``key`` (default: this reference's name) recorded by the newest
                accepted baseline run (``python -m harness baseline accept``) of ``case``
                (default: this case) in the run's tracking store
    """

    kind: Optional[str] = None  # expression | file | callable | baseline
    case: Optional[str] = None  # baseline: whose accepted run (default: this case); key: its metric
    expression: Optional[str] = None
    file: Optional[str] = None
    reader: Optional[str] = None
    key: Optional[str] = None
    slice: Optional[str] = None
    delimiter: str = ","
    _target_: Optional[str] = None
    kwargs: Dict[str, Any] = field(default_factory=dict)
    inputs: Dict[str, str] = field(default_factory=dict)
    pythonpath: List[str] = field(default_factory=list)
    unit: str = "1"


@dataclass
class MetricConf:
    """One metric of the library (``harness.metrics.LIBRARY``) with its inputs.

    value, reference: expressions (usually the name of an output and of a reference);
                      a scalar reference is broadcast to the shape of the value
    inputs:           further array inputs of the metric by name (t, dt, x, W_ext)
    options:          scalar options of the metric (J_scale, E_scale, level)
    kind:             error | value | count | timing | memory (harness.metrics.kinds): how a
                      baseline compares it; default the library metric's kind
    """

    metric: str = MISSING
    value: Optional[str] = None
    reference: Optional[str] = None
    inputs: Dict[str, str] = field(default_factory=dict)
    options: Dict[str, float] = field(default_factory=dict)
    kind: Optional[str] = None


@dataclass
class PlotConf:
    """A line plot of the run: ``y`` expressions against the ``x`` expression."""

    x: str = MISSING
    y: List[str] = field(default_factory=list)
    xlabel: str = ""
    ylabel: str = ""


@dataclass
class GenericConf:
    """``case.params`` of a generic case.

    parameters: named values, for interpolation (``${case.params.parameters.nx}``) and as
                names in expressions
    prepare:    a command run first (e.g. compile the solver), in the run directory
    model, outputs, reference, metrics: see the classes above
    series:     names (expressions) of 1-D arrays logged per step (MLflow histories)
    plots:      figures of the run, file name -> PlotConf
    manufactured: a manufactured solution (harness.generic.manufactured_schema)
    """

    parameters: Dict[str, Any] = field(default_factory=dict)
    prepare: Optional[CommandConf] = None
    model: ModelConf = field(default_factory=ModelConf)
    outputs: Dict[str, OutputConf] = field(default_factory=dict)
    reference: Dict[str, ReferenceConf] = field(default_factory=dict)
    metrics: Dict[str, MetricConf] = field(default_factory=dict)
    series: List[str] = field(default_factory=list)
    plots: Dict[str, PlotConf] = field(default_factory=dict)
    manufactured: Optional[ManufacturedConf] = None


def _register_resolvers() -> None:
    if not OmegaConf.has_resolver("run_dir"):
        OmegaConf.register_new_resolver("run_dir", lambda: RUN_DIR)
    if not OmegaConf.has_resolver("project_dir"):
        OmegaConf.register_new_resolver("project_dir", lambda: PROJECT_DIR)


def register() -> None:
    """Store the schema (``schema_generic``) and the case defaults entry (``generic_case``)."""
    _register_resolvers()
    store_schema("generic", GenericConf)
    ConfigStore.instance().store(
        name="generic_case",
        node={"case": {"adapter": "harness.generic:run", "params": OmegaConf.structured(GenericConf)}})


register()
