"""The hinge loss (issue 16): its certified score, its sensitivity, the generic oracle, the
classification generator and the selectors run with ``--loss hinge``."""

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from dpbench.bench.trial import Trial
from dpbench.cli.main import main
from dpbench.core.errors import UserInputError
from dpbench.core.oracle.generic import GenericSession
from dpbench.bench.registry import registry
from dpbench.core.problem import Problem
from dpbench.core.score.hinge import HingeScore
from dpbench.bench.registry import PluginInstances


def _data(seed, n=60, p=7, s=2):
    gen = registry().generator("classification")(n=n, p=p, s=s, snr=5.0)
    pr = gen.generate(np.random.default_rng(seed))
    return np.clip(pr.X, -0.5, 0.5), pr.y, pr


def _slsqp(X, y, S, lam, r):
    """The epigraph QP of the hinge objective, solved by scipy's SLSQP (independent reference)."""
    n = len(y)
    A = X[:, S] * y[:, None]
    k = len(S)
    fun = lambda v: v[k:].sum() / n + lam / n * (v[:k] @ v[:k])
    cons = [{"type": "ineq", "fun": lambda v: v[k:] - (1 - A @ v[:k])},
            {"type": "ineq", "fun": lambda v: v[k:]},
            {"type": "ineq", "fun": lambda v: r * r - v[:k] @ v[:k]}]
    res = minimize(fun, np.r_[np.zeros(k), np.ones(n)], constraints=cons, method="SLSQP",
                   options={"ftol": 1e-14, "maxiter": 2000})
    return res.fun


@pytest.mark.parametrize("lam,r", [pytest.param(0.3, 1.1, marks=pytest.mark.slow), (100.0, 1.1), (0.3, 0.2)])
def test_hinge_score_matches_an_independent_qp_solver_and_certifies_its_gap(lam, r):
    X, y, _ = _data(1, n=25, p=6)
    h = HingeScore(X, y, lam=lam, r=r)
    S = np.array([[0, 1], [2, 5]])
    sc, beta, lower, cert = h.solve(S)
    assert cert.all() and np.all(sc - lower <= h.gap_tol) and np.all(lower <= sc + 1e-12)  # rounding only
    assert np.all(np.linalg.norm(beta, axis=1) <= r * (1 + 1e-12))
    for k in range(len(S)):
        assert sc[k] == pytest.approx(_slsqp(X, y, S[k], lam, r), abs=1e-7)


def test_hinge_sensitivity_bounds_the_change_between_neighbouring_data_sets():
    """|R(S, D) - R(S, D')| <= Delta for every support, D' = D with one row replaced (replace-one)."""
    s, b_x, r, lam = 2, 0.5, 1.1, 4.0
    loss = registry().loss("hinge")()
    X, y, _ = _data(2, n=30, p=5)
    n = len(y)
    delta = loss.sensitivity(s, n, b_x, 0.5, r)
    assert delta == pytest.approx((1 + b_x * r * math.sqrt(s)) / n + 1e-4 / n)
    S = np.array(list(itertools.combinations(range(5), s)))
    base = HingeScore(X, y, lam=lam, r=r)(S)
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(20):
        X2, y2 = X.copy(), y.copy()
        i = rng.integers(n)
        X2[i] = rng.choice([-b_x, b_x], size=5)  # extreme rows push the change towards Delta
        y2[i] = -y2[i]
        worst = max(worst, np.abs(HingeScore(X2, y2, lam=lam, r=r)(S) - base).max())
    assert 0 < worst <= delta


def test_hinge_refuses_real_valued_labels_and_lambda_zero():
    X, y, pr = _data(3)
    with pytest.raises(UserInputError, match="labels"):
        HingeScore(X, y * 0.5, lam=1.0)
    with pytest.raises(UserInputError, match="lam"):
        HingeScore(X, y, lam=0.0)
    with pytest.raises(UserInputError, match="labels"):
        registry().loss("hinge")().prepare(Problem(pr.X, pr.y * 0.3, 2), 0.5, 0.5)


