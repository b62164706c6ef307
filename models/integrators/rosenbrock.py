"""Rosenbrock ROS2 (two stages, order 2, L-stable; KPP coefficients), fixed and adaptive step.

With ``gamma = 1 + 1/sqrt(2)``, column vectors and ``J_ij = df_i/dy_j`` (not transposed),
``M = I - gamma h J`` is factorised once per attempt and two right-hand sides are solved::

    M k1 = gamma h f(t, y)              + gamma^2 h^2 f_t(t, y)
    M k2 = gamma h f(t + h, y + k1/gamma) - 2 k1 - gamma^2 h^2 f_t(t, y)
    y_new = y + (3 k1 + k2) / (2 gamma)
    err   = (k1 + k2) / (2 gamma)        (embedded first-order error, computed directly)

The f_t term is kept for non-autonomous fields (option ``time_derivative``: ``auto`` uses
f_t = 0 for problems declared ``autonomous``, else the problem's f_t or, when it has none,
a central difference in t; ``none`` drops it, which
is only right for autonomous fields and exists to show the order loss).

* ``ros2``: fixed step ``h`` (or ``n_steps``); the last step (and any step reaching an output
  time) is shortened so the grid ends exactly on ``t_end`` and on every output time.
* ``ros2_adaptive``: error norm ``sqrt(mean((err_i / (atol_i + rtol_i max(|y_i|, |y_new,i|)))^2))``
  with tolerances per state by name (``rtol_by_name``/``atol_by_name``) and a global
  fallback; controller ``h_new = h * clip(safety * err^(-1/2), fac_min, fac_max)`` with no
  growth right after a rejection; a rejected attempt retries from the accepted (t, y)
  (J, f and f_t at that point are reused, only M is refactorised); ``h_min``, ``h_max``,
  ``max_steps`` (attempts). A failure of the field, Jacobian, LU or protocol is fatal and
  is never rescued by shrinking h. ``kernel``: ``auto`` runs the stages of systems with at
  most 32 states as two numba-compiled calls (``_ros2_small``: LU with partial pivoting and
  the solves; the same method), ``lapack`` always uses LAPACK getrf/getrs and numpy. ``loop``:
  ``python`` (default) steps in Python; ``compiled`` runs the whole loop in numba on the
  problem's compiled in-place field (``ODEProblem.inplace``, :mod:`models.integrators._ros2_loop`;
  compiled once per field and process, so meant for long or repeated solves). A larger
  problem that declares a banded Jacobian (``ODEProblem.jac_band = (lower, upper)``) is
  factorised banded (LAPACK gbtrf/gbtrs on the bands of M, O(n b^2) instead of O(n^3); in the
  compiled loop without row interchanges where partial pivoting would make none); the
  kernel ``lapack`` keeps it dense.
* W-method variant (compiled loop only, off by default): ROS2 is of order 2 for any matrix in
  place of J (the terms in it cancel to order h^2), so ``reuse_steps = N > 0`` keeps J and the
  LU of M for up to N steps while the step size is held: an accepted step whose controller
  proposes a growth between 1 and ``hold_growth`` (default 1.5) keeps h; any other step size
  gets a Jacobian at the current point and a new LU.
"""
from __future__ import annotations

import logging
import math
from typing import Any, Dict, Optional

import numpy as np
from scipy.linalg import get_lapack_funcs

from models.integrators.base import per_state, IntegratorFailure, Integrator, Stats, _Counted
from models.integrators.registry import register

log = logging.getLogger(__name__)

GAMMA = 1.0 + 1.0 / math.sqrt(2.0)
_SING = 64.0 * np.finfo(float).eps  # pivot ratio below which I - gamma h J counts as singular
Array = np.ndarray


def _check_pivots(info: int, dmin: float, dmax: float, t: float, h: float) -> None:
    """IntegratorFailure when the LU of M = I - gamma h J (scale >= 1) failed or is singular."""
    if info != 0 or not dmin > _SING * max(dmax, 1.0):
        raise IntegratorFailure(f"LU of I - gamma h J singular at t={t:.6g}, h={h:.3g} (min pivot {dmin:.3g})",
                                "lu", t)


