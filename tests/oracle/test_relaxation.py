"""The k-support dual bounds of dpbench.core.oracle.relaxation against brute-force enumeration.

Validity: on many small random problems (with exact duplicate columns, fixed-in/-out sets
and overlap constraints, lam in {0.1, 1, 10, 120}, r in {0.3, 1.1, inf}) no bound exceeds
the true constrained optimum, and no per-feature bound exceeds the optimum over the
feasible supports containing that feature, for the relaxation's alpha and for arbitrary
dual points. Strength: at small lam the bound closes a stated fraction of the gap left by
the OA cuts a session starts from (the cut at the optimum and at the empty support).
"""

import itertools

import numpy as np
import pytest

from dpbench.core.oracle import ConstraintSet, dual_cuts
from dpbench.core.oracle.relaxation import dual_bounds, dual_cut, groups_of, psi, relaxation_bound
from dpbench.core.score import RidgeScore
from helpers.relaxation import assert_per_feature_valid, tied_problem

TOL = 1e-9


def _all_scores(score, s):
    S = np.array(list(itertools.combinations(range(score.p), s)), dtype=np.int64)
    return S, score(S)


def _constraints(rng, p, s, kind):
    if kind == "plain":
        return ConstraintSet.build(p, s)
    if kind == "fixed":
        perm = rng.permutation(p)
        return ConstraintSet.build(p, s, fixed_in=perm[:1], fixed_out=perm[1:3])
    S0 = np.sort(rng.choice(p, s, replace=False))
    k = int(rng.integers(0, s))
    fout = rng.choice(np.setdiff1d(np.arange(p), S0), 1)
    return ConstraintSet.build(p, s, overlap=(S0, k), fixed_out=fout)


@pytest.mark.parametrize("lam", [0.1, 1.0, 10.0, 120.0])
@pytest.mark.parametrize("r", [0.3, 1.1, np.inf])
def test_bounds_never_exceed_brute_force(lam, r):
    s = 3
    for seed in range(6):
        X, y = tied_problem(seed, dup=seed % 2 == 0)
        score = RidgeScore(X, y, lam=lam, r=r)
        S, vals = _all_scores(score, s)
        rng = np.random.default_rng(100 + seed)
        for kind in ("plain", "fixed", "overlap"):
            cons = _constraints(rng, score.p, s, kind)
            ok = cons.feasible_mask(S)
            assert ok.any()
            opt = vals[ok].min()
            fixed, groups = groups_of(cons)
            extra = [rng.normal(size=score.n), y - X[:, S[ok][0]] @ np.linalg.lstsq(X[:, S[ok][0]], y, rcond=None)[0]]
            b, alpha, per = relaxation_bound(score, fixed, groups, alphas=extra, start=S[ok][0], per_feature=True,
                                             rounds=2, iters=25)
            assert b <= opt + TOL * max(1.0, opt), (kind, b, opt)
            assert b > 0.0 or opt < 1e-6 or kind != "plain" or r == np.inf
            assert_per_feature_valid(per, S, vals, ok, kind)
            # Arbitrary dual points (weak duality holds for every alpha, scaled or not).
            A = rng.normal(size=(5, score.n)) * rng.uniform(0.01, 3, size=(5, 1))
            for scale in (True, False):
                bb = dual_bounds(A @ X, A @ y, (A * A).sum(1), lam, r, fixed, groups, scale=scale)
                assert np.all(bb <= opt + TOL * max(1.0, opt))
            # The same alpha as an OA cut: valid for every support, its minimum is the bound.
            a = X.T @ alpha
            T = np.sqrt(np.sort(a * a)[-s:].sum())
            const, w = dual_cut(a, alpha @ y, alpha @ alpha, lam, r, T)
            assert np.all(const - w[S].sum(1) <= vals + TOL * np.maximum(1.0, vals))


def test_per_feature_greedy_matches_enumeration():
    """per[j] equals the bound computed with j explicitly fixed in (the greedy formula)."""
    rng = np.random.default_rng(7)
    X, y = tied_problem(3, n=15, p=9)
    for lam, r in ((1.0, 1.1), (10.0, np.inf)):
        A = rng.normal(size=(3, 15))
        for kind in ("plain", "overlap"):
            cons = _constraints(rng, 9, 4, kind)
            fixed, groups = groups_of(cons)
            _, per = dual_bounds(A @ X, A @ y, (A * A).sum(1), lam, r, fixed, groups, per_feature=True)
            for j in range(9):
                if j in cons.fixed_out:
                    assert np.all(per[:, j] == np.inf)
                    continue
                cj = ConstraintSet.build(9, 4, fixed_in=np.union1d(cons.fixed_in, [j]), fixed_out=cons.fixed_out,
                                         overlap=None if cons.group is None else (np.flatnonzero(cons.group), cons.k))
                fj, gj = groups_of(cj)
                ref = dual_bounds(A @ X, A @ y, (A * A).sum(1), lam, r, fj, gj)
                np.testing.assert_allclose(per[:, j], ref, rtol=1e-12, atol=1e-12)


def test_psi_closed_form():
    T = np.linspace(0, 5, 11)
    for lam, r in ((0.5, 1.1), (2.0, 0.3), (1.0, np.inf), (0.0, 1.1)):
        ts = np.linspace(0, r if np.isfinite(r) else 50.0, 200_001)
        brute = np.max(2 * T[:, None] * ts[None] - lam * ts[None] ** 2, axis=1)
        np.testing.assert_allclose(psi(T, lam, r), brute, rtol=1e-6, atol=1e-6)


