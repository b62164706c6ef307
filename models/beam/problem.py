"""The sliding-beam problem (beam + slider law + load) and its full and reduced simulation.

Full model: all FE DOFs q (n = 3·(n_elements+1)), constraints = clamp rows + slider row.
Reduced model: q = Ψ_glob p with constant M_red = ΨᵀMΨ, K_red = ΨᵀKΨ; the slider row
C_red = C_slider(s(t)) Ψ and f_red = Ψᵀ f(t) at every step; the clamp rows are dropped
(every column of Ψ satisfies them; keeping them makes the saddle-point system singular).
Both go through the same :class:`models.beam.genalpha.GeneralizedAlpha`.
"""
from __future__ import annotations

import inspect
import logging
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from models.beam.constraints import SlidingConstraint
from models.beam.fe import BeamFE, build_beam
from models.beam.genalpha import ConstrainedLinearDAE, GeneralizedAlpha
from models.beam.loads import HarmonicLoad
from models.beam.modal import Modes, constrained_modes
from models.beam.reduction import GlobalBasis
from models.beam.slider import SliderLaw, make_slider

log = logging.getLogger(__name__)


def time_grid(t_end: float, dt: float) -> np.ndarray:
    """Uniform grid 0, dt, …, t_end [s]; t_end must be a positive multiple of dt.

    >>> time_grid(0.01, 0.0025)
    array([0.    , 0.0025, 0.005 , 0.0075, 0.01  ])
    """
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

    # ---- modes ----------------------------------------------------------------------
    def _position(self, s: Optional[float]) -> Optional[float]:
        if s is not None or self.slider is None:
            return None if s is None else float(s)
        return float(self.slider.position(np.array([0.0]))[0])

    def full_modes(self, n_modes: int, s: Optional[float] = None, kind: Optional[str] = None) -> Modes:
        """Lowest modes of the full FE model with the slider frozen at ``s`` [m].

        ``s`` defaults to the slider position at t = 0 (no slider row without a slider law);
        ``kind`` = ``"bending"`` / ``"axial"`` / ``None`` (all, labelled). Shapes (ndof, n_modes).

        >>> p = make_problem(2.0, 20, 2.1e11, 7850.0, 1e-4, 2e-10, slider_kind="fixed", slider_center=2.0)
        >>> f = p.full_modes(2, kind="bending").frequencies_hz   # clamped-pinned beam
        """
        pos = self._position(s)
        C = self.constraint(slider=pos is not None).matrix(pos)
        return constrained_modes(self.beam.M, self.beam.K, C, n_modes, kind=kind)

    def reduced_modes(self, basis: GlobalBasis, n_modes: int, s: Optional[float] = None,
                      kind: Optional[str] = None) -> Modes:
        """Lowest modes of the reduced model q = Ψ p with the slider frozen at ``s`` [m].

        The eigenproblem ΨᵀKΨ y = ω² ΨᵀMΨ y with the projected slider row C(s) Ψ y = 0 (the
        clamp is in every column of Ψ). ``shapes`` are in reduced coordinates (r_glob, n_modes);
        ``basis.Psi @ modes.shapes`` gives them on the beam's DOFs. Labels and ``kind`` act on
        the beam DOFs through Ψ. ``s`` defaults to the slider position at t = 0.

        >>> # frequencies of the reduced model against the full one at the same position:
        >>> # problem.reduced_modes(basis, 4, s=1.5).frequencies_hz / problem.full_modes(4, s=1.5).frequencies_hz
        """
        Psi = basis.Psi
        if Psi.shape[0] != self.beam.ndof:
            raise ValueError(f"basis has {Psi.shape[0]} rows, the beam has {self.beam.ndof} DOFs")
        pos = self._position(s)
        if pos is None:
            C = np.zeros((0, Psi.shape[1]))
        else:
            C = self.constraint().slider_rows(np.array([pos])).project(Psi, "n")
        Mr = Psi.T @ self.beam.M @ Psi
        Kr = Psi.T @ self.beam.K @ Psi
        return constrained_modes(0.5 * (Mr + Mr.T), 0.5 * (Kr + Kr.T), C, n_modes, kind=kind, basis=Psi)

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


@dataclass(frozen=True)
class BeamSpec:
    """Geometry and material of a uniform beam (SI): length [m], elements, E [Pa], ρ [kg/m³],
    cross-section area A [m²], second moment of area I [m⁴]."""

    length: float
    n_elements: int
    youngs_modulus: float
    density: float
    area: float
    second_moment: float


@dataclass(frozen=True)
class SliderSpec:
    """The slider law: ``kind`` none / fixed / sinusoidal / linear (see :mod:`models.beam.slider`).

    center [m], amplitude [m], frequency [Hz] (fixed, sinusoidal); start, end [m] and
    duration [s] (linear travel).
    """

    kind: str = "none"
    center: float = 0.0
    amplitude: float = 0.0
    frequency: float = 0.0
    start: float = 0.0
    end: float = 0.0
    duration: float = 1.0


