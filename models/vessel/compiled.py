"""The vessel's scalar hot path compiled with numba: the sum of the loads
(:meth:`ForceModel.total`), the inputs between output knots and the field of
:meth:`Vessel.rhs`, in one call.

The vessel benchmark (``conf/case/bench/vessel_manoeuvre``) showed the field, in Python
about 60 us per call, taking most of CVODE's run time; compiled, a call costs a few
microseconds. The per-model numpy methods of :class:`ForceModel` (``components``) are the
independent reference the tests hold this against. Set ``NUMBA_DISABLE_JIT=1`` to step
through it in Python.

Layouts (all float64 unless stated):

* ``flags`` (9,) int64: 1 where the load model ``FORCE_MODELS[i]`` is enabled;
* ``env`` (8,): rho_water, rho_air, current N, current E, wind N, wind E (m/s),
  wave frequency (rad/s), current speed (m/s);
* ``K``, ``Bq`` (6,) restoring and quadratic damping diagonals; ``B``, ``Mt``, ``Minv`` (6, 6)
  linear damping, M + A and its inverse;
* ``tab`` (2, 4, m): current (0) and wind (1) tables as rows angle, Cx, Cy, Cn, padded;
  ``tab_n`` (2,) int64 their lengths; ``tab_geom`` (2, 3) frontal area, lateral area, length;
* ``props`` (k, 9): diameter, wake fraction, kt_pitch, kt_advance, rho D^3, x, y, z, slip
  coefficient 8/(pi rho D^2); ``ruds`` (r, 4): 1/2 rho A dCL/dδ, propeller index (-1 none), x, z;
* input rows: rotation (k), azimuth (k), pitch ratio (k), rudder (r), wave force amplitude
  (6), wave force phase (6); ``base``/``slope`` (n, W) per output interval, ``tg`` (n+1,) s.
"""
from __future__ import annotations

import math
import numpy as np

#: indices of the load models in ``flags`` (the order of ``forces.FORCE_MODELS``)
_RESTORING, _LIN, _QUAD, _CORIOLIS, _CURRENT, _WIND, _PROPS, _RUDS, _WAVES = range(9)


def _table_load(F, tab, n, geom, rho, wx, wy):
    """Add the coefficient-table load of a relative flow (wx, wy) m/s (body frame) to F."""
    v2 = wx * wx + wy * wy
    if v2 == 0.0:
        return
    gamma = math.atan2(-wy, -wx)
    a = abs(gamma)
    ang = tab[0, :n]
    i = np.searchsorted(ang, a, side="right") - 1
    if i < 0:
        i = 0
    if i > n - 2:
        i = n - 2
    th = (a - ang[i]) / (ang[i + 1] - ang[i])
    sgn = -1.0 if gamma < 0 else 1.0
    qd = 0.5 * rho * v2
    F[0] += qd * (tab[1, i] + th * (tab[1, i + 1] - tab[1, i])) * geom[0]
    F[1] += sgn * qd * (tab[2, i] + th * (tab[2, i + 1] - tab[2, i])) * geom[1]
    F[5] += sgn * qd * (tab[3, i] + th * (tab[3, i + 1] - tab[3, i])) * geom[1] * geom[2]


def _thrust(n, az, pdr, prop, ur, vr):
    """Thrust [N] of a propeller at n [1/s], azimuth az [rad] and pitch ratio pdr in the relative
    water velocity (ur, vr) [m/s] (``prop``: a row of ``props``), and g [N s/m] with
    dT/dur = g cos az, dT/dvr = g sin az."""
    d, wf, ktp, kta, rho_d3 = prop[0], prop[1], prop[2], prop[3], prop[4]
    ua = (1.0 - wf) * (ur * math.cos(az) + vr * math.sin(az))
    return rho_d3 * (d * n * abs(n) * ktp * pdr - kta * ua * abs(n)), -rho_d3 * kta * abs(n) * (1.0 - wf)


