"""A node's product X^T alpha formed on its own features only, and the per-feature bounds of a closed node.

``product_on`` dots the rows of X^T of a node's fixed-in and candidate features when they are a
small part of p (NaN elsewhere); the node relaxation then gives the bound, dual point,
per-feature bounds and warm start of the product over all of X (to rounding), and the branch
and bound the brute-force optimum and threshold lists with the restricted products in use.
``dual_bounds_1(..., per_below)`` skips the per-feature bounds of a node its caller closes and
gives each feature the node bound, which never exceeds the feature's own bound (valid).
"""

import itertools

import numpy as np
import pytest

from dpbench.bench.registry import registry
from dpbench.core.oracle import kernels as K
from dpbench.core.oracle import relaxation as rx
from dpbench.core.oracle import working_set as WS
from dpbench.core.oracle.limits import TIE_RTOL, canonical_minimum
from dpbench.core.score import RidgeScore

from helpers.relaxation import tied_problem


def _score(n=37, p=90, seed=0, lam=2.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X[:, 5] = X[:, 4] + 0.1 * rng.normal(size=n)
    y = X[:, [4, 10, 30]] @ np.array([1.0, -0.7, 0.5]) + 0.4 * rng.normal(size=n)
    return RidgeScore(X, y, lam=lam, r=1.1)


@pytest.mark.parametrize("n", [1, 7, 8, 37])  # shorter than, equal to and past one 8-wide step
def test_rows_dot_is_the_product_on_its_rows(n):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 50))
    alpha = rng.normal(size=n)
    rows = np.array([0, 3, 17, 49], dtype=np.int64)
    out = np.full(50, np.nan)
    WS.rows_dot(np.ascontiguousarray(X.T), alpha, rows, out)
    np.testing.assert_allclose(out[rows], (X.T @ alpha)[rows], rtol=1e-13, atol=1e-13)
    assert np.isnan(np.delete(out, rows)).all()


def test_product_on_forms_only_small_feature_sets(monkeypatch):
    score = _score()
    alpha = np.random.default_rng(1).normal(size=score.n)
    full = score.X.T @ alpha
    few = np.array([2, 9, 40, 41, 88], dtype=np.int64)
    a = WS.product_on(score, alpha, few)
    np.testing.assert_allclose(a[few], full[few], rtol=1e-13, atol=1e-13)
    assert np.isnan(np.delete(a, few)).all()
    many = np.arange(0, score.p, 2, dtype=np.int64)  # half of p: the product over all of X
    np.testing.assert_array_equal(WS.product_on(score, alpha, many), full)
    np.testing.assert_array_equal(WS.product_on(score, alpha, None), full)
    monkeypatch.setattr(WS, "PRODUCT_XT_MAX_FLOATS", score.n * score.p - 1)  # X^T too large to keep
    np.testing.assert_array_equal(WS.product_on(score, alpha, few), full)


def test_product_from_the_gram_rows_of_the_nonzero_coefficients(monkeypatch):
    """With ``coef = (W, beta)``, ``X^T y - G[:, W] beta`` replaces ``X^T alpha`` when it reads less
    (nnz(beta) p < n |features|): the same numbers to rounding on every feature, and the path is
    taken only then (spied), never without a cached Gram."""
    score = _score(n=60, p=90)
    rng = np.random.default_rng(3)
    W = np.array([1, 4, 10, 30, 31, 77], dtype=np.int64)
    beta = rng.normal(size=W.size)
    beta[2] = 0.0  # skipped row
    alpha = score.y - score.X[:, W] @ beta
    full = score.X.T @ alpha
    calls = []
    orig = WS.gram_product
    monkeypatch.setattr(WS, "gram_product", lambda *a: calls.append(1) or orig(*a))
    a = WS.product_on(score, alpha, None, (W, beta))
    assert calls and not np.isnan(a).any()
    np.testing.assert_allclose(a, full, rtol=1e-12, atol=1e-12 * np.abs(full).max())
    few = np.array([2, 9, 40], dtype=np.int64)  # 5 rows of p = 90 read more than 60 rows of 3 features
    calls.clear()
    np.testing.assert_allclose(WS.product_on(score, alpha, few, (W, beta))[few], full[few], rtol=1e-13, atol=1e-13)
    assert not calls
    cols = RidgeScore(score.X, score.y, lam=score.lam, r=score.r, gram="columns")  # no cached Gram
    np.testing.assert_array_equal(WS.product_on(cols, alpha, None, (W, beta)), full)
    assert not calls


def test_columns_of_are_the_columns_of_x(monkeypatch):
    score = _score()
    W = np.array([3, 4, 60, 7], dtype=np.int64)
    np.testing.assert_array_equal(WS.columns_of(score, W), score.X[:, W])
    monkeypatch.setattr(WS, "PRODUCT_XT_MAX_FLOATS", 0)
    np.testing.assert_array_equal(WS.columns_of(score, W), score.X[:, W])


