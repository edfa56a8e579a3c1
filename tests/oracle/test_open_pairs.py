"""A node with two features left scores its open children's pairs itself (``open_pairs``).

Exact answers from brute force over all C(p, s) supports: the overlap levels' canonical optima
and threshold lists are the same with the closure on and off, the closure really ran and saved
nodes, and its cross products restricted to the children's rows give the scores of the full
candidate Gram block.
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
    """Count the closures (and the pairs they score) of every session."""
    seen = {"calls": 0, "pairs": 0}
    orig = OASession._score_open_pairs

    def spy(self, F, Cs, k, target):
        seen["calls"] += 1
        seen["pairs"] += k * (2 * Cs.size - k - 1) // 2
        return orig(self, F, Cs, k, target)

    monkeypatch.setattr(OASession, "_score_open_pairs", spy)
    return seen


def _session(score, s, open_pairs):
    # enum_limit = 0, leaf_limit = 1: branch and bound down to the nodes with two features left
    return registry().solver("highs")(enum_limit=0, leaf_limit=1, pair_leaf_limit=0, open_pairs=open_pairs).session(score, s)


@pytest.mark.parametrize("kind,seed,lam", [("corr", 0, 0.5), ("corr", 1, 5.0), ("indep", 2, 2.0), ("ties", 3, 1.0)])
@pytest.mark.parametrize("gram", ["full", "columns"])
def test_overlap_levels_match_brute_force_with_and_without_the_closure(kind, seed, lam, gram, monkeypatch):
    s = 4
    small = make_problem(kind, seed, n=40, p=22, lam=lam)
    score = RidgeScore(small.X, small.y, lam=small.lam, r=small.r, gram=gram)  # columns: the closure gathers X_C
    S = all_supports(score.p, s)
    sc = score(S)
    S1 = canonical_minimum(S, sc)[0]
    seen = _spy(monkeypatch)
    nodes = {}
    for open_pairs in (2**20, 0):
        before = seen["calls"]
        nodes[open_pairs] = 0
        for t in range(1, s + 1):
            lvl = (s - np.isin(S, S1).sum(axis=1)) == t
            want_S, want_v = canonical_minimum(S[lvl], sc[lvl])
            res = _session(score, s, open_pairs).solve(overlap=(S1, s - t))
            assert res.status == "optimal"
            np.testing.assert_array_equal(np.sort(res.support), want_S)
            np.testing.assert_allclose(res.objective, want_v, rtol=TIE_RTOL)
            nodes[open_pairs] += res.iterations
        ran = seen["calls"] - before
        assert (ran > 0) if open_pairs else (ran == 0)
    assert nodes[2**20] < nodes[0]


@pytest.mark.parametrize("kind,seed,lam", [("corr", 4, 1.0), ("ties", 5, 3.0)])
@pytest.mark.parametrize("quantile", [0.002, 0.02])
def test_threshold_lists_match_brute_force(kind, seed, lam, quantile, monkeypatch):
    s = 4
    score = make_problem(kind, seed, n=40, p=20, lam=lam)
    S = all_supports(score.p, s)
    sc = score(S)
    S1 = S[np.argmin(sc)]
    seen = _spy(monkeypatch)
    for t in (2, 3, 4):
        lvl = (s - np.isin(S, S1).sum(axis=1)) == t
        tau = float(np.quantile(sc[lvl], quantile))
        got = _session(score, s, 2**20).supports_below(tau, overlap=(S1, s - t))
        assert got.certified
        want = {tuple(r) for r in S[lvl & (sc <= tau)].tolist()}
        assert {tuple(r) for r in np.sort(got.supports, axis=1).tolist()} == want
        assert got.lower_bound > tau
    assert seen["calls"] > 0 and seen["pairs"] > 0


@pytest.mark.parametrize("compiled", [True, False])
def test_children_rows_give_the_scores_of_the_full_block(compiled, monkeypatch):
    """``_score_with`` of pairs with only the first features' rows of X_C^T X_C (what a closure passes)
    equals the same with the full block, bounded (finite cutoff) and exactly solved (none)."""
    monkeypatch.setattr(OASession, "partial_compiled", compiled)
    score = make_problem("corr", 7, n=30, p=18, lam=2.0)
    sess = _session(score, 5, 2**20)
    F = np.array([2, 9, 14])
    C = np.array([0, 3, 4, 6, 7, 11, 12, 16, 17])
    k = 4
    A = np.array([(i, j) for i in range(k) for j in range(i + 1, C.size)], dtype=np.int64)
    full = score.X[:, C].T @ score.X[:, C]
    rows = score.X[:, C[:k]].T @ score.X[:, C]
    exact = score(np.sort(np.concatenate([np.broadcast_to(F, (len(A), 3)), C[A]], axis=1), axis=1))
    for cutoff in (np.inf, float(np.median(exact))):
        S_full, v_full = sess._score_with(F, C, A, full, cutoff=cutoff)
        S_rows, v_rows = sess._score_with(F, C, A, rows, cutoff=cutoff)
        np.testing.assert_array_equal(S_rows, S_full)
        np.testing.assert_allclose(v_rows, v_full, rtol=1e-12)
        below = v_rows < cutoff
        np.testing.assert_allclose(v_rows[below], exact[below], rtol=1e-12)
        assert (v_rows <= exact * (1 + 1e-12)).all()  # the rest: valid lower bounds


def test_the_gathered_columns_are_capped(monkeypatch):
    """Past OPEN_PAIRS_FLOATS (n |C| floats gathered) the children become nodes again: no closure, same answer."""
    from dpbench.core.oracle import branch_and_bound

    score = make_problem("corr", 0, n=40, p=22, lam=0.5)
    S = all_supports(score.p, 4)
    sc = score(S)
    S1 = canonical_minimum(S, sc)[0]
    lvl = (4 - np.isin(S, S1).sum(axis=1)) == 3
    seen = _spy(monkeypatch)
    monkeypatch.setattr(branch_and_bound, "OPEN_PAIRS_FLOATS", score.n - 1)  # not even one candidate
    res = _session(score, 4, 2**20).solve(overlap=(S1, 1))
    assert seen["calls"] == 0
    np.testing.assert_array_equal(np.sort(res.support), canonical_minimum(S[lvl], sc[lvl])[0])


@pytest.mark.parametrize("target", ["best", "below", "rank"])
@pytest.mark.parametrize("F,k", [([3], 4), ([0, 2, 7], 9), ([5], 1)], ids=["F1k4", "F3k9", "F1k1"])
def test_the_scanned_closure_leaves_its_target_as_the_blocks_do(target, F, k, monkeypatch):
    """With a cached Gram the closure scans its children's pairs (``BranchAndBound._scan_completions``,
    a pair's Gram entry read only when its cut bound leaves it open); the target then holds the
    same kept supports, ties and tau as with the children's cross products scored in blocks (the
    path without a cached Gram), their values equal to rounding (the blocks take x_i^T x_i from the
    column norms, the scan from the Gram's diagonal)."""
    from dpbench.core.oracle.targets import _BelowTarget, _BestTarget

    score = make_problem("corr", 11, n=30, p=24, lam=2.0)
    sess = _session(score, len(F) + 2, 2**20)
    F = np.array(F, dtype=np.int64)
    Cs = np.random.default_rng(2).permutation(np.setdiff1d(np.arange(score.p), F))[:14]
    A = np.array([(i, j) for i in range(k) for j in range(i + 1, Cs.size)], dtype=np.int64)
    S_all = np.sort(np.concatenate([np.broadcast_to(F, (len(A), F.size)), Cs[A]], axis=1), axis=1)
    exact = score(S_all)
    tau = float(np.quantile(exact, 0.3))

    def make():
        if target == "best":
            i = int(np.argsort(exact)[len(exact) // 3])
            return _BestTarget(S_all[i], float(exact[i]), 0.0, set())
        return _BelowTarget(tau, 3 if target == "rank" else None, [], set(), 10**6, F.size + 2)

    scanned, blocks = make(), make()
    calls = {"scan": 0}
    orig = OASession._scan_completions

    def scan(self, *args):
        done = orig(self, *args)
        calls["scan"] += done
        return done

    monkeypatch.setattr(OASession, "_scan_completions", scan)
    sess._score_open_pairs(F, Cs, k, scanned)
    assert calls["scan"] == 1
    monkeypatch.setattr(OASession, "_scan_completions", lambda self, *args: False)
    sess._score_open_pairs(F, Cs, k, blocks)
    if target == "best":
        assert scanned.ties.keys() == blocks.ties.keys()
        np.testing.assert_array_equal(scanned.S, blocks.S)
        np.testing.assert_allclose(scanned.vmin, blocks.vmin, rtol=1e-13)
    else:
        S_s, v_s = scanned.result()
        S_b, v_b = blocks.result()
        np.testing.assert_array_equal(S_s, S_b)
        np.testing.assert_allclose(v_s, v_b, rtol=1e-13)
        np.testing.assert_allclose([scanned.above, scanned.tau], [blocks.above, blocks.tau], rtol=1e-13)
        assert scanned.count == blocks.count and (len(v_s) > 0 or target == "rank")
