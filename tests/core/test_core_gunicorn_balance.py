"""harness.gunicorn_balance: the shared table of requests in flight, and a real gunicorn (threaded
workers) with the hooks, serving two clients that keep their connections alive."""
from __future__ import annotations

import http.client
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.launch import gunicorn_balance as gb
from tests.conftest import free_port, stop_group

ROOT = Path(__file__).resolve().parents[2]
LATE_S = 1.5  # [s] the second worker starts this much later: both clients connect to the first
APP = '''
import os, time

try:  # the first worker to load the app serves at once, the second starts LATE_S later
    os.close(os.open(os.environ["TINY_APP_MARKER"], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
except FileExistsError:
    time.sleep(float(os.environ["TINY_APP_LATE_S"]))

def app(environ, start_response):
    time.sleep(0.15)
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
'''


def test_hand_off_only_when_busy_here_and_another_worker_idles():
    other = subprocess.Popen(["sleep", "60"])  # a live process standing for a second worker
    me, slot_me, slot_other = os.getpid(), None, None
    try:
        slot_me, slot_other = gb.claim_slot(me), gb.claim_slot(other.pid)
        assert slot_me is not None and slot_other is not None and slot_me != slot_other
        assert not gb.should_hand_off(slot_me, 1)  # serving only this request: keep the connection
        assert gb.should_hand_off(slot_me, 2)  # busy here, the other worker idles
        gb._in_flight[slot_other] = 1
        assert not gb.should_hand_off(slot_me, 2)  # every worker busy: moving gains nothing
        gb._in_flight[slot_other] = 0
        gb.release_slot(slot_other, other.pid)
        assert not gb.should_hand_off(slot_me, 2)  # a free slot is no idle worker
    finally:
        other.kill()
        other.wait()
        gb.release_slot(slot_me, me)
        gb.release_slot(slot_other, other.pid)


def test_a_dead_workers_slot_is_claimed_again():
    dead = subprocess.Popen(["true"])
    dead.wait()
    slot = gb.claim_slot(dead.pid)
    gb._in_flight[slot] = 3  # it died serving requests
    again = gb.claim_slot(os.getpid())
    try:
        assert again == slot and gb._owner[slot] == os.getpid() and gb._in_flight[slot] == 0
    finally:
        gb.release_slot(again, os.getpid())
    assert gb._owner[slot] == 0


def _serve(tmp_path: Path, hooks: bool):
    (tmp_path / "tiny_app.py").write_text(APP)
    port = free_port()
    cmd = [sys.executable, "-m", "gunicorn", "--worker-class", "gthread", "--threads", "2", "--workers", "2",
           "--keep-alive", "5", "-b", f"127.0.0.1:{port}", "--chdir", str(tmp_path), "tiny_app:app"]
    if hooks:
        cmd[3:3] = ["-c", "python:harness.gunicorn_balance"]
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               TINY_APP_MARKER=str(tmp_path / "first-worker"), TINY_APP_LATE_S=str(LATE_S))
    log = tmp_path / "gunicorn.log"  # a file, not a pipe nobody reads while the server runs
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline:  # until the first worker answers (the second is still starting)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/")
            conn.getresponse().read()
            conn.close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    stop_group(proc)
    raise AssertionError(f"gunicorn did not start: {log.read_text()[-2000:]}")


def _two_clients(port: int, requests: int):
    """Two threads, each on its own kept-alive connection (a new one after "Connection: close");
    per client a list of (start, end, worker pid, closed)."""
    out = {0: [], 1: []}
    start = threading.Barrier(2)

    def client(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        start.wait()
        for _ in range(requests):
            t0 = time.monotonic()
            conn.request("GET", "/")
            resp = conn.getresponse()
            pid = int(resp.read())
            closed = (resp.getheader("Connection") or "").lower() == "close"
            assert resp.status == 200
            out[k].append((t0, time.monotonic(), pid, closed))
            if closed:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(len(v) == requests for v in out.values())
    return out


@pytest.mark.parametrize("hooks", [False, True], ids=["plain", "hooks"])
def test_gunicorn_threaded_workers_spread_two_kept_alive_clients(tmp_path, hooks):
    proc, port = _serve(tmp_path, hooks)
    try:
        out = _two_clients(port, requests=24)  # 3.6 s: the second worker is up after about LATE_S
    finally:
        stop_group(proc)
    closes = [(k, r) for k in (0, 1) for r in out[k] if r[3]]
    first = out[0][0][2]
    assert out[1][0][2] == first  # both connected while only the first worker served
    if not hooks:  # plain gunicorn keeps both connections on the worker that took them
        assert closes == []
        assert {r[2] for k in (0, 1) for r in out[k]} == {first}
        return
    assert closes  # the first worker served both while the second idled: one client was moved
    for k, (t0, t1, pid, _) in closes:  # closed only while the same worker served the other client too
        assert any(p == pid and s < t1 and e > t0 for s, e, p, _ in out[1 - k]), (k, t0, pid)
    # every close moved a client afresh, so they end up on different workers and stay there
    tail = [{r[2] for r in out[k][-3:]} for k in (0, 1)]
    assert len(tail[0]) == len(tail[1]) == 1 and tail[0] != tail[1], out
    assert not any(r[3] for k in (0, 1) for r in out[k][-3:])
    assert len({r[2] for k in (0, 1) for r in out[k]}) == 2
