"""The Schur/Gershgorin branch and bound of unconstrained OA calls (issue 15) against brute force.

* :func:`dpbench.core.oracle.bounds._row_tops` and :func:`gram_row_tops` (symmetric tiles, group
  maxima, universes) against exact sorting of the Gram rows;
* the cheap floor on the Gershgorin radius never exceeds the radius the node bound uses;
* node bounds built from universe-restricted tops never exceed any completion's score;
* the OA path that tries the Gershgorin search (and the one that falls back to the master
  when its node budget runs out) returns the brute-force optimum with a valid lower bound.
"""

import numpy as np
import pytest

from dpbench.core.oracle.bounds import _row_tops, gram_row_tops
from dpbench.core.oracle.constraints import ConstraintSet
from dpbench.bench.registry import registry
from dpbench.core.score import RidgeScore
from dpbench.core.supports import iter_supports
from dpbench.testing import all_supports


def _problem(seed, n, p, lam, r, rho=0.0):
    """Clipped regression with a 3-sparse signal; rho > 0 correlates neighbouring columns."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, p))
    X = Z.copy()
    for j in range(1, p):
        X[:, j] = rho * X[:, j - 1] + np.sqrt(1 - rho * rho) * Z[:, j]
    beta = np.zeros(p)
    beta[[0, 3, 7]] = [0.7, -0.5, 0.6]
    y = X @ beta + 0.5 * rng.standard_normal(n)
    return RidgeScore(np.clip(X, -0.5, 0.5) if seed % 2 else X * 0.3, np.clip(y, -0.5, 0.5), lam=lam, r=r)


def test_row_tops_is_exact_including_ties_and_tails():
    rng = np.random.default_rng(0)
    for _ in range(300):
        r, L, k = int(rng.integers(1, 6)), int(rng.integers(1, 1500)), int(rng.integers(1, 6))
        B = np.abs(rng.standard_normal((r, L))).astype(np.float32)
        if rng.random() < 0.4:
            B = np.round(B, 1)  # many ties
        kk = min(k, L)
        got = np.sort(_row_tops(B, k), axis=1)
        assert got.shape == (r, kk)
        np.testing.assert_array_equal(got, np.sort(B, axis=1)[:, L - kk:].astype(np.float64))


@pytest.mark.parametrize("mode", ["full", "columns"])
def test_gram_row_tops_tiles_and_universe_bound_the_exact_tops(mode):
    rng = np.random.default_rng(1)
    n, p, q = 30, 301, 3
    X = rng.standard_normal((n, p))
    X[:, 5] = X[:, 4]  # an exact duplicate: |G_45| is the largest entry of both rows
    score = RidgeScore(X, rng.standard_normal(n), lam=1.0, gram=mode)
    u = 1e-16 if mode == "full" else 2.0 ** -24
    slack = 1.1 * (n + 3) * u * score.col_sq.max() * q * 4 + 1e-12
    for universe in (None, np.sort(rng.choice(p, 97, replace=False)), np.array([4, 5, 9])):
        U = np.arange(p) if universe is None else universe
        E = gram_row_tops(score, q, block_bytes=4 * 40 ** 2, universe=universe)  # tiles of 40 x 40
        G = np.abs(X[:, U].T @ X[:, U])
        np.fill_diagonal(G, 0.0)
        qq = min(q, U.size - 1)
        exact = np.cumsum(-np.sort(-G, axis=1)[:, :qq], axis=1)
        exact = np.concatenate([exact, np.repeat(exact[:, -1:], q - qq, axis=1)], axis=1)
        assert np.all(E[U] >= exact) and np.all(E[U] <= exact + slack)
        outside = np.setdiff1d(np.arange(p), U)
        assert np.all(np.isinf(E[outside]))


def _session(score, s, **kw):
    return registry().solver("highs")(**kw).session(score, s)


@pytest.mark.parametrize("seed,rho", [(0, 0.0), (1, 0.0), (2, 0.5), (3, 0.5)])
def test_gershgorin_floor_never_exceeds_the_radius_used(seed, rho):
    score = _problem(seed, n=120, p=60, lam=2.0, r=1.1, rho=rho)
    sess = _session(score, 4)
    for F in ([], [0], [3, 11]):
        F = np.array(F, dtype=np.int64)
        C = np.setdiff1d(np.arange(score.p), F)
        for m in range(2, 5 - F.size):
            floor = sess._gershgorin_floor(F, C, m)
            rho_used = sess._ridge_node(F, C, m)[4]
            assert floor <= rho_used * (1 + 1e-12), (F, m, floor, rho_used)


@pytest.mark.parametrize("r", [np.inf, 1.1, 0.3])
@pytest.mark.parametrize("seed", [0, 1])
def test_node_bounds_from_universe_tops_are_valid_on_random_nodes(seed, r):
    """R0(F) - node <= R(F ∪ T) and R0(F) - per[j] <= R(F ∪ T) for j in T, every T ⊂ C ⊂ universe."""
    s = 4
    score = _problem(seed, n=150, p=48, lam=1.0, r=r)
    ridge = RidgeScore(score.X, score.y, lam=score.lam, r=np.inf)
    rng = np.random.default_rng(seed)
    sess = _session(score, s)
    U = np.sort(rng.choice(score.p, 12, replace=False))  # at most p / 4: a proper universe
    sess._ensure_tops(U)
    assert sess._tops_in is not None and sess._tops_in.sum() == U.size
    checked = 0
    for _ in range(12):
        f = int(rng.integers(0, 3))
        F = np.sort(rng.choice(U, f, replace=False))
        C = np.setdiff1d(U, F)
        C = C[rng.random(C.size) < 0.8]
        m = s - f
        if C.size < m or m < 2:
            continue
        R0, h, node, per, rho = sess._ridge_node(F, C, m)
        T = C[np.concatenate(list(iter_supports(C.size, m)))]
        S = np.sort(np.concatenate([np.repeat(F[None], len(T), 0), T], axis=1), axis=1)
        vals = ridge(S)
        assert np.all(score(S) >= vals - 1e-9 * np.abs(vals))  # the l2 bound only raises the score
        if np.isfinite(node):
            checked += 1
            assert np.all(R0 - node <= vals + 1e-9 * np.abs(vals))
            for j in range(C.size):
                has = (T == C[j]).any(axis=1)
                assert np.all(R0 - per[j] <= vals[has] + 1e-9 * np.abs(vals[has]))
    assert checked >= 3  # the bound was finite (rho < 1) on enough nodes to test something


def test_a_search_universe_gets_its_own_tops_whatever_ran_before():
    """Issue 22: the node bounds of a search depend on its universe alone, not on earlier calls, so a
    root searched in a forked child or a cluster task has the bounds it has in the caller."""
    from dpbench.core.oracle.bounds import gram_row_tops

    score = _problem(0, n=60, p=40, lam=1.0, r=np.inf)
    q = 3
    small, big = np.arange(8), np.arange(30)
    fresh, used = _session(score, q + 1), _session(score, q + 1)
    used._ensure_tops(big)  # more than p / 4: the tops over all p
    assert used._tops_in is None
    np.testing.assert_array_equal(used._tops, gram_row_tops(score, q))
    used._ensure_tops(small)  # covered by the tops over all p, yet it gets its own (stronger) ones
    fresh._ensure_tops(small)
    np.testing.assert_array_equal(used._tops, fresh._tops)
    np.testing.assert_array_equal(fresh._tops[small], gram_row_tops(score, q, universe=small)[small])
    assert np.all(fresh._tops[small] <= gram_row_tops(score, q)[small])
    # a copy's tops over all p are adopted and reused, not recomputed
    assert fresh.data_caches() == {}
    fresh.adopt_data_caches(used.data_caches())
    assert fresh._tops_cache["all"] is used._tops_cache["all"]
    fresh._ensure_tops(big)
    assert fresh._tops is used._tops_cache["all"]


@pytest.mark.parametrize("lam,r", [(0.1, 1.1), (1.0, np.inf), (10.0, 0.3), (120.0, 1.1)])
def test_oa_path_with_gershgorin_branch_and_bound_matches_brute_force(lam, r):
    """Unconstrained OA calls (enumeration off) with the Gershgorin search: the brute-force
    optimum, certified, lower bound valid; with a 1-node budget the OA master finishes."""
    s, p = 3, 30
    paths = []
    # The 1-node budget leaves most calls to the OA master, which needs 100+ iterations at
    # lam = 0.1 (tens of seconds): that fall-back is tested at lam >= 1 only.
    for seed, budget in ((0, 2000), (1, 2000)) + (((0, 1),) if lam >= 1 else ()):
        score = _problem(seed, n=200, p=p, lam=lam, r=r)
        S_all = all_supports(p, s)
        vals = score(S_all)
        rng = np.random.default_rng(seed)
        best = S_all[np.argmin(vals)]
        for kw in ({}, {"fixed_in": [int(rng.integers(p))]}, {"fixed_out": rng.choice(p, 6, replace=False)},
                   {"exclude": [best]}):
            sess = _session(score, s, enum_limit=0, leaf_limit=4, pair_leaf_limit=0, gershgorin_nodes=budget)
            # Root relaxation first, never the survivors' own search (the master is the fall-back).
            sess.relax_cand, sess.relax_bnb, sess.relax_bnb_max = 0, 0, 0
            res = sess.solve(**kw)
            cons = ConstraintSet.build(p, s, kw.get("exclude", ()), None, kw.get("fixed_in", ()),
                                       kw.get("fixed_out", ()))
            opt = vals[cons.feasible_mask(S_all)].min()
            assert res.status == "optimal", res
            assert abs(res.objective - opt) <= 1e-9 * max(1.0, opt), (res, opt, kw)
            assert res.lower_bound <= opt + 1e-9 * max(1.0, opt)
            paths.append((budget, "Gershgorin" in res.message))
    if lam < 100:
        assert any(g for b, g in paths if b > 1)  # the search itself certified some of these calls
