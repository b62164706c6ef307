"""Versioned model descriptor (YAML) of a residual-form model run with ROS2.

A descriptor is self-contained: the model (import path of the residual), its parameters,
the state/derivative pairs, the algebraic unknowns, the run settings and the tolerances.
Its version follows the seed's milestones; every version keeps working:

=====  ==========================================================================
v1     fixed step with the last step shortened (``run.step``)
v2     state scales, time scale, FD step and the Jacobian consistency control
       (``jacobian_fd: {scales, time_scale, delta, control, control_tol, max_refine}``)
v3     adaptive step (``run.adaptive: true``, ``rtol``, ``atol``, ``h0``, ``h_min``,
       ``h_max``, ``max_steps``, controller ``safety``/``fac_min``/``fac_max``)
v4     tolerances per state by name (``tolerances: {name: {rtol, atol}}``) and statistics
v5     the sensitivity Jacobian provider (``jacobian: sensitivity``; default ``fd`` before)
=====  ==========================================================================

Example (v5)::

    ros_descriptor: 5
    model: models.integrators.problems.analytic:rlc6_residual
    parameters: {R1: 10.0, L1: 1.0e-3, C1: 1.0e-6, R2: 5.0, L2: 2.0e-3, C2: 4.7e-6, V0: 1.0}
    states:                      # state/derivative pairs, in the order of y
      - {name: i1, derivative: "i1'", initial: 0.0}
      ...
    algebraic:                   # further unknowns of z, with initial guesses
      - {name: vR1, initial: 0.0}
    run: {t_start: 0.0, t_end: 5.0e-4, outputs: [...], adaptive: true, rtol: 1.0e-4, atol: 1.0e-8}
    tolerances: {v2: {atol: 1.0e-9}}
    jacobian: sensitivity

Capabilities that are not supported (events, discontinuities, restart/continue, DAE index
> 1, delays/convolutions, parameter lists) are rejected before anything is simulated, with a
message naming them. The residual is called as ``residual(t, y, z, **parameters)`` and z is
ordered as the derivatives of ``states`` followed by ``algebraic``.
"""
from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Tuple, Union

import numpy as np

from models.integrators.base import Integrator, ResidualProblem, Solution

log = logging.getLogger(__name__)

LATEST_VERSION = 5

#: top-level key -> first version that accepts it
_TOP_KEYS = {
    "ros_descriptor": 1, "model": 1, "parameters": 1, "states": 1, "algebraic": 1, "run": 1, "newton": 1,
    "description": 1, "jacobian_fd": 2, "tolerances": 4, "jacobian": 5,
}
#: run key -> first version
_RUN_KEYS = {
    "t_start": 1, "t_end": 1, "outputs": 1, "step": 1, "n_steps": 1,
    "adaptive": 3, "rtol": 3, "atol": 3, "h0": 3, "h_min": 3, "h_max": 3, "max_steps": 3,
    "safety": 3, "fac_min": 3, "fac_max": 3,
}
_FD_KEYS = {"scales", "time_scale", "delta", "control", "control_tol", "max_refine"}
#: capabilities of the seed that this engine does not provide (rejected before simulating)
UNSUPPORTED = {
    "events": "events / zero crossings",
    "discontinuities": "discontinuities",
    "restart": "restart",
    "continue": "continue (resuming a previous run)",
    "rerun": "rerun",
    "delays": "delays / convolutions",
    "convolutions": "delays / convolutions",
    "lists": "parameter lists",
    "mdin": "multiple descriptors (mdin)",
}


class DescriptorError(ValueError):
    """Invalid descriptor: the message names the source, the field and the rule."""


@dataclass
class Descriptor:
    """A validated descriptor; :meth:`build` returns (problem, integrator, t_eval)."""

    version: int
    residual: Callable[..., np.ndarray]
    parameters: Dict[str, float]
    state_names: List[str]
    derivative_names: List[str]
    algebraic_names: List[str]
    y0: np.ndarray
    z0: np.ndarray
    t_span: Tuple[float, float]
    outputs: np.ndarray
    integrator_options: Dict[str, Any]
    adaptive: bool
    newton: Dict[str, Any]
    source: str

    def build(self) -> Tuple[ResidualProblem, Integrator, np.ndarray]:
        from models.integrators import get

        params = dict(self.parameters)
        res = self.residual

        def residual(t, y, z):
            return res(t, y, z, **params)

        problem = ResidualProblem(residual, self.y0, self.z0, self.t_span, names=self.state_names,
                                  z_names=self.derivative_names + self.algebraic_names, **self.newton)
        integ = get("ros2_adaptive" if self.adaptive else "ros2")(**self.integrator_options)
        return problem, integ, self.outputs

    def run(self) -> Solution:
        problem, integ, t_eval = self.build()
        return integ.solve(problem, t_eval)


