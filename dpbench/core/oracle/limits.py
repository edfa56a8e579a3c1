"""Work limits and canonical ties of one oracle call (issue 15: reproducible certification).

Every limit that can stop a search is a deterministic count (branch-and-bound nodes, master
iterations, master MILP nodes): a call that stops, stops at the same point on every machine
(status "work_limit"). The wall clock is only a safety net for runaway calls (status
"time_limit", machine-dependent). Among supports whose scores agree within :data:`TIE_RTOL`
every backend returns the lexicographically smallest (:func:`break_ties`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from dpbench.core.contracts.oracle import OracleResult

#: Deterministic default work limits of one oracle call (counts, never seconds): best-first
#: branch-and-bound nodes, outer-approximation master iterations, and nodes of one master
#: MILP. Above what the shipped configs and tests use (p = 10 000, n = 200 took ~2e4 nodes; the
#: real data sets at most a few thousand, except gravier at ``standardize``, Lambda = 10: 98 234
#: since session 13 of issue 22, 41 016 since session 19), so they decide nothing there; a call
#: that reaches one stops at the same point on every machine. The node limit also bounds how long
#: an optimum that cannot be certified runs before the trial says so (gravier, before it
#: certified: 5 000 000 nodes would have taken hours, up to the wall-clock safety net; 100 000
#: took minutes).
NODE_LIMIT = 100_000
MASTER_ITERATIONS = 2_000
MASTER_NODE_LIMIT = 1_000_000
#: Nodes of the Schur/Gershgorin branch and bound that an unconstrained OA call tries before
#: its master loop (:meth:`OASession._gershgorin_bnb`). The toeplitz n = 800, p = 10 000,
#: Lambda in {1, 10} instances of issue 15 certify in 3-14 nodes; a call that does not
#: certify within it goes on with the branch and bound over the screened survivors
#: (node relaxations), keeping the bound the search proved.
GERSHGORIN_NODES = 2_000
#: Nodes of one call's branch and bound that solve their own k-support relaxation
#: (:class:`~dpbench.core.oracle.options.OracleOptions` ``relax_nodes``, ``relax_overlap_nodes``);
#: later nodes inherit their parent's dual point. Until issue 22's eighth session this was
#: 2 000, and the long searches then ran almost wholly on inherited bounds, which hardly rise
#: with depth: shipp's level-5 threshold search took 62 817 nodes (75 s) and 10 341 (28 s)
#: with every node relaxed; gravier's optimum stopped at 100 000 nodes with an 8.74 % gap,
#: and with every node relaxed found a better support and a 2.33 % gap. Not unlimited: a
#: search that cannot certify runs to its node limit, and there a relaxed node costs several
#: times an inherited one (the toeplitz n = 200, p = 10 000 trial: 343 s with 2 000, 391 s
#: with 20 000, 474 s with every node; docs/performance.md). Since session 11 this is the budget of
#: overlap calls only (the swap levels, ``relax_overlap_nodes``); calls without an overlap
#: constraint relax every node (:data:`RELAX_EVERY_NODE`).
RELAX_NODES = 20_000
#: ``relax_nodes`` (optimum calls and threshold searches without an overlap constraint): every
#: node. Inherited bounds are what kept gravier's optimum
#: (``standardize``, Lambda = 10) open: with every node relaxed it certifies in 233 407 nodes
#: (155 s; 98 234 since :data:`OPEN_PAIRS`), with 20 000 it stops at 100 000 nodes with a 3.36 %
#: gap. The other shipped optima certify within 2 000 nodes, and the toeplitz n = 200,
#: p = 10 000 trial takes 40 s either way (docs/performance.md, session 11).
RELAX_EVERY_NODE = 1_000_000_000
#: Pairs a branch-and-bound node with two features left scores itself for its open children
#: (``open_pairs``), which otherwise become nodes with one feature left. Such children are cheap
#: nodes that close when popped, yet each counted against the node limit: gravier's optimum
#: (``standardize``, Lambda = 10) took 233 407 nodes, 133 891 of them such children, and with
#: their pairs scored by their parents 98 234, within the default limit (issue 22, session 13).
#: The largest there held about 960 000 pairs; the cap bounds one node's work.
OPEN_PAIRS = 2**20
#: Pairs of a branch-and-bound node with two features left up to which the node is a leaf, its
#: pairs scanned whole by :func:`~dpbench.core.oracle.node_kernels.leaf_pair_scan` from the cached
#: Gram (``pair_leaf_limit``), instead of solving its relaxation and branching. Since the scan finds
#: a row's open pairs from the candidates sorted by cut weight (about 3 ns a pair), a scan of up to
#: a million pairs costs less than the relaxation it replaces: gravier's optimum (``standardize``,
#: Lambda = 10, one process) took 49.8-54.3 s instead of 67.3-73.4 s, with 8 707 relaxations
#: instead of 16 486; 4 million pairs took 61.8 s (issue 22, session 27; docs/performance.md).
PAIR_LEAF = 2**20
#: The largest ``pair_leaf_limit`` accepted: a scan reserves one int64 key per pair of the leaf for
#: the pairs it keeps, so 2^24 pairs bound one leaf's memory at 128 MB (pages touched only as kept).
PAIR_LEAF_MAX = 2**24
#: Open children a branch-and-bound node with at least three features left pushes as nodes of their
#: own before the rest of its candidates become one tail node (``child_batch``; the node pushes
#: max(CHILD_BATCH, ceil(k / TAIL_SHARE)) of its k open children). The tail holds the same
#: supports as the later children, but its own relaxation re-orders and re-screens them from a
#: fresh dual point, where the node's closed-form child bounds keep them open (issue 22,
#: session 19: gravier's optimum, ``standardize``, Lambda = 10, in 41 016 nodes instead of
#: 98 235; docs/performance.md).
CHILD_BATCH = 8
TAIL_SHARE = 4
#: A branch-and-bound search still open after SPLIT_AFTER nodes deals its open nodes into
#: SPLIT_PARTS parts, each finished on its own with an equal share of the nodes left
#: (:mod:`~dpbench.core.oracle.split`), on up to ``workers`` processes. Searches of fewer nodes
#: (most shipped optima) are unchanged; the fork and the parts' separate caches cost far less
#: than 500 nodes. A search's first nodes are its dearest (nearly every one relaxed, over nearly
#: all features), so the sooner they run on both cores the better where the cores are two real
#: ones: gravier's optimum (``standardize``, Lambda = 10) took 6.1 s instead of 6.6 s (median of
#: three, fresh processes, alternating) on an AMD EPYC with two cores, in the same 18 895 nodes;
#: on session 30's Xeon, whose two vCPUs give 1.3 times one's throughput, 500 and 2 000 tied
#: (issue 22, session 31; docs/performance.md).
SPLIT_AFTER = 500
SPLIT_PARTS = 2
#: Most parts a split search is dealt into: each part copies the session's caches and the
#: target, so the count is bounded whatever ``split_parts`` says.
SPLIT_PARTS_MAX = 64
#: MILP nodes of a master solved before the k-support relaxation of a call (a probe over
#: the features the cut screening kept; :class:`~dpbench.core.oracle.session.OASession`). The
#: probes of the issue-15 instances close in a handful of nodes (toeplitz Lambda = 120, Khan
#: Lambda = 120: 0.02-0.06 s); a probe that does not hands over to the relaxation.
FIRST_MASTER_NODES = 1_000
_LIMIT_MESSAGES = {
    "work_limit": lambda what: f"work limit reached ({what}; deterministic: raise it to certify)",
    "time_limit": lambda what: "wall-clock safety net reached (machine-dependent; raise safety_time_limit)",
}


def _with_gap(message, score, lower_bound):
    """``message`` of a stopped optimum call plus how far it got: the best support's score, the
    proven lower bound and their relative gap, so that a user can judge whether raising the
    limit is worth it (a gap that hardly moves with 20x the nodes will not close: gravier,
    docs/performance.md). Unchanged when there is no finite bound."""
    if not (np.isfinite(score) and np.isfinite(lower_bound)):
        return message
    gap = (score - lower_bound) / abs(score) if score else 0.0
    return f"{message}; best score {score:.6g}, proven lower bound {lower_bound:.6g} (gap {100 * gap:.2f} %)"


#: Wall-clock safety net of one call (seconds). Only for runaway calls: a call it stops is
#: reported with status "time_limit" (machine-dependent, unlike "work_limit").
SAFETY_TIME_LIMIT = 3600.0


#: Relative tolerance of canonical ties: supports whose scores are within TIE_RTOL (relative)
#: of the constrained optimum count as tied, and every backend (and enumeration) returns the
#: lexicographically smallest of them. Far above the float64 rounding of the shared score
#: (~1e-13 relative, e.g. exactly duplicated columns) and far below the default gap
#: tolerance (1e-6), so it only merges supports that are equal up to rounding.
TIE_RTOL = 1e-9


def tie_bar(v):
    """The largest score tied with a minimum ``v`` (>= 0): ``v + TIE_RTOL |v|``."""
    return v + TIE_RTOL * abs(v)


def lexmin(supports):
    """The lexicographically smallest row of an (N, s) array of sorted supports."""
    S = np.asarray(supports, dtype=np.int64)
    return S[np.lexsort(S.T[::-1])[0]].copy()


def canonical_minimum(supports, scores):
    """The canonical minimum of scored supports: the lexicographically smallest support among
    those tied (:func:`~dpbench.core.oracle.limits.tie_bar`) with the smallest score, as every
    oracle backend returns it.

    Parameters
    ----------
    supports : ndarray of shape (B, s), int64, rows sorted, B >= 1
    scores : ndarray of shape (B,), float64

    Returns
    -------
    support : ndarray of shape (s,), int64
    score : float
        Its score as given.
    """
    S, sc = np.asarray(supports, dtype=np.int64), np.asarray(scores, dtype=np.float64)
    ok = sc <= tie_bar(float(sc.min()))
    best = lexmin(S[ok])
    return best, float(sc[ok][np.flatnonzero((S[ok] == best).all(axis=1))[0]])


def break_ties(solve, res, *, exclude=(), max_ties=64, **kw):
    """The canonical optimum: the lexicographically smallest support tied (:data:`TIE_RTOL`)
    with a certified optimum ``res``, found by repeated calls with no-good cuts.

    Parameters
    ----------
    solve : callable
        ``solve(exclude=..., gap_tol=..., **kw)`` returning an :class:`OracleResult` *without*
        tie-breaking (else this recurses).
    res : OracleResult
        A certified ("optimal") answer of ``solve(exclude=exclude, **kw)``; anything else is
        returned unchanged.
    max_ties : int
        Most extra calls (a count: each call past the first finds one more tied support).

    Returns
    -------
    OracleResult
        Same constraints; status "optimal" with the canonical support when every tie was
        certified, else the original support with status "suboptimal" and a message (the
        optimum value is certified, the choice among near-ties is not).

    Notes
    -----
    Each call excludes the ties found so far. The next call's certified lower bound above
    ``tie_bar(v_min)`` proves the tie set complete; its support at or below it is one more
    tie. A next-best within the gap tolerance but above ``tie_bar`` is settled by one call
    with the gap tolerance tightened to ``TIE_RTOL / 10``.
    """
    if res.status != "optimal" or res.support is None:
        return res
    ties = {tuple(sorted(np.asarray(res.support).tolist())): float(res.objective)}
    excl = [np.asarray(e, dtype=np.int64) for e in exclude]
    calls, why = 0, ""
    while True:
        vmin = min(ties.values())
        if calls >= max_ties:
            why = f"more than max_ties = {max_ties} tied supports"
            break
        ex = excl + [np.array(k, dtype=np.int64) for k in ties]
        r = solve(exclude=ex, **kw)
        calls += 1
        if r.status == "optimal" and r.lower_bound <= tie_bar(vmin) < r.objective:
            r = solve(exclude=ex, **{**kw, "gap_tol": TIE_RTOL * 0.1})  # near-tie: tighten once
            calls += 1
        if r.status == "infeasible":
            break
        if r.support is not None and r.objective <= tie_bar(vmin):
            ties[tuple(sorted(np.asarray(r.support).tolist()))] = float(r.objective)
            continue
        if r.status == "optimal" and r.lower_bound > tie_bar(vmin):
            break
        why = f"the tie check ended with status {r.status}"
        break
    vmin = min(ties.values())
    key = min(k for k, v in ties.items() if v <= tie_bar(vmin))
    if why:
        return OracleResult(res.support, res.objective, res.lower_bound, "suboptimal", res.iterations + calls,
                            res.seconds, f"optimum value certified, canonical tie-break not ({why})")
    return OracleResult(np.array(key, dtype=np.int64), ties[key], min(res.lower_bound, ties[key]), "optimal",
                        res.iterations + calls, res.seconds, res.message)


class Budget:
    """The limits of one oracle call: deterministic counts plus the wall-clock safety net.

    Parameters
    ----------
    node_limit : int
        Branch-and-bound nodes (status ``"work_limit"`` when exhausted).
    time_limit : float or None
        Seconds (safety net; status ``"time_limit"``); None or inf for none.
    """

    def __init__(self, node_limit, time_limit):
        self.node_limit = int(node_limit)
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + (time_limit if time_limit is not None and math.isfinite(time_limit) else math.inf)

    def remaining(self):
        """Seconds left before the safety net (inf when none)."""
        return self.deadline - time.perf_counter()

    def stop(self, nodes):
        """None to go on, else the status that stops the search after ``nodes`` nodes."""
        if nodes >= self.node_limit:
            return "work_limit"
        if time.perf_counter() > self.deadline:
            return "time_limit"
        return None
