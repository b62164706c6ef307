"""How a generic case uses its ``manufactured:`` section.

``setup`` (before ``prepare``): derive the expressions (sympy), write the generated code
(``code``) and the values on the user's points (``values``) into the run directory, record the
expressions, their SHA-256 and the derivation/compile times in the manifest
(``info.manufactured``). ``define`` (after the outputs are read): the derived names evaluated at
the ``at`` points (``u_exact``, ``grad_u_exact``, ``f``, ...) and the mesh quantities of
``norms`` (L2/H1 errors, h) join the case's namespace, so references and metrics use them.
"""
from __future__ import annotations

import io
import logging
import os
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

import numpy as np
from omegaconf import DictConfig, OmegaConf

from harness.core.atomic import atomic_write_text
from harness.core.context import HarnessInputError, RunContext
from harness.core.inputs import find_input
from harness.generic import mesh as meshes
from harness.generic.manufactured import LANGUAGES, Manufactured, ManufacturedError
from harness.generic.model import substitute
from harness.metrics import mesh_norms

log = logging.getLogger(__name__)
WHERE = "case.params.manufactured"
NORMS = ("L2", "H1", "L2_exact", "H1_exact", "relative_L2", "relative_H1", "h_max", "h_mean")
SUFFIX = {"c": ".h", "fortran": ".f90", "python": ".py"}
EXACT_WARNING = ("the discrete space represents the manufactured solution exactly ({why}): the error is "
                 "round-off at every level and no order can be measured; choose a non-polynomial solution "
                 "(e.g. sin, exp)")


def derive(spec: DictConfig) -> Manufactured:
    """The derived expressions of ``spec``; a bad declaration is HarnessInputError (exit 2)."""
    plain = OmegaConf.to_container(spec, resolve=True)
    try:
        return Manufactured.from_spec(plain)
    except ManufacturedError as exc:
        raise HarnessInputError(f"{WHERE}.{exc}") from None
    except (TypeError, ValueError, ArithmeticError, RecursionError, AttributeError) as exc:  # sympy's own refusals
        raise HarnessInputError(f"{WHERE}: sympy cannot derive the declaration: {type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else ''}") from None


def derived_names(spec: DictConfig) -> List[str]:
    """Names the ``at`` evaluation defines, without deriving (for the static check)."""
    names: List[str] = []
    for f in spec.fields:
        names += [f"{f}_exact", f"grad_{f}_exact"]
    names += list(spec.sources) + list(spec.fluxes)
    for b in spec.boundaries:
        names += [f"{f}_{b}" for f in spec.fields] + [f"{q}_{b}" for q in spec.fluxes]
    return names


def declared_names(conf: DictConfig) -> Set[str]:
    """Every name a run's ``define`` adds to the namespace."""
    spec = conf.get("manufactured")
    if spec is None:
        return set()
    out = set(spec.norms)
    if spec.at:
        out |= set(derived_names(spec))
    return out


def setup(conf: DictConfig, ctx: RunContext, info: Dict[str, Any]) -> Optional[Manufactured]:
    """Derive, then write code and values files (before ``prepare``)."""
    spec = conf.get("manufactured")
    if spec is None:
        return None
    with ctx.stage("manufactured"):
        mms = derive(spec)
        record: Dict[str, Any] = {"expressions": mms.as_text(), "parameters": mms.parameters,
                                  "expressions_sha256": mms.sha256(), "files": {}}
        _check_at(spec, mms)
        _code(spec, mms, ctx, record)
        for out_name, vspec in spec["values"].items():
            _values(f"{WHERE}.values.{out_name}", str(out_name), vspec, mms, ctx, record)
        for fname, degree in mms.polynomial_degree.items():
            record.setdefault("polynomial_degree", {})[fname] = degree
        record["timings"] = dict(mms.timings)
        info["manufactured"] = record
        ctx.timings["manufactured_derive"] = mms.timings.get("derive_s", 0.0)
    return mms


def _check_at(spec: DictConfig, mms: Manufactured) -> None:
    args = [str(a) for a in mms.arguments()]
    if spec.at and sorted(spec.at) != sorted(args):
        raise HarnessInputError(f"{WHERE}.at: give one expression per argument ({', '.join(args)}), "
                                f"got {', '.join(spec.at) or 'none'}")


def _names_to_emit(where: str, names: List[str], mms: Manufactured, default: List[str]) -> List[str]:
    chosen = list(names) or default
    for n in chosen:
        if n not in mms.expressions:
            raise HarnessInputError(f"{where}: {n!r} is not a derived name (derived: {', '.join(mms.expressions)})")
    return chosen


