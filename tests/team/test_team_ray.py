"""A two-node Ray cluster on loopback recording to the PostgreSQL-backed server.

Head and worker node are separate `ray start --block` processes (their own ports, one CPU
each, token authentication with a token made for the test). Sweeps go through
`hydra/launcher=ray_cluster` (SPREAD scheduling, max_retries=2, callback harness.ray_attempts).
Which node ran a job is read from the job's `ray_attempts.json` (Ray node id, pid, raylet
pid) and the `worker` pid the runner stores in `tracking.json`.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from mlflow.tracking import MlflowClient

pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason='pip install -e ".[scale]"')


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _children(pid: int):
    """Pids of the live processes whose parent is ``pid``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if _ppid(int(d.name)) == pid:
                    out.append(int(d.name))
            except (OSError, ValueError, IndexError):
                continue
    return out


def _kill_node(node: subprocess.Popen, raylet: int) -> None:
    """SIGKILL a whole Ray node: its `ray start` group and the raylet's worker processes (which
    may sit in a process group of their own)."""
    workers = _children(raylet)
    os.killpg(node.pid, signal.SIGKILL)
    for pid in workers:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    node.wait(timeout=30)


def _start_node(sc_py: str, args, env, log: Path, cwd: Path) -> subprocess.Popen:
    with open(log, "w") as fh:
        return subprocess.Popen([str(Path(sc_py).parent / "ray"), "start", "--block", "--num-cpus=1",
                                 "--node-ip-address=127.0.0.1", "--object-store-memory=80000000",
                                 "--disable-usage-stats", *args],
                                cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)


