"""A DEM system of spheres (dim=3) or disks (dim=2) with rigid walls and gravity.

State layout for the Verlet-family steppers (:mod:`models.integrators.verlet`):
``q = [x; theta]`` and ``u = [v; omega]``, arrays of shape (2N, 3): positions (m), accumulated
rotation angles (rad, unused by the forces), velocities (m/s), angular velocities (rad/s).
:meth:`DEMSystem.accel` returns ``[F/m + g; T/I]``. Disks live in the plane z = 0: their
z force and in-plane torques are zeroed, mass ``rho pi R^2 L`` (thickness L, default 2R),
inertia ``m R^2 / 2``; spheres have ``m = rho 4/3 pi R^3``, ``I = (2/5) m R^2``.

Contact geometry for the pair (i, j), unit normal ``n`` from i to j: overlap
``delta = R_i + R_j - |x_j - x_i|``; relative velocity at the contact
``v_rel = v_i - v_j + omega_i x (R_i n) + omega_j x (R_j n)``; approach rate ``v_rel . n``.
The tangential spring ``xi`` (history) is rotated onto the current tangent plane, advanced
by ``v_t dt`` and cut back to the Coulomb limit. ``accel`` advances the history and the
walls by one step ``dt`` per call (the stepper contract calls it once per step).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from models.dem.closed_forms import hertz_impact, linear_impact
from models.dem.laws import ContactLaw, elastic_energy, normal_force, tangential_stiffness
from models.dem.materials import (DEMInputError, Material, check_positive, effective_modulus,
                                  effective_radius, effective_shear_modulus)
from models.dem.neighbors import NeighborList
from models.dem.walls import Wall

log = logging.getLogger(__name__)


@dataclass
class ContactSet:
    """Active contacts of one evaluation: indices, overlaps (m), normal forces (N)."""

    i: np.ndarray
    j: np.ndarray  # particle index, or wall index for wall contacts
    delta: np.ndarray
    fn: np.ndarray
    fn_raw: np.ndarray  # before clamping at zero


class DEMSystem:
    """Particles, walls, one contact law, gravity; ``accel(t, q, u)`` for the steppers.

    radius (N,) m; positions (N, 3) m; velocities (N, 3) m/s; omegas (N, 3) rad/s;
    material: one Material for every particle, or a sequence of N Materials (one per particle:
    pairs then use the Hertz effective E*, G* of their two materials, and the numpy backend);
    walls: list of Wall; gravity (3,) m/s^2; dt: step (s).
    max_initial_overlap: largest accepted initial overlap / smaller radius (-).
    dt_fraction: dt must not exceed this fraction of the estimated contact time at ``v_ref``
    (m/s) unless ``allow_large_dt``.
    backend: ``numpy`` (vectorised), ``numba`` (compiled serial pair kernel, models.dem.kernels),
    ``parallel`` (per-pair slots and a per-particle gather on ``threads`` numba threads,
    models.dem.parallel; one material) or ``auto`` (numba when installed and N >= 1000; parallel
    when also ``threads`` > 1). ``numba`` with ``threads`` > 1 runs the parallel path.
    threads: threads of the parallel path (same contacts and history as the serial kernel,
    forces equal to it, dissipated energy to round-off; results independent of the count).
    """

    def __init__(self, radius, positions, material: Material, law: ContactLaw, dt: float,
                 velocities=None, omegas=None, walls: Optional[Sequence[Wall]] = None,
                 gravity=(0.0, 0.0, 0.0), dim: int = 3, thickness=None,
                 max_initial_overlap: float = 0.02, dt_fraction: float = 0.1,
                 v_ref: Optional[float] = None, allow_large_dt: bool = False, skin: Optional[float] = None,
                 backend: str = "auto", threads: int = 1):
        if dim not in (2, 3):
            raise DEMInputError(f"dim: must be 2 or 3, got {dim!r}")
        self.dim = dim
        from models.dem.kernels import HAVE_NUMBA

        if backend not in ("auto", "numpy", "numba", "parallel"):
            raise DEMInputError(f"backend: must be auto, numpy, numba or parallel, got {backend!r}")
        if backend in ("numba", "parallel") and not HAVE_NUMBA:
            raise DEMInputError(f"backend: {backend} requested but numba is not installed")
        self._backend_req = backend
        if int(threads) != threads or threads < 1:
            raise DEMInputError(f"threads: must be an integer >= 1, got {threads!r}")
        self.threads = int(threads)
        self.radius = np.array(radius, dtype=np.float64).reshape(-1)
        N = self.radius.size
        if N < 1:
            raise DEMInputError("radius: need at least one particle")
        check_positive("radius", self.radius)
        self.N = N
        self.x0 = _as_n3(positions, N, "positions")
        self.v0 = _as_n3(velocities, N, "velocities")
        self.w0 = _as_n3(omegas, N, "omegas")
        self.materials = _per_particle(material, N)
        self.mixed = any(m != self.materials[0] for m in self.materials)
        material = self.materials[0] if not self.mixed else material
        if self.mixed and backend in ("numba", "parallel"):
            raise DEMInputError(f"backend: the {backend} pair kernel takes one particle material; use numpy or auto")
        self.material, self.law = material, law
        self.backend = "numba" if (not self.mixed and (backend in ("numba", "parallel") or
                                                       (backend == "auto" and HAVE_NUMBA and N >= 1000))) else "numpy"
        if self.backend == "numba" and (backend == "parallel" or self.threads > 1):
            self.backend = "parallel"
        self._par = None  # per-pair state of the parallel path (models.dem.parallel)
        self.walls: List[Wall] = list(walls or [])
        self.g = np.array(gravity, dtype=np.float64).reshape(3)
        dt = float(dt)
        if not np.isfinite(dt) or dt <= 0:
            raise DEMInputError(f"dt: must be > 0 s, got {dt!r}")
        self.dt = dt
        rho = np.array([m.density for m in self.materials]) if self.mixed else self.materials[0].density
        if dim == 3:
            self.mass = rho * 4.0 / 3.0 * np.pi * self.radius ** 3
            self.inertia = 0.4 * self.mass * self.radius ** 2
        else:
            L = 2.0 * self.radius if thickness is None else np.broadcast_to(np.asarray(thickness, float), (N,))
            check_positive("thickness", L)
            self.mass = rho * np.pi * self.radius ** 2 * L
            self.inertia = 0.5 * self.mass * self.radius ** 2
            for name, arr in (("positions", self.x0), ("velocities", self.v0)):
                if np.any(arr[:, 2] != 0):
                    raise DEMInputError(f"{name}: disks (dim=2) need z components equal to 0")
            if np.any(self.w0[:, :2] != 0):
                raise DEMInputError("omegas: disks (dim=2) spin about z only; x and y components must be 0")
        if self.mixed:
            self._set_mixed_moduli()
        else:
            self.E_pp = float(effective_modulus(material.E, material.nu, material.E, material.nu))
            self.G_pp = float(effective_shear_modulus(material.E, material.nu, material.E, material.nu))
            self.E_w = np.array([float(effective_modulus(material.E, material.nu, *_wall_elastic(w)))
                                 for w in self.walls])
            self.G_w = np.array([float(effective_shear_modulus(material.E, material.nu, *_wall_elastic(w)))
                                 for w in self.walls])
        self.nlist = NeighborList(self.radius, 0.2 * float(self.radius.min()) if skin is None else skin)
        self._hist_pp = (np.empty(0, np.int64), np.empty((0, 3)))
        self._hist_pw = (np.empty(0, np.int64), np.empty((0, 3)))
        self._t_last: Optional[float] = None
        self.wall_force = np.zeros((len(self.walls), 3))
        self.contacts_pp: Optional[ContactSet] = None
        self.contacts_pw: Optional[ContactSet] = None
        self.dissipated = 0.0  # J, work of dashpots and friction (rate integrated per step)
        self._check_overlaps(max_initial_overlap)
        self.t_contact = self.contact_time_estimate(v_ref)
        if dt > dt_fraction * self.t_contact and not allow_large_dt:
            raise DEMInputError(
                f"dt: {dt:.4g} s exceeds {dt_fraction:g} x the estimated contact time {self.t_contact:.4g} s "
                f"(limit {dt_fraction * self.t_contact:.4g} s); set allow_large_dt to override")

    # -- several particle materials (Hertz effective properties per contact) ------------
    def _set_mixed_moduli(self) -> None:
        """Per-particle compliances; E_pp, G_pp, E_w, G_w become the stiffest combination
        (what the contact-time estimate needs), the forces use the per-contact values."""
        E = np.array([m.E for m in self.materials])
        nu = np.array([m.nu for m in self.materials])
        self._cE = (1.0 - nu ** 2) / E  # 1/E* = cE_i + cE_j
        self._cG = (2.0 - nu) * 2.0 * (1.0 + nu) / E  # 1/G* = cG_i + cG_j (Mindlin)
        wall = [_wall_elastic(w) for w in self.walls]
        self._cE_w = np.array([0.0 if e is None else (1.0 - n ** 2) / e for e, n in wall])
        self._cG_w = np.array([0.0 if e is None else (2.0 - n) * 2.0 * (1.0 + n) / e for e, n in wall])
        self.E_pp = float(1.0 / (2.0 * self._cE.min()))
        self.G_pp = float(1.0 / (2.0 * self._cG.min()))
        self.E_w = 1.0 / (self._cE.min() + self._cE_w)
        self.G_w = 1.0 / (self._cG.min() + self._cG_w)

    def _pair_moduli(self, i: np.ndarray, j: np.ndarray):
        """E*, G* (Pa) of the pairs (i, j): scalars for one material, arrays for several."""
        if not self.mixed:
            return self.E_pp, self.G_pp
        return 1.0 / (self._cE[i] + self._cE[j]), 1.0 / (self._cG[i] + self._cG[j])

    def _wall_moduli(self, i: np.ndarray, k: np.ndarray):
        """E*, G* (Pa) of particle i on wall k, per contact."""
        if not self.mixed:
            return self.E_w[k], self.G_w[k]
        return 1.0 / (self._cE[i] + self._cE_w[k]), 1.0 / (self._cG[i] + self._cG_w[k])

    # -- set-up checks -------------------------------------------------------------------
    def _check_overlaps(self, limit: float) -> None:
        pairs = self.nlist.update(self.x0)
        if pairs.size:
            i, j = pairs[:, 0], pairs[:, 1]
            d = np.linalg.norm(self.x0[j] - self.x0[i], axis=1)
            rel = (self.radius[i] + self.radius[j] - d) / np.minimum(self.radius[i], self.radius[j])
            k = int(np.argmax(rel))
            if rel[k] > limit:
                raise DEMInputError(
                    f"positions: initial overlap of particles {i[k]} and {j[k]} is {rel[k]:.4g} x the smaller "
                    f"radius, above the limit max_initial_overlap={limit:g}")
        wi, wk, wd, _ = self._wall_contacts(self.x0)
        if wi.size:
            rel = wd / self.radius[wi]
            m = int(np.argmax(rel))
            if rel[m] > limit:
                raise DEMInputError(
                    f"positions: initial overlap of particle {wi[m]} with wall {self.walls[wk[m]].name!r} is "
                    f"{rel[m]:.4g} x its radius, above the limit max_initial_overlap={limit:g}")

    def contact_time_estimate(self, v_ref: Optional[float] = None) -> float:
        """Shortest elastic contact time (s) of the smallest particle at speed ``v_ref`` (m/s)."""
        if v_ref is None:
            speeds = [np.max(np.linalg.norm(self.v0, axis=1)), np.sqrt(np.linalg.norm(self.g) * self.radius.max())]
            speeds += [np.linalg.norm(w.v) for w in self.walls]
            v_ref = max(max(speeds), 1e-3)
        k = int(np.argmin(self.radius))
        m, R = float(self.mass[k]), float(self.radius[k])
        if self.mixed:  # lower bound: smallest mass and radius with the stiffest E*
            m = float(self.mass.min())
        if self.law.is_hertzian:
            times = [hertz_impact(self.E_pp, R / 2.0, m / 2.0, v_ref).duration]
            times += [hertz_impact(float(E), R, m, v_ref).duration for E in self.E_w]
        else:
            times = [linear_impact(self.law.k_n, m / 2.0, v_ref).duration, linear_impact(self.law.k_n, m, v_ref).duration]
        return float(min(times))

    # -- state -----------------------------------------------------------------------------
    def initial_state(self):
        """``(q0, u0)`` arrays (2N, 3) for the steppers."""
        q0 = np.vstack([self.x0, np.zeros((self.N, 3))])
        u0 = np.vstack([self.v0, self.w0])
        return q0, u0

    def _advance_walls(self, t: float) -> None:
        if self._t_last is None:
            self._t_last = t
            return
        h = t - self._t_last
        self._t_last = t
        for k, w in enumerate(self.walls):
            if w.servo is not None:
                F = float(-self.wall_force[k] @ w.n)  # push of the particles on the wall, N
                speed = np.clip(w.servo.gain * (w.servo.target_force - F), -w.servo.v_max, w.servo.v_max)
                w.v = speed * w.n
            w.p = w.p + w.v * h

    # -- contacts and history of the last evaluation ------------------------------------------
    @property
    def contacts_pp(self) -> Optional[ContactSet]:
        """Particle-particle contacts of the last evaluation (the parallel path compacts them on demand)."""
        if self._par is not None and self._par.stale:
            self._compact_parallel()
        return self._contacts_pp

    @contacts_pp.setter
    def contacts_pp(self, value: Optional[ContactSet]) -> None:
        self._contacts_pp = value

    @property
    def _hist_pp(self):
        """Tangential history of the particle pairs in contact: (sorted keys i N + j, springs (M, 3) m)."""
        if self._par is not None and self._par.stale:
            self._compact_parallel()
        return self._hist_pp_store

    @_hist_pp.setter
    def _hist_pp(self, value) -> None:
        self._hist_pp_store = value

    def _compact_parallel(self) -> None:
        st = self._par
        idx = np.flatnonzero(st.on)
        i, j = st.pairs[idx, 0], st.pairs[idx, 1]
        self._contacts_pp = ContactSet(i, j, st.delta[idx], st.fn[idx], st.fraw[idx])
        self._hist_pp_store = ((i * self.N + j, st.xi[idx]) if self.law.tangential != "none"
                               else (np.empty(0, np.int64), np.empty((0, 3))))
        st.stale = False

    # -- forces ---------------------------------------------------------------------------
    def accel(self, t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Accelerations ``[F/m + g; T/I]`` (2N, 3); advances walls and contact history by dt."""
        if self.backend == "parallel":
            return self._accel_parallel(t, q, u)
        N = self.N
        x, v, w = q[:N], u[:N], u[N:]
        self._advance_walls(t)
        F = np.zeros((N, 3))
        T = np.zeros((N, 3))
        self._pair_forces(x, v, w, F, T)
        self._wall_forces(x, v, w, F, T)
        a = F / self.mass[:, None] + self.g
        alpha = T / self.inertia[:, None]
        if self.dim == 2:
            a[:, 2] = 0.0
            alpha[:, :2] = 0.0
        return np.vstack([a, alpha])

    def _accel_parallel(self, t: float, q: np.ndarray, u: np.ndarray, disp2: Optional[float] = None) -> np.ndarray:
        """:meth:`accel` on ``threads`` threads: compiled neighbour check, per-pair slots, per-particle
        gather and accelerations (models.dem.parallel); walls, if any, in numpy. ``disp2``: the largest
        squared displacement (m^2) of q's positions from the neighbour list's reference positions when
        the caller computed it already (models.dem.stepping)."""
        from models.dem import parallel as K

        N, law, nl = self.N, self.law, self.nlist
        q = np.ascontiguousarray(q, dtype=np.float64)
        u = np.ascontiguousarray(u, dtype=np.float64)
        x, v, w = q[:N], u[:N], u[N:]
        self._advance_walls(t)
        nw = K.use_threads(self.threads)
        if disp2 is None and nl.x_ref is not None:
            disp2 = K.max_displacement2(x, nl.x_ref, K.N_BLOCKS)
        if nl.x_ref is None or disp2 > (0.5 * nl.skin) ** 2:
            nl._build(x)
        law_args = self._compiled_law_args()
        tang, mu_r = law_args[6], law_args[9]
        st = self._par
        if st is None or st.n_builds != nl.n_builds:
            self._par = st = K.PairSlots.build(nl.pairs, N, nl.n_builds, st, self._hist_pp, mu_r > 0.0)
        K.run_pass(K.pair_slots, K.pair_slots_serial,
                   (x, v, w, self.radius, self.mass, st.pairs, st.bounds, self.dt, *law_args, st.xi, st.f, st.c, st.mr,
                    st.delta, st.fn, st.fraw, st.on, st.diss_b), st.counter, nw)
        st.stale = True
        if not law.is_elastic or tang:
            self.dissipated += float(np.sum(st.diss_b))
        out = np.empty((2 * N, 3))
        torque, rolling = tang > 0 or mu_r > 0.0, mu_r > 0.0
        if not self.walls:  # forces straight into accelerations
            K.run_pass(K.gather_accel, K.gather_accel_serial,
                       (st.ptr, st.inc, st.f, st.c, st.mr, self.radius, torque, rolling, self.mass, self.inertia,
                        self.g, self.dim == 2, out, st.pbounds), st.counter, nw)
            return out
        F = np.empty((N, 3))
        T = np.empty((N, 3))
        K.run_pass(K.gather, K.gather_serial,
                   (st.ptr, st.inc, st.f, st.c, st.mr, self.radius, torque, rolling, F, T, st.pbounds), st.counter, nw)
        self._wall_forces(x, v, w, F, T)
        K.accelerations(F, T, self.mass, self.inertia, self.g, self.dim == 2, out)
        return out

    def _tangential(self, hist, keys, n, vrel, vn, delta, k_tan_n, Gstar, Rstar, fn):
        """Tangential forces on the first body (M, 3) and the updated history."""
        law = self.law
        M = keys.size
        if law.tangential == "none" or M == 0:
            return np.zeros((M, 3)), (np.empty(0, np.int64), np.empty((0, 3)))
        old_keys, old_xi = hist
        xi = np.zeros((M, 3))
        if old_keys.size:
            pos = np.searchsorted(old_keys, keys)
            pos_c = np.minimum(pos, old_keys.size - 1)
            found = old_keys[pos_c] == keys
            xi[found] = old_xi[pos_c[found]]
        # rotate the spring onto the current tangent plane, keeping its length
        mag = _rownorm(xi)
        xi = xi - np.einsum("ij,ij->i", xi, n)[:, None] * n
        mag_new = _rownorm(xi)
        scale = np.divide(mag, mag_new, out=np.ones_like(mag), where=mag_new > 0)
        xi *= scale[:, None]
        vt = vrel - vn[:, None] * n
        xi += vt * self.dt
        kt = tangential_stiffness(law, delta, k_tan_n, Gstar, Rstar)
        ft = -kt[:, None] * xi
        ft_mag = _rownorm(ft)
        limit = law.friction * fn
        slip = ft_mag > limit
        if np.any(slip):
            s = np.divide(limit[slip], ft_mag[slip], out=np.zeros(int(slip.sum())), where=ft_mag[slip] > 0)
            ft[slip] *= s[:, None]
            xi[slip] = np.divide(-ft[slip], kt[slip, None], out=np.zeros((int(slip.sum()), 3)),
                                 where=kt[slip, None] > 0)
        self.dissipated += float(np.sum(np.abs(np.sum(ft[slip] * vt[slip], axis=1)))) * self.dt
        return ft, (keys, xi)

    def _rolling(self, w_rel, Rstar, fn):
        mu_r = self.law.rolling_friction
        if mu_r == 0.0 or w_rel.shape[0] == 0:
            return np.zeros_like(w_rel)
        mag = np.linalg.norm(w_rel, axis=1)
        unit = np.divide(w_rel, mag[:, None], out=np.zeros_like(w_rel), where=mag[:, None] > 0)
        return -(mu_r * Rstar * fn)[:, None] * unit

    def _pair_forces(self, x, v, w, F, T) -> None:
        pairs = self.nlist.update(x)
        law, r, N = self.law, self.radius, self.N
        if pairs.size == 0:
            self.contacts_pp = ContactSet(*(np.empty(0, np.int64),) * 2, *(np.empty(0),) * 3)
            self._hist_pp = (np.empty(0, np.int64), np.empty((0, 3)))
            return
        if self.backend == "numba":
            self._pair_forces_numba(pairs, x, v, w, F, T)
            return
        i, j = pairs[:, 0], pairs[:, 1]
        d_vec = x[j] - x[i]
        dist = _rownorm(d_vec)
        delta = r[i] + r[j] - dist
        on = delta > 0
        i, j, d_vec, dist, delta = i[on], j[on], d_vec[on], dist[on], delta[on]
        n = d_vec / dist[:, None]
        Ri, Rj = r[i][:, None], r[j][:, None]
        vrel = v[i] - v[j] + _cross(Ri * w[i] + Rj * w[j], n)
        vn = np.einsum("ij,ij->i", vrel, n)
        Rstar = effective_radius(r[i], r[j])
        mstar = self.mass[i] * self.mass[j] / (self.mass[i] + self.mass[j])
        Estar, Gstar = self._pair_moduli(i, j)
        fn_raw, k_tan = normal_force(law, delta, vn, Estar, Rstar, mstar, clamp=False)
        fn = fn_raw if law.attractive else np.maximum(fn_raw, 0.0)
        keys = i * N + j
        ft, self._hist_pp = self._tangential(self._hist_pp, keys, n, vrel, vn, delta, k_tan, Gstar, Rstar, fn)
        fi = -fn[:, None] * n + ft
        _scatter_add(F, i, fi)
        _scatter_add(F, j, -fi)
        if law.tangential != "none" or law.rolling_friction:
            nxf = _cross(n, ft)
            mr = self._rolling(w[i] - w[j], Rstar, fn)
            _scatter_add(T, i, Ri * nxf + mr)
            _scatter_add(T, j, Rj * nxf - mr)
        if not law.is_elastic:
            self.dissipated += float(np.sum((fn - self._elastic_force(delta, Estar, Rstar)) * vn)) * self.dt
        self.contacts_pp = ContactSet(i, j, delta, fn, fn_raw)

    def _compiled_law_args(self) -> tuple:
        """The contact law as the compiled kernels take it: (Hertzian, hm_c, k_n (N/m), eta (N s/m;
        -1: from zeta), zeta, attractive, tangential law (0 none, 1 linear, 2 Mindlin), k_t / k_n,
        friction, rolling friction, E* (Pa), G* (Pa))."""
        law = self.law
        return (law.is_hertzian, float(law.hm_c or 0.0), float(law.k_n or 0.0),
                -1.0 if law.eta is None else float(law.eta), float(law.zeta or 0.0), bool(law.attractive),
                {"none": 0, "linear": 1, "mindlin": 2}[law.tangential], float(law.k_t_ratio), float(law.friction),
                float(law.rolling_friction), self.E_pp, self.G_pp)

    def _pair_forces_numba(self, pairs, x, v, w, F, T) -> None:
        from models.dem.kernels import pair_forces

        law_args = self._compiled_law_args()
        hk, hx = self._hist_pp
        ci, cj, cd, cfn, craw, nk, nx, diss = pair_forces(
            np.ascontiguousarray(x), np.ascontiguousarray(v), np.ascontiguousarray(w), self.radius, self.mass, pairs, hk,
            np.ascontiguousarray(hx), self.N, self.dt, *law_args, F, T)
        self._hist_pp = (nk, nx)
        if not self.law.is_elastic or law_args[6]:
            self.dissipated += float(diss)
        self.contacts_pp = ContactSet(ci, cj, cd, cfn, craw)

    def _elastic_force(self, delta, Estar, Rstar):
        if self.law.is_hertzian:
            return 4.0 / 3.0 * Estar * np.sqrt(Rstar) * delta ** 1.5
        return self.law.k_n * delta

    def _wall_contacts(self, x):
        """Particle-wall contacts: particle and wall indices, overlap (m), unit normal particle -> wall.

        The contact point is the closest point of the wall (its strip, for a bounded wall) to the
        centre; only centres in front of the plane count. At a strip edge the normal points from
        the edge to the centre, so particles roll over edges instead of being caught behind them.
        """
        r = self.radius
        out_i, out_k, out_d, out_n = [], [], [], []
        for k, wl in enumerate(self.walls):
            h = (x - wl.p) @ wl.n  # height above the plane
            cand = np.nonzero((h > 0) & (h < r))[0] if wl.axis is None else np.nonzero(h > 0)[0]
            if cand.size == 0:
                continue
            if wl.axis is None:
                out_i.append(cand), out_k.append(np.full(cand.size, k)), out_d.append(r[cand] - h[cand])
                out_n.append(np.broadcast_to(-wl.n, (cand.size, 3)))
                continue
            xc = x[cand]
            c = xc - h[cand][:, None] * wl.n  # projection on the plane
            a = wl.axis
            c[:, a] = np.clip(c[:, a], wl.p[a] + wl.bounds[0], wl.p[a] + wl.bounds[1])
            d_vec = xc - c
            dist = _rownorm(d_vec)
            on = dist < r[cand]
            if not np.any(on):
                continue
            cand, d_vec, dist = cand[on], d_vec[on], dist[on]
            out_i.append(cand), out_k.append(np.full(cand.size, k)), out_d.append(r[cand] - dist)
            out_n.append(-d_vec / dist[:, None])
        if not out_i:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), np.empty((0, 3))
        return (np.concatenate(out_i), np.concatenate(out_k), np.concatenate(out_d), np.vstack(out_n))

    def _wall_forces(self, x, v, w, F, T) -> None:
        law, r, N, W = self.law, self.radius, self.N, len(self.walls)
        self.wall_force = np.zeros((W, 3))
        if W == 0:
            self.contacts_pw = None
            return
        Vw = np.array([wl.v for wl in self.walls])
        i, k, delta, n = self._wall_contacts(x)
        if i.size == 0:
            self.contacts_pw = ContactSet(i, k, np.empty(0), np.empty(0), np.empty(0))
            self._hist_pw = (np.empty(0, np.int64), np.empty((0, 3)))
            return
        Ri = r[i][:, None]
        vrel = v[i] - Vw[k] + _cross(Ri * w[i], n)
        vn = np.einsum("ij,ij->i", vrel, n)
        Rstar, mstar = r[i], self.mass[i]
        Estar, Gstar_w = self._wall_moduli(i, k)
        fn_raw, k_tan = normal_force(law, delta, vn, Estar, Rstar, mstar, clamp=False)
        fn = fn_raw if law.attractive else np.maximum(fn_raw, 0.0)
        keys = i * W + k
        order = np.argsort(keys)
        i, k, keys, delta, n, vrel, vn = i[order], k[order], keys[order], delta[order], n[order], vrel[order], vn[order]
        Rstar, mstar, Estar, Gstar_w, fn, fn_raw, k_tan = (a[order] for a in (Rstar, mstar, Estar, Gstar_w, fn,
                                                                              fn_raw, k_tan))
        Ri = r[i][:, None]
        ft, self._hist_pw = self._tangential(self._hist_pw, keys, n, vrel, vn, delta, k_tan, Gstar_w, Rstar, fn)
        fi = -fn[:, None] * n + ft
        _scatter_add(F, i, fi)
        _scatter_add(self.wall_force, k, -fi)
        mr = self._rolling(w[i], Rstar, fn)
        _scatter_add(T, i, Ri * _cross(n, ft) + mr)
        if not law.is_elastic:
            self.dissipated += float(np.sum((fn - self._elastic_force(delta, Estar, Rstar)) * vn)) * self.dt
        self.contacts_pw = ContactSet(i, k, delta, fn, fn_raw)

    # -- energy ---------------------------------------------------------------------------
    def energy(self, q: np.ndarray, u: np.ndarray) -> dict:
        """Kinetic, rotational, normal-spring, gravity energies (J) at the state (q, u).

        The contact energy is recomputed from the positions (walls at their current place);
        tangential springs are not included.
        """
        N = self.N
        x, v, w = q[:N], u[:N], u[N:]
        kin = 0.5 * float(np.sum(self.mass * np.sum(v * v, axis=1)))
        rot = 0.5 * float(np.sum(self.inertia * np.sum(w * w, axis=1)))
        grav = -float(np.sum(self.mass * (x @ self.g)))
        el = 0.0
        pairs = self.nlist.update(x)
        if pairs.size:
            i, j = pairs[:, 0], pairs[:, 1]
            delta = self.radius[i] + self.radius[j] - np.linalg.norm(x[j] - x[i], axis=1)
            on = delta > 0
            el += float(np.sum(elastic_energy(self.law, delta[on], self._pair_moduli(i[on], j[on])[0],
                                              effective_radius(self.radius[i][on], self.radius[j][on]))))
        wi, wk, wd, _ = self._wall_contacts(x)
        if wi.size:
            el += float(np.sum(elastic_energy(self.law, wd, self._wall_moduli(wi, wk)[0], self.radius[wi])))
        return {"kinetic": kin, "rotational": rot, "elastic": el, "gravity": grav,
                "total": kin + rot + el + grav}


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (M, 3) arrays (faster than np.cross for large M)."""
    out = np.empty_like(a)
    out[:, 0] = a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1]
    out[:, 1] = a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2]
    out[:, 2] = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    return out


def _scatter_add(out: np.ndarray, idx: np.ndarray, vals: np.ndarray) -> None:
    """out[idx] += vals with repeated indices, per column by bincount (faster than np.add.at)."""
    n = out.shape[0]
    for c in range(out.shape[1]):
        out[:, c] += np.bincount(idx, weights=vals[:, c], minlength=n)


def _rownorm(a: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("ij,ij->i", a, a))


def _per_particle(material, N: int) -> tuple:
    """One Material per particle from a Material or a sequence of N Materials."""
    if isinstance(material, Material):
        return (material,) * N
    mats = tuple(material)
    if len(mats) != N or not all(isinstance(m, Material) for m in mats):
        raise DEMInputError(f"material: give one Material or a sequence of {N} Materials (one per particle), "
                            f"got {len(mats)} item(s)")
    return mats


def _wall_elastic(w: Wall):
    return (None, None) if w.material is None else (w.material.E, w.material.nu)


def _as_n3(arr, N: int, name: str) -> np.ndarray:
    if arr is None:
        return np.zeros((N, 3))
    a = np.array(arr, dtype=np.float64)
    if a.shape == (N, 2):
        a = np.hstack([a, np.zeros((N, 1))])
    if a.shape != (N, 3):
        raise DEMInputError(f"{name}: expected shape ({N}, 3), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise DEMInputError(f"{name}: must be finite")
    return a
