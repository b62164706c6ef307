"""Where the files shipped with the harness live: the checkout, or inside the installed package.

In a checkout (or an editable install) ``conf/`` and ``examples/`` sit at the top of the
repository; ``harness/_shipped/conf`` and ``harness/_shipped/examples`` are symlinks to them, so
the sdist and the wheel carry them as package data of ``harness`` (pyproject.toml). ``models/`` and
``schemas/`` are packages next to ``harness/`` in both layouts.
"""
from __future__ import annotations

from pathlib import Path

HARNESS_PACKAGE = Path(__file__).resolve().parents[1]
PACKAGES_ROOT = HARNESS_PACKAGE.parent  # holds harness/, models/, schemas/ (checkout or site-packages)


def shipped_root() -> Path:
    """The directory holding ``conf/`` and ``examples/``: the checkout, else ``harness/_shipped``."""
    if (PACKAGES_ROOT / "conf" / "config.yaml").is_file():
        return PACKAGES_ROOT
    return HARNESS_PACKAGE / "_shipped"


SHIPPED_ROOT = shipped_root()


def cache_root() -> Path:
    """Where the harness keeps caches shared by runs (e.g. compiled third-party sources):
    ``outputs/cache`` of the checkout, or the user's cache folder when installed
    ($XDG_CACHE_HOME or ~/.cache, then ``mechanics-harness``), never site-packages."""
    import os

    if SHIPPED_ROOT == PACKAGES_ROOT:
        return PACKAGES_ROOT / "outputs" / "cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mechanics-harness"
