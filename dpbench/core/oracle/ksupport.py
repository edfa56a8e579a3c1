"""A cheap dual point of the k-support relaxation: accelerated proximal gradient on an active set.

The node relaxation of :mod:`dpbench.core.oracle.relaxation` (module docstring there) is

    min_beta ||y - X beta||^2 + lam Q(beta)   s.t.  Q(beta) <= r^2,
    Q(beta) = sum_{i in F} beta_i^2 + sum_groups Omega_need(beta_g)^2,

with ``Omega_k(b)^2 = min {sum_i b_i^2 / z_i : z in [0, 1]^L, sum z = k}`` the squared k-support
norm (Argyriou, Foygel & Srebro 2012, "Sparse prediction with the k-support norm", eq. (3)
and Prop. 2.1; the perspective form is their variational characterisation). Its dual
(weak duality, :mod:`~dpbench.core.oracle.relaxation`) gives a certified bound from **any**
residual ``alpha = y - X beta``; this module only chooses beta, so its accuracy decides
the strength of a bound, never its validity.

Method (after L0BnB's active-set first-order node solves, Hazimeh, Mazumder & Saab 2022,
"Sparse regression at scale: branch-and-bound rooted in first-order optimization", section 3,
and the exact k-support prox of McDonald, Pontil & Stamos 2016, "New perspectives on
k-support and cluster norms", section 4):

* restrict beta to a working set W (the fixed features, the parent's working set, the
  incumbent and the best single-feature gains); with ``G = X_W^T X_W`` and ``c = X_W^T y``
  every iteration is O(|W|^2) and never touches X;
* an active-set Newton step (:func:`_newton`, :func:`_polish`): for the pattern of beta (head
  entries with their own weight, a tail sharing one weight, zeros) Q is a quadratic, so the
  W-problem restricted to it is one linear system; the pattern is corrected as in the
  feature-sign search of Lee, Battle, Raina & Ng 2007. From the parent's solution this
  usually solves the W-problem to rounding at once;
* when it does not, FISTA (Beck & Teboulle 2009) with the gradient restart of O'Donoghue &
  Candes 2015 on ``beta -> ||y - X_W beta||^2`` and the prox of ``(lam + mu) Q`` in closed
  form (:func:`prox_sq_ksupport`: one sort per group) moves the pattern, ``chunk`` steps at a
  time, until the W-problem's relative duality gap is below ``tol`` or ``iters`` steps were
  taken (counts: deterministic);
* the l2 bound r enters through its multiplier mu (``Q(beta) <= r^2`` active: the problem is
  the unconstrained one at ``lam + mu``), refitted in each polish by secant steps on
  ``sqrt(Q(beta(mu))) = r``;
* grow W by the features outside it whose ``(x_j^T alpha)^2`` would enter the top-``need``
  of their group (KKT violations: "gradient screening", only these can enter the relaxed
  solution) and repeat, at most ``rounds`` times.

Compared with the projected gradient on z of :func:`~dpbench.core.oracle.relaxation.relaxation_alpha`
(one Cholesky factorisation per trial step, about 100 per node, stopped well before the
relaxation's optimum), a node takes a few linear solves and reaches the optimum of its
relaxation: ``benchmarks/bench_node_cost.py`` measures both on the same nodes.
"""

from __future__ import annotations

import numpy as np

from dpbench.core.oracle.working_set import (columns_of, entrants_compiled, entrants_numpy, lambda_max_upper_numpy,
                                            working_set_layout)

__all__ = ["group_csr", "ksupport_alpha", "prox_sq_ksupport", "sq_ksupport"]

#: Up to this many rows, a working set's Gram block is computed from its columns (n |W|^2 / 2
#: multiply-adds) rather than gathered from a cached p x p Gram matrix (|W|^2 cache misses).
SYRK_MAX_N = 512