def _err(src: str, field: str, rule: str) -> DescriptorError:
    return DescriptorError(f"{src}: {field}: {rule}")


def _check_keys(src: str, section: str, d: Mapping[str, Any], allowed: Mapping[str, int], version: int) -> None:
    for key in d:
        if key in UNSUPPORTED:
            raise _err(src, f"{section}{key}", f"unsupported capability ({UNSUPPORTED[key]}); it is rejected before "
                                               "simulating")
        if key not in allowed:
            raise _err(src, f"{section}{key}", f"unknown key; allowed: {', '.join(sorted(allowed))}")
        if allowed[key] > version:
            raise _err(src, f"{section}{key}", f"needs descriptor version >= {allowed[key]} (this is v{version})")


def _float(src: str, field: str, v: Any) -> float:
    try:
        out = float(v)
    except (TypeError, ValueError):
        raise _err(src, field, f"must be a number, got {v!r}") from None
    if not np.isfinite(out):
        raise _err(src, field, "must be finite")
    return out


def _import(src: str, path: Any) -> Callable:
    if not isinstance(path, str) or ":" not in path:
        raise _err(src, "model", f"must be 'package.module:function', got {path!r}")
    mod, _, name = path.partition(":")
    try:
        fn = getattr(importlib.import_module(mod), name)
    except (ImportError, AttributeError) as exc:
        raise _err(src, "model", f"cannot import {path!r}: {exc}") from None
    if not callable(fn):
        raise _err(src, "model", f"{path!r} is not callable")
    return fn