def _stages(prob, t: float, y: Array, h: float, f0: Array, ft: Optional[Array], solve) -> tuple:
    """ROS2's two stages with the factorised M (``solve(b)`` = M^-1 b, may overwrite b):
    (y_new, 2 err). ``ft`` None = no f_t term (see :meth:`_ROS2Core._attempt`)."""
    b = h * f0
    if ft is not None:
        c = (GAMMA * h * h) * ft
        b += c
    u1 = solve(b)
    b = h * prob.rhs(t + h, y + u1)
    b -= u1
    b -= u1
    if ft is not None:
        b -= c
    u2 = solve(b)
    s2 = u1 + u2  # = 2 err
    y_new = y + u1
    y_new += 0.5 * s2
    return y_new, s2


class _ROS2Core(Integrator):
    """Shared stage computation of ROS2."""

    needs_jacobian = True

    def _time_derivative(self, prob: _Counted):
        mode = self.options["time_derivative"]
        if mode not in ("auto", "none", "fd"):
            raise ValueError(f"time_derivative: must be auto|none|fd, got {mode!r}")
        if mode == "none" or (mode == "auto" and prob.autonomous):
            return None
        if mode == "auto" and prob.has_f_t:
            return prob.f_t
        span = prob.t_span[1] - prob.t_span[0]

        def f_t_fd(t: float, y: Array) -> Array:
            h = 1.0e-6 * max(abs(t), span)
            return (prob.rhs(t + h, y) - prob.rhs(t - h, y)) / (2.0 * h)

        return f_t_fd

    @staticmethod
    def _lapack(n: int):
        return get_lapack_funcs(("getrf", "getrs"), (np.zeros((1, 1)),))

    def _attempt(self, prob: _Counted, stats: Stats, t: float, y: Array, h: float, f0: Array, J: Array,
                 ft: Optional[Array], eye: Array, getrf, getrs) -> tuple:
        """One ROS2 attempt from (t, y) with step h: (y_new, 2 err). ``ft`` None = no f_t term.

        Implemented with the scaled stages u_i = k_i / gamma (the same method, fewer
        operations): M u1 = h f + gamma h^2 f_t, M u2 = h f(t + h, y + u1) - 2 u1 - gamma h^2 f_t,
        y_new = y + (3 u1 + u2)/2, err = (u1 + u2)/2 = (k1 + k2)/(2 gamma).
        """
        M = J * (-GAMMA * h)
        M += eye
        lu, piv, info = getrf(M, overwrite_a=True)
        stats.nlu += 1
        if M.shape[0] <= 64:  # Python floats are cheaper than numpy reductions for small n
            d = sorted(map(abs, lu.diagonal().tolist()))
            dmin, dmax = d[0], d[-1]
        else:
            d = np.abs(lu.diagonal())
            dmin, dmax = float(d.min()), float(d.max())
        _check_pivots(info, dmin, dmax, t, h)
        return _stages(prob, t, y, h, f0, ft, lambda b: getrs(lu, piv, b, overwrite_b=True)[0])

    @staticmethod
    def _attempt_banded(prob: _Counted, stats: Stats, t: float, y: Array, h: float, f0: Array, J: Array,
                        ft: Optional[Array], band: tuple, AB: Array, gbtrf, gbtrs) -> tuple:
        """:meth:`_attempt` with M = I - gamma h J factorised in LAPACK band storage.

        ``AB`` (2 kl + ku + 1, n): row kl + ku + i - j holds M[i, j]; the first kl rows are
        gbtrf's workspace for the fill-in of the pivoting.
        """
        kl, ku = band
        n = y.size
        AB[:kl] = 0.0
        for d in range(-kl, ku + 1):  # M's diagonals: offset d = j - i
            row = kl + ku - d
            diag = np.diagonal(J, d)
            if d >= 0:
                np.multiply(diag, -GAMMA * h, out=AB[row, d:])
            else:
                np.multiply(diag, -GAMMA * h, out=AB[row, :n + d])
                AB[row, n + d:] = 0.0
            if d == 0:
                AB[row] += 1.0
        lu, piv, info = gbtrf(AB, kl, ku, overwrite_ab=True)
        stats.nlu += 1
        d = np.abs(lu[kl + ku])
        dmin, dmax = float(d.min()), float(d.max())
        _check_pivots(info, dmin, dmax, t, h)
        return _stages(prob, t, y, h, f0, ft, lambda b: gbtrs(lu, kl, ku, b, piv)[0])


