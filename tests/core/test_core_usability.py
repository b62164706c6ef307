"""The harness as a person meets it: input paths, file modes, interruption, help, stderr.

Each test runs the real CLI (a subprocess) or the real functions; none mocks MLflow.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cli(args, outputs: Path, cwd: Path = ROOT, timeout: float = 300, **kw):
    env = dict(os.environ, HARNESS_OUTPUTS=str(outputs))
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, **kw)


def last_run(outputs: Path, case: str) -> Path:
    return sorted((outputs / "runs" / case).iterdir())[-1]


# -- relative input paths: launch directory, then the files shipped with the harness ---------

def test_relative_data_file_is_found_in_the_launch_directory(tmp_path):
    launch = tmp_path / "elsewhere"
    launch.mkdir()
    shutil.copy(ROOT / "models/vessel/data/tanker.yaml", launch / "my.yaml")
    res = cli(["+case=vessel/static_wind", "tracking=none", "source.data_file=my.yaml"], tmp_path / "out", cwd=launch)
    assert res.returncode == 0, res.stdout + res.stderr
    manifest = json.loads((last_run(tmp_path / "out", "vessel/static_wind") / "manifest.json").read_text())
    assert [i["path"] for i in manifest["inputs"]] == [str(launch / "my.yaml")]
    assert manifest["config"]["source"]["data_file"] == "my.yaml"  # recorded as written


def test_shipped_file_is_the_fallback_and_a_missing_file_lists_the_places_tried(tmp_path):
    from harness.context import HarnessInputError
    from harness.inputs import find_input

    assert find_input("models/vessel/data/tanker.yaml", "source.data_file", base=tmp_path) == \
        ROOT / "models/vessel/data/tanker.yaml"
    (tmp_path / "models/vessel/data").mkdir(parents=True)
    (tmp_path / "models/vessel/data/tanker.yaml").write_text("mine")
    assert find_input("models/vessel/data/tanker.yaml", "source.data_file", base=tmp_path) == \
        tmp_path / "models/vessel/data/tanker.yaml"  # the launch directory comes first
    with pytest.raises(HarnessInputError) as err:
        find_input("no/such.yaml", "source.data_file", base=tmp_path)
    assert str(err.value) == (f"source.data_file: file 'no/such.yaml' not found; tried {tmp_path}/no/such.yaml "
                              f"(launch directory), {ROOT}/no/such.yaml (files shipped with the harness)")


def test_wall_loads_path_is_resolved_in_the_shared_place(tmp_path):
    from harness.compose import compose
    from harness.inputs import resolve_input_paths

    (tmp_path / "x.wall-loads.v1.h5").write_bytes(b"")
    cfg = compose(["+case=load_transfer/uniform_pressure", "source=wall_loads_file", "source.path=x.wall-loads.v1.h5"])
    assert resolve_input_paths(cfg, base=tmp_path) == [tmp_path / "x.wall-loads.v1.h5"]
    assert cfg.source.path == str(tmp_path / "x.wall-loads.v1.h5")
