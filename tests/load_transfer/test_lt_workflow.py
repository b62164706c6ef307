"""The seed-000 workflow as stages under one parent MLflow run (issue 15)."""
from __future__ import annotations

import hashlib
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
    # the wall-loads file of stage 1 is handed to the Kratos stage (recorded even though it never ran)
    (h,) = rec["handovers"]
    assert (h["from"], h["to"]) == ("wall_loads", "kratos_elastic")
    assert Path(h["file"]).parent == Path(rec["stages"][0]["run_dir"]).resolve()
    assert h["sha256"] == hashlib.sha256(Path(h["file"]).read_bytes()).hexdigest()
    assert h["overrides"][:2] == ["case.params.source.kind=file", f"++case.params.source.path={h['file']}"]
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
    # the Kratos stage ran on the handed-over wall-loads file (its manifest hashes the same bytes)
    (h,) = rec["handovers"]
    kratos = next(s for s in rec["stages"] if s["name"] == "kratos_elastic")
    manifest = json.loads((Path(kratos["run_dir"]) / "manifest.json").read_text())
    assert h["file"] in json.dumps(manifest) and h["sha256"] in json.dumps(manifest)


def test_a_file_source_without_an_existing_file_is_invalid_input(tmp_path):
    from harness.api import run_case

    for extra in ([], [f"++case.params.source.path={tmp_path / 'missing.wall-loads.v1.h5'}"]):
        out = run_case("load_transfer/kratos_static", overrides=["tracking=none", "case.params.source.kind=file", *extra])
        assert out.exit_code == 2 and "case.params.source.path" in out.message
