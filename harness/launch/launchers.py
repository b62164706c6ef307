"""The Hydra launchers a sweep can use here, for ``--help``: installed plugins only."""
from __future__ import annotations

import importlib.util
from typing import List, Tuple

# name, plugin module that must be importable, how to pick it (one line)
LAUNCHERS: Tuple[Tuple[str, str, str], ...] = (
    ("basic", "hydra", "the default: jobs one after another in this process"),
    ("joblib", "hydra_plugins.hydra_joblib_launcher",
     "hydra/launcher=joblib hydra.launcher.n_jobs=2  (parallel processes on this machine)"),
    ("ray", "hydra_plugins.hydra_ray_launcher", "hydra/launcher=ray  (a private local Ray started for the sweep)"),
    ("ray_cluster", "hydra_plugins.hydra_ray_launcher",
     "hydra/launcher=ray_cluster hydra.launcher.ray.init.address=HEAD:6379  (a running Ray cluster)"),
    ("slurm", "hydra_plugins.hydra_submitit_launcher",
     "hydra/launcher=slurm hydra.launcher.partition=PART tracking=server paths.outputs=/shared/outputs"),
)


def installed() -> List[Tuple[str, str]]:
    """(name, how to pick it) of every launcher whose plugin is importable."""
    out = []
    for name, module, how in LAUNCHERS:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if found:
            out.append((name, how))
    return out


def help_text() -> str:
    """The launcher lines of ``--help`` (add ``-m`` and the case to any of them)."""
    width = max(len(n) for n, _ in installed()) if installed() else 0
    lines = [f"  {name:<{width}}  {how}" for name, how in installed()]
    missing = [name for name, _, _ in LAUNCHERS if name not in {n for n, _ in installed()}]
    if missing:
        lines.append(f"  (not installed: {', '.join(missing)}; pip install -e \".[scale]\")")
    return "\n".join(lines)