def _weights(av, need, tau):
    """The z of :func:`prox_sq_ksupport` for magnitudes ``av`` (L,) >= 0: ``clip(av s - 2 tau, 0, 1)``
    with s solving ``sum z = need``; z = 1 on the nonzero entries when they are at most need."""
    L = av.size
    nz = av > 0
    if need >= int(nz.sum()):
        return nz.astype(np.float64)
    t2 = 2.0 * tau
    a = av[nz]
    # f(s) = sum clip(a s - 2 tau, 0, 1) is continuous, nondecreasing and piecewise linear with
    # kinks at 2 tau / a_i (entry i starts) and (1 + 2 tau) / a_i (entry i saturates).
    lo, hi = t2 / a, (1.0 + t2) / a
    b = np.concatenate([lo, hi])
    order = np.argsort(b, kind="stable")
    b = b[order]
    dslope = np.concatenate([a, -a])[order]
    slope = np.cumsum(dslope)[:-1]  # slope on (b_k, b_{k+1})
    f = np.concatenate([[0.0], np.cumsum(slope * np.diff(b))])
    k = int(np.searchsorted(f, need, side="left"))  # first kink with f >= need
    k = min(max(k, 1), b.size - 1)
    sl = slope[k - 1]
    s = b[k - 1] + (need - f[k - 1]) / sl if sl > 0 else b[k]
    s = min(max(s, b[k - 1]), b[k])  # rounding can leave a flat segment a tiny slope
    z = np.zeros(L)
    z[nz] = np.clip(a * s - t2, 0.0, 1.0)
    return z


def prox_sq_ksupport(v, need, tau):
    """Prox of ``tau * Omega_need(.)^2`` (squared k-support norm, k = need) at v, and its weights.

    ``argmin_b 1/2 ||b - v||^2 + tau min_{z in [0,1]^L, sum z = need} sum_i b_i^2 / z_i``.
    For fixed z the minimiser is ``b_i = v_i z_i / (z_i + 2 tau)`` with value
    ``tau sum_i v_i^2 / (z_i + 2 tau)``; minimising that over z (convex, separable, one
    linear constraint) gives ``z_i = clip(|v_i| s - 2 tau, 0, 1)`` with the scalar s fixed by
    ``sum z = need`` (the KKT conditions; McDonald, Pontil & Stamos 2016, section 4, derive
    the same water-filling). s is found exactly on the sorted kinks (O(L log L)).

    Parameters
    ----------
    v : ndarray (L,) float64
    need : int >= 0
        k of the norm (``need = 0``: every b_i = 0; ``need >= L``: ridge ``v / (1 + 2 tau)``).
    tau : float > 0

    Returns
    -------
    b : ndarray (L,)
        The prox.
    z : ndarray (L,)
        The minimising weights (``sum_i b_i^2 / z_i`` over ``z_i > 0`` is ``Omega(b)^2``).
    """
    v = np.asarray(v, dtype=np.float64)
    if need <= 0:
        return np.zeros_like(v), np.zeros_like(v)
    z = _weights(np.abs(v), need, tau)
    return v * z / (z + 2.0 * tau), z


def sq_ksupport(b, need):
    """``Omega_need(b)^2``, the squared k-support norm (Argyriou, Foygel & Srebro 2012, Prop. 2.1).

    With ``|b|`` sorted decreasingly and the unique q in {0..need-1} such that
    ``|b|_(need-q-1) > T_q / (q + 1) >= |b|_(need-q)`` (``T_q`` the sum of the entries from
    position need - q - 1 on, 0-based, ``|b|_(-1) = inf``):
    ``Omega^2 = sum_{i < need-q-1} |b|_(i)^2 + T_q^2 / (q + 1)``.

    Parameters
    ----------
    b : ndarray (L,) float64
    need : int >= 1

    Returns
    -------
    float (``inf`` if need <= 0 and b != 0; ``sum b^2`` if need >= L).
    """
    a = np.sort(np.abs(np.asarray(b, dtype=np.float64)))[::-1]
    if need <= 0:
        return 0.0 if not a.any() else np.inf
    if need >= a.size:
        return float(a @ a)
    tail = np.cumsum(a[::-1])[::-1]  # tail[i] = sum_{j >= i} a_j
    for q in range(need):
        h = need - q - 1  # entries 0..h-1 keep their own weight
        T = tail[h]
        upper = a[h - 1] if h > 0 else np.inf
        if upper > T / (q + 1) >= a[h]:
            return float(a[:h] @ a[:h] + T * T / (q + 1))
    return float(tail[0] ** 2 / need)  # q = need - 1 (all of the tail shares one weight)


def _penalty_prox(v, fpos, gl, tau):
    """Prox of ``tau Q`` on the working set and ``Q`` at the result."""
    out = np.zeros_like(v)
    out[fpos] = v[fpos] / (1.0 + 2.0 * tau)
    Q = float(out[fpos] @ out[fpos])
    for gi, need in gl:
        if not gi.size:
            continue
        b, z = prox_sq_ksupport(v[gi], need, tau)
        out[gi] = b
        on = z > 0
        Q += float(np.sum(b[on] ** 2 / z[on]))
    return out, Q