def _input_row(t, base, slope, tg, linear):
    """The inputs the field sees at t (s): knot interpolation or hold, as ``_InputTrack.at``."""
    n = base.shape[0]
    dt = tg[1] - tg[0]
    i = int(math.ceil((t - tg[0]) / dt)) - 1
    if i < 0:
        i = 0
    if i >= n:
        i = n - 1
    if i > 0 and t <= tg[i]:
        i -= 1
    elif i < n - 1 and t > tg[i + 1]:
        i += 1
    if not linear:
        return base[i].copy()
    return base[i] + ((t - tg[i]) / dt) * slope[i]


def _loads(t, q, nu, row, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props, ruds):
    """Sum of the enabled loads (6,) N, N m; the arithmetic of ``ForceModel.total``."""
    F = np.zeros(6)
    k_p, k_r = props.shape[0], ruds.shape[0]
    psi = q[5]
    c, s = math.cos(psi), math.sin(psi)
    u, v = nu[0], nu[1]
    ur, vr = u, v
    if flags[_CURRENT] and env[7] != 0.0:
        ur -= c * env[2] + s * env[3]
        vr -= -s * env[2] + c * env[3]
    nur = nu.copy()
    nur[0], nur[1] = ur, vr
    if flags[_RESTORING]:
        for i in range(6):
            F[i] -= K[i] * q[i]
    if flags[_LIN]:
        for i in range(6):
            acc = 0.0
            for j in range(6):
                acc += B[i, j] * nur[j]
            F[i] -= acc
    if flags[_QUAD]:
        for i in range(6):
            F[i] -= Bq[i] * abs(nur[i]) * nur[i]
    if flags[_CORIOLIS]:
        p = np.zeros(6)
        for i in range(6):
            for j in range(6):
                p[i] += Mt[i, j] * nu[j]
        a, b, cc, w = nu[3], nu[4], nu[5], nu[2]
        F[0] += p[1] * cc - p[2] * b
        F[1] += p[2] * a - p[0] * cc
        F[2] += p[0] * b - p[1] * a
        F[3] += p[4] * cc - p[5] * b + p[1] * w - p[2] * v
        F[4] += p[5] * a - p[3] * cc + p[2] * u - p[0] * w
        F[5] += p[3] * b - p[4] * a + p[0] * v - p[1] * u
    if flags[_CURRENT]:
        _table_load(F, tab[0], tab_n[0], tab_geom[0], env[0], -ur, -vr)
    if flags[_WIND]:
        _table_load(F, tab[1], tab_n[1], tab_geom[1], env[1], c * env[4] + s * env[5] - u, -s * env[4] + c * env[5] - v)
    thrust = np.zeros(k_p)
    if (flags[_PROPS] or flags[_RUDS]) and k_p > 0:
        for k in range(k_p):
            thrust[k] = _thrust(row[k], row[k_p + k], row[2 * k_p + k], props[k], ur, vr)[0]
        if flags[_PROPS]:
            for k in range(k_p):
                az = row[k_p + k]
                x, y, z = props[k, 5], props[k, 6], props[k, 7]
                fx, fy = thrust[k] * math.cos(az), thrust[k] * math.sin(az)
                F[0] += fx
                F[1] += fy
                F[3] -= z * fy
                F[4] += z * fx
                F[5] += x * fy - y * fx
    if flags[_RUDS] and k_r > 0:
        for j in range(k_r):
            coef, kp, x, z = ruds[j, 0], int(ruds[j, 1]), ruds[j, 2], ruds[j, 3]
            if kp >= 0:
                ua = (1.0 - props[kp, 1]) * ur
                u2 = ua * abs(ua) + props[kp, 8] * thrust[kp]
            else:
                u2 = ur * abs(ur)
            lift = coef * row[3 * k_p + j] * u2
            F[1] += lift
            F[3] -= z * lift
            F[5] += x * lift
    if flags[_WAVES]:
        off = 3 * k_p + k_r
        wt = env[6] * t
        for i in range(6):
            amp = row[off + i]
            if amp != 0.0:
                F[i] += amp * math.cos(wt + row[off + 6 + i])
    return F


