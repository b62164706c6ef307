"""Validation study kind (``study.kind: validation``): the ASME V&V 20-2009 comparison.

For every point of a reference data file (measured D with standard uncertainty u_D, and the
conditions of the point) the study runs the case at ``n_samples`` Latin hypercube samples of
the declared uncertain inputs, as one Hydra sweep through the configured launcher, and reports
per point and quantity:

    S = mean of the simulated values, u_input = their sample standard deviation,
    u_num = (relative numerical uncertainty from solution verification) · |S|,
    E = S − D,  u_val = sqrt(u_num² + u_input² + u_D²),  interval E ± k·u_val,

gated by ``study.validation.band`` on |E| / u_val. Everything goes to the parent MLflow run
(metrics ``val_<quantity>_<point>_<name>``), ``study/validation.csv`` and the V&V 20 figure
``study/validation.png`` (S and D with error bars; E with its ±k·u_val band).

How the samples become a sweep: :func:`plan_sweep` (called by the study callback in the
launching process, before any job) swaps Hydra's basic sweeper for :class:`harness.launch.sample_sweeper.SampleSweeper`,
which gives every job of the basic sweep one set of plain overrides per point and sample
(``case.params.v_n=0.5 source.E=6.31e10 ... +validation_sample={point:v1,index:0}``), so each
job's config carries its own values and any launcher (basic, joblib, Ray, Slurm) runs it.
"""
from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from omegaconf import DictConfig, OmegaConf

from harness.core.atomic import atomic_write_text
from harness.core.context import HarnessInputError
from harness.metrics import gates as G

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
SAMPLE_KEY = "validation_sample"
COMPUTED = ("ok", "tracking_error")


# -- reference data -----------------------------------------------------------------------------
def resolve_path(path: str) -> Path:
    """An absolute path; a relative one is taken from the working directory, else the project root."""
    p = Path(path)
    if p.is_absolute():
        return p
    return p.resolve() if p.exists() else (ROOT / p)


def load_reference(path: str) -> Tuple[Any, Dict[str, Any], List[str]]:
    """Read and check a reference data file and its metadata; returns (table, metadata, conditions).

    Raises HarnessInputError naming the file, the field and the rule.
    """
    import pandas as pd
    import pandera.errors
    import yaml

    from schemas.validation_data import (
        CONDITION_KEY,
        META_REQUIRED,
        REQUIRED,
        validation_data_schema,
    )

    f = resolve_path(path)
    if not f.is_file():
        raise HarnessInputError(f"study.validation.data: no such file {f}")
    if f.suffix.lower() != ".csv":
        raise HarnessInputError(f"{f}: study.validation.data: must be a .csv file (schema schemas/validation_data.py)")
    try:
        df = pd.read_csv(f, comment="#", dtype={"point": str, "quantity": str})
    except Exception as exc:  # noqa: BLE001 - any parse error is bad input
        raise HarnessInputError(f"{f}: not a readable CSV: {exc}".splitlines()[0]) from exc
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise HarnessInputError(f"{f}: column {missing[0]!r}: required (columns point, quantity, D, u_D)")
    conditions = [c for c in df.columns if c not in REQUIRED]
    for c in conditions:
        if not CONDITION_KEY.match(str(c)):
            raise HarnessInputError(f"{f}: column {c!r}: a condition column must be a dotted config key")
    try:
        df = validation_data_schema(conditions).validate(df, lazy=False)
    except pandera.errors.SchemaError as exc:
        col = getattr(exc, "column_name", None) or "?"
        raise HarnessInputError(f"{f}: column {col!r}: {str(exc).splitlines()[0]}") from exc
    for c in conditions:
        if (df.groupby("point")[c].nunique(dropna=False) > 1).any():
            raise HarnessInputError(f"{f}: column {c!r}: must be constant within a point")
    meta_file = f.with_suffix(".meta.yaml")
    if not meta_file.is_file():
        raise HarnessInputError(f"{meta_file}: missing: the metadata (source, constructed, citation) of {f.name}")
    meta = yaml.safe_load(meta_file.read_text()) or {}
    if not isinstance(meta, dict):
        raise HarnessInputError(f"{meta_file}: must be a mapping")
    for key, typ in META_REQUIRED.items():
        if not isinstance(meta.get(key), typ):
            raise HarnessInputError(f"{meta_file}: {key}: required, of type {typ.__name__}")
    if not meta["constructed"] and not meta.get("citation"):
        raise HarnessInputError(f"{meta_file}: citation: required for measured data (constructed: false)")
    return df, meta, conditions


