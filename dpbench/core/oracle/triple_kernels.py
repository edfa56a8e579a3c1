"""Closed-form bounds of a leaf's triple completions, the pair bounds' next step (numba).

A branch-and-bound node with three features left and at most ``leaf_limit`` completions is a
leaf: every triple F ∪ {C[i], C[j], C[k]} is scored. Before, only the cut bound could spare a
triple its batched solve, and on gravier's topr level 5 (``standardize``, Lambda = 10) it
spared 6 %: 2 804 such leaves, 40.1 million triples, 37.6 million solved, 38 of the listing's
316 CPU-seconds (issue 22, session 25). The ridge score of F ∪ B without the l2 bound closes
nearly all of them, as it does for pairs (:func:`~dpbench.core.oracle.node_kernels.pair_bounds`).

With ``G_l = X_F^T X_F + lam I = L L^T``, ``b0 = G_l^{-1} X_F^T y``, ``R0`` the ridge score of F,
and the per-candidate terms ``t = X_C^T (y - X_F b0)``, ``U = L^{-1} X_F^T X_C`` and
``mC = diag(X_C^T X_C) + lam - diag(U^T U)``
(:func:`~dpbench.core.oracle.node_kernels.pair_terms`), adding B = {i, j, k} to F lowers the
ridge score by exactly ``t_B^T M_B^{-1} t_B``, where ``M_B = X_B^T X_B + lam I - U_B^T U_B`` is the
Schur complement of ``G_l`` in the (F ∪ B) system (block elimination). ``M_B >= lam I``, so each
pivot of its LDL^T factorisation is >= lam (each is a Schur complement of a matrix >= lam I); a
triple whose computed pivots are not gets ``-inf`` (no bound). The l2 bound only raises the
score, so ``R0 - t_B^T M_B^{-1} t_B``, less the relative rounding margin 1e-12 of the pair
bounds, is a valid lower bound, equal to the score when the l2 bound is inactive.

:func:`triple_bounds` (rows of a leaf) and :func:`leaf_triple_scan` (every triple of a leaf,
straight from the cached Gram) share :func:`_triple_bound`, so they agree bit for bit;
:func:`triple_bounds_numpy` is the numpy reference the tests compare them with.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpbench.core.oracle.node_kernels import _JIT

__all__ = ["leaf_triple_scan", "triple_bounds", "triple_bounds_numpy"]


@njit(**_JIT)
def _triple_bound(gij, gik, gjk, U, i, j, k, mC, t, R0, lam, lo):
    """The bound of the triple (i, j, k) of positions in C from its Gram entries ``x_i^T x_j``,
    ``x_i^T x_k``, ``x_j^T x_k``; -inf where a pivot of ``M_B`` is below ``lo`` = lam (1 - 1e-9)."""
    for r_ in range(U.shape[0]):
        gij -= U[r_, i] * U[r_, j]
        gik -= U[r_, i] * U[r_, k]
        gjk -= U[r_, j] * U[r_, k]
    d1 = mC[i]
    if not d1 >= lo:
        return -np.inf
    l21 = gij / d1
    l31 = gik / d1
    d2 = mC[j] - l21 * gij
    if not d2 >= lo:
        return -np.inf
    l32 = (gjk - l31 * gij) / d2
    d3 = mC[k] - l31 * gik - l32 * l32 * d2
    if not d3 >= lo:
        return -np.inf
    z1 = t[i]
    z2 = t[j] - l21 * z1
    z3 = t[k] - l31 * z1 - l32 * z2
    gain = z1 * z1 / d1 + z2 * z2 / d2 + z3 * z3 / d3
    tb = R0 - gain - 1e-12 * (abs(R0) + abs(gain))
    if np.isfinite(tb):
        return tb
    return -np.inf


@njit(**_JIT)
def triple_bounds(GCC, A, t, mC, U, R0, lam):
    """Lower bounds on the scores of the triple completions F ∪ C[A[b]] of a leaf (module docstring).

    Parameters
    ----------
    GCC : float64 ndarray (c, c)
        ``X_C^T X_C``.
    A : int64 ndarray (B, 3)
        Positions in C of each triple.
    t, mC : float64 ndarray (c,)
    U : float64 ndarray (f, c)
        The per-candidate terms (:func:`~dpbench.core.oracle.node_kernels.pair_terms`).
    R0, lam : float
        The ridge score of F (no l2 bound) and Lambda.

    Returns
    -------
    float64 ndarray (B,)
        A valid lower bound per row, ``-inf`` where none is proven.
    """
    lo = lam * (1 - 1e-9)
    out = np.empty(A.shape[0])
    for b in range(A.shape[0]):
        i, j, k = A[b, 0], A[b, 1], A[b, 2]
        out[b] = _triple_bound(GCC[i, j], GCC[i, k], GCC[j, k], U, i, j, k, mC, t, R0, lam, lo)
    return out


def triple_bounds_numpy(GCC, A, t, mC, U, R0, lam):
    """The numpy reference of :func:`triple_bounds` (same parameters and result): ``M_B`` assembled
    per row and ``t_B^T M_B^{-1} t_B`` from numpy's batched solve; -inf where ``M_B`` is not proven
    >= lam I (smallest eigenvalue below lam (1 - 1e-9))."""
    M = GCC[A[:, :, None], A[:, None, :]] - np.einsum("fbi,fbj->bij", U[:, A], U[:, A])
    M[:, np.arange(3), np.arange(3)] = mC[A]
    tB = t[A]
    with np.errstate(all="ignore"):
        gain = np.einsum("bi,bi->b", tB, np.linalg.solve(M, tB[:, :, None])[:, :, 0])
        ok = np.linalg.eigvalsh(M)[:, 0] >= lam * (1 - 1e-9)
    lb = R0 - gain - 1e-12 * (abs(R0) + np.abs(gain))
    return np.where(ok & np.isfinite(lb), lb, -np.inf)


@njit(**_JIT)
def leaf_triple_scan(C, G, t, mC, U, R0, lam, cut0, W, cutoff):
    """The triples of a leaf with three features left that its bounds leave below ``cutoff``.

    Visits every triple (i, j, k), i < j < k, of positions in C in lexicographic order, the order
    of :func:`~dpbench.core.supports.iter_supports`: the cut bound ``cut0 - W[C[i]] - W[C[j]] -
    W[C[k]]``, then, when it is below ``cutoff``, :func:`triple_bounds`' bound from the cached
    ``G = X^T X`` (:func:`~dpbench.core.oracle.node_kernels.leaf_pair_scan` for triples).

    Parameters
    ----------
    C : int64 (c,)
    G : float64 (p, p)
    t, mC : float64 (c,)
    U : float64 (f, c)
    R0, lam, cut0, cutoff : float
    W : float64 (p,)
        The cut's weights (:meth:`~dpbench.core.oracle.bounds.NodeBounds._partial`).

    Returns
    -------
    need : int64 (q, 3)
        Positions in C of the triples whose bounds stayed below ``cutoff``, in lexicographic order.
    low : float
        The smallest bound of the other triples (inf if none).
    low_triple : int64 (3,)
        Positions of the first triple with that bound (-1s if none).
    """
    c = C.size
    need = np.empty((c * (c - 1) * (c - 2) // 6, 3), dtype=np.int64)
    q = 0
    low = np.inf
    low_triple = np.full(3, -1, dtype=np.int64)
    lo = lam * (1 - 1e-9)
    for i in range(c):
        u = C[i]
        cut_i = cut0 - W[u]
        for j in range(i + 1, c):
            v = C[j]
            cut_ij = cut_i - W[v]
            for k in range(j + 1, c):
                w = C[k]
                lb = cut_ij - W[w]
                if lb < cutoff:
                    lb = _triple_bound(G[u, v], G[u, w], G[v, w], U, i, j, k, mC, t, R0, lam, lo)
                    if not lb >= cutoff:
                        need[q, 0] = i
                        need[q, 1] = j
                        need[q, 2] = k
                        q += 1
                        continue
                if lb < low:
                    low = lb
                    low_triple[0] = i
                    low_triple[1] = j
                    low_triple[2] = k
    return need[:q], low, low_triple
