"""The closed-form bounds of a leaf's triple completions (dpbench.core.oracle.triple_kernels).

Against exact answers: every bound is below the triple's shared score (and equal to it when the
l2 bound is inactive), the compiled bounds match the numpy reference, the scan keeps exactly
the triples the bounds leave open, and a scanned leaf leaves the search's target as the blocks
of exact scores do.
"""

from itertools import combinations

import numpy as np
import pytest

from dpbench.core.oracle.session import OASession
from dpbench.core.oracle.targets import _BelowTarget, _BestTarget
from dpbench.core.oracle.triple_kernels import leaf_triple_scan, triple_bounds, triple_bounds_numpy
from dpbench.core.score import RidgeScore


def _leaf(lam, r, F, c=14, seed=0):
    rng = np.random.default_rng(seed)
    n, p = 30, 40
    X = rng.normal(size=(n, p)) / np.sqrt(n)
    X[:, 1] = X[:, 0] + 1e-3 * rng.normal(size=n)  # a near-collinear pair, inside some triples
    y = X[:, :4] @ np.array([1.0, -2.0, 0.5, 1.5]) + 0.1 * rng.normal(size=n)
    F = np.array(F, dtype=np.int64)
    sess = OASession(RidgeScore(X, y, lam=lam, r=r), F.size + 3, "highs", None)
    C = np.concatenate([[0, 1], rng.permutation(np.setdiff1d(np.arange(2, p), F))[:c - 2]])
    C = np.setdiff1d(C, F)
    A = np.array(list(combinations(range(C.size), 3)), dtype=np.int64)
    return sess, F, C, A


CASES = [(0.5, np.inf), (0.5, 0.3), (10.0, 1.1), (1e-3, 0.05)]
IDS = ["unbounded", "ball-active", "lam10", "tiny-lam-active"]


@pytest.mark.parametrize("lam,r", CASES, ids=IDS)
@pytest.mark.parametrize("F", [[], [3], [2, 5]], ids=lambda F: f"F{len(F)}")
def test_triple_bounds_are_below_every_score_and_match_numpy(lam, r, F):
    sess, F, C, A = _leaf(lam, r, F)
    GCC = sess._gcc(C)
    exact = sess._score_with(F, C, A, GCC)[1]  # no cutoff: every triple solved
    R0, t, mC, U = sess._pair_terms(F, C)
    got = triple_bounds(GCC, A, t, mC, U, R0, float(sess.score.lam))
    ref = triple_bounds_numpy(GCC, A, t, mC, U, R0, float(sess.score.lam))
    assert np.all(got <= exact * (1 + 1e-12) + 1e-12) and np.all(ref <= exact * (1 + 1e-12) + 1e-12)
    both = np.isfinite(got) & np.isfinite(ref)
    assert both.mean() > 0.9  # the bounds are not vacuous
    np.testing.assert_allclose(got[both], ref[both], rtol=1e-9, atol=1e-12)
    if np.isinf(r):  # no l2 bound: the bound is the score itself
        np.testing.assert_allclose(got[both], exact[both], rtol=1e-9)


@pytest.mark.parametrize("lam,r", CASES, ids=IDS)
@pytest.mark.parametrize("F", [[], [3], [2, 5]], ids=lambda F: f"F{len(F)}")
@pytest.mark.parametrize("q", [0.0, 0.3, 1.0])
def test_leaf_triple_scan_keeps_the_triples_the_bounds_leave_open(lam, r, F, q):
    """The scan returns, in lexicographic order, exactly the triples whose cut bound and triple
    bound both stay below the cutoff, and the smallest of the other bounds with its first triple,
    bit for bit with triple_bounds on the gathered block."""
    sess, F, C, A = _leaf(lam, r, F)
    GCC = sess._gcc(C)
    exact = sess._score_with(F, C, A, GCC)[1]
    cutoff = float(np.quantile(exact, q)) + (1e-6 if q == 1.0 else 0.0)
    const, W = sess._partial(F)[0]
    R0, t, mC, U = sess._pair_terms(F, C)
    cut0 = float(const - W[F].sum())
    lam_ = float(sess.score.lam)
    cut = ((cut0 - W[C[A[:, 0]]]) - W[C[A[:, 1]]]) - W[C[A[:, 2]]]
    tb = triple_bounds(GCC, A, t, mC, U, R0, lam_)
    value = np.where(cut < cutoff, tb, cut)
    open_ = (cut < cutoff) & ~(tb >= cutoff)
    kept, low, low_triple = leaf_triple_scan(C, sess.score.cached_gram(), t, mC, U, R0, lam_, cut0, W, cutoff)
    np.testing.assert_array_equal(kept, A[open_].reshape(-1, 3))
    if open_.all():
        assert low == np.inf and list(low_triple) == [-1, -1, -1]
    else:
        assert low == value[~open_].min()
        assert list(low_triple) == list(A[~open_][np.argmin(value[~open_])])
    assert 0 < open_.sum() < open_.size or q in (0.0, 1.0)


@pytest.mark.parametrize("target", ["best", "below", "rank"])
@pytest.mark.parametrize("F", [[3], [2, 5]], ids=lambda F: f"F{len(F)}")
def test_a_scanned_triple_leaf_leaves_its_target_as_the_blocks_do(target, F):
    """``BranchAndBound._scan_leaf`` with three features left leaves the optimum and threshold
    targets as offering the blocks' values (``NodeBounds._score_with``) does: the same incumbent and
    ties, the same kept supports and values, tau and count; the smallest value above the bar equal to
    rounding (the scan and the blocks sum the cut weights in different orders)."""
    sess, F, C, A = _leaf(10.0, 1.1, F)
    s = F.size + 3
    GCC = sess._gcc(C)
    exact = sess._score_with(F, C, A, GCC)[1]
    S_all = np.sort(np.concatenate([np.broadcast_to(F, (A.shape[0], F.size)), C[A]], axis=1), axis=1)
    tau = float(np.quantile(exact, 0.05))

    def make():
        if target == "best":
            i = int(np.argsort(exact)[len(exact) // 20])
            return _BestTarget(S_all[i], float(exact[i]), 0.0, set())
        return _BelowTarget(tau, 7 if target == "rank" else None, [], set(), 10**6, s)

    scanned, blocks = make(), make()
    assert sess._scan_leaf(F, C, 3, scanned)
    blocks.offer(*sess._score_with(F, C, A, GCC, cutoff=blocks.bar()))
    if target == "best":
        assert scanned.ties == blocks.ties and scanned.vmin == blocks.vmin
        np.testing.assert_array_equal(scanned.S, blocks.S)
    else:
        S_s, v_s = scanned.result()
        S_b, v_b = blocks.result()
        np.testing.assert_array_equal(S_s, S_b)
        np.testing.assert_array_equal(v_s, v_b)
        assert scanned.tau == blocks.tau and scanned.count == blocks.count and len(v_s) > 0
        np.testing.assert_allclose(scanned.above, blocks.above, rtol=1e-13)
