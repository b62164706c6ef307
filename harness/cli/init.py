"""``harness init [DIR]``: scaffold a verification folder for a user's solver in DIR (default .).

Writes harness.yaml, a generic case, a refinement study, a suite, a stand-in solver and a
GitHub Actions workflow (:mod:`harness.cli.scaffold`). It refuses when any of these files
exists already, and then writes none of them (exit 2). Exit 0 when written.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from harness.cli.scaffold import files
from harness.core.atomic import atomic_write_text


def init(directory: Path) -> list:
    """Write the scaffold into ``directory``; returns the paths written.

    Raises FileExistsError naming the files that exist (nothing is written then)."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise NotADirectoryError(f"{directory}: not a directory")
    planned = {directory / rel: text for rel, text in files().items()}
    existing = [str(p) for p in planned if p.exists()]
    if existing:
        raise FileExistsError(f"{', '.join(existing)}: already there; init overwrites nothing (no file written)")
    written = []
    for path, text in planned.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        written.append(path)
    return written


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="harness init",
                                 description="Scaffold a verification folder for your solver (see README, "
                                             "\"Use it in your solver's repository\").")
    ap.add_argument("directory", nargs="?", default=".", help="the repository to scaffold (default: .)")
    args = ap.parse_args(list(argv or []))
    try:
        written = init(Path(args.directory))
    except (FileExistsError, NotADirectoryError) as exc:
        print(f"harness init: error: {exc}", file=sys.stderr)
        return 2
    for p in written:
        print(f"wrote {p}")
    where = "" if Path(args.directory).resolve() == Path.cwd().resolve() else f"cd {args.directory} && "
    print(f"next: {where}harness +case=heat/ftcs   (then: harness suite=project)")
    return 0
