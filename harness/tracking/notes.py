"""Words for MLflow: a run's description (``mlflow.note.content``) and a sweep child's name."""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Set

from omegaconf import DictConfig, OmegaConf

# overrides that choose what runs, not a level of a sweep: never part of a child's name
_SELECTORS = re.compile(r"^[+~]*(case|study|suite|hydra|tracking|paths)([./=]|$)")


def swept_keys(sweep_dir: Path) -> Optional[Set[str]]:
    """The keys a multirun sweeps (``a=1,2``, ``range(..)``, ``choice(..)`` in its task
    overrides, read from ``<sweep_dir>/multirun.yaml``); None when that file is not here."""
    import yaml
    from hydra.core.override_parser.overrides_parser import OverridesParser

    path = Path(sweep_dir) / "multirun.yaml"
    try:
        task = ((yaml.safe_load(path.read_text()) or {}).get("hydra") or {}).get("overrides", {}).get("task") or []
        parsed = OverridesParser.create().parse_overrides([str(t) for t in task])
    except Exception:  # noqa: BLE001 - no file, or a syntax only another sweeper knows: name by every override
        return None
    return {o.key_or_group.lstrip("+~") for o in parsed if o.is_sweep_override()}


def child_run_name(case: str, overrides: Sequence[str], swept: Optional[Set[str]] = None) -> str:
    """Name of a sweep's child run: its swept overrides, keys shortened to their last part.

    ``["+case=x", "+study=s", "operator.surface.resolution=16"]`` -> ``"resolution=16"``;
    ``swept`` (see :func:`swept_keys`) keeps only those keys; the case name when no override
    is left. Keys whose last part is not unique keep the full key.
    """
    pairs = []
    for o in overrides:
        if _SELECTORS.match(o) or "=" not in o:
            continue
        key, _, value = o.lstrip("+~").partition("=")
        if swept is not None and key not in swept:
            continue
        pairs.append((key, value))
    if not pairs:
        return case
    last = [k.split(".")[-1] for k, _ in pairs]
    names = [(s if last.count(s) == 1 else k) for s, (k, _) in zip(last, pairs)]
    return " ".join(f"{n}={v}" for n, (_, v) in zip(names, pairs))[:250]


def _num(v: Any) -> str:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return str(v)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return f"{v:.4g}" if v == 0 or 1e-3 <= abs(v) < 1e5 else f"{v:.3e}"


def _band(band: Optional[Mapping[str, Any]]) -> str:
    if not band:
        return "-"
    parts = []
    for key, word in (("pass_min", "pass ≥"), ("pass_max", "pass ≤"), ("warn_min", "warn ≥"), ("warn_max", "warn ≤")):
        if band.get(key) is not None:
            parts.append(f"{word} {_num(band[key])}")
    return ", ".join(parts) or "open"


def run_note(cfg: DictConfig, outcome: Any, gate_results: Mapping[str, Any]) -> str:
    """Markdown summary of a case run: what it verifies, verdict, gated metrics with bands,
    regression status."""
    desc = str(OmegaConf.select(cfg, "case.description", default="") or "")
    tags = list(OmegaConf.select(cfg, "case.tags", default=[]) or [])
    word = outcome.verdict.upper() if outcome.status == "ok" else outcome.status.upper()
    lines = [f"### {outcome.case}: {word}", ""]
    if desc:
        lines += [desc, ""]
    if tags:
        lines += ["tags: " + ", ".join(f"`{t}`" for t in tags), ""]
    if outcome.message:
        lines += [f"> {str(outcome.message).splitlines()[0][:500]}", ""]
    if gate_results:
        lines += ["| metric | value | band | verdict |", "|---|---|---|---|"]
        for name, g in gate_results.items():
            band = g.band.as_dict() if getattr(g, "band", None) is not None else None
            lines.append(f"| {name} | {_num(g.value)} | {_band(band)} | {g.verdict} |")
        lines.append("")
    lines.append(regression_text(outcome.regression))
    return "\n".join(lines)


def regression_text(reg: Optional[Dict[str, Any]]) -> str:
    """One markdown paragraph on the regression status of a run."""
    if not reg:
        return "regression: not judged"
    status = reg.get("status")
    if status == "no_baseline":
        return "regression: no accepted baseline for this case"
    if status == "config_changed":
        return (f"regression: no comparable baseline (config hash changed; baseline "
                f"`{reg.get('baseline_config_sha256', '?')[:12]}` from run `{reg.get('baseline_run_id')}`)")
    if status in ("off", "unknown"):
        return f"regression: {status} ({reg.get('reason', '')})"
    head = (f"regression: **{status}** against baseline `{reg.get('baseline_name')}` "
            f"(run `{reg.get('baseline_run_id')}`)" + ("" if reg.get("enforce", True) else " — not enforced"))
    rows = [f"| {m} | {_num(d['value'])} | {_num(d['baseline'])} | {_num(d['rel_change'])} | {d['verdict']} |"
            for m, d in (reg.get("metrics") or {}).items() if d["verdict"] != "pass"]
    if rows:
        head += "\n\n| metric | value | baseline | rel. change | verdict |\n|---|---|---|---|---|\n" + "\n".join(rows)
    return head
