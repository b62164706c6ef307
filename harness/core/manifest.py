"""The run manifest: what ran, on what, from which inputs, producing which outputs."""
from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from harness.core.shipped import SHIPPED_ROOT

PROJECT_ROOT = SHIPPED_ROOT  # conf/ and examples/: the checkout, or harness/_shipped when installed
KEY_PACKAGES = ("numpy", "scipy", "h5py", "pandas", "pandera", "hydra-core", "omegaconf",
                "mlflow", "matplotlib", "scikit-sundae")
MANIFEST_VERSION = "1.0"


def canonical_json(obj: Any) -> str:
    """Key-sorted compact JSON: the form that config hashes are taken of."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def file_records(paths: Iterable[Path], root: Optional[Path] = None) -> List[Dict[str, Any]]:
    """SHA-256 and size of each existing file (missing files are reported as such)."""
    out = []
    for p in paths:
        p = Path(p)
        rec: Dict[str, Any] = {"path": str(p.relative_to(root)) if root and p.is_relative_to(root) else str(p)}
        if p.is_file():
            rec.update(sha256=sha256_file(p), size=p.stat().st_size)
        else:
            rec.update(sha256=None, size=None, missing=True)
        out.append(rec)
    return out


def git_state(root: Path = PROJECT_ROOT) -> Dict[str, Any]:
    """Commit and dirty flag of the project's work tree (``unknown`` outside git)."""
    def git(*args: str) -> Optional[str]:
        try:
            res = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return res.stdout.strip() if res.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit or "unknown", "dirty": bool(status) if status is not None else None}


def package_versions(names: Sequence[str] = KEY_PACKAGES) -> Dict[str, Optional[str]]:
    out: Dict[str, Optional[str]] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def platform_info() -> Dict[str, str]:
    return {"python": sys.version.split()[0], "implementation": platform.python_implementation(),
            "system": platform.system(), "release": platform.release(), "machine": platform.machine(),
            "node": platform.node()}


def build_manifest(*, case: str, command: Sequence[str], overrides: Sequence[str],
                   resolved_config: Mapping[str, Any], config_sha256: str,
                   inputs: Iterable[Path], outputs: Iterable[Path], run_dir: Path,
                   timings: Mapping[str, float], gates: Mapping[str, Any], verdict: str,
                   metrics: Mapping[str, float], info: Mapping[str, Any], status: str,
                   error: Optional[str] = None, git: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Assemble the manifest dictionary (see the architecture doc for its fields)."""
    return {
        "manifest_version": MANIFEST_VERSION,
        "created_utc": datetime.now(timezone.utc).isoformat(),
        "case": case,
        "status": status,
        "error": error,
        "verdict": verdict,
        "command": list(command),
        "overrides": list(overrides),
        "config": dict(resolved_config),
        "config_sha256": config_sha256,
        "git": dict(git) if git is not None else git_state(),
        "packages": package_versions(),
        "platform": platform_info(),
        "inputs": file_records(inputs, run_dir),
        "outputs": file_records(outputs, run_dir),
        "timings_s": dict(timings),
        "metrics": {name: {"value": float(v), **({"gate": gates[name]} if name in gates else {})}
                    for name, v in metrics.items()},
        "info": dict(info),
    }
