"""Race-free multi-threaded pair forces and step updates (numba prange), used by DEMSystem when
``backend="parallel"`` (or ``numba``/``auto`` with ``threads`` > 1).

The serial kernel (:func:`models.dem.kernels.pair_forces`) scatters each pair's force into the
two particles as it goes; threads cannot share that scatter without races, and private full-size
force buffers per thread (the earlier block kernel) cost a zeroing and a reduction per step and
doubled the scattered-write footprint. Here a step is three passes, each split between threads
without shared writes:

1. :func:`pair_slots`: every candidate pair writes its own slots (force on i, the torque terms,
   overlap, normal forces, contact flag) and updates its tangential spring in place (the history
   lives per candidate pair, zero when the pair is not in contact, which is what the serial
   kernel's lookup of "no history entry" gives);
2. :func:`gather`: every particle sums its incident pairs over a CSR particle -> pair incidence
   list (+f on the i side, -f on the j side), built only when the neighbour list is rebuilt
   (:func:`incidence`). The incident pairs of a particle are listed in increasing pair order,
   which is the order in which the serial kernel adds into that particle: forces and torques
   come out bitwise equal to the serial kernel's;
3. :func:`accelerations`, :func:`drift`, :func:`kick`: ``F/m + g``, ``T/I`` and the velocity
   Verlet updates of :mod:`models.integrators.verlet` with the same floating-point operations.

The pairs are cut into a fixed number of blocks (:data:`N_BLOCKS`), independent of the thread
count, so the per-block sums (dissipated energy, the neighbour-list displacement check) are the
same on 1 or 2 threads: results do not depend on the thread count. The dissipated energy differs
from the serial kernel's running sum by round-off (summation order) only.
"""
from __future__ import annotations

import numpy as np

from models.dem.kernels import (HAVE_NUMBA, contact_kinematics, njit, normal_force, prange, rolling_moment,
                               tangential_force)

if HAVE_NUMBA:
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic
else:  # pragma: no cover - the parallel backend is refused without numba
    def intrinsic(f):
        return f

N_BLOCKS = 64  # pair blocks of the parallel passes (fixed: results independent of the thread count)


@njit(cache=True)
def block_bounds(P, C):  # pragma: no cover - compiled
    """C + 1 bounds cutting 0..P into C nearly equal contiguous blocks."""
    b = np.empty(C + 1, np.int64)
    for c in range(C + 1):
        b[c] = (P * c) // C
    return b


