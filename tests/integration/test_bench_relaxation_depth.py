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
    row = bench.sibling_rows(score, s, 500, {"enum_limit": 0, "leaf_limit": 1, "open_pairs": 0}, keep_nodes=True)
    assert row["bounded"], "no node had a relaxed sibling before it: the test exercises nothing"
    for F, C, m, b in row["bounded"]:
        assert b <= _min_score(score, F, C, m) * (1 + 1e-9)
    depths = row["depths"]
    assert sum(d["with_sibling"] for d in depths) == len(row["bounded"])
    for d in depths:
        assert d["closed_by_relaxation"] <= d["relaxed"] and d["with_sibling"] <= d["relaxed"]
        assert d["closed_by_sibling_only"] <= d["closed_by_sibling"] <= d["with_sibling"]
