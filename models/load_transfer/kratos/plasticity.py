"""The plasticity stage of seed 000 (issue 15): elasto-plastic Kratos MPM under the conservative loads.

Law: ``HenckyMCPlasticAxisym2DLaw`` (Mohr-Coulomb, Hencky finite strain) with friction angle
0.01 rad (the yield criterion k s1 - s3 = 2 c sqrt(k), k = (1 + sin phi) / (1 - sin phi) = 1.020: the
Tresca limit within 2 %; at exactly 0 the return mapping gives NaN at first yield), dilatancy 0,
cohesion = yield / 2: perfect plasticity at the uniaxial yield stress ``yield``; implicit Newmark
(non-linear, residual criterion). Why not J2: the only J2 law of KratosMPMApplication 10.4
(``JohnsonCookThermalPlastic*``) runs only explicitly and its 2-D stress carries twice the shear
stress (sigma_rz = 2 G gamma_rz); the Mohr-Coulomb law has no plastic memory in explicit runs (its
state is committed only by FinalizeMaterialResponse, which the explicit element never calls). See
the README, "Plasticity", and ``explicit_mpm.py``.

Runs (the same loads, zero after the source ends: free vibration; ``grid_margin_rows`` empty grid
rows above the body keep the top points inside the grid when it moves up):

1. elastic: the same law with yield = 1e30 Pa (its own elastic response; it differs from the
   linear-elastic law by the finite-strain measure, ``elastic_vs_linear_rel_diff``, ~3e-4 here);
   its peak Tresca stress sigma_peak and peak top response set the scale;
2. below yield: yield = below_factor * sigma_peak: must equal run 1 (no point reaches yield);
3. above yield: yield = above_factor * sigma_peak on every level of ``n_steps`` (dt = t_run / n):
   residual displacement after unloading (``u_residual`` of :mod:`.energy`, from the plastic strain,
   constant in the free phase), dissipation D (never decreasing), energy balance
   |W - K - E - D| / max W and its observed order under time-step refinement.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from ..fe.base import ElasticBody
from .builder import MPMSpec
from .loads import MeridianLoads, UnloadedAfterSource

log = logging.getLogger(__name__)

ELASTIC_YIELD = 1.0e30  # Pa: the yield stress of the law's elastic run


@dataclass(frozen=True)
class PlasticitySpec:
    """t_run [s] (past the source's end), n_steps (levels, coarse to fine; dt = t_run / n),
    below_factor / above_factor (yield stress as a fraction of the elastic peak Tresca stress),
    friction_angle [rad] (INTERNAL_FRICTION_ANGLE; the law takes its sine), grid_margin_rows."""

    t_run: float
    n_steps: Tuple[int, ...]
    below_factor: float = 1.25
    above_factor: float = 0.5
    friction_angle: float = 0.01
    grid_margin_rows: int = 1

    def __post_init__(self) -> None:
        if not (math.isfinite(self.t_run) and self.t_run > 0.0):
            raise ValueError(f"t_run: must be a positive time in s, got {self.t_run!r}")
        n = tuple(int(k) for k in self.n_steps)
        if len(n) < 2 or any(k < 1 for k in n) or any(b != 2 * a for a, b in zip(n, n[1:])):
            raise ValueError(f"n_steps: needs >= 2 levels, each twice the previous, got {list(self.n_steps)!r}")
        if not self.below_factor > 1.0:
            raise ValueError(f"below_factor: must be > 1 (yield above the elastic peak), got {self.below_factor!r}")
        if not 0.0 < self.above_factor < 1.0:
            raise ValueError(f"above_factor: must lie in (0, 1), got {self.above_factor!r}")


def _mpm_spec(spec: PlasticitySpec, n: int, yield_stress: float, law: str = "tresca") -> MPMSpec:
    return MPMSpec(solver="dynamic", dt=spec.t_run / n, n_steps=n, analysis_type="non_linear", law=law,
                   yield_stress=yield_stress, friction_angle=spec.friction_angle,
                   grid_margin_rows=spec.grid_margin_rows)


def top_response(records: Dict[str, np.ndarray], areas: np.ndarray) -> np.ndarray:
    """Area-weighted mean axial displacement of the load points per step [m]."""
    return records["u_points"][..., 1] @ areas / float(np.sum(areas))


def _level(r, areas: np.ndarray, t_source_end: float) -> Dict[str, float]:
    R = r.records
    W = R["work_newmark"]  # the work of Newmark's discrete energy identity (energy.newmark_work)
    w_max = float(np.max(W))
    D = R["dissipation"]
    bal = W - R["kinetic"] - R["elastic"] - D
    free = R["time"] > t_source_end
    u_res = R["u_residual"]
    resp = top_response(R, areas)
    return {
        "energy_balance": float(np.max(np.abs(bal)) / w_max),
        "dissipation_ratio": float(D[-1] / w_max),
        "dissipation_drop": float(np.max(np.maximum.accumulate(D) - D) / w_max),
        "dissipation_law_ratio": float(R["plastic_work_law"][-1] / D[-1]) if D[-1] > 0 else float("nan"),
        "residual_displacement": float(u_res[-1]),
        "residual_free_spread": float((np.max(u_res[free]) - np.min(u_res[free])) / abs(u_res[-1]))
        if np.any(free) and u_res[-1] != 0.0 else float("nan"),
        "free_mean_response": float(np.mean(resp[free])) if np.any(free) else float("nan"),
        "external_work": float(W[-1]),
        "plastic_strain_max": float(R["eps_p_eq_max"][-1]),
        "plastic_volume_fraction": float(R["plastic_volume_fraction"][-1]),  # the plastic zone / body volume
        "nonconverged_steps": float(np.sum(R["converged"] == 0)),
        "e_F": float(R["e_F"][-1]), "e_J": float(R["e_J"][-1]),
    }


def run_plasticity(body: ElasticBody, loads: MeridianLoads, spec: PlasticitySpec, areas: np.ndarray, *,
                   log_path: Optional[Path | str] = None, J_scale: float = 0.0) -> Dict[str, Any]:
    """The three runs above; returns {"metrics", "series", "info"} (see the module docstring).

    areas (Nc,) m^2: the ring areas of the load points (weights of the top response).
    """
    from .analysis import run_mpm

    unloaded = UnloadedAfterSource.of(loads)
    t_end = float(loads.time[-1])
    if spec.t_run <= t_end:
        raise ValueError(f"t_run: must exceed the source's end {t_end!r} s (free vibration after unloading), "
                         f"got {spec.t_run!r}")

    def run(n: int, yield_stress: float, law: str = "tresca"):
        return run_mpm(body, _mpm_spec(spec, n, yield_stress, law), unloaded, log_path=log_path, J_scale=J_scale,
                       track_energy=True)

    n0 = spec.n_steps[0]
    el = run(n0, ELASTIC_YIELD)
    sigma_peak = float(np.max(el.records["tresca_max"]))
    resp_el = top_response(el.records, areas)
    peak_resp = float(np.max(np.abs(resp_el)))
    lin = run(n0, math.inf, law="linear_elastic")
    below = run(n0, spec.below_factor * sigma_peak)
    y_above = spec.above_factor * sigma_peak
    levels = [run(n, y_above) for n in spec.n_steps]
    lv = [_level(r, areas, t_end) for r in levels]
    el_level = _level(el, areas, t_end)
    fine = lv[-1]
    u_el = np.abs(el.u_hist).max()
    metrics: Dict[str, float] = {
        "sigma_peak_elastic": sigma_peak, "yield_stress_above": y_above, "peak_response_elastic": peak_resp,
        "below_yield_rel_diff": float(np.max(np.abs(below.u_hist - el.u_hist)) / u_el),
        "below_yield_plastic_strain": float(below.records["eps_p_eq_max"][-1]),
        "elastic_vs_linear_rel_diff": float(np.linalg.norm(el.u_hist - lin.u_hist) / np.linalg.norm(lin.u_hist)),
        "elastic_residual_ratio": abs(el_level["residual_displacement"]) / peak_resp,
        "elastic_energy_balance": el_level["energy_balance"],
        "residual_ratio": -fine["residual_displacement"] / peak_resp,  # > 0: the top stays down
        **{k: fine[k] for k in ("residual_displacement", "residual_free_spread", "free_mean_response",
                                "dissipation_ratio", "dissipation_law_ratio", "energy_balance", "external_work",
                                "plastic_strain_max", "plastic_volume_fraction")},
        "free_mean_response_elastic": el_level["free_mean_response"],
        "energy_balance_coarse": lv[0]["energy_balance"],
        "energy_balance_order": float(math.log2(lv[-2]["energy_balance"] / lv[-1]["energy_balance"])),
        "dissipation_drop": max(x["dissipation_drop"] for x in lv),
        "dissipation_change": abs(lv[-1]["dissipation_ratio"] - lv[-2]["dissipation_ratio"]),
        "nonconverged_steps": float(sum(x["nonconverged_steps"] for x in [*lv, el_level, _level(below, areas, t_end)])),
        "e_F": max(x["e_F"] for x in lv), "e_J": max(x["e_J"] for x in lv),
    }
    R = levels[-1].records
    series = {"time": R["time"], "work": R["work_newmark"], "kinetic": R["kinetic"], "elastic": R["elastic"],
              "dissipation": R["dissipation"], "u_residual": R["u_residual"], "response": top_response(R, areas),
              "response_elastic_coarse": resp_el, "time_elastic_coarse": el.records["time"]}
    info = {"law": "HenckyMCPlasticAxisym2DLaw" if body.formulation == "axisymmetric" else "HenckyMCPlasticPlaneStrain2DLaw",
            "friction_angle": spec.friction_angle, "t_source_end": t_end, "t_run": spec.t_run,
            "n_steps": list(spec.n_steps), "levels": lv, "elastic": el_level, "kratos": levels[-1].info,
            "seconds": {"elastic": el.seconds, "levels": [r.seconds for r in levels]}}
    log.info("plasticity: sigma_peak %.4g Pa, residual %.3g m, D/W %.3f, balance %s", sigma_peak,
             fine["residual_displacement"], fine["dissipation_ratio"], [x["energy_balance"] for x in lv])
    return {"metrics": metrics, "series": series, "info": info}


def levels_of(n0: int, count: int) -> Sequence[int]:
    return tuple(n0 * 2**k for k in range(count))
