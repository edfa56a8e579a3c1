"""Closed-form child bounds of the k-support dual (relaxation.child_bounds) against brute force.

Validity: on random small nodes (F fixed in, m more from a candidate set C; exact duplicate
columns, so exact ties of a^2; lam in {0.1, 1, 10, 120}; r in {0.3, 1.1, inf}; ties ordered by
position or by a random key) the bound of every partition child
i (``Cs[i]`` in, ``Cs[:i]`` out, the rest from ``Cs[i+1:]``) never exceeds the true optimum
over that child's supports, for the node relaxation's dual point and for arbitrary ones, and
the bounds are nondecreasing in i (the search stops at the first closed child). Search: the
branch and bound that inherits dual points from parent nodes (node relaxations used up after
one node, so the others are bounded by their parent's point without a solve) returns the
brute-force optimum and threshold lists.
"""

import itertools

import numpy as np
import pytest

from dpbench.core.oracle.constraints import ConstraintSet
from dpbench.core.oracle.relaxation import child_bounds, relaxation_bound
from dpbench.core.score import RidgeScore
from helpers.relaxation import tied_problem


def _child_optimum(score, F, Cs, i, m):
    """min R over F + Cs[i] + (m - 1 of Cs[i+1:]), by enumeration."""
    rest = Cs[i + 1:]
    S = np.array([sorted(list(F) + [int(Cs[i])] + list(A)) for A in itertools.combinations(rest.tolist(), m - 1)],
                 dtype=np.int64)
    return float(score(S).min())


@pytest.mark.parametrize("lam", [0.1, 1.0, 10.0, 120.0])
@pytest.mark.parametrize("r", [0.3, 1.1, np.inf])
@pytest.mark.parametrize("keyed", [False, True])  # ties of a^2 ordered by a key (oracle.children)
def test_child_bounds_never_exceed_the_child_optimum(lam, r, keyed):
    checked = 0
    for seed in range(5):
        X, y = tied_problem(seed, n=12, p=10, dup=seed % 2 == 0)
        score = RidgeScore(X, y, lam=lam, r=r)
        rng = np.random.default_rng(50 + seed)
        for _ in range(4):
            perm = rng.permutation(score.p)
            f = int(rng.integers(0, 2))
            F = np.sort(perm[:f])
            C = np.sort(perm[f:f + int(rng.integers(4, score.p - f + 1))])
            m = int(rng.integers(2, min(4, C.size) + 1))
            _, alpha = relaxation_bound(score, F, [(C, m)])
            points = [alpha, rng.normal(size=score.n) * rng.uniform(0.01, 2.0), y * rng.uniform(0.1, 1.5)]
            for a_pt in points:
                key = rng.normal(size=score.p) if keyed else None
                Cs, b = child_bounds(X.T @ a_pt, a_pt @ y, a_pt @ a_pt, lam, r, F, C, m, key)
                assert sorted(Cs.tolist()) == C.tolist() and b.size == C.size - m + 1
                assert np.all(np.diff(b) >= 0)
                for i in range(b.size):
                    opt = _child_optimum(score, F, Cs, i, m)
                    assert b[i] <= opt * (1 + 1e-12) + 1e-12, (seed, i, b[i], opt)
                    checked += 1
    assert checked > 200


def test_child_bounds_prune_children_a_node_bound_cannot():
    """Strength: the closed-form child bounds are the node's per-feature bound restricted by
    the exclusions, so at least one child bound exceeds the node's own bound (the later
    children complete from features with small a^2)."""
    X, y = tied_problem(3, n=30, p=12, dup=False)
    score = RidgeScore(X, y, lam=1.0, r=1.1)
    C = np.arange(12)
    b0, alpha = relaxation_bound(score, np.zeros(0, np.int64), [(C, 3)])
    _, b = child_bounds(X.T @ alpha, alpha @ y, alpha @ alpha, 1.0, 1.1, np.zeros(0, np.int64), C, 3)
    assert b[0] >= b0 - 1e-9 * max(1.0, b0) and b[-1] > b0


@pytest.mark.parametrize("lam,r", [(0.1, 1.1), (1.0, np.inf), (0.1, 0.3)])
def test_search_with_inherited_dual_points_matches_brute_force(lam, r):
    from dpbench.bench.registry import registry

    s = 3
    inherited = 0  # nodes bounded by their parent's dual point (the path under test)
    for seed in range(3):
        X, y = tied_problem(seed, n=25, p=30, dup=seed % 2 == 0)
        score = RidgeScore(X, y, lam=lam, r=r)
        S = np.array(list(itertools.combinations(range(30), s)), dtype=np.int64)
        vals = score(S)
        rng = np.random.default_rng(seed)
        for kw in ({}, {"fixed_out": rng.choice(30, 5, replace=False)}):
            sess = registry().solver("highs")(enum_limit=0, leaf_limit=5, pair_leaf_limit=0, gershgorin=False).session(score, s)
            sess.relax_after, sess.relax_bnb, sess.relax_cand, sess.relax_nodes = 0, 1000, 0, 1
            used = []
            inner = sess._dual_node
            sess._dual_node = lambda *a: used.append(1) or inner(*a)
            res = sess.solve(**kw)
            inherited += len(used)
            ok = ConstraintSet.build(30, s, fixed_out=kw.get("fixed_out", ())).feasible_mask(S)
            opt = vals[ok].min()
            assert res.status == "optimal" and abs(res.objective - opt) <= 1e-9 * max(1.0, opt), (res, opt)
            assert res.lower_bound <= opt + 1e-9 * max(1.0, opt)
            tie = S[ok & (vals <= opt * (1 + 1e-9))]
            assert res.support.tolist() == tie[np.lexsort(tie.T[::-1])[0]].tolist()  # canonical tie
        # threshold enumeration with node relaxations (then inherited points) from the first node
        sess = registry().solver("highs")(enum_limit=0, leaf_limit=5, pair_leaf_limit=0).session(score, s)
        sess.relax_overlap_nodes, sess.relax_overlap_after = 1, 0
        tau = float(np.sort(vals)[60])
        below = sess.supports_below(tau)
        assert below.certified
        assert {tuple(row) for row in below.supports.tolist()} == {tuple(row) for row in S[vals <= tau].tolist()}
    assert inherited > 0  # the inherited-dual path ran (a test that can fail)
