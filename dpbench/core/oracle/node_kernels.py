"""Compiled quantities of a partial support F, the first step of every branch-and-bound node (numba).

:meth:`~dpbench.core.oracle.bounds.NodeBounds._partial` needs, for the fixed features F of a
node (|F| < s, a handful), the binary cut built at F and the exact ridge decreases of its
one-feature completions (formulas in its docstring). Each is a few solves with the |F| x |F|
matrix ``G = X_F^T X_F + lam I`` and one pass over the p Gram-row entries; with numpy that
was a dozen calls on 4 x 4 arrays per node, about 1 ms, and on golub (p = 7 129, s = 5,
Lambda = 10) 24 of the 52 CPU-seconds of a topr preparation. :func:`partial_quantities` does
the same arithmetic in one compiled pass:

* ``beta`` solves ``min ||y - X_F beta||^2 + lam ||beta||^2`` s.t. ``||beta|| <= r``: the
  Cholesky solution when it lies in the ball, otherwise Newton's method on the secular
  equation ``1/||beta(mu)|| - 1/r = 0`` from ``mu = 0`` (Moré & Sorensen 1983; Nocedal &
  Wright, Algorithm 4.3), each step one Cholesky factorisation of ``G + mu I``;
* the multiplier is then recomputed from ``beta`` as :func:`~dpbench.core.oracle.cuts._multiplier`
  does, and the cut is the dual function at ``(alpha = y - X_F beta, mu)``: valid for any
  ``beta`` and any ``mu >= 0`` (weak duality, :mod:`~dpbench.core.oracle.cuts`), so the accuracy
  of the iteration only affects the cut's strength. No score comes from here: every support a
  search keeps is scored by :func:`~dpbench.core.score.solve_blocks`;
* ``R0``, ``h`` and the Schur diagonal are exact closed forms.

:func:`leaf_pairs` does the first steps of scoring a leaf's pair completions in one pass: the
cut bound, the closed-form pair bound of :func:`pair_bounds` (its numpy reference) and the
sorted supports. :func:`leaf_pair_scan` does the same two bounds for every pair of a leaf's
candidates (or of a node's first open children) straight from the cached p x p Gram matrix, and
returns only the pairs that need a score. Both read the per-candidate terms of :func:`pair_terms`;
:mod:`~dpbench.core.oracle.triple_kernels` uses them for a leaf's triples.

``tests/oracle/test_node_kernels.py`` checks the kernels against the numpy references
(:meth:`~dpbench.core.oracle.bounds.NodeBounds._partial_numpy`, :func:`pair_terms_numpy`, the
numpy path of :meth:`~dpbench.core.oracle.bounds.NodeBounds._score_with`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["leaf_pair_scan", "leaf_pairs", "pair_bounds", "pair_terms", "pair_terms_numpy", "partial_quantities"]

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


def pair_terms_numpy(RFU, cF, cC, col_sqC, lam):
    """The numpy reference of :func:`pair_terms` (numpy's Cholesky factorisation and triangular
    solves): ``(t, mC, U)``, same arguments.

    Raises
    ------
    numpy.linalg.LinAlgError
        When ``X_F^T X_F + lam I`` is not numerically positive definite.
    """
    f = cF.size
    RFC = RFU[:, f:]
    L = np.linalg.cholesky(RFU[:, :f] + lam * np.eye(f))
    b0 = np.linalg.solve(L.T, np.linalg.solve(L, cF))
    U = np.linalg.solve(L, RFC)  # (f, c)
    mC = col_sqC + lam - np.einsum("fc,fc->c", U, U)
    return cC - RFC.T @ b0, mC, np.ascontiguousarray(U)


@njit(**_JIT)
def pair_terms(RFU, cF, cC, col_sqC, lam):
    """The per-candidate terms of :func:`pair_bounds` in one compiled pass (what
    :meth:`~dpbench.core.oracle.bounds.NodeBounds._pair_terms` returns after ``R0``).

    With ``G_l = X_F^T X_F + lam I = L L^T`` and ``b0 = G_l^{-1} X_F^T y``: ``U = L^{-1} X_F^T X_C``,
    ``t = X_C^T y - (X_F^T X_C)^T b0`` and ``mC = ||x_c||^2 + lam - ||U[:, c]||^2`` (the Schur
    complement of ``G_l`` for each candidate alone: :func:`partial_quantities`' ``m`` before its
    floor at lam). A leaf with two features left needs them for its few hundred candidates;
    with numpy's Cholesky factorisation and triangular solves of the f x f system
    (:func:`pair_terms_numpy`) they took 0.36 ms a leaf, 0.16 ms this way, and gravier's level-5
    listing has about 120 000 such leaves (issue 22, docs/performance.md, session 24).

    Parameters
    ----------
    RFU : float64 ndarray (f, f + c)
        Gram rows of F at the columns ``F`` then ``C``.
    cF, cC : float64 ndarray (f,), (c,)
        ``X^T y`` at F and at C.
    col_sqC : float64 ndarray (c,)
        ``||x_j||^2`` at C.
    lam : float
        Lambda > 0.

    Returns
    -------
    ok : bool
        False when ``G_l`` is not numerically positive definite (the caller uses numpy).
    t, mC : float64 ndarray (c,)
    U : float64 ndarray (f, c)
    """
    f = cF.size
    c = cC.size
    Gl = np.empty((f, f))
    for i in range(f):
        for j in range(f):
            Gl[i, j] = RFU[i, j]
        Gl[i, i] += lam
    t = np.empty(c)
    mC = np.empty(c)
    U = np.empty((f, c))
    L, ok = _cholesky(Gl)
    if not ok:
        return False, t, mC, U
    b0 = _backward(L, _forward(L, cF))
    for j in range(c):
        tj = cC[j]
        mj = col_sqC[j] + lam
        for i in range(f):
            v = RFU[i, f + j]
            tj -= v * b0[i]
            for q in range(i):
                v -= L[i, q] * U[q, j]
            v /= L[i, i]
            U[i, j] = v
            mj -= v * v
        t[j] = tj
        mC[j] = mj
    return True, t, mC, U


@njit(**_JIT)
def _pair_bound(gij, U, i, j, mC, t, R0, lam, lo):
    """The closed-form bound of :func:`pair_bounds` for the pair (i, j) of positions in C, from its
    Gram entry ``gij = x_i^T x_j``; -inf where the pair's Schur complement is not proven >= lam I
    (``lo`` = lam (1 - 1e-9)). With :func:`_pair_value`, the one copy of this arithmetic in both
    leaf kernels, so that :func:`leaf_pairs` and :func:`leaf_pair_scan` give the same bounds bit
    for bit."""
    Mij = gij
    for r_ in range(U.shape[0]):
        Mij -= U[r_, i] * U[r_, j]
    return _pair_value(Mij, mC[i], mC[j], t[i], t[j], R0, lam, lo)


@njit(**_JIT)
def _pair_value(Mij, mi, mj, ti, tj, R0, lam, lo):
    """:func:`_pair_bound` from the pair's Schur entry ``Mij``: scalars only, so that the scan's
    loop over a row's open pairs inlines it and runs in SIMD lanes."""
    det = mi * mj - Mij * Mij
    if mi >= lo and mj >= lo and det >= lam * lo:
        gain = (mj * ti * ti - 2.0 * Mij * ti * tj + mi * tj * tj) / det
        pb = R0 - gain - 1e-12 * (abs(R0) + abs(gain))
        if np.isfinite(pb):
            return pb
    return -np.inf


