"""Typed structured configs of the config groups, registered in Hydra's ConfigStore.

Every option file of a group starts with a defaults list naming its schema, e.g.::

    # conf/gate/analytic.yaml
    defaults:
      - /schema_gate@_here_
      - _self_

so that an unknown key or a wrong type is rejected at composition. Schemas are stored
as top-level ConfigStore entries named ``schema_<group>[_<kind>]`` (not as group
options), so they do not clutter ``--help``. Family adapters register the schemas of
their own sources, operators and integrators with :func:`store_schema` at import time;
:func:`register_all` imports every family module.
"""
from __future__ import annotations

import importlib
import logging
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


def store_schema(name: str, node: Any) -> None:
    """Register ``node`` (a dataclass) as the top-level config ``schema_<name>``."""
    ConfigStore.instance().store(name=f"schema_{name}", node=node)


@dataclass
class Band:
    """Acceptance band of one metric.

    pass if pass_min <= value <= pass_max; else warn if warn_min <= value <= warn_max;
    else fail. A missing bound is open. NaN always fails.
    """

    pass_max: Optional[float] = None
    warn_max: Optional[float] = None
    pass_min: Optional[float] = None
    warn_min: Optional[float] = None


@dataclass
class RegressionConf:
    """``gate.regression``: how far a metric may move from the accepted baseline (harness.baseline).

    A metric passes if |value - baseline| <= rel * |baseline| + abs. Cases tagged ``analytic``
    use ``analytic_rel`` / ``analytic_abs`` (exact to round-off), the others ``rel`` / ``abs``;
    ``bands.<metric>: {rel: .., abs: ..}`` sets one metric's band. Each metric is compared by its
    declared kind (harness.metrics.kinds): timing and memory not unless they have a band, counts
    exactly; a metric of no declared kind is not compared when its name matches a
    ``timing_patterns`` glob. Every metric of a case tagged ``bench`` is compared only with a band.
    enforce: a regression makes the exit code 1 (false: reported only).
    """

    enforce: bool = True
    rel: float = 1.0e-6
    abs: float = 0.0
    analytic_rel: float = 1.0e-12
    analytic_abs: float = 1.0e-14
    timing_patterns: List[str] = field(default_factory=lambda: [
        "*wall*", "*_time_s", "*time_ratio*", "*seconds*", "*speedup*", "*overhead*", "*throughput*",
        "*per_s", "*per_s_*", "*per_second*", "*realtime*", "*efficiency*", "*peak_mem*", "t_jac", "t_rhs",
        "*.t_jac", "*.t_rhs"])
    exclude: List[str] = field(default_factory=list)  # metric globs never compared
    bands: Dict[str, Any] = field(default_factory=dict)  # metric -> {rel, abs}


@dataclass
class GateConf:
    """``gate`` group: bands per metric; ``default`` applies to gated metrics without a band."""

    name: str = MISSING
    description: str = ""
    default: Optional[Band] = None
    # metric -> Band fields; typed loosely so that `+gate.bands.X={pass_max:1}` works on the
    # command line; every entry is checked against Band by harness.runner.gate_bands
    bands: Dict[str, Any] = field(default_factory=dict)
    regression: RegressionConf = field(default_factory=RegressionConf)


@dataclass
class ToleranceConf:
    """``tolerance`` group: numerical tolerances of solvers, geometry and quadrature."""

    name: str = MISSING
    description: str = ""
    geometry: float = 1.0e-12  # relative, column sums vs exact ring areas
    rtol: float = 1.0e-8  # relative tolerance of adaptive solvers
    atol: float = 1.0e-10  # absolute tolerance of adaptive solvers
    quadrature_order: int = 8  # Gauss points per direction where quadrature is used
    newton_tol: float = 1.0e-10  # residual tolerance of Newton solves
    extra: Dict[str, float] = field(default_factory=dict)


