"""Compiled pair-force kernel (numba), used by DEMSystem when ``backend="numba"``.

The benchmark (conf/case/bench/dem_throughput.yaml) showed the vectorised numpy path at
about 0.2 x LAMMPS's single-core throughput on dense packings; this kernel does the same
arithmetic as :meth:`models.dem.system.DEMSystem._pair_forces` (same formulas, same
history update, same Coulomb cut) in one pass over the candidate pairs. Results agree
with the numpy path to round-off (summation order differs); see tests/dem/test_dem_kernels.py.
"""
from __future__ import annotations

import math

import numpy as np

try:  # numba is optional: without it DEMSystem uses the numpy path
    from numba import njit, prange

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_NUMBA = False

    def njit(*args, **kwargs):
        def deco(f):
            return f

        return deco

    prange = range


@njit(inline="always", error_model="numpy")
def contact_kinematics(i, j, x, v, w, radius, mass):  # pragma: no cover - compiled
    """Pair (i, j): overlap delta (m; <= 0: no contact, the rest is then 0), unit normal i -> j,
    relative contact velocity (m/s) and its normal part vn, effective radius Rs (m) and mass ms (kg)."""
    dx = x[j, 0] - x[i, 0]
    dy = x[j, 1] - x[i, 1]
    dz = x[j, 2] - x[i, 2]
    dist = math.sqrt(dx * dx + dy * dy + dz * dz)
    Ri = radius[i]
    Rj = radius[j]
    delta = Ri + Rj - dist
    if delta <= 0.0:
        return delta, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    nx = dx / dist
    ny = dy / dist
    nz = dz / dist
    ax = Ri * w[i, 0] + Rj * w[j, 0]
    ay = Ri * w[i, 1] + Rj * w[j, 1]
    az = Ri * w[i, 2] + Rj * w[j, 2]
    vrx = v[i, 0] - v[j, 0] + (ay * nz - az * ny)
    vry = v[i, 1] - v[j, 1] + (az * nx - ax * nz)
    vrz = v[i, 2] - v[j, 2] + (ax * ny - ay * nx)
    vn = vrx * nx + vry * ny + vrz * nz
    Rs = Ri * Rj / (Ri + Rj)
    ms = mass[i] * mass[j] / (mass[i] + mass[j])
    return delta, nx, ny, nz, vrx, vry, vrz, vn, Rs, ms


@njit(inline="always", error_model="numpy")
def normal_force(delta, vn, Rs, ms, hertz, hm_c, k_n, eta, zeta, attractive, Estar):  # pragma: no cover
    """Normal law: elastic part fel (N), tangential stiffness scale ktan (N/m), unclamped force
    fraw and the force fn actually applied (N; >= 0 unless ``attractive``)."""
    if hertz:
        K = 4.0 / 3.0 * Estar * math.sqrt(Rs)
        sq = math.sqrt(delta)
        fel = K * delta * sq
        ktan = 1.5 * K * sq
        fraw = fel + hm_c * math.sqrt(ms * ktan) * vn
    else:
        fel = k_n * delta
        ktan = k_n
        e = eta if eta >= 0.0 else 2.0 * zeta * math.sqrt(ms * k_n)
        fraw = fel + e * vn
    fn = fraw if attractive else max(fraw, 0.0)
    return fel, ktan, fraw, fn