# -- uncertain inputs ---------------------------------------------------------------------------
def _ppf(spec: Dict[str, Any], u: np.ndarray, where: str) -> np.ndarray:
    from scipy.stats import norm

    dist = str(spec.get("dist", ""))
    try:
        if dist == "normal":
            mean, std = float(spec["mean"]), float(spec["std"])
            if std < 0:
                raise ValueError("std must be >= 0")
            return mean + std * norm.ppf(u)
        if dist == "uniform":
            lo, hi = float(spec["low"]), float(spec["high"])
            if hi < lo:
                raise ValueError("high must be >= low")
            return lo + (hi - lo) * u
        if dist == "lognormal":
            median, s = float(spec["median"]), float(spec["sigma_ln"])
            if median <= 0 or s < 0:
                raise ValueError("median must be > 0 and sigma_ln >= 0")
            return median * np.exp(s * norm.ppf(u))
    except KeyError as exc:
        raise HarnessInputError(f"{where}: {exc.args[0]}: required for dist {dist}") from exc
    except ValueError as exc:
        raise HarnessInputError(f"{where}: {exc}") from exc
    raise HarnessInputError(f"{where}.dist: must be normal, uniform or lognormal, got {dist!r}")


def lhs_samples(inputs: Dict[str, Any], n: int, seed: int) -> Dict[str, np.ndarray]:
    """``n`` Latin hypercube samples of every declared input (one stratum per sample and input),
    seeded; returns ``{config key: values (n,)}`` in the declared order."""
    from scipy.stats import qmc

    if n < 1:
        raise HarnessInputError(f"study.validation.n_samples: must be >= 1, got {n}")
    keys = list(inputs)
    if not keys:
        return {}
    u = qmc.LatinHypercube(d=len(keys), seed=np.random.default_rng(seed)).random(n)
    return {k: _ppf(dict(inputs[k]), u[:, j], f"study.validation.inputs.{k}") for j, k in enumerate(keys)}


def _literal(v: Any) -> str:
    if isinstance(v, str):
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return repr(float(v)) if isinstance(v, float) else str(v)


def _override(key: str, value: Any) -> str:
    return f"{key}={repr(float(value))}"