@pytest.mark.parametrize("seed", [0, 1])
def test_generic_oracle_equals_brute_force(seed):
    """Optimum, the 6 best in order (no-good cuts), t-mistakes optima and fixed sets vs enumeration."""
    X, y, _ = _data(seed, n=300, p=11, s=3)
    h = HingeScore(X, y, lam=100.0, r=1.1)
    allS = np.array(list(itertools.combinations(range(11), 3)))
    sc = h(allS)
    order = np.lexsort([allS[:, 2], allS[:, 1], allS[:, 0], sc])
    sess = GenericSession(h, 3, leaf_size=10)  # small leaves: the bounds and branching do the work
    ex = []
    for k in range(6):
        res = sess.solve(exclude=ex)
        assert res.status == "optimal" and tuple(res.support) == tuple(allS[order[k]])
        assert res.objective == sc[order[k]]
        ex.append(res.support)
    S0 = allS[order[0]]
    for t in range(1, 4):
        ok = np.isin(allS, S0).sum(axis=1) == 3 - t
        best = np.flatnonzero(ok)[np.argmin(sc[ok])]
        res = sess.solve(overlap=(S0, 3 - t))
        assert res.certified and tuple(res.support) == tuple(allS[best])
    ok = (allS == 4).any(axis=1) & ~(allS == S0[0]).any(axis=1)
    best = np.flatnonzero(ok)[np.argmin(sc[ok])]
    res = sess.solve(fixed_in=[4], fixed_out=[S0[0]])
    assert tuple(res.support) == tuple(allS[best])
    assert sess.solve(fixed_in=[0, 1, 2, 3]).status == "infeasible"


def test_generic_oracle_node_limit_is_uncertified_with_a_valid_bound():
    X, y, _ = _data(4, n=300, p=11, s=3)
    h = HingeScore(X, y, lam=100.0, r=1.1)
    res = GenericSession(h, 3, max_nodes=1, leaf_size=1).solve()
    opt = h(np.array(list(itertools.combinations(range(11), 3)))).min()
    assert res.status == "time_limit" and not res.certified and res.lower_bound <= opt


def test_classification_labels_follow_the_logistic_model():
    """P(y = 1 | z): labels agree with sign(z) at the rate E[expit(|z|)] (fixed seed, 4 se)."""
    from scipy.special import expit

    gen = registry().generator("classification")(n=20000, p=6, s=2, snr=5.0)
    pr = gen.generate(np.random.default_rng(7))
    assert set(np.unique(pr.y)) == {-1.0, 1.0}
    z_signal = pr.X[:, pr.true_support].sum(axis=1) / math.sqrt(2)
    agree = np.mean(np.sign(z_signal) == pr.y)
    # the latent noise is small at snr 5, so the agreement rate is close to E[expit(|z|)]
    expected = np.mean(expit(np.abs(z_signal)))
    assert abs(agree - expected) < 0.03


def test_exhaustive_with_hinge_is_the_exponential_mechanism_of_the_hinge_score():
    X, y, pr = _data(5, n=200, p=7, s=2)
    trial = Trial(registry().loss("hinge")().prepare(pr, 0.5, 0.5), lam=100.0, r=1.1, loss="hinge", instances=PluginInstances())
    allS = np.array(list(itertools.combinations(range(7), 2)))
    sc = HingeScore(trial.problem.X, trial.problem.y, lam=100.0, r=1.1)(allS)
    sel = registry().selector("exhaustive")()
    prep = sel.prepare(trial, np.random.default_rng(0))
    eps = 1.0
    lw = -eps * sc / (2 * trial.sensitivity)
    expect = lw - np.logaddexp.reduce(lw)
    got = np.array([sel.log_prob(trial, prep, eps, S) for S in allS])
    np.testing.assert_allclose(got, expect, atol=1e-9)


def test_cli_hinge_runs_the_selectors_and_refuses_least_squares_only_ones(tmp_path, capsys):
    args = ["compare", "--loss", "hinge", "--generator", "classification", "--p", "9", "--s", "2",
            "--n", "400", "--trials", "1", "--draws", "20", "--lam", "100", "--out", str(tmp_path / "h.db"),
            "--param", "mcmc.iterations=20", "--delta", "1e-6"]
    assert main(args + ["--methods", "exhaustive,topr,mistakes,mcmc,bss"]) == 0
    out = capsys.readouterr()
    assert "failed" not in out.err
    assert main(args[:-4] + ["--delta", "1e-6", "--methods", "topr,dpsis"]) == 2
    assert "method 'dpsis' only works with --loss least-squares" in capsys.readouterr().err


