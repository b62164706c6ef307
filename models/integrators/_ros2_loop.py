"""ROS2 adaptive with the whole step loop compiled (numba): ``ros2_adaptive(loop="compiled")``.

Why: ``bench/integrators_ros2`` measured ROS2 against CVODE at equal accuracy on HIRES, ROBER
and POLLU at 2-6x CVODE's wall time; the Python loop spent ~15 us per step in calls (field,
Jacobian, two stage kernels, controller) whose arithmetic takes ~1 us. Here the field and the
Jacobian are the problem's compiled in-place callables (:class:`~models.integrators.base.InPlaceField`)
and the loop, the controller, the LU and the stage solves never leave machine code. The method is
the one of :mod:`models.integrators.rosenbrock` step for step (same stages, error norm,
controller, initial step, output clipping); the dense stages are the same kernels as the
small-system path (``_ros2_small``); a declared band (``jac_band``) is factorised banded with
partial pivoting's result: without row interchanges where partial pivoting would make none
(checked entry by entry; half the work, and for kl, ku <= 2 a kernel that carries the rows
above in registers), else with them (LAPACK gbtrf's scheme). Results equal the Python loop's
to round-off (tests). Compiled once per field and process (the field's callables are bound
into the runner, :func:`bound`, which numba cannot cache).

Where the time went on bruss1d (100 states, kl = ku = 2), per step of ~5.7 us before: LU with
pivoting 2.6 us, the two solves 1.0 us each, f twice and J 0.17 us, allocations and vector
loops the rest; after: LU 0.6 us, solves 0.32 us each, 1.85 us per step in all.
``reuse_steps`` > 0 is the W-method variant (see :func:`run`).

Status codes of :func:`run`: 0 done, 1 field non-finite, 2 Jacobian non-finite, 3 singular
LU, 4 max_steps, 5 step below h_min, 6 non-finite error estimate.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from models.integrators._ros2_small import _lu_solve_inplace, factor

GAMMA = 1.0 + 1.0 / math.sqrt(2.0)
SING = 64.0 * np.finfo(float).eps


@njit(cache=True)
def _input_status(f0, J, kl, status):
    """The status of a failure seen downstream: 1 (field) when f0 is non-finite, 2 (Jacobian)
    when a dense J is (a banded one is checked while M is assembled), else ``status``."""
    if not _finite(f0):
        return 1
    if kl < 0 and not _finite(J):
        return 2
    return status


@njit(cache=True)
def _finite(a):
    s = 0.0
    for v in a.ravel():
        s += v
    return math.isfinite(s)


NARROW = 2  # bands with kl, ku <= NARROW get the kernels that carry the last rows in registers


@njit(cache=True)
def _band_factor_narrow(J, gamma_h, AB, dinv, kl, ku):
    """:func:`_band_factor_no_interchange` for kl, ku <= 2 (tri- and pentadiagonal M), the rows
    above carried in registers instead of re-read from memory, and the interchange check read
    once after the loop instead of a branch out of it: 0.6 instead of 1.8 us for 100 rows, whose
    elimination is a chain of dependent operations from row to row. Fixed layout
    AB[i, 0:5] = (l_{i,i-2}, l_{i,i-1}, u_ii, u_{i,i+1}, u_{i,i+2}), zero outside the band and
    the matrix (AB needs 5 columns). The same operations in the same order as the generic
    kernel (a zero entry or multiplier subtracts 0). Returns (ok, sum of J's band); ok False
    where partial pivoting would interchange rows (the factors are then not valid)."""
    n = J.shape[0]
    jsum = 0.0
    p1 = p2 = 1.0  # pivots u of rows i-1, i-2
    d1 = d2 = 0.0  # their inverses
    v1 = w1 = 0.0  # u_{i-1,i}, u_{i-1,i+1}
    v2 = w2 = 0.0  # u_{i-2,i-1}, u_{i-2,i}
    bad = False
    for i in range(n):
        m0 = m1 = m3 = m4 = 0.0
        if kl >= 2 and i >= 2:
            jsum += J[i, i - 2]
            m0 = -gamma_h * J[i, i - 2]
        if kl >= 1 and i >= 1:
            jsum += J[i, i - 1]
            m1 = -gamma_h * J[i, i - 1]
        jsum += J[i, i]
        m2 = -gamma_h * J[i, i] + 1.0
        if ku >= 1 and i + 1 < n:
            jsum += J[i, i + 1]
            m3 = -gamma_h * J[i, i + 1]
        if ku >= 2 and i + 2 < n:
            jsum += J[i, i + 2]
            m4 = -gamma_h * J[i, i + 2]
        bad |= abs(m0) > abs(p2)  # partial pivoting would interchange rows here
        f0 = m0 * d2
        m1 -= f0 * v2
        m2 -= f0 * w2
        bad |= abs(m1) > abs(p1)
        f1 = m1 * d1
        m2 -= f1 * v1
        m3 -= f1 * w1
        d = 1.0 / m2 if m2 != 0.0 else 0.0
        AB[i, 0] = f0
        AB[i, 1] = f1
        AB[i, 2] = m2
        AB[i, 3] = m3
        AB[i, 4] = m4
        dinv[i] = d
        p2, d2, v2, w2 = p1, d1, v1, w1
        p1, d1, v1, w1 = m2, d, m3, m4
    return not bad, jsum


@njit(cache=True, fastmath={"contract"})
def _band_solve_narrow(AB, dinv, b):
    """Solve with :func:`_band_factor_narrow`'s factors in place, the last two values carried in
    registers; in each row the term of the value just computed comes last and multiply-adds are
    fused (the row-to-row chain is then one fused multiply-add forward, one and a product
    backward): 0.32 instead of 1.0 us for 100 rows; equal to the generic solve to round-off."""
    n = AB.shape[0]
    x1 = x2 = 0.0
    for i in range(n):
        s = b[i] - AB[i, 0] * x2 - AB[i, 1] * x1
        b[i] = s
        x2, x1 = x1, s
    x1 = x2 = 0.0
    for i in range(n - 1, -1, -1):
        s = (b[i] - AB[i, 4] * x2 - AB[i, 3] * x1) * dinv[i]
        b[i] = s
        x2, x1 = x1, s


@njit(cache=True)
def _band_factor_no_interchange(J, gamma_h, AB, dinv, kl, ku):
    """M = I - gamma h J from J's band into the compact rows ``AB`` (AB[i, j - i + kl] = M[i, j])
    and its LU without row interchanges, row by row (row i eliminated by the finished rows above
    it: the same operations in the same order as the column-by-column elimination). Valid only
    where partial pivoting would interchange nothing: every sub-diagonal entry, when it is
    eliminated, at most as large in magnitude as its column's pivot. Returns (ok, sum of J's
    band); ok False as soon as an entry is larger (the factors are then incomplete)."""
    n = J.shape[0]
    jsum = 0.0
    for i in range(n):
        j0, j1 = max(0, i - kl), min(n, i + ku + 1)
        for j in range(j0, j1):
            v = J[i, j]
            jsum += v
            AB[i, j - i + kl] = -gamma_h * v
        AB[i, kl] += 1.0
        for k in range(j0, i):  # the multipliers of row i, columns in increasing order
            a = AB[i, k - i + kl]
            if abs(a) > abs(AB[k, kl]):
                return False, jsum  # partial pivoting would interchange rows here
            f = a * dinv[k]
            AB[i, k - i + kl] = f
            if f != 0.0:
                for j in range(k + 1, min(n, k + ku + 1)):
                    AB[i, j - i + kl] -= f * AB[k, j - k + kl]
        d = AB[i, kl]
        dinv[i] = 1.0 / d if d != 0.0 else 0.0
    return True, jsum


@njit(cache=True)
def _band_factor_pivoting(J, gamma_h, AB, piv, dinv, kl, ku):
    """M = I - gamma h J into ``AB`` with kl more upper diagonals for the pivoting's fill-in,
    factorised in place with partial pivoting (LAPACK gbtrf's scheme). Returns the sum of J's band."""
    n = J.shape[0]
    w = AB.shape[1]
    jsum = 0.0
    for i in range(n):
        j0, j1 = max(0, i - kl), min(n, i + ku + 1)
        for d in range(j1 - i + kl, w):  # fill-in columns (and those beyond the last column)
            AB[i, d] = 0.0
        for j in range(j0, j1):
            v = J[i, j]
            jsum += v
            AB[i, j - i + kl] = -gamma_h * v
        AB[i, kl] += 1.0
    for k in range(n):
        iend = min(n - 1, k + kl)
        jend = min(n - 1, k + kl + ku)
        p = k
        amax = abs(AB[k, kl])
        for i in range(k + 1, iend + 1):
            a = abs(AB[i, k - i + kl])
            if a > amax:
                amax = a
                p = i
        piv[k] = p
        if p != k:
            for j in range(k, jend + 1):
                tmp = AB[k, j - k + kl]
                AB[k, j - k + kl] = AB[p, j - p + kl]
                AB[p, j - p + kl] = tmp
        d = AB[k, kl]
        if d == 0.0:
            dinv[k] = 0.0
            continue
        dk = 1.0 / d
        dinv[k] = dk
        for i in range(k + 1, iend + 1):
            f = AB[i, k - i + kl] * dk
            AB[i, k - i + kl] = f
            if f != 0.0:
                for j in range(k + 1, jend + 1):
                    AB[i, j - i + kl] -= f * AB[k, j - k + kl]
    return jsum


@njit(cache=True)
def band_factor(J, gamma_h, AB, piv, dinv, kl, ku):
    """LU of M = I - gamma h J from J's band (kl, ku) in the compact rows ``AB`` (n, max(2 kl + ku
    + 1, 5)), with partial pivoting's result: first without row interchanges (half the work: U
    keeps ku upper diagonals instead of kl + ku, no search, no swaps; kl, ku <= 2 in the
    register-carrying kernel), checked entry by entry against the pivot; where partial pivoting
    would interchange rows, refactorised with pivoting. ``piv[0]`` < 0 marks the factors as
    interchange-free (-2: the narrow layout, -1: the generic one; for :func:`band_solve`).
    Returns (min |pivot|, max |pivot|, sum of J's band: non-finite when an entry is)."""
    n = J.shape[0]
    if kl <= NARROW and ku <= NARROW:
        ok, jsum = _band_factor_narrow(J, gamma_h, AB, dinv, kl, ku)
        piv[0] = -2
        dcol = 2
    else:
        ok, jsum = _band_factor_no_interchange(J, gamma_h, AB, dinv, kl, ku)
        piv[0] = -1
        dcol = kl
    if not ok:
        jsum = _band_factor_pivoting(J, gamma_h, AB, piv, dinv, kl, ku)
        dcol = kl
    dmin = abs(AB[0, dcol])
    dmax = dmin
    for i in range(1, n):
        d = abs(AB[i, dcol])
        dmin = min(dmin, d)
        dmax = max(dmax, d)
    return dmin, dmax, jsum


@njit(cache=True)
def band_solve(AB, piv, dinv, b, kl, ku):
    """Solve with :func:`band_factor`'s factors in place: without interchanges (piv[0] = -1)
    the unit lower factor row by row and the upper factor of width ku; else, as LAPACK gbtrs,
    interchanges and the lower factor column by column, then the upper factor of width kl + ku.
    (Both apply each row's terms in increasing column order: the same arithmetic when no
    interchange happened.)"""
    n = AB.shape[0]
    if piv[0] == -2:
        _band_solve_narrow(AB, dinv, b)
        return
    if piv[0] == -1:
        for i in range(n):
            s = b[i]
            for k in range(max(0, i - kl), i):
                s -= AB[i, k - i + kl] * b[k]
            b[i] = s
        w = ku
    else:
        for k in range(n):
            p = piv[k]
            if p != k:
                tmp = b[k]
                b[k] = b[p]
                b[p] = tmp
            bk = b[k]
            for i in range(k + 1, min(n - 1, k + kl) + 1):
                b[i] -= AB[i, k - i + kl] * bk
        w = kl + ku
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, min(n - 1, i + w) + 1):
            s -= AB[i, j - i + kl] * b[j]
        b[i] = s * dinv[i]


