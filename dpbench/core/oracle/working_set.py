"""The per-round pieces of a working-set relaxation: FISTA's Lipschitz constant and the KKT growth.

A node relaxation (:func:`~dpbench.core.oracle.ksupport.ksupport_alpha`) solves the k-support
relaxation on a working set W of features and grows W by the features that violate its
optimality conditions, round after round. Each round needs

* an upper bound on ``lambda_max(X_W^T X_W)`` for the FISTA steps of the solve
  (:func:`lambda_max_upper`: power iteration, then a Cholesky factorization that proves a 5 %
  margin; the exact eigenvalue only when that fails);
* the working set in the solve's layout (:func:`working_set_layout`);
* the features that enter next (:func:`kkt_outside`, :func:`kkt_entrants`), from the product
  ``X^T alpha`` on the node's own features only, or from the cached Gram's rows of the working
  set's nonzero coefficients when that reads less (:func:`product_on`).

Each is compiled (numba) with a numpy reference (:func:`lambda_max_upper_numpy`,
:func:`entrants_numpy`); ``tests/oracle/test_kernels.py`` compares them. None of them affects a
bound's validity: every bound is the dual formula at whatever point the rounds reach.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_JIT = dict(cache=True, nogil=True, error_model="numpy")

#: :func:`product_on` forms ``X^T alpha`` on a node's features only when they are at most this share
#: of p: a row of X^T dotted in the compiled loop costs about twice a column of BLAS's one product
#: over all of X (toeplitz n = 200, p = 10 000: 63 vs 27 ns per feature, one thread).
PRODUCT_SHARE = 1 / 3
#: ... and when X^T, the copy of the data those rows come from, holds at most this many floats
#: (256 MB): at p = 10^6 a node uses the product over all of X instead of doubling the memory.
PRODUCT_XT_MAX_FLOATS = 2**25

#: Power iterations and margin of :func:`lambda_max_upper` (compile-time constants of the kernel).
POWER_ITERS = 20
POWER_MARGIN = 1.05


def lambda_max_upper_numpy(G):
    """An upper bound on the largest eigenvalue of a symmetric positive semidefinite matrix.

    FISTA's step is the inverse of a Lipschitz constant of the gradient ``2 (G b - c)``: any
    value at least ``2 lambda_max(G)`` converges. ``POWER_ITERS`` power iterations from the
    all-ones direction give ``theta <= lambda_max``; ``POWER_MARGIN * theta`` is returned when the
    Cholesky factorization of ``POWER_MARGIN * theta * I - G`` succeeds (that matrix is then
    positive definite, so the value exceeds every eigenvalue), else the exact largest eigenvalue.
    Cost O(w^3 / 3) for the factorization instead of a full eigendecomposition (gravier's working
    sets, w about 100: 0.05 ms instead of 0.28 ms).

    Parameters
    ----------
    G : ndarray (w, w) float64
        Symmetric positive semidefinite (a working set's ``X_W^T X_W``).

    Returns
    -------
    float
        At least ``lambda_max(G)``; at most ``POWER_MARGIN`` times it unless the fallback ran
        (then equal to it).
    """
    w = G.shape[0]
    v = np.full(w, 1.0 / np.sqrt(w))
    theta = 0.0
    for _ in range(POWER_ITERS):
        u = G @ v
        theta = float(v @ u)
        nu = float(np.sqrt(u @ u))
        if nu == 0.0:
            break
        v = u / nu
    up = POWER_MARGIN * theta
    if up > 0.0:
        try:
            np.linalg.cholesky(up * np.eye(w) - G)
            return up
        except np.linalg.LinAlgError:
            pass
    return float(np.linalg.eigvalsh(G)[-1])


@njit(**_JIT)
def lambda_max_upper(G):
    """:func:`lambda_max_upper_numpy`, compiled (the Lipschitz constant of
    :func:`~dpbench.core.oracle.kernels.solve_working_set`)."""
    w = G.shape[0]
    v = np.full(w, 1.0 / np.sqrt(w))
    theta = 0.0
    for _ in range(POWER_ITERS):
        u = G @ v
        theta = v @ u
        nu = np.sqrt(u @ u)
        if nu == 0.0:
            break
        v = u / nu
    up = POWER_MARGIN * theta
    if up > 0.0:
        M = -G
        for i in range(w):
            M[i, i] += up
        try:
            np.linalg.cholesky(M)
            return up
        except Exception:  # not positive definite: the margin is not proven
            pass
    return np.linalg.eigvalsh(G)[-1]


@njit(**_JIT)
def working_set_layout(inW, is_fixed, gpos, ngroups):
    """One round's working set in the solve's layout (a round of
    :func:`~dpbench.core.oracle.ksupport.ksupport_alpha`).

    Parameters
    ----------
    inW, is_fixed : ndarray (p,) bool
        Features in the working set; fixed-in features.
    gpos : ndarray (p,) int64
        Group of each feature (-1: none).
    ngroups : int

    Returns
    -------
    W : int64 (w,)
        The working set, increasing.
    fpos, gptr, gidx : int64
        Positions in W of the fixed features, and of each group's members in CSR form
        (increasing within a group), as :func:`solve_working_set` takes them.
    """
    W = np.flatnonzero(inW)
    w = W.size
    counts = np.zeros(ngroups + 1, dtype=np.int64)
    nfix = 0
    for i in range(w):
        g = gpos[W[i]]
        if g >= 0:
            counts[g + 1] += 1
        if is_fixed[W[i]]:
            nfix += 1
    gptr = np.cumsum(counts)
    gidx = np.empty(gptr[-1], dtype=np.int64)
    fill = gptr[:-1].copy()
    fpos = np.empty(nfix, dtype=np.int64)
    k = 0
    for i in range(w):
        g = gpos[W[i]]
        if g >= 0:
            gidx[fill[g]] = i
            fill[g] += 1
        if is_fixed[W[i]]:
            fpos[k] = i
            k += 1
    return W, fpos, gptr, gidx


@njit(**_JIT)
def kkt_outside(inW, gptr, gidx, needs):
    """Whether some group that still needs features has a member outside the working set (the
    KKT check of a round needs ``X^T alpha`` only then)."""
    for g in range(needs.size):
        if needs[g] < 1:
            continue
        for t in range(gptr[g], gptr[g + 1]):
            if not inW[gidx[t]]:
                return True
    return False


@njit(**_JIT)
def kkt_entrants(a, inW, gptr, gidx, needs, grow_min, wsize):
    """The features that enter the working set after a round (the KKT growth of
    :func:`~dpbench.core.oracle.ksupport.ksupport_alpha`).

    Per group g still needing ``needs[g] >= 1`` features: ``thr`` is the ``needs[g]``-th largest
    ``a_j^2`` over its members in the working set (0 when fewer); every member outside with
    ``a_j^2 > thr (1 + 1e-9)`` violates the relaxation's optimality conditions, and the
    ``max(grow_min, wsize // 2)`` largest violators enter (ties: increasing feature).

    Parameters
    ----------
    a : ndarray (p,) float64
        ``X^T alpha``.
    inW : ndarray (p,) bool
    gptr, gidx, needs : int64
        The groups over feature indices (:func:`~dpbench.core.oracle.ksupport.group_csr`).
    grow_min, wsize : int

    Returns
    -------
    ndarray (k,) int64
        The entrants, increasing (empty: the round's solution is optimal for the node).
    """
    grow = np.zeros(inW.size, dtype=np.bool_)
    for g in range(needs.size):
        need = needs[g]
        lo, hi = gptr[g], gptr[g + 1]
        n_in = 0
        for t in range(lo, hi):
            if inW[gidx[t]]:
                n_in += 1
        n_out = hi - lo - n_in
        if need < 1 or n_out == 0:
            continue
        a2in = np.empty(n_in)
        out = np.empty(n_out, dtype=np.int64)
        a2 = np.empty(n_out)
        i = 0
        o = 0
        for t in range(lo, hi):
            j = gidx[t]
            if inW[j]:
                a2in[i] = a[j] ** 2
                i += 1
            else:
                out[o] = j
                a2[o] = a[j] ** 2
                o += 1
        thr = np.partition(a2in, n_in - need)[n_in - need] if n_in >= need else 0.0
        viol = np.flatnonzero(a2 > thr * (1.0 + 1e-9))
        if viol.size:
            k = min(viol.size, max(grow_min, wsize // 2))
            order = np.argsort(-a2[viol], kind="mergesort")[:k]
            for q in order:
                grow[out[viol[q]]] = True
    return np.flatnonzero(grow)


@njit(**_JIT)
def rows_dot(XT, alpha, rows, out):
    """``out[j] = XT[j] @ alpha`` for j in ``rows``, in a fixed order of operations (eight running
    sums over the n entries, then their pairwise sum): the same bits on every machine and load.

    Parameters
    ----------
    XT : ndarray (p, n) float64, C-contiguous
        X^T (:meth:`~dpbench.core.score.RidgeScore.transposed`).
    alpha : ndarray (n,) float64
    rows : ndarray (k,) int64
    out : ndarray (p,) float64
        Written at ``rows`` only.
    """
    n = XT.shape[1]
    n8 = n - n % 8
    for t in range(rows.size):
        j = rows[t]
        s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
        for i in range(0, n8, 8):
            s0 += XT[j, i] * alpha[i]
            s1 += XT[j, i + 1] * alpha[i + 1]
            s2 += XT[j, i + 2] * alpha[i + 2]
            s3 += XT[j, i + 3] * alpha[i + 3]
            s4 += XT[j, i + 4] * alpha[i + 4]
            s5 += XT[j, i + 5] * alpha[i + 5]
            s6 += XT[j, i + 6] * alpha[i + 6]
            s7 += XT[j, i + 7] * alpha[i + 7]
        acc = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
        for i in range(n8, n):
            acc += XT[j, i] * alpha[i]
        out[j] = acc


@njit(**_JIT)
def gram_product(G, c, W, beta, out):
    """``out = c - G[W]^T beta``, that is ``X^T (y - X_W beta)`` from the rows W of the cached Gram.

    The rows of coefficients equal to 0 are skipped; every other row is one contiguous pass over
    p entries, subtracted in the order of W (the same bits on every load).

    Parameters
    ----------
    G : ndarray (p, p) float64
        ``X^T X`` (:meth:`~dpbench.core.score.RidgeScore.cached_gram`, exactly symmetric, so row w
        is column w).
    c : ndarray (p,) float64
        ``X^T y``.
    W : ndarray (w,) int64
    beta : ndarray (w,) float64
    out : ndarray (p,) float64
        Overwritten.
    """
    p = c.size
    for j in range(p):
        out[j] = c[j]
    for k in range(W.size):
        b = beta[k]
        if b != 0.0:
            row = G[W[k]]
            for j in range(p):
                out[j] -= b * row[j]


def product_on(score, alpha, features=None, coef=None):
    """``X^T alpha`` where a node reads it: on ``features`` (its fixed-in and candidate features).

    A node's bounds and KKT growth read the product only at its own features; deep in a search
    they are a small part of p (toeplitz n = 200, p = 10 000: a median of 1 200), and one product
    with all of X is most of a node's relaxation. So when ``features`` are at most
    :data:`PRODUCT_SHARE` of p and X^T is small enough to keep (:data:`PRODUCT_XT_MAX_FLOATS`),
    only their rows of X^T are dotted (:func:`rows_dot`); otherwise BLAS forms the whole product.

    When ``alpha = y - X_W beta`` comes with its coefficients ``coef = (W, beta)`` and the score
    caches ``X^T X``, the product is also ``X^T y - (X^T X)[:, W] beta``: one row of the Gram per
    nonzero coefficient (:func:`gram_product`). That path is taken when it reads fewer numbers,
    ``nnz(beta) p < n |features|``: gravier's working-set rounds have about 34 nonzero
    coefficients against n = 168 rows, 4 to 5 times less to read. Both are ``X^T alpha`` to
    rounding (over 37 030 of gravier's rounds they differ by 4.6e-15 relative at most), which the
    bounds' rounding margin (``relaxation.ROUND_MARGIN``, 1e-11 relative) covers.

    Parameters
    ----------
    score : RidgeScore
    alpha : ndarray (n,) float64
    features : int64 array or None
        The entries needed (None: all p).
    coef : (int64 ndarray (w,), float64 ndarray (w,)) or None
        ``(W, beta)`` with ``alpha = y - X_W beta`` as computed by the caller.

    Returns
    -------
    ndarray (p,) float64
        ``X^T alpha``; NaN outside ``features`` when only they were formed, so that a read
        elsewhere poisons a bound (NaN never closes a node) instead of passing for a value.
    """
    G = score.cached_gram()
    if coef is not None and G is not None:
        W, beta = coef
        needed = score.p if features is None else features.size
        if np.count_nonzero(beta) * score.p < score.n * needed:
            out = np.empty(score.p)
            gram_product(G, score.c, np.asarray(W, dtype=np.int64), np.ascontiguousarray(beta, dtype=np.float64), out)
            return out
    if features is None or features.size > PRODUCT_SHARE * score.p or not _keeps_xt(score):
        return score.X.T @ alpha
    out = np.full(score.p, np.nan)
    rows_dot(score.transposed(), np.ascontiguousarray(alpha, dtype=np.float64),
             np.asarray(features, dtype=np.int64), out)
    return out


def _keeps_xt(score):
    """Whether the node products may keep X^T beside X (:data:`PRODUCT_XT_MAX_FLOATS`)."""
    return score.n * score.p <= PRODUCT_XT_MAX_FLOATS


def columns_of(score, W):
    """``X[:, W]`` of shape (n, |W|), float64: the rows W of X^T gathered (|W| contiguous reads
    instead of one cache line per entry of X) and transposed when X^T is kept, else gathered
    from X. The same numbers either way."""
    if not _keeps_xt(score):
        return score.X[:, W]
    return score.transposed()[W].T


def entrants_compiled(score, alpha, inW, csr, grow_min, wsize, features=None, coef=None):
    """:func:`entrants_numpy` with the compiled kernels (:func:`kkt_outside`, :func:`kkt_entrants`):
    None when no group needs the check, else (entrants, ``X^T alpha``). ``features``: the node's
    fixed-in and group features, where the product is read; ``coef``: alpha's ``(W, beta)``
    (:func:`product_on`)."""
    gptr, gidx, needs = csr
    if not kkt_outside(inW, gptr, gidx, needs):
        return None
    a = product_on(score, alpha, features, coef)
    return kkt_entrants(a, inW, gptr, gidx, needs, int(grow_min), int(wsize)), a


def entrants_numpy(score, alpha, inW, groups, grow_min, wsize):
    """The KKT growth of a round of :func:`~dpbench.core.oracle.ksupport.ksupport_alpha`: (entrants (k,) int64 increasing, or None
    when no group needs the check; ``X^T alpha`` (p,) or None).

    Per group still needing features, every member outside the working set whose ``a_j^2``
    exceeds the need-th largest inside violates the optimality conditions of the relaxation; the
    ``max(grow_min, wsize // 2)`` largest of them enter (the relaxed solutions at small lam
    spread over tens of features, so many enter at once).
    """
    grow = np.zeros(inW.size, dtype=bool)
    a2all = a_sign = None
    for idx, need in groups:
        out = idx[~inW[idx]]
        if need < 1 or not out.size:
            continue
        if a2all is None:
            a_sign = score.X.T @ alpha
            a2all = a_sign ** 2
        a2g = a2all[idx]
        a2in = a2g[inW[idx]]
        thr = np.partition(a2in, a2in.size - need)[a2in.size - need] if a2in.size >= need else 0.0
        a2 = a2g[~inW[idx]]
        viol = np.flatnonzero(a2 > thr * (1.0 + 1e-9))
        if viol.size:
            k = min(viol.size, max(grow_min, wsize // 2))
            grow[out[viol[np.argsort(-a2[viol], kind="stable")[:k]]]] = True
    if a_sign is None:
        return None, None
    return np.flatnonzero(grow), a_sign
