"""The check every use of another library's internals passes before it is made.

Each module of this package that reaches into a library's private parts (a function it replaces, a
module attribute it sets, a private class it subclasses) calls :func:`allowed` first, with a check
that what it touches exists with the shape it was written against. When the check fails, or the
user has asked for the plain paths (``HARNESS_PLAIN_PATHS``), the module leaves the library as it
is: one DEBUG log line says so, and the results are the same, only slower.

``HARNESS_PLAIN_PATHS``: ``all`` (or ``1``) for every speed-up of this package, or a comma-separated
list of their names (``hydra_reuse,joblib_shared``), e.g. to rule them out while chasing a bug.
"""
from __future__ import annotations

import logging
import os
from typing import Callable, Dict, Optional, Tuple

log = logging.getLogger(__name__)

ENV = "HARNESS_PLAIN_PATHS"
_REFUSED: Dict[str, str] = {}  # name -> why the plain path is used, once per process


def plain_requested(name: str) -> bool:
    """True when ``HARNESS_PLAIN_PATHS`` asks for the library's plain path for ``name``."""
    value = os.environ.get(ENV, "").strip()
    if not value or value == "0":
        return False
    wanted = {v.strip() for v in value.split(",")}
    return bool(wanted & {"all", "1", name})


def allowed(name: str, check: Callable[[], Optional[str]]) -> bool:
    """Whether the speed-up ``name`` may touch its library's internals.

    ``check()`` returns None when what it touches is as expected, else a short reason (it may also
    raise: any exception is a reason). A refusal is logged once per process at DEBUG.
    """
    if plain_requested(name):
        reason: Optional[str] = f"{ENV} asks for the plain path"
    else:
        try:
            reason = check()
        except Exception as exc:  # noqa: BLE001 - any surprise in another library means: do not patch
            reason = f"{type(exc).__name__}: {exc}"
    if reason is None:
        return True
    if name not in _REFUSED:
        _REFUSED[name] = reason
        log.debug("%s: the library's plain path is used (%s)", name, reason)
    return False


def refused() -> Dict[str, str]:
    """The speed-ups refused in this process, with their reasons (for tests and ``--help``)."""
    return dict(_REFUSED)


def version(dist: str) -> Tuple[int, ...]:
    """The installed release of distribution ``dist`` as a tuple of ints (``()`` if not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as _version

    try:
        text = _version(dist)
    except PackageNotFoundError:
        return ()
    out = []
    for part in text.split("."):
        digits = "".join(ch for ch in part if ch.isdigit()) if not part.isdigit() else part
        if not digits:
            break
        out.append(int(digits))
        if not part.isdigit():
            break
    return tuple(out)


def has(obj: object, *names: str) -> Optional[str]:
    """None when ``obj`` has every attribute in ``names``, else which one is missing."""
    for n in names:
        if not hasattr(obj, n):
            return f"{getattr(obj, '__name__', obj)!s} has no {n}"
    return None
