"""Generic validator of HDF5 files against a YAML spec (``schemas/*.yaml``).

Nothing here knows a field of a particular contract: every check is a rule named in the spec
(attribute ``type`` / ``equals`` / ``one_of`` / ``pattern`` / ``format``, dataset ``shape`` /
``dtype`` / ``unit`` / ``storage`` / ``values`` / ``derived`` / ``sha256_equals``, metadata keys,
version acceptance). Every violation is reported as ``(path, rule, found, expected)``.

Paths: ``@name`` is a root attribute, ``@metadata_json.KEY`` a key of the metadata document,
``group/dataset`` a dataset and ``group/dataset@attr`` one of its attributes.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import h5py
import numpy as np

from .relations import RELATIONS
from .spec import Spec, load_spec, parse_dim, parse_semver, SPEC_FILES

log = logging.getLogger(__name__)

BLOCK_BYTES = 64 * 2**20  # rows of large datasets are scanned in blocks of about this size
# upper bound [bytes] of one dataset the validator reads whole (whole-array rules, derived inputs,
# checksums); larger datasets are a "size" violation found from the shape before anything is read
MAX_READ_BYTES = int(os.environ.get("HARNESS_MAX_READ_BYTES", str(2**31)))
H5_ERRORS = (KeyError, OSError, RuntimeError, ValueError, TypeError, AttributeError, IndexError)


@dataclass(frozen=True)
class Violation:
    """One broken rule: where (``path``), which rule, the value found and what was expected."""

    path: str
    rule: str
    found: str
    expected: str = ""

    def __str__(self) -> str:
        tail = f"; expected {self.expected}" if self.expected else ""
        return f"{self.path}: {self.rule}: found {self.found}{tail}"


@dataclass
class ValidationReport:
    """Outcome of :func:`validate_file`. ``ok`` is True when there is no violation."""

    file: str
    schema: str = ""
    version: str = ""
    mode: str = "production"
    dims: Dict[str, int] = field(default_factory=dict)
    violations: List[Violation] = field(default_factory=list)
    warnings: List[Violation] = field(default_factory=list)
    unknown: List[str] = field(default_factory=list)  # datasets not in the spec (kept by readers)

    @property
    def ok(self) -> bool:
        return not self.violations

    def message(self) -> str:
        """One line: the file, the schema and every violation."""
        what = self.schema or "HDF5 contract"
        body = " | ".join(str(v) for v in self.violations)
        return f"{self.file}: invalid {what} file: {body}"


class ContractError(ValueError):
    """A file that breaks its contract; ``report`` holds every violation."""

    def __init__(self, report: ValidationReport):
        super().__init__(report.message())
        self.report = report


class UnreadableFileError(OSError):
    """The file is not an HDF5 file, or HDF5 cannot read it; ``reason`` is the one-line cause."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason or message


def _fmt(v: Any) -> str:
    if isinstance(v, (np.generic,)):
        v = v.item()
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    return repr(v)


def _attr_value(raw: Any) -> Any:
    """A Python scalar for scalar attributes; arrays stay arrays (a violation where a scalar is due)."""
    if isinstance(raw, np.ndarray) and raw.ndim == 0:
        raw = raw[()]
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    if isinstance(raw, np.generic):
        return raw.item()
    return raw


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind in ("float", "number"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list)
    raise ValueError(f"spec: unknown type {kind!r}")


