"""Sweeps beyond one process: joblib (16 jobs, 2 workers) and a Ray head on loopback.

Every job must leave a child run under the sweep's parent with every metric, and the
study must count them all; the tracking target must reach workers through the job
config, not the launching process's environment.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient


METRICS = ("e_F", "e_J", "sign_violation", "F_M_max")


def children_of(client: MlflowClient, parent_id: str):
    parent = client.get_run(parent_id)
    return parent, client.search_runs([parent.info.experiment_id],
                                      filter_string=f"tags.mlflow.parentRunId = '{parent_id}'", max_results=1000)


def check_sweep(sweep: Path, uri: str, n: int):
    """Every job: outcome ok, a finished child run of the parent holding every metric."""
    state = json.loads((sweep / "study_state.json").read_text())
    assert state["n_jobs"] == n and state["tracking_uri"] == uri
    client = MlflowClient(uri)
    parent, children = children_of(client, state["parent_run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["n_jobs"] == str(n)
    assert parent.data.tags["n_failed"] == "0" and parent.data.tags["verdict"] == "pass"
    assert len(children) == n
    table = (sweep / "study" / "table.csv").read_text().splitlines()
    assert len(table) == n + 1
    outcomes = [json.loads((sweep / str(j) / "outcome.json").read_text()) for j in range(n)]
    assert sorted(o["mlflow_run_id"] for o in outcomes) == sorted(c.info.run_id for c in children)
    by_id = {c.info.run_id: c for c in children}
    for o in outcomes:
        assert o["status"] == "ok" and o["verdict"] == "pass"
        child = by_id[o["mlflow_run_id"]]
        assert child.info.status == "FINISHED"
        for m in METRICS:  # the stored value is the one the job computed
            assert child.data.metrics[m] == pytest.approx(o["metrics"][m], rel=0, abs=0)
    workers = {json.loads((sweep / str(j) / "tracking.json").read_text())["worker"]["pid"] for j in range(n)}
    return state, workers


def test_joblib_sixteen_jobs_over_two_workers_lose_no_run(tmp_path, sc):
    out = tmp_path / "outputs"
    res = sc.harness(["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *sc.SMALL, "source.n_rings=range(4,20)"],
                  out)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "study sweep  PASS  jobs=16 failed=0" in res.stdout
    assert res.stdout.count("load_transfer/sign  PASS") == 16
    sweep = sc.latest_sweep(out)
    _, workers = check_sweep(sweep, f"sqlite:///{out}/mlflow.db", 16)
    assert len(workers) == 2, workers  # two worker processes shared the sixteen jobs
    # the sweep's state went to the workers once (harness.joblib_shared), each job got its own config
    assert "launching 16 jobs (shared state" in res.stdout + res.stderr
    client = MlflowClient(f"sqlite:///{out}/mlflow.db")
    rings = []
    for j in range(16):
        job = yaml.safe_load((sweep / str(j) / ".hydra" / "config.yaml").read_text())
        assert (sweep / str(j) / ".hydra" / "hydra.yaml").is_file()
        run_id = json.loads((sweep / str(j) / "outcome.json").read_text())["mlflow_run_id"]
        assert client.get_run(run_id).data.params["source.n_rings"] == str(job["source"]["n_rings"])
        rings.append(job["source"]["n_rings"])
    assert sorted(rings) == list(range(4, 20))


def test_a_crashing_job_is_reported_and_the_study_still_ends(tmp_path, sc):
    """A job whose adapter cannot load fails; the other job is recorded; the study ends FAIL, exit 1."""
    out = tmp_path / "outputs"
    res = sc.harness(["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", *sc.SMALL, "source.n_rings=4",
                   "case.adapter=harness.families.load_transfer:run,harness.families.nowhere:run"], out)
    assert res.returncode == 2, res.stdout + res.stderr  # 2: one job had an invalid adapter
    assert "study sweep  FAIL  jobs=2 failed=1" in res.stdout
    sweep = sc.latest_sweep(out)
    client = MlflowClient(f"sqlite:///{out}/mlflow.db")
    state = json.loads((sweep / "study_state.json").read_text())
    parent, children = children_of(client, state["parent_run_id"])
    assert parent.info.status == "FAILED" and len(children) == 2
    assert sorted(c.data.tags["status"] for c in children) == ["invalid", "ok"]


@pytest.mark.slow
def test_ray_head_on_loopback_runs_the_sweep_with_an_explicit_tracking_target(tmp_path, sc):
    """The head and its workers run without HARNESS_OUTPUTS and in another directory: the
    outputs directory, tracking URI and parent run id must arrive inside each job's config."""
    port = sc.free_port()
    head_cwd = tmp_path / "head"
    head_cwd.mkdir()
    import secrets

    # token authentication with a token made for this test: independent of ~/.ray/auth_token
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_OUTPUTS", "RAY_ADDRESS")}
    env.update(RAY_USAGE_STATS_ENABLED="0", **auth)
    temp = Path("/tmp") / f"rayh{port}"  # short: Ray's unix socket paths are length-limited
    log = tmp_path / "head.log"
    with open(log, "w") as fh:
        head = subprocess.Popen(
            [str(Path(sc.PY).parent / "ray"), "start", "--head", "--block", f"--port={port}",
             "--node-ip-address=127.0.0.1", "--dashboard-host=127.0.0.1", "--include-dashboard=false",
             "--num-cpus=2", "--disable-usage-stats", f"--temp-dir={temp}"],
            cwd=head_cwd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out = tmp_path / "outputs"
        res = sc.harness(["-m", "hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address=127.0.0.1:{port}",
                       *sc.SMALL, "source.n_rings=4,8,12,16"], out, env=auth)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:] + log.read_text()[-2000:]
        assert "study sweep  PASS  jobs=4 failed=0" in res.stdout
        sweep = sc.latest_sweep(out)
        state, workers = check_sweep(sweep, f"sqlite:///{out}/mlflow.db", 4)
        cfg = (sweep / "0" / ".hydra" / "hydra.yaml").read_text()
        assert f"HARNESS_PARENT_RUN_ID={state['parent_run_id']}" in cfg
        assert f"++paths.outputs={out}" in (sweep / "0" / ".hydra" / "hydra.yaml").read_text() or \
            f"++paths.outputs={out}" in (sweep / "0" / ".hydra" / "overrides.yaml").read_text()
        assert not (head_cwd / "outputs").exists()  # nothing resolved against the workers' cwd
        assert workers and os.getpid() not in workers
    finally:
        sc.stop_group(head, grace_s=5.0)
        import shutil

        shutil.rmtree(temp, ignore_errors=True)


