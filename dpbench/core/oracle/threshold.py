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
from dpbench.core.oracle.limits import canonical_minimum, tie_bar

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


#: Most members a root's threshold search in :func:`overlap_by_roots` may list before that root
#: is solved by an optimum call instead (many members within the tie window of the level's
#: best known support: the listing would cost more than the call).
ROOT_LIST_MAX = 10_000


def overlap_by_roots(session, center, k: int, *, node_limit: int | None = None,
                     incumbent: OracleResult | None = None, beside=None) -> OracleResult | None:
    """The best support with ``|S ∩ center| = k`` as the minimum over its roots.

    The feasible set splits into the C(s, k) disjoint *roots* "K fixed in, center \\ K fixed
    out, s - k more from the rest" (:func:`dpbench.core.oracle.constraints.roots`), one per kept
    subset K of ``center``. Each root is an ordinary call with fixed-in/-out features and no
    overlap constraint, so the session may take its strongest path on it (for
    :class:`~dpbench.core.oracle.session.OASession`: outer approximation with the k-support
    relaxation's root bound and screening, which certifies roots where one joint branch and
    bound over all roots stalls: Khan, Lambda = 10, level t = 4: 1 096 nodes over 5 roots
    against more than 20 000 for the joint search).

    Only the minimum over the roots is wanted, not each root's own minimum. With an
    ``incumbent`` (a feasible support of the level and its score U, e.g. from a short joint
    call), the incumbent's root is solved, and every other root only has to list its members
    with score <= tau = tie_bar(tie_bar(U)) (:meth:`~dpbench.api.OracleSession.supports_below`),
    usually none: a search that closes every node whose bound exceeds tau, where an optimum
    call on that root would have to close every node below the root's own, larger minimum
    (toeplitz n = 200, p = 10 000, level 4: the four other roots' minima lie 1.6-2.4 above
    the level's 25.02, and each optimum call took 33 000-65 000 nodes).

    Parameters
    ----------
    session : OracleSession
    center : int array of shape (s,)
    k : int
        Required overlap, 0 <= k <= s.
    node_limit : int, optional
        Work limit of each root's call (deterministic; None: the session's default).
    incumbent : OracleResult, optional
        A result whose ``support`` (if any) is a member of the level and ``objective`` its score.
    beside : callable, optional
        ``beside(fn, args, here)`` returns ``(here(), [fn(session, *a) for a in args])``, the
        listed roots' calls ``fn`` perhaps on other processes while the incumbent's root is
        solved by ``here`` in this one
        (:func:`dpbench.core.oracle.parallel.map_session_calls`); default: the listed roots
        first, then the solved root, in this process. The listed roots' tau comes from the
        incumbent alone and a listing changes the session's caches only, so the answer, its
        certification and the work count are the same however ``beside`` schedules them, and
        the solved root's cuts stay in ``session`` as in a serial run.

    Returns
    -------
    OracleResult or None
        Support, objective and status as the joint overlap call would give them: certified
        iff every root's call is, ``lower_bound`` the smallest root bound, ``iterations`` the
        sum over the roots (nodes of the threshold searches included). None when the
        canonical tie-break is not decided by the roots alone: two roots hold supports within
        rounding (two :data:`TIE_RTOL` windows) of the minimum, and each root only returns
        its own lexicographically smallest tie; the caller then asks the joint overlap call,
        canonical by construction.

    Notes
    -----
    Exactness of the tie-break. A root's answer is the lexicographically smallest of its
    supports with score <= tie_bar(v_K), v_K its minimum, and has score >= v_K. With v the
    smallest answer over the roots, every root with v_K < v, or with a member tied with the
    level's minimum v*, answers at most tie_bar(tie_bar(v)). When only one root does, the
    level's minimum and all its ties lie in that root (v* = v_K, and tie_bar(v*) <= tie_bar(v_K)),
    so that root's answer is the level's canonical optimum. A root listed up to tau >=
    tie_bar(tie_bar(v)) holds all its members that could be in that window, and its answer
    is the lexicographically smallest of its listed members within tie_bar of their minimum.
    """
    t0 = time.perf_counter()
    center = np.sort(np.asarray(center, dtype=np.int64))
    roots = [np.array(K, dtype=np.int64) for K in itertools.combinations(center.tolist(), int(k))]
    first = None
    if incumbent is not None and incumbent.support is not None and math.isfinite(float(incumbent.objective)):
        K0 = np.intersect1d(center, np.asarray(incumbent.support, dtype=np.int64))
        first = next((i for i, K in enumerate(roots) if np.array_equal(K, K0)), None)
    below = getattr(session, "supports_below", None)  # optional: a session wrapping only ``solve`` lacks it
    # A session that lists by repeated optimum calls (``threshold_by_calls``) would pay at least the
    # root's optimum call anyway: it keeps one call per root.
    if below is None or getattr(session, "threshold_by_calls", False):
        first = None

    # per root, in root order: (supports (m, s), scores (m,), certified, status, lower bound, work)
    if first is None:
        tau = math.inf
        answers = [_root_answer(session, center, K, None, node_limit) for K in roots]
    else:
        tau = float(tie_bar(tie_bar(float(incumbent.objective))))
        others = [K for i, K in enumerate(roots) if i != first]
        args = [(center, K, tau, node_limit) for K in others]
        head = lambda: _root_answer(session, center, roots[first], None, node_limit)  # noqa: E731
        if beside is None:
            listed = [_root_answer(session, *a) for a in args]
            solved = head()
        else:
            solved, listed = beside(_root_answer, args, head)
        # a root with too many members near U gets its optimum call here, where its cuts stay
        listed = [_root_answer(session, center, K, None, node_limit, a) if isinstance(a, int) else a
                  for K, a in zip(others, listed)]
        answers = listed[:first] + [solved] + listed[first:]
    iters = int(sum(a[5] for a in answers))
    lower = float(min((a[4] for a in answers), default=math.inf))
    certified = all(a[2] for a in answers)
    # a root stopped by the wall-clock safety net or an error speaks for the level: its answer
    # depends on the machine, not only on the data (work_limit and suboptimal are deterministic)
    bad = sorted((a[3] for a in answers if not a[2]), key=lambda st: st in ("work_limit", "suboptimal"))
    status = "optimal" if certified else (bad[0] if bad else "error")
    how = "" if first is None or len(roots) < 2 else f", {len(roots) - 1} of them listed below {tau:.6g}"
    msg = f"minimum over {len(answers)} roots (kept subsets of the center){how}, {iters} iterations/nodes"
    found = [a for a in answers if len(a[1])]
    if not found:
        return OracleResult(None, math.inf, lower, "infeasible" if certified else status, iters,
                            time.perf_counter() - t0, msg)
    v = min(float(a[1].min()) for a in found)
    window = [a for a in found if float(a[1].min()) <= tie_bar(tie_bar(v))]
    if len(window) > 1 and certified:
        return None
    best = min(found, key=lambda a: float(a[1].min()))
    support, objective = canonical_minimum(best[0], best[1])
    return OracleResult(np.sort(support), objective, min(lower, objective), status, iters,
                        time.perf_counter() - t0, msg)