def _top_sq(aW, fpos, gl):
    """``T(a)^2`` on the working set: fixed entries plus the top-need of each group."""
    a2 = aW * aW
    T2 = float(a2[fpos].sum())
    for gi, need in gl:
        if need <= 0:
            continue
        if need >= gi.size:
            T2 += float(a2[gi].sum())
        else:
            T2 += float(np.partition(a2[gi], gi.size - need)[gi.size - need:].sum())
    return T2


def _fista(G, c, lam_eff, fpos, gl, beta, L, iters):
    """``iters`` FISTA steps with gradient restart on ``||y - X_W b||^2 + lam_eff Q(b)`` from beta;
    returns the last iterate. (The caller tests convergence with :func:`_w_gap`.)"""
    tau = lam_eff / L
    x = beta.copy()
    yv = x.copy()
    t = 1.0
    for _ in range(iters):
        grad = 2.0 * (G @ yv - c)
        xn, _Q = _penalty_prox(yv - grad / L, fpos, gl, tau)
        tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        if float((yv - xn) @ (xn - x)) > 0.0:  # gradient restart: momentum points uphill
            tn = 1.0
            yv = xn.copy()
        else:
            yv = xn + ((t - 1.0) / tn) * (xn - x)
        x, t = xn, tn
    return x


def _pattern(b, need):
    """Head and tail of ``Omega_need(b)^2`` (:func:`sq_ksupport`): (head positions, tail positions with
    b != 0, q + 1), so that ``Omega^2 = sum_head b^2 + (sum_tail |b|)^2 / (q + 1)``."""
    order = np.argsort(-np.abs(b), kind="stable")
    a = np.abs(b)[order]
    if need >= a.size:
        return order, order[:0], 1
    tail = np.cumsum(a[::-1])[::-1]
    for q in range(need):
        h = need - q - 1
        upper = a[h - 1] if h > 0 else np.inf
        if upper > tail[h] / (q + 1) >= a[h]:
            break
    rest = order[h:]
    return order[:h], rest[b[rest] != 0], q + 1


def _polish(G, c, lam, r, mu, fpos, gl, beta):
    """The exact minimiser for the sparsity pattern of ``beta`` (an active-set Newton step).

    On the head H (the entries with their own weight, and F) and the nonzero tail T of each
    group (signs s_T), ``Q(b) = ||b_{F u H}||^2 + sum_groups (s_T^T b_T)^2 / (q + 1)`` is a
    quadratic, so the W-problem restricted to that pattern is the linear system
    ``(G + (lam + mu) D) b = c``; with a finite r, mu is refitted by secant steps on
    ``sqrt(Q) = r`` with one solve each. Exact when the pattern is the optimum's (then one
    solve replaces the tail of a first-order method); otherwise just another dual point.
    Returns beta (|W|,) and mu, or None when the system is singular.
    """
    D = np.zeros_like(G)
    on = np.zeros(beta.size, dtype=bool)
    D[fpos, fpos] = 1.0
    on[fpos] = True
    for gi, need in gl:
        if need <= 0 or not gi.size:
            continue
        H, T, k = _pattern(beta[gi], need)
        H, T = gi[H], gi[T]
        D[H, H] = 1.0
        sg = np.sign(beta[T])
        D[np.ix_(T, T)] += np.outer(sg, sg) / k
        on[H] = on[T] = True
    S = np.flatnonzero(on)
    if not S.size:
        return None
    GS, DS, cS = G[np.ix_(S, S)], D[np.ix_(S, S)], c[S]

    def solve(m):
        try:
            bS = np.linalg.solve(GS + (lam + m) * DS, cS)
        except np.linalg.LinAlgError:
            return None, np.inf
        return bS, max(float(bS @ DS @ bS), 0.0)  # Q >= 0; rounding of a near-singular solve can dip below

    bS, Q = solve(mu)
    if bS is None:
        return None
    if np.isfinite(r):
        lo = hi = None
        for _ in range(12):
            g = np.sqrt(Q) - r
            if abs(g) <= 1e-6 * r or (g < 0 and mu == 0.0):
                break
            if g > 0:
                lo = (mu, g)
            else:
                hi = (mu, g)
            if lo is not None and hi is not None:
                mu = lo[0] + (hi[0] - lo[0]) * lo[1] / (lo[1] - hi[1])
            elif hi is None:
                mu = 2.0 * mu + 0.5 * lam
            else:
                mu = 0.5 * mu
            b2, Q = solve(mu)
            if b2 is None:
                return None
            bS = b2
    out = np.zeros_like(beta)
    out[S] = bS
    return out, mu


