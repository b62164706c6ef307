"""The README's "Run it on a Slurm cluster": every command is one the tests run as written.

The study, suite, resume and benchmark commands are run by the tests of this folder with the same
arguments (the suite at full size with HARNESS_FULL=1, else on its beam cases; the benchmark with
HARNESS_FULL=1); this module checks that the README shows exactly those, runs
the cluster script's start and stop commands as written, and composes every launcher setting the
README shows.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import yaml

STUDY_CMD = ("python -m harness -m +case=integrators/linear_ros2 +study=integrators/fixed_step_order "
             "hydra/launcher=slurm")
SUITE_CMD = "python -m harness suite=fast hydra/launcher=slurm"
RESUME_CMD = "python -m harness resume SWEEP_DIR_OR_PARENT_RUN_ID"
BENCH_CMD = "python -m harness +case=bench/slurm_overhead"
START_CMD = "python tests/slurm_cluster.py start /tmp/slurm-cluster"
STOP_CMD = "python tests/slurm_cluster.py stop /tmp/slurm-cluster"


def section(sl) -> str:
    text = (sl.ROOT / "README.md").read_text()
    start = text.index("## Run it on a Slurm cluster")
    return text[start:text.index("\n## ", start + 10)]


def test_readme_shows_the_commands_the_tests_run(sl):
    text = section(sl)
    shown = re.findall(r"`(python [^`]*)`", text)
    assert shown == [STUDY_CMD, SUITE_CMD, RESUME_CMD, START_CMD, STOP_CMD, BENCH_CMD]
    # the tests' own arguments are these commands'
    assert STUDY_CMD == " ".join(["python -m harness -m", *sl.STUDY, "hydra/launcher=slurm"])
    assert "export SLURM_CONF=/tmp/slurm-cluster/slurm.conf" in text


def test_readme_cluster_script_starts_and_stops_as_written(sl, slurm):
    env = dict(os.environ)
    env.pop("SLURM_CONF", None)
    start = subprocess.run(shlex.split(START_CMD.replace("python", sys.executable, 1)), cwd=sl.ROOT, env=env,
                           capture_output=True, text=True, timeout=180)
    try:
        assert start.returncode == 0, start.stderr[-3000:]
        assert start.stdout.strip() == "export SLURM_CONF=/tmp/slurm-cluster/slurm.conf"
        env["SLURM_CONF"] = "/tmp/slurm-cluster/slurm.conf"
        info = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], env=env, capture_output=True, text=True)
        assert info.stdout.split() == ["localhost", "idle"]
        assert subprocess.run(["sacct", "-n", "-X"], env=env, capture_output=True).returncode == 0
    finally:
        stop = subprocess.run(shlex.split(STOP_CMD.replace("python", sys.executable, 1)), cwd=sl.ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
    assert stop.returncode == 0, stop.stderr
    import json

    pids = json.loads(open("/tmp/slurm-cluster/cluster.json").read())["pids"]
    for pid in pids.values():  # every daemon is gone
        assert not os.path.exists(f"/proc/{pid}") or "Z" in open(f"/proc/{pid}/stat").read().split()[2]


def test_readme_launcher_settings_compose(sl, tmp_path):
    text = section(sl)
    shown = re.findall(r"`('?\+?hydra\.launcher\.[^`]*)`", text)
    fragments = [x for f in shown for x in shlex.split(f) if "=" in x]
    assert len(fragments) >= 4
    res = sl.harness(["hydra/launcher=slurm", "+case=integrators/linear_ros2", *fragments,
                      "--cfg", "hydra", "-p", "hydra.launcher"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    launcher = yaml.safe_load(res.stdout)
    assert launcher["partition"] == "debug" and launcher["timeout_min"] == 30
    assert launcher["setup"] == ["module load python/3.11"]
    assert launcher["additional_parameters"] == {"mail-type": "END"}
    # the table lists every setting the launcher config has, with the defaults it has
    table = dict(re.findall(r"^\| `([a-z_]+)`[^|]*\| ([^|]+) \|", text, re.M))
    defaults = yaml.safe_load(sl.harness(["hydra/launcher=slurm", "+case=integrators/linear_ros2", "--cfg", "hydra",
                                          "-p", "hydra.launcher"], tmp_path).stdout)
    for key in ("timeout_min", "cpus_per_task", "mem_gb", "array_parallelism", "signal_delay_s", "poll_s",
                "unrunnable_after_s", "accounting_timeout_s"):
        assert float(table[key]) == float(defaults[key]), key