@register("ros2")
class ROS2(_ROS2Core):
    """ROS2 with a fixed step ``h`` (s) or ``n_steps`` equal steps; last step shortened."""

    name = "ros2"
    defaults: Dict[str, Any] = {"h": None, "n_steps": None, "time_derivative": "auto"}

    def _grid(self, t_span, t_eval: Array) -> Array:
        t0, t1 = t_span
        span = t1 - t0
        h, n_steps = self.options["h"], self.options["n_steps"]
        if (h is None) == (n_steps is None):
            raise ValueError("ros2: give exactly one of h (step size, s) and n_steps")
        if n_steps is not None:
            if int(n_steps) < 1:
                raise ValueError(f"n_steps: must be >= 1, got {n_steps}")
            grid = np.linspace(t0, t1, int(n_steps) + 1)
        else:
            h = float(h)
            if not (h > 0 and math.isfinite(h)):
                raise ValueError(f"h: must be positive and finite, got {h}")
            n_full = int(math.floor(span / h * (1.0 + 1e-12)))
            grid = t0 + h * np.arange(n_full + 1)
            if t1 - grid[-1] > 1e-12 * span:
                grid = np.append(grid, t1)  # the last step is shortened
            else:
                grid[-1] = t1
        grid = np.union1d(grid, t_eval)
        keep = np.concatenate(([True], np.diff(grid) > 1e-12 * span))
        return grid[keep]

    def _solve_ode(self, prob: _Counted, t_eval: Array, t_out: list, y_out: list) -> None:
        stats = prob.stats
        grid = self._grid(prob.t_span, t_eval)
        f_t = self._time_derivative(prob)
        getrf, getrs = self._lapack(prob.n)
        eye = np.eye(prob.n)
        span = prob.t_span[1] - prob.t_span[0]
        targets = iter(t_eval)
        target = next(targets)
        t, y = float(grid[0]), prob.y0.copy()
        for t_next in grid[1:]:
            while target is not None and abs(t - target) <= 1e-12 * span:
                t_out.append(target)
                y_out.append(y.copy())
                target = next(targets, None)
            h = float(t_next) - t
            f0 = prob.rhs(t, y)
            J = prob.jac(t, y)
            ft = f_t(t, y) if f_t is not None else None
            stats.n_steps += 1
            y = self._attempt(prob, stats, t, y, h, f0, J, ft, eye, getrf, getrs)[0]
            stats.n_accepted += 1
            t = float(t_next)
        while target is not None and abs(t - target) <= 1e-12 * span:
            t_out.append(target)
            y_out.append(y.copy())
            target = next(targets, None)