@njit(cache=True)
def _update(y, u1, u2, ay, rtol, atol, y_new, ay_new):
    """y_new = y + (3 u1 + u2)/2 and |y_new| in place; returns the error sum
    sum_i ((u1 + u2)_i / (atol_i + rtol_i max(|y_i|, |y_new,i|)))^2 (as ``_ros2_small.stage2_update``)."""
    acc = 0.0
    for i in range(u1.shape[0]):
        s = u1[i] + u2[i]
        yn = y[i] + u1[i] + 0.5 * s
        y_new[i] = yn
        a = abs(yn)
        ay_new[i] = a
        e = s / (atol[i] + rtol[i] * max(ay[i], a))
        acc += e * e
    return acc


@njit
def run(rhs, jac, data, y0, t0, t1, t_eval, rtol, atol, h_init, h_min, h_max, max_steps, safety, fac_min, fac_max,
        ft_fd, kl, ku, reuse, hold, Y, counts, info):
    """The adaptive loop. Y (len(t_eval), n) receives the outputs; counts = [n_steps, n_accepted,
    n_rejected, nfev, njev, nlu, outputs written]; info = [t, h, min pivot] of a failure;
    h_init <= 0: the initial step is estimated. kl < 0: dense LU. ft_fd: f_t by central
    differences in t (non-autonomous field). reuse = 0: J and the LU of M fresh at every
    attempt (ROS2). reuse > 0 (W-method variant): an accepted step whose controller proposes a
    growth of at most ``hold`` keeps its step size, and with it the Jacobian and the LU of M,
    for up to ``reuse`` steps; a new step size (shrink, larger growth, output time, rejection)
    gets a Jacobian at the current point and a new LU. Returns the status code (module docstring)."""
    n = y0.shape[0]
    span = t1 - t0
    tiny = 1e-12 * span
    inv_n = 1.0 / n
    y = y0.copy()
    ay = np.abs(y)
    f0 = np.empty(n)
    f1 = np.empty(n)
    fp = np.empty(n)
    fm = np.empty(n)
    ft = np.zeros(n)
    c = np.zeros(n)
    u1 = np.empty(n)
    u2 = np.empty(n)
    y_new = np.empty(n)
    ay_new = np.empty(n)
    J = np.zeros((n, n))
    LU = np.zeros((n, n)) if kl < 0 else np.zeros((1, 1))
    piv = np.zeros(n, dtype=np.int64)
    dinv = np.zeros(n)
    AB = np.zeros((n, max(2 * kl + ku + 1, 5) if kl >= 0 else 1))
    t = t0
    h = h_init
    have_h = h_init > 0.0
    rejected_last = False
    lu_h = -1.0  # the step size M was factorised for (-1: none valid)
    age = 0  # accepted steps since J was evaluated
    for k_out in range(t_eval.shape[0]):
        target = t_eval[k_out]
        while target - t > tiny:
            rhs(t, y, f0, data)
            counts[3] += 1
            # f0, f1 and J are checked where a failure shows (a non-finite value in any of them
            # makes the LU or the error estimate non-finite), in the Python loop's order of checks
            if not have_h:  # Hairer-Norsett-Wanner starting step for order 2
                if not _finite(f0):
                    info[0] = t
                    return 1
                d0 = 0.0
                d1 = 0.0
                for i in range(n):
                    sc = atol[i] + rtol[i] * abs(y[i])
                    d0 += (y[i] / sc) ** 2
                    d1 += (f0[i] / sc) ** 2
                d0 = math.sqrt(d0 * inv_n)
                d1 = math.sqrt(d1 * inv_n)
                h0 = 1.0e-6 * span if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
                h0 = min(h0, span)
                for i in range(n):
                    fp[i] = y[i] + h0 * f0[i]
                rhs(t + h0, fp, f1, data)
                counts[3] += 1
                if not _finite(f1):
                    info[0] = t + h0
                    return 1
                d2 = 0.0
                for i in range(n):
                    sc = atol[i] + rtol[i] * abs(y[i])
                    d2 += ((f1[i] - f0[i]) / sc) ** 2
                d2 = math.sqrt(d2 * inv_n) / h0
                if max(d1, d2) <= 1e-15:
                    h1 = max(1e-6 * span, h0 * 1e-3)
                else:
                    h1 = (0.01 / max(d1, d2)) ** (1.0 / 3.0)
                h = min(100.0 * h0, h1, span)
                have_h = True
            j_here = False  # J evaluated at this (t, y)
            if reuse == 0 or age >= reuse or lu_h < 0.0:
                jac(t, y, f0, J, data)
                counts[4] += 1
                j_here = True
                age = 0
                lu_h = -1.0
            has_c = False
            if ft_fd:
                dt = 1.0e-6 * max(abs(t), span)
                rhs(t + dt, y, fp, data)
                rhs(t - dt, y, fm, data)
                counts[3] += 2
                if not (_finite(fp) and _finite(fm)):
                    info[0] = t
                    return 1
                for i in range(n):
                    ft[i] = (fp[i] - fm[i]) / (2.0 * dt)
                    if ft[i] != 0.0:
                        has_c = True
            while True:  # attempts from the accepted state (t, y)
                if counts[0] >= max_steps:
                    info[0] = t
                    return _input_status(f0, J, kl, 4)
                h = min(h, h_max)
                clipped = t + h >= target - tiny
                h_step = target - t if clipped else h
                if h_step < h_min and not clipped:
                    info[0], info[1] = t, h_step
                    return _input_status(f0, J, kl, 5)
                counts[0] += 1
                if has_c:
                    for i in range(n):
                        c[i] = (GAMMA * h_step * h_step) * ft[i]
                if reuse == 0 or h_step != lu_h:  # M = I - gamma h J factorised
                    if not j_here:  # a held J is not factorised for a new step size
                        jac(t, y, f0, J, data)
                        counts[4] += 1
                        j_here = True
                        age = 0
                    if kl < 0:
                        dmin, dmax = factor(J, GAMMA * h_step, LU, piv)
                    else:
                        dmin, dmax, jsum = band_factor(J, GAMMA * h_step, AB, piv, dinv, kl, ku)
                        if not math.isfinite(jsum):
                            info[0] = t
                            return 1 if not _finite(f0) else 2
                    counts[5] += 1
                    if not dmin > SING * max(dmax, 1.0):
                        info[0], info[1], info[2] = t, h_step, dmin
                        return _input_status(f0, J, kl, 3)
                    lu_h = h_step
                for i in range(n):
                    u1[i] = h_step * f0[i] + (c[i] if has_c else 0.0)
                if kl < 0:
                    _lu_solve_inplace(LU, piv, u1)
                else:
                    band_solve(AB, piv, dinv, u1, kl, ku)
                for i in range(n):
                    fp[i] = y[i] + u1[i]
                rhs(t + h_step, fp, f1, data)
                counts[3] += 1
                for i in range(n):  # the second stage: M u2 = h f1 - 2 u1 (- c)
                    u2[i] = h_step * f1[i] - 2.0 * u1[i] - (c[i] if has_c else 0.0)
                if kl < 0:
                    _lu_solve_inplace(LU, piv, u2)
                else:
                    band_solve(AB, piv, dinv, u2, kl, ku)
                acc = _update(y, u1, u2, ay, rtol, atol, y_new, ay_new)
                err_norm = 0.5 * math.sqrt(acc * inv_n)
                if not math.isfinite(err_norm):
                    info[0] = t
                    status = _input_status(f0, J, kl, 6)
                    if status == 6 and not _finite(f1):
                        info[0] = t + h_step
                        status = 1
                    return status
                if err_norm == 0.0:
                    fac = fac_max
                else:
                    fac = min(fac_max, max(fac_min, safety / math.sqrt(err_norm)))
                if err_norm <= 1.0:
                    t = target if clipped else t + h_step
                    y, y_new = y_new, y
                    ay, ay_new = ay_new, ay
                    counts[1] += 1
                    age += 1
                    h_new = h_step * fac
                    if rejected_last:
                        h_new = min(h_new, h_step)
                    elif clipped:
                        h_new = max(h_new, h)
                    elif reuse > 0 and age < reuse and 1.0 <= fac <= hold:
                        h_new = h_step  # held: the next step reuses J and the LU
                    h = h_new
                    rejected_last = False
                    break
                counts[2] += 1
                h = h_step * min(1.0, fac)
                rejected_last = True
                if h < h_min:
                    info[0], info[1] = t, h
                    return 5
        for i in range(n):
            Y[k_out, i] = y[i]
        counts[6] = k_out + 1
    return 0


_BOUND: dict = {}


def bound(rhs, jac):
    """:func:`run` with the field's two compiled callables bound (compiled once per field and
    process): the arguments of a call are then arrays and numbers only, whose types numba reads
    in about 5 us; two dispatchers as arguments cost about 14 us per call."""
    key = (rhs, jac)
    fn = _BOUND.get(key)
    if fn is None:
        @njit
        def fn(data, y0, t0, t1, t_eval, rtol, atol, h_init, h_min, h_max, max_steps, safety, fac_min, fac_max,
               ft_fd, kl, ku, reuse, hold, Y, counts, info):
            return run(rhs, jac, data, y0, t0, t1, t_eval, rtol, atol, h_init, h_min, h_max, max_steps, safety,
                       fac_min, fac_max, ft_fd, kl, ku, reuse, hold, Y, counts, info)

        _BOUND[key] = fn
    return fn
