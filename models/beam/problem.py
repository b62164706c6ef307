"""The sliding-beam problem (beam + slider law + load) and its full and reduced simulation.

Full model: all FE DOFs q (n = 3·(n_elements+1)), constraints = clamp rows + slider row.
Reduced model: q = Ψ_glob p with constant M_red = ΨᵀMΨ, K_red = ΨᵀKΨ; the slider row
C_red = C_slider(s(t)) Ψ and f_red = Ψᵀ f(t) at every step; the clamp rows are dropped
(every column of Ψ satisfies them; keeping them makes the saddle-point system singular).
Both go through the same :class:`models.beam.genalpha.GeneralizedAlpha`.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence

import numpy as np

from models.beam.constraints import SlidingConstraint
from models.beam.fe import BeamFE, build_beam
from models.beam.genalpha import ConstrainedLinearDAE, GeneralizedAlpha
from models.beam.loads import HarmonicLoad
from models.beam.reduction import GlobalBasis
from models.beam.slider import SliderLaw, make_slider

log = logging.getLogger(__name__)


def time_grid(t_end: float, dt: float) -> np.ndarray:
    """Uniform grid 0, dt, …, t_end [s]; t_end must be a positive multiple of dt."""
    if not (math.isfinite(dt) and dt > 0.0):
        raise ValueError(f"dt must be > 0 s, got {dt!r}")
    if not (math.isfinite(t_end) and t_end > 0.0):
        raise ValueError(f"t_end must be > 0 s, got {t_end!r}")
    n = int(round(t_end / dt))
    if n < 1 or abs(n * dt - t_end) > 1e-9 * t_end:
        raise ValueError(f"t_end = {t_end} s must be an integer multiple of dt = {dt} s")
    return np.arange(n + 1) * dt


@dataclass
class BeamResponse:
    """Time histories of one simulation (full or reduced).

    w: (N+1, n_nodes) transverse nodal displacements [m]; tip: w at x = L [m];
    s: slider position [m]; lam: multipliers (N+1, m) [N];
    kinetic, strain, W_ext, W_constraint: energies and cumulative works [J];
    residual = E − E(0) − W_ext − W_constraint [J];
    wall_time_s: online cost (assembling the sampled DAE, integration, recovery of w).
    """

    model: str
    t: np.ndarray
    w: np.ndarray
    tip: np.ndarray
    s: np.ndarray
    lam: np.ndarray
    kinetic: np.ndarray
    strain: np.ndarray
    W_ext: np.ndarray
    W_constraint: np.ndarray
    slider_w: np.ndarray  # w(s(t)) [m], the slider constraint value (0 up to round-off)
    wall_time_s: float
    stats: Dict[str, float] = field(default_factory=dict)

    @property
    def energy(self) -> np.ndarray:
        return self.kinetic + self.strain

    @property
    def residual(self) -> np.ndarray:
        E = self.energy
        return E - E[0] - self.W_ext - self.W_constraint

    def energy_residual(self) -> float:
        """max_t |E − E(0) − W_ext − W_c| / max_t E (dimensionless)."""
        scale = float(np.max(np.abs(self.energy)))
        return float(np.max(np.abs(self.residual))) / scale if scale > 0.0 else 0.0


def _cumtrapz(t: np.ndarray, p: np.ndarray) -> np.ndarray:
    out = np.zeros_like(p)
    out[1:] = np.cumsum(0.5 * (p[1:] + p[:-1]) * np.diff(t))
    return out


@dataclass
class SlidingBeamProblem:
    """A clamped beam (x = 0) with a prescribed slider support w(s(t)) = 0 and a load."""

    beam: BeamFE
    slider: Optional[SliderLaw]
    load: HarmonicLoad
    clamp: bool = True

    def constraint(self, slider: Optional[bool] = None) -> SlidingConstraint:
        use = (self.slider is not None) if slider is None else slider
        return SlidingConstraint(self.beam, clamp=self.clamp, slider=use)

    # ---- sampled DAEs -------------------------------------------------------------
    def _slider_kinematics(self, t: np.ndarray):
        s = self.slider.position(t)
        self.slider.check_on_beam(t, self.beam.length)
        return s, self.slider.velocity(t), self.slider.acceleration(t)

    def full_dae(self, t: np.ndarray):
        """The full DAE on grid t, and the slider rows (or None) for energy bookkeeping."""
        beam = self.beam
        n = beam.ndof
        cons = self.constraint()
        b = self.load.vector(beam)
        f = self.load.time_law(t)[:, None] * b[None, :]
        blocks = []
        if self.clamp:
            blocks.append(np.broadcast_to(cons.clamp_rows(), (t.size, 3, n)))
        rows = None
        Cdot0 = np.zeros((cons.n_rows, n))
        Cddot0 = np.zeros((cons.n_rows, n))
        if self.slider is not None:
            s, sd, sdd = self._slider_kinematics(t)
            rows = cons.slider_rows(s)
            blocks.append(rows.dense(n)[:, None, :])
            Cdot0[-1] = sd[0] * _row(rows, 0, n, "dn")
            Cddot0[-1] = sdd[0] * _row(rows, 0, n, "dn") + sd[0] ** 2 * _row(rows, 0, n, "ddn")
        C = np.concatenate(blocks, axis=1) if blocks else np.zeros((t.size, 0, n))
        return ConstrainedLinearDAE(t, beam.M, beam.K, C, f, Cdot0, Cddot0), rows

    def reduced_dae(self, t: np.ndarray, basis: GlobalBasis):
        """The reduced DAE on grid t (slider row only), and the projected slider rows."""
        if self.slider is None:
            raise ValueError("the reduced model needs a slider law (slider kind 'none' given)")
        Psi = basis.Psi
        if Psi.shape[0] != self.beam.ndof:
            raise ValueError(f"basis has {Psi.shape[0]} rows, the beam has {self.beam.ndof} DOFs")
        Mr = Psi.T @ self.beam.M @ Psi
        Kr = Psi.T @ self.beam.K @ Psi
        b = Psi.T @ self.load.vector(self.beam)
        f = self.load.time_law(t)[:, None] * b[None, :]
        s, sd, sdd = self._slider_kinematics(t)
        rows = self.constraint().slider_rows(s)
        Cn = rows.project(Psi, "n")
        Cs0 = (rows.dn[0] @ Psi[rows.dofs[0]])
        Css0 = (rows.ddn[0] @ Psi[rows.dofs[0]])
        dae = ConstrainedLinearDAE(t, 0.5 * (Mr + Mr.T), 0.5 * (Kr + Kr.T), Cn[:, None, :], f,
                                   (sd[0] * Cs0)[None, :], (sdd[0] * Cs0 + sd[0] ** 2 * Css0)[None, :])
        return dae, rows

    # ---- simulation ---------------------------------------------------------------
    def simulate(self, t_end: float, dt: float, rho_inf: float = 0.85, solver: str = "schur",
                 basis: Optional[GlobalBasis] = None) -> BeamResponse:
        """Integrate from rest (q = v = 0) with generalised-α; reduced if ``basis`` is given."""
        t = time_grid(t_end, dt)
        integ = GeneralizedAlpha(rho_inf, solver)
        start = time.perf_counter()
        if basis is None:
            dae, rows = self.full_dae(t)
        else:
            dae, rows = self.reduced_dae(t, basis)
        n = dae.M.shape[0]
        res = integ.solve(dae, np.zeros(n), np.zeros(n))
        wd = self.beam.w_dofs
        if basis is None:
            w = res.q[:, wd]
        else:
            w = res.q @ basis.Psi[wd].T
        wall = time.perf_counter() - start
        # energy bookkeeping (post-processing, outside the timed online phase)
        kin = 0.5 * np.sum((res.v @ dae.M) * res.v, axis=1)
        strain = 0.5 * np.sum((res.q @ dae.K) * res.q, axis=1)
        W_ext = _cumtrapz(t, np.einsum("ti,ti->t", dae.f, res.v))
        if rows is not None:
            sd = self.slider.velocity(t)
            if basis is None:
                qe = res.q[np.arange(t.size)[:, None], rows.dofs]
                slope = np.einsum("tk,tk->t", rows.dn, qe)
                w_s = np.einsum("tk,tk->t", rows.n, qe)
            else:
                slope = np.einsum("tr,tr->t", rows.project(basis.Psi, "dn"), res.q)
                w_s = np.einsum("tr,tr->t", dae.C[:, 0, :], res.q)
            # power of the constraint force −Cᵀλ on the beam: −λᵀ C q̇ = λᵀ Ċ q = λ_s ṡ w′(s)
            P_c = res.lam[:, -1] * sd * slope
            W_c = _cumtrapz(t, P_c)
            s = self.slider.position(t)
        else:
            W_c = np.zeros(t.size)
            s = np.full(t.size, np.nan)
            w_s = np.zeros(t.size)
        stats = dict(res.stats)
        stats["online_wall_time_s"] = wall
        return BeamResponse("reduced" if basis is not None else "full", t, w, w[:, -1], s, res.lam,
                            kin, strain, W_ext, W_c, w_s, wall, stats)


def _row(rows, k: int, n: int, which: str) -> np.ndarray:
    out = np.zeros(n)
    out[rows.dofs[k]] = getattr(rows, which)[k]
    return out


def make_problem(length: float, n_elements: int, youngs_modulus: float, density: float,
                 area: float, second_moment: float, slider_kind: str = "none",
                 slider_center: float = 0.0, slider_amplitude: float = 0.0,
                 slider_frequency: float = 0.0, slider_start: float = 0.0, slider_end: float = 0.0,
                 slider_duration: float = 1.0, load_amplitudes: Sequence[float] = (),
                 load_frequencies: Sequence[float] = (), load_position: Optional[float] = None,
                 load_static: bool = False, clamp: bool = True) -> SlidingBeamProblem:
    """Build a :class:`SlidingBeamProblem` from plain SI parameters (raises ValueError)."""
    beam = build_beam(length, n_elements, youngs_modulus, density, area, second_moment)
    slider = make_slider(slider_kind, slider_center, slider_amplitude, slider_frequency,
                         slider_start, slider_end, slider_duration)
    if load_position is not None and not (0.0 <= float(load_position) <= beam.length):
        raise ValueError(f"load_position = {load_position} m is outside the beam [0, {beam.length}] m")
    load = HarmonicLoad(tuple(float(a) for a in load_amplitudes), tuple(float(f) for f in load_frequencies),
                        None if load_position is None else float(load_position), bool(load_static))
    return SlidingBeamProblem(beam, slider, load, bool(clamp))
