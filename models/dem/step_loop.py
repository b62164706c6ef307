"""Velocity Verlet steps of the parallel DEM path in one compiled loop per thread, from one
neighbour-list build to the next (:class:`models.dem.stepping.CompiledVelocityVerlet.advance`).

A step is two passes split into the fixed blocks of :mod:`models.dem.parallel`, the blocks handed
out by atomic counters, the threads meeting at a spin barrier (:mod:`models.dem.team`) after each:

1. the pair slots (:func:`models.dem.parallel._slots_block`) at the drifted positions and the
   predicted velocities;
2. per particle: the gather of its pairs into ``[F/m + g; T/I]`` (the new accelerations), this
   step's kick, the next step's drift and the neighbour-list displacement check
   (:func:`_gather_kick_drift_block`; the operations of ``_gather_accel_block`` and
   ``_kick_drift_block``, in the same order, so the trajectory is bitwise that of the per-step
   path and of the serial kernel).

Positions and accelerations alternate between two buffers by step parity (``xbuf[k % 2]`` is
step k's drifted position, ``abuf[k % 2]`` the acceleration before it); velocities and the
predictor are updated in place. The loop leaves when a particle moved more than the skin
allows (the caller rebuilds the list and enters again) or after ``n_max`` steps.
"""
from __future__ import annotations

from models.dem.kernels import njit
from models.dem.parallel import _slots_block, particle_accel, particle_kick_drift
from models.dem.team import aborted, barrier, reset, take_near


@njit(nogil=True, cache=True)
def _gather_kick_drift_block(k0, k1, ptr, inc, f, c, mr, radius, torque, rolling, mass, inertia, g, planar, v, a,
                             a1, h, x1, x_ref, x2, vp2):  # pragma: no cover - compiled
    """Particles k0..k1-1: a1 = [F/m + g; T/I] from their pairs, v <- v + (a + a1) h / 2 (in place),
    x2 = x1 + v h + a1 h^2 / 2, vp2 = v + a1 h; returns their largest squared displacement (m^2)
    of x2 from ``x_ref``."""
    N = x_ref.shape[0]
    best = 0.0
    for k in range(k0, k1):
        particle_accel(k, N, ptr, inc, f, c, mr, radius, torque, rolling, mass, inertia, g, planar, a1)
        d2 = particle_kick_drift(k, N, v, a, a1, h, x1, x_ref, v, x2, vp2)  # the kick in place
        if d2 > best:
            best = d2
    return best


@njit(nogil=True, cache=True, error_model="numpy")
def verlet_steps(tid, n_threads, sync, k0, n_max, limit2, xbuf, x_ref, v, vp, abuf, radius, mass, inertia, g, planar,
                 pairs, bounds, pbounds, ptr, inc, dt, hertz, hm_c, k_n, eta, zeta, attractive, tang, kt_ratio, mu,
                 mu_r, Estar, Gstar, xi, f, c, mr, delta_o, fn_o, fraw_o, on, diss_b, diss_steps, disp2_b,
                 torque, rolling):  # pragma: no cover - compiled
    """Steps k0, k0 + 1, ... on thread ``tid`` of ``n_threads`` (all call it with the same arguments).

    Before each step the largest squared displacement (m^2) of its positions from the neighbour
    list's ``x_ref`` (N, 3) is in ``disp2_b`` (per particle block; the caller fills it for the first
    step): the loop stops when it exceeds ``limit2`` or after ``n_max`` steps. ``diss_steps[s]`` gets the per-block dissipated
    energies of the s-th step of this call (J). Returns the number of steps taken (-1: aborted).
    """
    N = radius.shape[0]
    CP = bounds.size - 1
    CK = pbounds.size - 1
    w_off = N
    done = 0
    while done < n_max:
        d2 = 0.0
        for b in range(CK):
            if disp2_b[b] > d2:
                d2 = disp2_b[b]
        if d2 > limit2:
            break
        k = k0 + done
        x1 = xbuf[k % 2]
        x2 = xbuf[(k + 1) % 2]
        a = abuf[k % 2]
        a1 = abuf[(k + 1) % 2]
        xs = x1[:w_off]
        vs = vp[:w_off]
        ws = vp[w_off:]
        if tid == 0:
            for q in range(n_threads):  # no thread takes particle blocks before the next barrier
                reset(sync, n_threads + q)
        r = 0
        while True:
            b, r = take_near(sync, 0, tid, n_threads, CP, r)  # pair counters 0 .. n_threads - 1
            if b >= CP:
                break
            diss_b[b] = _slots_block(bounds[b], bounds[b + 1], xs, vs, ws, radius, mass, pairs, dt, hertz, hm_c, k_n,
                                     eta, zeta, attractive, tang, kt_ratio, mu, mu_r, Estar, Gstar, xi, f, c, mr,
                                     delta_o, fn_o, fraw_o, on)
        if not barrier(sync, n_threads):
            return -1
        if tid == 0:
            for q in range(n_threads):
                reset(sync, q)
            for b in range(CP):
                diss_steps[done, b] = diss_b[b]
        r = 0
        while True:
            b, r = take_near(sync, n_threads, tid, n_threads, CK, r)  # particle counters n_threads .. 2 n_threads - 1
            if b >= CK:
                break
            disp2_b[b] = _gather_kick_drift_block(pbounds[b], pbounds[b + 1], ptr, inc, f, c, mr, radius, torque,
                                                  rolling, mass, inertia, g, planar, v, a, a1, dt, x1, x_ref,
                                                  x2, vp)
        if not barrier(sync, n_threads):
            return -1
        done += 1
    if aborted(sync):
        return -1
    return done
