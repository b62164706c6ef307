"""``python -m harness.validate FILE [FILE ...]``: validate HDF5 contract files against their specs.

The spec is chosen by the file's ``schema_name`` attribute (or ``--schema``). Prints one line per
violation (``FILE: path: rule: found ...; expected ...``) or ``FILE: valid ...``. Exit codes:
0 every file valid, 1 a violation, 2 a file that is missing or not readable as HDF5.
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence


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
        except (UnreadableFileError, FileNotFoundError) as exc:
            print(f"{name}: unreadable: {exc}", file=sys.stderr)
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