def _field(t, y, base, slope, tg, linear, Minv, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props, ruds):
    """dy/dt (12,) or (13,) with the work of all loads as the 13th state; Minv = (M + A)^-1."""
    q, nu = y[:6], y[6:12]
    row = _input_row(t, base, slope, tg, linear)
    F = _loads(t, q, nu, row, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props, ruds)
    out = np.empty(y.shape[0])
    c, s = math.cos(q[5]), math.sin(q[5])
    out[0] = c * nu[0] - s * nu[1]
    out[1] = s * nu[0] + c * nu[1]
    for i in range(2, 6):
        out[i] = nu[i]
    for i in range(6):
        acc = 0.0
        for j in range(6):
            acc += Minv[i, j] * F[j]
        out[6 + i] = acc
    if y.shape[0] > 12:
        work = 0.0
        for i in range(6):
            work += nu[i] * F[i]
        out[12] = work
    return out


# -- the Jacobian ------------------------------------------------------------------------------
def _table_diff(J, tab, n, geom, rho, wx, wy, cx, cy):
    """Add d(table load)/d(wx, wy) (central differences, the table's kinks included) times the
    columns ``cx``, ``cy`` (6,) = d(wx, wy)/d(state), column by column, to J (6, m)."""
    h = 6.0e-6 * max(1.0, math.sqrt(wx * wx + wy * wy))
    Fp = np.zeros(6)
    Fm = np.zeros(6)
    _table_load(Fp, tab, n, geom, rho, wx + h, wy)
    _table_load(Fm, tab, n, geom, rho, wx - h, wy)
    Gx = (Fp - Fm) / (2.0 * h)
    Fp[:] = 0.0
    Fm[:] = 0.0
    _table_load(Fp, tab, n, geom, rho, wx, wy + h)
    _table_load(Fm, tab, n, geom, rho, wx, wy - h)
    Gy = (Fp - Fm) / (2.0 * h)
    for i in range(6):
        for k in range(J.shape[1]):
            J[i, k] += Gx[i] * cx[k] + Gy[i] * cy[k]