@njit(**_JIT)
def leaf_pairs(F, C, A, GCC, t, mC, U, R0, lam, cut0, W, cutoff):
    """Supports and bounds of a leaf's pair completions F ∪ {C[A[b, 0]], C[A[b, 1]]}.

    Per row, as the numpy path of :meth:`~dpbench.core.oracle.bounds.NodeBounds._score_with`:
    the cut bound ``cut0 - W[i] - W[j]``; when it is below ``cutoff``, the pair bound of
    :func:`pair_bounds` from its per-candidate terms
    (``t``, ``mC``, ``U``: :meth:`~dpbench.core.oracle.bounds.NodeBounds._pair_terms`); when that is
    below too, the row needs the shared score.

    Parameters
    ----------
    F : int64 (f,), sorted
    C : int64 (c,)
    A : int64 (B, 2)
        Positions in C.
    GCC : float64 (c, c)
    t, mC : float64 (c,)
    U : float64 (f, c)
    R0, lam, cut0, cutoff : float
    W : float64 (p,)
        The cut's weights (:meth:`~dpbench.core.oracle.bounds.NodeBounds._partial`).

    Returns
    -------
    S : int64 (B, f + 2)
        Rows sorted.
    vals : float64 (B,)
        The bound that reached ``cutoff``; undefined where ``need``.
    need : bool (B,)
        Rows whose bounds stayed below ``cutoff``.
    """
    B = A.shape[0]
    f = F.size
    S = np.empty((B, f + 2), dtype=np.int64)
    vals = np.empty(B)
    need = np.zeros(B, dtype=np.bool_)
    lo = lam * (1 - 1e-9)
    for b in range(B):
        i = A[b, 0]
        j = A[b, 1]
        u = C[i]
        v = C[j]
        if u > v:
            u, v = v, u
        # merge the sorted F with u < v
        k = 0
        q = 0
        for pos in range(f + 2):
            if q < f and (k == 2 or F[q] < (u if k == 0 else v)):
                S[b, pos] = F[q]
                q += 1
            else:
                S[b, pos] = u if k == 0 else v
                k += 1
        lb = cut0 - W[C[i]] - W[C[j]]
        if lb >= cutoff:
            vals[b] = lb
            continue
        pb = _pair_bound(GCC[i, j], U, i, j, mC, t, R0, lam, lo)
        if pb >= cutoff:
            vals[b] = pb
            continue
        need[b] = True
    return S, vals, need


