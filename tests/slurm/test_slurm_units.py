"""Units of the Slurm launcher and of resume that need no cluster."""
from __future__ import annotations

import os
import subprocess
import sys

from harness.launch import slurm_queue as Q


def test_sacct_rows_and_states_are_read_as_slurm_writes_them():
    assert Q._expand("12_[0-2,5]") == ["12_0", "12_1", "12_2", "12_5"]
    assert Q._expand("12_[3-4%1]") == ["12_3", "12_4"] and Q._expand("12_7") == ["12_7"]
    assert Q.base_state("CANCELLED by 0") == "CANCELLED" and Q.is_terminal("CANCELLED by 0")
    assert Q.is_terminal("TIMEOUT") and not Q.is_terminal("PENDING") and not Q.is_terminal("RUNNING")
    # squeue spells the drained-node reason with spaces, sacct with underscores: both are unrunnable
    assert Q.unrunnable("Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions")
    assert Q.unrunnable("Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions")
    assert Q.unrunnable("ReqNodeNotAvail, UnavailableNodes:localhost")
    assert not Q.unrunnable("Resources") and not Q.unrunnable("Priority") and not Q.unrunnable("")


def test_a_resumed_job_keeps_its_directory_number():
    from harness.launch.slurm_launcher import _subdir

    assert _subdir(0, ["+case=x", "hydra.sweep.subdir=3"]) == 3
    assert _subdir(2, ["+case=x", "k=1"]) == 2


def _in_subprocess(code: str, plain: str = "") -> str:
    env = dict(os.environ, HARNESS_PLAIN_PATHS=plain)
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout.strip()


def test_the_launcher_is_registered_and_falls_back_to_the_plugins_own():
    code = ("from hydra.core.plugins import Plugins\n"
            "from harness.launch import slurm_launcher as s\n"
            "name = s.register()\n"
            "print(name, Plugins.instance().class_name_to_class.get(s.NAME) is s.HarnessSlurmLauncher)")
    assert _in_subprocess(code) == "hydra_plugins.harness_slurm_launcher.HarnessSlurmLauncher True"
    # refused (HARNESS_PLAIN_PATHS): the config names the plugin's SlurmLauncher, the registry is left alone
    assert _in_subprocess(code, "slurm_launcher") == \
        "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher False"


def test_resume_says_why_when_its_sweeper_is_refused():
    code = ("from harness.launch import resume_sweeper as r\n"
            "try:\n    r.register()\nexcept r.ResumeUnavailable as e:\n    print('refused:', e)\n"
            "else:\n    print('registered')")
    assert _in_subprocess(code) == "registered"
    out = _in_subprocess(code, "resume_sweeper")
    assert out.startswith("refused: resume extends Hydra's basic sweeper") and "HARNESS_PLAIN_PATHS" in out


def test_sacct_that_fails_raises_accounting_error(tmp_path, monkeypatch):
    """sacct without a reachable accounting daemon exits non-zero: the launcher's waiting sees an
    AccountingError (counted against accounting_timeout_s), not an empty table."""
    import pytest

    (tmp_path / "slurm.conf").write_text("ClusterName=none\nSlurmctldHost=localhost\n"
                                         "AccountingStorageType=accounting_storage/slurmdbd\n"
                                         "AccountingStorageHost=127.0.0.1\nAccountingStoragePort=9\n")
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
    with pytest.raises(Q.AccountingError, match="sacct failed"):
        Q.job_table(["1_0"], timeout_s=30)
    assert Q.job_table([]) == {}  # nothing to ask: no call


def test_a_launcher_time_setting_that_is_not_positive_is_one_line_and_exit_2(tmp_path):
    """hydra.launcher.poll_s / unrunnable_after_s / accounting_timeout_s <= 0 (or not a number): exit 2,
    one line naming the key and the rule, before any job is submitted (no cluster needed)."""
    import math

    import pytest

    from harness.launch.slurm_launcher import _positive_seconds
    from tests.conftest import command_env

    for key, value in (("accounting_timeout_s", 0), ("unrunnable_after_s", math.nan), ("poll_s", "soon"),
                       ("poll_s", -math.inf)):
        with pytest.raises(ValueError, match=rf"^hydra\.launcher\.{key}: must be a positive number of seconds"):
            _positive_seconds(key, value)
    assert _positive_seconds("poll_s", "0.5") == 0.5
    db = f"sqlite:///{tmp_path / 'mlflow.db'}"  # the whole path once: Hydra instantiates the launcher
    res = subprocess.run([sys.executable, "-m", "harness", "-m", "hydra/launcher=slurm", "hydra.launcher.poll_s=-1",
                          "+case=integrators/vdpol_radau", f"tracking.uri={db}"], cwd=tmp_path, env=command_env(),
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 2, res.stderr[-2000:]
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert lines[-1] == "harness: error: hydra.launcher.poll_s: must be a positive number of seconds, got -1.0", lines
    assert "Traceback" not in res.stderr
    assert not list(tmp_path.glob("outputs/sweeps/**/.submitit"))  # nothing was submitted