@dataclass(frozen=True)
class LoadSpec:
    """Transverse load g(t) = Σ a_k sin(2π f_k t): amplitudes [N, or N/m for a line load],
    frequencies [Hz], position [m] of a point force (None: uniform line load), static (g = Σ a_k)."""

    amplitudes: Tuple[float, ...] = ()
    frequencies: Tuple[float, ...] = ()
    position: Optional[float] = None
    static: bool = False


@dataclass(frozen=True)
class ProblemSpec:
    """A whole sliding-beam problem: beam, slider, load, clamp at x = 0.

    >>> spec = ProblemSpec(BeamSpec(2.0, 20, 2.1e11, 7850.0, 1e-4, 2e-10),
    ...                    SliderSpec("sinusoidal", center=1.1, amplitude=0.6, frequency=1.0),
    ...                    LoadSpec((5.0,), (3.0,), position=2.0))
    >>> make_problem(spec).beam.ndof
    63
    """

    beam: BeamSpec
    slider: SliderSpec = SliderSpec()
    load: LoadSpec = LoadSpec()
    clamp: bool = True

    def to_kwargs(self) -> dict:
        """The flat keyword form of :func:`make_problem` (the Hydra ``source`` config's keys)."""
        out = dict(asdict(self.beam))
        out.update({f"slider_{k}": v for k, v in asdict(self.slider).items()})
        out.update({f"load_{k}": v for k, v in asdict(self.load).items()})
        out["clamp"] = self.clamp
        return out

    @classmethod
    def from_kwargs(cls, **kw) -> "ProblemSpec":
        """The inverse of :meth:`to_kwargs`; unknown or missing keys raise TypeError."""
        bound = inspect.signature(_flat_form).bind(**kw)
        bound.apply_defaults()
        a = bound.arguments
        pick = lambda prefix, typ: typ(**{f.removeprefix(prefix): a[f] for f in a if f.startswith(prefix)})  # noqa: E731
        return cls(BeamSpec(*(a[k] for k in ("length", "n_elements", "youngs_modulus", "density", "area",
                                              "second_moment"))),
                   pick("slider_", SliderSpec),
                   LoadSpec(tuple(a["load_amplitudes"]), tuple(a["load_frequencies"]), a["load_position"],
                            a["load_static"]),
                   a["clamp"])


def _flat_form(length: float, n_elements: int, youngs_modulus: float, density: float,
               area: float, second_moment: float, slider_kind: str = "none",
               slider_center: float = 0.0, slider_amplitude: float = 0.0,
               slider_frequency: float = 0.0, slider_start: float = 0.0, slider_end: float = 0.0,
               slider_duration: float = 1.0, load_amplitudes: Sequence[float] = (),
               load_frequencies: Sequence[float] = (), load_position: Optional[float] = None,
               load_static: bool = False, clamp: bool = True) -> None:
    """The flat keyword form of :func:`make_problem` (its signature is the contract)."""


def make_problem(*args, **kwargs) -> SlidingBeamProblem:
    """Build a :class:`SlidingBeamProblem` from a :class:`ProblemSpec` or flat SI keywords.

    Two forms (the second is the Hydra ``source`` config's and stays supported)::

        make_problem(ProblemSpec(BeamSpec(...), SliderSpec(...), LoadSpec(...)))
        make_problem(length, n_elements, youngs_modulus, density, area, second_moment,
                     slider_kind="none", slider_center=0.0, slider_amplitude=0.0,
                     slider_frequency=0.0, slider_start=0.0, slider_end=0.0, slider_duration=1.0,
                     load_amplitudes=(), load_frequencies=(), load_position=None,
                     load_static=False, clamp=True)

    Units: m, Pa, kg/m³, m², m⁴, Hz, s, N (N/m for a line load). Raises ValueError on an
    invalid value and TypeError on an unknown keyword.

    >>> p = make_problem(2.0, 20, 2.1e11, 7850.0, 1e-4, 2e-10, slider_kind="fixed", slider_center=1.0)
    >>> p.beam.ndof, p.constraint().n_rows
    (63, 4)
    """
    if len(args) == 1 and isinstance(args[0], ProblemSpec) and not kwargs:
        spec = args[0]
    elif "spec" in kwargs and not args and len(kwargs) == 1:
        spec = kwargs["spec"]
    else:
        bound = inspect.signature(_flat_form).bind(*args, **kwargs)
        spec = ProblemSpec.from_kwargs(**bound.arguments)
    b, sl, ld = spec.beam, spec.slider, spec.load
    beam = build_beam(b.length, b.n_elements, b.youngs_modulus, b.density, b.area, b.second_moment)
    slider = make_slider(sl.kind, sl.center, sl.amplitude, sl.frequency, sl.start, sl.end, sl.duration)
    load_position = ld.position
    if load_position is not None and not (0.0 <= float(load_position) <= beam.length):
        raise ValueError(f"load_position = {load_position} m is outside the beam [0, {beam.length}] m")
    load = HarmonicLoad(tuple(float(a) for a in ld.amplitudes), tuple(float(f) for f in ld.frequencies),
                        None if load_position is None else float(load_position), bool(ld.static))
    return SlidingBeamProblem(beam, slider, load, bool(spec.clamp))