def pair_bounds(GCC, A, t, mC, U, R0, lam):
    """Lower bounds on the scores of pair completions F ∪ {C[i], C[j]}: their ridge scores without the
    l2 bound, in closed form (the numpy reference of the pair step of :func:`leaf_pairs`).

    With ``G_l = X_F^T X_F + lam I`` (Cholesky factor L) and ``b0 = G_l^{-1} X_F^T y``, adding
    the pair B = {i, j} to F lowers the ridge score ``R0`` of F by exactly ``t_B^T M_B^{-1} t_B``,
    where ``t_B = X_B^T (y - X_F b0)`` and ``M_B = X_B^T X_B + lam I - (L^{-1} X_F^T X_B)^T
    (L^{-1} X_F^T X_B)`` is the Schur complement of ``G_l`` in the (F ∪ B) system (block
    elimination; the one-feature decrease ``h_b`` of :func:`partial_quantities` for two
    features). The l2 bound only raises the score, so the value is a valid lower bound, equal to
    the score when the bound is inactive. ``M_B >= lam I`` in exact arithmetic; a pair whose
    computed ``M_B`` is not (rounding, near-collinear columns) gets ``-inf`` (no bound). A
    relative margin of 1e-12 covers the rounding of the closed form against the batched solve
    of :func:`~dpbench.core.score.solve_blocks`.

    Parameters
    ----------
    GCC : float64 ndarray (c, c)
        ``X_C^T X_C``.
    A : int64 ndarray (B, 2)
        Positions in C of each pair.
    t, mC : float64 ndarray (c,)
        ``X_C^T (y - X_F b0)`` and the diagonal of the Schur complement, per candidate.
    U : float64 ndarray (f, c)
        ``L^{-1} X_F^T X_C``.
    R0, lam : float
        The ridge score of F (no l2 bound) and Lambda.

    Returns
    -------
    float64 ndarray (B,)
    """
    i, j = A[:, 0], A[:, 1]
    Mij = GCC[i, j] - np.einsum("fb,fb->b", U[:, i], U[:, j])
    mi, mj, ti, tj = mC[i], mC[j], t[i], t[j]
    det = mi * mj - Mij * Mij
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = (mj * ti * ti - 2.0 * Mij * ti * tj + mi * tj * tj) / det
    lb = R0 - gain - 1e-12 * (abs(R0) + np.abs(gain))
    ok = (mi >= lam * (1 - 1e-9)) & (mj >= lam * (1 - 1e-9)) & (det >= lam * lam * (1 - 1e-9)) & np.isfinite(lb)
    return np.where(ok, lb, -np.inf)