def _raylet_of(node: subprocess.Popen, deadline_s: float = 120.0) -> int:
    """The pid of the raylet that the `ray start` process started."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if node.poll() is not None:
            raise RuntimeError(f"ray node exited ({node.returncode})")
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    if _ppid(int(d.name)) == node.pid and "raylet" in (d / "comm").read_text():
                        return int(d.name)
                except (OSError, ValueError, IndexError):
                    continue
        time.sleep(0.5)
    raise RuntimeError("no raylet appeared")


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory, tm):
    """Head (GCS, 1 CPU) and a second node (1 CPU) as separate processes; stopped at the end."""
    base = tmp_path_factory.mktemp("ray")
    port = tm.free_port()
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_OUTPUTS", "RAY_ADDRESS")}
    # node death is noticed within ~2 s (defaults: tens of seconds)
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_health_check_period_ms="500", RAY_health_check_timeout_ms="1000",
               RAY_health_check_failure_threshold="3", RAY_health_check_initial_delay_ms="1000", **auth)
    temp = Path("/tmp") / f"rayt{port}"  # short: Ray's unix socket paths are length-limited
    (base / "head").mkdir()
    (base / "worker").mkdir()
    head = _start_node(tm.PY, ["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={temp}",
                               f"--node-manager-port={tm.free_port()}", f"--object-manager-port={tm.free_port()}"],
                       env, base / "head.log", base / "head")
    nodes = [head]
    try:
        head_raylet = _raylet_of(head)
        worker = _start_node(tm.PY, [f"--address=127.0.0.1:{port}", f"--node-manager-port={tm.free_port()}",
                                     f"--object-manager-port={tm.free_port()}"],
                             env, base / "worker.log", base / "worker")
        nodes.append(worker)
        worker_raylet = _raylet_of(worker)
        yield SimpleNamespace(port=port, address=f"127.0.0.1:{port}", auth=auth, head=head, worker=worker,
                              head_raylet=head_raylet, worker_raylet=worker_raylet, base=base)
    finally:
        for node in reversed(nodes):
            tm.stop_group(node, grace_s=5.0)
        shutil.rmtree(temp, ignore_errors=True)


def _attempts(sweep: Path, n: int):
    return [json.loads((sweep / str(j) / "ray_attempts.json").read_text()) for j in range(n)]


def _ray_sweep(tm, ray_cluster, uri, out, n, hold_s, extra=()):
    return subprocess.Popen(
        [tm.PY, "-m", "harness", "-m", "hydra/launcher=ray_cluster",
         f"hydra.launcher.ray.init.address={ray_cluster.address}",
         "+hydra.launcher.ray.init._node_ip_address=127.0.0.1",  # the driver on loopback too
         f"+case={tm.JOB}",
         f"case.params.job=range(0,{n})", f"case.params.hold_s={hold_s}", "tracking=server", f"tracking.uri={uri}",
         *extra],
        cwd=tm.ROOT, env=dict(os.environ, HARNESS_OUTPUTS=str(out), CI="1", **ray_cluster.auth),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_two_ray_nodes_share_a_sweep_and_every_record_reaches_the_server(team_stack, ray_cluster, tmp_path, tm):
    out = tmp_path / "outputs"
    n = 4
    proc = _ray_sweep(tm, ray_cluster, team_stack.uri, out, n, hold_s=1.0)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
    assert f"study sweep  PASS  jobs={n} failed=0" in stdout
    (sweep,) = tm.sweeps(out)
    got = tm.check_sweep(sweep, team_stack.uri, n)
    attempts = _attempts(sweep, n)
    assert all(len(a) == 1 for a in attempts)  # nothing was re-run
    raylets = {a[0]["raylet_pid"] for a in attempts}
    assert raylets == {ray_cluster.head_raylet, ray_cluster.worker_raylet}, raylets  # both nodes ran jobs
    assert len({a[0]["node_id"] for a in attempts}) == 2
    for j, a in enumerate(attempts):  # the runner's worker record is the Ray worker process of that node
        worker = json.loads((sweep / str(j) / "tracking.json").read_text())["worker"]
        assert worker["pid"] == a[0]["pid"] and worker["pid"] != os.getpid()
    tags = got["parent"].data.tags
    assert tags["ray.nodes"] == "2" and tags["ray.retried_jobs"] == "0"


# a reduced part of suite=fast in CI (every family, a warn verdict among them); the whole suite
# with HARNESS_FULL=1
SUITE_CASES = ["integrators/orego_ros2", "examples/pendulum", "load_transfer/sign",
               "load_transfer/files/round_trip", "vessel/frames", "vessel/static_wind", "beam/cantilever_tip_load",
               "dem/hertz_sphere_sphere", "integrators/rlc6_cvode", "integrators/hires_ros2"]


def _junit_results(path: Path):
    """{(classname, name): result} of a JUnit file read with junitparser (pass/failure/error/skipped)."""
    from junitparser import JUnitXml

    out = {}
    for suite in JUnitXml.fromfile(str(path)):
        for case in suite:
            kinds = sorted(type(r).__name__.lower() for r in case.result)
            out[(case.classname, case.name)] = kinds[0] if kinds else "pass"
    return out


def test_a_suite_on_the_two_node_cluster_matches_a_local_run(team_stack, ray_cluster, tmp_path, tm):
    """`suite=fast tracking=server hydra/launcher=ray_cluster` on the two nodes: the same verdicts
    and exit codes per case, the same JUnit results and counts as the same suite run locally into
    its own sqlite store; both nodes ran cases; the server holds the suite parent with one
    finished child per case."""
    select = [] if tm.FULL else [f"suite.select.cases=[{','.join(SUITE_CASES)}]"]
    local = tm.harness(["suite=fast", *select], tmp_path / "local", timeout=1800)
    remote_out = tmp_path / "cluster"
    (line,) = tm.readme_block("suite")  # the README's command, as written (+ the CI selection)
    env = dict(os.environ, HARNESS_OUTPUTS=str(remote_out), CI="1", MLFLOW_PORT=str(team_stack.mlflow_port),
               RAY_ADDRESS=ray_cluster.address, **ray_cluster.auth)
    remote = subprocess.run(" ".join([line.replace("python ", f"{tm.PY} ", 1), *(f"'{a}'" for a in select)]),
                            shell=True, executable="/bin/bash", cwd=tm.ROOT, env=env, capture_output=True, text=True,
                            timeout=1800)
    assert "Traceback" not in remote.stderr, remote.stderr[-3000:]
    assert remote.returncode == local.returncode, (local.stdout[-2000:], remote.stdout[-2000:], remote.stderr[-2000:])
    (ldir,) = (tmp_path / "local" / "suites" / "fast").iterdir()
    (rdir,) = (remote_out / "suites" / "fast").iterdir()
    ls, rs = (json.loads((d / "suite.json").read_text()) for d in (ldir, rdir))
    n = len(SUITE_CASES) if not tm.FULL else ls["counts"]["cases"]
    assert ls["counts"] == rs["counts"] and ls["counts"]["cases"] == n
    verdicts = {r["case"]: (r["verdict"], r["exit_code"], r["status"]) for r in ls["rows"]}
    assert {r["case"]: (r["verdict"], r["exit_code"], r["status"]) for r in rs["rows"]} == verdicts
    assert {v[0] for v in verdicts.values()} >= {"pass", "warn"}  # not a comparison of passes only
    assert _junit_results(ldir / "junit.xml") == _junit_results(rdir / "junit.xml")
    assert len(_junit_results(rdir / "junit.xml")) == n
    # both nodes ran cases (the Ray attempt record of each job)
    raylets = {json.loads(f.read_text())[-1]["raylet_pid"] for f in rdir.glob("*/ray_attempts.json")}
    assert raylets == {ray_cluster.head_raylet, ray_cluster.worker_raylet}, raylets
    client = MlflowClient(team_stack.uri)
    parent, kids = tm.children(client, rs["parent_run_id"])
    assert parent.info.status == ("FAILED" if rs["exit_code"] else "FINISHED")
    assert parent.data.tags["mlflow.runName"] == "suite:fast" and parent.data.metrics["n_cases"] == n
    recorded = [r for r in rs["rows"] if r["mlflow_run_id"]]
    assert len(kids) == len(recorded) and len(recorded) >= n - 1  # an invalid config may leave no run
    assert sorted(k.info.run_id for k in kids) == sorted(r["mlflow_run_id"] for r in recorded)
    for k in kids:
        assert k.info.status in ("FINISHED", "FAILED") and k.data.tags.get("verdict")
    tm.write_artifact("team_ray_suite.json", {"cases": n, "counts": rs["counts"], "exit_code": rs["exit_code"],
                                              "local_wall_s": ls["wall_s"], "cluster_wall_s": rs["wall_s"],
                                              "raylets": sorted(raylets)})


def test_killing_the_worker_node_mid_sweep_reruns_its_jobs_on_the_head(team_stack, ray_cluster, tmp_path, tm):
    """SIGKILL of the worker node (its raylet and workers) while it runs a job: Ray re-runs the
    job (max_retries=2; a dead worker is a system failure, retried) on the head, the only node
    left; the parent records it (ray.retried_jobs), every job has exactly one run, and what was
    recorded before the kill is unchanged."""
    out = tmp_path / "outputs"
    n = 4
    proc = _ray_sweep(tm, ray_cluster, team_stack.uri, out, n, hold_s=2.0)
    try:
        deadline = time.monotonic() + 300
        victim, before = None, {}
        # kill when a second-wave job (started after the first wave's 2 s hold) is still holding on
        # the worker node, i.e. after earlier jobs were recorded and well before it records itself
        while time.monotonic() < deadline and proc.poll() is None and victim is None:
            for sweep in tm.sweeps(out):
                for f in sweep.glob("*/tracking.json"):
                    rec = json.loads(f.read_text())
                    if rec["state"] == "sent":
                        before[int(f.parent.name)] = rec["run_id"]
                found = {}
                for f in sweep.glob("*/ray_attempts.json"):
                    try:
                        found[int(f.parent.name)] = json.loads(f.read_text())
                    except ValueError:
                        continue
                if not found:
                    continue
                t_first = min(a[0]["start"] for a in found.values() if a)
                for job, a in found.items():
                    last = a[-1]
                    if (before and last["raylet_pid"] == ray_cluster.worker_raylet and job not in before
                            and last["start"] >= t_first + 2.0 and time.time() - last["start"] < 1.2):
                        victim = job
            time.sleep(0.05)
        assert victim is not None, "no job in flight on the worker node after a recorded one"
        (sweep,) = tm.sweeps(out)
        _kill_node(ray_cluster.worker, ray_cluster.worker_raylet)  # the whole node: ray start, raylet, workers
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            tm.stop_group(proc)
    assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
    assert f"study sweep  PASS  jobs={n} failed=0" in stdout
    got = tm.check_sweep(sweep, team_stack.uri, n)  # one finished run per job, all metrics, parent complete
    attempts = _attempts(sweep, n)
    va = attempts[victim]
    assert before and victim not in before
    assert len(va) == 2 and va[0]["raylet_pid"] == ray_cluster.worker_raylet
    assert va[1]["raylet_pid"] == ray_cluster.head_raylet  # re-run on the node left
    worker = json.loads((sweep / str(victim) / "tracking.json").read_text())["worker"]
    assert worker["pid"] == va[1]["pid"]  # the record is the re-run's
    retried = [j for j, a in enumerate(attempts) if len(a) > 1]
    tags = got["parent"].data.tags
    assert tags["ray.retried_jobs"] == str(len(retried))
    assert f"job {victim}:" in tags["ray.retried"]
    for job, run_id in before.items():  # nothing recorded before the kill is lost or replaced
        assert got["outcomes"][job]["mlflow_run_id"] == run_id
        assert MlflowClient(team_stack.uri).get_run(run_id).info.status == "FINISHED"
    tm.write_artifact("team_ray_kill.json", {"victim_job": victim, "attempts": attempts, "parent_tags": {
        k: v for k, v in tags.items() if k.startswith("ray.")}, "recorded_before_kill": before})


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("HARNESS_FULL") != "1", reason="a third Ray node and sweep: HARNESS_FULL=1 only")
def test_without_retries_a_job_lost_with_its_node_fails_the_sweep_and_keeps_earlier_records(
        team_stack, ray_cluster, tmp_path, tm):
    """max_retries=0: the job on the killed node cannot be re-run; the launcher raises, the
    sweep stops, the parent run ends FAILED with the reason in tag `error`, and every run
    recorded before the kill stays FINISHED."""
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_OUTPUTS", "RAY_ADDRESS")}
    env.update(RAY_USAGE_STATS_ENABLED="0", **ray_cluster.auth)
    node = _start_node(tm.PY, [f"--address={ray_cluster.address}", f"--node-manager-port={tm.free_port()}",
                               f"--object-manager-port={tm.free_port()}"],
                       env, ray_cluster.base / "worker2.log", ray_cluster.base / "worker")
    try:
        raylet = _raylet_of(node)
        out = tmp_path / "outputs"
        proc = _ray_sweep(tm, ray_cluster, team_stack.uri, out, 4, hold_s=3.0,
                          extra=["hydra.launcher.ray.remote.max_retries=0"])
        try:
            deadline = time.monotonic() + 300
            victim = None
            while time.monotonic() < deadline and proc.poll() is None and victim is None:
                for f in out.glob("sweeps/*/*/*/*/ray_attempts.json"):
                    try:
                        a = json.loads(f.read_text())
                    except ValueError:
                        continue
                    if a and a[-1]["raylet_pid"] == raylet and not (f.parent / "outcome.json").exists():
                        victim = f.parent
                time.sleep(0.1)
            assert victim is not None, "no job started on the second node"
            _kill_node(node, raylet)
            stdout, stderr = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                tm.stop_group(proc)
    finally:
        tm.stop_group(node, grace_s=5.0)
    assert proc.returncode != 0, stdout[-2000:]
    (sweep,) = tm.sweeps(out)
    state = json.loads((sweep / "study_state.json").read_text())
    client = MlflowClient(team_stack.uri)
    parent, kids = tm.children(client, state["parent_run_id"])
    assert parent.info.status == "FAILED"
    assert "Error" in parent.data.tags["error"], parent.data.tags  # the Ray error that stopped the sweep
    assert not (victim / "tracking.json").exists()  # the lost job left no record
    for f in sweep.glob("*/tracking.json"):  # whatever was recorded stays, finished
        rec = json.loads(f.read_text())
        assert rec["state"] == "sent" and client.get_run(rec["run_id"]).info.status == "FINISHED"
    assert all(k.info.status == "FINISHED" for k in kids)
    tm.write_artifact("team_ray_lost.json", {"victim": str(victim), "parent_error": parent.data.tags["error"],
                                             "recorded": len(kids)})
