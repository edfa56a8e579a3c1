"""The l1-bounded least-squares score (Roy & Tewari's code), its sensitivity and ``mcmc score=l1``.

Tolerances: the exact homotopy is compared with scipy's SLSQP (``ftol = 1e-14``) on random
problems: ours is never worse than scipy's objective by more than 1e-7 relative (SLSQP's own
accuracy), and its KKT conditions hold to 1e-8. The stationary check of the chain is exact
(detailed balance to 1e-12 on the enumerated transition matrix).
"""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

import dpbench_plugins.selectors.mcmc as mcmc_mod
from dpbench.bench.trial import Trial
from dpbench import UserInputError
from dpbench.bench.registry import registry
from dpbench.core.privacy.sensitivity import l1_sensitivity
from dpbench.core.score.l1 import project_l1_ball, solve_l1_blocks
from dpbench.bench.registry import PluginInstances


def scipy_l1(X, y, B):
    s = X.shape[1]
    f = lambda z: float(np.sum((y - X @ (z[:s] - z[s:])) ** 2))  # noqa: E731
    res = minimize(f, np.zeros(2 * s), method="SLSQP", bounds=[(0, None)] * (2 * s),
                   constraints=[{"type": "ineq", "fun": lambda z: B - z.sum()}],
                   options={"ftol": 1e-14, "maxiter": 2000})
    return res.fun


def kkt_violation(G, c, beta, B):
    """Largest violation of the KKT conditions of min b'Gb - 2c'b s.t. ||b||_1 <= B."""
    g = c - G @ beta  # half the negative gradient
    norm1 = np.abs(beta).sum()
    mu = np.max(np.abs(g))
    if norm1 < B * (1 - 1e-9):  # interior: gradient zero
        return mu
    on = np.abs(beta) > 1e-12
    v = [abs(mu - g[j] * np.sign(beta[j])) for j in np.flatnonzero(on)]  # active coords at +-mu
    return max(v + [norm1 - B])


def test_exact_against_scipy_on_random_problems():
    rng = np.random.default_rng(0)
    K = 200
    cases = []
    for _ in range(K):
        s = int(rng.integers(1, 9))
        n = int(rng.integers(s, 40))
        X = rng.normal(size=(n, s)) * rng.uniform(0.2, 2)
        y = rng.normal(size=n) * rng.uniform(0.1, 3) + X @ rng.normal(size=s)
        cases.append((X, y, float(rng.uniform(0.05, 4))))
    active = 0
    for X, y, B in cases:
        G, c = X.T @ X, X.T @ y
        sc, beta = solve_l1_blocks(G[None], c[None], y @ y, B)
        ref = scipy_l1(X, y, B)
        assert sc[0] <= ref + 1e-7 * (1 + ref)
        assert np.abs(beta[0]).sum() <= B * (1 + 1e-9)
        np.testing.assert_allclose(sc[0], np.sum((y - X @ beta[0]) ** 2), rtol=1e-9, atol=1e-9)
        assert kkt_violation(G, c, beta[0], B) < 1e-8 * (1 + np.abs(c).max())
        active += np.abs(beta[0]).sum() > B * (1 - 1e-9)
    assert 20 < active < K - 20  # both branches (bound active / inactive) are exercised


def test_batch_equals_one_at_a_time_and_singular_blocks_fall_back():
    rng = np.random.default_rng(1)
    n, s = 30, 4
    Xs = rng.normal(size=(6, n, s))
    Xs[5, :, 3] = Xs[5, :, 2]  # duplicate column: singular Gram block
    y = rng.normal(size=n)
    G, c = np.einsum("kni,knj->kij", Xs, Xs), np.einsum("kni,n->ki", Xs, y)
    sc, _ = solve_l1_blocks(G, c, y @ y, 0.7)
    for k in range(6):
        alone, _ = solve_l1_blocks(G[k:k + 1], c[k:k + 1], y @ y, 0.7)
        assert sc[k] == pytest.approx(alone[0], rel=1e-12)
        assert sc[k] <= scipy_l1(Xs[k], y, 0.7) + 1e-7


def test_projection_onto_l1_ball_is_the_closest_point():
    rng = np.random.default_rng(2)
    v = rng.normal(size=(50, 5)) * 2
    P = project_l1_ball(v, 1.0)
    assert np.all(np.abs(P).sum(axis=1) <= 1 + 1e-12)
    # against random feasible points: none is closer
    for _ in range(200):
        z = rng.normal(size=5)
        z /= max(1.0, np.abs(z).sum())
        assert np.all(np.linalg.norm(v - P, axis=1) <= np.linalg.norm(v - z, axis=1) + 1e-12)


