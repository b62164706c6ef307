"""Atomic file writes: a temporary file in the same directory, then ``os.replace``.

The file gets the mode a plain ``open(path, "w")`` would give it (0666 masked by the
process umask, 0644 under the usual 022), not the private 0600 of ``mkstemp``, so
colleagues on a shared file system and the workers of a cluster launcher can read runs.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator


def umask_mode() -> int:
    """The permission bits a normal ``open()`` gives a new file under the current umask."""
    current = os.umask(0)  # reading the umask means setting it: put it straight back
    os.umask(current)
    return 0o666 & ~current


@contextlib.contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    On any exception the temporary file is removed and ``path`` is untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, umask_mode())
        os.replace(tmp_path, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


def atomic_write_bytes(path: Path | str, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(path)


def atomic_write_text(path: Path | str, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))
