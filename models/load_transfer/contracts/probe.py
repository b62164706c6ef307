"""Bounded first look at an HDF5 file: its structure is read in a child process with a time limit.

Damaged HDF5 internals can make the HDF5 library itself spin forever inside one C call (a zeroed
local heap under the root attributes does: ``f.attrs.get(...)`` never returns), and no Python
signal handler runs inside a C call. :func:`probe_structure` therefore forks a child that opens the
file and reads every object's header and attributes (names, shapes, dtypes, values); the parent
waits at most ``timeout_s`` seconds and kills the child if it has not finished. A file that passes
the probe has headers the library can read, so the validator reads them in process afterwards.
"""
from __future__ import annotations

import multiprocessing
import os
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


def _child(path: str, conn) -> None:  # pragma: no cover - runs in the forked child
    try:
        _walk(path)
        conn.send("")
    except BaseException as exc:  # noqa: BLE001 - any failure of the library is the answer
        conn.send(f"{exc.__class__.__name__}: {exc}".splitlines()[0] if str(exc) else exc.__class__.__name__)
    finally:
        conn.close()
        os._exit(0)


def probe_structure(path: Path | str, timeout_s: float | None = None) -> None:
    """Read every header and attribute of ``path`` in a child process within ``timeout_s`` s.

    Raises ProbeFailed with a one-line reason if the library raises or does not finish in time.
    """
    timeout_s = probe_timeout() if timeout_s is None else timeout_s
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(str(path), send), daemon=True)
    proc.start()
    send.close()
    try:
        if not recv.poll(timeout_s):
            proc.kill()
            raise ProbeFailed(f"HDF5 did not finish reading the file's headers within {timeout_s:g} s "
                              "(damaged internals)")
        try:
            answer = recv.recv()
        except EOFError:
            answer = f"the HDF5 reader died (exit code {proc.exitcode})"
    finally:
        recv.close()
        proc.join(5.0)
        if proc.is_alive():  # pragma: no cover - only if the child ignores the pipe
            proc.kill()
            proc.join()
    if answer:
        raise ProbeFailed(answer)
