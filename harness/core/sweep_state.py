"""The state file of a sweep directory: ``study_state.json`` (a study, harness.studies.aggregate)
or ``suite_state.json`` (a suite, harness.suites.suite): tracking URI, parent run id, job count."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional

STATE_FILES = ("study_state.json", "suite_state.json")


def state_file(sweep_dir: Path | str) -> Optional[Path]:
    """The sweep's state file (the study's first), or None when it has none."""
    for name in STATE_FILES:
        f = Path(sweep_dir) / name
        if f.is_file():
            return f
    return None


def read_state(sweep_dir: Path | str) -> Optional[Dict[str, Any]]:
    """The sweep's state as a dict, or None without a state file."""
    f = state_file(sweep_dir)
    return json.loads(f.read_text()) if f is not None else None
