"""Exactness tests of ``topr`` and ``mistakes`` against brute-force enumeration.

Every expected value is computed independently of the selectors' code path: all C(p, s)
supports are scored with the shared score, sorted, and the mechanisms of docs/methods/topr.md /
4.3 (eq. 7 of behdin2024 for topr) are evaluated directly. Oracle: ``enumerate`` (exact).
"""

import dataclasses
import math

import numpy as np
import pytest
from scipy.special import logsumexp

from dpbench.api import OracleResult, Problem
from dpbench.core.supports import n_supports
from dpbench.core.privacy.exponential import em_log_weights, log_normalize
from dpbench.core import toplist as _swaps
from dpbench.core.toplist import levels as _levels
from dpbench.testing import chi_square_gof
from dpbench_plugins.selectors.exhaustive import Exhaustive
from dpbench_plugins.selectors.swaps.mistakes import Mistakes
from dpbench_plugins.selectors.swaps.topr import TopR, auto_r, epsilon_prime
from helpers.exact import (BX, BY, copies_problem, duplicates_problem, enumerate_all, enumerate_trial, exact_top_list, highs_trial, max_ratio,
                           neighbour_pairs, thresholded_levels_match, three_pairs_problem, toeplitz_problem)



def truncated_em(trial, R, epsilon):
    """log P of the exponential mechanism on R̂ of eq. 7, for every support (enumeration order)."""
    S, sc = enumerate_all(trial)
    rhat = sc.copy()
    rhat[R:] = sc[R - 1]
    return S, log_normalize(em_log_weights(rhat, epsilon, trial.sensitivity))


def correlated_pairs_problem(seed=0, n=80, p=8):
    """s = 2 problem where the 2-swap {1, 3} beats the worst single swap of S1 = {0, 2}.

    x1 and x3 are near copies of x0 and x2, and y = x0 + x2 + noise, so replacing both
    members by their copies costs little while dropping a member for noise costs a lot.
    """
    rng = np.random.default_rng(seed)
    X = 0.15 * rng.standard_normal((n, p))
    X[:, 1] = X[:, 0] + 0.01 * rng.standard_normal(n)
    X[:, 3] = X[:, 2] + 0.01 * rng.standard_normal(n)
    y = X[:, 0] + X[:, 2] + 0.02 * rng.standard_normal(n)
    return Problem(X, y, 2, true_support=[0, 2], name="pairs")


def grouped_expected(trial, epsilon):
    """mistakes' log P for every support, from enumeration (S1 = argmin, R_t = group minima)."""
    S, sc = enumerate_all(trial)
    center = S[0]
    t = trial.s - np.isin(S, center).sum(axis=1)
    tmax = t.max()
    Rt = np.array([sc[t == k].min() for k in range(tmax + 1)])
    sizes = np.array([np.sum(t == k) for k in range(tmax + 1)])
    lpt = log_normalize(em_log_weights(Rt, epsilon, trial.sensitivity, log_multiplicity=np.log(sizes)))
    return S, lpt[t] - np.log(sizes[t]), Rt


# --------------------------------------------------------------------------- top-R list


