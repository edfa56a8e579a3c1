"""The relaxation-depth benchmark (benchmarks/bench_relaxation_depth.py; not timed).

On hitters (p = 19) its rows are checked against brute force: the reference is the certified
optimum, the root bound lies below it, no one-in bound exceeds the best support holding that
feature (the bounds are valid), and every feature whose best support beats the reference counts
among the one-in nodes below it.
"""

import itertools

import numpy as np
import pytest
from helpers.paths import benchmark_module


@pytest.fixture(scope="module")
def rows():
    bench = benchmark_module("bench_relaxation_depth")
    return bench, bench.depth_rows("hitters", 10.0, 2, [0, 3, 6], 10_000)


def test_rows_agree_with_brute_force(rows):
    bench, row = rows
    score, s = bench.make_score("hitters", 10.0)
    S = np.array(list(itertools.combinations(range(score.p), s)), dtype=np.int64)
    vals = score(S)
    ref = row["reference"]
    assert ref["status"] == "optimal" and ref["score"] == pytest.approx(vals.min(), rel=1e-9)
    assert ref["support"] == S[np.argmin(vals)].tolist()
    assert row["root"]["bound"] <= ref["score"] and row["root"]["gap"] >= 0
    # every bound is valid: the largest one-in bound is at most the best support holding that feature
    best_with = np.array([vals[(S == j).any(axis=1)].min() for j in range(score.p)])
    assert row["one_in"]["largest"] <= best_with.max() * (1 + 1e-9)
    # a one-in node at or above the reference holds no better support: at least as many nodes are
    # below the reference as features whose best support beats it
    assert row["one_in"]["below_reference"] >= int((best_with < ref["score"]).sum())
    assert [e["k"] for e in row["excluded"]] == [0, 3, 6]
    assert row["excluded"][0]["bound"] == pytest.approx(row["root"]["bound"], rel=1e-12)
    assert len(row["two_in"]) == 2 and all(t["of"] == score.p - 1 for t in row["two_in"])


def _min_score(score, F, C, m):
    """Brute force: the smallest score over the supports F ∪ A, A ⊂ C, |A| = m."""
    A = np.array(list(itertools.combinations(sorted(C), m)), dtype=np.int64).reshape(-1, m)
    S = np.sort(np.hstack([np.broadcast_to(np.asarray(F, dtype=np.int64), (A.shape[0], len(F))), A]), axis=1)
    return float(score(S).min())


def test_exclusion_orders_close_the_root_validly():
    """The exclusion counts are honest: with the features of either order fixed out, no support left
    beats the reference (brute force), and the optimum itself needs at least one exclusion."""
    bench = benchmark_module("bench_relaxation_depth")
    row = bench.depth_rows("hitters", 10.0, 0, [0], 10_000, greedy_max=10)
    score, s = bench.make_score("hitters", 10.0)
    ref = row["reference"]["score"]
    e = row["exclusion_orders"]
    assert e["static"] is not None and e["resolved"] is not None
    assert e["static"] >= 1 and e["resolved"] >= 1 and len(e["resolved_features"]) == e["resolved"]
    for out in (e["static_features"], e["resolved_features"]):
        assert len(set(out)) == len(out)
        left = np.setdiff1d(np.arange(score.p), out)
        assert _min_score(score, [], left, s) >= ref * (1 - 1e-9)


def test_sibling_bounds_are_valid_and_counted():
    """Every bound from a sibling's dual point is at most the node's best support (brute force), and
    the per-depth counts add up; small enumeration limits make hitters' search branch."""
    bench = benchmark_module("bench_relaxation_depth")
    score, s = bench.make_score("hitters", 10.0)
    row = bench.sibling_rows(score, s, 500, {"enum_limit": 0, "leaf_limit": 1, "pair_leaf_limit": 0, "open_pairs": 0}, keep_nodes=True)
    assert row["bounded"], "no node had a relaxed sibling before it: the test exercises nothing"
    for F, C, m, b in row["bounded"]:
        assert b <= _min_score(score, F, C, m) * (1 + 1e-9)
    depths = row["depths"]
    assert sum(d["with_sibling"] for d in depths) == len(row["bounded"])
    for d in depths:
        assert d["closed_by_relaxation"] <= d["relaxed"] and d["with_sibling"] <= d["relaxed"]
        assert d["closed_by_sibling_only"] <= d["closed_by_sibling"] <= d["with_sibling"]