@njit(inline="always", error_model="numpy")
def tangential_force(xx, xy, xz, nx, ny, nz, vrx, vry, vrz, vn, delta, Rs, ktan, fn, dt, tang, kt_ratio, mu,
                     Gstar):  # pragma: no cover - compiled
    """Tangential spring (xx, xy, xz) (m) rotated into the tangent plane, advanced by the tangential
    velocity over dt, and the spring force with the Coulomb cut mu fn. Returns the force (N), the
    updated spring and the energy the cut dissipated (J)."""
    mag = math.sqrt(xx * xx + xy * xy + xz * xz)
    d = xx * nx + xy * ny + xz * nz
    xx -= d * nx
    xy -= d * ny
    xz -= d * nz
    magn = math.sqrt(xx * xx + xy * xy + xz * xz)
    if magn > 0.0:
        s = mag / magn
        xx *= s
        xy *= s
        xz *= s
    vtx = vrx - vn * nx
    vty = vry - vn * ny
    vtz = vrz - vn * nz
    xx += vtx * dt
    xy += vty * dt
    xz += vtz * dt
    kt = 8.0 * Gstar * math.sqrt(Rs * delta) if tang == 2 else kt_ratio * ktan
    ftx = -kt * xx
    fty = -kt * xy
    ftz = -kt * xz
    ftm = math.sqrt(ftx * ftx + fty * fty + ftz * ftz)
    lim = mu * fn
    diss = 0.0
    if ftm > lim:
        s = lim / ftm if ftm > 0.0 else 0.0
        ftx *= s
        fty *= s
        ftz *= s
        if kt > 0.0:
            xx = -ftx / kt
            xy = -fty / kt
            xz = -ftz / kt
        else:
            xx = 0.0
            xy = 0.0
            xz = 0.0
        diss = abs(ftx * vtx + fty * vty + ftz * vtz) * dt
    return ftx, fty, ftz, xx, xy, xz, diss


@njit(inline="always", error_model="numpy")
def rolling_moment(i, j, w, mu_r, Rs, fn):  # pragma: no cover - compiled
    """Rolling-resistance moment on i (N m): -mu_r Rs fn along the relative angular velocity."""
    wx = w[i, 0] - w[j, 0]
    wy = w[i, 1] - w[j, 1]
    wz = w[i, 2] - w[j, 2]
    wm = math.sqrt(wx * wx + wy * wy + wz * wz)
    if wm > 0.0:
        c = -mu_r * Rs * fn / wm
        return c * wx, c * wy, c * wz
    return 0.0, 0.0, 0.0


@njit(cache=True, error_model="numpy")  # no ZeroDivisionError checks in the loop (dist > 0 where divided)
def _pairs_range(p0, p1, hp, x, v, w, radius, mass, pairs, hkeys, hxi, N, dt, hertz, hm_c, k_n, eta, zeta,
                 attractive, tang, kt_ratio, mu, mu_r, Estar, Gstar, F, T, ci, cj, cdelta, cfn, cfnraw, nkeys, nxi,
                 out0):  # pragma: no cover - compiled
    """Candidate pairs p0..p1-1: forces and torques added to F, T; the active contacts and the
    updated history written in order from index out0 of the output arrays. ``hp``: index of
    the first history key >= the key of pair p0. Returns (contacts, history entries, dissipation)."""
    nc = 0
    nh = 0
    H = hkeys.shape[0]
    diss = 0.0
    for p in range(p0, p1):
        i = pairs[p, 0]
        j = pairs[p, 1]
        delta, nx, ny, nz, vrx, vry, vrz, vn, Rs, ms = contact_kinematics(i, j, x, v, w, radius, mass)
        if delta <= 0.0:
            continue
        fel, ktan, fraw, fn = normal_force(delta, vn, Rs, ms, hertz, hm_c, k_n, eta, zeta, attractive, Estar)
        diss += (fn - fel) * vn * dt
        ftx = 0.0
        fty = 0.0
        ftz = 0.0
        if tang > 0:
            key = i * N + j
            while hp < H and hkeys[hp] < key:
                hp += 1
            xx = 0.0
            xy = 0.0
            xz = 0.0
            if hp < H and hkeys[hp] == key:
                xx = hxi[hp, 0]
                xy = hxi[hp, 1]
                xz = hxi[hp, 2]
            ftx, fty, ftz, xx, xy, xz, dcut = tangential_force(xx, xy, xz, nx, ny, nz, vrx, vry, vrz, vn, delta,
                                                              Rs, ktan, fn, dt, tang, kt_ratio, mu, Gstar)
            diss += dcut
            nkeys[out0 + nh] = key
            nxi[out0 + nh, 0] = xx
            nxi[out0 + nh, 1] = xy
            nxi[out0 + nh, 2] = xz
            nh += 1
        fx = -fn * nx + ftx
        fy = -fn * ny + fty
        fz = -fn * nz + ftz
        F[i, 0] += fx
        F[i, 1] += fy
        F[i, 2] += fz
        F[j, 0] -= fx
        F[j, 1] -= fy
        F[j, 2] -= fz
        if tang > 0 or mu_r > 0.0:
            cx = ny * ftz - nz * fty
            cy = nz * ftx - nx * ftz
            cz = nx * fty - ny * ftx
            mx = 0.0
            my = 0.0
            mz = 0.0
            if mu_r > 0.0:
                mx, my, mz = rolling_moment(i, j, w, mu_r, Rs, fn)
            Ri = radius[i]
            Rj = radius[j]
            T[i, 0] += Ri * cx + mx
            T[i, 1] += Ri * cy + my
            T[i, 2] += Ri * cz + mz
            T[j, 0] += Rj * cx - mx
            T[j, 1] += Rj * cy - my
            T[j, 2] += Rj * cz - mz
        ci[out0 + nc] = i
        cj[out0 + nc] = j
        cdelta[out0 + nc] = delta
        cfn[out0 + nc] = fn
        cfnraw[out0 + nc] = fraw
        nc += 1
    return nc, nh, diss