def _loads_jac(t, q, nu, row, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props, ruds):
    """(F, dF/d[q, nu]) of :func:`_loads`: the loads (6,) and their Jacobian (6, 12).

    Analytic for the smooth terms (restoring, damping, Coriolis, propellers, rudders; the
    current enters through the relative velocity (ur, vr), which depends on u, v and the yaw);
    the current and wind coefficient tables (piecewise linear in the flow angle) by central
    differences in the two flow components, chained analytically to the states.
    """
    F = _loads(t, q, nu, row, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props, ruds)
    J = np.zeros((6, 12))  # columns: q (0..5), nu (6..11)
    k_p, k_r = props.shape[0], ruds.shape[0]
    psi = q[5]
    c, s = math.cos(psi), math.sin(psi)
    u, v = nu[0], nu[1]
    ur, vr = u, v
    dur_psi, dvr_psi = 0.0, 0.0
    if flags[_CURRENT] and env[7] != 0.0:
        ur -= c * env[2] + s * env[3]
        vr -= -s * env[2] + c * env[3]
        dur_psi = s * env[2] - c * env[3]
        dvr_psi = c * env[2] + s * env[3]
    nur = nu.copy()
    nur[0], nur[1] = ur, vr
    # D = dF/d(nur) (6, 6); chained below: d nur/d nu = I, d(ur, vr)/d psi
    D = np.zeros((6, 6))
    if flags[_RESTORING]:
        for i in range(6):
            J[i, i] -= K[i]
    if flags[_LIN]:
        for i in range(6):
            for j in range(6):
                D[i, j] -= B[i, j]
    if flags[_QUAD]:
        for i in range(6):
            D[i, i] -= 2.0 * Bq[i] * abs(nur[i])
    if flags[_CORIOLIS]:
        # F_lin = p_l x w, F_ang = p_a x w + p_l x v_l with p = Mt nu, nu = (v_l, w)
        p = np.zeros(6)
        for i in range(6):
            for j in range(6):
                p[i] += Mt[i, j] * nu[j]
        for j in range(6):  # the p-dependence: d(p x a)/dp_j = e_j x a
            m0, m1, m2, m3, m4, m5 = Mt[0, j], Mt[1, j], Mt[2, j], Mt[3, j], Mt[4, j], Mt[5, j]
            a, b, cc, w = nu[3], nu[4], nu[5], nu[2]
            J[0, 6 + j] += m1 * cc - m2 * b
            J[1, 6 + j] += m2 * a - m0 * cc
            J[2, 6 + j] += m0 * b - m1 * a
            J[3, 6 + j] += m4 * cc - m5 * b + m1 * w - m2 * v
            J[4, 6 + j] += m5 * a - m3 * cc + m2 * u - m0 * w
            J[5, 6 + j] += m3 * b - m4 * a + m0 * v - m1 * u
        # the explicit nu-dependence (p held): d(p_l x w)/dw, d(p_a x w)/dw, d(p_l x v_l)/dv_l
        J[0, 6 + 4] += -p[2]
        J[0, 6 + 5] += p[1]
        J[1, 6 + 3] += p[2]
        J[1, 6 + 5] += -p[0]
        J[2, 6 + 3] += -p[1]
        J[2, 6 + 4] += p[0]
        J[3, 6 + 4] += -p[5]
        J[3, 6 + 5] += p[4]
        J[3, 6 + 1] += -p[2]
        J[3, 6 + 2] += p[1]
        J[4, 6 + 3] += p[5]
        J[4, 6 + 5] += -p[3]
        J[4, 6 + 0] += p[2]
        J[4, 6 + 2] += -p[0]
        J[5, 6 + 3] += -p[4]
        J[5, 6 + 4] += p[3]
        J[5, 6 + 0] += -p[1]
        J[5, 6 + 1] += p[0]
    cx = np.zeros(12)
    cy = np.zeros(12)
    if flags[_CURRENT]:  # flow (-ur, -vr): chained through D's first two columns
        Dt = np.zeros((6, 2))
        cx2 = np.array([-1.0, 0.0])
        cy2 = np.array([0.0, -1.0])
        _table_diff(Dt, tab[0], tab_n[0], tab_geom[0], env[0], -ur, -vr, cx2, cy2)
        for i in range(6):
            D[i, 0] += Dt[i, 0]
            D[i, 1] += Dt[i, 1]
    if flags[_WIND]:
        wx = c * env[4] + s * env[5] - u
        wy = -s * env[4] + c * env[5] - v
        cx[5] = -s * env[4] + c * env[5]
        cx[6] = -1.0
        cy[5] = -c * env[4] - s * env[5]
        cy[7] = -1.0
        _table_diff(J, tab[1], tab_n[1], tab_geom[1], env[1], wx, wy, cx, cy)
    dT = np.zeros((k_p, 2))  # d thrust / d(ur, vr)
    thrust = np.zeros(k_p)
    if (flags[_PROPS] or flags[_RUDS]) and k_p > 0:
        for k in range(k_p):
            az = row[k_p + k]
            thrust[k], g = _thrust(row[k], az, row[2 * k_p + k], props[k], ur, vr)
            dT[k, 0] = g * math.cos(az)
            dT[k, 1] = g * math.sin(az)
        if flags[_PROPS]:
            for k in range(k_p):
                az = row[k_p + k]
                x, y, z = props[k, 5], props[k, 6], props[k, 7]
                ca, sa = math.cos(az), math.sin(az)
                for m in range(2):
                    D[0, m] += ca * dT[k, m]
                    D[1, m] += sa * dT[k, m]
                    D[3, m] -= z * sa * dT[k, m]
                    D[4, m] += z * ca * dT[k, m]
                    D[5, m] += (x * sa - y * ca) * dT[k, m]
    if flags[_RUDS] and k_r > 0:
        for j in range(k_r):
            coef, kp, x, z = ruds[j, 0], int(ruds[j, 1]), ruds[j, 2], ruds[j, 3]
            du0, du1 = 0.0, 0.0
            if kp >= 0:
                ua = (1.0 - props[kp, 1]) * ur
                du0 = 2.0 * abs(ua) * (1.0 - props[kp, 1]) + props[kp, 8] * dT[kp, 0]
                du1 = props[kp, 8] * dT[kp, 1]
            else:
                du0 = 2.0 * abs(ur)
            g = coef * row[3 * k_p + j]
            D[1, 0] += g * du0
            D[3, 0] -= z * g * du0
            D[5, 0] += x * g * du0
            D[1, 1] += g * du1
            D[3, 1] -= z * g * du1
            D[5, 1] += x * g * du1
    for i in range(6):
        for j in range(6):
            J[i, 6 + j] += D[i, j]
        J[i, 5] += D[i, 0] * dur_psi + D[i, 1] * dvr_psi
    return F, J


