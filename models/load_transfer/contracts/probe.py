"""Bounded first look at an HDF5 file: its structure is read in a child process with a time limit.

Damaged HDF5 internals can make the HDF5 library itself spin forever inside one C call (a zeroed
local heap under the root attributes does: ``f.attrs.get(...)`` never returns), and no Python
signal handler runs inside a C call. :func:`probe_structure` therefore forks a child that opens the
file and reads every object's header and attributes (names, shapes, dtypes, values); the parent
waits at most ``timeout_s`` seconds and kills the child if it has not finished. A file that passes
the probe has headers the library can read, so the validator reads them in process afterwards.
"""
from __future__ import annotations

import os
import select
import signal
from pathlib import Path

PROBE_TIMEOUT_S = 10.0  # s, default upper bound of one probe (HARNESS_HDF5_PROBE_TIMEOUT_S overrides)


def probe_timeout() -> float:
    """The probe's time limit [s]: $HARNESS_HDF5_PROBE_TIMEOUT_S, else PROBE_TIMEOUT_S."""
    try:
        return float(os.environ.get("HARNESS_HDF5_PROBE_TIMEOUT_S", PROBE_TIMEOUT_S))
    except ValueError:
        return PROBE_TIMEOUT_S


class ProbeFailed(Exception):
    """The HDF5 library could not read the file's structure; ``reason`` says why (one line)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _walk(path: str) -> None:
    import h5py

    with h5py.File(path, "r") as f:
        def touch(obj) -> None:
            for k in obj.attrs.keys():
                obj.attrs[k]
            if isinstance(obj, h5py.Dataset):
                obj.shape, obj.dtype, obj.chunks, obj.compression, obj.fletcher32, obj.id.get_storage_size()

        touch(f)
        f.visititems(lambda _name, obj: touch(obj))


def _child(path: str, fd: int) -> None:  # pragma: no cover - runs in the forked child
    code = 0
    try:
        _walk(path)
        msg = ""
    except BaseException as exc:  # noqa: BLE001 - any failure of the library is the answer
        text = str(exc).splitlines()[0] if str(exc) else ""
        msg = f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__
    try:
        os.write(fd, ("done:" + msg).encode("utf-8", "replace")[:4000])
    except BaseException:  # noqa: BLE001
        code = 1
    finally:
        os._exit(code)


def probe_structure(path: Path | str, timeout_s: float | None = None) -> None:
    """Read every header and attribute of ``path`` in a forked child within ``timeout_s`` s.

    Raises ProbeFailed with a one-line reason if the library raises, dies or does not finish in time.
    (A plain ``os.fork``, not multiprocessing: it also works inside daemonic pool workers.)
    """
    timeout_s = probe_timeout() if timeout_s is None else timeout_s
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(rfd)
        _child(str(path), wfd)
    os.close(wfd)
    answer = None
    try:
        ready, _, _ = select.select([rfd], [], [], timeout_s)
        if ready:
            chunks = []
            while True:
                b = os.read(rfd, 4096)
                if not b:
                    break
                chunks.append(b)
            answer = b"".join(chunks).decode("utf-8", "replace")
    finally:
        os.close(rfd)
        if answer is None:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if answer is None:
        raise ProbeFailed(f"HDF5 did not finish reading the file's headers within {timeout_s:g} s "
                          "(damaged internals)")
    if not answer.startswith("done:"):
        raise ProbeFailed(f"the HDF5 reader died ({_status(status)})")
    if answer[5:]:
        raise ProbeFailed(answer[5:])


def _status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit code {os.WEXITSTATUS(status) if os.WIFEXITED(status) else status}"