@intrinsic
def _fetch_add(typingctx, counter, value):
    """Atomic ``counter[0] += value`` returning the old value (int64 array): hands out blocks of work
    to whichever thread asks first."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64):
        return None

    def codegen(context, builder, signature, args):
        arr, val = args
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, arr)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [context.get_constant(types.intp, 0)])
        return builder.atomic_rmw("add", ptr, val, "monotonic")

    return types.int64(counter, types.int64), codegen


@njit(cache=True, parallel=True, error_model="numpy")
def pair_slots(x, v, w, radius, mass, pairs, bounds, dt, hertz, hm_c, k_n, eta, zeta, attractive, tang, kt_ratio,
               mu, mu_r, Estar, Gstar, xi, f, c, mr, delta_o, fn_o, fraw_o, on, diss_b, counter,
               n_workers):  # pragma: no cover - compiled
    """Per-pair contributions of the candidate ``pairs`` (same arithmetic as the serial kernel).

    Writes, for each pair p: ``f[p]`` force on i (N; -f on j), ``c[p]`` = n x f_t (torque on a
    particle of radius R: ``R c`` + rolling term, N m / m), ``mr[p]`` rolling torque on i (only when
    ``mu_r`` > 0), ``delta_o``/``fn_o``/``fraw_o`` overlap and normal forces, ``on[p]`` contact
    flag; ``xi[p]`` (tangential spring, m) is advanced in place (zeroed out of contact).
    ``diss_b[b]``: dissipated energy (J) of block b. The blocks (``bounds``) are handed out
    dynamically to ``n_workers`` threads (``counter``: one int64, scratch), so a thread slowed by
    another process on its core does less of the work; every block writes only its own pairs.
    """
    C = bounds.size - 1
    counter[0] = 0
    for t in prange(n_workers):
        while True:
            b = _fetch_add(counter, 1)
            if b >= C:
                break
            diss_b[b] = _slots_block(bounds[b], bounds[b + 1], x, v, w, radius, mass, pairs, dt, hertz, hm_c, k_n,
                                     eta, zeta, attractive, tang, kt_ratio, mu, mu_r, Estar, Gstar, xi, f, c, mr,
                                     delta_o, fn_o, fraw_o, on)


@njit(cache=True, error_model="numpy")
def pair_slots_serial(x, v, w, radius, mass, pairs, bounds, dt, hertz, hm_c, k_n, eta, zeta, attractive, tang,
                      kt_ratio, mu, mu_r, Estar, Gstar, xi, f, c, mr, delta_o, fn_o, fraw_o, on,
                      diss_b):  # pragma: no cover - compiled
    """:func:`pair_slots` on the calling thread (one thread: no thread hand-over per pass)."""
    for b in range(bounds.size - 1):
        diss_b[b] = _slots_block(bounds[b], bounds[b + 1], x, v, w, radius, mass, pairs, dt, hertz, hm_c, k_n, eta,
                                 zeta, attractive, tang, kt_ratio, mu, mu_r, Estar, Gstar, xi, f, c, mr, delta_o,
                                 fn_o, fraw_o, on)


@njit(cache=True, error_model="numpy")
def _slots_block(p0, p1, x, v, w, radius, mass, pairs, dt, hertz, hm_c, k_n, eta, zeta, attractive, tang, kt_ratio,
                 mu, mu_r, Estar, Gstar, xi, f, c, mr, delta_o, fn_o, fraw_o, on):  # pragma: no cover - compiled
    """Pairs p0..p1-1 of :func:`pair_slots`; returns their dissipated energy (J)."""
    diss = 0.0
    for p in range(p0, p1):
        i = pairs[p, 0]
        j = pairs[p, 1]
        delta, nx, ny, nz, vrx, vry, vrz, vn, Rs, ms = contact_kinematics(i, j, x, v, w, radius, mass)
        if delta <= 0.0:
            on[p] = 0
            for a in range(3):
                f[p, a] = 0.0
                c[p, a] = 0.0
            if mu_r > 0.0:
                for a in range(3):
                    mr[p, a] = 0.0
            if tang > 0:
                for a in range(3):
                    xi[p, a] = 0.0
            continue
        fel, ktan, fraw, fn = normal_force(delta, vn, Rs, ms, hertz, hm_c, k_n, eta, zeta, attractive, Estar)
        diss += (fn - fel) * vn * dt
        ftx = 0.0
        fty = 0.0
        ftz = 0.0
        if tang > 0:
            xx = xi[p, 0]
            xy = xi[p, 1]
            xz = xi[p, 2]
            ftx, fty, ftz, xx, xy, xz, dcut = tangential_force(xx, xy, xz, nx, ny, nz, vrx, vry, vrz, vn, delta,
                                                              Rs, ktan, fn, dt, tang, kt_ratio, mu, Gstar)
            diss += dcut
            xi[p, 0] = xx
            xi[p, 1] = xy
            xi[p, 2] = xz
        f[p, 0] = -fn * nx + ftx
        f[p, 1] = -fn * ny + fty
        f[p, 2] = -fn * nz + ftz
        c[p, 0] = ny * ftz - nz * fty
        c[p, 1] = nz * ftx - nx * ftz
        c[p, 2] = nx * fty - ny * ftx
        if mu_r > 0.0:
            mx, my, mz = rolling_moment(i, j, w, mu_r, Rs, fn)
            mr[p, 0] = mx
            mr[p, 1] = my
            mr[p, 2] = mz
        delta_o[p] = delta
        fn_o[p] = fn
        fraw_o[p] = fraw
        on[p] = 1
    return diss


@njit(cache=True)
def _row_sums(k, ptr, inc, f, c, mr, Rk, torque, rolling):  # pragma: no cover - compiled
    """Force and torque on particle k (radius Rk) from its incident pairs, in increasing pair order."""
    fx = 0.0
    fy = 0.0
    fz = 0.0
    tx = 0.0
    ty = 0.0
    tz = 0.0
    for q in range(ptr[k], ptr[k + 1]):
        e = inc[q]
        if e >= 0:
            fx += f[e, 0]
            fy += f[e, 1]
            fz += f[e, 2]
            if torque:
                if rolling:
                    tx += Rk * c[e, 0] + mr[e, 0]
                    ty += Rk * c[e, 1] + mr[e, 1]
                    tz += Rk * c[e, 2] + mr[e, 2]
                else:
                    tx += Rk * c[e, 0] + 0.0
                    ty += Rk * c[e, 1] + 0.0
                    tz += Rk * c[e, 2] + 0.0
        else:
            p = -e - 1
            fx -= f[p, 0]
            fy -= f[p, 1]
            fz -= f[p, 2]
            if torque:
                if rolling:
                    tx += Rk * c[p, 0] - mr[p, 0]
                    ty += Rk * c[p, 1] - mr[p, 1]
                    tz += Rk * c[p, 2] - mr[p, 2]
                else:
                    tx += Rk * c[p, 0] - 0.0
                    ty += Rk * c[p, 1] - 0.0
                    tz += Rk * c[p, 2] - 0.0
    return fx, fy, fz, tx, ty, tz


@njit(cache=True)
def _gather_block(k0, k1, ptr, inc, f, c, mr, radius, torque, rolling, F, T):  # pragma: no cover - compiled
    for k in range(k0, k1):
        fx, fy, fz, tx, ty, tz = _row_sums(k, ptr, inc, f, c, mr, radius[k], torque, rolling)
        F[k, 0] = fx
        F[k, 1] = fy
        F[k, 2] = fz
        T[k, 0] = tx
        T[k, 1] = ty
        T[k, 2] = tz


@njit(cache=True, parallel=True)
def gather(ptr, inc, f, c, mr, radius, torque, rolling, F, T, pbounds, counter, n_workers):  # pragma: no cover
    """F, T (N, 3) of every particle from its incident pairs (written, not added).

    ``inc[ptr[k]:ptr[k+1]]``: pair p as ``p`` where k is its i, ``-p - 1`` where k is its j, in
    increasing p (the serial kernel's order of addition). ``torque``: pairs carry tangential or
    rolling torques; ``rolling``: ``mr`` holds rolling torques. Blocks of particles (``pbounds``)
    handed out dynamically to ``n_workers`` threads.
    """
    C = pbounds.size - 1
    counter[0] = 0
    for t in prange(n_workers):
        while True:
            b = _fetch_add(counter, 1)
            if b >= C:
                break
            _gather_block(pbounds[b], pbounds[b + 1], ptr, inc, f, c, mr, radius, torque, rolling, F, T)


@njit(cache=True)
def gather_serial(ptr, inc, f, c, mr, radius, torque, rolling, F, T, pbounds):  # pragma: no cover - compiled
    """:func:`gather` on the calling thread."""
    _gather_block(0, ptr.size - 1, ptr, inc, f, c, mr, radius, torque, rolling, F, T)


@njit(cache=True, inline="always")
def particle_accel(k, N, ptr, inc, f, c, mr, radius, torque, rolling, mass, inertia, g, planar,
                   out):  # pragma: no cover - compiled
    """Row k of ``out`` = F/m + g and row N + k = T/I of particle k from its pairs (planar: in-plane)."""
    fx, fy, fz, tx, ty, tz = _row_sums(k, ptr, inc, f, c, mr, radius[k], torque, rolling)
    m = mass[k]
    inr = inertia[k]
    out[k, 0] = fx / m + g[0]
    out[k, 1] = fy / m + g[1]
    out[k, 2] = fz / m + g[2]
    out[N + k, 0] = tx / inr
    out[N + k, 1] = ty / inr
    out[N + k, 2] = tz / inr
    if planar:
        out[k, 2] = 0.0
        out[N + k, 0] = 0.0
        out[N + k, 1] = 0.0


@njit(cache=True)
def _gather_accel_block(k0, k1, ptr, inc, f, c, mr, radius, torque, rolling, mass, inertia, g, planar,
                        out):  # pragma: no cover - compiled
    N = ptr.size - 1
    for k in range(k0, k1):
        particle_accel(k, N, ptr, inc, f, c, mr, radius, torque, rolling, mass, inertia, g, planar, out)


@njit(cache=True, parallel=True)
def gather_accel(ptr, inc, f, c, mr, radius, torque, rolling, mass, inertia, g, planar, out, pbounds, counter,
                 n_workers):  # pragma: no cover - compiled
    """:func:`gather` and :func:`accelerations` in one pass (no walls): out (2N, 3) = [F/m + g; T/I]."""
    C = pbounds.size - 1
    counter[0] = 0
    for t in prange(n_workers):
        while True:
            b = _fetch_add(counter, 1)
            if b >= C:
                break
            _gather_accel_block(pbounds[b], pbounds[b + 1], ptr, inc, f, c, mr, radius, torque, rolling, mass,
                                inertia, g, planar, out)


@njit(cache=True)
def gather_accel_serial(ptr, inc, f, c, mr, radius, torque, rolling, mass, inertia, g, planar, out,
                        pbounds):  # pragma: no cover - compiled
    """:func:`gather_accel` on the calling thread."""
    _gather_accel_block(0, ptr.size - 1, ptr, inc, f, c, mr, radius, torque, rolling, mass, inertia, g, planar, out)


@njit(cache=True)
def incidence(pairs, ptr, inc):  # pragma: no cover - compiled (once per neighbour-list build)
    """CSR particle -> pair incidence into ``ptr`` (N + 1) and ``inc`` (2P): p on i's row, -p - 1 on
    j's row, rows in increasing p."""
    P = pairs.shape[0]
    N = ptr.size - 1
    ptr[:] = 0
    for p in range(P):
        ptr[pairs[p, 0] + 1] += 1
        ptr[pairs[p, 1] + 1] += 1
    for k in range(N):
        ptr[k + 1] += ptr[k]
    fill = ptr[:-1].copy()
    for p in range(P):
        i = pairs[p, 0]
        j = pairs[p, 1]
        inc[fill[i]] = p
        fill[i] += 1
        inc[fill[j]] = -p - 1
        fill[j] += 1


@njit(cache=True)
def carry_history(old_pairs, old_on, old_xi, new_pairs, N, xi):  # pragma: no cover - compiled (once per build)
    """Tangential springs ``xi`` of the new candidate pairs: the old spring of a pair in contact, else 0.
    Both pair lists sorted by key i N + j (merge)."""
    P = new_pairs.shape[0]
    xi[:] = 0.0
    Q = old_pairs.shape[0]
    q = 0
    for p in range(P):
        key = new_pairs[p, 0] * N + new_pairs[p, 1]
        while q < Q and old_pairs[q, 0] * N + old_pairs[q, 1] < key:
            q += 1
        if q < Q and old_on[q] and old_pairs[q, 0] * N + old_pairs[q, 1] == key:
            xi[p, 0] = old_xi[q, 0]
            xi[p, 1] = old_xi[q, 1]
            xi[p, 2] = old_xi[q, 2]


@njit(cache=True)
def history_from_list(keys, hxi, pairs, N, xi):  # pragma: no cover - compiled
    """Per-pair springs ``xi`` from a compact history (sorted keys, springs), e.g. the serial kernel's."""
    P = pairs.shape[0]
    xi[:] = 0.0
    H = keys.shape[0]
    h = 0
    for p in range(P):
        key = pairs[p, 0] * N + pairs[p, 1]
        while h < H and keys[h] < key:
            h += 1
        if h < H and keys[h] == key:
            xi[p, 0] = hxi[h, 0]
            xi[p, 1] = hxi[h, 1]
            xi[p, 2] = hxi[h, 2]


@njit(cache=True, parallel=True)
def max_displacement2(x, x_ref, C):  # pragma: no cover - compiled
    """Largest squared displacement (m^2) of a particle from x_ref, over C blocks of particles."""
    N = x.shape[0]
    b = block_bounds(N, C)
    m = np.zeros(C)
    for k in prange(C):
        best = 0.0
        for i in range(b[k], b[k + 1]):
            dx = x[i, 0] - x_ref[i, 0]
            dy = x[i, 1] - x_ref[i, 1]
            dz = x[i, 2] - x_ref[i, 2]
            d2 = dx * dx + dy * dy + dz * dz
            if d2 > best:
                best = d2
        m[k] = best
    return m.max()


@njit(cache=True, parallel=True)
def accelerations(F, T, mass, inertia, g, planar, out):  # pragma: no cover - compiled
    """out[:N] = F / m + g, out[N:] = T / I (m/s^2, rad/s^2); planar (disks): a_z = 0, alpha_x,y = 0."""
    N = F.shape[0]
    for k in prange(N):
        for a in range(3):
            out[k, a] = F[k, a] / mass[k] + g[a]
            out[N + k, a] = T[k, a] / inertia[k]
        if planar:
            out[k, 2] = 0.0
            out[N + k, 0] = 0.0
            out[N + k, 1] = 0.0


@njit(cache=True, parallel=True)
def drift(x, v, a, h, x1, vp):  # pragma: no cover - compiled
    """Velocity Verlet first half: ``x1 = x + v h + a h^2 / 2`` and the predictor ``vp = v + a h`` (the
    operations of models.integrators.verlet.VelocityVerlet, in the same order)."""
    for k in prange(x.shape[0]):
        for d in range(x.shape[1]):
            x1[k, d] = x[k, d] + v[k, d] * h + 0.5 * a[k, d] * h * h
            vp[k, d] = v[k, d] + a[k, d] * h


@njit(cache=True, parallel=True)
def kick(v, a, a1, h, v1):  # pragma: no cover - compiled
    """Velocity Verlet second half: ``v1 = v + (a + a1) h / 2``."""
    for k in prange(v.shape[0]):
        for d in range(v.shape[1]):
            v1[k, d] = v[k, d] + 0.5 * (a[k, d] + a1[k, d]) * h


def run_pass(threaded, on_caller, args: tuple, counter, n_workers: int) -> None:
    """One pass: ``threaded(*args, counter, n_workers)`` (blocks handed out to ``n_workers`` numba
    threads) when ``n_workers`` > 1, else ``on_caller(*args)`` (the same blocks on this thread)."""
    if n_workers > 1:
        threaded(*args, counter, n_workers)
    else:
        on_caller(*args)


def use_threads(n: int) -> int:
    """Run the following parallel passes on ``n`` numba threads (at most numba's pool size), on
    numba's workqueue layer unless the user chose one (:func:`models.dem.kernels.prefer_workqueue`);
    returns the thread count set."""
    import numba

    from models.dem.kernels import prefer_workqueue

    prefer_workqueue()
    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))
    return numba.get_num_threads()


