"""Direct shear test of disks (dim=2) in a two-part shear box.

Stages: (1) generation: disks on a jittered lattice (no overlap) inside the box, radii
uniform in ``R (1 +- dispersity)``; (2) gravity deposition for the free-fall time of the lattice
height plus ``settle_time``, then a top platen servo-controlled
to the normal force ``sigma_n L t`` (t = disk thickness 2R, so stresses are per unit
thickness of the 2-D sample); (3) shear: the lower half (bottom, lower side walls and a lip
closing the gap under the upper half) moves at ``shear_speed`` (reached by a linear ramp over
the first ``ramp`` fraction of the displacement, no impulsive start) while the upper half (upper
side walls, platen, a lip over the lower half) stays; the platen keeps the normal force.

Recorded per output step: shear displacement (m), shear force on the upper half (N),
normal force on the platen (N), platen height (m). Results: peak and residual shear
stress (Pa); the normal stress on the platen (servo check, mean over the residual window) and
on the shear plane (platen force plus the weight of the disks above the split, mean over the
shear stage: with gravity the upper half's weight is part of the normal load); volumetric
strain of the sample, and the inertial number
``I = gamma_dot d sqrt(rho / sigma_n)`` with ``gamma_dot = v / H`` (quasi-static if I < 1e-3).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Dict

import numpy as np

from models.dem.laws import ContactLaw
from models.dem.materials import DEMInputError, Material
from models.dem.system import DEMSystem
from models.dem.walls import Servo, Wall
from models.integrators.verlet import make_stepper

log = logging.getLogger(__name__)


@dataclass
class ShearBoxSpec:
    """Inputs of one direct shear test (SI units; see the module docstring)."""

    n_particles: int = 40
    radius: float = 0.0155
    dispersity: float = 0.1
    columns: int = 8  # disks per lattice row; sets the box width L = columns * 2.2 R_max
    E: float = 1.0e8
    nu: float = 0.3
    density: float = 2650.0
    friction: float = 0.5
    wall_friction: float = 0.0  # not used separately: one law for all contacts
    restitution: float = 0.5
    normal_stress: float = 2000.0
    shear_speed: float = 0.005
    max_displacement: float = 0.15  # fraction of L
    residual_window: float = 0.25  # last fraction of the displacement averaged for the residual
    gravity: float = 9.81
    settle_time: float = 0.6
    consolidation_time: float = 0.4
    dt_per_contact: float = 25.0
    ramp: float = 0.05  # fraction of max_displacement over which the shear speed ramps up linearly
    servo_time: float = 2.0  # servo time constant in contact times (smaller follows dilation closer)
    integrator: str = "velocity_verlet"
    seed: int = 0
    n_output: int = 400
    smooth: int = 9  # moving-average window (output samples) of the shear force before the peak

    def __post_init__(self) -> None:
        if self.n_particles < 4:
            raise DEMInputError(f"n_particles: need at least 4, got {self.n_particles}")
        if not 0 <= self.dispersity < 0.5:
            raise DEMInputError(f"dispersity: must lie in [0, 0.5), got {self.dispersity}")
        for name in ("radius", "normal_stress", "shear_speed", "max_displacement", "settle_time"):
            if getattr(self, name) <= 0:
                raise DEMInputError(f"{name}: must be > 0, got {getattr(self, name)!r}")
        if not 0 < self.residual_window < 1:
            raise DEMInputError(f"residual_window: must lie in (0, 1), got {self.residual_window}")


@dataclass
class ShearResult:
    """Histories (arrays) and strength measures of one direct shear test."""

    displacement: np.ndarray
    shear_force: np.ndarray
    shear_force_lower: np.ndarray
    normal_force: np.ndarray
    platen_height: np.ndarray
    width: float
    thickness: float
    peak_shear_stress: float
    residual_shear_stress: float
    normal_stress_measured: float
    shear_plane_normal_stress: float
    volumetric_strain: np.ndarray
    inertial_number: float
    n_steps: int
    dt: float
    info: Dict[str, float] = field(default_factory=dict)


def _generate(spec: ShearBoxSpec, rng: np.random.Generator):
    R = spec.radius * (1.0 + spec.dispersity * rng.uniform(-1.0, 1.0, spec.n_particles))
    pitch = 2.2 * R.max()
    cols = spec.columns
    rows = int(np.ceil(spec.n_particles / cols))
    L = cols * pitch
    k = np.arange(spec.n_particles)
    jitter = 0.05 * pitch * rng.uniform(-1.0, 1.0, (spec.n_particles, 2))
    x = (k % cols + 0.5) * pitch + jitter[:, 0]
    y = (k // cols + 0.5) * pitch + jitter[:, 1]
    pos = np.column_stack([x, y, np.zeros_like(x)])
    return R, pos, L, rows * pitch


def _run(system: DEMSystem, stepper_name: str, t0: float, q, u, n_steps: int, every: int, probe, before=None,
         progress=None, offset: int = 0, total: int = 0):
    """Advance n_steps; ``progress(done, total)`` (optional) is told every 1 % of the stage."""
    stepper = make_stepper(stepper_name, system.dt)
    s = stepper.start(t0, q, u, system.accel)
    rec = [probe(s)]
    tell = max(1, n_steps // 100)
    for k in range(n_steps):
        if before is not None:
            before(s.t + system.dt)
        s = stepper.step(s, system.accel)
        if (k + 1) % every == 0:
            rec.append(probe(s))
        if progress is not None and ((k + 1) % tell == 0 or k + 1 == n_steps):
            progress(offset + k + 1, total)
    return s, rec


def run_direct_shear(spec: ShearBoxSpec, progress=None) -> ShearResult:
    """Generate, deposit, consolidate and shear one sample (see the module docstring).

    progress: optional ``callable(done_steps, total_steps)`` told as the three stages advance
    (the total is known once the deposition, consolidation and shear step counts are).
    Returns a :class:`ShearResult`: histories of ``n_output`` samples (displacement [m], forces
    [N], platen height [m]) and the peak / residual shear stress and normal stress [Pa].

    A tiny sample (16 disks, a few seconds) under the servo-held normal stress of 2 kPa:

    >>> spec = ShearBoxSpec(n_particles=16, columns=4, settle_time=0.1, consolidation_time=0.05,
    ...                     shear_speed=0.05, max_displacement=0.05, n_output=50)
    >>> r = run_direct_shear(spec)
    >>> r.displacement.shape, bool(abs(r.normal_stress_measured / spec.normal_stress - 1.0) < 0.2)
    ((50,), True)
    >>> bool(0.0 < r.peak_shear_stress < r.normal_stress_measured)   # a friction ratio below 1
    True
    """
    rng = np.random.default_rng(spec.seed)
    mat = Material(spec.E, spec.nu, spec.density)
    law = ContactLaw("hertz_mindlin", restitution=spec.restitution, tangential="mindlin", friction=spec.friction)
    R, pos, L, h_lattice = _generate(spec, rng)
    t = 2.0 * spec.radius  # disk thickness used for stresses and masses
    F_target = spec.normal_stress * L * t
    g = (0.0, -spec.gravity, 0.0)
    H_box = 4.0 * h_lattice + 4.0 * R.max()
    v_scale = max(np.sqrt(spec.gravity * h_lattice), spec.shear_speed)
    probe_sys = DEMSystem(R, pos, mat, law, 1.0, dim=2, thickness=t, v_ref=v_scale, allow_large_dt=True)
    dt = probe_sys.t_contact / spec.dt_per_contact
    # servo gain: time constant 1/(k_s G) of servo_time contact times against the sample stiffness
    # k_s ~ (columns / rows) k_c, k_c the Hertz tangent stiffness at the mean column force
    rows = max(1.0, spec.n_particles / spec.columns)
    K = 4.0 / 3.0 * probe_sys.E_pp * np.sqrt(spec.radius / 2.0)
    F_c = (F_target + float(np.sum(probe_sys.mass)) * spec.gravity) / spec.columns
    k_c = 1.5 * K ** (2.0 / 3.0) * F_c ** (1.0 / 3.0)
    k_s = spec.columns / rows * k_c
    # ... and at least fast enough to follow a collapse at twice the shear speed when unloaded
    gain = max(1.0 / (k_s * spec.servo_time * probe_sys.t_contact), 2.0 * spec.shear_speed / F_target)
    v_max = max(4.0 * spec.shear_speed, 0.5 * spec.radius / spec.consolidation_time)
    platen = Wall((0.0, h_lattice + 2.0 * R.max(), 0.0), (0.0, -1.0, 0.0), name="platen",
                  servo=Servo(F_target, gain, v_max))
    walls = [Wall((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), name="bottom"),
             Wall((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), name="left"),
             Wall((L, 0.0, 0.0), (-1.0, 0.0, 0.0), name="right")]
    # stage 2a: gravity deposition (platen parked above, inactive)
    system = DEMSystem(R, pos, mat, law, dt, walls=walls, gravity=g, dim=2, thickness=t, v_ref=v_scale)
    q, u = system.initial_state()
    # the top row needs its free-fall time sqrt(2 h / g) to land; settle_time comes on top
    t_settle = spec.settle_time + (np.sqrt(2.0 * h_lattice / spec.gravity) if spec.gravity > 0 else 0.0)
    n_settle = int(np.ceil(t_settle / dt))
    s, _ = _run(system, spec.integrator, 0.0, q, u, n_settle, n_settle, lambda s: None, progress=progress,
                total=n_settle)
    x_top = float(np.max(s.x[: system.N, 1] + R))
    platen.p = np.array([0.0, x_top, 0.0])
    # stage 2b: servo consolidation to sigma_n
    system = DEMSystem(R, s.x[: system.N], mat, law, dt, velocities=s.v[: system.N], omegas=s.v[system.N:],
                       walls=walls + [platen], gravity=g, dim=2, thickness=t, v_ref=v_scale,
                       max_initial_overlap=0.2)
    q, u = system.initial_state()
    n_cons = int(np.ceil(spec.consolidation_time / dt))
    s, _ = _run(system, spec.integrator, 0.0, q, u, n_cons, n_cons, lambda s: None, progress=progress,
                offset=n_settle, total=n_settle + n_cons)
    x = s.x[: system.N]
    y_top = float(platen.p[1])
    y_split = 0.5 * y_top
    log.info("direct shear: consolidated height %.4g m, platen force %.4g N (target %.4g N)",
             y_top, -system.wall_force[3] @ platen.n, F_target)
    # stage 3: shear the lower half
    v = np.array([spec.shear_speed, 0.0, 0.0])
    inf = np.inf
    lower = [Wall((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), velocity=v, name="bottom"),
             Wall((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), velocity=v, axis=1, bounds=(-inf, y_split), name="lower_left"),
             Wall((L, 0.0, 0.0), (-1.0, 0.0, 0.0), velocity=v, axis=1, bounds=(-inf, y_split), name="lower_right"),
             Wall((0.0, y_split, 0.0), (0.0, 1.0, 0.0), velocity=v, axis=0, bounds=(-inf, 0.0), name="lower_lip")]
    upper = [Wall((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), axis=1, bounds=(y_split, inf), name="upper_left"),
             Wall((L, 0.0, 0.0), (-1.0, 0.0, 0.0), axis=1, bounds=(y_split, inf), name="upper_right"),
             Wall((L, y_split, 0.0), (0.0, -1.0, 0.0), axis=0, bounds=(0.0, inf), name="upper_lip"),
             platen]
    system = DEMSystem(R, x, mat, law, dt, velocities=s.v[: system.N], omegas=s.v[system.N:],
                       walls=lower + upper, gravity=g, dim=2, thickness=t, v_ref=v_scale,
                       max_initial_overlap=0.2)
    q, u = system.initial_state()
    u_max = spec.max_displacement * L
    t_ramp = 2.0 * spec.ramp * u_max / spec.shear_speed  # covers spec.ramp * u_max while ramping
    n_shear = int(np.ceil((u_max / spec.shear_speed + 0.5 * t_ramp) / dt))
    every = max(1, n_shear // spec.n_output)
    i_upper = np.arange(len(lower), len(lower) + len(upper))
    i_lower = np.arange(len(lower))
    i_platen = len(lower) + len(upper) - 1

    def set_speed(t):  # walls move over [t - dt, t] at the speed of the step's end
        vel = v * min(1.0, t / t_ramp) if t_ramp > 0 else v
        for wl in lower:
            wl.v = vel

    weight = system.mass * spec.gravity

    def probe(st):
        wf = system.wall_force
        w_up = float(np.sum(weight[st.x[: system.N, 1] > y_split]))  # weight carried by the shear plane
        return (float(lower[0].p[0]), float(wf[i_upper, 0].sum()), -float(wf[i_lower, 0].sum()),
                float(-wf[i_platen] @ platen.n), float(platen.p[1]), w_up)

    s, rec = _run(system, spec.integrator, 0.0, q, u, n_shear, every, probe, before=set_speed, progress=progress,
                  offset=n_settle + n_cons, total=n_settle + n_cons + n_shear)
    arr = np.array(rec[1:])  # the first probe precedes any force evaluation of the stage
    disp, fs, fs_low, fnorm, hp, w_up = (arr[:, k] for k in range(6))
    area = L * t
    w = max(1, min(spec.smooth, fs.size))
    tau = np.convolve(fs, np.ones(w) / w, mode="same") / area
    resid_mask = disp >= (1.0 - spec.residual_window) * disp[-1]
    h0 = y_top
    eps_v = (hp - h0) / h0  # area strain of the 2-D sample (width constant), dilation > 0
    sigma_meas = float(np.mean(fnorm[resid_mask])) / area
    sigma_plane = float(np.mean(fnorm + w_up)) / area
    d_mean = 2.0 * float(np.mean(R))
    inertial = spec.shear_speed / y_top * d_mean * np.sqrt(spec.density / spec.normal_stress)
    return ShearResult(
        displacement=disp, shear_force=fs, shear_force_lower=fs_low, normal_force=fnorm, platen_height=hp,
        width=L, thickness=t, peak_shear_stress=float(np.max(tau)),
        residual_shear_stress=float(np.mean(tau[resid_mask])), normal_stress_measured=sigma_meas,
        shear_plane_normal_stress=sigma_plane,
        volumetric_strain=eps_v, inertial_number=float(inertial), n_steps=n_settle + n_cons + n_shear, dt=dt,
        info={"settle_time": t_settle, "servo_gain": gain, "height": y_top, "split": y_split, "F_target": F_target, "n_builds": system.nlist.n_builds})