@njit(**_JIT)
def _before(v, i, j, low, li, lj):
    """Whether the pair (i, j) with bound v comes before (low, li, lj): a smaller bound, or the same
    bound and a pair first in lexicographic order."""
    return v < low or (v == low and (i < li or (i == li and j < lj)))


@njit(**_JIT)
def _cut(cut0, wa, wb, first):
    """The cut bound of the visited candidate (weight ``wa``) with a partner (``wb``), the weight of
    the pair's first position in C subtracted first (``first``: the visited one's), as a lexicographic visit."""
    return (cut0 - wa) - wb if first else (cut0 - wb) - wa


@njit(**_JIT)
def _open_end(Ws, x, cut0, wa, cutoff, first):
    """The first b >= x whose cut bound (:func:`_cut`) with ``wa`` is not below ``cutoff``; Ws decreasing."""
    y = Ws.size
    while x < y:
        mid = (x + y) // 2
        if _cut(cut0, wa, Ws[mid], first) < cutoff:
            x = mid + 1
        else:
            y = mid
    return x


@njit(**_JIT)
def _first_closed(P, Ws, b, cut0, wa, ia, rows, first):
    """The smallest closed cut bound from the b-th candidate on (by decreasing weight) paired with
    position ``ia`` (weight ``wa``): over the partners after it in C (``first``) or before it and
    below ``rows``; among equal bounds (rounding), the partner first in C. (inf, -1) if none."""
    v, jv = np.inf, -1
    for b in range(b, P.size):
        jb = P[b]
        if (jb < ia) if first else (jb > ia or jb >= rows):
            continue
        lb = _cut(cut0, wa, Ws[b], first)
        if jv < 0:
            if not lb < v:  # NaN or inf: no bound to offer
                break
            v, jv = lb, jb
        elif lb != v:
            break
        elif jb < jv:
            jv = jb
    return v, jv


