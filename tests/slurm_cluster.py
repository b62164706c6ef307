"""A single-node Slurm cluster with accounting, started from nothing in one directory.

    python tests/slurm_cluster.py start DIR   # prints `export SLURM_CONF=DIR/slurm.conf`
    python tests/slurm_cluster.py stop DIR    # stops every daemon by the PID it recorded

Starts, as root and without systemd, with every file under DIR and on free loopback ports:
munged (key, socket, pid), a MariaDB server (``--skip-grant-tables``, loopback only), slurmdbd
(real accounting: ``sacct`` is what submitit reads job states with), slurmctld and slurmd for
one node ``localhost`` with this machine's CPUs and memory, partition ``debug``, scheduling
events batched for 1 s (:data:`SCHEDULER`). It returns once ``sinfo`` shows the node idle. DIR/cluster.json lists the daemons' PIDs. Needs Debian's
``slurm-wlm slurmdbd munge mariadb-server``.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

PARTITION = "debug"
NODE = "localhost"
# Slurm defers the scheduling pass that an event (a submission, a job's end) triggers by
# batch_sched_delay (default 3 s, a throughput setting for clusters taking many submissions a
# second): one array task at a time would then start at most every 3 s, whatever the job costs.
# 1 s, the smallest delay that still batches events, as a cluster tuned for short jobs sets it.
SCHEDULER = "SchedulerParameters=batch_sched_delay=1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(cmd: List[str], log: Path, env: Dict[str, str]) -> int:
    with open(log, "ab") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    return proc.pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of this process counts as gone
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def _wait(what: str, ok, timeout_s: float, logs: List[Path], pids: List[int] = ()) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ok():
            return
        for pid in pids:
            if not _alive(pid):
                break
        else:
            time.sleep(0.1)
            continue
        break
    tails = "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-2000:]}" for p in logs if p.is_file())
    raise RuntimeError(f"slurm cluster: {what} not ready after {timeout_s} s\n{tails}")


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 - 512
    return 1024


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.write_text(text)
    os.chmod(path, mode)


def _configs(d: Path, ports: Dict[str, int], cpus: int) -> None:
    sock = d / "munge" / "munge.socket"
    _write(d / "slurmdbd.conf", f"""AuthType=auth/munge
AuthInfo=socket={sock}
DbdHost=localhost
DbdPort={ports['dbd']}
SlurmUser=root
PidFile={d}/run/slurmdbd.pid
LogFile={d}/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports['mysql']}
StorageUser=root
StorageLoc=slurm_acct_db
""", 0o600)
    _write(d / "slurm.conf", f"""ClusterName=harness
