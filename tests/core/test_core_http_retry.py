"""A kept-alive connection that the tracking server dropped is retried on a new one.

uvicorn (MLflow's server) closes a kept-alive connection after 5 s idle; a client that reuses it
at that moment gets "Remote end closed connection without response" (seen in
bench/tracking_server). The server below answers MLflow's get-experiment-by-name call on every
new connection and drops the connection without answering the second request on it, exactly
that failure, deterministically. With the harness's HTTP settings the client's second call
succeeds on a fresh connection; with no retry (the earlier setting) it fails.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BODY = json.dumps({"experiment": {"experiment_id": "7", "name": "e", "artifact_location": "/tmp/a",
                                  "lifecycle_stage": "active"}}).encode()


def _serve(listener: socket.socket, stop: threading.Event, log: list) -> None:
    listener.settimeout(0.2)
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        threading.Thread(target=_connection, args=(conn, log), daemon=True).start()


def _connection(conn: socket.socket, log: list) -> None:
    with conn:
        for n in (1, 2):
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            log.append(n)
            if n == 2:  # the second request on a kept-alive connection: dropped unanswered
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n"
                         + f"Content-Length: {len(BODY)}\r\n\r\n".encode() + BODY)


CLIENT = """
import sys
{setup}
from mlflow.tracking import MlflowClient
c = MlflowClient(sys.argv[1])
for _ in range(2):
    print(c.get_experiment_by_name("e").experiment_id, flush=True)
"""


def _client(uri: str, setup: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_HTTP")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-c", CLIENT.format(setup=setup), uri], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)


def test_a_dropped_kept_alive_connection_is_retried_on_a_new_one():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    uri = f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop, log = threading.Event(), []
    server = threading.Thread(target=_serve, args=(listener, stop, log), daemon=True)
    server.start()
    try:
        ours = _client(uri, "import harness.tracking  # its HTTP settings")
        assert ours.returncode == 0, ours.stderr[-2000:]
        assert ours.stdout.split() == ["7", "7"]
        assert log.count(2) == 1  # the second call did meet the dropped connection, then a new one
        log.clear()
        bare = _client(uri, "import os; os.environ['MLFLOW_HTTP_REQUEST_MAX_RETRIES'] = '0'")
        assert bare.returncode != 0 and "Remote end closed connection without response" in bare.stderr
    finally:
        stop.set()
        server.join(timeout=5)
        listener.close()
