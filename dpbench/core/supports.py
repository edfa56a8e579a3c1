"""Supports as combinations: counting, streaming enumeration and uniform sampling.

Everything here works for C(p, s) far beyond memory (C(10000, 5) is about 8e17): counts
are Python integers or log-binomials, enumeration streams fixed-size chunks.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from scipy.special import gammaln

# Size of the precomputed table of suffix combinations used by iter_supports.
_SUFFIX_TABLE = 400_000


def n_supports(p: int, s: int) -> int:
    """Exact number of supports, C(p, s), as a Python integer."""
    return math.comb(p, s)


def log_binom(n, k):
    """log C(n, k) via log-gamma, elementwise; exact enough for n up to 1e15.

    Returns ``-inf`` where ``k < 0`` or ``k > n`` (an empty group has log-size -inf).
    """
    n = np.asarray(n, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    valid = (k >= 0) & (k <= n)
    kk = np.where(valid, k, 0.0)
    out = gammaln(n + 1) - gammaln(kk + 1) - gammaln(n - kk + 1)
    out = np.where(valid, out, -np.inf)
    return out if out.ndim else float(out)


def _combinations_array(p: int, k: int) -> np.ndarray:
    """All k-combinations of range(p) in lexicographic order, shape (C(p, k), k).

    Built column by column with numpy (each (j-1)-combination followed by every admissible
    next element), which keeps lexicographic order without a Python loop per row.
    """
    if k == 0:
        return np.zeros((1, 0), dtype=np.int64)
    if k > p:
        return np.zeros((0, k), dtype=np.int64)
    # column j (0-based) ranges up to p - k + j so that the row can still be completed
    cur = np.arange(p - k + 1, dtype=np.int64)[:, None]
    for j in range(1, k):
        last = cur[:, -1]
        cnt = (p - k + j) - last
        rows = np.repeat(np.arange(len(cur)), cnt)
        offs = np.arange(len(rows)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        nxt = np.empty((len(rows), j + 1), dtype=np.int64)
        nxt[:, :j] = cur[rows]
        nxt[:, j] = last[rows] + 1 + offs
        cur = nxt
    return cur


def iter_supports(p: int, s: int, chunk_size: int = 200_000):
    """Stream all C(p, s) supports in lexicographic order, in chunks.

    Parameters
    ----------
    p, s : int
        Number of features and sparsity level (``1 <= s <= p``).
    chunk_size : int
        Number of supports per chunk; memory is O(chunk_size * s), independent of C(p, s).

    Yields
    ------
    ndarray of shape (m, s), int64
        Consecutive blocks of supports, each row sorted ascending; every block but the last
        has exactly ``m = chunk_size`` rows. Each block is a new array (consumers may keep it).

    Notes
    -----
    The last ``k`` indices of a support range over a lexicographically sorted table of
    k-combinations; those whose first element exceeds the prefix's last index form a
    contiguous tail of that table, so each prefix contributes one slice copied straight
    into the output block (no Python loop per support, no concatenation).
    """
    if s == 0:
        yield np.zeros((1, 0), dtype=np.int64)
        return
    if s > p:
        return
    k = s
    while k > 1 and math.comb(p, k) > _SUFFIX_TABLE:
        k -= 1
    h = s - k
    table = _combinations_array(p, k)
    n_tab = len(table)
    # start[m] = first row of the table whose first element is >= m
    start = np.searchsorted(table[:, 0], np.arange(p + 1), side="left").tolist()
    chunk = max(1, int(chunk_size))
    out = np.empty((min(chunk, math.comb(p, s)), s), dtype=np.int64)
    pos = 0
    for prefix in itertools.combinations(range(p), h):
        lo = start[prefix[-1] + 1] if h else 0
        while lo < n_tab:
            m = min(n_tab - lo, chunk - pos)
            if h:
                out[pos : pos + m, :h] = prefix
            out[pos : pos + m, h:] = table[lo : lo + m]
            pos += m
            lo += m
            if pos == chunk:
                yield out
                out = np.empty((chunk, s), dtype=np.int64)
                pos = 0
    if pos:
        yield out[:pos]


def uniform_supports(rng: np.random.Generator, p: int, s: int, size: int) -> np.ndarray:
    """Draw ``size`` supports independently and uniformly from all C(p, s).

    Each row is s distinct indices drawn without replacement (sorted). Rows with a
    repeated index are redrawn, which keeps the distribution exactly uniform and costs
    O(size * s) when s is much smaller than p; for s close to p a permutation is used.

    Returns
    -------
    ndarray of shape (size, s), int64
    """
    if 2 * s > p:
        keys = rng.random((size, p))
        return np.sort(np.argpartition(keys, s - 1, axis=1)[:, :s], axis=1).astype(np.int64)
    out = np.empty((size, s), dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        cand = np.sort(rng.integers(0, p, size=(todo.size, s)), axis=1)
        distinct = np.all(np.diff(cand, axis=1) > 0, axis=1) if s > 1 else np.ones(todo.size, bool)
        out[todo[distinct]] = cand[distinct]
        todo = todo[~distinct]
    return out


def support_keys(supports) -> np.ndarray:
    """Map supports (B, s) to hashable byte keys (one ``bytes`` per row) for set lookups."""
    S = np.ascontiguousarray(np.asarray(supports, dtype=np.int64))
    return S.view(np.dtype((np.void, S.dtype.itemsize * S.shape[1]))).ravel()


def single_swaps(support, p: int) -> np.ndarray:
    """All (p - s) * s supports that differ from ``support`` in exactly one index.

    Row order: for each position i of the sorted support (outer) and each non-member j in
    increasing order (inner), the support with ``support[i]`` replaced by j, re-sorted.

    Returns
    -------
    ndarray of shape ((p - s) * s, s), int64
    """
    S = np.asarray(support, dtype=np.int64)
    s = S.size
    out_mask = np.ones(p, dtype=bool)
    out_mask[S] = False
    outside = np.flatnonzero(out_mask)
    rows = np.repeat(S[None, :], s * outside.size, axis=0)
    pos = np.repeat(np.arange(s), outside.size)
    rows[np.arange(rows.shape[0]), pos] = np.tile(outside, s)
    return np.sort(rows, axis=1)


def support_ids(supports, p: int) -> np.ndarray:
    """Unique int64 id of each support: its colexicographic rank sum_i C(S_i, i + 1).

    The combinatorial number system is a bijection between s-subsets of range(p) and
    0 .. C(p, s) - 1, so ids can be compared with ``np.isin`` for no-good lists and the
    rejection step of top-R. Needs C(p, s) < 2**63.

    Parameters
    ----------
    supports : array_like of shape (B, s) or (s,)
        Sorted supports.
    p : int

    Returns
    -------
    ndarray of shape (B,), int64
    """
    S = np.asarray(supports, dtype=np.int64)
    if S.ndim == 1:
        S = S[None, :]
    s = S.shape[1]
    if math.comb(p, s) >= 2**63:
        raise OverflowError(f"C({p}, {s}) does not fit in int64; support ids unavailable")
    return _colex_table(p, s)[S, np.arange(s)].sum(axis=1)


@functools.lru_cache(maxsize=16)
def _colex_table(p: int, s: int) -> np.ndarray:
    """Read-only (p, s) table of C(v, i + 1) for support_ids (cached: MCMC calls it per step)."""
    table = np.array([[math.comb(v, i + 1) for i in range(s)] for v in range(p)], dtype=np.int64)
    table.setflags(write=False)
    return table


def unrank_support(rank: int, p: int, s: int) -> np.ndarray:
    """The support at position ``rank`` (0-based) of the lexicographic order of iter_supports."""
    if not 0 <= rank < math.comb(p, s):
        raise IndexError(f"rank {rank} outside 0..C({p},{s})-1")
    out, x = [], 0
    for i in range(s, 0, -1):
        while True:
            c = math.comb(p - x - 1, i - 1)  # supports whose next element is x
            if rank < c:
                out.append(x)
                x += 1
                break
            rank -= c
            x += 1
    return np.array(out, dtype=np.int64)


def _ids_ok(p, s) -> bool:
    return n_supports(p, s) < 2**63


def support_index(list_supports, p: int):
    """A lookup from support to its position in ``list_supports`` (R, s).

    Returns a function mapping supports (B, s) to positions (B,), -1 for supports not listed.
    Uses colexicographic ids when C(p, s) fits in int64, else a dictionary of row tuples.
    """
    L = np.asarray(list_supports, dtype=np.int64)
    if _ids_ok(p, L.shape[1]):
        ids = support_ids(L, p) if len(L) else np.empty(0, dtype=np.int64)
        order = np.argsort(ids)
        sorted_ids = ids[order]

        def lookup(S):
            q = support_ids(np.asarray(S, dtype=np.int64), p)
            pos = np.searchsorted(sorted_ids, q)
            pos = np.minimum(pos, max(len(sorted_ids) - 1, 0))
            hit = (sorted_ids[pos] == q) if len(sorted_ids) else np.zeros(len(q), bool)
            return np.where(hit, order[pos] if len(order) else -1, -1)
        return lookup
    table = {tuple(row): i for i, row in enumerate(L.tolist())}

    def lookup(S):
        return np.array([table.get(tuple(row), -1) for row in np.asarray(S).tolist()], dtype=np.int64)
    return lookup
