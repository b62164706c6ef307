"""Spherical verification of the r-z CFD solver (seed 000: run when no accepted baseline exists).

The free-space blast (centre on z = 0, the plane of symmetry) solved in r-z is compared at time t
with the 1-D spherical Euler solution of the same blast (PyClaw, fine grid) evaluated at each cell
centre's distance rho = sqrt(r^2 + z^2):

- ``l1_error``: relative L1 error of the overpressure, sum |p - p_1D| dV / sum |p_1D - p_amb| dV
  with the axisymmetric cell volume dV = 2 pi r_c dr dz [-];
- ``shock_radius_error``: |R_s(2-D) - R_s(1-D)| / dr in cells, R_s where the overpressure of the
  first cell row (the symmetry plane) falls through half of its maximum beyond the peak.

Three or more grids (ratio 2) give the observed order of the L1 error between successive grids;
for a captured shock it is first order (gate: at least ``min_order``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Sequence

import numpy as np

from .cfd_pyclaw import Profile, shock_radius, solution_2d_pressure, spherical_reference
from .cfd_setup import BlastSetup


@dataclass(frozen=True)
class GridError:
    n_r: int
    dr: float  # m
    l1_error: float  # -
    shock_radius: float  # m
    shock_radius_error: float  # cells
    centers_r: np.ndarray  # first-row profile for the figure
    pressure_row: np.ndarray


@dataclass(frozen=True)
class VerificationResult:
    t: float
    reference: Profile
    reference_shock_radius: float
    grids: List[GridError]

    @property
    def orders(self) -> List[float]:
        e = [g.l1_error for g in self.grids]
        return [math.log(e[i] / e[i + 1]) / math.log(self.grids[i + 1].n_r / self.grids[i].n_r) for i in range(len(e) - 1)]

    def metrics(self) -> Dict[str, float]:
        m: Dict[str, float] = {f"l1_error_{g.n_r}": g.l1_error for g in self.grids}
        m.update({f"shock_radius_error_cells_{g.n_r}": g.shock_radius_error for g in self.grids})
        o = self.orders
        m["observed_order_min"] = min(o)
        m["observed_order_finest"] = o[-1]
        m["shock_radius_error_cells_max"] = max(g.shock_radius_error for g in self.grids)
        m["reference_shock_radius"] = self.reference_shock_radius
        return m


def grid_error(setup: BlastSetup, n_r: int, t: float, ref: Profile, ref_rs: float) -> GridError:
    re, ze, p = solution_2d_pressure(setup, n_r, t)
    rc = 0.5 * (re[1:] + re[:-1])
    zc = 0.5 * (ze[1:] + ze[:-1])
    rho = np.hypot(rc[:, None], zc[None, :])
    p_ref = ref.at(rho)
    dv = 2.0 * np.pi * rc[:, None] * np.diff(re)[:, None] * np.diff(ze)[None, :]
    l1 = float(np.sum(np.abs(p - p_ref) * dv) / np.sum(np.abs(p_ref - setup.p_ambient) * dv))
    row_rho = np.hypot(rc, zc[0])
    rs = shock_radius(row_rho, p[:, 0] - setup.p_ambient)
    dr = float(re[1] - re[0])
    return GridError(n_r=n_r, dr=dr, l1_error=l1, shock_radius=rs, shock_radius_error=abs(rs - ref_rs) / dr,
                     centers_r=row_rho, pressure_row=p[:, 0].copy())


def spherical_verification(setup: BlastSetup, grids: Sequence[int], t: float, n_reference: int = 16000) -> VerificationResult:
    """Run the free-space blast on ``grids`` (n_r, ratio 2 between neighbours) and the reference."""
    if setup.H != 0.0:
        raise ValueError(f"H: the spherical verification needs the centre on the symmetry plane (H = 0, got {setup.H!r})")
    if len(grids) < 3:
        raise ValueError(f"grids: at least three grids are needed for an observed order (got {list(grids)})")
    setup.check()
    ref = spherical_reference(setup, t, n_reference)
    c = 0.5 * (ref.edges[1:] + ref.edges[:-1])
    ref_rs = shock_radius(c, ref.pressure - setup.p_ambient)
    return VerificationResult(t=float(t), reference=ref, reference_shock_radius=ref_rs,
                              grids=[grid_error(setup, int(n), t, ref, ref_rs) for n in grids])
