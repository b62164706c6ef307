"""The seed-000 workflow starting from a CFD run (issue 33).

``python -m harness.families.load_transfer_workflow --wall-source cfd`` (or ``cfd-amr``) replaces the
synthetic wall-loads stage by the seed's CFD stages:

  verification  load_transfer/cfd_spherical, run only when the tracking store holds no accepted
                baseline of it (seed: "run basilisk spherical verification if baseline is absent";
                without tracking it always runs)
  wall_loads    load_transfer/cfd_workflow_source (PyClaw) or cfd_workflow_source_amr (AMRClaw):
                the rigid-wall blast scaled to the Kratos body (R0 4 mm, H 10 mm, wall loads on
                r <= 10 mm, 24 us), with checkpoint/restart, extraction and the validated
                wall-loads file, handed to the operator, export and Kratos stages as before.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import List, Optional

log = logging.getLogger(__name__)

WALL_SOURCES = {"synthetic": None, "cfd": "load_transfer/cfd_workflow_source",
                "cfd-amr": "load_transfer/cfd_workflow_source_amr"}
VERIFICATION_CASE = "load_transfer/cfd_spherical"


def baseline_exists(uri: Optional[str], case: str) -> bool:
    """True when the store at ``uri`` holds an accepted run of ``case`` (False without a store)."""
    if not uri:
        return False
    from harness.core.regression import _may_have_baseline, accepted_runs

    if not _may_have_baseline(uri, case):
        return False
    from mlflow.tracking import MlflowClient

    return bool(accepted_runs(MlflowClient(tracking_uri=uri), case))


def stages(wall_source: str, base: List, stage_cls, uri: Optional[str]) -> List:
    """The workflow's stages for ``wall_source``: ``base`` unchanged for 'synthetic'."""
    if wall_source not in WALL_SOURCES:
        raise ValueError(f"--wall-source: {wall_source!r} is not one of {sorted(WALL_SOURCES)}")
    case = WALL_SOURCES[wall_source]
    if case is None:
        return list(base)
    out = []
    if baseline_exists(uri, VERIFICATION_CASE):
        log.info("spherical verification: accepted baseline present, not run")
    else:
        out.append(stage_cls("verification", VERIFICATION_CASE, "spherical verification (no accepted baseline)"))
    out.append(stage_cls("wall_loads", case, "CFD rigid-wall run with restart -> extraction -> validated wall-loads file"))
    out.extend(s for s in base if s.name != "wall_loads")
    return out


def elastic_study_overrides(wall_loads: Path, kratos_cfg) -> List[str]:
    """Overrides of the elastic Kratos stage so that its convergence study resolves the wall force's
    rise (:func:`models.load_transfer.load_rise.study_levels`): more levels when the pair of levels its
    order is measured on takes fewer than 8 steps per rise time, and one empty grid row above the body
    (the top load points that move up stay in the finer grids). Nothing for a slow source (synthetic)."""
    from harness.families.load_transfer_kratos import KratosParams, size_scale
    from models.load_transfer.contracts.wall_loads import read_wall_loads
    from models.load_transfer.load_rise import rise_time, study_levels

    p = kratos_cfg.case.params
    levels = int(p.get("levels", 1))
    if str(p.get("solver", "dynamic")) != "dynamic" or levels < 2:
        return []
    wl = read_wall_loads(wall_loads)
    t_run = min(float(p.t_run), float(wl.time[-1]))
    scale = size_scale(p.get("full_scale", KratosParams.full_scale))
    dt0 = t_run / (int(p.n_steps) * scale)
    keep = wl.time <= t_run * (1.0 + 1e-9)
    rise = rise_time(wl.time[keep], wl.force[keep])
    n = study_levels(rise, dt0, levels)
    if n == levels:
        return []
    log.info("elastic stage: wall force rise %.3g s = %.1f level-0 steps: %d levels instead of %d", rise,
             rise / dt0, n, levels)
    return [f"case.params.levels={n}", "++case.params.grid_margin_rows=1"]