def _newton(G, c, yy, lam, r, mu, fpos, gl, beta, tol, steps=8):
    """Active-set Newton steps on the working-set problem: polish (:func:`_polish`), then fix the
    pattern like the feature-sign search of Lee, Battle, Raina & Ng 2007 (an entry whose sign
    flipped leaves, a zero entry whose ``(x_j^T alpha)^2`` exceeds its group's need-th largest
    enters with the sign of ``x_j^T alpha``) and polish again. Returns the best
    (beta, mu, relative gap) seen; gap inf when nothing could be solved."""
    best = (beta, mu, np.inf)
    b = beta
    for _ in range(steps):
        pol = _polish(G, c, lam, r, mu, fpos, gl, b)
        if pol is None or not np.all(np.isfinite(pol[0])):
            break
        bp, mu = pol
        g = _w_gap(G, c, yy, lam + mu, fpos, gl, bp)
        if g < best[2]:
            best = (bp, mu, g)
        if g <= tol:
            break
        nb = bp.copy()
        flipped = (np.sign(bp) * np.sign(b) < 0)
        nb[flipped] = 0.0
        a = c - G @ bp
        a2 = a * a
        scale = float(np.abs(bp).max()) if bp.any() else 1.0
        changed = bool(flipped.any())
        for gi, need in gl:
            if need <= 0 or not gi.size:
                continue
            thr = np.partition(a2[gi], gi.size - need)[gi.size - need] if gi.size > need else 0.0
            enter = gi[(bp[gi] == 0) & (a2[gi] > thr * (1.0 + 1e-9))]
            if enter.size:
                nb[enter] = 1e-6 * scale * np.sign(a[enter])
                changed = True
        if not changed:
            break
        b = nb
    return best


def _w_gap(G, c, yy, lam_eff, fpos, gl, b):
    """Relative duality gap of the working-set problem at b (penalty ``lam_eff Q``): primal
    ``||alpha||^2 + lam_eff Q(b)`` against ``2 alpha^T y - ||alpha||^2 - T_W(a)^2 / lam_eff``."""
    Gb = G @ b
    cb = float(c @ b)
    aa = yy - 2.0 * cb + float(b @ Gb)
    Q = float(b[fpos] @ b[fpos]) + sum(sq_ksupport(b[gi], need) for gi, need in gl if gi.size and need > 0)
    primal = aa + lam_eff * Q
    dual = 2.0 * (yy - cb) - aa - _top_sq(c - Gb, fpos, gl) / lam_eff
    return (primal - dual) / max(abs(primal), 1e-300)


