"""Wall-loads v1.1 file of a CFD run (issue 33): production metadata filled from the real run.

Clawpack has no Basilisk commit: ``basilisk_commit`` names the solver that made the file
(``clawpack <version> <variant>``) and the SHA-256 of the application sources that ran (our r-z
Euler sources: the PyClaw module or the AMRClaw Fortran application); ``exporter_commit`` is the
project commit (or the extraction module's source hash without git). The writer
(:func:`.contracts.wall_loads.write_wall_loads`) derives force and impulse, validates, marks
``complete`` last and renames atomically.
"""
from __future__ import annotations

import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np

from .cfd_setup import BlastSetup
from .extraction import WallLoadsExtractor


def exporter_commit(root: Optional[Path] = None) -> str:
    """``git rev-parse HEAD`` of the project (suffix ``+dirty`` with local changes), else the hash
    of the extraction sources."""
    root = root or Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "models"], cwd=root, capture_output=True, text=True,
                               check=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        from .cfd_pyclaw import source_sha256

        return "sha256:" + source_sha256("extraction", "cfd_wall", "cfd_export")


def production_metadata(setup: BlastSetup, ex: WallLoadsExtractor, *, solver: str, application_sha256: str,
                        compiler: str, command: str, delta_min: float, levels, study_id: str,
                        extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Every production field of metadata_json (schemas/wall-loads-v1.yaml) from a real run."""
    t = np.asarray(ex.times)
    cad = np.diff(t)
    meta: Dict[str, Any] = {
        "basilisk_commit": f"{solver}; application sha256 {application_sha256}",
        "exporter_commit": exporter_commit(),
        "compiler": compiler,
        "command": command,
        "R0": float(setup.R0),
        "H": float(setup.H),
        "gamma": float(setup.gamma),
        "reference_pressure": float(ex.p_ref),
        "levels": [int(v) for v in levels],
        "delta_min": float(delta_min),
        "output_cadence": float(np.median(cad)) if cad.size else 0.0,
        "convergence_study_id": study_id,
        "cfd_solver": solver,
        "cfd_application_sha256": application_sha256,
        "cfd_setup": asdict(setup),
        "extraction_max_area_error": float(ex.max_area_error),
    }
    meta.update(extra or {})
    return meta


def write_cfd_wall_loads(out: Path | str, ex: WallLoadsExtractor, *, case_id: str, metadata: Dict[str, Any],
                         configuration: str) -> Path:
    """Write the run's wall-loads file (production mode) and return its path."""
    return ex.write(out, case_id=case_id, metadata=metadata, configuration=configuration, mode="production")