def score_l1(X, y, S, B):
    XS = X[:, S]
    return solve_l1_blocks((XS.T @ XS)[None], (XS.T @ y)[None], y @ y, B)[0][0]


def test_sensitivity_bound_holds_and_is_nearly_attained():
    rng = np.random.default_rng(3)
    b_x, b_y, B = 0.5, 0.7, 0.8
    delta = l1_sensitivity(b_x, b_y, B)
    assert delta == pytest.approx((0.7 + 0.5 * 0.8) ** 2)
    worst = 0.0
    for _ in range(100):  # random replace-one neighbours of clipped data, extreme rows
        n, p, s = 20, 6, 2
        X = np.clip(rng.normal(size=(n, p)), -b_x, b_x)
        y = np.clip(X[:, :2] @ rng.normal(size=2) * 3, -b_y, b_y)
        X2, y2 = X.copy(), y.copy()
        X2[0] = rng.choice([-b_x, b_x], size=p)
        y2[0] = rng.choice([-b_y, b_y])
        for S in itertools.combinations(range(p), s):
            S = list(S)
            d = abs(score_l1(X, y, S, B) - score_l1(X2, y2, S, B))
            assert d <= delta * (1 + 1e-9)
            worst = max(worst, d)
    # attained in the limit: many rows fit beta = B exactly, one row moves to the worst corner
    n = 2000
    x = np.full(n, b_x)
    x[1::2] = -b_x
    Xa, ya = x[:, None], B * x  # y_i = B x_i (|y_i| = 0.4 <= b_y): the bound is active, residual 0
    Xb, yb = Xa.copy(), ya.copy()
    Xb[0, 0], yb[0] = -b_x, b_y
    Xa[0, 0], ya[0] = 0.0, 0.0
    d = score_l1(Xb, yb, [0], B) - score_l1(Xa, ya, [0], B)
    assert 0.99 * delta < d <= delta * (1 + 1e-12)
    with pytest.raises(UserInputError):
        l1_sensitivity(0.5, 0.5, 0.0)


def make_trial(n=40, p=7, s=3, seed=4):
    prob = registry().generator("toeplitz")(n=n, p=p, s=s).generate(np.random.default_rng(seed))
    return Trial(prob.clipped(0.5, 0.5), b_x=0.5, b_y=0.5, r=1.1, lam=0.5, instances=PluginInstances())


def test_l1_chain_is_reversible_for_the_l1_exponential_mechanism():
    trial, eps, B = make_trial(), 30.0, 0.6
    sup = np.array(list(itertools.combinations(range(trial.p), trial.s)))
    X, y = trial.score.X, trial.score.y
    R = np.array([score_l1(X, y, list(S), B) for S in sup])
    delta = l1_sensitivity(0.5, 0.5, B)
    lp = -eps * R / (2 * delta)
    pi = np.exp(lp - lp.max())
    pi /= pi.sum()
    assert pi.max() < 0.9  # not degenerate: the check below has something to check
    index = {tuple(S): i for i, S in enumerate(sup.tolist())}
    P = np.zeros((len(sup), len(sup)))
    for a, S in enumerate(sup):
        for T, prob in mcmc_mod.one_step_transition(trial, eps, S, l1_bound=B).items():
            P[a, index[T]] += prob
    flow = pi[:, None] * P
    assert np.max(np.abs(flow - flow.T)) <= 1e-12 * flow.max()
    np.testing.assert_allclose(pi @ P, pi, atol=1e-12)
    # the ridge chain targets another distribution: the same check fails for it
    P2 = np.zeros_like(P)
    for a, S in enumerate(sup):
        for T, prob in mcmc_mod.one_step_transition(trial, eps, S).items():
            P2[a, index[T]] += prob
    assert np.abs(pi @ P2 - pi).max() > 1e-4


def test_incremental_l1_scores_equal_direct_scores_and_selector_reports_them():
    trial = make_trial(n=60, p=25, s=4, seed=5)
    sel = registry().selector("mcmc")(iterations=300, score="l1", l1_bound=0.5)
    d = sel.draw(trial, sel.prepare(trial, np.random.default_rng(0)), 2.0, 5, np.random.default_rng(1))
    assert d.diagnostics["score"] == "l1"
    assert d.diagnostics["sensitivity"] == pytest.approx((0.5 + 0.5 * 0.5) ** 2)
    final = d.diagnostics["score_trace_chain0"]["final"]
    assert final == pytest.approx(score_l1(trial.score.X, trial.score.y, list(d.supports[0]), 0.5), rel=1e-9)
    with pytest.raises(UserInputError):
        registry().selector("mcmc")(score="l1", l1_bound=-1)