def _code(spec: DictConfig, mms: Manufactured, ctx: RunContext, record: Dict[str, Any]) -> None:
    code = spec.code
    if not code.languages:
        return
    prefix = str(code.prefix)
    if not prefix.isidentifier():
        raise HarnessInputError(f"{WHERE}.code.prefix: {prefix!r} must be a valid identifier")
    names = _names_to_emit(f"{WHERE}.code.names", list(code.names), mms,
                           [f"{f}_exact" for f in mms.fields] + mms.sources)
    for lang in code.languages:
        if lang not in LANGUAGES:
            raise HarnessInputError(f"{WHERE}.code.languages: unknown language {lang!r} "
                                    f"(known: {', '.join(LANGUAGES)})")
    start = time.perf_counter()
    for lang in code.languages:
        path = ctx.run_dir / f"{prefix}{SUFFIX[lang]}"
        atomic_write_text(path, mms.code(lang, names, prefix))
        ctx.add_output(path)
        record["files"][lang] = path.name
    record["code_s"] = time.perf_counter() - start


def _point_columns(where: str, path: Path, mms: Manufactured) -> Dict[str, np.ndarray]:
    from harness.generic import readers

    coords = [str(c) for c in mms.space.coords]
    if path.suffix.lower() in meshes.SUFFIXES:
        pts = meshes.read_mesh(where, path).points
        return {c: pts[:, i] for i, c in enumerate(coords)}
    return {c: readers.read_file(where, "csv", path, c) for c in coords}


def _values(where: str, out_name: str, vspec: DictConfig, mms: Manufactured, ctx: RunContext,
            record: Dict[str, Any]) -> None:
    src = find_input(str(substitute(str(vspec.points), ctx.run_dir)), f"{where}.points")
    names = _names_to_emit(f"{where}.names", list(vspec.names), mms, list(mms.sources))
    cols = _point_columns(f"{where}.points", src, mms)
    ctx.add_input(src)
    args = [cols[str(c)] for c in mms.space.coords]
    if mms.time is not None:
        if vspec.t is None:
            raise HarnessInputError(f"{where}.t: the solution depends on {mms.time}: give the time")
        args.append(np.full_like(args[0], float(vspec.t)))
    values = {n: mms.function(n)(*args) for n in names}
    out = ctx.run_dir / out_name
    if out.suffix.lower() == ".csv":
        table = dict(cols)
        for n, v in values.items():
            flat = v.reshape(len(args[0]), -1)
            table.update({n: flat[:, 0]} if flat.shape[1] == 1 and v.ndim == 1 else
                         {f"{n}_{i}": flat[:, i] for i in range(flat.shape[1])})
        buf = io.StringIO()
        np.savetxt(buf, np.column_stack(list(table.values())), delimiter=",", header=",".join(table),
                   comments="", fmt="%.17g")
        atomic_write_text(out, buf.getvalue())
    elif out.suffix.lower() in meshes.SUFFIXES:
        import meshio

        data = meshes.read_mesh(f"{where}.points", src)
        m = meshio.Mesh(data.points, [(t, c) for t, c in data.cells.items()],
                        point_data={**data.point_data, **values})
        tmp = out.with_name(f".{out.stem}.tmp{out.suffix}")
        m.write(str(tmp))
        os.replace(tmp, out)
    else:
        raise HarnessInputError(f"{where}: write values to a .csv or a mesh file (.vtu, .xdmf, .msh), "
                                f"not {out.name!r}")
    ctx.add_output(out)
    record["files"][out_name] = {"points": str(src), "names": names}


def define(conf: DictConfig, ctx: RunContext, ns: Any, mms: Optional[Manufactured], info: Dict[str, Any]) -> None:
    """Add the ``at`` values and the ``norms`` to the namespace ``ns`` (after the outputs)."""
    spec = conf.get("manufactured")
    if spec is None or mms is None:
        return
    with ctx.stage("manufactured_norms"):
        if spec.at:
            args = [ns.eval(f"{WHERE}.at.{a}", spec.at[str(a)]) for a in mms.arguments()]
            for name in derived_names(spec):
                value = mms.function(name)(*args)
                ns.define(f"{WHERE}.at", name, value, None, "reference")
        record = info.setdefault("manufactured", {})
        for name, nspec in spec.norms.items():
            value = _norm(f"{WHERE}.norms.{name}", nspec, spec, mms, ctx, ns, record)
            ns.define(f"{WHERE}.norms.{name}", name, np.float64(value), None, "reference")
            record.setdefault("norms", {})[name] = value
        record["timings"] = dict(mms.timings)  # derivation and lambdify (compile) times, s


