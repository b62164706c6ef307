"""The generic case: ``run(cfg, ctx) -> CaseResult`` from YAML alone.

Order of a run: ``prepare`` (a command, e.g. compiling the solver) -> ``model`` (a command
or a callable) -> ``outputs`` (read from files or from the returned mapping) ->
``reference`` (expressions, files, callables) -> ``metrics`` (the library of
:mod:`harness.metrics.library`, in declaration order; each metric becomes a name for the next)
-> series and plots. Quantities live in one namespace: case parameters, outputs,
references and metrics; a name may be defined once.

Units rule: every output and reference has a unit (``"1"`` when dimensionless). A metric
whose value and reference are plain names must compare quantities of the same unit; a
metric's own unit follows the library (``"1"``, the value's, or the unit of ``t``) and is
recorded in the manifest (``info.metric_units``).
"""
from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

import numpy as np
from omegaconf import DictConfig, OmegaConf

from harness.core.atomic import atomic_write_bytes
from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.core.inputs import find_input
from harness.generic import manufactured_case, readers
from harness.generic.expressions import ExpressionError, check, evaluate
from harness.generic.model import (
    ModelFailed,
    call,
    declare_inputs,
    import_callable,
    instantiate_kwargs,
    run_command,
    substitute,
)
from harness.generic.schema import GenericConf, OutputConf
from harness.metrics import library as M
from harness.metrics.kinds import KINDS

log = logging.getLogger(__name__)
WHERE = "case.params"
REFERENCE_KINDS = ("expression", "file", "callable", "baseline")


def _conf(cfg: DictConfig) -> DictConfig:
    """``case.params`` checked against :class:`GenericConf` (also when the case file did not
    select ``/generic_case``)."""
    raw = OmegaConf.select(cfg, "case.params")
    try:
        plain = OmegaConf.to_container(raw, resolve=True) if raw is not None else {}
        return OmegaConf.merge(OmegaConf.structured(GenericConf), plain)
    except Exception as exc:  # omegaconf ValidationError / ConfigKeyError
        key = getattr(exc, "full_key", None) or "?"
        raise HarnessInputError(f"{WHERE}.{key}: {str(exc).splitlines()[0]}") from None


class Namespace:
    """Named quantities with their units and where they were defined."""

    def __init__(self) -> None:
        self.values: Dict[str, Any] = {}
        self.units: Dict[str, str] = {}
        self.origin: Dict[str, str] = {}
        self.kind: Dict[str, str] = {}

    def define(self, where: str, name: str, value: Any, unit: Optional[str], kind: str) -> None:
        if not name.isidentifier():
            raise HarnessInputError(f"{where}: {name!r} is not a valid name (letters, digits, _)")
        if name in self.values:
            raise HarnessInputError(f"{where}: the name {name!r} is already defined by {self.origin[name]}")
        self.values[name] = value
        self.units[name] = unit or "?"
        self.origin[name] = where
        self.kind[name] = kind

    def eval(self, where: str, text: Any) -> Any:
        try:
            return evaluate(text, self.values)
        except ExpressionError as exc:
            raise HarnessInputError(f"{where}: {exc}") from None

    def unit_of(self, text: Any) -> Optional[str]:
        """Unit of a plain name; None for a composite expression (not checked)."""
        return self.units.get(text.strip()) if isinstance(text, str) and text.strip().isidentifier() else None