def plan_sweep(config: DictConfig) -> int:
    """Make the launching config's sweeper run every point x sample; returns the samples per
    job of the basic sweep (points x n_samples).

    Each job gets the overrides ``<condition key>=<value>`` of its point, ``<input key>=<value>``
    of its sample and ``+validation_sample={point: P, index: i}``, so its own config carries
    them and any launcher runs it unchanged (the sweeper runs in the launching process).
    """
    from omegaconf import flag_override

    v = OmegaConf.select(config, "study.validation")
    if v is None:
        raise HarnessInputError("study.validation: required by study.kind=validation")
    ref, _meta, conditions = load_reference(str(v.data))
    inputs = OmegaConf.to_container(v.inputs, resolve=True) or {}
    clash = sorted(set(inputs) & set(conditions))
    if clash:
        raise HarnessInputError(f"study.validation.inputs.{clash[0]}: also a condition column of {v.data}")
    for q in ref["quantity"].unique():
        if q not in (v.quantities or {}):
            raise HarnessInputError(f"study.validation.quantities: no job metric given for quantity {q!r} of {v.data}")
    sweeper = OmegaConf.select(config, "hydra.sweeper._target_")
    if sweeper != "hydra._internal.core_plugins.basic_sweeper.BasicSweeper":
        raise HarnessInputError(f"hydra.sweeper: a validation study needs the basic sweeper, got {sweeper}")
    from harness.launch.sample_sweeper import register

    sweeper_name = register()
    samples = lhs_samples(inputs, int(v.n_samples), int(v.seed))
    jobs = []
    for _, row in ref.drop_duplicates("point").iterrows():
        for i in range(int(v.n_samples)):
            ov = [_override(c, row[c]) for c in conditions]
            ov += [_override(k, samples[k][i]) for k in inputs]
            ov.append(f"+{SAMPLE_KEY}={{point:'{row['point']}',index:{i}}}")
            jobs.append(ov)
    with flag_override(config, ["readonly", "struct"], [False, False]):
        own = config.hydra.sweeper.get("params")
        params = OmegaConf.to_container(own, resolve=False) if own is not None else {}
        config.hydra.sweeper = OmegaConf.create({
            "_target_": sweeper_name, "max_batch_size": config.hydra.sweeper.get("max_batch_size"),
            "params": params, "samples": jobs})
    log.info("validation: %d jobs (points x %d samples) per basic-sweep job", len(jobs), int(v.n_samples))
    return len(jobs)


# -- aggregation --------------------------------------------------------------------------------
def _u_num_relative(v: DictConfig, quantity: str, metric: str) -> Tuple[float, str]:
    rel = (v.get("u_num_relative") or {})
    if quantity in rel:
        return float(rel[quantity]), "study.validation.u_num_relative"
    if v.get("u_num_study"):
        p = resolve_path(str(v.u_num_study))
        if p.is_dir():
            p = p / "study" / "study.json"
        try:
            ver = json.loads(p.read_text()).get("verification") or {}
        except (OSError, ValueError) as exc:
            raise HarnessInputError(f"study.validation.u_num_study: cannot read {p}: {exc}") from exc
        for name in (metric, quantity):
            entry = ver.get(name)
            if entry and entry.get("convergence") in ("monotonic", "at_round_off") and entry.get("f1"):
                return float(entry["u_num"]) / abs(float(entry["f1"])), f"{p} ({name}, {entry['convergence']})"
        log.warning("validation: %s has no usable u_num for %s", p, quantity)
    return 0.0, "not given (taken as 0)"