def _jacobian(t, y, base, slope, tg, linear, Minv, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props, ruds):
    """d(field)/dy (n, n) of :func:`_field` at (t, y), n = 12 or 13 (work state)."""
    n_y = y.shape[0]
    q, nu = y[:6], y[6:12]
    row = _input_row(t, base, slope, tg, linear)
    F, JF = _loads_jac(t, q, nu, row, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props, ruds)
    Jy = np.zeros((n_y, n_y))
    c, s = math.cos(q[5]), math.sin(q[5])
    Jy[0, 5] = -s * nu[0] - c * nu[1]
    Jy[0, 6] = c
    Jy[0, 7] = -s
    Jy[1, 5] = c * nu[0] - s * nu[1]
    Jy[1, 6] = s
    Jy[1, 7] = c
    for i in range(2, 6):
        Jy[i, 6 + i] = 1.0
    for i in range(6):
        for k in range(12):
            acc = 0.0
            for j in range(6):
                acc += Minv[i, j] * JF[j, k]
            Jy[6 + i, k] = acc
    if n_y > 12:  # work' = nu . F
        for k in range(12):
            acc = 0.0
            for i in range(6):
                acc += nu[i] * JF[i, k]
            Jy[12, k] = acc
        for i in range(6):
            Jy[12, 6 + i] += F[i]
    return Jy


# -- in-place forms for CVODE (models.integrators.base.InPlaceField) --------------------------
# CVODE calls these through scikit-sundae with one user-data object; numba types a 2-tuple of
# arrays in a fraction of the time it takes for the 16 separate arrays of :func:`_field`
# (measured 0.39 us against 1.5 us per call), so everything travels packed in
# ``data = (fb, ib)``: ``ib`` (int64) = n_active, linear (1/0), capacity, width, table length m,
# k propellers, r rudders, flags (9), table lengths (2); ``fb`` (float64) = Minv (36), env (8),
# K (6), Bq (6), B (36), Mt (36), tab (2*4*m), tab_geom (6), props (9k), ruds (4r), then the input
# track: base (capacity*width), slope (capacity*width), tg (capacity + 1), of which the first
# n_active intervals are in use.
_IB_HEAD = 7


def pack(capacity, width, Minv, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props, ruds):
    """``(fb, ib)`` for :func:`field_into` with room for ``capacity`` intervals of ``width`` inputs,
    and writable views ``(base, slope, tg)`` of its track part."""
    m, k_p, k_r = tab.shape[2], props.shape[0], ruds.shape[0]
    ib = np.zeros(_IB_HEAD + 11, dtype=np.int64)
    ib[2:7] = capacity, width, m, k_p, k_r
    ib[_IB_HEAD:_IB_HEAD + 9] = flags
    ib[_IB_HEAD + 9:] = tab_n
    head = np.concatenate([np.ravel(a) for a in (Minv, env, K, Bq, B, Mt, tab, tab_geom, props, ruds)])
    track = capacity * width
    fb = np.zeros(head.size + 2 * track + capacity + 1)
    fb[:head.size] = head
    o = head.size
    base = fb[o:o + track].reshape(capacity, width)
    slope = fb[o + track:o + 2 * track].reshape(capacity, width)
    tg = fb[o + 2 * track:]
    return (fb, ib), (base, slope, tg)