def test_node_relaxation_is_the_same_with_the_restricted_product(monkeypatch):
    """A node with 2 fixed and 20 of 90 candidates: the restricted product (used: spied) gives the
    full product's bound, dual point, per-feature bounds on the node and warm start."""
    score = _score()
    F = np.array([4, 10], dtype=np.int64)
    C = np.array(sorted(set(range(0, 80, 4)) - {4}), dtype=np.int64)
    calls = []
    orig = WS.rows_dot

    def spy(*args):
        calls.append(args[2].size)
        return orig(*args)

    out = {}
    for share in (WS.PRODUCT_SHARE, 0.0):  # 0: every product over all of X
        monkeypatch.setattr(WS, "PRODUCT_SHARE", share)
        monkeypatch.setattr(WS, "rows_dot", spy)
        warm = None
        res = []
        for _ in range(2):  # cold, then warm-started from the first solve
            b, alpha, per, (warm, a) = rx.relaxation_bound(score, F, [(C, 3)], per_feature=True, method="prox",
                                                           with_warm=True, warm=warm, width=6)
            res.append((b, alpha, per, warm, a))
        out[share] = res
    assert calls and all(k == F.size + C.size for k in calls)
    node = np.concatenate([F, C])
    for (b, alpha, per, warm, a), (b0, alpha0, per0, warm0, a0) in zip(out[WS.PRODUCT_SHARE], out[0.0]):
        assert b == pytest.approx(b0, rel=1e-10)
        np.testing.assert_allclose(alpha, alpha0, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(per[node], per0[node], rtol=1e-10)
        np.testing.assert_allclose(a[node], a0[node], rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(warm[0], warm0[0])


def test_dual_bounds_per_below_gives_the_node_bound_to_a_closed_node():
    rng = np.random.default_rng(3)
    a = rng.normal(size=30)
    fixed = np.array([1, 2], dtype=np.int64)
    gidx = np.arange(5, 25, dtype=np.int64)
    gptr, needs = np.array([0, gidx.size], dtype=np.int64), np.array([3], dtype=np.int64)
    args = (a, 4.0, 3.0, 2.0, 1.1, fixed, gptr, gidx, needs, True)
    b, per, T2 = K.dual_bounds_1(*args)
    b_open, per_open, _ = K.dual_bounds_1(*args, b + 1.0)  # node stays open: the full per-feature bounds
    np.testing.assert_array_equal(per_open, per)
    b_closed, per_closed, T2c = K.dual_bounds_1(*args, b)  # closed at its own bound
    assert b_closed == b and T2c == T2
    node = np.concatenate([fixed, gidx])
    assert (per_closed[node] == b).all() and np.isinf(np.delete(per_closed, node)).all()
    assert (per_closed[node] <= per[node]).all()  # the node bound is below each feature's own: still valid


@pytest.mark.parametrize("lam,r", [(0.1, 1.1), (1.0, np.inf)])
@pytest.mark.parametrize("seed", [0, 1])
def test_branch_and_bound_matches_brute_force_with_restricted_products(lam, r, seed, monkeypatch):
    """Optimum and a threshold list of a swap level on 30 features, s = 3, every node relaxed (as in
    test_relax_budget.py), a node's product restricted whenever its features are at most half of p
    (spied: used)."""
    p, s = 30, 3
    X, y = tied_problem(seed, n=25, p=p, dup=seed == 0)
    score = RidgeScore(X, y, lam=lam, r=r)
    monkeypatch.setattr(WS, "PRODUCT_SHARE", 0.5)
    used = []
    orig = WS.rows_dot
    monkeypatch.setattr(WS, "rows_dot", lambda *args: (used.append(args[2].size), orig(*args))[1])
    S = np.array(list(itertools.combinations(range(p), s)), dtype=np.int64)
    sc = score(S)

    def session():
        # child_batch = 0: with tail nodes this search closes before any node is narrow enough
        sess = registry().solver("highs")(enum_limit=0, leaf_limit=5, pair_leaf_limit=0, gershgorin=False,
                                          child_batch=0).session(score, s)
        sess.relax_after, sess.relax_bnb, sess.relax_cand, sess.relax_overlap_after = 0, 1000, 0, 0
        return sess

    want_S, want_v = canonical_minimum(S, sc)
    res = session().solve()
    assert res.status == "optimal"
    np.testing.assert_array_equal(np.sort(res.support), want_S)
    np.testing.assert_allclose(res.objective, want_v, rtol=TIE_RTOL)
    overlap = (np.arange(5), 1)
    level = np.isin(S, overlap[0]).sum(axis=1) == 1
    tau = float(np.sort(sc)[60])
    got = session().supports_below(tau, overlap=overlap)
    assert got.certified
    want = {tuple(row) for row in S[level & (sc <= tau)].tolist()}
    assert {tuple(row) for row in np.sort(got.supports, axis=1).tolist()} == want
    assert used and max(used) <= p // 2
