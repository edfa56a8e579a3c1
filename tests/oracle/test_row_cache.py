"""Regression test of the Gram-row cache of the OA session (issue 15).

When the cache overflowed it was cleared and only the rows missing at that moment were
refilled, so the rows of the same call that had been cache hits were gone: ``KeyError``
after minutes at n = 200, p = 10 000. A cache of one row forces an overflow on every
partial support with two or more features; the answers must still equal brute force.
"""

import numpy as np
import pytest

from dpbench.core.supports import iter_supports
from dpbench.core.score import RidgeScore


def _problem(seed, n=50, p=14, lam=2.0, r=1.1):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.standard_normal((n, p)), -0.5, 0.5)
    beta = np.zeros(p)
    beta[[0, 3, 5, 7]] = 0.5
    y = np.clip(X @ beta + 0.3 * rng.standard_normal(n), -0.5, 0.5)
    return RidgeScore(X, y, lam=lam, r=r)


@pytest.mark.parametrize("seed", [0, 1])
def test_tiny_row_cache_overflow_keeps_answers_exact(seed):
    from dpbench.core.oracle import OASession
    from dpbench_plugins.solvers.highs import solve_master_highs

    s = 4
    score = _problem(seed)
    S_all = np.concatenate(list(iter_supports(score.p, s)))
    v_all = score(S_all)
    sess = OASession(score, s, "highs", solve_master_highs, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
    sess._row_cap = 1  # every partial support of >= 2 features overflows the cache
    S1 = S_all[np.argmin(v_all)]
    for t in (1, 2, 3):
        res = sess.solve(overlap=(S1, s - t))
        ok = np.isin(S_all, S1).sum(axis=1) == s - t
        best = v_all[ok].min()
        assert res.status == "optimal", res
        assert abs(res.objective - best) <= 2e-6 * best
        assert len(sess._row_cache) <= s  # bounded by one call's rows, not growing


@pytest.mark.parametrize("gram", ["full", "columns"])
@pytest.mark.parametrize("row_cap", [1, 64])
def test_rows_on_some_columns_are_those_columns_of_the_full_rows(gram, row_cap):
    """``_rows(F, cols)`` is ``_rows(F)[:, cols]`` entry for entry, for cols of any shape, with a
    cache that overflows on every call (row_cap = 1) or holds the rows."""
    from dpbench.core.oracle import OASession

    score = _problem(2)
    score = RidgeScore(score.X, score.y, lam=score.lam, r=score.r, gram=gram)
    sess = OASession(score, 4, "highs", None)
    sess._row_cap = row_cap
    rng = np.random.default_rng(0)
    for F in ([5], [0, 3], [1, 2, 9], [4, 6, 8, 13]):
        F = np.array(F, dtype=np.int64)
        full = sess._rows(F)
        for cols in (F, np.arange(score.p), rng.integers(0, score.p, size=7), rng.integers(0, score.p, size=(6, 2))):
            got = sess._rows(F, cols)
            assert got.shape == (F.size,) + cols.shape
            np.testing.assert_array_equal(got, full[:, cols])
    assert sess._rows(np.zeros(0, dtype=np.int64), np.arange(3)).shape == (0, 3)