def _unpack(fb, ib):
    """The arguments of :func:`_field` from ``(fb, ib)`` (views, no copies); see :func:`pack`."""
    n, cap, w, m, k_p, k_r = ib[0], ib[2], ib[3], ib[4], ib[5], ib[6]
    o = 0
    Minv = fb[o:o + 36].reshape((6, 6))
    o += 36
    env = fb[o:o + 8]
    o += 8
    K = fb[o:o + 6]
    o += 6
    Bq = fb[o:o + 6]
    o += 6
    B = fb[o:o + 36].reshape((6, 6))
    o += 36
    Mt = fb[o:o + 36].reshape((6, 6))
    o += 36
    tab = fb[o:o + 8 * m].reshape((2, 4, m))
    o += 8 * m
    tab_geom = fb[o:o + 6].reshape((2, 3))
    o += 6
    props = fb[o:o + 9 * k_p].reshape((k_p, 9))
    o += 9 * k_p
    ruds = fb[o:o + 4 * k_r].reshape((k_r, 4))
    o += 4 * k_r
    base = fb[o:o + n * w].reshape((n, w))
    o += cap * w
    slope = fb[o:o + n * w].reshape((n, w))
    o += cap * w
    tg = fb[o:o + n + 1]
    flags = ib[_IB_HEAD:_IB_HEAD + 9]
    tab_n = ib[_IB_HEAD + 9:_IB_HEAD + 11]
    return base, slope, tg, ib[1] != 0, Minv, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props, ruds


def _field_into(t, y, out, data):
    """:func:`_field` written into ``out``; ``data = (fb, ib)`` from :func:`pack`. Raises
    FloatingPointError on a non-finite value (the check of the Python path)."""
    fb, ib = data
    (base, slope, tg, linear, Minv, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props,
     ruds) = _unpack(fb, ib)
    f = field(t, y, base, slope, tg, linear, Minv, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props, ruds)
    total = 0.0
    for i in range(f.shape[0]):
        out[i] = f[i]
        total += f[i]
    if not math.isfinite(total):  # the Python path's check (models.integrators.base._Counted)
        raise FloatingPointError("vessel field: non-finite value")


def _jacobian_into(t, y, fy, out, data):
    """:func:`_jacobian` written into ``out`` (n, n); ``fy`` (the field at y) is not used;
    ``data`` as in :func:`_field_into`."""
    fb, ib = data
    (base, slope, tg, linear, Minv, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props,
     ruds) = _unpack(fb, ib)
    J = jacobian(t, y, base, slope, tg, linear, Minv, flags, env, K, Bq, B, Mt, tab, tab_n, tab_geom, props, ruds)
    total = 0.0
    for i in range(J.shape[0]):
        for j in range(J.shape[1]):
            out[i, j] = J[i, j]
            total += J[i, j]
    if not math.isfinite(total):
        raise FloatingPointError("vessel Jacobian: non-finite value")


try:  # numba is a dependency; without it the same functions run as Python (slow, but correct)
    from numba import njit as _njit

    _table_load = _njit(cache=True)(_table_load)
    _thrust = _njit(cache=True)(_thrust)
    _input_row = _njit(cache=True)(_input_row)
    _loads = _njit(cache=True)(_loads)
    field = _njit(cache=True)(_field)
    _table_diff = _njit(cache=True)(_table_diff)
    _loads_jac = _njit(cache=True)(_loads_jac)
    jacobian = _njit(cache=True)(_jacobian)
    _unpack = _njit(cache=True)(_unpack)
    field_into = _njit(cache=True)(_field_into)
    jacobian_into = _njit(cache=True)(_jacobian_into)
    COMPILED = True
except ImportError:  # pragma: no cover - exercised where numba is absent
    field = _field
    jacobian = _jacobian
    field_into = _field_into
    jacobian_into = _jacobian_into
    COMPILED = False
loads = _loads
loads_jacobian = _loads_jac