@njit(**_JIT)
def leaf_pair_scan(C, G, t, mC, U, R0, lam, cut0, W, cutoff, rows):
    """The pairs of a leaf with two features left that its bounds leave below ``cutoff``.

    Bounds every pair (i, j), i < j, i < ``rows``, of positions in C (``rows = c``: all pairs of
    the leaf; ``rows = k``: the pairs of a node's first k open children, each a leaf of one
    feature left, :meth:`~dpbench.core.oracle.branch_and_bound.BranchAndBound._score_open_pairs`)
    as :func:`leaf_pairs` does, with the same arithmetic: the cut bound ``(cut0 - W[C[i]]) -
    W[C[j]]``, then the closed-form pair bound, and returns what a visit in lexicographic order
    (the order of :func:`~dpbench.core.supports.iter_supports`) would keep. The pair's Gram entry
    is read from the cached ``G = X^T X`` only when the cut bound leaves it open (issue 22,
    session 22).

    The candidates are visited in decreasing cut weight ``W[C[j]]``. The cut bound is nonincreasing
    in either weight (rounding is monotone), so the a-th candidate's open partners b > a are two
    prefixes (partners after it in C, and before it: the bound subtracts the first position's
    weight first), contiguous in arrays permuted once. Their Gram entries come from the visited
    candidate's row (the score keeps ``G`` exactly symmetric) and their bounds from loops without
    branches on the data. Each open pair is bounded once (281 scans of gravier's level 5: 11.2
    million of 56.8 million pairs, against 21.3 million in C's order; issue 22, session 28).

    Parameters
    ----------
    C : int64 (c,)
    G : float64 (p, p)
        ``X^T X`` (the score's cached Gram), exactly symmetric.
    t, mC : float64 (c,)
    U : float64 (f, c)
    R0, lam, cut0, cutoff : float
    W : float64 (p,)
        As in :func:`leaf_pairs`.
    rows : int
        Only pairs whose first position is below ``rows`` (0 <= rows <= c).

    Returns
    -------
    need : int64 (k, 2)
        Positions in C of the pairs whose bounds stayed below ``cutoff``, in lexicographic order.
    low : float
        The smallest bound of the other pairs (inf if none): what the leaf offers of them.
    low_pair : int64 (2,)
        Positions of the first pair with that bound (-1, -1 if none).
    """
    c = C.size
    rows = min(rows, c)
    keys = np.empty(rows * (2 * c - rows - 1) // 2, dtype=np.int64)  # i c + j of the kept pairs
    k = 0
    low, li, lj = np.inf, -1, -1
    lo = lam * (1 - 1e-9)
    f = U.shape[0]
    Wc = np.empty(c)
    for j in range(c):
        Wc[j] = W[C[j]]
    P = np.argsort(-Wc, kind="mergesort")  # NaN last: never open, never the smallest
    Ws, Cp, mp, tp = Wc[P], C[P], mC[P], t[P]
    Up = np.empty((f, c))
    for r_ in range(f):
        for s in range(c):
            Up[r_, s] = U[r_, P[s]]
    M = np.empty(c)
    pb = np.empty(c)
    for a in range(c - 1):
        ia = P[a]
        n1 = _open_end(Ws, a + 1, cut0, Ws[a], cutoff, True)  # closed partners after C[ia] in C
        n2 = _open_end(Ws, a + 1, cut0, Ws[a], cutoff, False)  # and before it
        b0 = a + 1
        n = max(n1, n2) - b0
        if n > 0:
            row = G[Cp[a]]
            for q in range(n):
                M[q] = row[Cp[b0 + q]]
            for r_ in range(f):
                ura = U[r_, ia]
                Ur = Up[r_]
                for q in range(n):
                    M[q] -= ura * Ur[b0 + q]
            ma, ta = mC[ia], t[ia]
            for q in range(n):  # _pair_value's arguments in the pair's order, as a lexicographic visit
                b = b0 + q
                first = ia < P[b]
                pb[q] = _pair_value(M[q], ma if first else mp[b], mp[b] if first else ma,
                                    ta if first else tp[b], tp[b] if first else ta, R0, lam, lo)
            for q in range(n):
                b = b0 + q
                jb = P[b]
                if ia < jb:
                    if b >= n1 or ia >= rows:
                        continue
                    i, j = ia, jb
                else:
                    if b >= n2 or jb >= rows:
                        continue
                    i, j = jb, ia
                if not pb[q] >= cutoff:
                    keys[k] = i * c + j
                    k += 1
                elif _before(pb[q], i, j, low, li, lj):
                    low, li, lj = pb[q], i, j
        # The smallest closed cut bound of each family (nondecreasing in b).
        if ia < rows:
            v, jv = _first_closed(P, Ws, n1, cut0, Ws[a], ia, rows, True)
            if jv >= 0 and _before(v, ia, jv, low, li, lj):
                low, li, lj = v, ia, jv
        v, iv = _first_closed(P, Ws, n2, cut0, Ws[a], ia, rows, False)
        if iv >= 0 and _before(v, iv, ia, low, li, lj):
            low, li, lj = v, iv, ia
    keys[:k].sort()  # lexicographic order
    need = np.empty((k, 2), dtype=np.int64)
    for q in range(k):
        need[q, 0] = keys[q] // c
        need[q, 1] = keys[q] % c
    low_pair = np.full(2, -1, dtype=np.int64)
    if li >= 0:
        low_pair[0] = li
        low_pair[1] = lj
    return need, low, low_pair
