"""What a branch-and-bound search keeps: the canonical optimum or every support below a threshold.

:meth:`~dpbench.core.oracle.branch_and_bound.BranchAndBound._bnb_search` asks its target two
things: the bar (a node whose valid lower bound reaches it is closed) and what to do with a
scored support (``offer``). :class:`_BestTarget` keeps the canonical optimum (ties within
:func:`~dpbench.core.oracle.limits.tie_bar`); :class:`_BelowTarget` keeps every support below a
threshold tau, or only the ``rank`` best of them.
"""

from __future__ import annotations

import copy

import numpy as np

from dpbench.core.oracle.limits import tie_bar
from dpbench.core.oracle.threshold import rank_threshold


class _BestTarget:
    """Branch-and-bound target of an optimum call: the canonical optimum (see :data:`TIE_RTOL`).

    Keeps every offered, non-excluded support whose score is within :func:`tie_bar` of the
    smallest score seen, and closes a node only when its bound reaches ``tie_bar`` of that
    minimum: the search is exact (no gap), and the incumbent is the lexicographically
    smallest support among the ties, whatever order the nodes were visited in.
    """

    def __init__(self, S_inc, ub, gap_tol, excl):
        self.excl = excl
        self.ties: dict[tuple, float] = {}
        self.S, self.ub, self.vmin = None, np.inf, np.inf
        if S_inc is not None:
            self.offer(np.asarray(S_inc)[None], np.array([ub]))

    def bar(self):
        if self.S is None:
            return np.inf
        return tie_bar(self.vmin) + 1e-15 * max(1.0, abs(self.vmin))

    def incumbent(self):
        return self.S

    def stop(self):
        return False

    def offer(self, S, vals):
        vals = np.asarray(vals, dtype=np.float64)
        if not vals.size:
            return
        lim = tie_bar(self.vmin)
        near = np.flatnonzero(vals <= lim)  # sorting only these: a leaf offers up to 131 072 values
        for i in near[np.argsort(vals[near], kind="stable")]:  # visits at most |excluded| + |ties| rows
            if vals[i] > lim:
                break
            key = tuple(sorted(S[i].tolist()))
            if self.excl and key in self.excl:
                continue
            lim = min(lim, tie_bar(float(vals[i])))
            self.ties[key] = float(vals[i])
        if not self.ties:
            return
        self.vmin = min(self.ties.values())
        keep = tie_bar(self.vmin)
        self.ties = {k: v for k, v in self.ties.items() if v <= keep}
        key = min(self.ties)
        self.S, self.ub = np.array(key, dtype=np.int64), self.ties[key]

    def part(self):
        """A copy for one part of a split search (:mod:`~dpbench.core.oracle.split`): the same
        incumbent and ties (merging them back is harmless: ties are keyed by support)."""
        return copy.deepcopy(self)

    def merge(self, other):
        """Take in the ties of ``other``, the target of another part of the same search
        (:meth:`part`): the canonical optimum of both."""
        if other.ties:
            keys = list(other.ties)
            self.offer(np.array(keys, dtype=np.int64), np.array([other.ties[k] for k in keys]))


#: Relative rounding margin of threshold enumerations: a node is closed only when its bound
#: exceeds tau by this much, far above the float64 error of the bounds and of the scores
#: assembled from cached Gram rows (both ~1e-13 relative), so no support <= tau is lost.
THRESHOLD_MARGIN = 1e-9


class _BelowTarget:
    """Branch-and-bound target of :meth:`OASession.supports_below`: every support <= tau.

    Keeps the offered supports with value below the bar ``tau + margin``; with ``rank``,
    tau is lowered to the rank-th smallest of ``known`` and the values found so far (see
    :meth:`dpbench.api.OracleSession.supports_below`). ``above`` is the smallest value of
    any offered, non-excluded support that was not kept (part of the bound on the rest).
    """

    def __init__(self, tau, rank, known, excl, max_count, s):
        known = np.asarray(known, dtype=np.float64).ravel()
        self.tau = rank_threshold(tau, rank, known)
        self.rank, self.excl, self.max_count = rank, excl, max_count
        self.pool = known[known <= self.tau] if rank is not None else known[:0]
        self.S, self.v = [np.zeros((0, s), dtype=np.int64)], [np.zeros(0)]
        self.count = 0
        self.above = np.inf
        self.full = False

    def bar(self):
        return self.tau + THRESHOLD_MARGIN * max(1.0, abs(self.tau))

    def incumbent(self):
        return None

    def stop(self):
        return self.full

    def offer(self, S, vals):
        if self.excl:
            keep = np.array([tuple(r) not in self.excl for r in np.sort(S, axis=1).tolist()], dtype=bool)
            S, vals = S[keep], vals[keep]
        ok = vals < self.bar()
        if (~ok).any():
            self.above = min(self.above, float(vals[~ok].min()))
        if not ok.any():
            return
        S, vals = S[ok], vals[ok]
        self.S.append(np.sort(S, axis=1))
        self.v.append(np.asarray(vals, dtype=np.float64))
        self.count += len(vals)
        if self.rank is not None:
            self.pool = np.concatenate([self.pool, vals])
            if self.pool.size >= self.rank:
                tau = float(np.partition(self.pool, self.rank - 1)[self.rank - 1])
                if tau < self.tau:
                    self.tau = tau
                    self.pool = self.pool[self.pool <= self.bar()]
            if self.count > 2 * self.rank + 100_000:
                self._trim()
        if self.count > self.max_count:
            self._trim()
            self.full = self.count > self.max_count

    def part(self):
        """A copy for one part of a split search (:mod:`~dpbench.core.oracle.split`) that keeps
        only what the part finds: the same tau, rank pool and count, none of the supports kept so
        far (they stay here, and :meth:`merge` would otherwise add them once per part, each
        duplicate also counting towards ``rank``)."""
        out = copy.deepcopy(self)
        out.S, out.v = [self.S[0][:0]], [self.v[0][:0]]
        return out

    def merge(self, other):
        """Take in what ``other`` (a :meth:`part` of this target) found: its supports are offered
        here (with ``rank``, tau falls to the rank-th smallest of everything found), and its
        ``above`` and ``full`` carry over."""
        self.above = min(self.above, other.above)
        S, v = other.result()
        if len(v):
            self.offer(S, v)
        self.full = self.full or other.full

    def _trim(self):
        S, v = self.result()
        ok = v < self.bar()
        if (~ok).any():
            self.above = min(self.above, float(v[~ok].min()))
        self.S, self.v, self.count = [S[ok]], [v[ok]], int(ok.sum())

    def result(self):
        """(supports (m, s), values (m,)) kept so far."""
        if len(self.S) > 1:
            self.S, self.v = [np.concatenate(self.S)], [np.concatenate(self.v)]
        return self.S[0], self.v[0]
