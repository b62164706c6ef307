"""``python -m harness.report RUN_OR_SWEEP_OR_SUITE [-o FILE]``: the HTML report of a run or a sweep
(:mod:`harness.studies.report`), or a suite's dashboard (:mod:`harness.suites.dashboard`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from harness.studies.report import write

DESCRIPTION = "A self-contained HTML report of a run or a sweep: ``python -m harness.report RUN_OR_SWEEP``."


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.report", description=DESCRIPTION)
    ap.add_argument("path", type=Path, help="a run directory, a sweep directory or a suite directory (dashboard)")
    ap.add_argument("-o", "--output", type=Path, default=None, help="HTML file (default: PATH/report.html)")
    args = ap.parse_args(argv)
    try:
        if (args.path / "suite.json").is_file():  # a suite directory: its dashboard
            from harness.suites import dashboard

            target = dashboard.write(args.path, args.output)
        else:
            target = write(args.path, args.output)
    except FileNotFoundError as exc:
        print(f"harness.report: error: {exc}", file=sys.stderr)
        return 2
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