SlurmctldHost=localhost
SlurmctldPort={ports['ctld']}
SlurmdPort={ports['slurmd']}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort={ports['dbd']}
AccountingStoragePass={sock}
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
OverTimeLimit=0
MinJobAge=300
MessageTimeout=10
{SCHEDULER}
NodeName={NODE} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={_memory_mb()} State=UNKNOWN
PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
""")


def _sinfo_idle(env: Dict[str, str]) -> bool:
    res = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=env, capture_output=True, text=True)
    return res.returncode == 0 and res.stdout.strip() == "idle"


def _sacct_ok(env: Dict[str, str]) -> bool:
    res = subprocess.run(["sacct", "-n", "-X", "-S", "now"], env=env, capture_output=True, text=True)
    return res.returncode == 0


def start(directory: str | os.PathLike) -> Dict[str, object]:
    """Start the cluster in ``directory`` (created); returns the state also written to cluster.json."""
    d = Path(directory).resolve()
    for sub in ("munge", "mysql", "run", "log", "state", "spool"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o755)
    os.chmod(d / "munge", 0o755)
    ports = {k: _free_port() for k in ("mysql", "dbd", "ctld", "slurmd")}
    cpus = os.cpu_count() or 1
    _configs(d, ports, cpus)
    env = dict(os.environ, SLURM_CONF=str(d / "slurm.conf"))
    pids: Dict[str, int] = {}
    state = {"dir": str(d), "slurm_conf": str(d / "slurm.conf"), "ports": ports, "pids": pids,
             "partition": PARTITION, "node": NODE, "cpus": cpus}

    def save() -> None:
        (d / "cluster.json").write_text(json.dumps(state, indent=2))

    try:
        key = d / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        log = d / "log"
        pids["munged"] = _spawn(["munged", "-F", "--force", f"--key-file={key}",
                                 f"--socket={d}/munge/munge.socket", f"--pid-file={d}/munge/munged.pid",
                                 f"--seed-file={d}/munge/munged.seed", f"--log-file={log}/munged.log"],
                                log / "munged.out", env)
        save()
        subprocess.run(["mariadb-install-db", f"--datadir={d}/mysql", "--user=root", "--skip-test-db",
                        "--auth-root-authentication-method=normal"], env=env, check=True,
                       stdout=open(log / "mariadb-install.log", "wb"), stderr=subprocess.STDOUT)
        pids["mariadbd"] = _spawn(["mariadbd", "--no-defaults", f"--datadir={d}/mysql", "--user=root",
                                   f"--socket={d}/run/mysqld.sock", f"--pid-file={d}/run/mysqld.pid",
                                   "--bind-address=127.0.0.1", f"--port={ports['mysql']}",
                                   "--skip-grant-tables", "--innodb-buffer-pool-size=32M",
                                   f"--log-error={log}/mariadb.log"], log / "mariadb.out", env)
        save()
        _wait("munged", lambda: (d / "munge" / "munge.socket").exists(), 20, [log / "munged.log"],
              [pids["munged"]])
        _wait("mariadb", lambda: _port_open(ports["mysql"]), 60, [log / "mariadb.log"], [pids["mariadbd"]])
        pids["slurmdbd"] = _spawn(["slurmdbd", "-D"], log / "slurmdbd.out",
                                  dict(env, SLURM_CONF=str(d / "slurm.conf")))
        save()
        _wait("slurmdbd", lambda: _port_open(ports["dbd"]), 60, [log / "slurmdbd.log", log / "slurmdbd.out"],
              [pids["slurmdbd"]])
        pids["slurmctld"] = _spawn(["slurmctld", "-D", "-i"], log / "slurmctld.out", env)
        save()
        _wait("slurmctld", lambda: _port_open(ports["ctld"]), 30, [log / "slurmctld.log", log / "slurmctld.out"],
              [pids["slurmctld"]])
        pids["slurmd"] = _spawn(["slurmd", "-D", "-N", NODE], log / "slurmd.out", env)
        save()
        _wait("the node", lambda: _sinfo_idle(env), 60, [log / "slurmd.log", log / "slurmctld.log"],
              [pids["slurmd"], pids["slurmctld"]])
        _wait("accounting (sacct)", lambda: _sacct_ok(env), 30, [log / "slurmdbd.log"])
    except BaseException:
        stop(d)
        raise
    return state


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _stop_pid(pid: int, grace_s: float) -> None:
    if not pid or not _alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.05)


def stop(directory: str | os.PathLike, grace_s: float = 15.0) -> None:
    """Stop every daemon recorded in DIR/cluster.json by its PID (SIGTERM, then SIGKILL)."""
    f = Path(directory) / "cluster.json"
    if not f.is_file():
        return
    pids = json.loads(f.read_text())["pids"]
    for name in ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"):
        _stop_pid(pids.get(name), grace_s)


def stop_accounting(directory: str | os.PathLike) -> None:
    """Stop slurmdbd alone (``sacct`` then fails; slurmctld keeps the queue and its records)."""
    pids = json.loads((Path(directory) / "cluster.json").read_text())["pids"]
    _stop_pid(pids.get("slurmdbd"), 15.0)


def start_accounting(directory: str | os.PathLike, timeout_s: float = 60.0) -> None:
    """Start slurmdbd again (after :func:`stop_accounting`) and wait until ``sacct`` answers."""
    d = Path(directory).resolve()
    state = json.loads((d / "cluster.json").read_text())
    env = dict(os.environ, SLURM_CONF=str(d / "slurm.conf"))
    pid = _spawn(["slurmdbd", "-D"], d / "log" / "slurmdbd.out", env)
    state["pids"]["slurmdbd"] = pid
    (d / "cluster.json").write_text(json.dumps(state, indent=2))
    _wait("slurmdbd", lambda: _port_open(state["ports"]["dbd"]), timeout_s, [d / "log" / "slurmdbd.log"], [pid])
    _wait("accounting (sacct)", lambda: _sacct_ok(env), timeout_s, [d / "log" / "slurmdbd.log"])
    # slurmctld sends its records to the new slurmdbd: a probe job shows up in sacct, ended
    res = subprocess.run(["sbatch", "--parsable", "-J", "accounting-probe", "-o", "/dev/null", "--wrap", "true"],
                         env=env, capture_output=True, text=True, check=True)
    probe = res.stdout.strip().split(";")[0]
    _wait("the probe job in accounting", lambda: _sacct_state(env, probe) == "COMPLETED", timeout_s,
          [d / "log" / "slurmdbd.log", d / "log" / "slurmctld.log"])


def _sacct_state(env: Dict[str, str], job_id: str) -> str:
    res = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"], env=env, capture_output=True,
                         text=True)
    return res.stdout.strip().split(" ")[0] if res.returncode == 0 else ""


def main(argv: List[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    if argv[0] == "start":
        state = start(argv[1])
        print(f"export SLURM_CONF={state['slurm_conf']}")
    else:
        stop(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
