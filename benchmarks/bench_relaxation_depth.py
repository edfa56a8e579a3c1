"""How far a search's k-support bounds are from its optimum: fixed-in features against excluded ones.

Issue 22, session 11. Why gravier's optimum (``standardize``, Lambda = 10) needs a quarter of a
million nodes: the node bound of the k-support relaxation (:mod:`dpbench.core.oracle.relaxation`)
barely rises when features are fixed *in*, and rises fast when the strongest ones are fixed
*out*, which is what the branch and bound's children do (child i takes the i-th feature of its
parent's order and excludes the ones before it). For one real data set at s = 5, b_x = b_y = 0.5,
r = 1.1 (the trial of ``dpbench compare --dataset NAME --s 5 --lam LAM``), given the score of a
reference support (default: the certified optimum, which this script computes first):

* ``root``: the root bound and its gap;
* ``one in``: the bound of every node with one feature fixed in and all others free (how many
  stay below the reference, the largest bound);
* ``two in``: the same with the ``--pairs`` features of largest single gain fixed in, each with
  every other feature;
* ``excluded``: the root bound with the k features of largest ``(x_j^T alpha)^2`` at the root's
  dual point fixed out, for several k.

Session 17 added two rows on what the children's order and their bounds could still gain:

* ``exclusion_orders`` (``--greedy-max K``): how many features must be fixed out before the root
  bound reaches the reference, in the order the branch and bound uses (decreasing
  ``(x_j^T alpha)^2`` at the root's dual point; smallest such k by bisection) and in an order
  re-solved after every exclusion (fix out the feature of largest ``(x_j^T alpha)^2`` at the dual
  point of the relaxation without the ones already out; at most K steps). Fewer exclusions would
  mean fewer open children per node.
* ``siblings`` (``--sibling-nodes N``): the first N nodes of the reference's own search, with
  every node relaxation also bounded beforehand from the dual point of its previous sibling
  (the last relaxed child of the same parent; :meth:`~dpbench.core.oracle.OASession._dual_node`,
  no solve). Per number of fixed-in features: relaxations, the share closed by the node's own
  relaxation, the share the sibling's point alone would close, and the median milliseconds of
  each. The search itself is unchanged (the extra bound is only recorded).

Session 18 added a row on whether a stronger convexification could fit at all:

* ``block_room`` (``--block-nodes N``): the first N nodes of the reference's search; per number of
  features left, the sizes of the candidate sets C of the relaxed nodes; and on a sample of them
  (every ``--block-every``-th relaxed node and the one with the smallest C), the rank of X_C and
  how many single features and pairs of C could carry a positive semidefinite block of
  ``X_C^T X_C`` for a perspective (diagonal) or pairwise (2 x 2) convexification
  (:func:`block_room`). None can when the null space of X_C reaches every feature and pair.

* ``sdp`` (``--sdp-nodes K``; needs ``cvxpy``, which is not a dependency): the first K nodes of
  the search with two features left, at most ``--sdp-features`` candidates, and left open by their
  own k-support relaxation; per node the bar, that relaxation's bound, a semidefinite bound
  (:func:`sdp_bound`: Shor's lifting with the perspective and radius constraints) and the node's
  exact minimum (every pair scored); on the first ``--sdp-l1-nodes`` of them also with the lifted
  l1 cardinality constraint. Whether a far costlier convex bound would close the nodes that the
  k-support bound leaves open.

Bounds and counts are deterministic (the semidefinite bounds to the solver's tolerance); seconds
are wall clock.

    python benchmarks/bench_relaxation_depth.py [--dataset gravier] [--lam 10] [--pairs 3]
        [--excluded 0,10,30,100,300,1000] [--node-limit 300000] [--greedy-max 0]
        [--sibling-nodes 0] [--block-nodes 0] [--block-every 1000] [--sdp-nodes 0]
        [--sdp-features 230] [--sdp-l1-nodes 0] [--out rows.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from unittest import mock

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_real_data import make_trial  # noqa: E402  (the benchmarks folder is on the path now)


def make_score(dataset, lam, standardize="standardize"):
    """The shared score of trial 0 of ``dpbench compare --dataset DATASET --s 5 --lam LAM``: (score, s)."""
    trial = make_trial(dataset, lam, standardize)
    return trial.oracle("highs").score, trial.s


def depth_rows(dataset, lam, pairs, excluded, node_limit, greedy_max=0, sibling_nodes=0, block_nodes=0,
               block_every=1000, sdp_nodes=0, sdp_features=230, sdp_l1_nodes=0):
    """The rows of the module docstring for one data set (a dict, JSON-ready); the session-17
    rows only with ``greedy_max`` > 0, resp. ``sibling_nodes`` > 0, the session-18 rows only with
    ``block_nodes`` > 0, resp. ``sdp_nodes`` > 0."""
    from dpbench.bench.registry import registry
    from dpbench.core.oracle.relaxation import relaxation_bound

    score, s = make_score(dataset, lam)
    p = score.p
    t0 = time.perf_counter()
    opt = registry().solver("highs")(node_limit=node_limit).session(score, s).solve()
    ref = float(opt.objective)
    out = {"dataset": dataset, "lam": lam, "n": score.n, "p": p, "s": s,
           "reference": {"support": np.sort(opt.support).tolist(), "score": ref, "status": opt.status,
                         "nodes": int(opt.iterations), "seconds": round(time.perf_counter() - t0, 1)}}
    none = np.zeros(0, dtype=np.int64)
    everyone = np.arange(p)
    root, _, per, (_, a) = relaxation_bound(score, none, [(everyone, s)], per_feature=True, method="prox",
                                            with_warm=True)
    out["root"] = {"bound": root, "gap": (ref - root) / ref, "features_screened": int((per >= ref).sum())}
    t0 = time.perf_counter()
    one = np.array([relaxation_bound(score, np.array([j]), [(np.delete(everyone, j), s - 1)], method="prox")[0]
                    for j in range(p)])
    out["one_in"] = {"below_reference": int((one < ref).sum()), "of": p, "largest": float(one.max()),
                     "seconds": round(time.perf_counter() - t0, 1)}
    gain = score.c ** 2 / (score.col_sq + score.lam)
    out["two_in"] = []
    for j in np.argsort(-gain, kind="stable")[:pairs]:
        two = np.array([relaxation_bound(score, np.sort([j, k]), [(np.delete(everyone, [min(j, k), max(j, k)]), s - 2)],
                                         method="prox")[0] for k in range(p) if k != j])
        out["two_in"].append({"feature": int(j), "below_reference": int((two < ref).sum()), "of": p - 1,
                              "largest": float(two.max())})
    order = np.argsort(-a ** 2, kind="stable")
    out["excluded"] = [{"k": int(k), "bound": float(relaxation_bound(score, none, [(np.sort(order[k:]), s)],
                                                                     method="prox")[0])}
                       for k in excluded if k <= p - s]
    if greedy_max > 0:
        out["exclusion_orders"] = exclusion_orders(score, s, ref, order, greedy_max)
    if sibling_nodes > 0:
        out["siblings"] = sibling_rows(score, s, sibling_nodes)
    if block_nodes > 0:
        out["block_room"] = block_rows(score, s, block_nodes, block_every)
    if sdp_nodes > 0:
        out["sdp"] = sdp_rows(score, s, node_limit, sdp_nodes, sdp_features, l1_count=sdp_l1_nodes)
    return out


#: At most this many nodes for ``--sibling-nodes``: the row keeps a record of every relaxed node and
#: the dual point of every parent (a few KB each) until the search ends.
MAX_SIBLING_NODES = 200_000


def exclusion_orders(score, s, ref, order, greedy_max):
    """The ``exclusion_orders`` row: features fixed out until the root bound reaches ``ref``, in the
    static ``order`` (the root's, by bisection) and re-solved after each exclusion (a dict)."""
    from dpbench.core.oracle.relaxation import relaxation_bound

    none = np.zeros(0, dtype=np.int64)
    p = score.p

    def bound(free, warm=None):
        b, _, (warm_out, a) = relaxation_bound(score, none, [(np.sort(free), s)], method="prox", warm=warm,
                                               with_warm=True)
        return b, warm_out, a

    static = None
    if bound(order[p - s:])[0] >= ref:
        lo, hi = 0, p - s  # bound(lo) < ref <= bound(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if bound(order[mid:])[0] >= ref:
                hi = mid
            else:
                lo = mid
        static = hi
    free, warm, out = np.arange(p), None, []
    for _ in range(greedy_max + 1):
        b, warm, a = bound(free, warm)
        if b >= ref or free.size <= s:
            break
        j = int(np.argmax(a[free] ** 2))
        out.append(int(free[j]))
        free = np.delete(free, j)
    resolved = len(out) if b >= ref else None
    return {"static": static, "resolved": resolved, "greedy_max": greedy_max, "resolved_features": out,
            "static_features": order[:static].tolist() if static is not None else None}


def search_recording(score, s, nodes, hook, solver_params=None):
    """Run the instance's optimum search for at most ``nodes`` nodes with every node relaxation
    ``OASession._relax_node(session, F, C, m, warm, close_at)`` replaced by
    ``hook(orig, session, F, C, m, warm, close_at)``, which must return ``orig``'s result unchanged
    (the rows only record what the default search does)."""
    from dpbench.bench.registry import registry
    from dpbench.core.oracle import OASession

    orig = OASession._relax_node

    def relax(session, F, C, m, warm=None, close_at=None):
        return hook(orig, session, F, C, m, warm, close_at)

    with mock.patch.object(OASession, "_relax_node", relax):
        registry().solver("highs")(node_limit=nodes, **(solver_params or {})).session(score, s).solve()


def sibling_rows(score, s, nodes, solver_params=None, keep_nodes=False):
    """The ``siblings`` row: the first ``nodes`` nodes of the instance's optimum search, each node
    relaxation also bounded from its previous sibling's dual point (a dict of per-depth rows).
    ``solver_params`` go to the solver; with ``keep_nodes``, ``bounded`` also lists each such
    node's (F, C, m, sibling bound) (tests, on small instances: gravier's would take gigabytes)."""
    last, rec = {}, []

    def recorded(orig, self, F, C, m, warm, close_at):
        # siblings share their parent's warm start object: it keys the last sibling's alpha, and is
        # kept beside it so that its id is never reused by another parent's
        key = id(warm) if warm is not None else None
        entry = last.get(key)
        sib = entry[1] if entry is not None and entry[0] is warm else None
        t0 = time.perf_counter()
        b_sib = self._dual_node(sib, F, C, m)[0] if sib is not None else -np.inf
        t1 = time.perf_counter()
        res = orig(self, F, C, m, warm, close_at)
        t2 = time.perf_counter()
        if key is not None:
            last[key] = (warm, self._relax_alphas[-1])
        bar = close_at if close_at is not None else np.inf
        node = (np.asarray(F).tolist(), np.asarray(C).tolist(), int(m), float(b_sib)) if keep_nodes else None
        rec.append((len(F), sib is not None, b_sib >= bar, res[0] >= bar, t1 - t0, t2 - t1, node))
        return res

    search_recording(score, s, nodes, recorded, solver_params)
    rows = []
    for d in sorted({r[0] for r in rec}):
        x = [r for r in rec if r[0] == d]
        with_sib = [r for r in x if r[1]]
        rows.append({"fixed_in": d, "relaxed": len(x), "with_sibling": len(with_sib),
                     "closed_by_relaxation": sum(r[3] for r in x),
                     "closed_by_sibling": sum(r[2] for r in with_sib),
                     "closed_by_sibling_only": sum(r[2] and not r[3] for r in with_sib),
                     "relaxation_ms": round(1e3 * float(np.median([r[5] for r in x])), 3),
                     "sibling_bound_ms": round(1e3 * float(np.median([r[4] for r in with_sib])), 3) if with_sib else None})
    out = {"nodes": nodes, "depths": rows}
    if keep_nodes:
        out["bounded"] = [r[6] for r in rec if r[1]]
    return out


#: At most this many candidates for :func:`block_room` (its projector is |C| x |C| float64: 128 MB at
#: 4 000), this many nodes for ``--block-nodes`` (each relaxed node's |C| and m are kept) and this
#: many sampled nodes (the candidate columns of each are kept until the search ends).
MAX_BLOCK_FEATURES = 4_000
MAX_BLOCK_NODES = 1_000_000
MAX_BLOCK_SAMPLES = 200


def block_room(XC, tol=1e-8):
    """Which features and pairs of a node's candidates could carry a convexified block of their Gram matrix.

    A perspective (diagonal) or pairwise (2 x 2) convexification of the node relaxation splits
    its quadratic ``X_C^T X_C + lam I = (Q - E) + E`` with E a sum of positive semidefinite blocks
    on single features or pairs, each block then replaced by its convex hull with the features'
    indicators (Atamtürk & Gómez, "Rank-one convexification for sparse regression", 2019, and
    their 2 x 2 work; Dong, Chen & Linderoth 2015 for the diagonal). The k-support relaxation is
    ``E = lam I``. This function tests what can be *added* to it: blocks E' with
    ``X_C^T X_C - E'`` positive semidefinite. Every v in the null space of X_C then has
    ``v^T E' v <= v^T X_C^T X_C v = 0``, so each block E'_B (B a feature or a pair) annihilates the
    rows B of a null-space basis N. When those rows are linearly independent, ``E'_B = 0``. With
    ``P = N N^T`` the projector on the null space, they are iff ``P_BB`` is nonsingular:
    ``P_ii > 0`` for a feature, ``P_ii P_jj - P_ij^2 > 0`` for a pair. (Splits that move weight
    between features, a diagonal above lam on some and below on others, are not covered: the best
    diagonal one is what :func:`sdp_bound` without ``l1`` bounds from above.) At a node with
    features F fixed in, the Gram matrix is ``X_C^T M_F X_C`` with ``M_F`` nonsingular
    (docs/methods/score.md), whose null space is that of X_C: the same test applies.

    Parameters
    ----------
    XC : ndarray (n, c), float64
        The candidate columns. ``c <= MAX_BLOCK_FEATURES``.
    tol : float
        A feature is free when ``P_ii <= tol``; a pair when one of its features is free or
        ``det P_BB <= tol P_ii P_jj`` (the relative determinant, in [0, 1], is 1 when the two rows
        of N are orthogonal).

    Returns
    -------
    dict
        ``size`` c, ``rank`` of X_C (numpy's default tolerance), ``null_dim``, ``free_features``
        and ``free_pairs`` (how many could carry a nonzero block) and ``min_relative_det`` over
        the pairs of features that are not free themselves (None when there are fewer than two).

    Raises
    ------
    ValueError
        If c exceeds ``MAX_BLOCK_FEATURES``.
    """
    n, c = XC.shape
    if c > MAX_BLOCK_FEATURES:
        raise ValueError(f"block_room: {c} candidates, at most {MAX_BLOCK_FEATURES} (the projector is c x c)")
    _, sv, Vt = np.linalg.svd(XC, full_matrices=False)
    rank = int((sv > sv[0] * max(n, c) * np.finfo(np.float64).eps).sum()) if sv.size else 0
    V = Vt[:rank].T
    P = -(V @ V.T)  # I - V V^T, the projector on the null space
    P[np.diag_indices(c)] += 1.0
    d = np.diag(P).copy()
    bound = d > tol
    free_pairs, min_rel = 0, np.inf
    for a in range(0, c, 512):  # rows in blocks: at most 512 x c temporaries
        rows = np.arange(a, min(a + 512, c))
        det = d[rows, None] * d[None, :] - P[rows] ** 2
        upper = np.arange(c)[None, :] > rows[:, None]
        both = upper & bound[rows, None] & bound[None, :]
        # a pair holding a free feature is free (its determinant is rounding noise then)
        free_pairs += int((upper & ~both).sum() + (both & (det <= tol * d[rows, None] * d[None, :])).sum())
        if both.any():
            min_rel = min(min_rel, float((det[both] / (d[rows, None] * d[None, :])[both]).min()))
    return {"size": c, "rank": rank, "null_dim": c - rank, "free_features": int((~bound).sum()),
            "free_pairs": free_pairs, "min_relative_det": None if not np.isfinite(min_rel) else min_rel}


def block_rows(score, s, nodes, every=1000, solver_params=None):
    """The ``block_room`` row: the first ``nodes`` nodes of the instance's optimum search (a dict).

    ``sizes``: per number of features left (m), the relaxed nodes, how many have ``|C| <= n + 1``
    (elsewhere the null space of X_C has dimension at least 2, which it needs, though it is not
    enough, to reach every pair), and the quantiles of their |C|.
    ``sampled``: :func:`block_room` of every ``every``-th relaxed node and of the smallest one
    (``fixed_in``, ``m`` and the node's index among the relaxed nodes beside it), at most
    ``MAX_BLOCK_SAMPLES`` of them, none with more than ``MAX_BLOCK_FEATURES`` candidates
    (``too_large`` counts the nodes passed over for that). The search is unchanged; only the
    candidate columns of the sampled nodes are kept.
    """
    seen, kept, smallest, too_large = [], [], {}, []

    def recorded(orig, self, F, C, m, warm, close_at):
        i = len(seen)
        seen.append((int(m), int(np.size(C))))
        # the session may be a restricted copy over the screened survivors: its own score holds C's columns
        node = {"node": i, "fixed_in": int(np.size(F)), "m": int(m)}
        if i % every == 0:
            if np.size(C) > MAX_BLOCK_FEATURES:
                too_large.append(i)
            elif len(kept) < MAX_BLOCK_SAMPLES:
                kept.append((node, np.array(self.score.X[:, C])))
        if np.size(C) <= MAX_BLOCK_FEATURES and (not smallest or np.size(C) < smallest["XC"].shape[1]):
            smallest.update(node=node, XC=np.array(self.score.X[:, C]))
        return orig(self, F, C, m, warm, close_at)

    search_recording(score, s, nodes, recorded, solver_params)
    sizes = []
    for m in sorted({x[0] for x in seen}):
        c = np.array([x[1] for x in seen if x[0] == m])
        sizes.append({"m": m, "relaxed": int(c.size), "at_most_n_plus_1": int((c <= score.n + 1).sum()), "min": int(c.min()),
                      "q10": float(np.percentile(c, 10)), "median": float(np.median(c)), "max": int(c.max())})
    if smallest and all(k[0]["node"] != smallest["node"]["node"] for k in kept):
        kept.append((smallest["node"], smallest["XC"]))
    sampled = [dict(node, **block_room(XC)) for node, XC in sorted(kept, key=lambda k: k[0]["node"])]
    return {"nodes": nodes, "every": every, "sizes": sizes, "sampled": sampled, "too_large": len(too_large)}


#: At most this many nodes for ``--sdp-nodes`` and this many candidates per node: the semidefinite
#: solve has a (|F| + |C| + 1)-square matrix variable (gravier, |C| = 201-230, SCS: 5-17 s, 33-122 s
#: with the l1 constraint).
MAX_SDP_NODES = 20
MAX_SDP_FEATURES = 300


def sdp_bound(XF, XC, y, lam, r, m, solver="SCS", l1=False):
    """A semidefinite lower bound on the ridge score over the supports F ∪ A, A ⊂ C, |A| = m.

    With ``X = [X_F, X_C]`` (k = f + c columns), the score of a support S is
    ``min ||y - X beta||^2 + lam ||beta||^2`` over beta supported on S with ``||beta|| <= r``
    (docs/methods/score.md). Shor's lifting (Shor 1987) replaces ``beta beta^T`` by a matrix B
    with ``[[B, beta], [beta^T, 1]]`` positive semidefinite, so the objective becomes linear,
    ``y^T y - 2 y^T X beta + <X^T X + lam I, B>``; the indicators z of C enter through the
    perspective constraints ``beta_i^2 <= B_ii z_i`` (Frangioni & Gentile 2006) and
    ``B_ii <= r^2 z_i``, with ``sum z = m``, ``0 <= z <= 1`` and ``trace B <= r^2``. Every support
    of the node gives a feasible point (``B = beta beta^T``, z its indicator), so the optimum is a
    lower bound. It is at least the k-support bound: its projection onto beta lies in the
    perspective relaxation's set with the same radius, and ``<X^T X, B> >= beta^T X^T X beta``.

    With ``l1``, also ``sum_ij |B_ij| <= (f + m) trace B``: at a support's point this reads
    ``||beta||_1^2 <= (f + m) ||beta||_2^2``, true for every vector with f + m nonzeros. It is the
    cardinality constraint of d'Aspremont, El Ghaoui, Jordan & Lanckriet's semidefinite relaxation
    of sparse PCA (SIAM Review 2007). Not separable, it can bind where the null space of X
    leaves the rest slack; it costs c^2 more variables.

    Parameters
    ----------
    XF : ndarray (n, f), float64
        Columns of the fixed-in features.
    XC : ndarray (n, c), float64
        Columns of the candidates.
    y : ndarray (n,), float64
    lam : float >= 0
    r : float > 0
    m : int
        Candidates a support takes, ``0 < m <= c``.
    solver : str
        A cvxpy solver name that handles semidefinite cones ("SCS", "CLARABEL").
    l1 : bool
        Add the lifted l1 cardinality constraint.

    Returns
    -------
    value : float
        The solver's optimal value (a bound only up to its tolerance).
    status : str
        cvxpy's status ("optimal", "optimal_inaccurate", ...).

    Raises
    ------
    ImportError
        If cvxpy is not installed.
    """
    import cvxpy as cp

    X = np.hstack([XF, XC])
    f, c = XF.shape[1], XC.shape[1]
    k = f + c
    beta = cp.Variable(k)
    B = cp.Variable((k, k), symmetric=True)
    z = cp.Variable(c)
    col = cp.reshape(beta, (k, 1), order="F")
    lifted = cp.bmat([[B, col], [col.T, np.ones((1, 1))]])
    cons = [lifted >> 0, cp.trace(B) <= r * r, z >= 0, z <= 1, cp.sum(z) == m]
    for i in range(c):
        cons += [cp.quad_over_lin(beta[f + i], z[i]) <= B[f + i, f + i], B[f + i, f + i] <= r * r * z[i]]
    if l1:
        cons.append(cp.sum(cp.abs(B)) <= (f + m) * cp.trace(B))
    Q = X.T @ X + lam * np.eye(k)
    prob = cp.Problem(cp.Minimize(float(y @ y) - 2 * (X.T @ y) @ beta + cp.trace(Q @ B)), cons)
    prob.solve(solver=solver)
    return float(prob.value), str(prob.status)


def sdp_rows(score, s, nodes, count, max_features=230, solver_params=None, l1_count=0):
    """The ``sdp`` row: the first ``count`` nodes of the instance's optimum search (within ``nodes``
    nodes) with two features left, at most ``max_features`` candidates and left open by their own
    relaxation; per node the bar, the k-support bound, :func:`sdp_bound` and the exact minimum;
    on the first ``l1_count`` of them also :func:`sdp_bound` with ``l1`` (``sdp_l1``)."""
    from dpbench.api import iter_supports

    kept = []

    def recorded(orig, self, F, C, m, warm, close_at):
        res = orig(self, F, C, m, warm, close_at)
        if (m == 2 and np.size(C) <= max_features and len(kept) < count and close_at is not None
                and res[0] < close_at):
            sc = self.score  # possibly a restricted copy: its own columns
            kept.append((np.array(sc.X[:, F]), np.array(sc.X[:, C]), sc, float(close_at), float(res[0])))
        return res

    search_recording(score, s, nodes, recorded, solver_params)
    out = []
    for XF, XC, sc, bar, own in kept:
        f, c = XF.shape[1], XC.shape[1]
        sub = type(sc)(np.hstack([XF, XC]), sc.y, lam=sc.lam, r=sc.r)
        exact = min(float(sub(np.hstack([np.broadcast_to(np.arange(f), (pairs.shape[0], f)), f + pairs])).min())
                    for pairs in iter_supports(c, 2))
        t0 = time.perf_counter()
        value, status = sdp_bound(XF, XC, sc.y, sc.lam, sc.r, 2)
        out.append({"candidates": c, "bar": bar, "k_support": own, "sdp": value, "sdp_status": status,
                    "sdp_seconds": round(time.perf_counter() - t0, 1), "exact": exact})
        if len(out) <= l1_count:
            t0 = time.perf_counter()
            value, status = sdp_bound(XF, XC, sc.y, sc.lam, sc.r, 2, l1=True)
            out[-1].update(sdp_l1=value, sdp_l1_status=status, sdp_l1_seconds=round(time.perf_counter() - t0, 1))
    return {"nodes": nodes, "max_features": max_features, "open_nodes": out}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="gravier")
    ap.add_argument("--lam", type=float, default=10.0)
    ap.add_argument("--pairs", type=int, default=3, help="features of largest single gain fixed in with every other")
    ap.add_argument("--excluded", default="0,10,30,100,300,1000", help="numbers of features fixed out")
    ap.add_argument("--node-limit", type=int, default=300_000, help="node limit of the reference optimum")
    ap.add_argument("--greedy-max", type=int, default=0,
                    help="at most this many re-solved exclusions (0: skip the exclusion_orders row)")
    ap.add_argument("--sibling-nodes", type=int, default=0,
                    help="nodes of the search bounded from their previous sibling too (0: skip)")
    ap.add_argument("--block-nodes", type=int, default=0,
                    help="nodes of the search whose candidate sets are checked for convexified blocks (0: skip)")
    ap.add_argument("--block-every", type=int, default=1000, help="check every this-many-th relaxed node")
    ap.add_argument("--sdp-nodes", type=int, default=0,
                    help="open nodes with two features left bounded by a semidefinite relaxation too (0: skip; "
                         "needs cvxpy)")
    ap.add_argument("--sdp-features", type=int, default=230, help="at most this many candidates in such a node")
    ap.add_argument("--sdp-l1-nodes", type=int, default=0,
                    help="the first this many of them also with the lifted l1 constraint (up to minutes each)")
    ap.add_argument("--out", default=None, help="write the rows as JSON")
    a = ap.parse_args(argv)
    if not 0 <= a.sibling_nodes <= MAX_SIBLING_NODES:
        ap.error(f"--sibling-nodes must be in 0..{MAX_SIBLING_NODES} (each relaxed node and parent is kept in "
                 f"memory while the row is made); pass a smaller count")
    if not 0 <= a.block_nodes <= MAX_BLOCK_NODES:
        ap.error(f"--block-nodes {a.block_nodes} is outside 0..{MAX_BLOCK_NODES}; pass a count in that range")
    if a.block_every < 1:
        ap.error(f"--block-every {a.block_every} must be at least 1; pass a positive count")
    if not 0 <= a.sdp_nodes <= MAX_SDP_NODES:
        ap.error(f"--sdp-nodes {a.sdp_nodes} is outside 0..{MAX_SDP_NODES} (one semidefinite solve per node); "
                 f"pass a count in that range")
    if not 2 <= a.sdp_features <= MAX_SDP_FEATURES:
        ap.error(f"--sdp-features {a.sdp_features} is outside 2..{MAX_SDP_FEATURES} (the solve's matrix is "
                 f"(|F| + |C| + 1)-square); pass a count in that range")
    if not 0 <= a.sdp_l1_nodes <= a.sdp_nodes:
        ap.error(f"--sdp-l1-nodes {a.sdp_l1_nodes} is outside 0..{a.sdp_nodes} (it picks among the --sdp-nodes "
                 f"nodes); pass at most --sdp-nodes")
    try:
        excluded = [int(k) for k in a.excluded.split(",")]
    except ValueError:
        ap.error(f"--excluded {a.excluded!r} is not a comma-separated list of integers; pass e.g. 0,10,30")
    from dpbench.api import UnknownNameError, dataset

    try:
        dataset(a.dataset)
    except UnknownNameError as exc:
        ap.error(str(exc).strip("'\""))
    if a.sdp_nodes:
        try:
            import cvxpy  # noqa: F401
        except ImportError:
            ap.error("--sdp-nodes needs cvxpy, which is not a dependency of dpbench; pip install cvxpy, or drop the flag")
    row = depth_rows(a.dataset, a.lam, a.pairs, excluded, a.node_limit,
                     a.greedy_max, a.sibling_nodes, a.block_nodes, a.block_every, a.sdp_nodes, a.sdp_features,
                     a.sdp_l1_nodes)
    ref = row["reference"]
    print(f"{a.dataset} n={row['n']} p={row['p']} lam={a.lam:g}: reference {ref['score']:.6f} ({ref['status']}, "
          f"{ref['nodes']} nodes, {ref['seconds']} s)")
    print(f"  root bound {row['root']['bound']:.4f}, gap {100 * row['root']['gap']:.2f} %, "
          f"{row['root']['features_screened']} features screened")
    o = row["one_in"]
    print(f"  one feature in: {o['below_reference']} of {o['of']} nodes below the reference, largest bound {o['largest']:.4f}")
    for t in row["two_in"]:
        print(f"  feature {t['feature']} and one more in: {t['below_reference']} of {t['of']} below, "
              f"largest {t['largest']:.4f}")
    for e in row["excluded"]:
        print(f"  {e['k']:>5d} strongest fixed out: root bound {e['bound']:.4f}")
    e = row.get("exclusion_orders")
    if e is not None:
        print(f"  features fixed out until the root bound reaches the reference: {e['static']} in the root's order, "
              f"{e['resolved'] if e['resolved'] is not None else '> ' + str(e['greedy_max'])} re-solved after each")
    if "siblings" in row:
        print(f"  first {row['siblings']['nodes']} nodes, node relaxations by features fixed in:")
        for d in row["siblings"]["depths"]:
            print(f"    {d['fixed_in']} in: {d['relaxed']} relaxed, {d['closed_by_relaxation']} closed by their own "
                  f"({d['relaxation_ms']} ms); {d['with_sibling']} with a sibling before, whose dual point closes "
                  f"{d['closed_by_sibling']} ({d['closed_by_sibling_only']} that their own does not; "
                  f"{d['sibling_bound_ms']} ms)")
    if "block_room" in row:
        b = row["block_room"]
        print(f"  first {b['nodes']} nodes, candidates of the relaxed nodes by features left:")
        if not b["sizes"]:
            print("    none: no node was relaxed (the search closed by enumeration and screening alone)")
        for z in b["sizes"]:
            print(f"    m = {z['m']}: {z['relaxed']} relaxed ({z['at_most_n_plus_1']} with |C| <= n + 1), "
                  f"|C| min {z['min']}, q10 {z['q10']:g}, "
                  f"median {z['median']:g}, max {z['max']}")
        for z in b["sampled"]:
            print(f"    node {z['node']} ({z['fixed_in']} in, m = {z['m']}): |C| {z['size']}, rank {z['rank']}, "
                  f"null space {z['null_dim']}; features free for a block {z['free_features']}, pairs "
                  f"{z['free_pairs']} (smallest relative determinant {z['min_relative_det']})")
        if b["too_large"]:
            print(f"    {b['too_large']} nodes due for a sample had more than {MAX_BLOCK_FEATURES} candidates and "
                  f"were passed over")
    if "sdp" in row:
        print(f"  open nodes with two features left and at most {row['sdp']['max_features']} candidates:")
        if not row["sdp"]["open_nodes"]:
            print("    none: no such node was relaxed and left open by its own relaxation")
        for z in row["sdp"]["open_nodes"]:
            print(f"    |C| {z['candidates']}: bar {z['bar']:.4f}, k-support {z['k_support']:.4f}, semidefinite "
                  f"{z['sdp']:.4f} ({z['sdp_status']}, {z['sdp_seconds']} s), exact minimum {z['exact']:.4f}")
            if "sdp_l1" in z:
                print(f"      with the lifted l1 constraint: {z['sdp_l1']:.4f} ({z['sdp_l1_status']}, "
                      f"{z['sdp_l1_seconds']} s)")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(row, fh, indent=1)


if __name__ == "__main__":
    main()
