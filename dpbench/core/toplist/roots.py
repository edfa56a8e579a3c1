"""The seeded bar and the per-root threshold enumeration of a swap level (docs/methods/topr.md).

Two refinements that keep the threshold enumerations of the top-R list
(:mod:`dpbench.core.toplist.toplist`) small (issue 15, Khan at Lambda = 10, where levels 4 and 5
hold 1.2e12 and 5.4e14 supports):

* a *seeded bar* (:func:`seed_bar`): every level is scored in closed form on the features of
  the best single swaps only (a deterministic budget of supports per level); the R-th smallest
  score among these distinct supports, S1 and the single swaps is an upper bound U on the
  final R-th score, so every enumeration starts at U (on Khan: 4.304 where the merge's own
  bar started near the worst single swap, 4.547);
* a *per-root* threshold enumeration (:func:`threshold_by_roots`): a level's feasible set is
  the disjoint union of its roots (kept subset K of S1 fixed in, the rest of S1 fixed out),
  each enumerated by its own call with its own work limit, on up to ``workers`` processes.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dpbench.core.contracts.oracle import ThresholdResult
from dpbench.core.oracle.limits import tie_bar
from dpbench.core.oracle.threshold import rank_threshold, supports_below_by_calls
from dpbench.core.toplist.levels import (SEED_SUPPORTS, THRESHOLD_MAX_COUNT, _level_chunks, lex_order, max_level,
                                          seeded_pool)
from dpbench.core.oracle.parallel import map_session_calls

#: Nodes of a root's first threshold search when stalled roots with few members may switch to
#: optimum calls (:func:`threshold_by_roots` with ``few_by_calls > 0``; the merge no longer asks).
ROOT_FIRST_NODES = 1_000



def seed_bar(trial, singles, R: int, per_level: int | None = None, level_best: dict | None = None):
    """An upper bound U on the final R-th score from cheap, distinct candidate supports.

    Candidates: S1, all single swaps and, for each level t >= 2, the members whose t added
    features come from the pool of the M outside features with the best single swaps (M as
    large as ``per_level`` supports allow; the whole level when it fits). They are distinct
    supports with exact scores (the shared score), so their R-th smallest score is >= the
    R-th smallest over all supports: a valid bar for every threshold enumeration.

    Parameters
    ----------
    trial, singles
        As for :func:`~dpbench.core.toplist.levels.seeded_pool`.
    R : int
    per_level : int, optional
        Supports scored per level (default :data:`SEED_SUPPORTS`).
    level_best : dict, optional
        Filled with ``{t: smallest seeded score of level t}`` (an upper bound on R_t) for the
        levels with a seeded pool.

    Returns
    -------
    U : float
        The R-th smallest candidate score widened by the tie window (:func:`tie_bar`, relative
        1e-9, far above batch-to-batch rounding); inf when fewer than R candidates.
    scored : int
        Supports scored for the levels t >= 2 (work count, deterministic).
    """

    per_level = SEED_SUPPORTS if per_level is None else int(per_level)
    p, s, center = trial.p, trial.s, singles.center
    vals = np.concatenate([[singles.center_score], singles.scores])
    scored = 0
    for t in range(2, max_level(p, s) + 1):
        pool = seeded_pool(trial, singles, t, per_level)
        if pool is None:
            continue
        for _, sc in _level_chunks(trial, center, t, pool):
            scored += len(sc)
            if level_best is not None and len(sc):
                level_best[t] = min(level_best.get(t, math.inf), float(sc.min()))
            vals = np.concatenate([vals, sc])
            if vals.size > 4 * R:
                vals = np.partition(vals, R - 1)[:R]
    if vals.size < R:
        return math.inf, scored
    # Widened by the tie window: a support's score differs in the last bits between batches
    # (here and in a later rescoring), and a bar 1 ulp too low would lose the R-th support.
    return float(tie_bar(float(np.partition(vals, R - 1)[R - 1]))), scored


def threshold_by_roots(session, center, t: int, threshold: float, *, exclude=(), rank: int | None = None,
                       known_scores=(), node_limit: int | None = None,
                       max_count: int = THRESHOLD_MAX_COUNT, few_by_calls: int = 0, workers: int = 1) -> ThresholdResult:
    """Every member of swap level t (``|S ∩ center| = s - t``) with score <= tau, root by root.

    The level is the disjoint union of its C(s, s - t) roots (kept subset K of ``center``
    fixed in, ``center \\ K`` fixed out, t features from the rest). Each root is one
    :meth:`~dpbench.api.OracleSession.supports_below` call with its own ``node_limit``, all
    with the same start: tau = ``threshold`` and the same ``known_scores``; with ``rank``, each
    call lowers its own tau with the R-th smallest of these and its members. Since no root's
    call depends on another's, they may run on ``workers`` processes
    (:func:`~dpbench.core.oracle.parallel.map_session_calls`) with results, node counts and
    certification independent of ``workers``; the union is then cut at the smallest of the
    roots' taus and the R-th smallest of ``known_scores`` and all members found (each a valid
    upper bound on the R-th score of the whole list).

    Parameters
    ----------
    session : OracleSession
    center : int array of shape (s,)
    t : int
        Level, 1 <= t <= s.
    threshold : float
    exclude : sequence of supports
        Members not to return (already taken); each lies in exactly one root.
    rank, known_scores, node_limit
        As for :meth:`~dpbench.api.OracleSession.supports_below`.
    max_count : int
        Most supports a root may hold, and in all (more: uncertified, status "max_count").
    few_by_calls : int
        When > 0, each root's threshold search first gets at most :data:`ROOT_FIRST_NODES`
        nodes; a root it leaves uncertified with at most ``few_by_calls`` members found is
        redone by :func:`~dpbench.core.oracle.threshold.supports_below_by_calls` (one optimum call
        per member, ``node_limit`` each, at most ``4 few_by_calls`` members, else the threshold
        search after all), any other by the threshold search with ``node_limit``. (Before the
        threshold search screened its roots as an optimum call does, Khan, Lambda = 10, level 5
        kept a rest bound of 3.61 against tau = 4.28 after 60 000 nodes while each optimum call
        certified in 540-700 nodes.)
    workers : int
        Processes for the roots (1: in this process).

    Returns
    -------
    ThresholdResult
        The union over roots, filtered to the final tau; certified iff every root's call is;
        ``lower_bound`` the smallest root bound (and the smallest member dropped by the final
        tau); ``nodes`` and ``calls`` summed.
    """
    center = np.sort(np.asarray(center, dtype=np.int64))
    s = center.size
    ex = np.asarray(exclude, dtype=np.int64).reshape(-1, s)
    known = np.asarray(known_scores, dtype=np.float64).ravel()
    args = []
    for K in itertools.combinations(center.tolist(), s - t):
        K = np.array(K, dtype=np.int64)
        mine = ex[np.isin(ex, K).sum(axis=1) == K.size] if len(ex) else ex
        kw = dict(fixed_in=K, fixed_out=np.setdiff1d(center, K), exclude=list(mine), rank=rank, known_scores=known)
        args.append((float(threshold), kw, node_limit, int(max_count), int(few_by_calls)))
    results = map_session_calls(session, _search_root, args, workers)
    tau, lower, certified, status, msg = float(threshold), math.inf, True, "complete", ""
    nodes = calls = 0
    seconds = 0.0
    for res, (n_extra, c_extra, sec_extra) in results:
        calls += int(res.calls) + c_extra
        nodes += int(res.nodes) + n_extra
        seconds += float(res.seconds) + sec_extra
        tau = min(tau, float(res.threshold))
        lower = min(lower, float(res.lower_bound))
        if not res.certified:
            certified = False
            if status == "complete":
                status, msg = res.status, res.message
    S = np.concatenate([np.zeros((0, s), dtype=np.int64)] + [r.supports for r, _ in results])
    sc = np.concatenate([np.zeros(0)] + [np.asarray(r.scores, dtype=np.float64) for r, _ in results])
    # the roots' members are distinct supports outside known_scores: the pooled rank bound holds
    tau = rank_threshold(tau, rank, known, sc)
    keep = sc <= tau
    if (~keep).any():  # found under a root's higher tau: not returned, so they bound the rest
        lower = min(lower, float(sc[~keep].min()))
    S, sc = S[keep], sc[keep]
    if len(sc) > max_count:
        certified, status, lower = False, "max_count", -math.inf
        msg = f"more than max_count = {max_count} supports"
    order = lex_order(sc, S)
    msg = msg or f"threshold enumeration over {math.comb(s, s - t)} roots, {nodes} nodes"
    return ThresholdResult(S[order], sc[order], certified, float(lower), float(tau), status, calls, nodes, seconds, msg)


def _search_root(session, tau, kw, node_limit, max_count, few_by_calls):
    first = node_limit if node_limit is None or not few_by_calls else min(int(node_limit), ROOT_FIRST_NODES)
    res = session.supports_below(tau, node_limit=first, max_count=max_count, **kw)
    if not res.certified and res.status == "work_limit" and first != node_limit:
        # The first, short search stalled: its nodes are counted, not reused.
        extra = (int(res.nodes), 0, float(res.seconds))
        if len(res.scores) <= few_by_calls:
            # Few members: list them one optimum call at a time (each takes the session's strongest
            # path on its root), the last call proving the rest above tau.
            res = supports_below_by_calls(session, tau, max_count=min(max_count, 4 * few_by_calls),
                                          node_limit=node_limit, **kw)
            if res.status == "max_count" and max_count > 4 * few_by_calls:  # more members than it looked
                extra = (extra[0], int(res.calls), extra[2] + float(res.seconds))
                res = session.supports_below(tau, node_limit=node_limit, max_count=max_count, **kw)
        else:
            res = session.supports_below(tau, node_limit=node_limit, max_count=max_count, **kw)
        return res, extra
    return res, (0, 0, 0.0)
