"""The seed-000 workflow as stages under one parent MLflow run (issue 15).

    python -m harness.families.load_transfer_workflow [--no-tracking] [--set STAGE:KEY=VALUE ...]

Stages, in the seed's order ("Pseudocódigo: caso completo"); each stage is a real case run as a
child run of the parent (its own run directory, manifest, gates), and each works on the products of
the earlier ones (hand-overs below):

  config          compose every stage's case with its overrides (invalid -> exit 2, nothing runs)
  wall_loads      load_transfer/files/round_trip: synthetic wall extraction -> wall-loads file ->
                  validation -> read back
  operator        load_transfer/kratos_operator: the conservative operator of the Kratos top face for
                  the rings of that wall-loads file -> operator file
  export          load_transfer/kratos_export: the wall-loads file exported with the operator's
                  surface -> kratos-point-loads file (its normal forces are the operator's)
  kratos_elastic  load_transfer/kratos_dynamic: elastic Kratos MPM on that kratos-point-loads file
                  (level 0; the refined level exports the wall-loads file onto its own face) vs scikit-fem
  fenicsx         load_transfer/dolfinx_static: Kratos / DOLFINx / scikit-fem on the peak knot of the
                  same kratos-point-loads file (a static case: its largest-force knot, held constant)
  plasticity      load_transfer/kratos_plasticity, only when every earlier gate passed: elasto-plastic
                  Kratos MPM on the same kratos-point-loads file

A failed gate (or an invalid or crashed stage) stops the later stages; the reason is recorded on
the parent run (tags ``stopped_at``, ``stop_reason``) and in ``workflow.json`` (commands, stage
verdicts, exit codes, run directories, manifest SHA-256, timings, hand-overs).

Hand-overs (``HANDOVERS``): after a stage ran, its product (exactly one file of a given suffix in its
run directory) is passed to the later stages that consume it, as overrides of their case params;
``workflow.json`` records each (file, SHA-256 when produced, from, to, overrides) and, once the
consumer ran, the SHA-256 its manifest recorded for that input (``consumed_sha256``).
Exit code: 0 every stage pass/warn, 1 a stage failed, 2 invalid configuration.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stage:
    name: str
    case: str
    what: str


STAGES: List[Stage] = [
    Stage("wall_loads", "load_transfer/files/round_trip", "extract + validate the wall-loads file"),
    Stage("operator", "load_transfer/kratos_operator", "build the conservative operator of the Kratos top face"),
    Stage("export", "load_transfer/kratos_export", "cavitation-kratos-export with the operator's surface"),
    Stage("kratos_elastic", "load_transfer/kratos_dynamic", "elastic Kratos MPM vs scikit-fem"),
    Stage("fenicsx", "load_transfer/dolfinx_static", "Kratos / DOLFINx / scikit-fem comparison"),
]
PLASTICITY = "plasticity"
PLASTICITY_STAGE = Stage(PLASTICITY, "load_transfer/kratos_plasticity", "elasto-plastic Kratos MPM (after the MVP gates)")
ALL_STAGES: List[Stage] = [*STAGES, PLASTICITY_STAGE]


@dataclass(frozen=True)
class Handover:
    """The product of stage ``source`` (the one file ``*suffix`` in its run directory) handed to
    ``target`` as ``case.params.<param>`` (``++`` when the key is new to the target's case)."""

    source: str
    suffix: str
    target: str
    overrides: tuple  # format strings; {path} is the product's absolute path


WALL = ".wall-loads.v1.h5"
OPERATOR = ".operator.npz"
KRATOS_LOADS = ".kratos-loads.v1.h5"
HANDOVERS: List[Handover] = [
    Handover("wall_loads", WALL, "operator", ("case.params.source.kind=file", "++case.params.source.path={path}")),
    Handover("wall_loads", WALL, "export", ("case.params.source.kind=file", "++case.params.source.path={path}")),
    Handover("operator", OPERATOR, "export", ("++case.params.operator_file={path}",)),
    Handover("wall_loads", WALL, "kratos_elastic", ("case.params.source.kind=file", "++case.params.source.path={path}")),
    Handover("export", KRATOS_LOADS, "kratos_elastic", ("++case.params.loads_file={path}",)),
    Handover("export", KRATOS_LOADS, "fenicsx", ("++case.params.loads_file={path}",)),
    Handover("export", KRATOS_LOADS, PLASTICITY, ("++case.params.loads_file={path}",)),
]


@dataclass
class StageResult:
    name: str
    case: str
    verdict: str
    exit_code: int
    status: str
    message: Optional[str]
    run_dir: Optional[str]
    mlflow_run_id: Optional[str]
    seconds: float
    gates: Dict[str, str] = field(default_factory=dict)
    key_metrics: Dict[str, float] = field(default_factory=dict)
    manifest_sha256: Optional[str] = None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def product(run_dir: Path, suffix: str) -> Path:
    """The one file ``*suffix`` a stage wrote into its run directory (ValueError otherwise)."""
    files = sorted(Path(run_dir).glob(f"*{suffix}"))
    if len(files) != 1:
        raise ValueError(f"expected one *{suffix} in {run_dir}, found {len(files)}")
    return files[0].resolve()


def t_run_cut(wall_loads: Path, kratos_cfg) -> List[str]:
    """``case.params.t_run`` cut to the wall-loads file's last time (minus 1e-9 relative, so the last
    step edge t0 + N dt stays inside the span despite round-off) when the case's is longer."""
    import h5py

    with h5py.File(wall_loads, "r") as f:
        t_last = float(f["time"][-1])
    t_run = float(kratos_cfg.case.params.t_run)
    return [f"case.params.t_run={t_last * (1.0 - 1e-9)!r}"] if t_run >= t_last else []


def _manifest_sha(run_dir: Optional[str], path: str, section: str) -> Optional[str]:
    """The SHA-256 the stage's manifest recorded for ``path`` in ``inputs`` or ``outputs``."""
    if not run_dir:
        return None
    man = Path(run_dir) / "manifest.json"
    if not man.is_file():
        return None
    recs = json.loads(man.read_text()).get(section, [])
    for rec in recs:
        rp = Path(rec.get("path", ""))
        full = rp if rp.is_absolute() else Path(run_dir) / rp
        if full.resolve() == Path(path).resolve():
            return rec.get("sha256")
    return None


def _overrides_by_stage(sets: Sequence[str]) -> Dict[str, List[str]]:
    names = {s.name for s in ALL_STAGES}
    out: Dict[str, List[str]] = {s.name: [] for s in ALL_STAGES}
    for item in sets:
        stage, sep, ov = item.partition(":")
        if not sep or stage not in names or "=" not in ov:
            raise ValueError(f"--set {item!r}: must be STAGE:KEY=VALUE with STAGE one of {sorted(names)}")
        out[stage].append(ov)
    return out


def run_workflow(*, sets: Sequence[str] = (), tracking: bool = True, outputs: Optional[str] = None,
                 wall_source: str = "synthetic") -> Dict:
    """Run the stages; returns the workflow record (also written to ``workflow.json``).

    wall_source: "synthetic" (the stages above) or "cfd" / "cfd-amr": the wall-loads stage is the CFD
    run, after the spherical verification when no baseline of it is accepted
    (:mod:`harness.families.load_transfer_workflow_cfd`)."""
    from harness.core.api import run_case
    from harness.core.atomic import atomic_write_text
    from harness.core.compose import compose
    from harness.core.context import HarnessInputError
    from harness.metrics import gates as G

    t0 = time.perf_counter()
    per_stage = _overrides_by_stage(sets)
    base_overrides = [] if tracking else ["tracking=none"]
    # stage "config": compose everything first (an invalid override is exit 2 before any run)
    cfgs = {}
    for st in ALL_STAGES:
        try:
            cfgs[st.name] = compose([f"+case={st.case}", *base_overrides, *per_stage[st.name]])
        except HarnessInputError as exc:
            raise HarnessInputError(f"stage {st.name} ({st.case}): {exc}") from exc
    first = cfgs[STAGES[0].name]
    from harness.families.load_transfer_workflow_cfd import elastic_study_overrides
    from harness.families.load_transfer_workflow_cfd import stages as cfd_stages

    run_stages = cfd_stages(wall_source, STAGES, Stage, str(first.tracking.uri) if tracking and first.tracking.enabled else None)
    for st in run_stages:
        if st not in ALL_STAGES:
            try:
                cfgs[st.name] = compose([f"+case={st.case}", *base_overrides, *per_stage.get(st.name, [])])
            except HarnessInputError as exc:
                raise HarnessInputError(f"stage {st.name} ({st.case}): {exc}") from exc
    out_dir = Path(outputs or first.paths.outputs) / "workflows" / datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    out_dir.mkdir(parents=True, exist_ok=True)
    uri = parent = None
    if tracking and first.tracking.enabled:
        from harness.tracking import records as T

        uri = str(first.tracking.uri)
        exp = T.ensure_experiment(uri, T.experiment_name(str(first.tracking.experiment_prefix), "load_transfer"),
                                  first.tracking.get("artifact_root"))
        parent = T.start_run(uri, exp, "load_transfer/workflow", tags={"workflow": "seed-000"})
    results: List[StageResult] = []
    handovers: List[Dict] = []
    extra: Dict[str, List[str]] = {s.name: [] for s in ALL_STAGES}
    stopped_at, reason = None, None

    def run_stage(st: Stage) -> StageResult:
        s0 = time.perf_counter()
        out = run_case(st.case, overrides=[*base_overrides, *per_stage.get(st.name, []), *extra.setdefault(st.name, [])],
                       tracking_uri=None,
                       parent_run_id=parent)
        man = Path(out.run_dir) / "manifest.json" if out.run_dir else None
        sha = hashlib.sha256(man.read_bytes()).hexdigest() if man is not None and man.is_file() else None
        res = StageResult(name=st.name, case=st.case, verdict=out.verdict, exit_code=out.exit_code, status=out.status,
                          message=out.message, run_dir=str(out.run_dir) if out.run_dir else None,
                          mlflow_run_id=out.mlflow_run_id, seconds=time.perf_counter() - s0, gates=dict(out.gates),
                          key_metrics={k: out.metrics[k] for k in out.key_metrics if k in out.metrics},
                          manifest_sha256=sha)
        results.append(res)
        log.info("stage %s (%s): %s", st.name, st.case, out.verdict)
        for h in handovers:  # what this stage recorded for the files handed to it
            if h["to"] == st.name:
                h["consumed_sha256"] = _manifest_sha(res.run_dir, h["file"], "inputs")
        return res

    def hand_over(st: Stage, res: StageResult) -> Optional[str]:
        """Pass the products of ``st`` to their consumers; the reason when a product is missing."""
        for h in (h for h in HANDOVERS if h.source == st.name):
            try:
                path = product(Path(res.run_dir), h.suffix)
            except ValueError as exc:
                return f"hand-over to {h.target}: {exc}"
            ovs = [o.format(path=path) for o in h.overrides]
            if h.target == "kratos_elastic" and h.suffix == WALL:
                ovs += t_run_cut(path, cfgs["kratos_elastic"])
                ovs += elastic_study_overrides(path, cfgs["kratos_elastic"])  # levels resolving the rise
            extra[h.target].extend(ovs)
            handovers.append({"file": str(path), "sha256": _sha256(path), "from": st.name, "to": h.target,
                              "produced_sha256": _manifest_sha(res.run_dir, str(path), "outputs"),
                              "overrides": ovs, "consumed_sha256": None})
        return None

    for st in run_stages:
        res = run_stage(st)
        if res.verdict == G.FAIL or res.exit_code != 0:
            failed = sorted(k for k, v in res.gates.items() if v == G.FAIL)
            stopped_at = st.name
            reason = res.message or f"gates failed: {', '.join(failed)}"
            break
        problem = hand_over(st, res)
        if problem:
            stopped_at, reason = st.name, problem
            break
    all_passed = stopped_at is None
    plasticity: Dict[str, Any] = {"name": PLASTICITY, "enabled": all_passed, "case": PLASTICITY_STAGE.case}
    if all_passed:  # seed: "only if all MVP gates pass: enable plasticity case"
        res = run_stage(PLASTICITY_STAGE)
        plasticity.update(status=res.verdict, run_dir=res.run_dir, exit_code=res.exit_code)
        if res.verdict == G.FAIL or res.exit_code != 0:
            stopped_at = PLASTICITY
            reason = res.message or "gates failed: " + ", ".join(sorted(k for k, v in res.gates.items() if v == G.FAIL))
    else:
        plasticity["status"] = f"skipped: stage {stopped_at} failed"
    ok = stopped_at is None
    verdict = G.worst(r.verdict for r in results) if ok else G.FAIL
    ran = {r.name for r in results}
    record = {
        "workflow": "seed-000", "created_utc": datetime.now(timezone.utc).isoformat(),
        "command": [sys.executable, "-m", "harness.families.load_transfer_workflow", *sys.argv[1:]],
        "sets": list(sets), "verdict": verdict, "exit_code": G.exit_code(verdict),
        "stopped_at": stopped_at, "stop_reason": reason,
        "stages": [r.__dict__ for r in results],
        "not_run": [s.name for s in run_stages if s.name not in ran], "wall_source": wall_source, "plasticity": plasticity, "handovers": handovers,
        "seconds": time.perf_counter() - t0, "parent_run_id": parent, "tracking_uri": uri,
        "directory": str(out_dir),
    }
    atomic_write_text(out_dir / "workflow.json", json.dumps(record, indent=2, default=str))
    if parent is not None:
        from harness.tracking import records as T

        metrics = {f"stage.{r.name}.pass": float(r.verdict != G.FAIL) for r in results}
        metrics["stages_run"] = float(len(results))
        tags = {"verdict": verdict, "stopped_at": stopped_at or "", "stop_reason": (reason or "")[:5000],
                "plasticity": str(plasticity["status"])}
        T.log_batch(uri, parent, metrics=metrics, tags=tags)
        T.log_artifacts(uri, parent, out_dir)
        T.end_run(uri, parent, "FINISHED" if ok else "FAILED")
    return record


def main(argv: Optional[Sequence[str]] = None) -> int:
    from harness.core.context import HarnessInputError

    ap = argparse.ArgumentParser(prog="python -m harness.families.load_transfer_workflow",
                                 description="The seed-000 workflow as stages under one parent MLflow run.")
    ap.add_argument("--set", action="append", default=[], metavar="STAGE:KEY=VALUE",
                    help="an override for one stage's case (repeatable)")
    ap.add_argument("--no-tracking", action="store_true", help="no MLflow records (the run directories stay)")
    ap.add_argument("--wall-source", default="synthetic", choices=["synthetic", "cfd", "cfd-amr"],
                    help="the wall-loads stage: synthetic extraction, or the CFD run (PyClaw / AMRClaw)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        rec = run_workflow(sets=args.set, tracking=not args.no_tracking, wall_source=args.wall_source)
    except (HarnessInputError, ValueError) as exc:
        print(f"load_transfer workflow: INVALID: {str(exc).splitlines()[0]}")
        return 2
    for st in rec["stages"]:
        print(f"{st['name']:<15} {st['case']:<40} {st['verdict'].upper()}")
    for name in rec["not_run"]:
        print(f"{name:<15} {'(not run: stopped at ' + str(rec['stopped_at']) + ')':<40} -")
    if not rec["plasticity"]["enabled"]:
        print(f"{PLASTICITY:<15} {rec['plasticity']['status']}")
    print(f"workflow  {rec['verdict'].upper()}  {rec['directory']}/workflow.json")
    return int(rec["exit_code"])


if __name__ == "__main__":
    sys.exit(main())
