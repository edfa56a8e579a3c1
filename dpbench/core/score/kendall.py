"""Kendall's tau between one column and many, in O(p n log n), with ties scored 0.

The feature score of DPKendall (Dick, Gillenwater, Joseph & Medina 2023):

    K(a, b) = sum_{i < l} sgn(a_i - a_l) sgn(b_i - b_l),        sgn(0) = 0,

Kendall's tau-a times C(n, 2). Every pair term lies in [-1, 1] and a replaced row touches
n - 1 pairs, so ``K`` moves by at most ``2 (n - 1)`` under replace-one (the bound DPKendall's
sensitivity rests on; tau-b, scipy's default, divides by a data-dependent normaliser and has
no such bound when there are ties).

Computation. For *strict* orders (no ties) ``K = C(n, 2) - 2 D`` with ``D`` the number of
inversions of b's ranks read in a's order (Knight 1966), counted by a compiled merge sort. Ties are handled exactly by breaking them both ways: with
``s^+(i, l)`` the sign under ties broken by row index ascending and ``s^-`` descending,
``(s^+ + s^-) / 2 = sgn`` for every pair, so

    K(a, b) = 1/4 sum over (a^+, a^-) x (b^+, b^-) of K(strict a, strict b),

and a column without ties needs one of its two orders only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

def strict_ranks(Z: np.ndarray, descending_ties: bool = False) -> np.ndarray:
    """Ranks 0..n-1 of every column of Z, ties broken by row index (ascending or descending).

    Parameters
    ----------
    Z : ndarray of shape (n, p) or (n,)
    descending_ties : bool
        False: among equal values the earlier row gets the lower rank; True: the later one.

    Returns
    -------
    ndarray of shape (p, n) (or (n,)), int32
    """
    Z = np.asarray(Z, dtype=np.float64)
    one = Z.ndim == 1
    T = np.ascontiguousarray((Z[:, None] if one else Z).T)  # (p, n): one row per column of Z
    n = T.shape[1]
    if descending_ties:
        T = T[:, ::-1]
    order = np.argsort(T, axis=1, kind="stable")
    if descending_ties:
        order = n - 1 - order
    ranks = np.empty(T.shape, dtype=np.int32)
    np.put_along_axis(ranks, order, np.arange(n, dtype=np.int32)[None, :], axis=1)
    return ranks[0] if one else ranks


_KERNEL = None


def _inversions_kernel():
    """The compiled merge-sort kernel (numba; compiled on first use, then cached on disk)."""
    global _KERNEL
    if _KERNEL is None:
        import numba

        @numba.njit(nogil=True, cache=True)  # on-disk cache: compiling costs seconds
        def kernel(R, rows, out):
            m, n = R.shape[0], rows.size
            v = np.empty(n, dtype=np.int32)
            tmp = np.empty(n, dtype=np.int32)
            for c in range(m):
                for i in range(n):
                    v[i] = R[c, rows[i]]
                inv = 0
                for lo in range(0, n, 8):  # insertion sort of blocks of 8: one inversion per shift
                    hi = min(lo + 8, n)
                    for i in range(lo + 1, hi):
                        x = v[i]
                        j = i - 1
                        while j >= lo and v[j] > x:
                            v[j + 1] = v[j]
                            j -= 1
                        inv += i - 1 - j
                        v[j + 1] = x
                width = 8
                while width < n:
                    lo = 0
                    while lo < n:
                        mid = min(lo + width, n)
                        hi = min(lo + 2 * width, n)
                        i, j, k = lo, mid, lo
                        while i < mid and j < hi:  # branch-free merge step
                            a, b = v[i], v[j]
                            right = b < a  # b jumps over the mid - i elements of the left run
                            tmp[k] = b if right else a
                            inv += (mid - i) if right else 0
                            j += right
                            i += 1 - right
                            k += 1
                        while i < mid:
                            tmp[k] = v[i]
                            i += 1
                            k += 1
                        while j < hi:
                            tmp[k] = v[j]
                            j += 1
                            k += 1
                        lo += 2 * width
                    v, tmp = tmp, v
                    width *= 2
                out[c] = inv

        _KERNEL = kernel
    return _KERNEL


def count_inversions(R: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Number of pairs i < l with ``R[c, rows[i]] > R[c, rows[l]]``, for every row c of R.

    A bottom-up merge sort per row (Knight 1966), compiled with numba: O(m n log n) work and
    O(n) extra memory.

    Parameters
    ----------
    R : ndarray of shape (m, n), int32
        Each row a permutation of 0..n-1 (strict ranks).
    rows : ndarray of shape (n,), integer
        The order in which each row is read (a's order).

    Returns
    -------
    ndarray of shape (m,), int64
    """
    R = np.ascontiguousarray(R, dtype=np.int32)
    out = np.zeros(R.shape[0], dtype=np.int64)
    if R.shape[0]:
        _inversions_kernel()(R, np.ascontiguousarray(rows, dtype=np.int64), out)
    return out


@dataclass(frozen=True, eq=False)
class KendallRanks:
    """Strict ranks of every column, both tie-breaks, for :func:`concordance`.

    Attributes
    ----------
    up : ndarray of shape (p, n), int32
        Ranks with ties broken by row index ascending.
    down : ndarray of shape (p, n), int32
        Ranks with ties broken by row index descending (equal to ``up`` on a column without ties).
    tied : ndarray of shape (p,), bool
        Columns with at least one tie.
    """

    up: np.ndarray
    down: np.ndarray
    tied: np.ndarray


def kendall_ranks(Z) -> KendallRanks:
    """:class:`KendallRanks` of the columns of ``Z`` (n, p): the epsilon-independent work."""
    Z = np.asarray(Z, dtype=np.float64)
    up = strict_ranks(Z)
    down = strict_ranks(Z, descending_ties=True)
    return KendallRanks(up, down, np.any(up != down, axis=1))


def concordance(a_up: np.ndarray, a_down: np.ndarray, ranks: KendallRanks) -> np.ndarray:
    """``K(a, b)`` of one column a against every column b of ``ranks`` (ties scored 0).

    Parameters
    ----------
    a_up, a_down : ndarray of shape (n,), int
        Strict ranks of a, ties broken ascending / descending (equal if a has no ties).
    ranks : KendallRanks
        Of the columns b, shape (p, n).

    Returns
    -------
    ndarray of shape (p,), float64
        ``sum_{i<l} sgn(a_i - a_l) sgn(b_i - b_l)``; divide by ``n - 1`` for DPKendall's
        ``(n / 2) tau_a``.
    """
    n = a_up.size
    pairs = n * (n - 1) // 2
    a_orders = [a_up] if np.array_equal(a_up, a_down) else [a_up, a_down]
    tied = np.flatnonzero(ranks.tied)
    total = np.zeros(ranks.up.shape[0])
    for ra in a_orders:
        rows = np.argsort(ra)  # the rows in a's order
        d_up = count_inversions(ranks.up, rows).astype(np.float64)
        d_down = d_up.copy()
        if tied.size:
            d_down[tied] = count_inversions(ranks.down[tied], rows)
        total += (pairs - 2 * d_up + pairs - 2 * d_down) / 2
    return total / len(a_orders)
