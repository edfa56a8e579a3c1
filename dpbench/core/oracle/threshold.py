"""Threshold enumeration by repeated oracle calls, overlap optima by their roots, and the
ordering of support lists.

:func:`supports_below_by_calls` is the reference implementation of
:meth:`dpbench.api.OracleSession.supports_below`; backends without a direct enumeration
inherit it through :class:`ThresholdByCalls`. :func:`overlap_by_roots` answers an overlap
call ``|S ∩ S0| = k`` with one unconstrained call per kept subset of S0.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from dpbench.core.contracts.oracle import OracleResult, ThresholdResult
from dpbench.core.oracle.limits import tie_bar

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
    """Mixin giving an :class:`~dpbench.api.OracleSession` the call-based ``supports_below``.

    Put it before ``OracleSession`` in the bases of a backend session that has no direct
    enumeration of the supports below a threshold.
    """

    #: Capability flag: ``supports_below`` costs one ``solve`` call per support returned, so
    #: callers budget it in calls (:func:`dpbench.core.toplist.top_list`'s ``max_calls``).
    threshold_by_calls = True

    def supports_below(self, threshold: float, *, overlap=None, exclude=(), fixed_in=(), fixed_out=(),
                       time_limit: float | None = None, max_count: int = 2_000_000, rank: int | None = None,
                       known_scores=(), node_limit: int | None = None) -> ThresholdResult:
        """See :meth:`dpbench.api.OracleSession.supports_below`; answered by :func:`supports_below_by_calls`."""
        return supports_below_by_calls(self, threshold, overlap=overlap, exclude=exclude, fixed_in=fixed_in,
                                       fixed_out=fixed_out, time_limit=time_limit, max_count=max_count,
                                       rank=rank, known_scores=known_scores, node_limit=node_limit)


def overlap_by_roots(session, center, k: int, *, node_limit: int | None = None) -> OracleResult | None:
    """The best support with ``|S ∩ center| = k`` as the minimum over its roots.

    The feasible set splits into the C(s, k) disjoint *roots* "K fixed in, center \\ K fixed
    out, s - k more from the rest" (:func:`dpbench.core.oracle.constraints.roots`), one per kept
    subset K of ``center``. Each root is an ordinary call with fixed-in/-out features and no
    overlap constraint, so the session may take its strongest path on it (for
    :class:`~dpbench.core.oracle.session.OASession`: outer approximation with the k-support
    relaxation's root bound and screening, which certifies roots where one joint branch and
    bound over all roots stalls: Khan, Lambda = 10, level t = 4: 1 096 nodes over 5 roots
    against more than 20 000 for the joint search).

    Parameters
    ----------
    session : OracleSession
    center : int array of shape (s,)
    k : int
        Required overlap, 0 <= k <= s.
    node_limit : int, optional
        Work limit of each root's call (deterministic; None: the session's default).

    Returns
    -------
    OracleResult or None
        Support, objective and status as the joint overlap call would give them: certified
        iff every root's call is, ``lower_bound`` the smallest root bound, ``iterations`` the
        sum over the roots. None when the canonical tie-break is not decided by the roots
        alone: two roots hold supports within rounding (two :data:`TIE_RTOL` windows) of the
        minimum, and each root only returns its own lexicographically smallest tie; the
        caller then asks the joint overlap call, canonical by construction.

    Notes
    -----
    Exactness of the tie-break. A root's answer is the lexicographically smallest of its
    supports with score <= tie_bar(v_K), v_K its minimum, and has score >= v_K. With v the
    smallest answer over the roots, every root with v_K < v, or with a member tied with the
    level's minimum v*, answers at most tie_bar(tie_bar(v)). When only one root does, the
    level's minimum and all its ties lie in that root (v* = v_K, and tie_bar(v*) <= tie_bar(v_K)),
    so that root's answer is the level's canonical optimum.
    """
    t0 = time.perf_counter()
    center = np.sort(np.asarray(center, dtype=np.int64))
    kw = {} if node_limit is None else {"node_limit": int(node_limit)}
    answers = []
    for K in itertools.combinations(center.tolist(), int(k)):
        K = np.array(K, dtype=np.int64)
        answers.append(session.solve(fixed_in=K, fixed_out=np.setdiff1d(center, K), **kw))
    iters = int(sum(r.iterations for r in answers))
    lower = float(min((r.lower_bound for r in answers), default=math.inf))
    certified = all(r.certified for r in answers)
    # a root stopped by the wall-clock safety net or an error speaks for the level: its answer
    # depends on the machine, not only on the data (work_limit and suboptimal are deterministic)
    bad = sorted((r.status for r in answers if not r.certified), key=lambda st: st in ("work_limit", "suboptimal"))
    status = "optimal" if certified else (bad[0] if bad else "error")
    found = [r for r in answers if r.support is not None]
    msg = f"minimum over {len(answers)} roots (kept subsets of the center), {iters} iterations/nodes"
    if not found:
        return OracleResult(None, math.inf, lower, "infeasible" if certified else status, iters,
                            time.perf_counter() - t0, msg)
    v = min(float(r.objective) for r in found)
    window = [r for r in found if float(r.objective) <= tie_bar(tie_bar(v))]
    if len(window) > 1 and certified:
        return None
    best = min(found, key=lambda r: float(r.objective))
    return OracleResult(np.sort(np.asarray(best.support, dtype=np.int64)), float(best.objective),
                        min(lower, float(best.objective)), status, iters, time.perf_counter() - t0, msg)