def test_slurm_launcher_config_extends_the_submitit_plugin(tmp_path, sc):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install hydra-submitit-launcher")
    res = sc.harness(["hydra/launcher=slurm", *sc.SMALL, "hydra.launcher.partition=debug", "--cfg", "hydra",
                      "-p", "hydra.launcher"], tmp_path)
    assert res.returncode == 0, res.stderr
    import yaml

    launcher = yaml.safe_load(res.stdout)
    assert launcher["_target_"] == "hydra_plugins.harness_slurm_launcher.HarnessSlurmLauncher"  # the plugin's, waiting our way
    from harness.launch.slurm_launcher import HarnessSlurmLauncher

    # by name, not identity: Hydra's plugin scan (Plugins._scan_all_plugins, loader.load_module) executes
    # the plugin's module again when another test of the session has scanned, making a second class object
    plugin = ("hydra_plugins.hydra_submitit_launcher.submitit_launcher", "SlurmLauncher")
    assert plugin in [(c.__module__, c.__name__) for c in HarnessSlurmLauncher.__mro__[1:]]
    assert launcher["poll_s"] == 1.0
    assert launcher["partition"] == "debug" and launcher["timeout_min"] == 60 and launcher["mem_gb"] == 4
    assert launcher["submitit_folder"] == "${hydra.sweep.dir}/.submitit/%j"


def test_a_sweep_stopped_by_a_bad_job_config_leaves_no_running_parent(tmp_path, sc):
    out = tmp_path / "outputs"
    res = sc.harness(["-m", *sc.SMALL, "source.n_rings=4,abc"], out)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "harness: error: source (conf/source/" in res.stderr and "n_rings: expected int, got 'abc'" in res.stderr
    client = MlflowClient(f"sqlite:///{out}/mlflow.db")
    exp = client.get_experiment_by_name("harness/load_transfer")
    (parent,) = client.search_runs([exp.experiment_id], filter_string="tags.kind = 'study'")
    assert parent.info.status == "FAILED" and "source.n_rings=abc" in parent.data.tags["error"]
