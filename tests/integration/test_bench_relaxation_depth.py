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