@njit(cache=True)
def _contact_buffers(P):  # pragma: no cover - compiled
    """Outputs for P candidate pairs: contacts (i, j, overlap, normal force, unclamped force) and
    history (keys, springs); filled up to the counts the pair pass returns."""
    return (np.empty(P, np.int64), np.empty(P, np.int64), np.empty(P), np.empty(P), np.empty(P),
            np.empty(P, np.int64), np.empty((P, 3)))


@njit(cache=True)
def pair_forces(x, v, w, radius, mass, pairs, hkeys, hxi, N, dt, hertz, hm_c, k_n, eta, zeta,
                attractive, tang, kt_ratio, mu, mu_r, Estar, Gstar, F, T):  # pragma: no cover - compiled
    """One pass over the candidate pairs (sorted by key i N + j): F, T accumulated; returns the
    active contacts (i, j, overlap, normal force, unclamped force), the new history (keys,
    springs) and the dissipated energy of the step."""
    P = pairs.shape[0]
    ci, cj, cdelta, cfn, cfnraw, nkeys, nxi = _contact_buffers(P)
    nc, nh, diss = _pairs_range(0, P, 0, x, v, w, radius, mass, pairs, hkeys, hxi, N, dt, hertz, hm_c, k_n, eta,
                                zeta, attractive, tang, kt_ratio, mu, mu_r, Estar, Gstar, F, T, ci, cj, cdelta, cfn,
                                cfnraw, nkeys, nxi, 0)
    return ci[:nc], cj[:nc], cdelta[:nc], cfn[:nc], cfnraw[:nc], nkeys[:nh], nxi[:nh], diss


def prefer_workqueue() -> None:
    """Run numba's parallel regions on its own ``workqueue`` threads unless the user chose a layer
    (``NUMBA_THREADING_LAYER``) or one is already running: the DEM benchmark on a loaded 2-core
    machine measured the OpenMP layer's waiting threads making the 2-thread kernel 0.15x the serial
    one, the workqueue layer 0.84x (10,648 spheres, same run conditions)."""
    import os

    import numba

    if os.environ.get("NUMBA_THREADING_LAYER"):
        return
    try:
        numba.threading_layer()  # raises until a parallel region has run
    except ValueError:
        numba.config.THREADING_LAYER = "workqueue"
