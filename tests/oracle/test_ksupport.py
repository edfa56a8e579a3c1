"""The active-set k-support relaxation of dpbench.core.oracle.ksupport ("prox" node relaxations).

* the squared k-support norm and its prox against direct numerical minimisation (their
  definitions as minima over the weights z);
* validity: on small random problems (exact duplicate columns, fixed-in/-out, overlap groups,
  branch-and-bound nodes; lam in {0.1, 1, 10, 120}, r in {0.3, 1.1, inf}) the bound of
  ``relaxation_bound(method="prox")`` and its per-feature bounds never exceed the brute-force
  optima, also from a warm start;
* strength: it reaches the relaxation optimum (the long-run projected gradient's bound, which
  can only be lower) to 1e-6 relative;
* the branch and bound gives the same certified support and objective with either node
  relaxation, and the brute-force one.
"""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from dpbench.core.oracle import OASession
from dpbench.core.oracle.ksupport import ksupport_alpha, prox_sq_ksupport, sq_ksupport
from dpbench.core.oracle import ConstraintSet
from dpbench.core.oracle.relaxation import groups_of, relaxation_bound
from dpbench.core.score import RidgeScore
from helpers.relaxation import assert_per_feature_valid, tied_problem

TOL = 1e-9


def _sq_by_weights(b, k):
    """min over z in [0, 1]^L, sum z = k of sum b^2 / z, by SLSQP from several starts."""
    rng = np.random.default_rng(0)
    best = np.inf
    for _ in range(2):
        z0 = np.clip(rng.uniform(0.1, 1, b.size), 1e-3, 1)
        z0 *= k / z0.sum()
        res = minimize(lambda z: np.sum(b * b / np.maximum(z, 1e-12)), np.clip(z0, 1e-6, 1),
                       bounds=[(1e-9, 1)] * b.size, method="SLSQP",
                       constraints=[{"type": "eq", "fun": lambda z: z.sum() - k}],
                       options={"ftol": 1e-14, "maxiter": 500})
        best = min(best, res.fun)
    return best


def test_squared_ksupport_norm_is_the_minimum_over_weights():
    rng = np.random.default_rng(1)
    for _ in range(12):
        L = int(rng.integers(2, 7))
        k = int(rng.integers(1, L))
        b = rng.normal(size=L) * (rng.random(L) < 0.8)
        if not b.any():
            continue
        assert sq_ksupport(b, k) == pytest.approx(_sq_by_weights(b, k), rel=1e-6, abs=1e-10)
    assert sq_ksupport(np.array([3.0, -4.0]), 5) == pytest.approx(25.0)
    assert sq_ksupport(np.array([1.0, 1.0, 1.0]), 1) == pytest.approx(9.0)  # (l1 norm)^2 for k = 1


def test_prox_is_the_minimiser():
    """The prox value is not above any nearby point's or a Nelder-Mead minimum, and sum z = k."""
    rng = np.random.default_rng(2)
    for _ in range(12):
        L = int(rng.integers(2, 7))
        k = int(rng.integers(1, L))
        v = rng.normal(size=L)
        tau = float(rng.uniform(0.02, 2.0))
        b, z = prox_sq_ksupport(v, k, tau)
        assert z.sum() == pytest.approx(k, abs=1e-9)
        obj = lambda x: 0.5 * np.sum((x - v) ** 2) + tau * sq_ksupport(x, k)  # noqa: E731
        f0 = obj(b)
        if _ >= 5:
            continue
        nm = minimize(obj, v * 0.5, method="Nelder-Mead", options={"xatol": 1e-11, "fatol": 1e-13, "maxiter": 8_000})
        assert f0 <= nm.fun + 1e-8
        for _ in range(50):
            assert f0 <= obj(b + 1e-3 * rng.normal(size=L)) + 1e-12
    b, z = prox_sq_ksupport(np.array([2.0, 0.0, -1.0]), 5, 0.5)  # need >= L: plain ridge shrinkage
    np.testing.assert_allclose(b, [1.0, 0.0, -0.5])


def _constraints(rng, p, s, kind):
    perm = rng.permutation(p)
    if kind == "plain":
        return ConstraintSet.build(p, s)
    if kind == "node":  # a branch-and-bound node: two fixed in, some fixed out
        return ConstraintSet.build(p, s, fixed_in=perm[:2], fixed_out=perm[2:4])
    S0 = np.sort(rng.choice(p, s, replace=False))
    return ConstraintSet.build(p, s, overlap=(S0, int(rng.integers(0, s))), fixed_out=perm[:1])


@pytest.mark.parametrize("lam", [0.1, 1.0, 10.0, 120.0])
@pytest.mark.parametrize("r", [0.3, 1.1, np.inf])
def test_prox_bounds_never_exceed_brute_force(lam, r):
    s = 3
    for seed in range(5):
        X, y = tied_problem(seed, p=9, dup=seed % 2 == 0)
        score = RidgeScore(X, y, lam=lam, r=r)
        S = np.array(list(itertools.combinations(range(score.p), s)), dtype=np.int64)
        vals = score(S)
        rng = np.random.default_rng(50 + seed)
        for kind in ("plain", "node", "overlap"):
            cons = _constraints(rng, score.p, s, kind)
            ok = cons.feasible_mask(S)
            opt = vals[ok].min()
            fixed, groups = groups_of(cons)
            warm = None
            for _ in range(2):  # cold, then warm-started from the first solve
                b, alpha, per, (warm, a) = relaxation_bound(score, fixed, groups, per_feature=True, method="prox",
                                                            warm=warm, with_warm=True, width=2, rounds=4)
                assert b <= opt + TOL * max(1.0, opt), (kind, b, opt)
                np.testing.assert_allclose(a, X.T @ alpha, rtol=1e-10, atol=1e-12)
                assert_per_feature_valid(per, S, vals, ok, kind)