def ksupport_alpha(score, fixed, groups, *, start=(), warm=None, width=20, rounds=6, iters=200, tol=1e-7, chunk=10,
                   grow_min=20, compiled=True, with_product=False, close_at=None, csr=None):
    """A dual point of the k-support relaxation by active-set FISTA (module docstring).

    Parameters
    ----------
    score : RidgeScore
        Shared score (lam > 0).
    fixed : int array
        Fixed-in features F.
    groups : list of (int array, int)
        Free features of each group and how many more a support takes (as in
        :func:`~dpbench.core.oracle.relaxation.dual_bounds`).
    start : int array
        Features to put in the working set from the start (e.g. the incumbent).
    warm : (int array, ndarray, float) or None
        A previous solution ``(W, beta_W, mu)`` (e.g. the parent node's): its features that are
        still allowed join the working set, beta starts from it and the multiplier of the l2
        bound from mu.
    width : int
        Initial working-set features per group beyond ``need`` (largest single-feature gains).
    rounds, iters : int
        Working-set growths, and FISTA iterations per working set (counts: deterministic).
    tol : float
        Relative duality gap of the working-set problem at which a solve stops.
    chunk : int
        FISTA iterations between two polishing solves (:func:`_polish`).
    grow_min : int
        Least number of KKT violators added to the working set per round (at most all).
    compiled : bool
        Solve each working set with the compiled kernel
        (:func:`dpbench.core.oracle.kernels.solve_working_set`, the default) or with the numpy
        functions of this module (the reference; same algorithm and counts, slower on small
        working sets).
    with_product : bool
        Also return, last, ``X^T alpha`` (p,) of the returned alpha when the last working-set
        round computed it (its KKT check), else None: the caller's bound then needs no second
        O(n p) product. With the compiled kernels it may be formed on the fixed and group
        features only, NaN elsewhere
        (:func:`~dpbench.core.oracle.working_set.product_on`).
    close_at : float or None
        The branch and bound's bar: stop after the first working-set round whose alpha already
        bounds the node at or above it (the bound (*) of
        :mod:`~dpbench.core.oracle.relaxation`, the caller's own formula), since the node is
        closed whatever the later rounds would give. Most relaxed nodes of a long search close
        (gravier's optimum: 80 % of those with three features fixed in; about 2 working-set
        rounds per relaxation instead of 3). No clock involved: the same nodes close on every
        machine.
    csr : tuple or None
        ``group_csr(groups)`` when the caller already has it (its final bounds use it too).

    Returns
    -------
    alphas : list of ndarray (n,) float64
        ``y - X_W beta`` of the polished solution (:func:`_polish`, first) and of the FISTA
        iterate; any alpha gives a valid bound, so accuracy only affects strength.
    warm : (int64 array, ndarray, float)
        ``(W, beta_W, mu)`` of the last solve, to warm-start a child node.
    a : ndarray (p,) or None, only with ``with_product``
    """
    lam, r = score.lam, score.r
    p = score.p
    fixed = np.asarray(fixed, dtype=np.int64)
    allowed = np.zeros(p, dtype=bool)
    allowed[fixed] = True
    is_fixed = allowed.copy()
    inW = allowed.copy()
    if warm is not None:
        width = min(width, 2)  # the parent's working set holds the likely entrants; KKT growth adds the rest
    groups = [(np.asarray(idx, dtype=np.int64), int(need)) for idx, need in groups]
    for idx, need in groups:
        allowed[idx] = True
        if need > 0 and idx.size:
            g = score.c[idx] ** 2 / (score.col_sq[idx] + lam)
            k = min(idx.size, need + width)
            inW[idx[np.argpartition(-g, k - 1)[:k]] if k < idx.size else idx] = True
    inW[np.asarray(start, dtype=np.int64)] = True
    # beta of every feature met so far (0 elsewhere): the working set only grows, so a round reads
    # the previous round's solution (or the warm start) at its W
    beta_full = np.zeros(p)
    mu = 0.0
    if warm is not None:
        Wp, bp, mu = warm
        Wp = np.asarray(Wp, dtype=np.int64)
        inW[Wp] = True
        beta_full[Wp] = bp
    inW &= allowed
    gpos = np.full(p, -1, dtype=np.int64)
    for gi_, (idx, _) in enumerate(groups):
        gpos[idx] = gi_
    needs = np.array([need for _, need in groups], dtype=np.int64)
    if csr is None:  # once: the KKT growth and the early-stop check run every round
        csr = group_csr(groups)
    # where the rounds read X^T alpha: W lies in them (inW &= allowed)
    features = np.flatnonzero(allowed) if compiled else None
    alphas = [score.y.copy()]
    W = np.flatnonzero(inW)
    beta = np.zeros(W.size)
    a_sign = None
    if compiled:
        from dpbench.core.oracle.kernels import solve_working_set
    for _ in range(rounds):
        if compiled:
            W, fpos, gptr, gidx = working_set_layout(inW, is_fixed, gpos, len(groups))
        else:
            W = np.flatnonzero(inW)
            fpos = np.flatnonzero(is_fixed[W])
        XW = columns_of(score, W)
        # X_W^T X_W as one symmetric rank-n product (numpy's syrk for a matrix times its own
        # transpose): ~3x cheaper than score.gram's two column gathers and general product, and at
        # n <= SYRK_MAX_N cheaper than gathering |W|^2 scattered entries of a cached p x p Gram
        # (1 ms at p = 2905: one cache miss each)
        G = XW.T @ XW if score.gram_mode == "columns" or score.n <= SYRK_MAX_N else score.gram(W, W)
        c = score.c[W]
        beta = beta_full[W]
        if compiled:
            beta, mu, _gap = solve_working_set(np.ascontiguousarray(G), np.ascontiguousarray(c), score.yy, lam, r,
                                               float(mu), np.ascontiguousarray(beta), fpos, gptr, gidx, needs,
                                               int(iters), int(chunk), float(tol), 8)
        else:
            beta, mu = _solve_w_numpy(G, c, score.yy, lam, r, mu, fpos, gpos[W], groups, beta, iters, chunk, tol)
        beta_full[W] = beta
        alpha = score.y - XW @ beta
        alphas = [alpha]
        a_sign = None
        if compiled:
            ent = entrants_compiled(score, alpha, inW, csr, grow_min, W.size, features, (W, beta))
            if ent is not None:
                ent, a_sign = ent
        else:
            ent, a_sign = entrants_numpy(score, alpha, inW, groups, grow_min, W.size)
        if ent is None or not ent.size or (close_at is not None and _bound_of(score, alpha, a_sign, fixed, csr) >= close_at):
            break
        inW[ent] = True
        # the entrants start in the pattern with the sign of x_j^T alpha (see _newton)
        tiny = 1e-6 * (float(np.abs(beta).max()) if beta.size else 1.0)
        beta_full[ent] = np.where(a_sign[ent] > 0, tiny, -tiny)
    if with_product:
        return alphas, (W, beta, mu), a_sign
    return alphas, (W, beta, mu)


