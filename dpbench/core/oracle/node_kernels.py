"""Compiled small-matrix work of a branch-and-bound node (numba): the partial support and its leaves.

Two steps of every node of :meth:`~dpbench.core.oracle.branch_and_bound.BranchAndBound._bnb_search`
work on matrices of side |F| + m <= s (a handful) and were a dozen numpy calls each, so numpy's
per-call overhead, not the arithmetic, was their cost (golub, p = 7 129, s = 5, Lambda = 10: 24
of the 52 CPU-seconds of a topr preparation in the first, 8 in the second):

* :func:`partial_quantities` -- for the fixed features F of a node, the binary cut built at F
  and the exact ridge decreases of its one-feature completions
  (:meth:`~dpbench.core.oracle.bounds.NodeBounds._partial`, formulas in its docstring);
* :func:`score_completions` -- the scores of the supports ``F + A`` of a leaf, one row of A per
  support (:meth:`~dpbench.core.oracle.bounds.NodeBounds._score_with`).

Both solve ``min ||y - X_S beta||^2 + lam ||beta||^2`` s.t. ``||beta|| <= r`` as
:func:`~dpbench.core.score.solve_blocks` does for positive definite blocks: the Cholesky
solution when it lies in the ball, otherwise Newton's method on the secular equation
``1/||beta(mu)|| - 1/r = 0`` from ``mu = 0`` (Moré & Sorensen 1983; Nocedal & Wright,
Algorithm 4.3), each step one Cholesky factorisation of ``G + mu I``, stopped at
``| ||beta|| - r | <= 1e-12 r`` (the test of :func:`~dpbench.core.score.ridge._cm_trust_region`).

* In :func:`partial_quantities` the multiplier is then recomputed from ``beta`` as
  :func:`~dpbench.core.oracle.cuts._multiplier` does, and the cut is the dual function at
  ``(alpha = y - X_F beta, mu)``: valid for any ``beta`` and any ``mu >= 0`` (weak duality,
  :mod:`~dpbench.core.oracle.cuts`), so the accuracy of the iteration only affects the cut's
  strength; ``R0``, ``h`` and the Schur diagonal are exact closed forms.
* A leaf's scores decide what a search keeps, so :func:`score_completions` flags every block
  that is not numerically positive definite (a pivot below ``1e-12`` of the trace, the test of
  :func:`~dpbench.core.score.ridge._cm_cholesky_solve`) or whose iteration did not converge; the
  caller scores those with :func:`~dpbench.core.score.solve_blocks`. What a threshold
  enumeration returns is rescored with the shared score in any case, and an optimum call
  recomputes its objective.

``tests/oracle/test_node_kernels.py`` checks both kernels against their numpy references.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["partial_quantities", "score_completions"]

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_JIT)
def _chol_into(A, L, thr):
    """Lower Cholesky factor of the SPD matrix A written into L; False when a pivot is <= thr."""
    k = A.shape[0]
    for j in range(k):
        d = A[j, j]
        for t in range(j):
            d -= L[j, t] * L[j, t]
        if not d > thr:
            return False
        L[j, j] = math.sqrt(d)
        for i in range(j + 1, k):
            e = A[i, j]
            for t in range(j):
                e -= L[i, t] * L[j, t]
            L[i, j] = e / L[j, j]
    return True


@njit(**_JIT)
def _cholesky(G):
    """Lower Cholesky factor of a small SPD matrix and whether every pivot was positive."""
    L = np.zeros(G.shape)
    return L, _chol_into(G, L, 0.0)


@njit(**_JIT)
def _forward(L, b):
    """z with L z = b."""
    k = b.size
    z = np.empty(k)
    for i in range(k):
        v = b[i]
        for t in range(i):
            v -= L[i, t] * z[t]
        z[i] = v / L[i, i]
    return z


@njit(**_JIT)
def _backward(L, z):
    """x with L^T x = z."""
    k = z.size
    x = np.empty(k)
    for i in range(k - 1, -1, -1):
        v = z[i]
        for t in range(i + 1, k):
            v -= L[t, i] * x[t]
        x[i] = v / L[i, i]
    return x


@njit(**_JIT)
def partial_quantities(RF, F, c, yy, col_sq, lam, r):
    """Cut at F and one-feature completion bounds of :meth:`~dpbench.core.oracle.bounds.NodeBounds._partial`.

    Parameters
    ----------
    RF : ndarray of shape (k, p), float64
        Gram rows ``X_F^T X`` of the k >= 1 features F.
    F : ndarray of shape (k,), int64
    c : ndarray of shape (p,), float64
        ``X^T y``.
    yy : float
        ``y^T y``.
    col_sq : ndarray of shape (p,), float64
        ``||x_j||^2``.
    lam : float
        Ridge parameter Lambda > 0.
    r : float
        l2 bound (``inf`` for none).

    Returns
    -------
    ok : bool
        False when ``G`` is not numerically positive definite (the caller uses numpy).
    const : float
    W : ndarray of shape (p,)
        The cut ``R(S) >= const - W[S].sum()``.
    R0 : float
        Ridge score of F without the l2 bound.
    h : ndarray of shape (p,)
        ``(x_b^T r_F)^2 / m_b``, 0 on F.
    m : ndarray of shape (p,)
        ``max(m_b, lam)``, the Schur complements ``||x_b||^2 + lam - g_bF^T G^{-1} g_bF``.
    """
    k, p = RF.shape
    G = np.empty((k, k))
    cF = np.empty(k)
    for i in range(k):
        cF[i] = c[F[i]]
        for j in range(k):
            G[i, j] = RF[i, F[j]]
    Gl = G.copy()
    for i in range(k):
        Gl[i, i] += lam
    W = np.zeros(p)
    h = np.zeros(p)
    m = np.zeros(p)
    L, ok = _cholesky(Gl)
    if not ok:
        return False, 0.0, W, 0.0, h, m
    b0 = _backward(L, _forward(L, cF))
    R0 = yy
    n0 = 0.0
    for i in range(k):
        R0 -= cF[i] * b0[i]
        n0 += b0[i] * b0[i]
    beta = b0.copy()
    if math.isfinite(r) and n0 > r * r:
        mu = 0.0
        for _ in range(60):
            Gm = Gl.copy()
            for i in range(k):
                Gm[i, i] += mu
            Lm, good = _cholesky(Gm)
            if not good:
                break
            beta = _backward(Lm, _forward(Lm, cF))
            nrm = math.sqrt(np.sum(beta * beta))
            if abs(nrm - r) <= 1e-12 * r:
                break
            q = _forward(Lm, beta)
            step = (nrm * nrm / np.sum(q * q)) * (nrm - r) / r
            if not math.isfinite(step):
                break
            mu += step
    # the multiplier recomputed from beta (cuts._multiplier): any mu >= 0 gives a valid cut
    nb2 = 0.0
    bc = 0.0
    bGb = 0.0
    bres = 0.0
    for i in range(k):
        nb2 += beta[i] * beta[i]
        bc += beta[i] * cF[i]
        gi = 0.0
        gx = 0.0
        for j in range(k):
            gi += Gl[i, j] * beta[j]
            gx += G[i, j] * beta[j]
        bres += beta[i] * (cF[i] - gi)
        bGb += beta[i] * gx
    mu = 0.0
    if math.isfinite(r) and nb2 >= (r * r) * (1 - 1e-8):
        v = bres / nb2
        if math.isfinite(v) and v > 0.0:
            mu = v
    r2 = r * r if math.isfinite(r) else 0.0
    const = 2.0 * (yy - bc) - (yy - 2.0 * bc + bGb) - mu * r2
    V = np.empty(k)
    for j in range(p):
        aj = c[j]
        gj = c[j]
        for i in range(k):
            aj -= RF[i, j] * beta[i]
            gj -= RF[i, j] * b0[i]
        W[j] = aj * aj / (lam + mu)
        # V = L^{-1} RF[:, j]
        vv = 0.0
        for i in range(k):
            v = RF[i, j]
            for t in range(i):
                v -= L[i, t] * V[t]
            V[i] = v / L[i, i]
            vv += V[i] * V[i]
        mj = col_sq[j] + lam - vv
        if mj < lam:
            mj = lam
        m[j] = mj
        h[j] = gj * gj / mj
    for i in range(k):
        h[F[i]] = 0.0
    return True, const, W, R0, h, m


@njit(**_JIT)
def _solve_into(L, rhs, z, x):
    """z = L^{-1} rhs and x = L^{-T} z in place; returns (||z||^2, ||x||^2)."""
    k = rhs.size
    zz = 0.0
    for i in range(k):
        v = rhs[i]
        for t in range(i):
            v -= L[i, t] * z[t]
        z[i] = v / L[i, i]
        zz += z[i] * z[i]
    xx = 0.0
    for i in range(k - 1, -1, -1):
        v = z[i]
        for t in range(i + 1, k):
            v -= L[t, i] * x[t]
        x[i] = v / L[i, i]
        xx += x[i] * x[i]
    return zz, xx


@njit(**_JIT)
def _ridge_ball(Gl, cv, yy, r, cutoff, Gm, L, z, b, q):
    """(score, ok) of ``min ||y - X b||^2 + lam ||b||^2, ||b|| <= r`` from ``Gl = X^T X + lam I``, ``cv = X^T y``.

    ``Gm, L`` (k, k) and ``z, b, q`` (k,) are work arrays. Every ``mu >= 0`` gives the dual lower
    bound ``y^T y - c^T (Gl + mu I)^{-1} c - mu r^2`` on the score (``mu = 0``: the score without
    the ball); once one reaches ``cutoff``, it is returned instead of the score.
    """
    k = cv.size
    thr = 0.0
    for i in range(k):
        thr += abs(Gl[i, i])
    thr = max(thr, 1e-300) * 1e-12  # the relative pivot test of the shared score
    if not _chol_into(Gl, L, thr):
        return 0.0, False
    zz, n2 = _solve_into(L, cv, z, b)
    if not (math.isfinite(r) and n2 > r * r) or yy - zz >= cutoff:
        return yy - zz, True
    r2 = r * r
    mu = 0.0
    for _ in range(60):
        if mu > 0.0:
            for i in range(k):
                for j in range(k):
                    Gm[i, j] = Gl[i, j]
                Gm[i, i] += mu
            if not _chol_into(Gm, L, 0.0):
                return 0.0, False
            zz, n2 = _solve_into(L, cv, z, b)
            if yy - zz - mu * r2 >= cutoff:
                return yy - zz - mu * r2, True
        nrm = math.sqrt(n2)
        if abs(nrm - r) <= 1e-12 * r:
            return yy - zz - mu * n2, True
        qq = 0.0
        for i in range(k):  # q = L^{-1} b
            v = b[i]
            for t in range(i):
                v -= L[i, t] * q[t]
            q[i] = v / L[i, i]
            qq += q[i] * q[i]
        step = (n2 / qq) * (nrm - r) / r
        if not math.isfinite(step):
            return 0.0, False
        mu += step
    return 0.0, False


@njit(**_JIT)
def score_completions(RF, F, idx, Gaa, c, yy, lam, r, cutoff, base, W):
    """Scores of the supports ``F + idx[b]`` from Gram rows (the closed form of :func:`~dpbench.core.score.solve_blocks`).

    Parameters
    ----------
    RF : ndarray of shape (f, p), float64
        Gram rows ``X_F^T X`` (f may be 0).
    F : ndarray of shape (f,), int64
    idx : ndarray of shape (B, m), int64
        The added features of each support (none in F).
    Gaa : ndarray of shape (B, m, m), float64
        ``X_A^T X_A`` of each row's added features (no ridge).
    c : ndarray of shape (p,), float64
        ``X^T y``.
    yy, lam, r : float
        ``y^T y``, Lambda and the l2 bound (``inf`` for none).
    cutoff : float
        Scores at or above it are not needed exactly: where the ridge score without the l2
        bound (a lower bound on R, the ball only raises it) is already >= ``cutoff``, that
        bound is returned, and likewise the first dual bound of the secular iteration that
        reaches it (``inf``: every score exact).
    base, W : float, ndarray of shape (p,), float64
        A binary cut ``R(S) >= base - W[S \\ F].sum()`` valid for every support containing F
        (e.g. the cut at F, ``base = const - W[F].sum()``): a row whose cut bound is already
        >= ``cutoff`` gets that bound without a solve.

    Returns
    -------
    scores : ndarray of shape (B,), float64
        ``R(F + idx[b])``, or a lower bound >= ``cutoff`` on it; meaningless where ``ok`` is False.
    ok : ndarray of shape (B,), bool
        False where the block failed the pivot test or the secular iteration did not converge.
    """
    f = F.size
    B, m = idx.shape
    k = f + m
    out = np.empty(B)
    ok = np.empty(B, dtype=np.bool_)
    G = np.empty((k, k))
    cv = np.empty(k)
    Gm = np.empty((k, k))
    L = np.zeros((k, k))
    z = np.empty(k)
    b = np.empty(k)
    q = np.empty(k)
    for i in range(f):
        cv[i] = c[F[i]]
        for j in range(f):
            G[i, j] = RF[i, F[j]]
        G[i, i] += lam
    for row in range(B):
        lb = base
        for u in range(m):
            lb -= W[idx[row, u]]
        if lb >= cutoff:
            out[row], ok[row] = lb, True
            continue
        for u in range(m):
            a = idx[row, u]
            cv[f + u] = c[a]
            for i in range(f):
                G[i, f + u] = RF[i, a]
                G[f + u, i] = RF[i, a]
            for v in range(m):
                G[f + u, f + v] = Gaa[row, u, v]
            G[f + u, f + u] += lam
        out[row], ok[row] = _ridge_ball(G, cv, yy, r, cutoff, Gm, L, z, b, q)
    return out, ok