@pytest.mark.parametrize("lam,r", [(0.1, 1.1), (1.0, np.inf), (10.0, 0.3), (10.0, 1.1), (120.0, 1.1)])
def test_prox_reaches_the_relaxation_optimum(lam, r):
    """p = 40, n = 30: the prox bound is at least the long projected-gradient run's (which cannot
    exceed the relaxation optimum) minus 1e-6 relative, and its ksupport point is used."""
    s = 4
    for seed in range(2):
        rng = np.random.default_rng(seed)
        X = rng.uniform(-0.5, 0.5, size=(30, 40))
        y = np.clip(X[:, :3] @ np.array([1.0, -1.0, 0.8]) + 0.2 * rng.normal(size=30), -0.5, 0.5)
        score = RidgeScore(X, y, lam=lam, r=r)
        for cons in (ConstraintSet.build(40, s), ConstraintSet.build(40, s, fixed_in=[5, 17], fixed_out=[0])):
            fixed, groups = groups_of(cons)
            long_pg, _ = relaxation_bound(score, fixed, groups, width=40, rounds=6, iters=250)
            prox, _ = relaxation_bound(score, fixed, groups, method="prox", width=10, rounds=8, iters=200)
            assert prox >= long_pg - 1e-6 * abs(long_pg), (seed, prox, long_pg)
            alphas, (W, beta, mu) = ksupport_alpha(score, fixed, groups, width=10, rounds=8)
            assert mu >= 0.0 and np.all(np.isfinite(beta)) and set(fixed.tolist()) <= set(W.tolist())


@pytest.mark.parametrize("lam,r", [(0.1, 1.1), (1.0, np.inf), (10.0, 0.3)])
def test_branch_and_bound_same_optimum_with_either_node_relaxation(lam, r):
    """Overlap calls take the branch and bound with node relaxations (enum_limit small, relaxations
    from the first node): both methods certify the brute-force optimum and the canonical
    (lexicographically smallest) support among exact ties (column 1 duplicates column 0)."""
    s = 3
    for seed in range(2):
        X, y = tied_problem(10 + seed, n=14, p=16, dup=True)
        score = RidgeScore(X, y, lam=lam, r=r)
        S = np.array(list(itertools.combinations(range(score.p), s)), dtype=np.int64)
        vals = score(S)
        cons = ConstraintSet.build(score.p, s, overlap=(np.arange(s), 1))
        ok = cons.feasible_mask(S)
        opt = vals[ok].min()
        ties = S[ok][vals[ok] <= opt + 1e-12 * max(1.0, opt)]
        canonical = tuple(min(map(tuple, ties.tolist())))
        for method in ("prox", "pg"):
            sess = OASession(score, s, "test", None, enum_limit=10, relax_method=method, relax_overlap_after=0,
                             leaf_limit=1, pair_leaf_limit=0)
            res = sess.solve(overlap=(np.arange(s), 1))
            assert res.status == "optimal", (method, res.message)
            assert res.objective == pytest.approx(opt, rel=1e-9)
            assert tuple(res.support.tolist()) == canonical, method


def _grown_node(lam=1.0):
    """A plain call whose relaxation needs several working-set rounds (width 0: only the KKT
    growth brings the entrants in), with its brute-force optimum."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-0.5, 0.5, size=(30, 40))
    y = np.clip(X[:, :6] @ np.array([1.0, -1.0, 0.8, 0.7, -0.6, 0.5]) + 0.2 * rng.normal(size=30), -0.5, 0.5)
    score = RidgeScore(X, y, lam=lam, r=1.1)
    s = 4
    S = np.array(list(itertools.combinations(range(40), s)), dtype=np.int64)
    fixed, groups = groups_of(ConstraintSet.build(40, s))
    return score, fixed, groups, float(score(S).min())


def test_close_at_stops_at_the_first_round_that_reaches_it():
    """With ``close_at`` the solve stops after the first working-set round whose bound reaches it:
    at -inf that is the first round (the same alpha as ``rounds=1``), above the final bound it
    never stops early (bitwise the same solve as without), and in between the returned bound
    reaches ``close_at`` without exceeding the brute-force optimum (it stays valid)."""
    score, fixed, groups, opt = _grown_node()
    kw = dict(width=0, rounds=6, grow_min=1)
    full = relaxation_bound(score, fixed, groups, method="prox", **kw)[0]
    first = relaxation_bound(score, fixed, groups, method="prox", **{**kw, "rounds": 1})[0]
    assert first < full - 1e-6 * abs(full)  # the later rounds raised the bound: several rounds ran
    one, _ = ksupport_alpha(score, fixed, groups, **{**kw, "rounds": 1})
    stopped, _ = ksupport_alpha(score, fixed, groups, close_at=-np.inf, **kw)
    np.testing.assert_array_equal(stopped[0], one[0])
    never, (W, beta, _) = ksupport_alpha(score, fixed, groups, close_at=np.inf, **kw)
    plain, (W0, beta0, _) = ksupport_alpha(score, fixed, groups, **kw)
    np.testing.assert_array_equal(never[0], plain[0])
    np.testing.assert_array_equal(W, W0)
    for bar in np.linspace(first, full, 5)[1:-1]:
        got = relaxation_bound(score, fixed, groups, method="prox", close_at=bar, **kw)[0]
        assert bar <= got <= opt + TOL * max(1.0, opt), (bar, got, opt)