def _parameter(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        try:
            return np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            return value
    return value


def validate(conf: DictConfig) -> None:
    """Check the declarations before anything runs: model kind, readers, reference kinds,
    metric names, inputs and options, and every expression against the names it may use
    (parameters, outputs, earlier references and metrics). Raises HarnessInputError."""
    model = conf.model
    if (model.command is not None) == (model._target_ is not None):
        raise HarnessInputError(f"{WHERE}.model: give exactly one of command (a program) or _target_ "
                                "(a Python callable)")
    names: Optional[set] = set(conf.parameters)
    units: Dict[str, str] = {}

    def unit_of(text: Any) -> Optional[str]:
        return units.get(text.strip()) if isinstance(text, str) and text.strip().isidentifier() else None

    for name, spec in conf.outputs.items():
        where = f"{WHERE}.outputs.{name}"
        if spec.file is None:
            if model.command is not None:
                raise HarnessInputError(f"{where}: a command model needs file (and reader) for every output")
            if spec.reader not in (None, "returned"):
                raise HarnessInputError(f"{where}.file: required for reader {spec.reader!r}")
        else:
            readers.reader_for(where, spec.reader, Path(str(spec.file)))
        readers.parse_slice(where, spec.slice)
        _new_name(where, name, names)
        units[name] = spec.unit
    if not conf.outputs:
        if model.command is not None:
            raise HarnessInputError(f"{WHERE}.outputs: declare at least one output (reader, file, key, unit)")
        names = None  # a callable's returned names are known only when it has run
    for name in sorted(manufactured_case.declared_names(conf)):
        _new_name(f"{WHERE}.manufactured", name, names)
    for name, spec in conf.reference.items():
        where = f"{WHERE}.reference.{name}"
        kind = _reference_kind(where, spec)
        if kind == "expression":
            _check(f"{where}.expression", spec.expression, names)
        elif kind == "file":
            readers.reader_for(where, spec.reader, Path(str(spec.file)))
        for arg, text in spec.inputs.items():
            _check(f"{where}.inputs.{arg}", text, names)
        readers.parse_slice(where, spec.slice)
        _new_name(where, name, names)
        units[name] = spec.unit
    if not conf.metrics:
        raise HarnessInputError(f"{WHERE}.metrics: declare at least one metric")
    for name, spec in conf.metrics.items():
        where = f"{WHERE}.metrics.{name}"
        entry, given = _metric_declaration(where, spec)
        for k, text in given.items():
            _check(f"{where}.{'inputs.' if k in spec.inputs else ''}{k}", text, names)
        units[name] = _units_rule(where, entry, given, unit_of)
        _new_name(where, name, names)
    for i, text in enumerate(conf.series):
        _check(f"{WHERE}.series[{i}]", text, names)
    for file_name, spec in conf.plots.items():
        _check(f"{WHERE}.plots.{file_name}.x", spec.x, names)
        for i, text in enumerate(spec.y):
            _check(f"{WHERE}.plots.{file_name}.y[{i}]", text, names)


def _new_name(where: str, name: str, names: Optional[set]) -> None:
    if not str(name).isidentifier():
        raise HarnessInputError(f"{where}: {name!r} is not a valid name (letters, digits, _)")
    if names is not None:
        if name in names:
            raise HarnessInputError(f"{where}: the name {name!r} is already defined")
        names.add(name)


def _check(where: str, text: Any, names: Optional[set]) -> None:
    try:
        check(text, names)
    except ExpressionError as exc:
        raise HarnessInputError(f"{where}: {exc}") from None


def run(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Run a generic case (see the module docstring)."""
    conf = _conf(cfg)
    with ctx.stage("validate"):
        validate(conf)
    ns = Namespace()
    for name, value in OmegaConf.to_container(conf.parameters, resolve=True).items():
        ns.define(f"{WHERE}.parameters.{name}", name, _parameter(value), None, "parameter")
    info: Dict[str, Any] = {}
    mms = manufactured_case.setup(conf, ctx, info)  # derived code and values exist before prepare
    step = "prepare"
    try:
        if conf.prepare is not None:
            with ctx.stage("prepare"):
                info["prepare"] = run_command(ctx, conf.prepare, "prepare", f"{WHERE}.prepare").as_dict()
        step = "model"
        returned = _run_model(conf.model, ctx, info)
    except ModelFailed as exc:  # the records so far go to the manifest with the error
        if exc.record is not None:
            info[step] = exc.record.as_dict()
        exc.info.update(info)
        raise
    with ctx.stage("outputs"):
        _read_outputs(conf, ctx, ns, returned)
    manufactured_case.define(conf, ctx, ns, mms, info)
    with ctx.stage("reference"):
        _references(conf, ctx, ns, cfg, info)
    with ctx.stage("metrics"):
        metrics, units = _metrics(conf, ns)
    info["metric_units"] = units
    info["quantities"] = {n: {"unit": ns.units[n], "shape": list(np.shape(v)), "from": ns.origin[n]}
                          for n, v in ns.values.items() if ns.kind[n] in ("output", "reference")}
    series = _series(conf, ns)
    _save_quantities(ctx, ns)
    _plots(conf, ctx, ns)
    kinds = {name: str(spec.get("kind") or M.library_metric(str(spec.metric)).kind)
             for name, spec in conf.metrics.items()}
    return CaseResult(metrics=metrics, series=series, info=info, kinds=kinds)


def _run_model(model: DictConfig, ctx: RunContext, info: Dict[str, Any]) -> Optional[Mapping[str, Any]]:
    where = f"{WHERE}.model"
    has_command, has_target = model.command is not None, model._target_ is not None
    if has_command == has_target:
        raise HarnessInputError(f"{where}: give exactly one of command (a program) or _target_ (a Python callable)")
    with ctx.stage("model"):
        if has_command:
            info["model"] = run_command(ctx, model, "model", where).as_dict()
            return None
        fn = import_callable(where, str(model._target_), list(model.pythonpath), ctx.run_dir)
        kwargs = instantiate_kwargs(where, model.kwargs, ctx.run_dir)
        declare_inputs(ctx, where, list(model.inputs or []))
        result = call(where, fn, kwargs)
    if not isinstance(result, Mapping):
        raise HarnessInputError(f"{where}._target_: {model._target_} returned {type(result).__name__}, "
                                "not a mapping of arrays and numbers")
    info["model"] = {"callable": str(model._target_), "kwargs": sorted(kwargs), "returned": sorted(map(str, result))}
    return result


def _read_outputs(conf: DictConfig, ctx: RunContext, ns: Namespace, returned: Optional[Mapping[str, Any]]) -> None:
    outputs = dict(conf.outputs)
    if not outputs and returned is not None:  # a callable without declared outputs: every entry
        outputs = {str(k): OmegaConf.structured(OutputConf) for k in returned}
    if not outputs:
        raise HarnessInputError(f"{WHERE}.outputs: declare at least one output (reader, file, key, unit)")
    for name, spec in outputs.items():
        where = f"{WHERE}.outputs.{name}"
        if spec.file is None and spec.reader in (None, "returned"):
            if returned is None:
                raise HarnessInputError(f"{where}: a command model needs file (and reader) for every output")
            key = spec.key or name
            if key not in returned:
                raise HarnessInputError(f"{where}.key: the callable returned no {key!r} "
                                        f"(returned: {', '.join(sorted(map(str, returned)))})")
            try:
                data = np.asarray(returned[key], dtype=np.float64)
            except (TypeError, ValueError):
                raise HarnessInputError(f"{where}: returned {key!r} is not numeric") from None
        else:
            if spec.file is None:
                raise HarnessInputError(f"{where}.file: required for reader {spec.reader!r}")
            path = Path(substitute(str(spec.file), ctx.run_dir))
            path = path if path.is_absolute() else ctx.run_dir / path
            readers.reader_for(where, spec.reader, path)  # an unknown reader is named before the file
            if not path.is_file():
                raise HarnessInputError(f"{where}.file: {path}: the model did not write this file")
            data = readers.read_file(where, spec.reader, path, spec.key, delimiter=spec.delimiter)
            if path.resolve() not in ctx.outputs:
                ctx.add_output(path)
        ns.define(where, name, readers.apply_slice(where, data, spec.slice), spec.unit, "output")


def _reference_kind(where: str, spec: DictConfig) -> str:
    given = [k for k, present in (("expression", spec.expression is not None), ("file", spec.file is not None),
                                  ("callable", spec._target_ is not None)) if present]
    if spec.kind is not None:
        if spec.kind not in REFERENCE_KINDS:
            raise HarnessInputError(f"{where}.kind: unknown reference kind {spec.kind!r} "
                                    f"(known: {', '.join(REFERENCE_KINDS)})")
        if spec.kind != "baseline" and given != [spec.kind]:
            raise HarnessInputError(f"{where}: kind {spec.kind} needs exactly its own field "
                                    f"({'_target_' if spec.kind == 'callable' else spec.kind})")
        return str(spec.kind)
    if len(given) != 1:
        raise HarnessInputError(f"{where}: give exactly one of expression, file, _target_ "
                                "(or kind: baseline)")
    return given[0]


def _baseline_value(cfg: DictConfig, where: str, name: str, spec: DictConfig, info: Dict[str, Any]) -> float:
    """The metric ``spec.key`` (default ``name``) of the accepted baseline run of ``spec.case``
    (default: this case) in this run's tracking store; recorded in ``info["baseline_references"]``."""
    from harness.core import regression as baseline
    from harness.tracking import records as tracking

    tcfg = OmegaConf.select(cfg, "tracking")
    if tcfg is None or not tcfg.enabled:
        raise HarnessInputError(f"{where}: a baseline reference reads the tracking store; tracking is off")
    case = str(spec.case or OmegaConf.select(cfg, "case.name"))
    key = str(spec.key or name)
    try:
        runs = baseline.accepted_runs(tracking.client(str(tcfg.uri)), case)
    except Exception as exc:  # noqa: BLE001 - an unreadable store is invalid input for this case
        raise HarnessInputError(f"{where}: cannot read the baselines in {tcfg.uri}: {exc}".splitlines()[0]) from None
    if not runs:
        raise HarnessInputError(f"{where}: no accepted baseline run of case {case} in {tcfg.uri} "
                                f"(run it, then: python -m harness baseline accept <run dir>)")
    run = runs[0]
    if key not in run.data.metrics:
        raise HarnessInputError(f"{where}.key: the baseline run {run.info.run_id} of {case} has no metric {key!r} "
                                f"(it has: {', '.join(sorted(run.data.metrics))})")
    info.setdefault("baseline_references", {})[name] = {
        "case": case, "metric": key, "run_id": run.info.run_id, "value": run.data.metrics[key],
        "config_sha256": run.data.tags.get("config_sha256", "")}
    return float(run.data.metrics[key])


def _references(conf: DictConfig, ctx: RunContext, ns: Namespace, cfg: DictConfig, info: Dict[str, Any]) -> None:
    for name, spec in conf.reference.items():
        where = f"{WHERE}.reference.{name}"
        kind = _reference_kind(where, spec)
        if kind == "baseline":
            ns.define(where, name, np.float64(_baseline_value(cfg, where, name, spec, info)), spec.unit, "reference")
            continue
        if kind == "expression":
            value = ns.eval(f"{where}.expression", spec.expression)
        elif kind == "file":
            path = find_input(str(substitute(str(spec.file), ctx.run_dir)), f"{where}.file")
            value = readers.read_file(where, spec.reader, path, spec.key, delimiter=spec.delimiter)
            ctx.add_input(path)
        else:
            fn = import_callable(where, str(spec._target_), list(spec.pythonpath), ctx.run_dir)
            kwargs = instantiate_kwargs(where, spec.kwargs, ctx.run_dir)
            for arg, text in spec.inputs.items():
                kwargs[arg] = ns.eval(f"{where}.inputs.{arg}", text)
            value = call(where, fn, kwargs)
            if isinstance(value, Mapping):
                key = spec.key or name
                if key not in value:
                    raise HarnessInputError(f"{where}.key: the callable returned no {key!r} "
                                            f"(returned: {', '.join(sorted(map(str, value)))})")
                value = value[key]
        try:
            value = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise HarnessInputError(f"{where}: the reference is not numeric") from None
        if kind in ("file", "callable"):
            value = readers.apply_slice(where, value, spec.slice)
        ns.define(where, name, value, spec.unit, "reference")


def _metric_declaration(where: str, spec: DictConfig):
    """The library entry of a metric and its inputs by name (expressions), checked."""
    try:
        entry = M.library_metric(str(spec.metric))
    except KeyError as exc:
        raise HarnessInputError(f"{where}.metric: {exc.args[0]}") from None
    if spec.get("kind") is not None and spec.kind not in KINDS:
        raise HarnessInputError(f"{where}.kind: unknown metric kind {spec.kind!r} (kinds: {', '.join(KINDS)})")
    given: Dict[str, Any] = dict(spec.inputs)
    for field_name in ("value", "reference"):
        if spec[field_name] is not None:
            if field_name in given:
                raise HarnessInputError(f"{where}: {field_name} is given twice (field and inputs)")
            given[field_name] = spec[field_name]
    allowed = set(entry.inputs) | set(entry.optional)
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise HarnessInputError(f"{where}.inputs: {spec.metric} takes no {', '.join(unknown)} "
                                f"(inputs: {', '.join(entry.inputs + entry.optional)})")
    missing = [k for k in entry.inputs if k not in given]
    if missing:
        raise HarnessInputError(f"{where}: {spec.metric} needs {', '.join(missing)}")
    bad_options = sorted(set(spec.options) - set(entry.options))
    if bad_options:
        raise HarnessInputError(f"{where}.options: {spec.metric} has no option {', '.join(bad_options)} "
                                f"(options: {', '.join(entry.options) or 'none'})")
    return entry, given


def _units_rule(where: str, entry, given: Dict[str, Any], unit_of) -> str:
    """Check that value and reference have one unit; return the metric's unit ("?" unknown)."""
    u_val, u_ref = unit_of(given.get("value")), unit_of(given.get("reference"))
    if u_val and u_ref and "?" not in (u_val, u_ref) and u_val != u_ref:
        raise HarnessInputError(f"{where}: units differ: value {given['value']} [{u_val}] vs reference "
                                f"{given['reference']} [{u_ref}]")
    return {"1": "1", "value": u_val, "t": unit_of(given.get("t"))}.get(entry.unit) or "?"


def _metrics(conf: DictConfig, ns: Namespace):
    if not conf.metrics:
        raise HarnessInputError(f"{WHERE}.metrics: declare at least one metric")
    metrics: Dict[str, float] = {}
    units: Dict[str, str] = {}
    for name, spec in conf.metrics.items():
        where = f"{WHERE}.metrics.{name}"
        entry, given = _metric_declaration(where, spec)
        unit = _units_rule(where, entry, given, ns.unit_of)
        args = {k: ns.eval(f"{where}.{'inputs.' if k in spec.inputs else ''}{k}", text) for k, text in given.items()}
        if "reference" in args and "value" in args and np.ndim(args["reference"]) == 0 and np.ndim(args["value"]) > 0:
            args["reference"] = np.broadcast_to(np.asarray(args["reference"], dtype=np.float64),
                                                np.shape(args["value"]))
        options = {k: float(v) for k, v in spec.options.items()}
        try:
            value = float(entry.fn(**args, **options))
        except (ValueError, TypeError) as exc:
            raise HarnessInputError(f"{where}: {spec.metric}: {exc}") from None
        metrics[name] = value
        units[name] = unit
        ns.define(where, name, value, unit, "metric")
    return metrics, units


def _float_array(where: str, text: Any, value: Any) -> np.ndarray:
    """``value`` as a float64 array; a ragged or non-numeric list is invalid input naming ``where``."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise HarnessInputError(f"{where}: {text!r} is not a numeric array (a ragged or non-numeric list: "
                                f"{str(exc).splitlines()[0]})") from None


def _series(conf: DictConfig, ns: Namespace) -> Dict[str, List[float]]:
    out: Dict[str, List[float]] = {}
    for i, text in enumerate(conf.series):
        value = _float_array(f"{WHERE}.series[{i}]", text, ns.eval(f"{WHERE}.series[{i}]", text))
        if value.ndim != 1:
            raise HarnessInputError(f"{WHERE}.series[{i}]: {text!r} must be a 1-D array, got shape {value.shape}")
        out[str(text)] = value.tolist()
    return out


def _save_quantities(ctx: RunContext, ns: Namespace) -> None:
    """Outputs and references as read, in ``quantities.npz`` (for inspection and reports)."""
    arrays = {n: np.asarray(v, dtype=np.float64) for n, v in ns.values.items()
              if ns.kind[n] in ("output", "reference")}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write_bytes(ctx.output_path("quantities.npz"), buf.getvalue())


def _plots(conf: DictConfig, ctx: RunContext, ns: Namespace) -> None:
    if not conf.plots:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for file_name, spec in conf.plots.items():
        where = f"{WHERE}.plots.{file_name}"
        x = _float_array(f"{where}.x", spec.x, ns.eval(f"{where}.x", spec.x))
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for i, text in enumerate(spec.y):
            try:
                y = _float_array(f"{where}.y[{i}]", text, ns.eval(f"{where}.y[{i}]", text))
            except HarnessInputError:
                plt.close(fig)
                raise
            if y.shape != x.shape:
                plt.close(fig)
                raise HarnessInputError(f"{where}.y[{i}]: shape {y.shape} differs from x {x.shape}")
            unit = ns.unit_of(text)
            ax.plot(x, y, "o-" if x.size <= 60 else "-", ms=3, label=f"{text} [{unit}]" if unit else text)
        ax.set_xlabel(spec.xlabel or f"{spec.x} [{ns.unit_of(spec.x) or '?'}]")
        if spec.ylabel:
            ax.set_ylabel(spec.ylabel)
        ax.grid(alpha=0.3)
        ax.legend()
        name = file_name if file_name.endswith(".png") else f"{file_name}.png"
        ctx.save_figure(name, fig)
        plt.close(fig)

