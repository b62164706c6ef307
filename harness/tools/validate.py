"""``python -m harness.validate FILE [FILE ...]``: validate HDF5 contract files against their specs.

The spec is chosen by the file's ``schema_name`` attribute (or ``--schema``). Prints one line per
violation (``FILE: path: rule: found ...; expected ...``) or ``FILE: valid ...``. Exit codes:
0 every file valid, 1 a violation, 2 a file that is missing or that HDF5 cannot read
(``unreadable: FILE: reason`` on stderr; damaged internals that make HDF5 spin are bounded by a
time limit, see models/load_transfer/contracts/probe.py). Never a traceback.
"""
from __future__ import annotations

import argparse
import logging
import sys
from typing import Optional, Sequence

log = logging.getLogger(__name__)


def main(argv: Optional[Sequence[str]] = None) -> int:
    from models.load_transfer.contracts import (
        UnreadableFileError,
        load_spec,
        validate_file,
    )
    from models.load_transfer.contracts.spec import SPEC_FILES

    ap = argparse.ArgumentParser(prog="harness-validate", description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", metavar="FILE")
    ap.add_argument("--schema", choices=sorted(SPEC_FILES), help="spec to use (default: the file's schema_name)")
    ap.add_argument("--mode", choices=["production", "debug"], default=None,
                    help="metadata strictness (default: the mode declared in the file)")
    args = ap.parse_args(argv)
    spec = load_spec(args.schema) if args.schema else None
    code = 0
    for name in args.files:
        try:
            report = validate_file(name, spec, mode=args.mode)
        except UnreadableFileError as exc:
            print(f"unreadable: {name}: {exc.reason}", file=sys.stderr)
            code = max(code, 2)
            continue
        except FileNotFoundError:
            print(f"unreadable: {name}: no such file", file=sys.stderr)
            code = max(code, 2)
            continue
        except Exception as exc:  # noqa: BLE001 - never a traceback: anything else is a file HDF5 cannot read
            log.debug("%s: validation failed", name, exc_info=True)
            print(f"unreadable: {name}: {exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                  file=sys.stderr)
            code = max(code, 2)
            continue
        for w in report.warnings:
            print(f"{name}: warning: {w}")
        if report.ok:
            dims = ", ".join(f"{k}={v}" for k, v in report.dims.items())
            extra = f"; {len(report.unknown)} optional dataset(s) kept: {', '.join(report.unknown)}" if report.unknown else ""
            print(f"{name}: valid {report.schema} {report.version} ({report.mode}; {dims}){extra}")
        else:
            for v in report.violations:
                print(f"{name}: {v}")
            code = max(code, 1)
    return code

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
