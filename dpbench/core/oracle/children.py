"""A node's children in closed form: their order, with the ties of the k-support tail broken by a key.

A relaxed node (F fixed in, m more from its candidates C) is partitioned into the children
i = 0, 1, ..: ``Cs[i]`` in, ``Cs[:i]`` out, the other m - 1 from ``Cs[i+1:]``, with Cs the
candidates in decreasing ``a_j^2`` of the node's dual point (``a = X^T alpha``). Each child is
bounded in closed form (:func:`~dpbench.core.oracle.relaxation.child_bounds`, the reference;
:func:`child_bounds`, compiled).

**Ties.** At the relaxation's optimum the features of the k-support norm's tail share one value
of ``|a_j|`` (the dual norm's optimality conditions; Argyriou, Foygel & Srebro 2012, Prop. 2.1):
at the root of gravier's level-5 listing (s = 5, Λ = 10), 53 candidates have ``a_j^2`` equal to
within 10^-12 relative. Their children's bounds are equal, so their order is free, but an order
by ``a_j^2`` alone leaves it to the last bits of the solve. Those bits depend on how the
product ``X^T alpha`` was rounded, and the tree they choose changes with them: the same listing
took 182 330 or 147 176 nodes with two roundings of that product, and 322 789 or 112 055 with
the tail ordered by increasing or decreasing cut weight.

So the candidates whose ``a_j^2`` lie within :data:`TIE_A2_RTOL` (relative) of the first of their
run in decreasing order form one tie: each member counts with the run's first, largest value
in the window sums, and the members are ordered by decreasing ``key`` (then by position in
C). The search passes ``|beta_j|`` of the relaxation's primal solution (zero off its working
set): on the tail the perspective form's indicator is ``z_j = (q + 1) |beta_j| / sum_tail |beta|``
(Argyriou, Foygel & Srebro 2012, eq. (3)), so the features the relaxation uses most come
first, as a branch and bound branches on the relaxation's largest indicators, and every later
child of the tie excludes them. Gravier's optimum (``standardize``, Λ = 10) takes 18 895 nodes
with this key, 22 309 with the weights W of the node's binary cut (session 29's key), and
more than 100 000 with increasing ``|beta_j|``; level 5 of its list 88 667 against 112 055
(docs/performance.md, session 30). Without a primal solution (``relax_method = "pg"``)
the key is the cut's weights: the features that lower ``const - W[F].sum() - (the m largest
W[C])`` most come first. Validity: a member's ``a_j^2`` is at most its run's first value, so each window
sum is at least the largest ``a^2`` sum of the child's completions (the sums are still taken
over positions in nonincreasing order of the values used), and the bound (*) of
:mod:`~dpbench.core.oracle.relaxation` only falls as T grows. The bounds stay nondecreasing in i.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dpbench.core.oracle.kernels import bound_at

__all__ = ["TIE_A2_RTOL", "child_bounds", "tie_order", "tie_order_numpy"]

#: Two candidates' ``a_j^2`` closer than this (relative to the larger) are one tie of the child
#: order. The k-support tail's values agree to about 10^-15; other values of gravier's nodes are
#: 10^-4 apart or more, so a run never spans unrelated features.
TIE_A2_RTOL = 1e-9

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_JIT)
def tie_order(a2C, C, key, rtol):
    """The children's order: positions of C in decreasing ``a^2``, each tie by decreasing key.

    Parameters
    ----------
    a2C : ndarray (|C|,) float64
        ``a_j^2`` of the candidates, in the order of C.
    C : ndarray (|C|,) int64
        The candidates.
    key : ndarray (p,) float64
        Order within a tie, largest first, indexed by feature (then by position in C).
    rtol : float
        :data:`TIE_A2_RTOL`.

    Returns
    -------
    order : ndarray (|C|,) int64
        Positions in C.
    w : ndarray (|C|,) float64
        The value each position counts with: its run's first (largest) ``a^2``; nonincreasing.
    """
    order = np.argsort(-a2C, kind="mergesort")
    L = C.size
    w = np.empty(L)
    i = 0
    while i < L:
        lead = a2C[order[i]]
        j = i + 1
        while j < L and a2C[order[j]] >= lead * (1.0 - rtol):
            j += 1
        if j - i > 1:
            run = np.sort(order[i:j])  # by position in C, then (stable) by key
            neg = np.empty(j - i)
            for t in range(j - i):
                neg[t] = -key[C[run[t]]]
            by_key = np.argsort(neg, kind="mergesort")
            for t in range(j - i):
                order[i + t] = run[by_key[t]]
        for t in range(i, j):
            w[t] = lead
        i = j
    return order, w


def tie_order_numpy(a2C, C, key, rtol=TIE_A2_RTOL):
    """:func:`tie_order` with numpy (the reference of
    :func:`~dpbench.core.oracle.relaxation.child_bounds`): the same (order, w)."""
    order = np.argsort(-a2C, kind="stable")
    w = a2C[order]
    start = 0
    for i in range(1, w.size + 1):
        if i == w.size or w[i] < w[start] * (1.0 - rtol):
            run = np.sort(order[start:i])
            order[start:i] = run[np.lexsort((run, -key[C[run]]))]
            w[start:i] = w[start]
            start = i
    return order, w


@njit(**_JIT)
def child_bounds(a, ay, aa, lam, r, fixed, C, m, key):
    """:func:`dpbench.core.oracle.relaxation.child_bounds` compiled.

    Parameters
    ----------
    a : ndarray (p,) float64
        ``X^T alpha``.
    ay, aa, lam, r : float
        ``alpha^T y``, ``||alpha||^2``, the ridge penalty (> 0) and the l2 bound (inf allowed).
    fixed, C : ndarray int64
        F and the candidates (|C| >= 1).
    m : int
    key : ndarray (p,) float64
        Order within a tie (:func:`tie_order`).

    Returns
    -------
    Cs : ndarray (|C|,) int64
    bounds : ndarray (|C| - m + 1,) float64
        Nondecreasing; empty when |C| < m.
    """
    a2C = np.empty(C.size)
    for i in range(C.size):
        a2C[i] = a[C[i]] * a[C[i]]
    order, w = tie_order(a2C, C, key, TIE_A2_RTOL)
    Cs = C[order]
    L = w.size - m + 1
    if L <= 0:
        return Cs, np.zeros(0)
    f2 = 0.0
    for i in fixed:
        f2 += a[i] * a[i]
    out = np.empty(L)
    for i in range(L):
        T2 = f2
        for k in range(m):  # window sums term by term, as the reference
            T2 = T2 + w[i + k]
        out[i] = bound_at(T2, ay, aa, lam, r)
    for i in range(L - 2, -1, -1):  # suffix minimum: nondecreasing exactly, only lowers bounds
        out[i] = min(out[i], out[i + 1])
    return Cs, out
