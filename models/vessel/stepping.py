"""The once-per-output-step updates along a solved window, compiled (numba).

After each solve of a window the vessel runs, for every output step of it, the moving average of
the position, the wave heading and its wave inputs, and the first-order (RAO) wave motion, and
records them (:meth:`Vessel.advance_filters`, :meth:`Vessel.apply_rao`, ``Vessel._record``).
In Python that loop cost about as much as CVODE's solve of the window; :func:`filters_pass` is
the same arithmetic over all steps of a window in one compiled call. The Python methods stay the
reference (the per-step and in-field modes use them; tests/vessel/test_vessel_stepping.py holds
the two together).

Arguments: ``ys`` (m + 1, n) states at the window's outputs; ``t_next`` (m,) the output times
t_1..t_m (s); ``g`` the moving-average gain; ``wave_dir`` (rad), ``zeta`` (m), ``on`` (1 when
wave loads act); ``freq`` (rad/s); ``heading`` (k,) and ``stack`` (4, k, 6) the wave tables
(force amplitude, force phase, RAO amplitude, RAO phase); ``f_force``, ``f_rao`` (6,) the
filters; the carried state ``q_avg``, ``wf``, ``q_rao_prev`` (6,) is updated in place; rows
0..m-1 of the outputs ``o_qavg``, ``o_wf``, ``o_wamp``, ``o_wph`` (m, 6) and ``o_chi`` (m,) get
the values after steps 1..m; ``rao`` (2, 6) gets the last RAO amplitude and phase.
"""
from __future__ import annotations

import math

import numpy as np


def _wave_tables_at(chi, heading, stack, out):
    """``WaveData.at``: out (4, 6) = force amplitude, force phase, RAO amplitude, RAO phase at chi."""
    a = abs(chi)
    k = heading.shape[0]
    i = np.searchsorted(heading, a, side="right") - 1
    if i < 0:
        i = 0
    if i > k - 2:
        i = k - 2
    th = (a - heading[i]) / (heading[i + 1] - heading[i])
    sgn = 1.0 if chi >= 0 else -1.0
    for r in range(4):
        for j in range(6):
            v = stack[r, i, j] + th * (stack[r, i + 1, j] - stack[r, i, j])
            if r == 0 or r == 2:  # amplitudes: odd in the heading for sway, roll and yaw
                if j % 2 == 1:
                    v = v * (sgn if chi != 0 else 0.0)
            out[r, j] = v


def _filters_pass(ys, t_next, g, wave_dir, zeta, on, freq, heading, stack, f_force, f_rao, q_avg, wf, q_rao_prev,
                  o_qavg, o_wf, o_wamp, o_wph, o_chi, rao):
    m = t_next.shape[0]
    tab = np.empty((4, 6))
    for k in range(m):
        for j in range(6):  # moving average of the total position (low-frequency + wave motion)
            q_avg[j] = g * (ys[k, j] + wf[j]) + (1.0 - g) * q_avg[j]
        x = wave_dir - q_avg[5]
        chi = math.pi - ((math.pi - x) % (2.0 * math.pi))
        _wave_tables_at(chi, heading, stack, tab)
        for j in range(6):
            o_wamp[k, j] = zeta * tab[0, j] * f_force[j] * on
            o_wph[k, j] = tab[1, j]
            rao[0, j] = zeta * tab[2, j] * f_rao[j] * on
            rao[1, j] = tab[3, j]
        psi = ys[k + 1, 5] + wf[5]
        c, s = math.cos(psi), math.sin(psi)
        d = np.empty(6)
        for j in range(6):
            qn = rao[0, j] * math.cos(freq * t_next[k] + rao[1, j])
            d[j] = qn - q_rao_prev[j]
            q_rao_prev[j] = qn
        wf[0] += c * d[0] - s * d[1]
        wf[1] += s * d[0] + c * d[1]
        for j in range(2, 6):
            wf[j] += d[j]
        for j in range(6):
            o_qavg[k, j] = q_avg[j]
            o_wf[k, j] = wf[j]
        o_chi[k] = chi


def _wave_knots(chi, heading, stack, zeta, f_force, o_wamp, o_wph):
    """Wave force inputs (amplitude x zeta x filter, phase) (m, 6) at the headings chi (m,) (rad, wrapped here)."""
    tab = np.empty((4, 6))
    for k in range(chi.shape[0]):
        c = math.pi - ((math.pi - chi[k]) % (2.0 * math.pi))
        _wave_tables_at(c, heading, stack, tab)
        for j in range(6):
            o_wamp[k, j] = zeta * tab[0, j] * f_force[j]
            o_wph[k, j] = tab[1, j]


def _lag_series(x0, demand, alpha, out):
    """``actuators.lag_step`` over the rows of ``demand`` (n, k): out[i] = the state after step i."""
    x = x0.copy()
    for i in range(demand.shape[0]):
        for j in range(x.shape[0]):
            x[j] = x[j] + alpha[j] * (demand[i, j] - x[j])
            out[i, j] = x[j]


def _rate_limit_series(x0, demand, step, max_value, out):
    """``actuators.rate_limit_step`` (demand clipped to +-max_value, moves of at most ``step``) over the rows."""
    x = x0.copy()
    for i in range(demand.shape[0]):
        for j in range(x.shape[0]):
            target = min(max(demand[i, j], -max_value[j]), max_value[j])
            x[j] = x[j] + min(max(target - x[j], -step[j]), step[j])
            out[i, j] = x[j]


try:  # numba is a dependency; without it the same functions run as Python
    from numba import njit as _njit

    lag_series = _njit(cache=True)(_lag_series)
    rate_limit_series = _njit(cache=True)(_rate_limit_series)

    _wave_tables_at = _njit(cache=True)(_wave_tables_at)
    filters_pass = _njit(cache=True)(_filters_pass)
    wave_knots = _njit(cache=True)(_wave_knots)
except ImportError:  # pragma: no cover - exercised where numba is absent
    filters_pass = _filters_pass
    wave_knots = _wave_knots
    lag_series = _lag_series
    rate_limit_series = _rate_limit_series