def _norm(where: str, nspec: DictConfig, spec: DictConfig, mms: Manufactured, ctx: RunContext, ns: Any,
          record: Dict[str, Any]) -> float:
    if nspec.norm not in NORMS:
        raise HarnessInputError(f"{where}.norm: unknown norm {nspec.norm!r} (known: {', '.join(NORMS)})")
    path = Path(substitute(str(nspec.mesh), ctx.run_dir))
    path = path if path.is_absolute() else ctx.run_dir / path
    data = meshes.read_mesh(where, path, nspec.step)
    if path.resolve() not in ctx.outputs:
        ctx.add_output(path)
    dim = mms.space.dim
    if nspec.norm in ("h_max", "h_mean"):
        try:
            return mesh_norms.mesh_size(data.points[:, :dim], data.cells)[nspec.norm]
        except ValueError as exc:
            raise HarnessInputError(f"{where}: {path.name}: {exc}") from None
    exact = nspec.exact or (mms.fields[0] if len(mms.fields) == 1 else None)
    if exact not in mms.fields:
        raise HarnessInputError(f"{where}.exact: name the manufactured field ({', '.join(mms.fields)})")
    if not nspec.field or nspec.field not in data.point_data:
        raise HarnessInputError(f"{where}.field: {path.name} has no point data {nspec.field!r} "
                                f"(point data: {', '.join(data.point_data) or 'none'})")
    expr_shape = np.shape(mms.function(f"{exact}_exact")(*([np.zeros(1)] * len(mms.arguments()))))[1:]
    values = data.point_data[nspec.field]
    n_comp = int(np.prod(expr_shape)) if expr_shape else 1
    values = values.reshape(len(values), -1)[:, :n_comp]
    if values.shape[1] != n_comp:
        raise HarnessInputError(f"{where}.field: {nspec.field!r} has {values.shape[1]} components, "
                                f"the field {exact} {n_comp}")
    t_value = None
    if mms.time is not None:
        if nspec.t is None:
            raise HarnessInputError(f"{where}.t: the solution depends on {mms.time}: give the time (an expression)")
        t_value = float(ns.eval(f"{where}.t", nspec.t))
    u = mms.function(f"{exact}_exact")
    g = mms.function(f"grad_{exact}_exact")

    def call(fn):
        def at(X):
            args = [X[:, i] for i in range(dim)] + ([np.full(len(X), t_value)] if t_value is not None else [])
            return fn(*args)
        return at

    want_grad = nspec.norm in ("H1", "H1_exact", "relative_H1")
    try:
        r = mesh_norms.error_norms(data.points[:, :dim], data.cells, values, call(u),
                                   call(g) if want_grad else None, nspec.quadrature_degree,
                                   axisymmetric=mms.space.system == "axisymmetric")
    except ValueError as exc:
        raise HarnessInputError(f"{where}: {path.name}: {exc}") from None
    _guard_exact(where, exact, data, mms, r, record)
    key = nspec.norm.replace("relative_", "")
    value = r[key]
    if nspec.norm.startswith("relative_"):
        value = value / r[f"{key}_exact"] if r[f"{key}_exact"] > 0 else float("nan")
    return float(value)


def _guard_exact(where: str, exact: str, data: meshes.MeshData, mms: Manufactured, r: Dict[str, float],
                 record: Dict[str, Any]) -> None:
    """Warn when the discrete space holds the solution exactly: no order can be measured."""
    degree = mms.polynomial_degree.get(exact)
    elem_degree = min((mesh_norms.ELEMENTS[t].degree for t in data.cells if t in mesh_norms.ELEMENTS), default=None)
    why = None
    if degree is not None and elem_degree is not None and degree <= elem_degree:
        why = f"{exact} is a polynomial of degree {degree} and the cells are of degree {elem_degree}"
    elif r.get("L2_exact", 0.0) > 0 and r["L2"] <= 1e3 * np.finfo(float).eps * r["L2_exact"]:
        why = f"the L2 error {r['L2']:.3g} is at round-off of the norm {r['L2_exact']:.3g}"
    if why:
        message = EXACT_WARNING.format(why=why)
        log.warning("%s: %s", where, message)
        notes = record.setdefault("warnings", [])
        if message not in notes:
            notes.append(message)
