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


def _handovers_verified(rec: dict, consumed: bool = True) -> None:
    """Every hand-over: the file's SHA-256 now = the producer's manifest output = (when the consumer
    ran) the consumer's manifest input; the file lies in the producer's run directory."""
    run_dirs = {s["name"]: Path(s["run_dir"]).resolve() for s in rec["stages"]}
    for h in rec["handovers"]:
        assert Path(h["file"]).parent == run_dirs[h["from"]], h
        assert h["sha256"] == hashlib.sha256(Path(h["file"]).read_bytes()).hexdigest() == h["produced_sha256"], h
        if consumed:
            assert h["consumed_sha256"] == h["sha256"], h


def test_a_failed_gate_stops_the_later_stages_with_the_reason_on_the_parent_run(harness_env):
    """The operator stage on a top face wider than the wall's rings: its surface-area gate fails."""
    from harness.tracking import records as T
    from harness.families.load_transfer_workflow import run_workflow

    rec = run_workflow(sets=["operator:case.params.body.radius=0.012"])
    assert rec["exit_code"] == 1 and rec["verdict"] == "fail"
    assert [s["name"] for s in rec["stages"]] == ["wall_loads", "operator"]
    assert [s["verdict"] for s in rec["stages"]] == ["pass", "fail"]
    assert rec["stopped_at"] == "operator" and rec["stop_reason"] == "gates failed: surface_area_error"
    assert rec["not_run"] == ["export", "kratos_elastic", "fenicsx"] and rec["plasticity"]["enabled"] is False
    assert rec["plasticity"]["status"] == "skipped: stage operator failed"
    assert all(len(s["manifest_sha256"]) == 64 for s in rec["stages"])
    # the wall-loads file of stage 1 is handed to its three consumers; the operator stage read exactly it
    assert [(h["from"], h["to"]) for h in rec["handovers"]] == [
        ("wall_loads", "operator"), ("wall_loads", "export"), ("wall_loads", "kratos_elastic")]
    _handovers_verified({**rec, "handovers": rec["handovers"][:1]})
    assert [h["consumed_sha256"] for h in rec["handovers"][1:]] == [None, None]  # never ran
    h = rec["handovers"][0]
    assert h["overrides"] == ["case.params.source.kind=file", f"++case.params.source.path={h['file']}"]
    assert json.loads((Path(rec["directory"]) / "workflow.json").read_text())["stopped_at"] == "operator"
    c = T.client(rec["tracking_uri"])
    parent = c.get_run(rec["parent_run_id"])
    assert parent.info.status == "FAILED" and parent.data.tags["stopped_at"] == "operator"
    assert parent.data.metrics["stage.operator.pass"] == 0.0 and parent.data.metrics["stages_run"] == 2.0
    kids = c.search_runs([parent.info.experiment_id],
                         filter_string=f"tags.`mlflow.parentRunId` = '{rec['parent_run_id']}'")
    assert sorted(k.info.run_name for k in kids) == sorted(s.case for s in STAGES[:2])


@pytest.mark.slow
def test_every_stage_passes_each_hands_its_product_on_and_plasticity_runs(tmp_path):
    """The README's command, as written: every stage passes, every hand-over is the same bytes on
    both sides, and the plasticity stage runs (and passes) after the MVP gates."""
    readme = (Path(__file__).resolve().parents[2] / "models/load_transfer/kratos/README.md").read_text()
    assert "\n  python -m harness.families.load_transfer_workflow\n" in readme
    proc = _run([], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    rec = _record(tmp_path)
    assert [s["name"] for s in rec["stages"]] == [s.name for s in STAGES] + ["plasticity"]
    assert [s["verdict"] for s in rec["stages"]] == ["pass"] * (len(STAGES) + 1)
    assert {k: rec["plasticity"][k] for k in ("name", "enabled", "status")} == {
        "name": "plasticity", "enabled": True, "status": "pass"}
    assert "plasticity      load_transfer/kratos_plasticity          PASS" in proc.stdout
    _handovers_verified(rec)
    pairs = [(h["from"], h["to"]) for h in rec["handovers"]]
    assert pairs == [("wall_loads", "operator"), ("wall_loads", "export"), ("wall_loads", "kratos_elastic"),
                     ("operator", "export"), ("export", "kratos_elastic"), ("export", "fenicsx"),
                     ("export", "plasticity")]
    # one kratos-point-loads file, written by the export stage, read by the three Kratos stages
    kl = {h["file"] for h in rec["handovers"] if h["from"] == "export"}
    assert len(kl) == 1 and next(iter(kl)).endswith(".kratos-loads.v1.h5")
    stage = {s["name"]: s for s in rec["stages"]}
    for name in ("kratos_elastic", "fenicsx", "plasticity"):
        man = json.loads((Path(stage[name]["run_dir"]) / "manifest.json").read_text())
        assert any(r["path"] == next(iter(kl)) for r in man["inputs"]), name
    # the export's normal forces are the operator's, and the operator stage's file is what it used
    assert stage["export"]["key_metrics"]["operator_mismatch"] <= 1e-12
    assert stage["plasticity"]["key_metrics"]["residual_ratio"] > 0.05


def test_a_file_source_without_an_existing_file_is_invalid_input(tmp_path):
    from harness.core.api import run_case

    for extra in ([], [f"++case.params.source.path={tmp_path / 'missing.wall-loads.v1.h5'}"]):
        out = run_case("load_transfer/kratos_static", overrides=["tracking=none", "case.params.source.kind=file", *extra])
        assert out.exit_code == 2 and "case.params.source.path" in out.message