def _fits(XC, B, E):
    """Whether t E (a PSD block on the features B) fits under X_C^T X_C for some t > 0: the
    smallest eigenvalue of X_C^T X_C - t E stays >= 0 for a small t (checked directly)."""
    G = XC.T @ XC
    full = np.zeros_like(G)
    full[np.ix_(B, B)] = E
    t = 1e-6 * np.linalg.norm(G, 2)
    return np.linalg.eigvalsh(G - t * full).min() >= -1e-9 * np.linalg.norm(G, 2)


def test_block_room_full_column_rank_leaves_every_block_free():
    """With X_C of full column rank the null space is {0}: every feature and pair may carry a block."""
    bench = benchmark_module("bench_relaxation_depth")
    XC = np.random.default_rng(0).standard_normal((9, 5))
    r = bench.block_room(XC)
    assert (r["rank"], r["null_dim"], r["free_features"], r["free_pairs"]) == (5, 0, 5, 10)
    assert r["min_relative_det"] is None
    assert _fits(XC, [1, 3], np.ones((2, 2)))


def test_block_room_wide_matrix_leaves_no_block_and_no_block_fits():
    """p > n + 1 in general position: the null space reaches every feature and pair, so no nonzero
    PSD block fits under the Gram matrix; the eigenvalues confirm it for every single feature and
    for every pair with a random PSD block."""
    bench = benchmark_module("bench_relaxation_depth")
    rng = np.random.default_rng(1)
    XC = rng.standard_normal((5, 8))
    r = bench.block_room(XC)
    assert (r["rank"], r["null_dim"], r["free_features"], r["free_pairs"]) == (5, 3, 0, 0)
    assert 0 < r["min_relative_det"] <= 1
    for i in range(8):
        assert not _fits(XC, [i], np.ones((1, 1)))
    for i, j in itertools.combinations(range(8), 2):
        L = rng.standard_normal((2, 2))
        assert not _fits(XC, [i, j], L @ L.T)


def test_block_room_finds_the_one_feature_outside_the_null_space():
    """A column on rows of its own is outside every null vector: it and each of its pairs are free
    (and its diagonal block fits), the other features and pairs are not."""
    bench = benchmark_module("bench_relaxation_depth")
    rng = np.random.default_rng(2)
    XC = np.zeros((5, 7))
    XC[:4, :6] = rng.standard_normal((4, 6))
    XC[4, 6] = 1.5
    r = bench.block_room(XC)
    assert (r["rank"], r["null_dim"], r["free_features"], r["free_pairs"]) == (5, 2, 1, 6)
    assert _fits(XC, [6], np.ones((1, 1)))
    assert not _fits(XC, [0], np.ones((1, 1)))


