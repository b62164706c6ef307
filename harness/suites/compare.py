"""``python -m harness compare A B``: what changed between two runs, two suites or a baseline.

A and B are MLflow run ids (a suite's parent run id compares its cases), run or suite
directories, ``latest`` or ``baseline:NAME`` (harness.baseline.resolve). Cases are matched
by name; for each case present on both sides it prints the metric differences (value A,
value B, relative change), the verdict change, the diff of the two resolved configs
(keys added, removed, changed; the runtime-only keys paths/tracking/hydra/suite left
out, as in the config hash) and the diff of the manifests' input file hashes. Exit code 0
(2 for a reference that names nothing).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from harness.core.runner import RUNTIME_KEYS, _fmt


@dataclass
class Side:
    """One case run seen by compare."""

    case: str
    run_id: str
    verdict: str
    metrics: Dict[str, float]
    config: Dict[str, str] = field(default_factory=dict)  # flattened resolved config
    inputs: Dict[str, str] = field(default_factory=dict)  # input path -> sha256


def _run_file(client, run, name: str) -> Optional[Any]:
    """A JSON/YAML record of a run: from its run directory if it is here, else its artifact."""
    import yaml

    run_dir = run.data.tags.get("run_dir")
    text = None
    if run_dir and (Path(run_dir) / name).is_file():
        text = (Path(run_dir) / name).read_text()
    else:
        try:
            with tempfile.TemporaryDirectory() as tmp:
                text = Path(client.download_artifacts(run.info.run_id, name, tmp)).read_text()
        except Exception:  # noqa: BLE001 - a run without the artifact compares without it
            return None
    return json.loads(text) if name.endswith(".json") else yaml.safe_load(text)


def flat_config(cfg: Optional[Dict[str, Any]]) -> Dict[str, str]:
    from harness.tracking.records import flatten

    return flatten({k: v for k, v in (cfg or {}).items() if k not in RUNTIME_KEYS})


def side(client, run) -> Side:
    from harness.core.regression import OWN_PREFIXES

    cfg = _run_file(client, run, "config.yaml")
    if cfg is None:  # the params are the flattened resolved config
        config = {k: v for k, v in run.data.params.items() if k.split(".")[0] not in RUNTIME_KEYS}
    else:
        config = flat_config(cfg)
    manifest = _run_file(client, run, "manifest.json") or {}
    inputs = {f.get("path"): f.get("sha256") for f in manifest.get("inputs") or []}
    metrics = {k: v for k, v in run.data.metrics.items() if not k.startswith(OWN_PREFIXES)}
    return Side(case=run.data.tags.get("case", run.info.run_name), run_id=run.info.run_id,
                verdict=run.data.tags.get("verdict", "?"), metrics=metrics, config=config, inputs=inputs)


def dict_diff(a: Dict[str, Any], b: Dict[str, Any]) -> Dict[str, List]:
    """Keys added (in B only), removed (in A only) and changed (value A, value B)."""
    return {"added": sorted((k, b[k]) for k in b.keys() - a.keys()),
            "removed": sorted((k, a[k]) for k in a.keys() - b.keys()),
            "changed": sorted((k, a[k], b[k]) for k in a.keys() & b.keys() if a[k] != b[k])}


def metric_rows(a: Side, b: Side) -> List[Tuple[str, float, float, float]]:
    from harness.core.regression import rel_change

    rows = []
    for name in sorted(a.metrics.keys() | b.metrics.keys()):
        va, vb = a.metrics.get(name, math.nan), b.metrics.get(name, math.nan)
        if va == vb:
            continue
        rows.append((name, va, vb, rel_change(vb, va) if not (math.isnan(va) or math.isnan(vb)) else math.nan))
    return rows


def compare_sides(a: Side, b: Side) -> Dict[str, Any]:
    return {"case": a.case, "run_a": a.run_id, "run_b": b.run_id, "verdict_a": a.verdict, "verdict_b": b.verdict,
            "metrics": metric_rows(a, b), "config": dict_diff(a.config, b.config),
            "inputs": dict_diff(a.inputs, b.inputs)}


def compare(client, ref_a: str, ref_b: str) -> Dict[str, Any]:
    """Case-by-case comparison of what ``ref_a`` and ``ref_b`` name."""
    from harness.suites.baseline import resolve

    ta, tb = resolve(client, ref_a), resolve(client, ref_b)
    sa = {s.case: s for s in (side(client, r) for r in ta["runs"])}
    sb = {s.case: s for s in (side(client, r) for r in tb["runs"])}
    if len(sa) == 1 and len(sb) == 1 and ta["kind"] == "run" and tb["kind"] == "run":
        (a,), (b,) = sa.values(), sb.values()
        cases = [compare_sides(a, b)]  # two single runs compare even when their cases differ
        only_a, only_b = [], []
    else:
        cases = [compare_sides(sa[c], sb[c]) for c in sorted(sa.keys() & sb.keys())]
        only_a, only_b = sorted(sa.keys() - sb.keys()), sorted(sb.keys() - sa.keys())
    return {"a": ref_a, "b": ref_b, "cases": cases, "only_a": only_a, "only_b": only_b}


def text(result: Dict[str, Any]) -> str:
    lines = [f"compare A={result['a']}  B={result['b']}: {len(result['cases'])} cases on both sides"]
    if result["only_a"]:
        lines.append(f"only in A: {', '.join(result['only_a'])}")
    if result["only_b"]:
        lines.append(f"only in B: {', '.join(result['only_b'])}")
    for c in result["cases"]:
        change = c["verdict_a"].upper() + (f" -> {c['verdict_b'].upper()}" if c["verdict_a"] != c["verdict_b"] else " (same)")
        lines.append(f"\n== {c['case']}  verdict {change}  (A {c['run_a']}, B {c['run_b']})")
        if c["metrics"]:
            w = max(len(m[0]) for m in c["metrics"])
            lines.append(f"  {'metric':<{w}}  {'A':>12}  {'B':>12}  {'rel. change':>12}")
            for name, va, vb, rc in c["metrics"]:
                lines.append(f"  {name:<{w}}  {_fmt(va):>12}  {_fmt(vb):>12}  {_fmt(rc):>12}")
        else:
            lines.append("  metrics: identical")
        lines += _diff_lines("config", c["config"], " = ", "identical")
        lines += _diff_lines("input files", c["inputs"], " ", "identical hashes")
    return "\n".join(lines)


def _diff_lines(title: str, diff: Dict[str, list], sep: str, identical: str) -> List[str]:
    """The text of one diff (``added``/``removed``: (key, value), ``changed``: (key, a, b))."""
    if not any(diff.values()):
        return [f"  {title}: {identical}"]
    return [f"  {title}:", *(f"    + {k}{sep}{v}" for k, v in diff["added"]),
            *(f"    - {k}{sep}{v}" for k, v in diff["removed"]),
            *(f"    ~ {k}: {va} -> {vb}" for k, va, vb in diff["changed"])]


def main(argv: Optional[Sequence[str]] = None) -> int:
    from harness.core.context import HarnessInputError
    from harness.suites.baseline import RefError, tracking_target
    from harness.tracking import records as tracking

    ap = argparse.ArgumentParser(prog="python -m harness compare",
                                 description="Metric, verdict, config and input differences of two runs or suites.")
    ap.add_argument("a", help="run id, run/suite directory, latest or baseline:NAME")
    ap.add_argument("b")
    ap.add_argument("overrides", nargs="*", help="config overrides choosing the store, e.g. tracking=server")
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        uri, _, _ = tracking_target(args.overrides)
        result = compare(tracking.client(uri), args.a, args.b)
    except (RefError, HarnessInputError) as exc:
        print(f"harness compare: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, default=str) if args.json else text(result))
    return 0
