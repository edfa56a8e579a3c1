"""The compiled partial-support quantities against their numpy reference (NodeBounds._partial_numpy),
and the leaf scores of a node against the shared score."""

import numpy as np
import pytest

from dpbench.core.score import RidgeScore
from dpbench.core.oracle.session import OASession
from dpbench.core.oracle.node_kernels import partial_quantities


def _session(seed, n, p, lam, r):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) / np.sqrt(n)
    X[:, 1] = X[:, 0] + 1e-3 * rng.normal(size=n)  # near-collinear pair
    y = X[:, :3] @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=n)
    return OASession(RidgeScore(X, y, lam=lam, r=r), 4, "highs", None)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam,r", [(0.5, np.inf), (0.5, 0.3), (10.0, 1.1), (1e-3, 0.05)],
                         ids=["unbounded", "ball-active", "lam10", "tiny-lam-active"])
@pytest.mark.parametrize("F", [[0], [0, 1], [2, 5, 7], [1, 3, 4, 9]], ids=lambda F: f"F{len(F)}")
def test_kernel_matches_numpy_reference(seed, lam, r, F):
    sess = _session(seed, 30, 40, lam, r)
    F = np.array(F, dtype=np.int64)
    ((const, W), (R0, h)), m = sess._partial_numpy(F)
    sc = sess.score
    ok, const_k, W_k, R0_k, h_k, m_k = partial_quantities(sess._rows(F), F, sc.c, float(sc.yy), sc.col_sq,
                                                          float(sc.lam), float(sc.r))
    assert ok
    tol = dict(rtol=1e-8, atol=1e-10 * max(1.0, abs(float(sc.yy))))
    np.testing.assert_allclose(const_k, const, **tol)
    np.testing.assert_allclose(W_k, W, **tol)
    np.testing.assert_allclose(R0_k, R0, **tol)
    np.testing.assert_allclose(h_k, h, **tol)
    np.testing.assert_allclose(m_k, m, **tol)


@pytest.mark.parametrize("lam,r", [(0.5, 0.3), (10.0, 1.1)])
def test_kernel_cut_is_a_lower_bound_on_every_support(lam, r):
    """The cut at F bounds R(S) for every support S (weak duality), checked on all C(12, 4) supports."""
    from itertools import combinations

    sess = _session(7, 25, 12, lam, r)
    sc = sess.score
    F = np.array([0, 2], dtype=np.int64)
    ok, const, W, R0, h, _ = partial_quantities(sess._rows(F), F, sc.c, float(sc.yy), sc.col_sq, float(sc.lam),
                                                float(sc.r))
    assert ok
    S = np.array(list(combinations(range(12), 4)))
    scores = sc(S)
    assert np.all(const - W[S].sum(axis=1) <= scores + 1e-9 * np.abs(scores))
    # the ridge decrease of one more feature is exact for the unbounded ridge score
    ridge = RidgeScore(sc.X, sc.y, lam=lam, r=np.inf)
    for b in (1, 5, 11):
        assert np.isclose(R0 - h[b], ridge(np.sort(np.r_[F, b])[None])[0], rtol=1e-10)


@pytest.mark.parametrize("lam,r", [(0.5, np.inf), (0.5, 0.3), (10.0, 1.1), (1e-3, 0.05)],
                         ids=["unbounded", "ball-active", "lam10", "tiny-lam-active"])
