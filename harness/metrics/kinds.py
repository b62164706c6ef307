"""Metric kinds: what a metric measures, declared per metric, deciding how a baseline compares it.

=========  ===========================================================  ============================
kind       what it is                                                   compared with the baseline
=========  ===========================================================  ============================
error      a distance from a reference (e_F, rms, scd, residuals)       ``gate.regression`` band
value      a computed quantity of the model (a force, a period [SI])    ``gate.regression`` band
count      an integer fact (steps, evaluations, flags 0/1, exit codes)  exactly
timing     a wall time or a ratio of wall times [s or 1]                never, unless a band is given
memory     a memory size [bytes]                                        never, unless a band is given
=========  ===========================================================  ============================

Family adapters declare the kinds of their metrics in one table per module (``METRIC_KINDS``:
metric name or glob -> kind, exact names first, then the globs in table order); the generic
case declares ``kind`` per metric (default: the library entry's kind); :data:`COMMON` holds the
metrics the harness adds to every family (the warm-up). A metric no table names is
``undeclared`` and compared as a value unless ``gate.regression.timing_patterns`` matches it.
"""
from __future__ import annotations

import fnmatch
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

ERROR, VALUE, COUNT, TIMING, MEMORY = "error", "value", "count", "timing", "memory"
KINDS: Tuple[str, ...] = (ERROR, VALUE, COUNT, TIMING, MEMORY)
NOT_COMPARED = (TIMING, MEMORY)  # never compared with a baseline unless a band names the metric
UNDECLARED = "undeclared"

# metrics the harness itself adds to a family's metrics (harness.core.warmup)
COMMON: Dict[str, str] = {"jit_warmup": COUNT, "jit_warmup_s": TIMING}


def check_kind(kind: str, where: str) -> str:
    """``kind`` if it is one of :data:`KINDS`; ValueError naming ``where`` and the choices."""
    if kind not in KINDS:
        raise ValueError(f"{where}: unknown metric kind {kind!r} (kinds: {', '.join(KINDS)})")
    return kind


def check_table(table: Mapping[str, str], where: str) -> None:
    """Every kind of a table is known (called by the tests of every adapter module)."""
    for name, kind in table.items():
        check_kind(kind, f"{where}[{name!r}]")


def kind_in(table: Mapping[str, str], name: str) -> Optional[str]:
    """The kind ``table`` gives ``name``: the exact entry, else the first glob matching, else None."""
    if name in table:
        return table[name]
    for pattern, kind in table.items():
        if any(ch in pattern for ch in "*?[") and fnmatch.fnmatchcase(name, pattern):
            return kind
    return None


def resolve(names: Iterable[str], declared: Mapping[str, str], tables: Iterable[Mapping[str, str]]) -> Dict[str, str]:
    """name -> kind of every metric: an exact name in ``declared`` (per metric, by the adapter),
    the tables (the adapter module's) or :data:`COMMON`, in that order; else the first glob
    matching in that order; else :data:`UNDECLARED`."""
    tables = [dict(declared), *tables, COMMON]
    out: Dict[str, str] = {}
    for name in names:
        exact = next((t[name] for t in tables if name in t), None)  # an exact name beats every glob
        out[name] = exact or next((k for k in (kind_in(t, name) for t in tables) if k is not None), UNDECLARED)
    return out


def undeclared(kinds: Mapping[str, str]) -> List[str]:
    """The metrics without a declared kind, sorted."""
    return sorted(n for n, k in kinds.items() if k == UNDECLARED)
