"""The harness on a real single-node Slurm cluster: a study and a suite, equal to a local run.

Each sweep is one Slurm job array; every job leaves its child run in the MLflow store, its
Slurm id, node, queue wait and run time in slurm.json, its manifest and its MLflow tags.
"""
from __future__ import annotations

import fnmatch
import json
import math
import subprocess
import xml.etree.ElementTree as ET

import pytest
from mlflow.tracking import MlflowClient

from harness.core.configs import RegressionConf
from tests.conftest import full_size

TIMINGS = [*RegressionConf().timing_patterns, "jit_warmup_s"]


def _study(sweep):
    return json.loads((sweep / "study" / "study.json").read_text())


def test_a_four_level_study_on_slurm_equals_the_local_run(tmp_path, sl, empty_queue, local_study):
    out_s = tmp_path / "slurm"
    res = sl.harness(["-m", *sl.STUDY, "hydra/launcher=slurm"], out_s)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "study integrators/fixed_step_order  PASS  jobs=4 failed=0" in res.stdout
    s_sweep = sl.latest_sweep(out_s)
    s, loc = _study(s_sweep), local_study
    # the observed order is gated as locally, and every number is the local one to round-off
    assert s["verdict"] == loc["verdict"] == "pass" and s["error_metric"]["order_gate"]["verdict"] == "pass"
    assert set(s["metrics"]) == set(loc["metrics"]) and "observed_order" in s["metrics"]
    for k, v in loc["metrics"].items():
        assert s["metrics"][k] == pytest.approx(v, rel=1e-12, abs=1e-15), k
    # one job array, one task per job, each job's Slurm record in its directory
    recs = [json.loads((s_sweep / str(j) / "slurm.json").read_text()) for j in range(4)]
    arrays = {r["job_id"].split("_")[0] for r in recs}
    assert len(arrays) == 1, arrays
    array = arrays.pop()
    assert [r["job_id"] for r in recs] == [f"{array}_{j}" for j in range(4)]
    for r in recs:
        assert r["state"] == "COMPLETED" and r["node"] == "localhost"
        assert r["queue_wait_s"] >= 0 and r["run_s"] >= 0
    # the sweep's HTML report shows them: one row per job with its Slurm id, state, node, wait and run time
    rep = subprocess.run([sl.PY, "-m", "harness.report", str(s_sweep)], cwd=sl.ROOT, capture_output=True, text=True,
                         timeout=120)
    assert rep.returncode == 0 and rep.stdout.strip() == str(s_sweep / "report.html"), rep.stderr[-2000:]
    html = (s_sweep / "report.html").read_text()
    assert "<h2>Slurm jobs</h2>" in html
    for j, r in enumerate(recs):
        assert (f'<tr><td>{j}</td><td><code>{r["job_id"]}</code></td><td>COMPLETED</td><td>localhost</td>'
                f'<td>{r["queue_wait_s"]:.1f}</td><td>{r["run_s"]:.1f}</td><td></td></tr>') in html, j
    assert (f'4 jobs; queue wait {sum(r["queue_wait_s"] for r in recs):.1f} s, run time '
            f'{sum(r["run_s"] for r in recs):.1f} s in all') in html
    # every record reached the store: the parent FINISHED with its four children, tagged with Slurm's data
    state = json.loads((s_sweep / "study_state.json").read_text())
    client = MlflowClient(state["tracking_uri"])
    parent = client.get_run(state["parent_run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["n_failed"] == "0"
    kids = client.search_runs([parent.info.experiment_id],
                              filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert len(kids) == 4
    by_job = {json.loads((s_sweep / str(j) / "outcome.json").read_text())["mlflow_run_id"]: j for j in range(4)}
    for kid in kids:
        j = by_job[kid.info.run_id]
        assert kid.info.status == "FINISHED"
        assert kid.data.tags["slurm.job_id"] == recs[j]["job_id"] and kid.data.tags["slurm.node"] == "localhost"
        assert float(kid.data.tags["slurm.queue_wait_s"]) >= 0 and float(kid.data.tags["slurm.run_s"]) > 0
        manifest = json.loads((s_sweep / str(j) / "manifest.json").read_text())
        assert manifest["slurm"]["job_id"] == recs[j]["job_id"] and manifest["slurm"]["node"] == "localhost"


def _suite(out):
    suite_dir = sorted((out / "suites").glob("*/*"))[-1]
    return suite_dir, json.loads((suite_dir / "suite.json").read_text())


def _junit(suite_dir):
    root = ET.parse(suite_dir / "junit.xml").getroot()
    return sorted((tc.get("classname", ""), tc.get("name"), tuple(sorted(ch.tag for ch in tc)))
                  for tc in root.iter("testcase"))


def test_suite_fast_on_slurm_equals_the_local_run(tmp_path, sl, empty_queue):
    """suite=fast (HARNESS_FULL=1; by default its six beam cases): the same counts,
    verdicts, metrics to round-off, JUnit and dashboard as the local run of the same suite."""
    sel = [] if full_size() else ["suite.select.families=[beam]"]
    out_s, out_l = tmp_path / "slurm", tmp_path / "local"
    res = sl.harness(["suite=fast", *sel, "hydra/launcher=slurm"], out_s, timeout=1800)
    local = sl.harness(["suite=fast", *sel], out_l, timeout=1800)
    assert res.returncode == local.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (d_s, s), (d_l, loc) = _suite(out_s), _suite(out_l)
    assert s["counts"] == loc["counts"] and s["counts"]["cases"] >= (60 if full_size() else 6)
    rows_s = {r["case"]: r for r in s["rows"]}
    rows_l = {r["case"]: r for r in loc["rows"]}
    assert set(rows_s) == set(rows_l)
    differ = []
    for case, r in rows_l.items():
        assert rows_s[case]["verdict"] == r["verdict"] and rows_s[case]["status"] == r["status"], case
        assert set(rows_s[case]["metrics"]) == set(r["metrics"]), case
        for m, v in r["metrics"].items():
            if any(fnmatch.fnmatchcase(m, p) for p in TIMINGS):
                continue  # timings differ from run to run (the regression gate's patterns, JIT warm-up)
            w = rows_s[case]["metrics"][m]
            if not ((math.isnan(v) and math.isnan(w)) or w == pytest.approx(v, rel=1e-9, abs=1e-12)):
                differ.append((case, m, v, w))
        assert rows_s[case]["slurm"]["state"] == "COMPLETED" and rows_s[case]["slurm"]["node"] == "localhost"
    assert differ == []
    assert _junit(d_s) == _junit(d_l)
    html = (d_s / "dashboard.html").read_text()
    for case in rows_s:
        assert case in html
    assert "Slurm job" in html and "queue wait" in html


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """A real `mlflow server` (sqlite backend) on 127.0.0.1, as a team would run one."""
    from tests.scale.conftest import running_mlflow_server

    base = tmp_path_factory.mktemp("server")
    with running_mlflow_server(base, base / "mlartifacts") as url:
        yield url


@pytest.mark.slow
@pytest.mark.skipif(not full_size(), reason="a tracking server besides the cluster: HARNESS_FULL=1 only")
def test_a_study_on_slurm_records_on_a_tracking_server(tmp_path, sl, empty_queue, local_study, mlflow_server):
    out = tmp_path / "out"
    res = sl.harness(["-m", *sl.STUDY, "hydra/launcher=slurm", "tracking=server", f"tracking.uri={mlflow_server}"], out)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    sweep = sl.latest_sweep(out)
    s = _study(sweep)
    for k, v in local_study["metrics"].items():
        assert s["metrics"][k] == pytest.approx(v, rel=1e-12, abs=1e-15), k
    state = json.loads((sweep / "study_state.json").read_text())
    assert state["tracking_uri"] == mlflow_server
    client = MlflowClient(mlflow_server)
    parent = client.get_run(state["parent_run_id"])
    kids = client.search_runs([parent.info.experiment_id],
                              filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert parent.info.status == "FINISHED" and len(kids) == 4
    assert all(k.info.status == "FINISHED" and k.data.tags["slurm.node"] == "localhost" for k in kids)