@register("ros2_adaptive")
class ROS2Adaptive(_ROS2Core):
    """ROS2 with the embedded estimator and a step-size controller (see module docstring)."""

    name = "ros2_adaptive"
    defaults: Dict[str, Any] = {
        "rtol": 1.0e-6,
        "atol": 1.0e-8,
        "rtol_by_name": None,
        "atol_by_name": None,
        "h0": None,
        "h_min": 0.0,
        "h_max": math.inf,
        "max_steps": 200000,
        "safety": 0.9,
        "fac_min": 0.2,
        "fac_max": 5.0,
        "time_derivative": "auto",
        "kernel": "auto",
        "loop": "python",
        "reuse_steps": 0,
        "hold_growth": 1.5,
    }

    def _small_kernel(self, n: int):
        """The compiled stage module for small systems, or None (LAPACK path)."""
        kernel = self.options["kernel"]
        if kernel not in ("auto", "lapack"):
            raise ValueError(f"kernel: must be auto|lapack, got {kernel!r}")
        if kernel == "lapack":
            return None
        try:
            from models.integrators import _ros2_small
        except ImportError:  # numba missing: LAPACK path
            return None
        return _ros2_small if n <= _ros2_small.SMALL_N else None

    @staticmethod
    def _attempt_small(small, prob: _Counted, stats: Stats, t: float, y: Array, ay: Array, h: float, f0: Array,
                       J: Array, ft: Optional[Array], rtol: Array, atol: Array, LU: Array, piv: Array,
                       zeros: Array) -> tuple:
        """One attempt with the compiled stages: (y_new, 2 err, |y_new|, Σ scaled err²)."""
        has_c = ft is not None
        c = (GAMMA * h * h) * ft if has_c else zeros
        u1, dmin, dmax = small.stage1(J, GAMMA * h, h, f0, c, has_c, LU, piv)
        stats.nlu += 1
        if not dmin > _SING * max(dmax, 1.0):
            raise IntegratorFailure(f"LU of I - gamma h J singular at t={t:.6g}, h={h:.3g} (min pivot {dmin:.3g})",
                                    "lu", t)
        f1 = prob.rhs(t + h, y + u1)
        return small.stage2(LU, piv, h, f1, u1, c, has_c, y, ay, rtol, atol)

    def _tolerances(self, prob: _Counted) -> tuple:
        o = self.options
        n = prob.n
        rtol = per_state(o["rtol"], o["rtol_by_name"], prob.names, n, "rtol_by_name")
        atol = per_state(o["atol"], o["atol_by_name"], prob.names, n, "atol_by_name")
        if np.any(rtol < 0) or np.any(atol < 0) or np.any(rtol + atol <= 0):
            raise ValueError("rtol/atol: must be >= 0 with rtol + atol > 0 for every state")
        for key in ("safety", "fac_min", "fac_max"):
            if not float(o[key]) > 0:
                raise ValueError(f"{key}: must be > 0")
        if not (0 < o["safety"] < 1 and o["fac_min"] < 1 < o["fac_max"]):
            raise ValueError("controller: need 0 < safety < 1 and fac_min < 1 < fac_max")
        if not (0 <= o["h_min"] < o["h_max"]) or int(o["max_steps"]) < 1:
            raise ValueError("h_min/h_max/max_steps: need 0 <= h_min < h_max and max_steps >= 1")
        return rtol, atol

    def _initial_step(self, prob: _Counted, t: float, y: Array, f0: Array, rtol: Array, atol: Array) -> float:
        """Hairer-Norsett-Wanner starting step for order 2 (one extra f evaluation)."""
        span = prob.t_span[1] - prob.t_span[0]
        sc = atol + rtol * np.abs(y)
        d0 = math.sqrt(float(np.mean((y / sc) ** 2)))
        d1 = math.sqrt(float(np.mean((f0 / sc) ** 2)))
        h0 = 1.0e-6 * span if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
        h0 = min(h0, span)
        f1 = prob.rhs(t + h0, y + h0 * f0)
        d2 = math.sqrt(float(np.mean(((f1 - f0) / sc) ** 2))) / h0
        if max(d1, d2) <= 1e-15:
            h1 = max(1e-6 * span, h0 * 1e-3)
        else:
            h1 = (0.01 / max(d1, d2)) ** (1.0 / 3.0)
        return min(100.0 * h0, h1, span)

    def _reuse(self) -> tuple:
        """(reuse_steps, hold_growth), checked: the W-method variant (module docstring)."""
        o = self.options
        reuse, hold = o["reuse_steps"], o["hold_growth"]
        if isinstance(reuse, bool) or not isinstance(reuse, (int, np.integer)) or reuse < 0:
            raise ValueError(f"reuse_steps: must be an integer >= 0, got {reuse!r}")
        if not (isinstance(hold, (int, float)) and math.isfinite(hold) and hold >= 1.0):
            raise ValueError(f"hold_growth: must be a finite number >= 1, got {hold!r}")
        return int(reuse), float(hold)

    def _solve_ode(self, prob: _Counted, t_eval: Array, t_out: list, y_out: list) -> None:
        o = self.options
        if o["loop"] not in ("python", "compiled"):
            raise ValueError(f"loop: must be python|compiled, got {o['loop']!r}")
        if o["loop"] == "compiled":
            return self._solve_compiled(prob, t_eval, t_out, y_out)
        if self._reuse()[0] > 0:
            raise ValueError("reuse_steps > 0 (the W-method variant) runs in the compiled loop only: "
                             "set loop='compiled'")
        self.not_reported = type(self).not_reported
        stats = prob.stats
        rtol, atol = self._tolerances(prob)
        safety, fac_min, fac_max = float(o["safety"]), float(o["fac_min"]), float(o["fac_max"])
        h_min, h_max, max_steps = float(o["h_min"]), float(o["h_max"]), int(o["max_steps"])
        f_t = self._time_derivative(prob)
        getrf, getrs = self._lapack(prob.n)
        eye = np.eye(prob.n)
        inv_n = 1.0 / prob.n
        small = self._small_kernel(prob.n)
        band = prob.jac_band if (small is None and o["kernel"] == "auto" and prob.jac_band is not None
                                 and sum(prob.jac_band) + 1 < prob.n) else None
        if band is not None:
            from scipy.linalg import get_lapack_funcs as _glf

            gbtrf, gbtrs = _glf(("gbtrf", "gbtrs"), (np.zeros((1, 1)),))
            AB = np.zeros((2 * band[0] + band[1] + 1, prob.n), order="F")
        LU, piv, zeros = np.empty((prob.n, prob.n)), np.empty(prob.n, dtype=np.int64), np.zeros(prob.n)
        t0, t1 = prob.t_span
        tiny = 1e-12 * (t1 - t0)
        t, y = t0, np.ascontiguousarray(prob.y0, dtype=np.float64).copy()
        ay = np.abs(y)
        h = None if o["h0"] is None else float(o["h0"])
        rejected_last = False
        for target in t_eval:
            while target - t > tiny:
                f0 = prob.rhs(t, y)
                if h is None:
                    h = self._initial_step(prob, t, y, f0, rtol, atol)
                J = prob.jac(t, y)
                ft = f_t(t, y) if f_t is not None else None
                if ft is not None and not ft.any():
                    ft = None  # identically zero at this point: same result, fewer operations
                while True:  # attempts from the accepted state (t, y)
                    if stats.n_steps >= max_steps:
                        raise IntegratorFailure(f"max_steps={max_steps} attempts reached at t={t:.6g}", "max_steps", t)
                    h = min(h, h_max)
                    clipped = t + h >= target - tiny
                    h_step = target - t if clipped else h
                    if h_step < h_min and not clipped:
                        raise IntegratorFailure(f"step size {h_step:.3g} below h_min={h_min:.3g} at t={t:.6g}", "step_size", t)
                    stats.n_steps += 1
                    if small is not None:
                        y_new, s2, ay_new, acc = self._attempt_small(small, prob, stats, t, y, ay, h_step, f0, J,
                                                                     ft, rtol, atol, LU, piv, zeros)
                    elif band is not None:
                        y_new, s2 = self._attempt_banded(prob, stats, t, y, h_step, f0, J, ft, band, AB, gbtrf, gbtrs)
                        ay_new = np.abs(y_new)
                        e = s2 / (atol + rtol * np.maximum(ay, ay_new))
                        acc = float(e @ e)
                    else:
                        y_new, s2 = self._attempt(prob, stats, t, y, h_step, f0, J, ft, eye, getrf, getrs)
                        ay_new = np.abs(y_new)
                        e = s2 / (atol + rtol * np.maximum(ay, ay_new))
                        acc = float(e @ e)
                    err_norm = 0.5 * math.sqrt(acc * inv_n)  # s2 = 2 err
                    if not math.isfinite(err_norm):
                        raise IntegratorFailure(f"non-finite error estimate at t={t:.6g}", "protocol", t)
                    fac = fac_max if err_norm == 0.0 else min(fac_max, max(fac_min, safety / math.sqrt(err_norm)))
                    if err_norm <= 1.0:
                        t = float(target) if clipped else t + h_step
                        y, ay = y_new, ay_new
                        stats.n_accepted += 1
                        h_new = h_step * fac
                        if rejected_last:
                            h_new = min(h_new, h_step)  # no growth right after a rejection
                        elif clipped:
                            h_new = max(h_new, h)  # a step cut to hit an output does not shrink h
                        h = h_new
                        rejected_last = False
                        break
                    stats.n_rejected += 1
                    h = h_step * min(1.0, fac)
                    rejected_last = True
                    if h < h_min:
                        raise IntegratorFailure(f"step size {h:.3g} below h_min={h_min:.3g} at t={t:.6g}", "step_size", t)
            t_out.append(float(target))
            y_out.append(y.copy())

    _FAILURES = {1: "field", 2: "jacobian", 3: "lu", 4: "max_steps", 5: "step_size", 6: "protocol"}

    def _solve_compiled(self, prob: _Counted, t_eval: Array, t_out: list, y_out: list) -> None:
        """The same method with the whole loop compiled (:mod:`models.integrators._ros2_loop`) on
        the problem's in-place field; a declared band is factorised banded unless kernel=lapack."""
        from models.integrators import _ros2_loop

        o = self.options
        fast = prob.inplace
        if fast is None:
            raise ValueError("loop: 'compiled' needs a problem with compiled in-place callables (ODEProblem.inplace)")
        mode = o["time_derivative"]
        if mode not in ("auto", "none", "fd"):
            raise ValueError(f"time_derivative: must be auto|none|fd, got {mode!r}")
        if mode == "auto" and not prob.autonomous and prob.has_f_t:
            raise ValueError("loop: 'compiled' cannot call the problem's Python f_t; use time_derivative=fd or loop=python")
        ft_fd = mode == "fd" or (mode == "auto" and not prob.autonomous)
        rtol, atol = self._tolerances(prob)
        band = prob.jac_band if (o["kernel"] == "auto" and prob.jac_band is not None
                                 and sum(prob.jac_band) + 1 < prob.n) else (-1, -1)
        reuse, hold = self._reuse()
        t_eval = np.ascontiguousarray(t_eval, dtype=np.float64)
        Y = np.zeros((t_eval.size, prob.n))
        counts = np.zeros(7, dtype=np.int64)
        info = np.zeros(3)
        h0 = -1.0 if o["h0"] is None else float(o["h0"])
        t0, t1 = prob.t_span
        runner = _ros2_loop.bound(fast.rhs, fast.jac)
        status = runner(fast.data, np.ascontiguousarray(prob.y0, dtype=np.float64), float(t0), float(t1), t_eval,
                        rtol, atol, h0, float(o["h_min"]), float(o["h_max"]), int(o["max_steps"]), float(o["safety"]),
                        float(o["fac_min"]), float(o["fac_max"]), ft_fd, int(band[0]), int(band[1]), reuse, hold, Y,
                        counts, info)
        st = prob.stats
        st.n_steps, st.n_accepted, st.n_rejected, st.nfev, st.njev, st.nlu = (int(v) for v in counts[:6])
        self.not_reported = ("t_rhs", "t_jac")  # the field is called inside the compiled loop
        for k in range(int(counts[6])):
            t_out.append(float(t_eval[k]))
            y_out.append(Y[k].copy())
        if status:
            t, h, dmin = (float(v) for v in info)
            reason = {1: f"field returned a non-finite value at t={t:.6g}",
                      2: f"Jacobian non-finite at t={t:.6g}",
                      3: f"LU of I - gamma h J singular at t={t:.6g}, h={h:.3g} (min pivot {dmin:.3g})",
                      4: f"max_steps={int(o['max_steps'])} attempts reached at t={t:.6g}",
                      5: f"step size {h:.3g} below h_min={float(o['h_min']):.3g} at t={t:.6g}",
                      6: f"non-finite error estimate at t={t:.6g}"}[status]
            raise IntegratorFailure(reason, self._FAILURES[status], t)
