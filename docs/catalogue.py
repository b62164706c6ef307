"""Generate the case catalogue page of the documentation from ``conf/`` (run by ``conf.py``).

Every case (``conf/case/**.yaml``) and study (``conf/study/**.yaml``) is read as plain YAML and
written into one Markdown page with its name, description, gated metrics and their bands, key
metrics and tags, so the catalogue never drifts from the configs. Runs in well under a second.

    python docs/catalogue.py OUT.md   # writes the page (conf.py does this on every build)
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: top level must be a mapping to be catalogued")
    return data


def _comment(path: Path) -> str:
    """The leading ``#`` comment block after ``# @package``: the case's own prose."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if not text.startswith("@package"):
            lines.append(text)
    return " ".join(x for x in lines if x)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _band(bands: dict, name: str) -> str:
    b = bands.get(name) if isinstance(bands, dict) else None
    if not isinstance(b, dict):
        return f"`{name}`"
    parts = [f"pass ≤ {b['pass_max']:.6g}" if "pass_max" in b else "",
             f"warn ≤ {b['warn_max']:.6g}" if "warn_max" in b else ""]
    for k in ("pass_min", "warn_min"):
        if k in b:
            parts.append(f"{k.split('_')[0]} ≥ {b[k]:.6g}")
    rule = ", ".join(p for p in parts if p)
    return f"`{name}` ({rule})" if rule else f"`{name}`"


def case_rows(conf: Path) -> list[dict]:
    """One dict per case file: name, family, description, gates (with bands), key metrics, tags."""
    rows = []
    for path in sorted((conf / "case").rglob("*.yaml")):
        data = _load(path)
        case = data.get("case") or {}
        bands = (data.get("gate") or {}).get("bands") or {}
        gate_group = next((str(d).split(":", 1)[1].strip() for d in data.get("defaults") or []
                           if isinstance(d, str) and d.startswith("override /gate:")), "analytic")
        rows.append({
            "name": case.get("name") or str(path.relative_to(conf / "case").with_suffix("")),
            "family": case.get("family", path.parent.name),
            "description": case.get("description") or _comment(path),
            "gates": [_band(bands, g) for g in case.get("gates") or []],
            "gate_group": gate_group,
            "key_metrics": list(case.get("key_metrics") or []),
            "tags": case.get("tags") or data.get("tags") or {},
            "file": str(path.relative_to(conf.parent)),
        })
    return rows


def study_rows(conf: Path) -> list[dict]:
    """One dict per study file: name, kind, description, swept parameter, metric, expectation."""
    rows = []
    for path in sorted((conf / "study").rglob("*.yaml")):
        data = _load(path)
        study = data.get("study") or {}
        sweep = (((data.get("hydra") or {}).get("sweeper") or {}).get("params")) or {}
        expect = ""
        if "expected_order" in study:
            expect = f"order {study['expected_order']:g} ± {study.get('order_tolerance', 0):g}"
        rows.append({
            "name": study.get("name") or str(path.relative_to(conf / "study").with_suffix("")),
            "kind": study.get("kind", ""),
            "description": study.get("description") or _comment(path),
            "parameter": study.get("parameter", ""),
            "metric": study.get("metric", ""),
            "expect": expect,
            "sweep": ", ".join(f"`{k}={v}`" for k, v in sweep.items()),
            "tags": study.get("tags") or {},
            "file": str(path.relative_to(conf.parent)),
        })
    return rows


def _tags(tags) -> str:
    if isinstance(tags, dict):
        return ", ".join(f"{k}={v}" for k, v in tags.items())
    if isinstance(tags, (list, tuple)):
        return ", ".join(str(t) for t in tags)
    return str(tags or "")


def render(conf: Path = ROOT / "conf") -> str:
    """The catalogue page as Markdown (MyST)."""
    cases, studies = case_rows(conf), study_rows(conf)
    out = ["# Case catalogue", "",
           f"Generated from `conf/` at every documentation build: {len(cases)} cases and "
           f"{len(studies)} studies. Run a case with `python -m harness +case=NAME`, a study with "
           "`python -m harness -m +case=CASE +study=NAME`.", ""]
    families = sorted({c["family"] for c in cases})
    out += ["## Cases", ""]
    for fam in families:
        out += [f"### {fam}", "", "| case | description | gated metrics (bands; others from the gate group) "
                "| gate group | key metrics | tags |", "|---|---|---|---|---|---|"]
        for c in (c for c in cases if c["family"] == fam):
            out.append(f"| `{c['name']}` | {_cell(c['description'])} | {_cell(', '.join(c['gates']))} | "
                       f"`{c['gate_group']}` | {_cell(', '.join(c['key_metrics']))} | {_cell(_tags(c['tags']))} |")
        out.append("")
    out += ["## Studies", "", "| study | kind | description | parameter → metric | expected | sweep | tags |",
            "|---|---|---|---|---|---|---|"]
    for s in studies:
        arrow = f"`{s['parameter']}` → `{s['metric']}`" if s["parameter"] else f"`{s['metric']}`"
        out.append(f"| `{s['name']}` | {s['kind']} | {_cell(s['description'])} | {_cell(arrow)} | "
                   f"{s['expect']} | {_cell(s['sweep'])} | {_cell(_tags(s['tags']))} |")
    out.append("")
    return "\n".join(out)


def write(path: Path, conf: Path = ROOT / "conf") -> Path:
    """Write the page atomically (temporary file, then ``os.replace``); unchanged text is not rewritten."""
    text = render(conf)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return path  # keep the mtime: Sphinx then does not rebuild the page
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return path


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "_generated" / "catalogue.md")