def _sample_of(row: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    s = (row.get("config") or {}).get(SAMPLE_KEY)
    return s if isinstance(s, dict) and "point" in s else None


def aggregate(df, rows: List[Dict[str, Any]], study: DictConfig, out_dir: Path) -> Dict[str, Any]:
    """E, u_val, interval and verdict per point and quantity; validation.csv and validation.png."""
    import pandas as pd

    v = study.validation
    ref, meta, _conditions = load_reference(str(v.data))
    k = float(v.k)
    band = G.Band.from_mapping(OmegaConf.to_container(v.band, resolve=True) or {})
    point_of = {r["job"]: _sample_of(r) for r in rows}
    ok = df[df["status"].isin(COMPUTED)]
    records, metrics, verdicts = [], {}, []
    for _, ref_row in ref.iterrows():
        point, quantity = str(ref_row["point"]), str(ref_row["quantity"])
        metric = str(v.quantities[quantity])
        jobs = [j for j, s in point_of.items() if s and str(s["point"]) == point]
        S = ok[ok["job"].isin(jobs)][metric].to_numpy(float) if metric in ok else np.array([])
        S = S[np.isfinite(S)]
        n = int(S.size)
        S_mean = float(S.mean()) if n else math.nan
        u_input = float(S.std(ddof=1)) if n > 1 else 0.0
        rel, u_num_source = _u_num_relative(v, quantity, metric)
        u_num = rel * abs(S_mean)
        D, u_D = float(ref_row["D"]), float(ref_row["u_D"])
        E = S_mean - D
        u_val = math.sqrt(u_num**2 + u_input**2 + u_D**2)
        ratio = abs(E) / u_val if u_val > 0 else math.inf
        verdict = band.judge(ratio) if n else G.FAIL
        verdicts.append(verdict)
        rec = {"point": point, "quantity": quantity, "metric": metric, "n_samples": n, "S": S_mean, "D": D,
               "E": E, "u_num": u_num, "u_input": u_input, "u_D": u_D, "u_val": u_val,
               "E_lo": E - k * u_val, "E_hi": E + k * u_val, "E_over_u_val": ratio, "k": k, "verdict": verdict,
               "u_num_source": u_num_source}
        records.append(rec)
        for name in ("S", "D", "E", "u_num", "u_input", "u_D", "u_val", "E_lo", "E_hi", "E_over_u_val"):
            metrics[f"val_{quantity}_{point}_{name}"] = float(rec[name])
    table = pd.DataFrame.from_records(records)
    summary = {q: float(g["E_over_u_val"].max()) for q, g in table.groupby("quantity")} if len(table) else {}
    metrics.update({f"val_{q}_max_E_over_u_val": r for q, r in summary.items()})
    atomic_write_text(Path(out_dir) / "validation.csv", table.to_csv(index=False))
    try:
        figure(table, meta, k, Path(out_dir) / "validation.png")
    except Exception as exc:  # a figure never fails a study
        log.warning("validation figure: %s", exc)
    if meta.get("constructed"):
        log.warning("validation: %s holds CONSTRUCTED data, not measurements (see its .meta.yaml)", v.data)
    info = {"data": str(resolve_path(str(v.data))), "metadata": meta, "k": k, "band": band.as_dict(),
            "n_samples": int(v.n_samples), "seed": int(v.seed),
            "inputs": OmegaConf.to_container(v.inputs, resolve=True), "points": records, "summary": summary}
    return {"metrics": metrics, "verdict": G.worst(verdicts or [G.FAIL]), "validation": info}


def figure(table, meta: Dict[str, Any], k: float, path: Path) -> Path:
    """The V&V 20 figure: S (±k·sqrt(u_num²+u_input²)) and D (±k·u_D) per point; E with ±k·u_val."""
    from harness.core import figures

    plt = figures._plt()
    quantities = list(dict.fromkeys(table["quantity"]))
    fig, axes = plt.subplots(2, len(quantities), figsize=(5.5 * len(quantities), 6), squeeze=False)
    for j, q in enumerate(quantities):
        t = table[table["quantity"] == q]
        x = np.arange(len(t))
        u_sim = np.sqrt(t["u_num"] ** 2 + t["u_input"] ** 2)
        a, b = axes[0, j], axes[1, j]
        label_d = "D (constructed, not measured)" if meta.get("constructed") else "D (measured)"
        a.errorbar(x - 0.08, t["D"], yerr=k * t["u_D"], fmt="s", capsize=4, label=f"{label_d} ± {k:g} u_D")
        a.errorbar(x + 0.08, t["S"], yerr=k * u_sim, fmt="o", capsize=4,
                   label=f"S ± {k:g} sqrt(u_num² + u_input²)")
        a.set_xticks(x, t["point"])
        a.set_ylabel(q)
        a.legend(fontsize=7)
        a.grid(alpha=0.3)
        b.axhline(0.0, color="0.5", lw=0.8)
        b.errorbar(x, t["E"], yerr=k * t["u_val"], fmt="D", capsize=4, color="C3", label=f"E = S - D ± {k:g} u_val")
        b.set_xticks(x, t["point"])
        b.set_ylabel(f"E ({q})")
        b.legend(fontsize=7)
        b.grid(alpha=0.3)
    data = "CONSTRUCTED for tests, not measured" if meta.get("constructed") else str(meta.get("citation"))
    axes[0, 0].set_title(f"ASME V&V 20 comparison (k = {k:g}); data: {data}"[:110], fontsize=8)
    return figures.save(fig, path)