class PairSlots:
    """Per-candidate-pair state of the parallel path, valid for one neighbour-list build.

    pairs (P, 2) sorted by key; ptr, inc: CSR incidence (:func:`incidence`); xi (P, 3) tangential
    springs (m); f, c (P, 3) and mr (P, 3) or (0, 3) without rolling friction: the slots of
    :func:`pair_slots`; delta, fn, fraw (P,); on (P,) uint8; diss_b (blocks,); ``n_builds``: the
    neighbour-list build they belong to; ``stale``: the compact contact list is out of date.
    """

    def __init__(self, pairs: np.ndarray, N: int, n_builds: int, xi: np.ndarray, rolling: bool) -> None:
        P = pairs.shape[0]
        self.pairs = np.ascontiguousarray(pairs, dtype=np.int64)
        self.n_builds = n_builds
        self.ptr = np.empty(N + 1, np.int64)
        self.inc = np.empty(2 * P, np.int64)
        incidence(self.pairs, self.ptr, self.inc)
        self.bounds = block_bounds(P, max(1, min(N_BLOCKS, P)))
        self.xi = xi
        self.f = np.empty((P, 3))
        self.c = np.empty((P, 3))
        self.mr = np.empty((P if rolling else 0, 3))
        self.delta = np.empty(P)
        self.fn = np.empty(P)
        self.fraw = np.empty(P)
        self.on = np.zeros(P, np.uint8)
        self.diss_b = np.zeros(self.bounds.size - 1)
        self.pbounds = block_bounds(N, max(1, min(N_BLOCKS, N)))
        self.counter = np.zeros(1, np.int64)  # scratch of the dynamic block hand-out
        self.stale = False

    @classmethod
    def build(cls, pairs: np.ndarray, N: int, n_builds: int, old: "PairSlots | None", hist, rolling: bool):
        """Slots for a new pair list; springs carried over from ``old`` slots, or from the compact
        history ``hist`` = (sorted keys, springs) when there are none."""
        pairs = np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2)
        xi = np.empty((pairs.shape[0], 3))  # numpy allocations throughout: tracemalloc sees them
        if old is not None:
            carry_history(old.pairs, old.on, old.xi, pairs, N, xi)
        else:
            history_from_list(np.ascontiguousarray(hist[0], dtype=np.int64), np.ascontiguousarray(hist[1]),
                              pairs, N, xi)
        return cls(pairs, N, n_builds, xi, rolling)