def test_block_rows_sample_the_search():
    """On hitters (p = 19 < n) every sampled node has a null space of dimension 0, so all its
    features and pairs are free; the sizes cover every relaxed node and the smallest is sampled."""
    bench = benchmark_module("bench_relaxation_depth")
    score, s = bench.make_score("hitters", 10.0)
    row = bench.block_rows(score, s, 500, every=3,
                           solver_params={"enum_limit": 0, "leaf_limit": 1, "pair_leaf_limit": 0, "open_pairs": 0})
    assert row["sampled"], "no node was relaxed: the test exercises nothing"
    relaxed = sum(z["relaxed"] for z in row["sizes"])
    assert len(row["sampled"]) in ((relaxed + 2) // 3, (relaxed + 2) // 3 + 1)
    assert min(z["size"] for z in row["sampled"]) == min(z["min"] for z in row["sizes"])
    assert all(z["at_most_n_plus_1"] == z["relaxed"] for z in row["sizes"])  # |C| <= 19 < n
    assert row["too_large"] == 0
    for z in row["sampled"]:
        c = z["size"]
        assert (z["rank"], z["null_dim"], z["free_features"], z["free_pairs"]) == (c, 0, c, c * (c - 1) // 2)


def test_sdp_bound_lies_between_the_k_support_bound_and_the_exact_minimum():
    """On small random nodes the semidefinite bound is valid (at most the exact minimum over the
    node's supports, brute force) and at least the k-support bound, as its docstring proves; the
    lifted l1 constraint only raises it and keeps it valid."""
    pytest.importorskip("cvxpy")
    from dpbench.core.oracle.relaxation import relaxation_bound
    from dpbench.core.score import RidgeScore

    bench = benchmark_module("bench_relaxation_depth")
    rng = np.random.default_rng(3)
    for n, c in ((6, 7), (10, 5)):  # more candidates than rows, and fewer
        X = rng.standard_normal((n, 1 + c)) * 0.3
        y = X[:, :3] @ np.array([0.5, -0.4, 0.3]) + 0.1 * rng.standard_normal(n)
        score = RidgeScore(X, y, lam=0.5, r=1.1)
        F, C = np.array([0]), np.arange(1, 1 + c)
        exact = _min_score(score, F, C, 2)
        ks = relaxation_bound(score, F, [(C, 2)], method="prox")[0]
        sdp, status = bench.sdp_bound(X[:, F], X[:, C], y, 0.5, 1.1, 2, solver="CLARABEL")
        sdp_l1, status_l1 = bench.sdp_bound(X[:, F], X[:, C], y, 0.5, 1.1, 2, solver="CLARABEL", l1=True)
        assert status == status_l1 == "optimal"
        tol = 1e-6 * abs(exact)
        assert ks <= sdp + tol and sdp <= sdp_l1 + tol and sdp_l1 <= exact + tol, (ks, sdp, sdp_l1, exact)


def test_sdp_rows_keep_open_nodes_and_bound_them_validly():
    """The row keeps nodes with two features left that their own relaxation leaves open, and on each
    the semidefinite bound (SCS, to its tolerance) lies between the k-support bound and the exact
    minimum; small enumeration limits make hitters' search relax such nodes."""
    pytest.importorskip("cvxpy")
    bench = benchmark_module("bench_relaxation_depth")
    score, s = bench.make_score("hitters", 10.0)
    row = bench.sdp_rows(score, s, 500, 3, solver_params={"enum_limit": 0, "leaf_limit": 1, "pair_leaf_limit": 0, "open_pairs": 0})
    assert len(row["open_nodes"]) == 3
    for z in row["open_nodes"]:
        assert z["k_support"] < z["bar"] and z["candidates"] <= 230
        assert z["k_support"] <= z["sdp"] * (1 + 1e-4) and z["sdp"] <= z["exact"] * (1 + 1e-4)


def test_block_rows_pass_over_nodes_too_large_for_the_projector(monkeypatch):
    """Nodes with more candidates than MAX_BLOCK_FEATURES are counted, not sampled (the projector
    is |C| x |C|), and at most MAX_BLOCK_SAMPLES nodes are kept."""
    bench = benchmark_module("bench_relaxation_depth")
    score, s = bench.make_score("hitters", 10.0)
    params = {"enum_limit": 0, "leaf_limit": 1, "pair_leaf_limit": 0, "open_pairs": 0}
    full = bench.block_rows(score, s, 500, every=1, solver_params=params)
    monkeypatch.setattr(bench, "MAX_BLOCK_FEATURES", 12)
    monkeypatch.setattr(bench, "MAX_BLOCK_SAMPLES", 3)
    row = bench.block_rows(score, s, 500, every=1, solver_params=params)
    big = sum(z["size"] > 12 for z in full["sampled"])
    assert big > 0 and row["too_large"] == big
    assert all(z["size"] <= 12 for z in row["sampled"]) and len(row["sampled"]) <= 4  # 3 + the smallest