def test_generic_threshold_enumeration_equals_brute_force():
    """supports_below: every support of a swap level with score <= tau, certified, vs enumeration."""
    X, y, _ = _data(6, n=300, p=11, s=3)
    h = HingeScore(X, y, lam=100.0, r=1.1)
    allS = np.array(list(itertools.combinations(range(11), 3)))
    sc = h(allS)
    S0 = allS[np.argmin(sc)]
    lvl = np.isin(allS, S0).sum(axis=1) == 1
    tau = float(np.sort(sc[lvl])[7])
    res = GenericSession(h, 3, leaf_size=10).supports_below(tau, overlap=(S0, 1))
    want = lvl & (sc <= tau)
    assert res.certified and res.lower_bound > tau
    assert {tuple(r) for r in res.supports} == {tuple(r) for r in allS[want]}
    np.testing.assert_array_equal(res.scores, np.sort(sc[want]))
    ranked = GenericSession(h, 3, leaf_size=10).supports_below(np.inf, overlap=(S0, 1), rank=3)
    assert ranked.certified and [tuple(r) for r in ranked.supports][:3] == [tuple(r) for r in res.supports[:3]]


def test_a_loss_is_part_of_each_row_identity(tmp_path, capsys):
    """A hinge run over a least-squares database computes its own rows instead of resuming the
    least-squares ones (the loss was once missing from the key), and the frame names both losses."""
    from dpbench import load_results

    db = str(tmp_path / "r.db")
    common = ["compare", "--methods", "exhaustive", "--generator", "classification", "--p", "6", "--n", "80",
              "--s", "2", "--trials", "1", "--draws", "3", "--out", db]
    assert main(common) == 0
    assert main(common + ["--loss", "hinge"]) == 0
    df = load_results(db)
    assert sorted(df["loss"]) == ["hinge", "least-squares"]
    assert df.loc[df["loss"] == "hinge", "sensitivity"].iloc[0] != df.loc[df["loss"] != "hinge", "sensitivity"].iloc[0]


def test_l1_hinge_path_enters_at_its_closed_form_penalty_and_votes_for_the_signal():
    """lam_max = ||X^T y||_inf / n_b is where the l1-hinge path leaves beta = 0 (checked on both
    sides with an independent LP solve), and on an easy block the first s features to enter are
    the true support."""
    from scipy.optimize import linprog

    from dpbench_plugins.selectors.sampagg import l1_hinge_path_votes

    rng = np.random.default_rng(3)
    n, p, s = 200, 12, 2
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 4] + X[:, 9] + 0.1 * rng.standard_normal(n) > 0, 1.0, -1.0)
    lam_max = np.max(np.abs(X.T @ y)) / n

    def l1_hinge(lam):  # beta = u - v as one variable block per sign, rows' slacks last
        c = np.concatenate([np.full(2 * p, lam), np.full(n, 1.0 / n)])
        A = np.hstack([-(y[:, None] * X), y[:, None] * X, -np.eye(n)])
        res = linprog(c, A_ub=A, b_ub=-np.ones(n), bounds=(0, None), method="highs-ipm")
        return res.x[:p] - res.x[p:2 * p]

    assert np.allclose(l1_hinge(1.001 * lam_max), 0, atol=1e-7)
    assert np.abs(l1_hinge(0.95 * lam_max)).max() > 1e-6
    votes, ok = l1_hinge_path_votes(X, y, s)
    assert ok and votes.tolist() == [4, 9]


def test_sampagg_runs_with_the_hinge_loss_and_recovers_at_large_epsilon(tmp_path):
    from dpbench import load_results

    db = str(tmp_path / "s.db")
    assert main(["compare", "--methods", "sampagg", "--loss", "hinge", "--generator", "classification",
                 "--p", "20", "--s", "2", "--n", "2000", "--snr", "20", "--trials", "1", "--draws", "20",
                 "--epsilon", "1000", "--out", db]) == 0
    row = load_results(db).iloc[0]
    assert row["status"] == "ok" and row["recovery"] == 1.0 and row["guarantee"] == "pure ε=1000"