@pytest.mark.parametrize("seed,n,p,s", [(0, 60, 9, 3), (1, 30, 8, 2), (2, 200, 10, 3), (3, 25, 7, 4)])
@pytest.mark.parametrize("R", ["auto", 5, 40, "all"])
@pytest.mark.parametrize("enum_limit", [0, 2_000_000])
def test_top_list_is_the_R_smallest(seed, n, p, s, R, enum_limit):
    trial = enumerate_trial(toeplitz_problem(n, p, s, seed), lam=0.5 * seed)
    total = n_supports(p, s)
    R = {"auto": min(auto_r(p, s), total - 1), "all": total - 1}.get(R, R)
    R = min(R, total - 1)
    lst = _swaps.top_list(trial, R, enum_limit=enum_limit)
    S, sc = enumerate_all(trial)
    assert lst.certified
    np.testing.assert_allclose(lst.scores, sc[:R], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(trial.score(lst.supports), lst.scores, rtol=1e-12, atol=1e-12)
    assert len({tuple(r) for r in lst.supports.tolist()}) == R
    # No ties in continuous data: the list is the exact set, in order.
    np.testing.assert_array_equal(lst.supports, S[:R])
    assert lst.diagnostics["slack"] == 0.0


@pytest.mark.parametrize("enum_limit", [0, 2_000_000])
def test_forced_check_failure_gives_exact_certified_list(enum_limit):
    trial = enumerate_trial(correlated_pairs_problem(), b_x=1.0, b_y=1.0)
    R = auto_r(trial.p, trial.s)
    lst = _swaps.top_list(trial, R, enum_limit=enum_limit)
    d = lst.diagnostics
    assert not d["check_passed"], "construction must make a 2-swap beat the worst single swap"
    assert d["v2"] < d["worst_single"]
    assert lst.certified
    S, sc = enumerate_all(trial)
    np.testing.assert_array_equal(lst.supports, S[:R])
    assert d["from_levels"]["2"] >= 2  # more than the one >= 2-swap support the authors' list allows
    if enum_limit == 0:
        assert d["extra_calls"] >= 1 and d["levels_enumerated"] == []
    else:
        assert d["levels_enumerated"] == [2]
    # The mechanism built on it is still exactly the EM on the truncated score.
    sel = TopR()
    prep = sel.prepare(trial, None)
    S2, expected = truncated_em(trial, R, 1.0)
    np.testing.assert_allclose(sel.log_probs(trial, prep, 1.0, S2), expected, atol=1e-10)


def test_check_passes_without_extra_calls():
    trial = enumerate_trial(toeplitz_problem(400, 12, 3, 5, snr=10))
    lst = _swaps.top_list(trial, auto_r(12, 3), enum_limit=0)
    assert lst.diagnostics["check_passed"]
    assert lst.diagnostics["extra_calls"] == 0
    assert lst.diagnostics["from_levels"] == {"0": 1, "1": 27, "2": 1, "3": 0}


# --------------------------------------------------------------------------- topr distribution


@pytest.mark.parametrize("seed,n,p,s,lam", [(0, 60, 9, 3, 0.0), (4, 40, 8, 2, 2.0), (5, 100, 10, 3, 10.0)])
@pytest.mark.parametrize("R", ["auto", 7])
@pytest.mark.parametrize("epsilon", [0.3, 3.0])
def test_topr_is_em_on_truncated_score(seed, n, p, s, lam, R, epsilon):
    trial = enumerate_trial(toeplitz_problem(n, p, s, seed), lam=lam)
    sel = TopR(R=R)
    prep = sel.prepare(trial, None)
    Rv = prep.R
    S, expected = truncated_em(trial, Rv, epsilon)
    got = sel.log_probs(trial, prep, epsilon, S)
    np.testing.assert_allclose(got, expected, atol=1e-10)
    assert abs(logsumexp(got)) < 1e-12
    assert sel.log_prob(trial, prep, epsilon, S[3]) == pytest.approx(expected[3], abs=1e-10)


def test_topr_finite_T_probabilities():
    """Finite T: listed supports gain P0(R+1) q^(T-1)/C, unlisted keep (1 - q^T) of their mass."""
    trial = enumerate_trial(toeplitz_problem(50, 8, 3, 7))
    R, T, eps = 30, 3, 1.0
    sel = TopR(R=R, T=T)
    prep = sel.prepare(trial, None)
    S, sc = enumerate_all(trial)
    C = len(S)
    w = np.exp(-eps * sc / (2 * trial.sensitivity))
    p0 = np.concatenate([w[:R], [(C - R) * w[R - 1]]])
    p0 /= p0.sum()
    q = R / C
    expected = np.concatenate([p0[:R] + p0[R] * q ** (T - 1) / C,
                               np.full(C - R, p0[R] * (1 - q ** T) / (C - R))])
    got = np.exp(sel.log_probs(trial, prep, eps, S))
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    assert got.sum() == pytest.approx(1.0, abs=1e-12)
    d = sel.draw(trial, prep, eps, 5, np.random.default_rng(0))
    assert d.epsilon_spent == pytest.approx(epsilon_prime(eps, R, C, T, trial.n, trial.b_y, trial.sensitivity))
    assert d.epsilon_spent > eps


def test_epsilon_prime_matches_theorem_1():
    eps, R, C, T, n, by, D = 1.0, 100, 10**6, 4, 50, 0.5, 3.0
    gamma = R**T * math.exp(n * eps * by**2 / (2 * D)) / C ** (T - 1)
    q = R / C
    assert epsilon_prime(eps, R, C, T, n, by, D) == pytest.approx(math.log(math.exp(eps) + gamma) - math.log(1 - q**T),
                                                                  rel=1e-12)
    assert epsilon_prime(eps, R, C, math.inf, n, by, D) == eps
    # Huge C (NeurIPS setting, T = 3): finite, just above eps (gamma ~ 1.9e-8, no overflow).
    e3 = epsilon_prime(eps, 50_000, math.comb(10_000, 5), 3, 800, 0.5, 3.1)
    assert eps < e3 < eps + 1e-7


def test_full_R_differs_from_exhaustive_only_at_the_worst_support():
    trial = enumerate_trial(toeplitz_problem(50, 9, 3, 11))
    total = n_supports(9, 3)
    eps = 2.0
    sel = TopR(R=total - 1)
    prep = sel.prepare(trial, None)
    ex = Exhaustive()
    eprep = ex.prepare(trial, None)
    S, sc = enumerate_all(trial)
    lt = sel.log_probs(trial, prep, eps, S)
    le = np.array([ex.log_prob(trial, eprep, eps, row) for row in S])
    diff = lt - le
    # All but the worst support: the same weights, only the normaliser changes.
    w = em_log_weights(sc, eps, trial.sensitivity)
    logz_ex = logsumexp(w)
    logz_topr = logsumexp(np.concatenate([w[:-1], w[-2:-1]]))
    np.testing.assert_allclose(diff[:-1], logz_ex - logz_topr, atol=1e-10)
    assert diff[-1] == pytest.approx(logz_ex - logz_topr + eps * (sc[-1] - sc[-2]) / (2 * trial.sensitivity), abs=1e-10)
    assert diff[-1] > diff[0] + 1e-6


# --------------------------------------------------------------------------- mistakes distribution


@pytest.mark.parametrize("seed,n,p,s,lam", [(0, 60, 9, 3, 0.0), (4, 40, 8, 2, 2.0), (6, 30, 7, 4, 1.0),
                                            (8, 50, 6, 3, 0.0)])
@pytest.mark.parametrize("epsilon", [0.3, 3.0])
@pytest.mark.parametrize("level_limit", [0, _swaps.LEVEL_ENUM_LIMIT])
def test_mistakes_closed_form(seed, n, p, s, lam, epsilon, level_limit, monkeypatch):
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", level_limit)  # 0: every R_t from the oracle
    trial = enumerate_trial(toeplitz_problem(n, p, s, seed), lam=lam)
    sel = Mistakes()
    prep = sel.prepare(trial, None)
    S, expected, Rt = grouped_expected(trial, epsilon)
    np.testing.assert_allclose(prep.minima, Rt, rtol=1e-12)
    got = sel.log_probs(trial, prep, epsilon, S)
    np.testing.assert_allclose(got, expected, atol=1e-10)
    assert abs(logsumexp(got)) < 1e-12
    d = sel.draw(trial, prep, epsilon, 3, np.random.default_rng(0))
    assert d.certified
    assert d.diagnostics["p_opt"] == pytest.approx(math.exp(sel.log_prob(trial, prep, epsilon, S[0])), rel=1e-12)
    assert d.diagnostics["p_true"] == pytest.approx(
        math.exp(sel.log_prob(trial, prep, epsilon, trial.problem.true_support)), rel=1e-12)
    gap = min(Rt[1:]) - Rt[0]
    assert d.diagnostics["gap_condition"] == (gap > 2 * trial.sensitivity)


# --------------------------------------------------------------------------- sampling


_chi2 = chi_square_gof


@pytest.mark.parametrize("params", [{"R": 10}, {"R": 10, "T": 2}, {"R": "auto"}])
def test_topr_sample_frequencies(params):
    trial = enumerate_trial(toeplitz_problem(40, 8, 3, 3))
    sel = TopR(**params)
    prep = sel.prepare(trial, None)
    eps = 1.0
    S, _ = enumerate_all(trial)
    d = sel.draw(trial, prep, eps, 40_000, np.random.default_rng(12345))
    assert d.supports.shape == (40_000, 3)
    assert d.diagnostics["m0_calls"] > 1000  # the rejection sampler is exercised
    pval, cells = _chi2(d.supports, S, sel.log_probs(trial, prep, eps, S))
    assert cells > 20
    assert pval > 1e-3


def test_mistakes_sample_frequencies():
    trial = enumerate_trial(toeplitz_problem(40, 8, 3, 3))
    sel = Mistakes()
    prep = sel.prepare(trial, None)
    eps = 1.0
    S, _ = enumerate_all(trial)
    d = sel.draw(trial, prep, eps, 40_000, np.random.default_rng(54321))
    pval, cells = _chi2(d.supports, S, sel.log_probs(trial, prep, eps, S))
    assert cells > 20
    assert pval > 1e-3


def test_draws_reproducible_and_epsilon_independent_prepare():
    trial = enumerate_trial(toeplitz_problem(60, 9, 3, 0))
    for sel in (TopR(), Mistakes()):
        prep = sel.prepare(trial, None)
        a = sel.draw(trial, prep, 1.0, 50, np.random.default_rng(7)).supports
        sel.draw(trial, prep, 5.0, 50, np.random.default_rng(8))
        b = sel.draw(trial, prep, 1.0, 50, np.random.default_rng(7)).supports
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------- shared work


class CountingSession:
    def __init__(self, inner, calls):
        self.inner, self.calls = inner, calls

    def solve(self, **kw):
        self.calls.append(kw)
        return self.inner.solve(**kw)


def _instrument(trial, wrap=CountingSession):
    calls = []
    real = trial.oracle
    sessions = {}

    def oracle(solver=None, **params):
        name = solver or trial.solver
        if name not in sessions:
            sessions[name] = wrap(real(name, **params), calls)
        return sessions[name]
    trial.oracle = oracle
    return calls


def test_topr_and_mistakes_share_the_oracle_work(monkeypatch):
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", 0)
    trial = enumerate_trial(toeplitz_problem(400, 12, 3, 5, snr=10))
    calls = _instrument(trial)
    TopR(enum_limit=0).prepare(trial, None)
    n_topr = len(calls)
    assert n_topr == 1 + (3 - 1)  # S1 and the levels t = 2, 3
    Mistakes().prepare(trial, None)
    assert len(calls) == n_topr
    assert trial.cache[("optimum", "enumerate")].certified


def test_small_levels_need_no_oracle_call():
    trial = enumerate_trial(toeplitz_problem(400, 12, 3, 5, snr=10))
    calls = _instrument(trial)
    prep = Mistakes().prepare(trial, None)
    TopR().prepare(trial, None)
    assert len(calls) == 1 and prep.oracle_calls == 1
    _, _, Rt = grouped_expected(trial, 1.0)
    np.testing.assert_allclose(prep.minima, Rt, rtol=1e-12)


class TimeLimitedSession(CountingSession):
    """Pretends every level call (overlap, or one root of it) hit its time limit (answer kept, uncertified)."""

    def solve(self, **kw):
        res = self.inner.solve(**kw)
        self.calls.append(kw)
        if kw.get("overlap") is not None or len(kw.get("fixed_out", ())):
            return OracleResult(res.support, res.objective, res.objective - 1.0, "time_limit", 1, 0.0)
        return res


def test_uncertified_oracle_gives_uncertified_draws(monkeypatch):
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", 0)
    trial = enumerate_trial(toeplitz_problem(60, 9, 3, 0))
    _instrument(trial, TimeLimitedSession)
    for sel in (TopR(enum_limit=0), Mistakes()):
        prep = sel.prepare(trial, None)
        d = sel.draw(trial, prep, 1.0, 10, np.random.default_rng(0))
        assert d.certified is False
        assert "certified" in d.diagnostics["reason"]
        assert d.supports.shape == (10, 3)


class WorkLimitedSession(CountingSession):
    """Every level call (overlap, or one root of it) stops at its deterministic node limit, with a
    proven bound ``slack`` below its answer."""

    slack = 1.0

    def solve(self, **kw):
        res = self.inner.solve(**kw)
        self.calls.append(kw)
        if kw.get("overlap") is not None or len(kw.get("fixed_out", ())):
            return OracleResult(res.support, res.objective, res.objective - self.slack, "work_limit", 1, 0.0,
                                "work limit reached (node_limit = 7 branch-and-bound nodes)")
        return res


def test_work_limited_preparation_says_which_limit_to_raise(monkeypatch):
    """Issue 22: an uncertified preparation names the call, its status and the parameter to raise
    (with the selector's current value and a suggestion ten times larger). mistakes is uncertified
    only when a draw is undecided by the level bounds (module docstring): 200 draws leave some."""
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", 0)
    trial = enumerate_trial(toeplitz_problem(60, 9, 3, 0))
    _instrument(trial, WorkLimitedSession)
    for sel, name in ((TopR(enum_limit=0, node_limit=7), "topr"), (Mistakes(node_limit=7), "mistakes")):
        d = sel.draw(trial, sel.prepare(trial, None), 1.0, 200, np.random.default_rng(0))
        assert d.certified is False
        if name == "mistakes":
            assert d.diagnostics["undecided_draws"] > 0 and d.diagnostics["levels_bounded"] == [2, 3]
            assert d.diagnostics["reason"].startswith(f"{d.diagnostics['undecided_draws']} of 200 draws not decided "
                                                      "by the bounds on R_t of level(s) 2, 3 (")
        assert "work_limit" in d.diagnostics["reason"] and f"{name}.node_limit" in d.diagnostics["reason"]
        assert d.diagnostics["raise_limit"] == {"param": f"{name}.node_limit", "now": 7, "suggest": 70,
                                                "option": f"--param {name}.node_limit=70"}


@pytest.mark.parametrize("seed,n,p,s,lam", [(0, 60, 9, 3, 0.0), (6, 30, 7, 4, 1.0)])
@pytest.mark.parametrize("epsilon", [0.3, 3.0])
def test_bounded_levels_give_the_exact_mechanism_draw_where_decided(seed, n, p, s, lam, epsilon):
    """With R_t known only in a box [L_t, U_t] (levels >= 2 widened at random around the exact
    minima), every certified draw is the draw of the exact preparation with the same random
    numbers (supports compared bit for bit), and both outcomes occur."""
    trial = enumerate_trial(toeplitz_problem(n, p, s, seed), lam=lam)
    sel = Mistakes()
    exact = sel.prepare(trial, None)
    assert exact.certified and np.array_equal(exact.lower, exact.minima)
    rng = np.random.default_rng(seed)
    up, down = np.zeros(exact.minima.size), np.zeros(exact.minima.size)
    up[2:], down[2:] = rng.uniform(0, 2, exact.minima.size - 2), rng.uniform(0, 2, exact.minima.size - 2)
    boxed = dataclasses.replace(exact, minima=exact.minima + up, lower=exact.minima - down, certified=False,
                                log_pt=type(exact.log_pt)())
    assert not sel.has_law(boxed) and sel.log_prob(trial, boxed, epsilon, exact.center) is None
    outcomes = []
    for k in range(300):
        db = sel.draw(trial, boxed, epsilon, 1, np.random.default_rng(k))
        de = sel.draw(trial, exact, epsilon, 1, np.random.default_rng(k))
        assert db.certified == (db.diagnostics["undecided_draws"] == 0)
        if db.certified:
            assert np.array_equal(db.supports, de.supports)
        low, high = np.array(db.diagnostics["p_t_bounds"]).T
        assert np.all(low <= np.array(de.diagnostics["p_t"]) + 1e-12) and np.all(np.array(de.diagnostics["p_t"]) <= high + 1e-12)
        outcomes.append(db.certified)
    assert any(outcomes) and not all(outcomes)


def test_a_gap_condition_only_the_upper_bounds_meet_is_not_established(monkeypatch):
    """The gap condition must hold for the exact gap: with level bounds far below their answers
    it is not established, and the draws carry no guarantee whether or not they are decided."""
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", 0)
    trial = enumerate_trial(toeplitz_problem(400, 9, 3, 0, snr=10))
    exact = Mistakes().prepare(trial, None)
    boxed_trial = enumerate_trial(toeplitz_problem(400, 9, 3, 0, snr=10))
    _instrument(boxed_trial, WorkLimitedSession)
    monkeypatch.setattr(WorkLimitedSession, "slack", 1e6)
    prep = Mistakes().prepare(boxed_trial, None)
    assert exact.gap > 2 * trial.sensitivity  # the exact gap meets the condition ...
    np.testing.assert_allclose(prep.minima, exact.minima, rtol=1e-12)
    assert not prep.gap_condition  # ... but its bound does not show it
    d = Mistakes().draw(trial, prep, 1.0, 5, np.random.default_rng(0))
    assert d.no_guarantee == "gap condition not established (a level minimum is only bounded)"


class OptimumWorkLimited(CountingSession):
    """The unconstrained call (S1) stops at its node limit; every other call is answered."""

    def solve(self, **kw):
        res = self.inner.solve(**kw)
        self.calls.append(kw)
        if kw.get("overlap") is None and not len(kw.get("fixed_out", ())) and not len(kw.get("exclude", ())):
            return OracleResult(res.support, res.objective, res.objective - 1.0, "work_limit", 5, 0.0,
                                "work limit reached (node_limit = 5 branch-and-bound nodes)")
        return res


def test_uncertified_optimum_stops_the_preparation_at_once(monkeypatch):
    """Issue 22, item 4: with S1 uncertified no level is searched (nothing around it could be
    certified): topr lists S1 and its single swaps, mistakes takes closed-form stand-ins for R_t
    (upper bounds), both uncertified and naming the optimum's limit."""
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", 0)
    trial = enumerate_trial(toeplitz_problem(60, 9, 3, 0))
    calls = _instrument(trial, OptimumWorkLimited)
    _, _, exact_minima = grouped_expected(trial, 1.0)
    for sel in (TopR(enum_limit=0), Mistakes()):
        prep = sel.prepare(trial, None)
        d = sel.draw(trial, prep, 1.0, 4, np.random.default_rng(0))
        assert d.certified is False
        assert "the optimum S1 not certified: work_limit" in d.diagnostics["reason"]
    assert len(calls) == 1  # the optimum only: no level call, no threshold search
    top = _swaps.top_list(trial, auto_r(9, 3), enum_limit=0)
    assert len(top.scores) == 1 + 6 * 3 and not top.certified  # S1 and its (p - s) s single swaps
    minima = Mistakes().prepare(trial, None).minima
    np.testing.assert_allclose(minima[:2], exact_minima[:2], rtol=1e-12)
    assert np.all(minima[2:] >= exact_minima[2:] * (1 - 1e-12))


def test_time_limited_preparation_names_no_work_limit(monkeypatch):
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", 0)
    trial = enumerate_trial(toeplitz_problem(60, 9, 3, 0))
    _instrument(trial, TimeLimitedSession)
    d = Mistakes().draw(trial, Mistakes().prepare(trial, None), 1.0, 4, np.random.default_rng(0))
    assert "level 2 minimum not certified: time_limit" in d.diagnostics["reason"]
    assert "raise_limit" not in d.diagnostics


class DeepLevelsTimeLimited(CountingSession):
    """Levels t >= 3 stop at their time limit with a valid lower bound just below the optimum."""

    def solve(self, **kw):
        res = self.inner.solve(**kw)
        self.calls.append(kw)
        ov = kw.get("overlap")
        # a level t >= 3: joint overlap call, or one of its roots (t features of the center fixed out)
        if (ov is not None and ov[1] < len(ov[0]) - 2) or len(kw.get("fixed_out", ())) > 2:
            return OracleResult(res.support, res.objective, res.objective - 1e-3, "time_limit", 1, 0.0)
        return res


def test_uncertified_deep_levels_do_not_spoil_a_list_their_bounds_certify(monkeypatch):
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", 0)
    trial = enumerate_trial(toeplitz_problem(400, 12, 3, 5, snr=10))
    _instrument(trial, DeepLevelsTimeLimited)
    lst = _swaps.top_list(trial, auto_r(12, 3), enum_limit=0)
    assert lst.diagnostics["uncertified_calls"] == 1 and lst.diagnostics["check_passed"]
    assert lst.certified  # level 3's lower bound is above the R-th score
    S, _ = enumerate_all(trial)
    np.testing.assert_array_equal(lst.supports, S[:len(lst.scores)])
    d = Mistakes().draw(trial, Mistakes().prepare(trial, None), 1.0, 5, np.random.default_rng(0))
    assert not d.certified  # mistakes needs R_3 itself


# --------------------------------------------------------------------------- privacy audit


@pytest.mark.parametrize("seed,n,p,s", [(0, 10, 7, 2), (1, 14, 8, 3), (2, 8, 6, 3)])
def test_privacy_audit_topr(seed, n, p, s):
    rng = np.random.default_rng(seed)
    worst, miscalibrated = 0.0, 0.0
    for _ in range(6):
        prob = toeplitz_problem(n, p, s, int(rng.integers(1 << 30))).clipped(BX, BY)
        for a, b in neighbour_pairs(prob, rng, BX, BY, lam=1.0):
            for params in ({"R": "auto"}, {"R": 4}):
                for eps in (0.5, 4.0):
                    ratio = max_ratio(TopR(**params), a, b, eps, lam=1.0)[0]
                    worst = max(worst, ratio)
                    assert ratio <= 1 + 1e-9
            # Power of the audit: the same pairs expose a mechanism calibrated to Delta / 20.
            miscalibrated = max(miscalibrated, max_ratio(TopR(), a, b, 1.0, lam=1.0, delta_scale=0.05)[0])
    assert worst > 0.05
    assert miscalibrated > 1.0


def test_privacy_audit_topr_finite_T():
    rng = np.random.default_rng(9)
    for _ in range(6):
        prob = toeplitz_problem(10, 7, 2, int(rng.integers(1 << 30))).clipped(BX, BY)
        sel = TopR(R=5, T=2)
        eps = 1.0
        for a, b in neighbour_pairs(prob, rng, BX, BY, lam=0.0, k=2):
            ratio, prep, _ = max_ratio(sel, a, b, eps, lam=0.0)
            trial = enumerate_trial(a)
            bound = epsilon_prime(eps, 5, prep.total, 2, trial.n, trial.b_y, trial.sensitivity)
            assert ratio * eps <= bound + 1e-9


def test_privacy_audit_mistakes_under_gap_condition():
    rng = np.random.default_rng(3)
    checked, worst, miscalibrated = 0, 0.0, 0.0
    for _ in range(12):
        n = int(rng.choice([20, 40, 80]))
        prob = toeplitz_problem(n, 7, 2, int(rng.integers(1 << 30)), snr=20.0).clipped(1.0, 1.0)
        for a, b in neighbour_pairs(prob, rng, 1.0, 1.0, lam=0.5, k=2):
            for eps in (0.5, 4.0):
                ratio, pa, pb = max_ratio(Mistakes(), a, b, eps, lam=0.5, bounds=(1.0, 1.0))
                if not (pa.gap_condition and pb.gap_condition):
                    continue
                checked += 1
                worst = max(worst, ratio)
                assert ratio <= 1 + 1e-9
                miscalibrated = max(miscalibrated, max_ratio(Mistakes(), a, b, eps, lam=0.5, bounds=(1.0, 1.0),
                                                              delta_scale=0.05)[0])
    assert checked >= 10
    assert worst > 0.05
    assert miscalibrated > 1.0


# --------------------------------------------------------------------------- threshold enumeration of levels


@pytest.mark.parametrize("seed,p,s,lam", [(0, 24, 4, 2.0), (1, 30, 3, 120.0), (2, 20, 4, 5.0)])
@pytest.mark.parametrize("R", ["auto", 50, 2000])
@pytest.mark.parametrize("oracle", [{}, {"enum_limit": 0, "leaf_limit": 1, "pair_leaf_limit": 0}, {"enum_limit": 0, "leaf_limit": 1}],
                         ids=["leaf-enum", "bnb-deep", "bnb-pair-leaves"])
def test_threshold_top_list_is_the_R_smallest(seed, p, s, lam, R, oracle):
    """Levels too large for closed form (enum_limit=0) come from one threshold enumeration each,
    scored whole (small feasible sets) or by the branch and bound down to single features."""
    trial = highs_trial(copies_problem(seed, p=p, s=s), lam, **oracle)
    R = auto_r(p, s) if R == "auto" else R
    lst, S, sc = exact_top_list(trial, R)
    d = lst.diagnostics
    assert d["slack"] == 0.0 and d["extra_calls"] == 0
    if R == auto_r(p, s):
        assert not d["check_passed"]  # the authors' list would be wrong here
    assert d["levels_thresholded"], "the threshold path must have been used"
    for info in thresholded_levels_match(lst, S, sc, R):
        assert info["lower_bound_rest"] > info["threshold"] or info["lower_bound_rest"] == math.inf


class ThresholdTimeLimited(CountingSession):
    """An OA session whose threshold enumerations stop at once (time limit)."""

    def supports_below(self, threshold, **kw):
        kw["time_limit"] = 0.0
        return self.inner.supports_below(threshold, **kw)


def test_threshold_time_limit_leaves_the_trial_uncertified():
    trial = highs_trial(copies_problem(0))
    _instrument(trial, ThresholdTimeLimited)
    R = auto_r(trial.p, trial.s)
    lst = _swaps.top_list(trial, R, enum_limit=0)
    assert not lst.certified
    info = lst.diagnostics["levels_thresholded"]["2"]
    assert info["status"] == "time_limit" and not info["certified"]
    assert "threshold enumeration of level 2" in lst.diagnostics["reason"]
    sel = TopR(enum_limit=0)
    prep = sel.prepare(trial, None)
    d = sel.draw(trial, prep, 1.0, 5, np.random.default_rng(0))
    assert d.certified is False and d.supports.shape == (5, trial.s)


def test_threshold_max_count_leaves_the_trial_uncertified():
    trial = highs_trial(copies_problem(0))
    lst = _swaps.top_list(trial, auto_r(trial.p, trial.s), enum_limit=0, max_count=3)
    assert not lst.certified
    assert lst.diagnostics["levels_thresholded"]["2"]["status"] == "max_count"


def test_threshold_and_call_paths_agree():
    trial = highs_trial(copies_problem(3, p=16, s=3))
    R = 60
    a = _swaps.top_list(trial, R, enum_limit=0)
    b = _swaps.top_list(trial, R, enum_limit=0, level_search="calls")
    assert a.certified and b.certified and b.diagnostics["extra_calls"] > 0
    np.testing.assert_array_equal(a.supports, b.supports)


# --------------------------------------------------------------------------- swap levels by roots


@pytest.mark.parametrize("problem,lam", [
    (copies_problem(0, p=16, s=4), 2.0), (copies_problem(1, p=14, s=3), 120.0),
    (copies_problem(2, p=12, s=4), 0.5), (duplicates_problem(0), 2.0), (duplicates_problem(3), 10.0),
    (three_pairs_problem(0), 2.0)],
    ids=["copies-4", "copies-3-lam120", "copies-4-lam0.5", "dups-0", "dups-3", "ties-across-roots"])
@pytest.mark.parametrize("oracle", [{"enum_limit": 0}, {"enum_limit": 0, "leaf_limit": 1, "pair_leaf_limit": 0}],
                         ids=["oa-master", "bnb-deep"])
def test_levels_by_roots_match_enumeration(problem, lam, oracle, monkeypatch):
    """With no joint budget every level >= 2 comes from one call per root (overlap_by_roots), or,
    on a near-tie across roots, from the joint call; minima and canonical supports equal brute force."""
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", 0)
    monkeypatch.setattr(_levels, "LEVEL_JOINT_NODES", 0)
    trial = highs_trial(problem, lam, **oracle)
    S, sc = enumerate_all(trial)  # sorted by (score, support): the first member of a level is canonical
    center = S[0]
    minima, cert, _, calls = _swaps.level_minima(trial)
    t_all = trial.s - np.isin(S, center).sum(axis=1)
    by_roots = 0
    for t in range(2, _swaps.max_level(trial.p, trial.s) + 1):
        res = _swaps.level_optimum(trial, t)
        first = np.flatnonzero(t_all == t)[0]
        vmin = sc[first]
        tied = np.flatnonzero((t_all == t) & (sc <= vmin + 1e-9 * abs(vmin)))
        canon = S[tied[np.lexsort(S[tied].T[::-1])[0]]]
        assert res.certified, res
        np.testing.assert_array_equal(np.sort(res.support), canon)
        np.testing.assert_allclose(minima[t], vmin, rtol=1e-12)
        by_roots += "roots" in res.message
    assert cert.all()
    if problem.name == "ties-across-roots":
        # level 2's tie spans roots: the joint call decides it (overlap_by_roots returns None)
        assert "roots" not in _swaps.level_optimum(trial, 2).message
    else:
        assert by_roots >= 1


def test_overlap_by_roots_uncertified_root_keeps_a_valid_bound():
    """A root stopped by its work limit leaves the level uncertified with the smallest root bound."""
    from dpbench.core.oracle.threshold import overlap_by_roots

    trial = highs_trial(copies_problem(0, p=16, s=4), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0, open_pairs=0)
    S, sc = enumerate_all(trial)
    sess = trial.oracle("highs")
    res = overlap_by_roots(sess, S[0], 2, node_limit=1)
    lvl = trial.s - np.isin(S, S[0]).sum(axis=1) == 2
    assert not res.certified and res.status == "work_limit"
    assert res.lower_bound <= sc[lvl].min() <= res.objective