def _root_answer(session, center, K, tau, node_limit, extra_work=0):
    """One root of :func:`overlap_by_roots`: its optimum call (``tau`` None), or its members listed
    below ``tau``, as (supports (m, s), scores (m,), certified, status, lower bound, work); a
    listing that would hold more than :data:`ROOT_LIST_MAX` members gives its work count (int)
    instead, for the caller to make the root's optimum call (cheaper then) in its own process."""
    kw = {} if node_limit is None else {"node_limit": int(node_limit)}
    out = np.setdiff1d(center, K)
    if tau is None:
        return _root_by_call(session.solve(fixed_in=K, fixed_out=out, **kw), extra_work)
    res = session.supports_below(tau, fixed_in=K, fixed_out=out, max_count=ROOT_LIST_MAX, **kw)
    if res.status == "max_count":
        return int(res.nodes)
    sc = np.asarray(res.scores, dtype=np.float64)
    lower = min(float(res.lower_bound), float(sc.min(initial=math.inf)))
    status = "optimal" if res.certified else (res.status if res.status in ("work_limit", "time_limit") else "error")
    return (np.asarray(res.supports, dtype=np.int64).reshape(-1, center.size), sc, bool(res.certified), status,
            lower, int(res.nodes) + int(res.calls))


def _root_by_call(res, extra_work=0):
    """An optimum call's result as a root answer of :func:`overlap_by_roots`."""
    has = res.support is not None
    S = np.sort(np.asarray(res.support, dtype=np.int64))[None] if has else np.zeros((0, 0), dtype=np.int64)
    sc = np.array([float(res.objective)]) if has else np.zeros(0)
    return S, sc, bool(res.certified), str(res.status), float(res.lower_bound), int(res.iterations) + extra_work