@dataclass
class TrackingConf:
    """``tracking`` group: where MLflow records go."""

    name: str = MISSING
    description: str = ""
    enabled: bool = True
    uri: str = MISSING  # absolute: sqlite:////abs/path.db or http://127.0.0.1:5000
    artifact_root: Optional[str] = None  # for experiments created by the harness
    experiment_prefix: str = "harness/"
    timeout_s: float = 5.0  # reachability probe of a server store
    experiment: Optional[str] = None  # explicit experiment name (a suite records its cases in its own)


@dataclass
class ValidationConf:
    """``study.validation`` of a ``kind: validation`` study (ASME V&V 20 comparison; harness.validation).

    data:        reference data file (CSV, schema schemas/validation_data.py) with metadata
                 beside it (``<file>.meta.yaml``: source, constructed, citation)
    quantities:  data quantity -> job metric giving the simulated value S
    inputs:      config key -> distribution of an uncertain input ({dist: normal, mean, std} |
                 {dist: uniform, low, high} | {dist: lognormal, median, sigma_ln})
    n_samples:   Latin hypercube samples per data point, drawn with ``seed``
    k:           coverage factor of the interval E ± k u_val
    band:        gate on |E| / u_val
    u_num_relative: quantity -> u_num / |S| (e.g. GCI12 / Fs of a solution-verification study)
    u_num_study: a solution-verification study.json (or sweep directory) whose u_num / |f1| of
                 the same quantity names is used where u_num_relative has no entry
    """

    data: str = MISSING
    quantities: Dict[str, str] = field(default_factory=dict)
    inputs: Dict[str, Any] = field(default_factory=dict)
    n_samples: int = 8
    seed: int = 0
    k: float = 2.0
    band: Band = field(default_factory=lambda: Band(pass_max=1.0, warn_max=2.0))
    u_num_relative: Dict[str, float] = field(default_factory=dict)
    u_num_study: Optional[str] = None


@dataclass
class StudyConf:
    """``study`` group: what a multirun sweep aggregates at its end.

    parameter: the swept config key that sets the level (e.g. operator.surface.resolution)
    metric:    the error metric whose observed order is computed
    spacing:   how the grid spacing h follows the parameter: "inverse" (h = 1/value,
               a resolution) or "direct" (h = value, a step size)
    """

    name: str = MISSING
    kind: str = "convergence"  # convergence | validation | table | a family's or module:function
    description: str = ""
    parameter: str = MISSING
    metric: str = MISSING
    spacing: str = "inverse"
    expected_order: Optional[float] = None
    order_tolerance: float = 0.2
    gci_safety_factor: float = 1.25
    # solution verification (harness.verification): the solution quantities given a GCI and
    # u_num (never the error metric), round-off level (multiple of eps), u_num = GCI12/divisor
    # (default: the safety factor), and the asymptotic-range check |ratio - 1| <= tolerance
    quantities: List[str] = field(default_factory=list)
    roundoff_factor: float = 1000.0
    u_num_divisor: Optional[float] = None
    asymptotic_tolerance: Optional[float] = None
    validation: Optional[ValidationConf] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class CaseConf:
    """``case`` group (``# @package _global_`` files): a whole verification case.

    adapter:     "harness.families.<family>:<function>" that runs the case
    gates:       metric names judged by the gate group (the verdict is the worst)
    key_metrics: metric names printed on the verdict line
    tags:        labels a suite selects by (harness.suites.KNOWN_TAGS)
    params:      family-specific parameters of the case (validated by the family's
                 schema when it registers one, else by its adapter)
    """

    name: str = MISSING
    family: str = MISSING
    adapter: str = MISSING
    description: str = ""
    gates: List[str] = field(default_factory=list)
    key_metrics: List[str] = field(default_factory=list)
    tags: List[str] = field(default_factory=list)  # fast, analytic, peer, study, bench, slow, kratos, ...
    params: Any = None


