"""The seed-000 workflow as stages under one parent MLflow run (issue 15)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.families.load_transfer_workflow import STAGES, main


def _run(args, outputs: Path):
    """The command as a user types it (``python`` = this interpreter first on PATH)."""
    env = dict(os.environ, HARNESS_OUTPUTS=str(outputs), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    cmd = " ".join(["python -m harness.families.load_transfer_workflow", *args])
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, env=env, timeout=900)


def _record(outputs: Path) -> dict:
    return json.loads(next((outputs / "workflows").glob("*/workflow.json")).read_text())


def test_invalid_stage_override_is_exit_2_before_any_run(tmp_path, capsys):
    assert main(["--no-tracking", "--set", "kratos_elastic:case.params.nope=1"]) == 2
    assert "INVALID: stage kratos_elastic (load_transfer/kratos_dynamic)" in capsys.readouterr().out
    assert main(["--no-tracking", "--set", "bogus:x=1"]) == 2


def test_a_failed_gate_stops_the_later_stages_with_the_reason_on_the_parent_run(harness_env):
    """The operator stage on a surface that does not cover the disk: its closed-form gates fail."""
    from harness import tracking as T
    from harness.families.load_transfer_workflow import run_workflow

    rec = run_workflow(sets=["operator:operator.surface.cover=inscribe"])
    assert rec["exit_code"] == 1 and rec["verdict"] == "fail"
    assert [s["name"] for s in rec["stages"]] == ["wall_loads", "operator"]
    assert [s["verdict"] for s in rec["stages"]] == ["pass", "fail"]
    assert rec["stopped_at"] == "operator" and rec["stop_reason"] == "gates failed: e_F_closed, e_J_closed"
    assert rec["not_run"] == ["export", "kratos_elastic", "fenicsx"] and rec["plasticity"]["enabled"] is False
    assert all(len(s["manifest_sha256"]) == 64 for s in rec["stages"])
    assert json.loads((Path(rec["directory"]) / "workflow.json").read_text())["stopped_at"] == "operator"
    c = T.client(rec["tracking_uri"])
    parent = c.get_run(rec["parent_run_id"])
    assert parent.info.status == "FAILED" and parent.data.tags["stopped_at"] == "operator"
    assert parent.data.metrics["stage.operator.pass"] == 0.0 and parent.data.metrics["stages_run"] == 2.0
    kids = c.search_runs([parent.info.experiment_id],
                         filter_string=f"tags.`mlflow.parentRunId` = '{rec['parent_run_id']}'")
    assert sorted(k.info.run_name for k in kids) == sorted(s.case for s in STAGES[:2])


@pytest.mark.slow
def test_every_stage_passes_and_plasticity_is_reported_not_implemented(tmp_path):
    """The README's command, as written."""
    readme = (Path(__file__).resolve().parents[2] / "models/load_transfer/kratos/README.md").read_text()
    assert "\n  python -m harness.families.load_transfer_workflow\n" in readme
    proc = _run([], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    rec = _record(tmp_path)
    assert [s["verdict"] for s in rec["stages"]] == ["pass"] * len(STAGES)
    assert {k: rec["plasticity"][k] for k in ("name", "enabled", "status")} == {
        "name": "plasticity", "enabled": True, "status": "not_implemented"}
    assert "explicit-only" in rec["plasticity"]["reason"]
    assert "plasticity      not_implemented" in proc.stdout