def parse_descriptor(doc: Mapping[str, Any], source: str = "<descriptor>") -> Descriptor:
    """Validate a descriptor mapping (see the module docstring) and return a :class:`Descriptor`."""
    src = source
    if not isinstance(doc, Mapping):
        raise _err(src, "<root>", "must be a mapping")
    version = doc.get("ros_descriptor")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= LATEST_VERSION:
        raise _err(src, "ros_descriptor", f"must be an integer version 1..{LATEST_VERSION}, got {version!r}")
    _check_keys(src, "", doc, _TOP_KEYS, version)
    for key in ("model", "states", "run"):
        if key not in doc:
            raise _err(src, key, "required")
    residual = _import(src, doc["model"])
    params = doc.get("parameters") or {}
    if not isinstance(params, Mapping):
        raise _err(src, "parameters", "must be a mapping name -> number")
    params = {str(k): _float(src, f"parameters.{k}", v) for k, v in params.items()}

    states = doc["states"]
    if not isinstance(states, list) or not states:
        raise _err(src, "states", "must be a non-empty list of {name, derivative, initial}")
    names, derivs, y0 = [], [], []
    for i, s in enumerate(states):
        if not isinstance(s, Mapping) or set(s) - {"name", "derivative", "initial", "scale"} or "name" not in s:
            raise _err(src, f"states[{i}]", "must be {name, derivative, initial[, scale]}")
        if "scale" in s and version < 2:
            raise _err(src, f"states[{i}].scale", f"needs descriptor version >= 2 (this is v{version})")
        names.append(str(s["name"]))
        derivs.append(str(s.get("derivative", f"{s['name']}'")))
        y0.append(_float(src, f"states[{i}].initial", s.get("initial", 0.0)))
    alg = doc.get("algebraic") or []
    if not isinstance(alg, list):
        raise _err(src, "algebraic", "must be a list of {name, initial}")
    alg_names, z_alg = [], []
    for i, a in enumerate(alg):
        if not isinstance(a, Mapping) or set(a) - {"name", "initial", "index"} or "name" not in a:
            raise _err(src, f"algebraic[{i}]", "must be {name, initial}")
        if int(a.get("index", 1)) > 1:
            raise _err(src, f"algebraic[{i}].index", "unsupported capability (DAE index > 1); rejected before simulating")
        alg_names.append(str(a["name"]))
        z_alg.append(_float(src, f"algebraic[{i}].initial", a.get("initial", 0.0)))
    all_names = names + derivs + alg_names
    dup = sorted({n for n in all_names if all_names.count(n) > 1})
    if dup:
        raise _err(src, "states/algebraic", f"names must be unique, repeated: {dup}")

    run = doc["run"]
    if not isinstance(run, Mapping):
        raise _err(src, "run", "must be a mapping")
    _check_keys(src, "run.", run, _RUN_KEYS, version)
    t0 = _float(src, "run.t_start", run.get("t_start", 0.0))
    if "t_end" not in run:
        raise _err(src, "run.t_end", "required")
    t1 = _float(src, "run.t_end", run["t_end"])
    if t1 <= t0:
        raise _err(src, "run.t_end", f"must be > t_start={t0}")
    outputs = np.asarray(run.get("outputs", [t0, t1]), dtype=float)
    if outputs.ndim != 1 or outputs.size == 0 or np.any(np.diff(outputs) <= 0) or outputs[0] < t0 or outputs[-1] > t1:
        raise _err(src, "run.outputs", "must be increasing times inside [t_start, t_end]")
    adaptive = bool(run.get("adaptive", False))
    opts: Dict[str, Any] = {}
    if adaptive:
        for k in ("step", "n_steps"):
            if k in run:
                raise _err(src, f"run.{k}", "not used with run.adaptive: true")
        for k in ("rtol", "atol", "h0", "h_min", "h_max", "safety", "fac_min", "fac_max"):
            if k in run:
                opts[k] = _float(src, f"run.{k}", run[k])
        if "max_steps" in run:
            opts["max_steps"] = int(run["max_steps"])
    else:
        if ("step" in run) == ("n_steps" in run):
            raise _err(src, "run.step", "give exactly one of run.step (s) and run.n_steps for a fixed-step run")
        if "step" in run:
            opts["h"] = _float(src, "run.step", run["step"])
        else:
            opts["n_steps"] = int(run["n_steps"])
        for k in ("rtol", "atol", "h0", "h_min", "h_max", "max_steps", "safety", "fac_min", "fac_max"):
            if k in run:
                raise _err(src, f"run.{k}", "only with run.adaptive: true")

    tol = doc.get("tolerances")
    if tol is not None:
        if not adaptive:
            raise _err(src, "tolerances", "only with run.adaptive: true")
        if not isinstance(tol, Mapping):
            raise _err(src, "tolerances", "must be a mapping state name -> {rtol, atol}")
        rt, at = {}, {}
        for n, v in tol.items():
            if n not in names:
                raise _err(src, f"tolerances.{n}", f"unknown state; states: {names}")
            if not isinstance(v, Mapping) or set(v) - {"rtol", "atol"}:
                raise _err(src, f"tolerances.{n}", "must be {rtol, atol}")
            if "rtol" in v:
                rt[n] = _float(src, f"tolerances.{n}.rtol", v["rtol"])
            if "atol" in v:
                at[n] = _float(src, f"tolerances.{n}.atol", v["atol"])
        opts["rtol_by_name"], opts["atol_by_name"] = rt or None, at or None

    jac = doc.get("jacobian", "fd")
    if jac not in ("fd", "sensitivity"):
        raise _err(src, "jacobian", f"must be fd or sensitivity, got {jac!r}")
    opts["jacobian"] = jac
    fd = doc.get("jacobian_fd")
    fd_opts: Dict[str, Any] = {}
    if fd is not None:
        if not isinstance(fd, Mapping) or set(fd) - _FD_KEYS:
            raise _err(src, "jacobian_fd", f"keys must be among {sorted(_FD_KEYS)}")
        fd_opts = dict(fd)
    scales = [s.get("scale") for s in states]
    if any(s is not None for s in scales):
        if any(s is None for s in scales):
            raise _err(src, "states[].scale", "give a scale for every state or for none")
        fd_opts["scales"] = [_float(src, "states[].scale", s) for s in scales]
    if fd_opts:
        opts["fd_options"] = fd_opts
    newton = doc.get("newton") or {}
    if not isinstance(newton, Mapping) or set(newton) - {"tol", "max_iter"}:
        raise _err(src, "newton", "keys must be among ['max_iter', 'tol']")
    nw = {}
    if "tol" in newton:
        nw["newton_tol"] = _float(src, "newton.tol", newton["tol"])
    if "max_iter" in newton:
        nw["max_newton_iter"] = int(newton["max_iter"])
    z0 = np.concatenate([np.zeros(len(names)), np.asarray(z_alg, dtype=float)])
    return Descriptor(version, residual, params, names, derivs, alg_names, np.asarray(y0), z0, (t0, t1), outputs,
                      opts, adaptive, nw, src)


def load_descriptor(path: Union[str, Path]) -> Descriptor:
    """Read and validate a descriptor YAML file."""
    import yaml

    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise DescriptorError(f"{p}: cannot read descriptor: {exc}") from None
    return parse_descriptor(doc, str(p))
