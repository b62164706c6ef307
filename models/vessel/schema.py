"""Validation of vessel data files against the spec ``schemas/vessel-v1.yaml``.

The spec lists every field with its type and rules; :func:`validate` walks a parsed
data file against it and raises :class:`VesselDataError` naming the field path and the
rule that failed. Numbers come back as float64 numpy arrays.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any, Dict, Mapping

import numpy as np
import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "vessel-v1.yaml"
ANGLE_TOL = 1.0e-9  # rad, tolerance of the table end points 0 and pi
MAX_COND = 1.0e12  # largest accepted condition number of M + A


class VesselDataError(ValueError):
    """Invalid vessel data: the message names the file, the field and the rule."""


@functools.lru_cache(maxsize=None)
def load_spec(path: str = str(SCHEMA_PATH)) -> Dict[str, Any]:
    with open(path, "r", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _fail(where: str, field: str, rule: str) -> None:
    raise VesselDataError(f"{where}: {field}: {rule}")


def _numbers_only(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_numbers_only(v) for v in value)
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _finite_array(value: Any, where: str, field: str, shape: tuple | None = None) -> np.ndarray:
    if not _numbers_only(value if not isinstance(value, np.ndarray) else value.tolist()):
        _fail(where, field, f"must hold numbers only (YAML floats need a dot or an exponent sign, "
                            f"e.g. 5.2e+7), got {value!r}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        need = f" with shape {shape}" if shape else ""
        _fail(where, field, f"must be a rectangular array of numbers{need}, got {value!r}")
    if shape is not None and arr.shape != shape:
        _fail(where, field, f"must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        _fail(where, field, "must be finite (no NaN or inf)")
    return arr


def _apply_rules(arr: np.ndarray, rules, where: str, field: str) -> None:
    for rule in rules or ():
        if rule == "positive" and not np.all(arr > 0):
            _fail(where, field, f"must be > 0, got {arr.tolist()}")
        elif rule == "nonnegative" and not np.all(arr >= 0):
            _fail(where, field, f"must be >= 0, got {arr.tolist()}")
        elif rule == "unit_interval" and not np.all((arr >= 0) & (arr < 1)):
            _fail(where, field, f"must be in [0, 1), got {arr.tolist()}")
        elif rule == "symmetric":
            scale = max(float(np.max(np.abs(arr))), 1.0)
            if np.max(np.abs(arr - arr.T)) > 1e-12 * scale:
                _fail(where, field, "must be symmetric (|A - A^T| <= 1e-12 max|A|)")


def _angle_table(value: Any, spec: Mapping, where: str, field: str) -> Dict[str, np.ndarray]:
    if not isinstance(value, Mapping):
        _fail(where, field, "must be a mapping of an angle list and coefficient columns")
    key = spec["angle_key"]
    if key not in value:
        _fail(where, f"{field}.{key}", "is missing")
    ang = _finite_array(value[key], where, f"{field}.{key}")
    if ang.ndim != 1 or ang.size < 2:
        _fail(where, f"{field}.{key}", "must be a list of at least 2 angles (rad)")
    if np.any(np.diff(ang) <= 0):
        _fail(where, f"{field}.{key}", "angles must be strictly increasing (sorted, no duplicates)")
    if abs(ang[0]) > ANGLE_TOL or abs(ang[-1] - math.pi) > ANGLE_TOL:
        _fail(where, f"{field}.{key}", f"angles must cover [0, pi] (first 0, last pi), got [{ang[0]}, {ang[-1]}]")
    out = {key: ang}
    unknown = sorted(set(value) - {key} - set(spec["columns"]))
    if unknown:
        _fail(where, f"{field}.{unknown[0]}", "is not a field of the table")
    for col, width in spec["columns"].items():
        if col not in value:
            _fail(where, f"{field}.{col}", "is missing")
        shape = (ang.size,) if width == 1 else (ang.size, width)
        arr = np.asarray(value[col], dtype=object)
        if arr.shape[:1] != (ang.size,):
            _fail(where, f"{field}.{col}", f"needs one value per angle ({ang.size}), got {arr.shape[0] if arr.ndim else 0}")
        out[col] = _finite_array(value[col], where, f"{field}.{col}", shape)
    return out


def _check(value: Any, spec: Mapping, where: str, field: str) -> Any:
    typ = spec["type"]
    if typ == "str":
        if not isinstance(value, str) or not value:
            _fail(where, field, f"must be a non-empty string, got {value!r}")
        if "equals" in spec and value != spec["equals"]:
            _fail(where, field, f"must be {spec['equals']!r}, got {value!r}")
        return value
    if typ == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(where, field, f"must be an integer, got {value!r}")
        return int(value)
    if typ == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _fail(where, field, f"must be a number, got {value!r}")
        arr = _finite_array(value, where, field, ())
        _apply_rules(arr, spec.get("rules"), where, field)
        return float(arr)
    if typ in ("vector3", "vector6", "matrix6"):
        shape = {"vector3": (3,), "vector6": (6,), "matrix6": (6, 6)}[typ]
        arr = _finite_array(value, where, field, shape)
        _apply_rules(arr, spec.get("rules"), where, field)
        return arr
    if typ == "angle_table":
        return _angle_table(value, spec, where, field)
    if typ == "object":
        if not isinstance(value, Mapping):
            _fail(where, field, "must be a mapping")
        return _check_fields(value, spec["fields"], where, field + ".")
    if typ == "list":
        if not isinstance(value, list):
            _fail(where, field, "must be a list")
        if len(value) < spec.get("min_items", 0):
            _fail(where, field, f"needs at least {spec['min_items']} items")
        return [_check_fields(item, spec["fields"], where, f"{field}[{i}].") if isinstance(item, Mapping)
                else _fail(where, f"{field}[{i}]", "must be a mapping") for i, item in enumerate(value)]
    raise ValueError(f"schema: unknown type {typ!r} of {field}")


def _check_fields(data: Mapping, fields: Mapping, where: str, prefix: str = "") -> Dict[str, Any]:
    unknown = sorted(set(data) - set(fields))
    if unknown:
        _fail(where, prefix + unknown[0], "is not a field of vessel-v1")
    out: Dict[str, Any] = {}
    for name, spec in fields.items():
        if name not in data or data[name] is None:
            if spec.get("required", True):
                _fail(where, prefix + name, "is missing")
            continue
        out[name] = _check(data[name], spec, where, prefix + name)
    return out


def check_total_mass(total: np.ndarray, where: str) -> None:
    """Reject a singular, non-symmetric or non-positive-definite M + A."""
    field = "mass_matrix + added_mass"
    scale = float(np.max(np.abs(total)))
    if np.max(np.abs(total - total.T)) > 1e-12 * max(scale, 1.0):
        _fail(where, field, "must be symmetric")
    eig = np.linalg.eigvalsh(total)
    if eig[0] <= 0.0:
        _fail(where, field, f"must be positive definite, smallest eigenvalue {eig[0]:.6g}")
    if eig[-1] / eig[0] > MAX_COND:
        _fail(where, field, f"is (near) singular: condition number {eig[-1] / eig[0]:.3g} > {MAX_COND:g}")


def validate(data: Any, where: str = "<vessel data>") -> Dict[str, Any]:
    """Validate parsed vessel data; return it with numbers as float64 arrays.

    A bad field raises :class:`VesselDataError` naming the source, the field and the rule.

    >>> try:
    ...     validate({"schema": "vessel-v1"}, "my_vessel.yaml")
    ... except VesselDataError as exc:
    ...     print(str(exc).split(":")[0])
    my_vessel.yaml
    """
    if not isinstance(data, Mapping):
        _fail(where, "<root>", "must be a mapping")
    out = _check_fields(data, load_spec()["fields"], where)
    check_total_mass(out["mass_matrix"] + out["added_mass"], where)
    for i, rud in enumerate(out.get("rudders", [])):
        k = rud.get("propeller", -1)
        if not -1 <= k < len(out.get("propellers", [])):
            _fail(where, f"rudders[{i}].propeller", f"must be -1 or a propeller index < {len(out['propellers'])}, got {k}")
    return out
