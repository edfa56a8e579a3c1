"""A node with two features left and at most ``pair_leaf_limit`` pairs is a leaf: its pairs are
scanned whole from the cached Gram (``BranchAndBound._bnb_walk``, ``leaf_pair_scan``) instead of
the node solving its relaxation and branching.

Exact answers from brute force over all C(p, s) supports: optima (canonical among ties) and
threshold lists are the same with pair leaves on and off, the pair leaves really ran, and they
replaced node relaxations. Without a cached Gram the scan does not apply and the node branches as
before.
"""

import numpy as np
import pytest

from dpbench.bench.registry import registry
from dpbench.core.oracle import OASession
from dpbench.core.oracle.limits import TIE_RTOL, canonical_minimum
from dpbench.core.score import RidgeScore
from dpbench.testing.reference import all_supports

from helpers.solvers import make_problem


def _spy(monkeypatch):
    """Count every session's pair leaves (scans of all of a node's pairs) and node relaxations."""
    seen = {"leaves": 0, "relaxations": 0}
    scan, relax = OASession._scan_completions, OASession._relax_node

    def scan_spy(self, F, C, m, rows, target):
        done = scan(self, F, C, m, rows, target)
        seen["leaves"] += bool(done and m == 2 and rows == C.size)
        return done

    def relax_spy(self, *args, **kw):
        seen["relaxations"] += 1
        return relax(self, *args, **kw)

    monkeypatch.setattr(OASession, "_scan_completions", scan_spy)
    monkeypatch.setattr(OASession, "_relax_node", relax_spy)
    return seen


def _session(score, s, pair_leaf_limit):
    # enum_limit = 0, leaf_limit = 0: no other leaves; without pair leaves, branch and bound down to
    # one feature left
    return registry().solver("highs")(enum_limit=0, leaf_limit=0, pair_leaf_limit=pair_leaf_limit).session(score, s)


@pytest.mark.parametrize("kind,seed,lam", [("corr", 0, 0.5), ("corr", 1, 5.0), ("indep", 2, 2.0), ("ties", 3, 1.0)])
def test_optima_and_overlap_levels_match_brute_force_with_pair_leaves(kind, seed, lam, monkeypatch):
    s = 4
    score = make_problem(kind, seed, n=40, p=22, lam=lam)
    S = all_supports(score.p, s)
    sc = score(S)
    S1 = canonical_minimum(S, sc)[0]
    seen = _spy(monkeypatch)
    relaxations = {}
    for limit in (2**20, 0):
        before = dict(seen)
        res = _session(score, s, limit).solve()
        assert res.status == "optimal"
        np.testing.assert_array_equal(np.sort(res.support), S1)
        for t in range(1, s + 1):
            lvl = (s - np.isin(S, S1).sum(axis=1)) == t
            want_S, want_v = canonical_minimum(S[lvl], sc[lvl])
            res = _session(score, s, limit).solve(overlap=(S1, s - t))
            assert res.status == "optimal"
            np.testing.assert_array_equal(np.sort(res.support), want_S)
            np.testing.assert_allclose(res.objective, want_v, rtol=TIE_RTOL)
        leaves = seen["leaves"] - before["leaves"]
        assert (leaves > 0) if limit else (leaves == 0)
        relaxations[limit] = seen["relaxations"] - before["relaxations"]
    assert relaxations[2**20] < relaxations[0]  # the leaves replaced relaxations


@pytest.mark.parametrize("kind,seed,lam", [("corr", 4, 1.0), ("ties", 5, 3.0)])
@pytest.mark.parametrize("quantile", [0.002, 0.02])
def test_threshold_lists_match_brute_force_with_pair_leaves(kind, seed, lam, quantile, monkeypatch):
    s = 4
    score = make_problem(kind, seed, n=40, p=20, lam=lam)
    S = all_supports(score.p, s)
    sc = score(S)
    seen = _spy(monkeypatch)
    for fixed_out in ([], [int(np.argmin(sc) % score.p)]):
        keep = ~np.isin(S, fixed_out).any(axis=1)
        tau = float(np.quantile(sc[keep], quantile))
        got = _session(score, s, 2**20).supports_below(tau, fixed_out=fixed_out)
        assert got.certified and got.lower_bound > tau
        want = {tuple(r) for r in S[keep & (sc <= tau)].tolist()}
        assert {tuple(r) for r in np.sort(got.supports, axis=1).tolist()} == want
    assert seen["leaves"] > 0


def test_the_limit_is_bounded_when_the_solver_is_configured():
    """A leaf keeps its open pairs in memory, so the limit has a ceiling (PAIR_LEAF_MAX)."""
    from dpbench.core.errors import UserInputError
    from dpbench.core.oracle.limits import PAIR_LEAF_MAX

    highs = registry().solver("highs")
    assert highs(pair_leaf_limit=PAIR_LEAF_MAX).config["pair_leaf_limit"] == PAIR_LEAF_MAX
    with pytest.raises(UserInputError, match="pair_leaf_limit"):
        highs(pair_leaf_limit=PAIR_LEAF_MAX + 1)


def test_without_a_cached_gram_the_node_branches_as_before(monkeypatch):
    """The scan needs the cached Gram: with ``gram="columns"`` no pair leaf runs, and the answer is
    the same."""
    small = make_problem("corr", 0, n=40, p=22, lam=0.5)
    score = RidgeScore(small.X, small.y, lam=small.lam, r=small.r, gram="columns")
    S = all_supports(score.p, 4)
    seen = _spy(monkeypatch)
    res = _session(score, 4, 2**20).solve()
    assert res.status == "optimal" and seen["leaves"] == 0 and seen["relaxations"] > 0
    np.testing.assert_array_equal(np.sort(res.support), canonical_minimum(S, score(S))[0])