def _old_root_bound(score, s, S_opt):
    """Best greedy minimum of the cuts a session starts from: at the optimum and at alpha = y."""
    _, const, W = dual_cuts(score, S_opt[None])
    old = const[0] - np.sort(W[0])[-s:].sum()
    empty = score.yy - np.sort(score.c ** 2 / score.lam)[-s:].sum()
    return max(old, empty, 0.0)


def test_closes_most_of_the_cut_gap_at_small_lam():
    """lam = 1, r = 1.1 (bounded coefficients), p = 40, s = 3: the OA cuts' root bound is
    near 0, the k-support dual bound closes at least 60 % of that gap on every problem."""
    s, fractions = 3, []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        n, p = 30, 40
        X = rng.uniform(-0.5, 0.5, size=(n, p))
        y = np.clip(X[:, :3] @ np.array([1.0, -1.0, 0.8]) + 0.2 * rng.normal(size=n), -0.5, 0.5)
        score = RidgeScore(X, y, lam=1.0, r=1.1)
        S, vals = _all_scores(score, s)
        opt = vals.min()
        old = _old_root_bound(score, s, S[np.argmin(vals)])
        fixed, groups = groups_of(ConstraintSet.build(p, s))
        new, _ = relaxation_bound(score, fixed, groups, start=S[np.argmin(vals)])
        assert new <= opt + TOL
        fractions.append((new - old) / (opt - old))
    assert min(fractions) >= 0.6, fractions


@pytest.mark.parametrize("lam,r", [(1.0, 1.1), (10.0, np.inf), (0.1, 0.3)])
def test_oracle_with_relaxation_hook_matches_brute_force(lam, r):
    """The OA path with the relaxation hook (root bound, screening, branch and bound with
    node relaxations over the survivors, or the master when relax_bnb = relax_bnb_max = 0) returns the
    brute-force optimum, certified, with a valid lower bound."""
    from dpbench.bench.registry import registry

    s = 3
    for seed in range(2):
        X, y = tied_problem(seed, n=25, p=30)
        score = RidgeScore(X, y, lam=lam, r=r)
        S, vals = _all_scores(score, s)
        rng = np.random.default_rng(seed)
        for kw in ({}, {"fixed_in": [int(rng.integers(30))]}, {"fixed_out": rng.choice(30, 5, replace=False)}):
            for bnb in ((1000, 0) if not kw else (1000,)):
                sess = registry().solver("highs")(enum_limit=0, leaf_limit=30, pair_leaf_limit=0).session(score, s)
                sess.relax_after, sess.relax_bnb, sess.relax_bnb_max = 0, bnb, bnb
                res = sess.solve(**kw)
                cons = ConstraintSet.build(30, s, fixed_in=kw.get("fixed_in", ()), fixed_out=kw.get("fixed_out", ()))
                opt = vals[cons.feasible_mask(S)].min()
                assert res.status == "optimal", res
                assert abs(res.objective - opt) <= 1e-9 * max(1.0, opt), (res, opt)
                assert res.lower_bound <= opt + 1e-9 * max(1.0, opt)


def test_capped_simplex_projection_is_the_nearest_point():
    from dpbench.core.oracle.relaxation import _project_capped

    rng = np.random.default_rng(0)
    for _ in range(300):
        L = int(rng.integers(2, 30))
        need = int(rng.integers(1, L))
        v = rng.normal(size=L) * rng.uniform(0.01, 5)
        z = _project_capped(v, need)
        assert abs(z.sum() - need) < 1e-9 and z.min() >= 0 and z.max() <= 1
        for _ in range(5):  # no feasible point is nearer
            w = _project_capped(rng.uniform(size=L) * 3, need)
            assert ((v - z) ** 2).sum() <= ((v - w) ** 2).sum() + 1e-9


def test_overlap_and_threshold_calls_with_node_relaxations_match_brute_force():
    """Overlap optimum and threshold enumeration through branch and bound with node
    relaxations from the first node on (relax_overlap_after = 0) equal brute force."""
    from dpbench.bench.registry import registry

    s = 3
    X, y = tied_problem(5, n=25, p=30)
    score = RidgeScore(X, y, lam=1.0, r=1.1)
    S, vals = _all_scores(score, s)
    S0 = S[np.argmin(vals)]
    for k in (0, 1, 2):
        sess = registry().solver("highs")(enum_limit=0, leaf_limit=10, pair_leaf_limit=0).session(score, s)
        sess.relax_overlap_after = 0
        ok = ConstraintSet.build(30, s, overlap=(S0, k)).feasible_mask(S)
        res = sess.solve(overlap=(S0, k))
        assert res.status == "optimal" and abs(res.objective - vals[ok].min()) <= 1e-9 * max(1.0, vals[ok].min())
        tau = float(np.sort(vals[ok])[min(40, ok.sum() - 1)])
        below = sess.supports_below(tau, overlap=(S0, k))
        want = {tuple(row) for row in S[ok & (vals <= tau)].tolist()}
        assert below.certified and {tuple(row) for row in below.supports.tolist()} == want


def test_one_blas_thread_nests_and_restores():
    """Inner contexts (a node relaxation inside a search) keep BLAS at one thread and leave the
    outer limit in place; the outermost exit restores what was there."""
    from threadpoolctl import threadpool_info

    from dpbench.core.oracle.blas import one_blas_thread

    def blas_threads():
        return sorted(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")

    with one_blas_thread():  # loads scipy's BLAS, which the context also limits
        pass
    before = blas_threads()
    with one_blas_thread():
        assert set(blas_threads()) == {1}
        with one_blas_thread():
            assert set(blas_threads()) == {1}
        assert set(blas_threads()) == {1}
    assert blas_threads() == before
    with one_blas_thread():  # a later search limits again (the nesting count was reset)
        assert set(blas_threads()) == {1}
