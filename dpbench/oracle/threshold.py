"""Threshold enumeration by repeated oracle calls, and the ordering of support lists.

Layer 4 (oracle). :func:`supports_below_by_calls` is the reference implementation of
:meth:`dpbench.base.OracleSession.supports_below`; backends without a direct enumeration
inherit it through :class:`ThresholdByCalls`.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..base import ThresholdResult

def rank_threshold(threshold: float, rank: int | None, *score_arrays) -> float:
    """``min(threshold, rank-th smallest value among score_arrays)`` (threshold if fewer values).

    Parameters
    ----------
    threshold : float
    rank : int or None
        None: return ``threshold`` unchanged.
    score_arrays : 1-d arrays of scores of distinct supports.
    """
    if rank is None:
        return float(threshold)
    vals = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in score_arrays]) if score_arrays \
        else np.empty(0)
    if rank < 1 or vals.size < rank:
        return float(threshold)
    return float(min(threshold, np.partition(vals, rank - 1)[rank - 1]))


def _order_supports(supports, scores):
    """Indices sorting (supports, scores) by (score, lexicographic support)."""
    S = np.asarray(supports)
    if not len(S):
        return np.zeros(0, dtype=np.int64)
    return np.lexsort([S[:, j] for j in range(S.shape[1] - 1, -1, -1)] + [np.asarray(scores)])


def supports_below_by_calls(session, threshold: float, *, overlap=None, exclude=(), fixed_in=(), fixed_out=(),
                            time_limit: float | None = None, max_count: int = 2_000_000, rank: int | None = None,
                            known_scores=(), node_limit: int | None = None) -> ThresholdResult:
    """:meth:`OracleSession.supports_below` by repeated ``session.solve`` calls with no-good cuts.

    Works with any object that has the ``solve`` method of :class:`OracleSession`. The k-th
    call returns the k-th best feasible support; the loop stops at the first support above
    the (possibly rank-tightened) threshold, whose call's lower bound then bounds every
    support not returned. Exact when every call is certified (within each call's gap
    tolerance: the reported ``lower_bound`` says by how much). One call per returned
    support: meant for small outputs and as the reference implementation.
    """
    t0 = time.perf_counter()
    deadline = t0 + (time_limit if time_limit is not None and math.isfinite(time_limit) else math.inf)
    ex = [np.sort(np.asarray(S, dtype=np.int64)) for S in exclude]
    found_S, found_sc = [], []
    tau = rank_threshold(threshold, rank, known_scores)
    calls, status, lower, certified, msg = 0, "complete", math.inf, True, ""
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            status, certified, msg = "time_limit", False, "time limit reached"
            lower = -math.inf
            break
        kw = {} if node_limit is None else {"node_limit": node_limit}  # sessions without work limits
        res = session.solve(overlap=overlap, exclude=list(ex), fixed_in=fixed_in, fixed_out=fixed_out,
                            time_limit=None if math.isinf(left) else left, **kw)
        calls += 1
        if res.status == "infeasible":
            lower = math.inf  # nothing feasible is left
            break
        if not res.certified:
            status, certified, msg = (res.status if res.status in ("work_limit", "time_limit") else "error"), False, \
                f"an oracle call ended with status {res.status}"
            lower = float(res.lower_bound)
            break
        if res.objective > tau:
            lower = float(res.lower_bound)
            break
        S = np.sort(np.asarray(res.support, dtype=np.int64))
        ex.append(S)
        found_S.append(S)
        found_sc.append(float(res.objective))
        tau = rank_threshold(tau, rank, known_scores, found_sc)
        if len(found_S) > max_count:
            status, certified, msg, lower = "max_count", False, f"more than max_count = {max_count} supports", \
                float(res.lower_bound)
            break
    s = session.s
    S = np.array(found_S, dtype=np.int64).reshape(-1, s)
    sc = np.array(found_sc, dtype=np.float64)
    keep = sc <= tau
    if (~keep).any():  # dropped by the tightened threshold: not returned, so they bound the rest
        lower = min(lower, float(sc[~keep].min()))
    S, sc = S[keep], sc[keep]
    order = _order_supports(S, sc)
    return ThresholdResult(S[order], sc[order], certified, lower, tau, status, calls, 0,
                           time.perf_counter() - t0, msg)



class ThresholdByCalls:
    """Mixin giving an :class:`~dpbench.base.OracleSession` the call-based ``supports_below``.

    Put it before ``OracleSession`` in the bases of a backend session that has no direct
    enumeration of the supports below a threshold.
    """

    #: Capability flag: ``supports_below`` costs one ``solve`` call per support returned, so
    #: callers budget it in calls (:func:`dpbench.toplist.top_list`'s ``max_calls``).
    threshold_by_calls = True

    def supports_below(self, threshold: float, *, overlap=None, exclude=(), fixed_in=(), fixed_out=(),
                       time_limit: float | None = None, max_count: int = 2_000_000, rank: int | None = None,
                       known_scores=(), node_limit: int | None = None) -> ThresholdResult:
        """See :meth:`dpbench.base.OracleSession.supports_below`; answered by :func:`supports_below_by_calls`."""
        return supports_below_by_calls(self, threshold, overlap=overlap, exclude=exclude, fixed_in=fixed_in,
                                       fixed_out=fixed_out, time_limit=time_limit, max_count=max_count,
                                       rank=rank, known_scores=known_scores, node_limit=node_limit)