def group_csr(groups):
    """The groups of a call as the compiled bounds take them
    (:func:`dpbench.core.oracle.kernels.dual_bounds_1`).

    Parameters
    ----------
    groups : list of (int array, int)
        Free features of each group and how many more a support takes.

    Returns
    -------
    gptr : int64 ndarray (len(groups) + 1,)
        Group g's features are ``gidx[gptr[g]:gptr[g + 1]]``.
    gidx : int64 ndarray (total free features,)
        With one group, that group's own array (not a copy): the kernels only read it.
    needs : int64 ndarray (len(groups),)
    """
    idx = [np.asarray(i, dtype=np.int64) for i, _ in groups]
    if len(idx) == 1:  # a node's one group, once per relaxation: without the general case's list arithmetic
        return np.array([0, idx[0].size], dtype=np.int64), idx[0], np.array([groups[0][1]], dtype=np.int64)
    gptr = np.concatenate([[0], np.cumsum([i.size for i in idx])]).astype(np.int64)
    gidx = np.concatenate(idx).astype(np.int64) if idx else np.zeros(0, dtype=np.int64)
    return gptr, gidx, np.array([need for _, need in groups], dtype=np.int64)


def _bound_of(score, alpha, a, fixed, csr):
    """The node bound (*) of :mod:`~dpbench.core.oracle.relaxation` at alpha, ``a = X^T alpha``
    (p,), ``csr = group_csr(groups)``: the compiled formula the caller applies to the returned
    alpha, without per-feature bounds."""
    from dpbench.core.oracle.kernels import dual_bounds_1

    return float(dual_bounds_1(a, float(score.y @ alpha), float(alpha @ alpha), float(score.lam), float(score.r),
                               fixed, *csr, False)[0])


def _solve_w_numpy(G, c, yy, lam, r, mu, fpos, gw, groups, beta, iters, chunk, tol):
    """The working-set solve of :func:`ksupport_alpha` with the numpy functions of this module (the
    reference of :func:`dpbench.core.oracle.kernels.solve_working_set`): returns (beta, mu)."""
    gl = [(np.flatnonzero(gw == g), need) for g, (_, need) in enumerate(groups)]
    L = None  # Lipschitz constant of the gradient 2 (G b - c), computed when FISTA first runs
    done = 0
    gap = _w_gap(G, c, yy, lam + mu, fpos, gl, beta) if beta.any() else np.inf
    while True:
        # The polish solves the pattern (head, tail, zeros) of the k-support terms exactly and
        # refits mu; FISTA steps in between change the pattern (features enter or leave). From
        # a parent's solution the first polish often solves the W-problem to rounding.
        if beta.any():
            bn, mn, gn = _newton(G, c, yy, lam, r, mu, fpos, gl, beta, tol)
            if gn < gap:
                beta, mu, gap = bn, mn, gn
        if gap <= tol or done >= iters:
            break
        if L is None:  # twice an upper bound on the largest eigenvalue of G
            L = max(2.0 * lambda_max_upper_numpy(G) if G.shape[0] else 1.0, 1e-12)
        step = min(chunk, iters - done)
        beta = _fista(G, c, lam + mu, fpos, gl, beta, L, step)
        done += step
        gap = _w_gap(G, c, yy, lam + mu, fpos, gl, beta)
    return beta, mu
