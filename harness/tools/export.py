"""``cavitation-kratos-export``: wall-loads HDF5 + surface quadrature table -> kratos-point-loads HDF5.

With ``--faces`` the point loads are the exact face integrals split by the face shape functions
(conservative, production operator); without it they are sampled (metadata ``point_loads: sampled``).

Prints e_F and e_J of the mapping alone (both forces averaged exactly over the target steps).
Exit codes: 0 written (e_F, e_J <= 1 %: pass; <= 2 %: warn, refine), 1 mapping-only error above
2 % (no output file), 2 bad input (file, table, time grid, area check) with a one-line reason.
"""
from __future__ import annotations

import argparse
import logging
import shlex
import sys
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

PASS_MAX = 0.01


def _time_grid(args) -> np.ndarray:
    if args.time_grid:
        p = Path(args.time_grid)
        try:
            return np.load(p) if p.suffix == ".npy" else np.loadtxt(p, delimiter="," if p.suffix == ".csv" else None)
        except (OSError, ValueError) as exc:
            raise ValueError(f"--time-grid {p}: cannot read step edges ({exc})") from exc
    if args.dt is None or args.steps is None:
        raise ValueError("time grid: give --time-grid FILE or --t0, --dt and --steps")
    if not args.dt > 0 or args.steps < 1:
        raise ValueError(f"--dt/--steps: must be > 0 and >= 1, got {args.dt!r}, {args.steps!r}")
    from harness.core.limits import MAX_EXPORT_STEPS

    if args.steps > MAX_EXPORT_STEPS:
        raise ValueError(f"--steps: {args.steps} is above the limit {MAX_EXPORT_STEPS} (target steps of the export)")
    return args.t0 + args.dt * np.arange(args.steps + 1)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="cavitation-kratos-export", description=__doc__.splitlines()[0])
    ap.add_argument("wall_loads", help="{case_id}.wall-loads.v1.h5 (CSV only with --mode debug)")
    ap.add_argument("table", help="surface quadrature table (.csv or .parquet)")
    ap.add_argument("--faces", help="face table (.npz: vertices (Nf, Kv, 3) m, condition_ids (Nf, Kc)): the "
                    "conservative path (exact face integrals split by the face shape functions); without it the "
                    "loads are sampled (said in the file's metadata and the log)")
    ap.add_argument("--partial-surface", action="store_true",
                    help="with --faces: the faces may cover part of disk(R_map); the common area is their coverage")
    ap.add_argument("--out", default=".", help="output directory or file (default: .)")
    ap.add_argument("--time-grid", help="target step edges (.npy, .csv or text, one value per line) [s]")
    ap.add_argument("--t0", type=float, default=0.0, help="first target step edge [s]")
    ap.add_argument("--dt", type=float, help="target step [s]")
    ap.add_argument("--steps", type=int, help="number of target steps")
    ap.add_argument("--r-map", type=float, help="radius of the MPM surface [m] (common disk = min with last edge)")
    ap.add_argument("--axis-origin", type=float, nargs=2, default=(0.0, 0.0), metavar=("XC", "YC"))
    ap.add_argument("--area-rtol", type=float, default=1.0e-6, help="tolerance of sum A_a = pi R_map^2")
    ap.add_argument("--j-scale", type=float, default=0.0, help="impulse scale of e_J [N s]")
    ap.add_argument("--fail-above", type=float, default=0.02, help="mapping-only error that fails (default 0.02)")
    ap.add_argument("--mode", choices=["production", "debug"], default="production")
    ap.add_argument("--debug-l2-correction", action="store_true",
                    help="debug mode only: add the uniform min-L2 correction (restores force, not local)")
    ap.add_argument("--unloaded-ends", action="store_true", help="the source certifies unloaded initial/final states")
    ap.add_argument("--case-id", help="case id of the output (default: the source case id)")
    ap.add_argument("--full-validation", action="store_true", help="re-scan every written element before renaming")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    from harness.core.manifest import git_state
    from models.load_transfer.contracts import ContractError
    from models.load_transfer.export import (
        ExportInputError,
        MappingError,
        export_kratos_loads,
    )

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        edges = _time_grid(args)
        git = git_state()
        res = export_kratos_loads(
            args.wall_loads, args.table, edges, args.out, r_map=args.r_map, axis_origin=tuple(args.axis_origin),
            area_rtol=args.area_rtol, method="l2-uniform-correction-debug" if args.debug_l2_correction else None,
            faces=args.faces, partial_surface=args.partial_surface, mode=args.mode, fail_above=args.fail_above, J_scale=args.j_scale,
            unloaded_ends=args.unloaded_ends, case_id=args.case_id,
            metadata={"exporter_commit": str(git.get("commit") or "unknown") + ("-dirty" if git.get("dirty") else ""),
                      "command": shlex.join(["cavitation-kratos-export", *argv])},
            validate="full" if args.full_validation else "structure")
    except MappingError as exc:
        print(f"e_F = {exc.e_F:.4e}  e_J = {exc.e_J:.4e}  FAIL: {exc}", file=sys.stderr)
        return 1
    except (ExportInputError, ContractError, ValueError, OSError) as exc:
        print(f"cavitation-kratos-export: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    verdict = "pass" if max(res.e_F, res.e_J) <= PASS_MAX else "warn (refine the quadrature table)"
    print(f"e_F = {res.e_F:.4e}  e_J = {res.e_J:.4e}  {verdict}  [{res.point_loads}]  -> {res.path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