@dataclass
class SuiteSelectConf:
    """``suite.select``: which cases of conf/case a suite runs (every rule must hold).

    cases:        case names or glob patterns (``dem/*``); empty: every case
    families:     case families; empty: every family
    tags:         a case must carry every one of these tags
    any_tags:     a case must carry at least one of these (empty: no condition)
    exclude_tags: a case carrying any of these is dropped
    exclude:      case names or glob patterns dropped
    project:      true: only the cases of the user project's config directories
    """

    cases: List[str] = field(default_factory=list)
    families: List[str] = field(default_factory=list)
    tags: List[str] = field(default_factory=list)
    any_tags: List[str] = field(default_factory=list)
    exclude_tags: List[str] = field(default_factory=list)
    exclude: List[str] = field(default_factory=list)
    project: bool = False


@dataclass
class SuiteConf:
    """``suite`` group (conf/suite/*.yaml): a selection of cases run as one CI gate.

    overrides: case name or glob -> ``key=value`` overrides applied to the matching cases
               (values only, not group options), e.g. ``{"bench/*": ["case.params.n=10"]}``
    budget_s:  wall-time budget of the whole suite [s]; a case not started when it is spent
               is skipped (and the suite fails); null: no budget
    env:       environment variables set in every job (e.g. HARNESS_FULL: "1" for full sizes)
    order_seed: run the selected cases in an order shuffled with this seed (a determinism
               check: no result may depend on what ran before it); null: name order
    """

    name: str = MISSING
    description: str = ""
    select: SuiteSelectConf = field(default_factory=SuiteSelectConf)
    overrides: Dict[str, List[str]] = field(default_factory=dict)
    budget_s: Optional[float] = None
    env: Dict[str, str] = field(default_factory=dict)
    order_seed: Optional[int] = None


@dataclass
class PathsConf:
    outputs: str = MISSING  # absolute directory for run dirs, store and artifacts


@dataclass
class HarnessConf:
    """The root config. Groups without a schema of their own are typed by their options."""

    paths: PathsConf = field(default_factory=PathsConf)
    case: Optional[CaseConf] = None
    source: Any = None
    operator: Any = None
    integrator: Any = None
    tolerance: ToleranceConf = MISSING
    gate: GateConf = MISSING
    tracking: TrackingConf = MISSING
    study: Optional[StudyConf] = None
    suite: Optional[SuiteConf] = None


def register_core() -> None:
    store_schema("harness", HarnessConf)
    store_schema("gate", GateConf)
    store_schema("tolerance", ToleranceConf)
    store_schema("tracking", TrackingConf)
    store_schema("study", StudyConf)
    store_schema("case", CaseConf)
    store_schema("suite", SuiteConf)


_REGISTERED = False
GENERIC_PACKAGE = "harness.generic"
FAMILIES_PACKAGE = "harness.families"


def register_all() -> None:
    """Register the core schemas and import every family module (which registers its own)."""
    global _REGISTERED
    if _REGISTERED:
        return
    register_core()
    try:  # hydra/launcher=slurm: the submitit plugin's settings plus the harness's (harness.launch.slurm_launcher)
        from harness.launch.slurm_launcher import register as register_slurm
    except ImportError:  # hydra-submitit-launcher not installed (the `scale` extra)
        register_slurm = None
    if register_slurm is not None:
        register_slurm()
    # the adapters sit above core and are found by name, as ``case.adapter`` names them
    importlib.import_module(GENERIC_PACKAGE)  # the generic case's schema and resolvers
    families = importlib.import_module(FAMILIES_PACKAGE)

    for mod in pkgutil.iter_modules(families.__path__):
        try:
            importlib.import_module(f"harness.families.{mod.name}")
        except Exception as exc:  # one broken family must not take the others down
            logging.getLogger(__name__).warning("family module harness.families.%s not loaded: %s", mod.name, exc)
    _REGISTERED = True