def _type_name(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"array of shape {tuple(value.shape)}"
    return {bool: "bool", str: "string", int: "int", float: "float", list: "list", dict: "object",
            type(None): "null"}.get(
        type(value), type(value).__name__
    )


def check_value(path: str, value: Any, rule: Mapping[str, Any], out: List[Violation]) -> None:
    """Scalar rules of an attribute or metadata key: type, equals, one_of, pattern, bounds, format."""
    kind = rule.get("type")
    if isinstance(value, (np.ndarray, list, dict)) and kind != "list":
        out.append(Violation(path, "type", _type_name(value), kind or "a scalar"))
        return
    if kind and not _type_ok(value, kind):
        out.append(Violation(path, "type", f"{_type_name(value)} {_fmt(value)}", kind))
        return
    if "equals" in rule and value != rule["equals"]:
        out.append(Violation(path, "equals", _fmt(value), _fmt(rule["equals"])))
    if "one_of" in rule and value not in rule["one_of"]:
        out.append(Violation(path, "one_of", _fmt(value), f"one of {list(rule['one_of'])}"))
    if "pattern" in rule and not re.match(str(rule["pattern"]), str(value)):
        out.append(Violation(path, "pattern", _fmt(value), f"match {rule['pattern']}"))
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if "min_exclusive" in rule and not (numeric and value > rule["min_exclusive"]):
        out.append(Violation(path, "min_exclusive", _fmt(value), f"> {rule['min_exclusive']}"))
    if "min" in rule and not (numeric and value >= rule["min"]):
        out.append(Violation(path, "min", _fmt(value), f">= {rule['min']}"))
    fmt = rule.get("format")
    if fmt == "semver" and parse_semver(value) is None:
        out.append(Violation(path, "format", _fmt(value), "semantic version MAJOR.MINOR.PATCH"))
    if fmt == "json":
        try:
            doc = json.loads(value)
        except (TypeError, ValueError, RecursionError) as exc:
            out.append(Violation(path, "format", f"invalid JSON ({exc.__class__.__name__})", "JSON object"))
        else:
            if not isinstance(doc, dict):
                out.append(Violation(path, "format", f"JSON {_type_name(doc)} {_fmt(doc)[:60]}", "JSON object"))


# ---------------------------------------------------------------- element rules of datasets


def _first_index(mask: np.ndarray, offset: int) -> Tuple[int, ...]:
    idx = np.unravel_index(int(np.flatnonzero(mask.ravel())[0]), mask.shape)
    return (idx[0] + offset,) + tuple(int(i) for i in idx[1:])


def _idx_str(idx: Tuple[int, ...]) -> str:
    return str(tuple(int(i) for i in idx)) if len(idx) > 1 else str(int(idx[0]))


def _scan_block_rules(rules: List[Any], block: np.ndarray, start: int, state: Dict[str, Any]) -> None:
    """Accumulate the first offending element of blockwise rules (finite, signs, unit rows)."""
    for r in rules:
        name, opts = (r, {}) if isinstance(r, str) else next(iter(r.items()))
        if name in state.get("_done", set()):
            continue
        if name == "finite":
            bad = ~np.isfinite(block)
            n = int(bad.sum())
            if n:
                st = state.setdefault(name, {"n": 0})
                if "idx" not in st:
                    st["idx"] = _first_index(bad, start)
                    st["val"] = block[tuple([st["idx"][0] - start] + list(st["idx"][1:]))]
                st["n"] += n
        elif name in ("nonnegative", "positive"):
            bad = (block < 0) if name == "nonnegative" else ~(block > 0)
            if bad.any() and name not in state:
                idx = _first_index(bad, start)
                state[name] = {"idx": idx, "val": block[tuple([idx[0] - start] + list(idx[1:]))]}
        elif name == "less_than_dim":  # an index into a dimension: 0 <= value < N
            n = (opts or {}).get("n")
            bad = ~(block < n) if n is not None else np.zeros(block.shape, bool)
            if bad.any() and name not in state:
                idx = _first_index(bad, start)
                state[name] = {"idx": idx, "val": block[tuple([idx[0] - start] + list(idx[1:]))],
                               "dim": opts["dim"], "n": n}
        elif name == "unit_rows":
            atol = float((opts or {}).get("atol", 1e-9))
            dev = np.abs(np.sqrt(np.einsum("...k,...k->...", block, block)) - 1.0)
            bad = ~(dev <= atol)
            if bad.any() and name not in state:
                idx = _first_index(bad, start)
                state[name] = {"idx": idx, "val": float(dev[tuple([idx[0] - start] + list(idx[1:]))]), "atol": atol}


def _block_rule_violations(path: str, state: Dict[str, Any], out: List[Violation]) -> None:
    if "finite" in state:
        st = state["finite"]
        out.append(Violation(path, "finite", f"{st['n']} non-finite value(s), first {_fmt(st['val'])} at index {_idx_str(st['idx'])}", "finite values"))
    for name, expected in (("nonnegative", ">= 0"), ("positive", "> 0")):
        if name in state:
            st = state[name]
            out.append(Violation(path, name, f"{_fmt(st['val'])} at index {_idx_str(st['idx'])}", expected))
    if "less_than_dim" in state:
        st = state["less_than_dim"]
        out.append(Violation(path, "less_than_dim", f"{_fmt(st['val'])} at index {_idx_str(st['idx'])}",
                             f"< {st['dim']} = {st['n']} (an index into {st['dim']})"))
    if "unit_rows" in state:
        st = state["unit_rows"]
        out.append(Violation(path, "unit_rows", f"| |n| - 1 | = {st['val']:.3g} at row {_idx_str(st['idx'])}", f"<= {st['atol']:g}"))


def _whole_array_rules(path: str, rules: List[Any], arr: np.ndarray, out: List[Violation]) -> None:
    for r in rules:
        name = r if isinstance(r, str) else next(iter(r))
        if name == "strictly_increasing" and arr.ndim == 1 and arr.size > 1:
            bad = ~(np.diff(arr) > 0)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                out.append(Violation(path, name, f"{_fmt(arr[i + 1])} after {_fmt(arr[i])} at index {i + 1}", "strictly increasing values"))
        elif name == "unique":
            vals, counts = np.unique(arr, return_counts=True)
            if (counts > 1).any():
                j = int(np.flatnonzero(counts > 1)[0])
                out.append(Violation(path, name, f"value {_fmt(vals[j])} {int(counts[j])} times ({int((counts > 1).sum())} duplicated value(s))", "unique values"))


_WHOLE = {"strictly_increasing", "unique"}


def _rows_per_block(dset: h5py.Dataset) -> int:
    row = max(1, int(np.prod(dset.shape[1:], dtype=np.int64)) * dset.dtype.itemsize)
    rows = max(1, BLOCK_BYTES // row)
    if dset.chunks:
        c = dset.chunks[0]
        rows = max(c, (rows // c) * c)
    return int(rows)


# ---------------------------------------------------------------- the validator


class _Validator:
    def __init__(self, f: h5py.File, spec: Spec, report: ValidationReport, mode: Optional[str],
                 skip_scan: Iterable[str]):
        self.f, self.spec, self.r, self.forced_mode = f, spec, report, mode
        self.bad: set[str] = set()  # datasets with a violation (derived checks on them are skipped)
        self.skipped: set[str] = set(skip_scan)  # datasets whose elements are not re-read
        self.attrs: Dict[str, Any] = {}
        self.bad_attrs: set[str] = set()  # root attributes with a violation (relations using them are skipped)
        self.bad_dims = False  # a dimension below its minimum: no relation is recomputed

    def v(self, path: str, rule: str, found: str, expected: str = "") -> None:
        self.r.violations.append(Violation(path, rule, found, expected))

    def run(self) -> None:
        version = self.check_version()
        if version is None:
            return
        self.check_attributes(version)
        self.check_metadata()
        for g in self.spec.groups:
            if g not in self.f:
                self.v(g, "required", "missing", "group")
            elif not isinstance(self.f[g], h5py.Group):
                self.v(g, "kind", type(self.f[g]).__name__, "group")
        for name, item in self.spec.datasets.items():
            self.check_dataset(name, item, version)
        self.check_dimensions()
        for name, item in self.spec.datasets.items():
            if self.bad_dims:
                break
            if "derived" in item and name in self.f and name not in self.bad:
                rules = item["derived"] if isinstance(item["derived"], list) else [item["derived"]]
                for rule in rules:  # a dataset may be tied to its inputs by several relations
                    unless, when = rule.get("unless"), rule.get("when")
                    if (unless and unless in self.f) or (when and when not in self.f):
                        continue  # the rule that applies depends on an optional dataset (e.g. faces/*)
                    if name not in self.bad:
                        self.check_derived(name, rule)
        self.r.unknown = self.unknown_datasets()

    def check_version(self) -> Optional[Tuple[int, int, int]]:
        raw = self.f.attrs.get("schema_version")
        if raw is None:
            self.v("@schema_version", "required", "missing", "attribute")
            return None
        text = _attr_value(raw)
        self.r.version = str(text)
        ver = parse_semver(text)
        if ver is None:
            self.v("@schema_version", "format", _fmt(text), "semantic version MAJOR.MINOR.PATCH")
            return None
        if ver[0] not in self.spec.accept_major:
            majors = ", ".join(f"{m}.x" for m in self.spec.accept_major)
            self.v("@schema_version", "major_version", _fmt(text),
                   f"major version {' or '.join(str(m) for m in self.spec.accept_major)} ({majors}); "
                   f"major version {ver[0]} needs an explicit migration")
            return None
        return ver

    def check_attributes(self, version: Tuple[int, int, int]) -> None:
        for name, rule in self.spec.attributes.items():
            path = f"@{name}"
            if name not in self.f.attrs:
                if self.spec.applies(rule, version):
                    self.v(path, "required", "missing", "attribute")
                continue
            value = _attr_value(self.f.attrs[name])
            self.attrs[name] = value
            n0 = len(self.r.violations)
            check_value(path, value, rule, self.r.violations)
            if len(self.r.violations) > n0:
                self.bad_attrs.add(name)

    def check_metadata(self) -> None:
        meta_spec = self.spec.metadata
        text = self.attrs.get("metadata_json")
        try:
            meta = json.loads(text) if isinstance(text, str) else None
        except (ValueError, RecursionError):
            meta = None
        if not isinstance(meta, dict):
            self.r.mode = self.forced_mode or "production"
            return
        mode = self.forced_mode or meta.get(meta_spec.get("mode_key", "mode"), "production")
        self.r.mode = mode if mode in ("production", "debug") else "production"
        keys = meta_spec.get("keys", {})
        for key in meta_spec.get("required_in_production", []):
            if key not in meta or meta[key] is None:
                item = Violation(f"@metadata_json.{key}", "required_in_production", "missing", "key present")
                (self.r.violations if self.r.mode == "production" else self.r.warnings).append(item)
        for key, rule in keys.items():
            if key in meta and meta[key] is not None:
                check_value(f"@metadata_json.{key}", meta[key], rule, self.r.violations)
        self.meta = meta

    def check_dataset(self, name: str, item: Mapping[str, Any], version: Tuple[int, int, int]) -> None:
        required = item.get("required", "always")
        if name not in self.f:
            if not self.spec.applies(item, version) or required == "optional":
                return
            miss = Violation(name, "required", "missing", "dataset")
            if required == "production" and self.r.mode != "production":
                self.r.warnings.append(miss)
            else:
                self.r.violations.append(miss)
            self.bad.add(name)
            return
        d = self.f[name]
        if not isinstance(d, h5py.Dataset):
            self.v(name, "kind", type(d).__name__, "dataset")
            self.bad.add(name)
            return
        n0 = len(self.r.violations)
        self.check_dtype(name, d, item)
        self.check_shape(name, d, item)
        self.check_unit(name, d, item)
        self.check_storage(name, d, item)
        for aname, rule in item.get("attributes", {}).items():
            if aname not in d.attrs:
                self.v(f"{name}@{aname}", "required", "missing", "attribute")
            else:
                check_value(f"{name}@{aname}", _attr_value(d.attrs[aname]), rule, self.r.violations)
        if len(self.r.violations) == n0:
            self.check_stored(name, d)
        if len(self.r.violations) == n0:
            self.check_values(name, d, item.get("values", []))
        if "sha256_equals" in item and len(self.r.violations) == n0:
            self.check_sha256(name, d, item["sha256_equals"])
        if len(self.r.violations) > n0:
            self.bad.add(name)

    def check_dtype(self, name: str, d: h5py.Dataset, item: Mapping[str, Any]) -> None:
        want = item.get("dtype")
        if want is None:
            return
        if want == "string":
            ok = h5py.check_string_dtype(d.dtype) is not None
        else:
            ok = d.dtype == np.dtype(want)
        if not ok:
            self.v(name, "dtype", str(d.dtype), str(want))

    def check_shape(self, name: str, d: h5py.Dataset, item: Mapping[str, Any]) -> None:
        shape = item.get("shape")
        if shape is None:
            return
        if len(d.shape) != len(shape):
            self.v(name, "shape", str(tuple(d.shape)), f"{len(shape)}-D ({', '.join(map(str, shape))})")
            return
        dims = self.r.dims
        expected: List[Optional[int]] = []
        for n, expr in zip(d.shape, shape):
            sym, off = parse_dim(expr)
            if sym is None:
                expected.append(off)
            else:
                dims.setdefault(sym, int(n) - off)
                expected.append(dims[sym] + off)
        if tuple(expected) != tuple(d.shape):
            sym_text = ", ".join(map(str, shape))
            self.v(name, "shape", str(tuple(int(n) for n in d.shape)), f"({sym_text}) = {tuple(expected)}")

    def check_stored(self, name: str, d: h5py.Dataset) -> None:
        """A dataset with elements must have data stored (a declared, never-written one has none)."""
        if d.size and d.id.get_storage_size() == 0 and d.dtype.kind != "O":
            self.v(name, "stored", f"no data stored for shape {tuple(d.shape)}", "written data")

    def too_large(self, name: str, d: h5py.Dataset) -> bool:
        """True (and a "size" violation) if reading ``d`` whole would exceed MAX_READ_BYTES."""
        nbytes = int(np.prod(d.shape, dtype=np.float64) * d.dtype.itemsize)
        if nbytes > MAX_READ_BYTES:
            self.v(name, "size", f"{nbytes} bytes for shape {tuple(int(n) for n in d.shape)}",
                   f"<= {MAX_READ_BYTES} bytes read whole (HARNESS_MAX_READ_BYTES)")
            self.bad.add(name)
            return True
        return False

    def check_unit(self, name: str, d: h5py.Dataset, item: Mapping[str, Any]) -> None:
        if "unit" not in item:
            return
        unit = _attr_value(d.attrs.get("unit"))
        if unit is None:
            self.v(f"{name}@unit", "required", "missing", _fmt(item["unit"]))
        elif not isinstance(unit, str):
            self.v(f"{name}@unit", "type", f"{_type_name(unit)} {_fmt(unit)[:60]}", f"string {_fmt(item['unit'])}")
        elif unit != item["unit"]:
            self.v(f"{name}@unit", "unit", _fmt(unit), _fmt(item["unit"]))

    def check_storage(self, name: str, d: h5py.Dataset, item: Mapping[str, Any]) -> None:
        cls = item.get("storage")
        if cls is None:
            return
        rule = self.spec.storage[cls]
        found = {"chunked": d.chunks is not None, "compression": d.compression,
                 "shuffle": bool(d.shuffle), "fletcher32": bool(d.fletcher32)}
        for key, want in rule.items():
            if found.get(key) != want and not (key == "compression" and want is None):
                self.v(name, f"storage.{key}", _fmt(found.get(key)), f"{_fmt(want)} (storage class {cls})")

    def _read_failed(self, name: str, d: h5py.Dataset, exc: Exception) -> None:
        log.info("%s: %s: read failed: %s", self.r.file, name, exc)
        if d.fletcher32:
            self.v(name, "checksum", "stored data fail the Fletcher-32/filter check on read", "intact chunks")
        else:
            self.v(name, "readable", "stored data cannot be read", "readable data")

    def check_values(self, name: str, d: h5py.Dataset, rules: List[Any]) -> None:
        if h5py.check_string_dtype(d.dtype) is not None:
            return
        if name in self.skipped:
            return
        whole = [r for r in rules if (r if isinstance(r, str) else next(iter(r))) in _WHOLE]
        block_rules = [self._resolve(r) for r in rules if r not in whole]
        if (whole or d.ndim == 0) and self.too_large(name, d):
            return
        try:
            if d.ndim == 0:
                _whole_array_rules(name, whole, np.asarray(d[()]), self.r.violations)
                return
            if whole:
                _whole_array_rules(name, whole, d[()], self.r.violations)
            state: Dict[str, Any] = {}
            rows = _rows_per_block(d)
            for s in range(0, d.shape[0], rows):
                block = d[s : s + rows]
                _scan_block_rules(block_rules, block, s, state)
            _block_rule_violations(name, state, self.r.violations)
        except OSError as exc:
            self._read_failed(name, d, exc)

    def _resolve(self, rule: Any) -> Any:
        """``{less_than_dim: Nc}`` -> ``{less_than_dim: <the value of Nc>}`` (dimensions found so far)."""
        if isinstance(rule, Mapping) and "less_than_dim" in rule:
            return {"less_than_dim": {"dim": rule["less_than_dim"], "n": self.r.dims.get(str(rule["less_than_dim"]))}}
        return rule

    def check_sha256(self, name: str, d: h5py.Dataset, refs: Iterable[str]) -> None:
        if self.too_large(name, d):
            return
        raw = d[()]
        data = raw if isinstance(raw, bytes) else str(raw).encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        for ref in refs:
            kind, key = ref.split()
            if kind == "attribute":
                want = _attr_value(d.attrs.get(key))
                where = f"{name}@{key}"
            else:
                want = getattr(self, "meta", {}).get(key)
                where = f"@metadata_json.{key}"
            if want is not None and want != digest:
                self.v(name, "sha256", digest, f"{want} ({where})")

    def check_dimensions(self) -> None:
        for sym, rule in self.spec.dimensions.items():
            n = self.r.dims.get(sym)
            if n is not None and "min" in rule and n < rule["min"]:
                self.v(f"dimension {sym}", "min", str(n), f">= {rule['min']}")
                self.bad_dims = True

    def check_derived(self, name: str, rule: Mapping[str, Any]) -> None:
        inputs = dict(rule.get("inputs", {}))
        if any(p in self.bad or p not in self.f for p in inputs.values()):
            return  # an input is broken: reported there, not as a derived mismatch
        if any(p in self.skipped for p in list(inputs.values()) + [name]):
            return
        relation = RELATIONS[rule["relation"]]
        attrs = {k: self.attrs.get(v) for k, v in rule.get("attributes", {}).items()}
        if any(v is None for v in attrs.values()) or any(v in self.bad_attrs for v in rule.get("attributes", {}).values()):
            return  # a broken attribute is reported where it is
        d = self.f[name]
        datasets = {k: self.f[p] for k, p in inputs.items()}
        if any(self.too_large(p, self.f[p]) for p in inputs.values()):
            return

        def read(key: str, sl: slice) -> np.ndarray:
            return datasets[key][sl]

        rows = min(_rows_per_block(d), *(_rows_per_block(x) for x in datasets.values() if x.ndim > 0))
        err = 0.0
        scale = 0.0
        try:
            for start, block in relation(read, attrs, d.shape, rows=rows):
                stored = d[start : start + block.shape[0]] if d.ndim else d[()]
                err = max(err, float(np.max(np.abs(stored - block), initial=0.0)))
                scale = max(scale, float(np.max(np.abs(block), initial=0.0)))
        except OSError as exc:
            self._read_failed(name, d, exc)
            return
        except (ValueError, IndexError, TypeError, ArithmeticError) as exc:  # e.g. a degenerate face table
            reason = f"{exc.__class__.__name__}: {exc}".splitlines()[0]
            self.v(name, "derived", f"cannot be recomputed from {', '.join(inputs.values())} ({reason})",
                   f"{rule['relation']} of valid inputs")
            self.bad.add(name)
            return
        rtol = float(rule.get("rtol", 1e-12))
        if not err <= rtol * scale:
            rel = err / scale if scale > 0 else float("inf")
            self.v(name, "derived", f"max |stored - recomputed| = {err:.6g} (relative {rel:.3g})",
                   f"{rule['relation']} of {', '.join(inputs.values())} within rtol {rtol:g}")
            self.bad.add(name)

    def unknown_datasets(self) -> List[str]:
        known = set(self.spec.datasets)
        found: List[str] = []
        self.f.visititems(lambda n, o: found.append(n) if isinstance(o, h5py.Dataset) and n not in known else None)
        return sorted(found)


def validate_file(path: Path | str, spec: Optional[Spec] = None, *, mode: Optional[str] = None,
                  skip_scan: Iterable[str] = (), guard: bool = True) -> ValidationReport:
    """Validate ``path`` against ``spec`` (default: the spec named by its ``schema_name`` attribute).

    mode: "production" | "debug" | None (None: the mode declared in metadata_json, else production).
    In debug mode a missing production metadata key or production-only dataset is a warning.
    skip_scan: datasets whose elements are not re-read (element rules and derived relations that
    involve them are skipped; structure, dtype, shape, units and filters are still checked). The
    streaming writer passes the datasets it has just checked block by block in memory.
    guard: first read the file's headers in a child process with a time limit (probe.py), so damaged
    internals that make HDF5 spin are "unreadable", never a hang (the writers, which validate the
    file they have just written, pass False).
    Raises UnreadableFileError if HDF5 cannot open or read the file (``reason``: one line).
    """
    p = Path(path)
    report = ValidationReport(file=str(p))

    def unreadable(reason: str, exc: Optional[BaseException] = None) -> UnreadableFileError:
        reason = reason.splitlines()[0] if reason else "unknown reason"
        return UnreadableFileError(f"{p}: not a readable HDF5 file ({reason})", reason)

    if p.is_dir():
        raise unreadable("a directory, not a file")
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file")
    if guard:
        from .probe import ProbeFailed, probe_structure

        try:
            probe_structure(p)
        except ProbeFailed as exc:
            raise unreadable(exc.reason) from None
    try:
        f = h5py.File(p, "r")
    except (OSError, ValueError) as exc:
        raise unreadable(f"{exc.__class__.__name__}: {exc}") from exc
    with f:
        try:
            if spec is None:
                name = _attr_value(f.attrs.get("schema_name"))
                if not isinstance(name, str) or name not in SPEC_FILES:
                    shown = _fmt(name) if not isinstance(name, np.ndarray) else _type_name(name)
                    report.violations.append(Violation("@schema_name", "known_schema", shown, f"one of {sorted(SPEC_FILES)}"))
                    return report
                spec = load_spec(name)
            report.schema = spec.name
            _Validator(f, spec, report, mode, skip_scan).run()
        except H5_ERRORS as exc:  # the library failed on damaged internals the probe did not touch
            log.info("%s: HDF5 read failed", p, exc_info=True)
            raise unreadable(f"{exc.__class__.__name__}: {exc}") from None
    if report.warnings:
        log.warning("%s (%s mode): %d warning(s): %s", p, report.mode, len(report.warnings),
                    "; ".join(f"{w.path} {w.found}" for w in report.warnings))
    return report
