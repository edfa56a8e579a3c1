"""Compiled small-array kernels of the "prox" node relaxation (numba).

A node of the branch and bound works on arrays of a few dozen entries (the working set W of
:func:`dpbench.core.oracle.ksupport.ksupport_alpha`, |W| ~ 40-100) and on one vector of the
survivors (the per-feature and children's bounds). At these sizes numpy's per-call overhead,
not the arithmetic, was most of a node's time (``docs/performance.md``); these kernels run the
same algorithms as the numpy reference functions, loop for loop:

* :func:`solve_working_set` -- the working-set solve of :func:`~dpbench.core.oracle.ksupport.ksupport_alpha`
  (active-set Newton polish of :func:`~dpbench.core.oracle.ksupport._newton`, FISTA with the
  k-support prox of :func:`~dpbench.core.oracle.ksupport._fista`, stopped by the working-set duality
  gap of :func:`~dpbench.core.oracle.ksupport._w_gap`; the Lipschitz constant from
  :func:`~dpbench.core.oracle.working_set.lambda_max_upper`); same counts (``iters``, ``chunk``, Newton
  steps), same tests, so the same iterates up to floating-point rounding;
* :func:`prox_sq_ksupport`, :func:`sq_ksupport` -- the water-filling prox and the squared
  k-support norm (McDonald, Pontil & Stamos 2016, section 4; Argyriou, Foygel & Srebro 2012,
  Prop. 2.1), as in :mod:`~dpbench.core.oracle.ksupport`;
* :func:`dual_bounds_1`, :func:`bound_at` -- the bound (*) of :mod:`~dpbench.core.oracle.relaxation`
  for one dual point, with per-feature bounds, elementwise as :func:`~dpbench.core.oracle.relaxation._bound_at`
  (the partition children's closed-form bounds use it: :mod:`~dpbench.core.oracle.children`).

Validity never rests on these kernels' accuracy: every bound is the dual formula (*) at some
alpha, computed with the same rounding margin as the numpy functions. Work limits are the same
counts: results are deterministic. ``tests/oracle/test_kernels.py`` checks every kernel
against its numpy reference.

Groups are passed in CSR form: ``gptr`` (ng + 1,) int64 and ``gidx`` (gptr[-1],) int64 the
positions of each group's members (increasing), ``needs`` (ng,) int64; ``fpos`` the
positions of the fixed features. Compiled with ``error_model="numpy"`` (a division by zero
gives inf/nan as in numpy, which the callers test for) and cached on disk (compiling costs
seconds once).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpbench.core.oracle.working_set import lambda_max_upper

__all__ = ["best_scale", "bound_at", "dual_bounds_1", "prox_sq_ksupport", "psi", "solve_working_set",
           "sq_ksupport", "w_gap"]

#: Same as :data:`dpbench.core.oracle.relaxation.ROUND_MARGIN` (not imported: a kernel reads it as a
#: compile-time constant; ``tests/oracle/test_kernels.py`` checks that they agree).
ROUND_MARGIN = 1e-11

_JIT = dict(cache=True, nogil=True, error_model="numpy")


# ----------------------------------------------------------------------------- k-support norm
@njit(**_JIT)
def _weights(av, need, tau):
    """:func:`dpbench.core.oracle.ksupport._weights`: z of the prox for magnitudes ``av`` (L,) >= 0."""
    L = av.size
    cnt = 0
    for i in range(L):
        if av[i] > 0:
            cnt += 1
    z = np.zeros(L)
    if need >= cnt:
        for i in range(L):
            if av[i] > 0:
                z[i] = 1.0
        return z
    t2 = 2.0 * tau
    a = np.empty(cnt)
    k = 0
    for i in range(L):
        if av[i] > 0:
            a[k] = av[i]
            k += 1
    # kinks of f(s) = sum clip(a s - 2 tau, 0, 1): 2 tau / a_i (entry starts), (1 + 2 tau) / a_i (saturates)
    b0 = np.empty(2 * cnt)
    d0 = np.empty(2 * cnt)
    for i in range(cnt):
        b0[i] = t2 / a[i]
        b0[cnt + i] = (1.0 + t2) / a[i]
        d0[i] = a[i]
        d0[cnt + i] = -a[i]
    order = np.argsort(b0, kind="mergesort")
    nb = 2 * cnt
    b = np.empty(nb)
    for i in range(nb):
        b[i] = b0[order[i]]
    slope = np.empty(nb - 1)  # slope on (b_k, b_{k+1})
    acc = 0.0
    for i in range(nb - 1):
        acc += d0[order[i]]
        slope[i] = acc
    f = np.empty(nb)
    f[0] = 0.0
    acc = 0.0
    for i in range(nb - 1):
        acc += slope[i] * (b[i + 1] - b[i])
        f[i + 1] = acc
    kk = nb  # first kink with f >= need (searchsorted, side="left")
    for i in range(nb):
        if f[i] >= need:
            kk = i
            break
    kk = min(max(kk, 1), nb - 1)
    sl = slope[kk - 1]
    s = b[kk - 1] + (need - f[kk - 1]) / sl if sl > 0 else b[kk]
    s = min(max(s, b[kk - 1]), b[kk])
    k = 0
    for i in range(L):
        if av[i] > 0:
            z[i] = min(max(a[k] * s - t2, 0.0), 1.0)
            k += 1
    return z


@njit(**_JIT)
def prox_sq_ksupport(v, need, tau):
    """:func:`dpbench.core.oracle.ksupport.prox_sq_ksupport` compiled: (prox b (L,), weights z (L,))."""
    L = v.size
    if need <= 0:
        return np.zeros(L), np.zeros(L)
    z = _weights(np.abs(v), need, tau)
    return v * z / (z + 2.0 * tau), z


@njit(**_JIT)
def sq_ksupport(b, need):
    """:func:`dpbench.core.oracle.ksupport.sq_ksupport` compiled: ``Omega_need(b)^2``."""
    a = np.sort(np.abs(b))[::-1].copy()
    L = a.size
    if need <= 0:
        for i in range(L):
            if a[i] != 0:
                return np.inf
        return 0.0
    if need >= L:
        return float(np.dot(a, a))
    tail = np.empty(L)  # tail[i] = sum_{j >= i} a_j
    acc = 0.0
    for i in range(L - 1, -1, -1):
        acc += a[i]
        tail[i] = acc
    for q in range(need):
        h = need - q - 1  # entries 0..h-1 keep their own weight
        T = tail[h]
        upper = a[h - 1] if h > 0 else np.inf
        if upper > T / (q + 1) >= a[h]:
            head = 0.0
            for i in range(h):
                head += a[i] * a[i]
            return head + T * T / (q + 1)
    return tail[0] ** 2 / need


@njit(**_JIT)
def _pattern(b, need):
    """:func:`dpbench.core.oracle.ksupport._pattern`: (head positions, nonzero tail positions, q + 1)."""
    ab = np.abs(b)
    order = np.argsort(-ab, kind="mergesort")
    L = b.size
    if need >= L:
        return order, order[:0], 1
    a = ab[order]
    tail = np.empty(L)
    acc = 0.0
    for i in range(L - 1, -1, -1):
        acc += a[i]
        tail[i] = acc
    h = 0
    qq = need - 1
    for q in range(need):
        h = need - q - 1
        qq = q
        upper = a[h - 1] if h > 0 else np.inf
        if upper > tail[h] / (q + 1) >= a[h]:
            break
    cnt = 0
    for i in range(h, L):
        if b[order[i]] != 0:
            cnt += 1
    T = np.empty(cnt, dtype=np.int64)
    k = 0
    for i in range(h, L):
        if b[order[i]] != 0:
            T[k] = order[i]
            k += 1
    return order[:h].copy(), T, qq + 1


# ----------------------------------------------------------------------------- working-set problem
@njit(**_JIT)
def _top_sq(aW, fpos, gptr, gidx, needs):
    """:func:`dpbench.core.oracle.ksupport._top_sq`: ``T(a)^2`` on the working set."""
    T2 = 0.0
    for i in fpos:
        T2 += aW[i] * aW[i]
    for g in range(needs.size):
        need = needs[g]
        lo, hi = gptr[g], gptr[g + 1]
        L = hi - lo
        if need <= 0:
            continue
        a2 = np.empty(L)
        for i in range(L):
            a2[i] = aW[gidx[lo + i]] ** 2
        if need >= L:
            T2 += a2.sum()
        else:
            a2.sort()
            T2 += a2[L - need:].sum()
    return T2


@njit(**_JIT)
def _penalty_q(b, fpos, gptr, gidx, needs):
    """``Q(b) = ||b_F||^2 + sum_groups Omega_need(b_g)^2`` (as in :func:`~dpbench.core.oracle.ksupport._w_gap`)."""
    Q = 0.0
    for i in fpos:
        Q += b[i] * b[i]
    for g in range(needs.size):
        lo, hi = gptr[g], gptr[g + 1]
        if hi > lo and needs[g] > 0:
            Q += sq_ksupport(b[gidx[lo:hi]], needs[g])
    return Q


@njit(**_JIT)
def w_gap(G, c, yy, lam_eff, fpos, gptr, gidx, needs, b):
    """:func:`dpbench.core.oracle.ksupport._w_gap`: relative duality gap of the working-set problem at b."""
    Gb = G @ b
    cb = np.dot(c, b)
    aa = yy - 2.0 * cb + np.dot(b, Gb)
    primal = aa + lam_eff * _penalty_q(b, fpos, gptr, gidx, needs)
    dual = 2.0 * (yy - cb) - aa - _top_sq(c - Gb, fpos, gptr, gidx, needs) / lam_eff
    return (primal - dual) / max(abs(primal), 1e-300)


@njit(**_JIT)
def _penalty_prox(v, fpos, gptr, gidx, needs, tau):
    """:func:`dpbench.core.oracle.ksupport._penalty_prox`: prox of ``tau Q`` on the working set."""
    out = np.zeros_like(v)
    for i in fpos:
        out[i] = v[i] / (1.0 + 2.0 * tau)
    for g in range(needs.size):
        lo, hi = gptr[g], gptr[g + 1]
        if hi == lo:
            continue
        gi = gidx[lo:hi]
        b, _z = prox_sq_ksupport(v[gi], needs[g], tau)
        for i in range(gi.size):
            out[gi[i]] = b[i]
    return out


@njit(**_JIT)
def _fista(G, c, lam_eff, fpos, gptr, gidx, needs, beta, L, iters):
    """:func:`dpbench.core.oracle.ksupport._fista`: ``iters`` FISTA steps with gradient restart."""
    tau = lam_eff / L
    x = beta.copy()
    yv = x.copy()
    t = 1.0
    for _ in range(iters):
        grad = 2.0 * (G @ yv - c)
        xn = _penalty_prox(yv - grad / L, fpos, gptr, gidx, needs, tau)
        tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        if np.dot(yv - xn, xn - x) > 0.0:  # gradient restart: momentum points uphill
            tn = 1.0
            yv = xn.copy()
        else:
            yv = xn + ((t - 1.0) / tn) * (xn - x)
        x, t = xn, tn
    return x


@njit(**_JIT)
def _solve_or_fail(A, rhs):
    """``A^{-1} rhs`` and True, or (zeros, False) when LAPACK reports a singular or non-finite system."""
    try:
        return np.linalg.solve(A, rhs), True
    except Exception:  # noqa: BLE001 -- numba raises plain exceptions for singular / non-finite input
        return np.zeros(rhs.size), False


@njit(**_JIT)
def _polish(G, c, lam, r, mu, fpos, gptr, gidx, needs, beta):
    """:func:`dpbench.core.oracle.ksupport._polish`: exact minimiser on the pattern of beta.

    Returns (beta (|W|,), mu, ok); ``ok`` False where the reference returns None.
    """
    # D is built on the pattern's positions S only: a |W| x |W| D (80 KB zeroed per polish at
    # |W| = 100) cost more than the solve on S it feeds.
    w = beta.size
    unit = np.zeros(w, dtype=np.bool_)  # entries with their own weight: F and each group's head
    unit[fpos] = True
    tail_of = np.full(w, -1, dtype=np.int64)  # the group of a nonzero tail entry, -1 elsewhere
    kq = np.ones(needs.size)  # q + 1 of each group's tail
    for g in range(needs.size):
        lo, hi = gptr[g], gptr[g + 1]
        if needs[g] <= 0 or hi == lo:
            continue
        gi = gidx[lo:hi]
        H, T, k = _pattern(beta[gi], needs[g])
        unit[gi[H]] = True
        tail_of[gi[T]] = g
        kq[g] = k
    S = np.flatnonzero(unit | (tail_of >= 0))
    ns = S.size
    if ns == 0:
        return beta, mu, False
    GS = np.empty((ns, ns))
    DS = np.zeros((ns, ns))
    cS = np.empty(ns)
    for i in range(ns):
        u = S[i]
        cS[i] = c[u]
        if unit[u]:
            DS[i, i] = 1.0
        for j in range(ns):
            v = S[j]
            GS[i, j] = G[u, v]
            if tail_of[u] >= 0 and tail_of[u] == tail_of[v]:
                DS[i, j] += np.sign(beta[u]) * np.sign(beta[v]) / kq[tail_of[u]]
    bS, ok = _solve_or_fail(GS + (lam + mu) * DS, cS)
    if not ok:
        return beta, mu, False
    Q = max(np.dot(bS, DS @ bS), 0.0)  # Q >= 0; rounding of a near-singular solve can dip below
    if np.isfinite(r):
        have_lo = False
        have_hi = False
        lo_mu = lo_g = hi_mu = hi_g = 0.0
        for _ in range(12):
            gg = np.sqrt(Q) - r
            if abs(gg) <= 1e-6 * r or (gg < 0 and mu == 0.0):
                break
            if gg > 0:
                have_lo, lo_mu, lo_g = True, mu, gg
            else:
                have_hi, hi_mu, hi_g = True, mu, gg
            if have_lo and have_hi:
                mu = lo_mu + (hi_mu - lo_mu) * lo_g / (lo_g - hi_g)
            elif not have_hi:
                mu = 2.0 * mu + 0.5 * lam
            else:
                mu = 0.5 * mu
            b2, ok = _solve_or_fail(GS + (lam + mu) * DS, cS)
            if not ok:
                return beta, mu, False
            Q = max(np.dot(b2, DS @ b2), 0.0)
            bS = b2
    out = np.zeros(w)
    for i in range(ns):
        out[S[i]] = bS[i]
    return out, mu, True


@njit(**_JIT)
def _newton(G, c, yy, lam, r, mu, fpos, gptr, gidx, needs, beta, tol, steps):
    """:func:`dpbench.core.oracle.ksupport._newton`: best (beta, mu, relative gap) of the active-set steps."""
    best_b, best_mu, best_g = beta, mu, np.inf
    b = beta
    for _ in range(steps):
        bp, mu, ok = _polish(G, c, lam, r, mu, fpos, gptr, gidx, needs, b)
        if not ok or not np.all(np.isfinite(bp)):
            break
        g = w_gap(G, c, yy, lam + mu, fpos, gptr, gidx, needs, bp)
        if g < best_g:
            best_b, best_mu, best_g = bp, mu, g
        if g <= tol:
            break
        nb = bp.copy()
        changed = False
        for i in range(bp.size):
            if np.sign(bp[i]) * np.sign(b[i]) < 0:  # sign flipped: leaves the pattern
                nb[i] = 0.0
                changed = True
        a = c - G @ bp
        a2 = a * a
        scale = np.abs(bp).max() if np.any(bp != 0) else 1.0
        for g_ in range(needs.size):
            need = needs[g_]
            lo, hi = gptr[g_], gptr[g_ + 1]
            L = hi - lo
            if need <= 0 or L == 0:
                continue
            gi = gidx[lo:hi]
            thr = 0.0
            if L > need:
                thr = np.sort(a2[gi])[L - need]
            for i in gi:
                if bp[i] == 0 and a2[i] > thr * (1.0 + 1e-9):  # KKT violator enters
                    nb[i] = 1e-6 * scale * np.sign(a[i])
                    changed = True
        if not changed:
            break
        b = nb
    return best_b, best_mu, best_g


@njit(**_JIT)
def solve_working_set(G, c, yy, lam, r, mu, beta, fpos, gptr, gidx, needs, iters, chunk, tol, steps):
    """The working-set solve of :func:`~dpbench.core.oracle.ksupport.ksupport_alpha` (its ``while`` loop).

    Polish (:func:`_newton`, ``steps`` active-set steps) from beta, then while the relative
    gap exceeds ``tol`` and fewer than ``iters`` FISTA steps were taken: ``chunk`` FISTA steps
    (Lipschitz constant ``2 lambda_max(G)``, computed the first time FISTA runs) and another
    polish. Counts only: deterministic.

    Parameters
    ----------
    G : ndarray (w, w) float64, C-contiguous
        ``X_W^T X_W``.
    c : ndarray (w,) float64
        ``X_W^T y``.
    yy, lam, r, mu : float
        ``||y||^2``, ridge penalty (> 0), l2 bound (inf allowed), start of its multiplier.
    beta : ndarray (w,) float64
        Start point.
    fpos, gptr, gidx, needs : int64 arrays
        Fixed positions and the groups in CSR form (module docstring).
    iters, chunk, steps : int
    tol : float

    Returns
    -------
    beta : ndarray (w,), mu : float, gap : float
    """
    Lc = -1.0
    done = 0
    gap = w_gap(G, c, yy, lam + mu, fpos, gptr, gidx, needs, beta) if np.any(beta != 0) else np.inf
    while True:
        if np.any(beta != 0):
            bn, mn, gn = _newton(G, c, yy, lam, r, mu, fpos, gptr, gidx, needs, beta, tol, steps)
            if gn < gap:
                beta, mu, gap = bn, mn, gn
        if gap <= tol or done >= iters:
            break
        if Lc < 0:
            Lc = max(2.0 * lambda_max_upper(G) if G.shape[0] else 1.0, 1e-12)
        step = min(chunk, iters - done)
        beta = _fista(G, c, lam + mu, fpos, gptr, gidx, needs, beta, Lc, step)
        done += step
        gap = w_gap(G, c, yy, lam + mu, fpos, gptr, gidx, needs, beta)
    return beta, mu, gap


# ----------------------------------------------------------------------------- dual bounds
@njit(**_JIT)
def psi(T, lam, r):
    """:func:`dpbench.core.oracle.relaxation.psi` for one T."""
    if lam > 0:
        inner = T * T / lam if T > 0 else 0.0
    else:
        inner = np.inf if T > 0 else 0.0
    if np.isfinite(r):
        return inner if T <= lam * r else 2.0 * r * T - lam * r * r
    return inner


@njit(**_JIT)
def best_scale(b, q, T, lam, r):
    """:func:`dpbench.core.oracle.relaxation._best_scale` for one (b, q, T): (value, argmax t)."""
    best = -np.inf
    arg = 0.0
    for ci in range(4):
        if ci == 0:
            t = 1.0
        elif ci == 1:
            if not lam > 0:
                continue
            t = b / (q + T * T / lam)
        elif ci == 2:
            if not np.isfinite(r):
                continue
            t = (b - r * T) / q
        else:
            if not np.isfinite(r):
                continue
            t = lam * r / T if T > 0 else 0.0
        if not (np.isfinite(t) and t > 0):
            t = 0.0
        val = 2.0 * t * b - t * t * q - psi(t * T, lam, r)
        if np.isnan(val):
            val = -np.inf
        if val > best:
            best, arg = val, t
    return best, arg


@njit(**_JIT)
def bound_at(T2, ay, aa, lam, r):
    """:func:`dpbench.core.oracle.relaxation._bound_at` (scaled) for one ``T^2``."""
    T = np.sqrt(max(T2, 0.0))
    val, _t = best_scale(ay, aa, T, lam, r)
    mag = abs(2.0 * ay) + aa + psi(T, lam, r)
    out = val - ROUND_MARGIN * (mag if np.isfinite(mag) else 0.0)
    return max(out, 0.0)


@njit(**_JIT)
def _top(v, need):
    """Sum of the ``need`` largest entries of v and the need-th largest (``need <= v.size``);
    (0, inf) for ``need <= 0`` (:func:`dpbench.core.oracle.relaxation._top`)."""
    if need <= 0:
        return 0.0, np.inf
    L = v.size
    # a selection, then a sort of the top part only (a full sort was 0.9 ms at p = 10 000, most
    # of a node's bounds): the top entries summed in increasing order, as the sorted array's tail
    top = np.sort(np.partition(v, L - need)[L - need:]) if need < L else np.sort(v)
    return top.sum(), top[0]


@njit(**_JIT)
def dual_bounds_1(a, ay, aa, lam, r, fixed, gptr, gidx, needs, per_feature, per_below=np.inf):
    """:func:`dpbench.core.oracle.relaxation.dual_bounds` (scaled) for one dual point.

    Parameters
    ----------
    a : ndarray (p,) float64
        ``X^T alpha``.
    ay, aa : float
        ``alpha^T y``, ``||alpha||^2``.
    fixed : int64 array
        Fixed-in features.
    gptr, gidx, needs : int64 arrays
        The free features of each group (feature indices, CSR) and how many more it takes.
    per_feature : bool
    per_below : float
        Per-feature bounds only when ``bound < per_below``, else (a node its caller closes) each
        fixed and group feature gets ``bound``: valid, as each bounds some of the node's supports.

    Returns
    -------
    bound : float
    per : ndarray (p,) (inf where j cannot be added; fixed features get ``bound``); (0,) when
        not ``per_feature``.
    T2 : float
        ``T(a)^2`` (inf when no support is feasible).
    """
    p = a.size
    T2 = 0.0
    for i in fixed:
        T2 += a[i] * a[i]
    ng = needs.size
    tsum = np.zeros(ng)
    vneed = np.full(ng, np.inf)
    for g in range(ng):
        L = gptr[g + 1] - gptr[g]
        if needs[g] < 0 or needs[g] > L:
            return np.inf, np.full(p if per_feature else 0, np.inf), np.inf
        v = a[gidx[gptr[g]:gptr[g + 1]]] ** 2
        tsum[g], vneed[g] = _top(v, needs[g])
    for g in range(ng):
        T2 = T2 + tsum[g]
    bound = bound_at(T2, ay, aa, lam, r)
    if not per_feature:
        return bound, np.zeros(0), T2
    per = np.full(p, np.inf)
    for i in fixed:
        per[i] = bound
    for g in range(ng):
        need = needs[g]
        lo, hi = gptr[g], gptr[g + 1]
        if need < 1 or hi == lo:
            continue
        if bound >= per_below:
            per[gidx[lo:hi]] = bound
            continue
        v = a[gidx[lo:hi]] ** 2
        t1 = _top(v, need - 1)[0] if need > 1 else 0.0
        # best need-subset containing j: (need - 1) largest without j plus a_j^2
        base = T2 - tsum[g]
        for i in range(hi - lo):
            per[gidx[lo + i]] = bound_at(base + (t1 + min(v[i], vneed[g])), ay, aa, lam, r)
    return bound, per, T2