@njit(cache=True, inline="always")
def particle_kick_drift(k, N, v, a, a1, h, x1, x_ref, v1, x2, vp2):  # pragma: no cover - compiled
    """Particle k (rows k and N + k): ``v1 = v + (a + a1) h / 2``, ``x2 = x1 + v1 h + a1 h^2 / 2``,
    ``vp2 = v1 + a1 h`` (``v1`` may be ``v``); returns its squared displacement from ``x_ref`` (m^2)."""
    for r in (k, N + k):
        for d in range(3):
            vv = v[r, d] + 0.5 * (a[r, d] + a1[r, d]) * h
            v1[r, d] = vv
            x2[r, d] = x1[r, d] + vv * h + 0.5 * a1[r, d] * h * h
            vp2[r, d] = vv + a1[r, d] * h
    dx = x2[k, 0] - x_ref[k, 0]
    dy = x2[k, 1] - x_ref[k, 1]
    dz = x2[k, 2] - x_ref[k, 2]
    return dx * dx + dy * dy + dz * dz


@njit(cache=True)
def _kick_drift_block(k0, k1, v, a, a1, h, x1, x_ref, v1, x2, vp2):  # pragma: no cover - compiled
    """Particles k0..k1-1 of :func:`kick_drift` (rows k and N + k); returns their largest squared
    displacement (m^2)."""
    N = x_ref.shape[0]
    best = 0.0
    for k in range(k0, k1):
        d2 = particle_kick_drift(k, N, v, a, a1, h, x1, x_ref, v1, x2, vp2)
        if d2 > best:
            best = d2
    return best


@njit(cache=True, parallel=True)
def kick_drift(v, a, a1, h, x1, x_ref, v1, x2, vp2, pbounds, disp2_b):  # pragma: no cover - compiled
    """Velocity Verlet: this step's kick ``v1 = v + (a + a1) h / 2`` and the next step's drift
    ``x2 = x1 + v1 h + a1 h^2 / 2``, ``vp2 = v1 + a1 h`` in one pass (the operations of
    :func:`kick` and :func:`drift`); ``disp2_b[b]``: largest squared displacement (m^2) of x2's
    positions (first N rows) from ``x_ref`` (N, 3) in particle block b."""
    for b in prange(pbounds.size - 1):
        disp2_b[b] = _kick_drift_block(pbounds[b], pbounds[b + 1], v, a, a1, h, x1, x_ref, v1, x2, vp2)


@njit(cache=True)
def kick_drift_serial(v, a, a1, h, x1, x_ref, v1, x2, vp2, pbounds, disp2_b):  # pragma: no cover - compiled
    """:func:`kick_drift` on the calling thread."""
    for b in range(pbounds.size - 1):
        disp2_b[b] = _kick_drift_block(pbounds[b], pbounds[b + 1], v, a, a1, h, x1, x_ref, v1, x2, vp2)
