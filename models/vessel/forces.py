"""Loads on the vessel in the body frame (N, N m), DOF order surge, sway, heave, roll, pitch, yaw.

:class:`ForceModel` holds the constants of the enabled load models; each model adds its
load to an output vector. The loads depend on the state (q, nu), the time (waves) and
the actuator inputs, which are held constant by the caller over an output step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, Iterable, Tuple

import numpy as np

from models.vessel import compiled
from models.vessel.data import VesselData

FORCE_MODELS = ("restoring", "linear_damping", "quadratic_damping", "coriolis", "current", "wind",
                "propellers", "rudders", "waves")
#: per-DOF filters of the first-order wave model (seed): excitation force and RAO motion
FILTER_WAVE_FORCE = np.array([0, 0, 1, 1, 1, 0], dtype=np.float64)
FILTER_RAO_MOTION = np.array([1, 1, 0, 0, 0, 1], dtype=np.float64)


@dataclass
class Environment:
    """Current, wind and regular waves (SI, nautical directions in rad, 0 North, clockwise).

    current_direction: where the current flows TO; wind_direction and wave_direction:
    where wind and waves come FROM.
    """

    current_speed: float = 0.0  # m/s
    current_direction: float = 0.0  # rad
    wind_speed: float = 0.0  # m/s
    wind_direction: float = 0.0  # rad
    wave_amplitude: float = 0.0  # m
    wave_direction: float = 0.0  # rad

    def __post_init__(self) -> None:
        for name in ("current_speed", "current_direction", "wind_speed", "wind_direction", "wave_amplitude",
                     "wave_direction"):
            v = float(getattr(self, name))
            if not math.isfinite(v):
                raise ValueError(f"environment.{name}: must be finite, got {v}")
            if name in ("current_speed", "wind_speed", "wave_amplitude") and v < 0:
                raise ValueError(f"environment.{name}: must be >= 0, got {v}")
            setattr(self, name, v)

    @property
    def current_ne(self) -> Tuple[float, float]:
        """Current velocity (North, East), m/s."""
        return (self.current_speed * math.cos(self.current_direction),
                self.current_speed * math.sin(self.current_direction))

    @property
    def wind_ne(self) -> Tuple[float, float]:
        """Wind velocity (North, East), m/s (it blows from wind_direction)."""
        return (-self.wind_speed * math.cos(self.wind_direction), -self.wind_speed * math.sin(self.wind_direction))


@dataclass
class Inputs:
    """Actuator and wave inputs held over one output step."""

    rotation: np.ndarray  # (k,) propeller rotation, 1/s
    azimuth: np.ndarray  # (k,) rad
    pitch_ratio: np.ndarray  # (k,) P/D
    rudder: np.ndarray  # (r,) rudder angle, rad
    wave_force_amp: np.ndarray = field(default_factory=lambda: np.zeros(6))  # (6,) N (N m), filtered, x amplitude
    wave_force_phase: np.ndarray = field(default_factory=lambda: np.zeros(6))  # (6,) rad

    def row(self) -> np.ndarray:
        """The inputs as one row (rotation, azimuth, pitch ratio, rudder, wave amplitude, wave phase)."""
        return np.concatenate([self.rotation, self.azimuth, self.pitch_ratio, self.rudder, self.wave_force_amp,
                               self.wave_force_phase]).astype(np.float64)

    def copy(self) -> "Inputs":
        return Inputs(self.rotation.copy(), self.azimuth.copy(), self.pitch_ratio.copy(), self.rudder.copy(),
                      self.wave_force_amp.copy(), self.wave_force_phase.copy())


class ForceModel:
    """The enabled load models of one vessel in one environment."""

    def __init__(self, data: VesselData, enabled: Iterable[str], env: Environment):
        enabled = list(enabled)
        unknown = sorted(set(enabled) - set(FORCE_MODELS))
        if unknown:
            raise ValueError(f"forces: unknown load model(s) {unknown}; known: {list(FORCE_MODELS)}")
        self.enabled = tuple(m for m in FORCE_MODELS if m in enabled)
        self.data, self.env = data, env
        self.total_mass = data.total_mass
        self.K = data.restoring.copy()
        self.B = data.linear_damping.copy()
        self.Bq = data.quadratic_damping.copy()
        self.current_ne = env.current_ne
        self.wind_ne = env.wind_ne
        props, ruds = data.propellers, data.rudders
        self.p_pos = np.array([p.position for p in props]).reshape(-1, 3)
        self.p_d = np.array([p.diameter for p in props])
        self.p_w = np.array([p.wake_fraction for p in props])
        self.p_ktp = np.array([p.kt_pitch for p in props])
        self.p_kta = np.array([p.kt_advance for p in props])
        self.r_pos = np.array([r.position for r in ruds]).reshape(-1, 3)
        self.r_area = np.array([r.area for r in ruds])
        self.r_cl = np.array([r.lift_slope for r in ruds])
        self.r_prop = np.array([r.propeller for r in ruds], dtype=int)
        self._has_prop = self.r_prop >= 0
        self._slip_coef = 8.0 / (math.pi * data.rho_water * self.p_d ** 2)  # momentum theory, 1/(kg/m)
        self._lift_coef = 0.5 * data.rho_water * self.r_area * self.r_cl
        self._fns = [getattr(self, "_" + m) for m in self.enabled]
        self.packed = self._pack()

    def _pack(self):
        """The constant arguments of the compiled loads (layouts in :mod:`models.vessel.compiled`)."""
        data = self.data
        flags = np.array([1 if m in self.enabled else 0 for m in FORCE_MODELS], dtype=np.int64)
        env = np.array([data.rho_water, data.rho_air, *self.current_ne, *self.wind_ne, data.waves.frequency,
                        self.env.current_speed], dtype=np.float64)
        tables = (data.current, data.wind)
        m = max(t.angle.size for t in tables)
        tab = np.zeros((2, 4, m))
        for j, t in enumerate(tables):
            n = t.angle.size
            tab[j, :, :n] = np.vstack([t.angle, t.cx, t.cy, t.cn])
            tab[j, :, n:] = tab[j, :, n - 1:n]
        tab_n = np.array([t.angle.size for t in tables], dtype=np.int64)
        tab_geom = np.array([[t.frontal_area, t.lateral_area, t.length] for t in tables], dtype=np.float64)
        props = np.column_stack([self.p_d, self.p_w, self.p_ktp, self.p_kta, data.rho_water * self.p_d ** 3,
                                 self.p_pos, self._slip_coef]).reshape(-1, 9)
        ruds = np.column_stack([self._lift_coef, self.r_prop, self.r_pos[:, 0], self.r_pos[:, 2]]).reshape(-1, 4)
        f64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)  # noqa: E731
        return (flags, env, f64(self.K), f64(self.Bq), f64(self.B), f64(self.total_mass), tab, tab_n, tab_geom,
                f64(props), f64(ruds))

    # -- public ---------------------------------------------------------------------------
    def total(self, t: float, q: np.ndarray, nu: np.ndarray, inp: Inputs) -> np.ndarray:
        """Sum of all enabled loads (6,) at time t (s), positions q, body velocities nu.

        The compiled scalar path of the field (:mod:`models.vessel.compiled`); it equals the
        sum of :meth:`components`, which the tests check.
        """
        return compiled.loads(float(t), np.asarray(q, dtype=np.float64), np.asarray(nu, dtype=np.float64),
                              inp.row(), *self.packed)

    def components(self, t: float, q: np.ndarray, nu: np.ndarray, inp: Inputs) -> Dict[str, np.ndarray]:
        """Each enabled load separately: name -> (6,)."""
        nu_r = self.relative_velocity(q, nu)
        res = {}
        for name, fn in zip(self.enabled, self._fns):
            res[name] = np.zeros(6)
            fn(res[name], t, q, nu, nu_r, inp)
        return res

    def relative_velocity(self, q: np.ndarray, nu: np.ndarray) -> np.ndarray:
        """Body velocity relative to the water, nu - current in the body frame (6,)."""
        if "current" not in self.enabled or self.env.current_speed == 0.0:
            return nu
        c, s = math.cos(q[5]), math.sin(q[5])
        cn, ce = self.current_ne
        nu_r = nu.copy()
        nu_r[0] -= c * cn + s * ce
        nu_r[1] -= -s * cn + c * ce
        return nu_r

    def thrust(self, nu_r: np.ndarray, inp: Inputs) -> np.ndarray:
        """Propeller thrusts (k,) N: rho D^4 n|n| kt_pitch P/D - rho D^3 kt_advance u_a |n|."""
        rho = self.data.rho_water
        n = inp.rotation
        ua = (1.0 - self.p_w) * (nu_r[0] * np.cos(inp.azimuth) + nu_r[1] * np.sin(inp.azimuth))
        d3 = self.p_d ** 3
        return rho * d3 * (self.p_d * n * np.abs(n) * self.p_ktp * inp.pitch_ratio - self.p_kta * ua * np.abs(n))

    # -- load models: add to out ----------------------------------------------------------
    def _restoring(self, out, t, q, nu, nu_r, inp):
        out -= self.K * q

    def _linear_damping(self, out, t, q, nu, nu_r, inp):
        out -= self.B @ nu_r

    def _quadratic_damping(self, out, t, q, nu, nu_r, inp):
        out -= self.Bq * np.abs(nu_r) * nu_r

    def _coriolis(self, out, t, q, nu, nu_r, inp):
        # Kirchhoff: d(p1)/dt = p1 x w, d(p2)/dt = p2 x w + p1 x v with p = (M + A) nu; no power.
        # (vector form; the compiled path writes it out component by component)
        p = self.total_mass @ nu
        out[:3] += np.cross(p[:3], nu[3:])
        out[3:] += np.cross(p[3:], nu[3:]) + np.cross(p[:3], nu[:3])

    def _coefficient_load(self, out, table, rho, wx, wy):
        v2 = wx * wx + wy * wy
        if v2 == 0.0:
            return
        cx, cy, cn = table.coefficients(math.atan2(-wy, -wx))
        qd = 0.5 * rho * v2
        out[0] += qd * cx * table.frontal_area
        out[1] += qd * cy * table.lateral_area
        out[5] += qd * cn * table.lateral_area * table.length

    def _current(self, out, t, q, nu, nu_r, inp):
        self._coefficient_load(out, self.data.current, self.data.rho_water, -nu_r[0], -nu_r[1])

    def _wind(self, out, t, q, nu, nu_r, inp):
        c, s = math.cos(q[5]), math.sin(q[5])
        wn, we = self.wind_ne
        wx = c * wn + s * we - nu[0]
        wy = -s * wn + c * we - nu[1]
        self._coefficient_load(out, self.data.wind, self.data.rho_air, wx, wy)

    def _propellers(self, out, t, q, nu, nu_r, inp):
        if self.p_d.size == 0:
            return
        T = self.thrust(nu_r, inp)
        fx, fy = T * np.cos(inp.azimuth), T * np.sin(inp.azimuth)
        out[0] += fx.sum()
        out[1] += fy.sum()
        out[3] -= self.p_pos[:, 2] @ fy
        out[4] += self.p_pos[:, 2] @ fx
        out[5] += self.p_pos[:, 0] @ fy - self.p_pos[:, 1] @ fx

    def _rudders(self, out, t, q, nu, nu_r, inp):
        if self.r_area.size == 0:
            return
        u2 = np.full(self.r_area.size, nu_r[0] * abs(nu_r[0]))
        if self._has_prop.any():
            k = self.r_prop[self._has_prop]
            T = self.thrust(nu_r, inp)[k]
            ua = (1.0 - self.p_w[k]) * nu_r[0]
            u2[self._has_prop] = ua * np.abs(ua) + self._slip_coef[k] * T
        lift = self._lift_coef * inp.rudder * u2
        out[1] += lift.sum()
        out[3] -= self.r_pos[:, 2] @ lift
        out[5] += self.r_pos[:, 0] @ lift

    def _waves(self, out, t, q, nu, nu_r, inp):
        out += inp.wave_force_amp * np.cos(self.data.waves.frequency * t + inp.wave_force_phase)