@pytest.mark.parametrize("F,m", [([], 2), ([0], 1), ([2, 5], 2), ([1, 3, 4], 1)], ids=["F0m2", "F1m1", "F2m2", "F3m1"])
def test_leaf_scores_match_the_shared_score(lam, r, F, m):
    """Every completion F + A of a leaf, from cached Gram rows and by the shared score (all C(|C|, m) rows)."""
    from itertools import combinations

    sess = _session(3, 30, 40, lam, r)
    F = np.array(F, dtype=np.int64)
    C = np.setdiff1d(np.arange(40), F)[:14]
    A = np.array(list(combinations(range(C.size), m)), dtype=np.int64)
    GCC = sess._gcc(C)
    S, vals = sess._score_with(F, C, A, GCC)
    expect = sess.score(S)
    np.testing.assert_allclose(vals, expect, rtol=1e-10, atol=1e-12)
    sess.partial_compiled = False
    S2, vals2 = sess._score_with(F, C, A, GCC)
    np.testing.assert_array_equal(S2, S)
    np.testing.assert_allclose(vals2, expect, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("r", [0.05, np.inf], ids=["ball-active", "unbounded"])
def test_leaf_scores_above_the_cutoff_are_lower_bounds_at_or_above_it(r):
    """Below the cutoff every score is exact; above it a lower bound (the cut at F, or the pair's
    ridge score, which is the score itself when the ball is inactive) may stand in, never below
    the cutoff."""
    from itertools import combinations

    sess = _session(5, 30, 40, 0.5, r)  # r = 0.05: the ball is active for most supports
    F = np.array([1, 4], dtype=np.int64)
    C = np.setdiff1d(np.arange(40), F)
    A = np.array(list(combinations(range(C.size), 2)), dtype=np.int64)
    S, exact = sess._score_with(F, C, A, sess._gcc(C))
    cutoff = float(np.quantile(exact, 0.2))
    S2, vals = sess._score_with(F, C, A, sess._gcc(C), cutoff=cutoff)
    np.testing.assert_array_equal(S2, S)
    below = exact < cutoff
    np.testing.assert_allclose(vals[below], exact[below], rtol=1e-12)
    assert np.all(vals[~below] >= cutoff) and np.all(vals[~below] <= exact[~below] * (1 + 1e-12))
    if np.isfinite(r):
        assert (vals[~below] < exact[~below] * (1 - 1e-6)).any()  # the shortcut was taken somewhere


@pytest.mark.parametrize("lam,r", [(0.5, np.inf), (0.5, 0.3), (10.0, 1.1), (1e-3, 0.05)],
                         ids=["unbounded", "ball-active", "lam10", "tiny-lam-active"])
@pytest.mark.parametrize("F", [[], [0], [2, 5], [1, 3, 4]], ids=lambda F: f"F{len(F)}")
def test_pair_bounds_are_the_ridge_score_and_bound_the_score(lam, r, F):
    """The closed form of a pair's completion: equal to the score without the l2 bound (every pair
    of 14 candidates, the near-collinear pair 0, 1 included), never above the score with it."""
    from itertools import combinations

    sess = _session(9, 30, 40, lam, r)
    F = np.array(F, dtype=np.int64)
    C = np.setdiff1d(np.arange(40), F)[:14]
    A = np.array(list(combinations(range(C.size), 2)), dtype=np.int64)
    lb = sess._closed_form_bounds(F, C, A, sess._gcc(C))
    S = np.sort(np.concatenate([np.broadcast_to(F, (len(A), F.size)), C[A]], axis=1), axis=1)
    ridge = RidgeScore(sess.score.X, sess.score.y, lam=lam, r=np.inf)(S)
    assert np.isfinite(lb).mean() > 0.9
    fin = np.isfinite(lb)
    np.testing.assert_allclose(lb[fin], ridge[fin], rtol=1e-9, atol=1e-12)
    assert np.all(lb <= sess.score(S))


@pytest.mark.parametrize("lam,r", [(0.5, np.inf), (0.5, 0.05), (10.0, 1.1)], ids=["unbounded", "ball-active", "lam10"])
@pytest.mark.parametrize("F", [[], [3], [1, 4], [0, 2, 7]], ids=lambda F: f"F{len(F)}")
def test_compiled_leaf_pairs_match_the_numpy_path(lam, r, F):
    """The compiled pass over a leaf's pairs (candidates in a non-sorted order, as a child's are)
    gives the numpy path's sorted supports, the same exact scores below the cutoff, and values at
    or above the cutoff (never above the score) elsewhere."""
    from itertools import combinations

    sess = _session(4, 30, 40, lam, r)
    F = np.array(F, dtype=np.int64)
    C = np.random.default_rng(1).permutation(np.setdiff1d(np.arange(40), F))[:16]
    A = np.array(list(combinations(range(C.size), 2)), dtype=np.int64)
    GCC = sess._gcc(C)
    S0, exact = sess._score_with(F, C, A, GCC)
    cutoff = float(np.quantile(exact, 0.25))
    out = {}
    for compiled in (True, False):
        sess.partial_compiled = compiled
        out[compiled] = sess._score_with(F, C, A, GCC, cutoff=cutoff)
    for S, vals in out.values():
        np.testing.assert_array_equal(S, S0)
        below = exact < cutoff
        np.testing.assert_allclose(vals[below], exact[below], rtol=1e-12)
        assert np.all(vals[~below] >= cutoff) and np.all(vals[~below] <= exact[~below] * (1 + 1e-9))
    np.testing.assert_allclose(out[True][1], out[False][1], rtol=1e-9)


def _leaf(lam, r, F, c=16):
    from itertools import combinations

    sess = _session(4, 30, 40, lam, r)
    F = np.array(F, dtype=np.int64)
    C = np.random.default_rng(1).permutation(np.setdiff1d(np.arange(40), F))[:c]
    A = np.array(list(combinations(range(C.size), 2)), dtype=np.int64)
    return sess, F, C, A


@pytest.mark.parametrize("lam,r", [(0.5, np.inf), (10.0, 1.1), (1e-3, 0.05)], ids=["unbounded", "lam10", "tiny-lam"])
@pytest.mark.parametrize("F", [[3], [1, 4], [0, 2, 7], [1, 3, 4, 9]], ids=lambda F: f"F{len(F)}")
def test_compiled_pair_terms_match_numpy_and_bound_every_pair(lam, r, F):
    """The compiled pair terms (node_kernels.pair_terms) equal the numpy reference to rounding, and
    the pair bounds built on them are below the exact score of every pair of the leaf (the ridge
    score without the l2 bound, itself below the score)."""
    from dpbench.core.oracle.node_kernels import pair_bounds, pair_terms_numpy

    sess, F, C, A = _leaf(lam, r, F, c=20)
    assert sess.partial_compiled
    R0, t, mC, U = sess._pair_terms(F, C)
    sc = sess.score
    tn, mCn, Un = pair_terms_numpy(sess._rows(F, np.concatenate([F, C])), sc.c[F], sc.c[C], sc.col_sq[C], sc.lam)
    scale = max(1.0, float(sess.score.yy))
    np.testing.assert_allclose(t, tn, rtol=1e-10, atol=1e-12 * scale)
    np.testing.assert_allclose(mC, mCn, rtol=1e-10, atol=1e-12 * scale)
    np.testing.assert_allclose(U, Un, rtol=1e-10, atol=1e-12 * scale)
    assert U.shape == (F.size, C.size) and U.flags.c_contiguous
    exact = sess._score_with(F, C, A, sess._gcc(C))[1]
    lb = pair_bounds(sess._gcc(C), A, t, mC, U, R0, sess.score.lam)
    assert np.all(lb <= exact * (1 + 1e-12) + 1e-12)
    assert np.isfinite(lb).mean() > 0.9  # the bounds are not vacuous


@pytest.mark.parametrize("lam,r", [(0.5, np.inf), (0.5, 0.05), (10.0, 1.1)], ids=["unbounded", "ball-active", "lam10"])
@pytest.mark.parametrize("F", [[], [3], [1, 4], [0, 2, 7]], ids=lambda F: f"F{len(F)}")
@pytest.mark.parametrize("q", [0.0, 0.25, 1.0])
@pytest.mark.parametrize("rows", ["all", 3])
def test_leaf_pair_scan_keeps_the_pairs_leaf_pairs_keeps(lam, r, F, q, rows):
    """The scan over a leaf's pairs straight from the cached Gram returns exactly the rows that
    leaf_pairs (on the gathered block X_C^T X_C) leaves below the cutoff, in the same order, and the
    smallest of leaf_pairs' other values, bit for bit, with its first pair; with ``rows`` = 3, the
    same over the pairs whose first position is below 3 (a node's first three open children)."""
    from dpbench.core.oracle.node_kernels import leaf_pair_scan, leaf_pairs

    sess, F, C, A = _leaf(lam, r, F)
    rows = C.size if rows == "all" else rows
    A = A[A[:, 0] < rows]
    exact = sess._score_with(F, C, A, sess._gcc(C))[1]
    cutoff = float(np.quantile(exact, q)) + (1e-6 if q == 1.0 else 0.0)
    const, W = sess._partial(F)[0]
    R0, t, mC, U = sess._pair_terms(F, C)
    cut0 = float(const - W[F].sum())
    _, vals, need = leaf_pairs(F, C, A, sess._gcc(C), t, mC, U, R0, float(sess.score.lam), cut0, W, cutoff)
    kept, low, low_pair = leaf_pair_scan(C, sess.score.cached_gram(), t, mC, U, R0, float(sess.score.lam), cut0, W,
                                         cutoff, rows)
    np.testing.assert_array_equal(kept, A[need].reshape(-1, 2))
    if need.all():
        assert low == np.inf and list(low_pair) == [-1, -1]
    else:
        assert low == vals[~need].min()
        assert list(low_pair) == list(A[~need][np.argmin(vals[~need])])
    assert 0 < need.sum() < need.size or q in (0.0, 1.0)  # the middle cutoff exercises both branches


def _lexicographic_scan(C, G, t, mC, U, R0, lam, cut0, W, cutoff, rows):
    """leaf_pair_scan's definition: every pair visited in lexicographic order, the first smallest
    closed bound kept with a strict comparison (the kernel before session 27, in Python)."""
    from dpbench.core.oracle.node_kernels import _pair_bound

    need, low, low_pair, lo = [], np.inf, [-1, -1], lam * (1 - 1e-9)
    for i in range(min(rows, C.size)):
        for j in range(i + 1, C.size):
            lb = cut0 - W[C[i]] - W[C[j]]
            if lb < cutoff:
                lb = _pair_bound(G[C[i], C[j]], U, i, j, mC, t, R0, lam, lo)
                if not lb >= cutoff:
                    need.append((i, j))
                    continue
            if lb < low:
                low, low_pair = lb, [i, j]
    return np.array(need, dtype=np.int64).reshape(-1, 2), low, low_pair


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weights", ["distinct", "tied", "rounded-ties", "duplicated", "nan"])
@pytest.mark.parametrize("c", [23, 71])
def test_leaf_pair_scan_keeps_what_a_lexicographic_visit_keeps(seed, weights, c):
    """The scan visits the candidates by decreasing cut weight, each with its partners after it in
    that order; it must return exactly what visiting every pair in lexicographic order returns,
    the first smallest closed bound included, when weights tie exactly ("tied"), when distinct
    weights give bounds that round to the same value ("rounded-ties": cut0 = 1e17, where the order
    of the two subtractions matters), when candidates come in identical twins, so that pair bounds
    tie too ("duplicated"), and with a NaN weight; over all pairs and over a node's first rows."""
    from dpbench.core.oracle.node_kernels import _pair_bound, leaf_pair_scan

    rng = np.random.default_rng(seed)
    p, f, lam = 80, 2, 1.0
    X = rng.normal(size=(30, p))
    C = rng.permutation(p)[:c].astype(np.int64)
    U = 0.3 * rng.normal(size=(f, c))
    W = rng.normal(size=p)
    if weights == "duplicated":
        X[:, C[1::2]], U[:, 1::2] = X[:, C[:-1:2]], U[:, :-1:2]  # the cut weights stay apart
    G = X.T @ X
    mC = G[C, C] + lam - (U * U).sum(axis=0)
    t = rng.normal(size=c) * 3
    if weights == "duplicated":
        t[1::2] = t[:-1:2]
    cut0, R0 = 5.0, 10.0
    if weights == "tied":
        W = np.round(W * 2) / 2
    elif weights == "rounded-ties":
        cut0 = 1e17
    elif weights == "nan":
        W[C[rng.integers(c, size=2)]] = np.nan
    for rows in (c, 5, c // 2):
        lbs = [cut0 - W[C[i]] - W[C[j]] for i in range(c) for j in range(i + 1, c)]
        pbs = [_pair_bound(G[C[i], C[j]], U, i, j, mC, t, R0, lam, lam * (1 - 1e-9)) for i in range(c)
               for j in range(i + 1, c)]  # cutoffs above every cut bound: the pair bounds decide
        for cutoff in np.nanquantile(lbs, [0.0, 0.2, 0.5, 0.8]).tolist() + np.quantile(pbs, [0.1, 0.5]).tolist() + [np.inf]:
            args = (C, G, t, mC, U, R0, lam, cut0, W, float(cutoff), rows)
            kept, low, low_pair = leaf_pair_scan(*args)
            ref_kept, ref_low, ref_pair = _lexicographic_scan(*args)
            np.testing.assert_array_equal(kept, ref_kept)
            assert low == ref_low and list(low_pair) == ref_pair


@pytest.mark.parametrize("target", ["best", "below", "rank"])
@pytest.mark.parametrize("F", [[3], [0, 2, 7]], ids=lambda F: f"F{len(F)}")
def test_a_scanned_leaf_leaves_its_target_as_the_blocks_do(target, F):
    """The search's leaf step through the scan (BranchAndBound._scan_leaf) leaves the optimum and
    threshold targets exactly as offering every pair's block value does: same incumbent and ties,
    same kept supports and values in the same order, same smallest value above the bar."""
    from dpbench.core.oracle.targets import _BelowTarget, _BestTarget

    sess, F, C, A = _leaf(10.0, 1.1, F)
    s = F.size + 2
    exact = sess._score_with(F, C, A, sess._gcc(C))[1]
    S_all = np.sort(np.concatenate([np.broadcast_to(F, (A.shape[0], F.size)), C[A]], axis=1), axis=1)
    tau = float(np.quantile(exact, 0.3))

    def make():
        if target == "best":
            i = int(np.argsort(exact)[len(exact) // 3])
            return _BestTarget(S_all[i], float(exact[i]), 0.0, set())
        return _BelowTarget(tau, 7 if target == "rank" else None, [], set(), 10**6, s)

    scanned, blocks = make(), make()
    assert sess._scan_leaf(F, C, 2, scanned)
    blocks.offer(*sess._score_with(F, C, A, sess._gcc(C), cutoff=blocks.bar()))
    if target == "best":
        assert scanned.ties == blocks.ties and scanned.vmin == blocks.vmin
        np.testing.assert_array_equal(scanned.S, blocks.S)
    else:
        for a, b in zip(scanned.S, blocks.S, strict=True):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(scanned.v, blocks.v, strict=True):
            np.testing.assert_array_equal(a, b)
        assert scanned.above == blocks.above and scanned.tau == blocks.tau and scanned.count == blocks.count
