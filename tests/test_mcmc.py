"""Tests of the ``mcmc`` selector against the exact exponential mechanism (``exhaustive``).

Tolerances
----------
* Convergence: N = 4000 chains; the total-variation distance between the empirical
  distribution of final states and the exact pi must be below TV_TOL = 0.06. For the
  targets used here, i.i.d. exact sampling with N = 4000 gives TV around 0.03 (99th
  percentile about 0.04, checked in ``test_tolerance_is_meaningful``), while a sampler with
  the ratio off by a factor of two in the exponent (forgetting the 2 of 2 Delta, i.e.
  sampling pi^2) is at TV > 0.19 from pi, and the test shows the same check fails for it.
* Detailed balance: exact to 1e-12 (relative to the largest flow) on the enumerated
  transition matrix.
"""

import json

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chisquare

import dpbench_plugins.selectors.mcmc as mcmc_mod
from dpbench.bench.trial import Trial
from dpbench import UserInputError
from dpbench.core.supports import iter_supports
from dpbench.bench.registry import registry
from dpbench.bench.registry import PluginInstances

TV_TOL = 0.06
N_CHAINS = 4000


def make_trial(n, p, s, lam, r=1.1, seed=0):
    prob = registry().generator("toeplitz")(n=n, p=p, s=s).generate(np.random.default_rng(seed))
    return Trial(prob.clipped(0.5, 0.5), b_x=0.5, b_y=0.5, r=r, lam=lam, instances=PluginInstances())


def exact_pi(trial, epsilon):
    """All supports (lexicographic) and their exact probabilities from ``exhaustive``."""
    ex = registry().selector("exhaustive")()
    prep = ex.prepare(trial, np.random.default_rng(0))
    sup = np.concatenate(list(iter_supports(trial.p, trial.s)))
    lp = np.array([ex.log_prob(trial, prep, epsilon, S) for S in sup])
    return sup, lp


def empirical(supports, sup):
    key = {tuple(S): i for i, S in enumerate(sup.tolist())}
    counts = np.bincount([key[tuple(S)] for S in supports.tolist()], minlength=len(sup))
    return counts / counts.sum()


def tv(a, b):
    return 0.5 * float(np.abs(a - b).sum())


def wrong_log_acceptance(old, new, epsilon, delta):
    """A plausible bug: exponent -eps dR / Delta (the 2 of 2 Delta forgotten); targets pi^2."""
    return -epsilon * (np.asarray(new) - np.asarray(old)) / delta


# (lam, r, epsilon): an unconstrained ridge case and one where the l2 bound is active for
# most supports (the secular-equation branch of the shared score).
SETTINGS = [(1.0, 1.1, 8.0), (0.0, 0.3, 5.0)]


@pytest.fixture(scope="module", params=SETTINGS, ids=["ridge", "l2-bound-active"])
def setting(request):
    lam, r, eps = request.param
    trial = make_trial(60, 10, 3, lam, r)
    sup, lp = exact_pi(trial, eps)
    return trial, eps, sup, lp


def run_final_states(trial, eps, iterations=200, n=N_CHAINS, seed=3):
    sel = registry().selector("mcmc")(iterations=iterations)
    return sel.draw(trial, sel.prepare(trial, np.random.default_rng(0)), eps, n, np.random.default_rng(seed))


def test_tolerance_is_meaningful(setting):
    trial, eps, sup, lp = setting
    pi = np.exp(lp)
    rng = np.random.default_rng(11)
    exact_tvs = [tv(rng.multinomial(N_CHAINS, pi / pi.sum()) / N_CHAINS, pi) for _ in range(200)]
    assert np.quantile(exact_tvs, 0.99) < TV_TOL
    wrong = np.exp(2 * lp - logsumexp(2 * lp))
    assert tv(pi, wrong) > 3 * TV_TOL


def test_converges_to_exhaustive(setting):
    trial, eps, sup, lp = setting
    d = run_final_states(trial, eps)
    assert tv(empirical(d.supports, sup), np.exp(lp)) < TV_TOL


def test_wrong_acceptance_ratio_fails(setting, monkeypatch):
    trial, eps, sup, lp = setting
    monkeypatch.setattr(mcmc_mod, "log_acceptance", wrong_log_acceptance)
    d = run_final_states(trial, eps)
    assert tv(empirical(d.supports, sup), np.exp(lp)) > TV_TOL


def transition_matrix(trial, eps, sup):
    index = {tuple(S): i for i, S in enumerate(sup.tolist())}
    P = np.zeros((len(sup), len(sup)))
    for a, S in enumerate(sup):
        for T, prob in mcmc_mod.one_step_transition(trial, eps, S).items():
            P[a, index[T]] += prob
    return P


def test_detailed_balance_exact():
    trial = make_trial(40, 7, 3, lam=0.5, r=0.6, seed=4)  # 35 supports
    eps = 6.0
    sup, lp = exact_pi(trial, eps)
    pi = np.exp(lp)
    P = transition_matrix(trial, eps, sup)
    assert np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    # Only the s (p - s) double-swap neighbours (and the state itself) are reachable.
    overlap = (sup[:, None, :, None] == sup[None, :, None, :]).sum(axis=(2, 3))
    assert np.all(P[overlap < trial.s - 1] == 0)
    flow = pi[:, None] * P
    assert np.max(np.abs(flow - flow.T)) <= 1e-12 * flow.max()
    np.testing.assert_allclose(pi @ P, pi, atol=1e-12)
    # Irreducible and aperiodic enough to converge: some power of P is positive.
    assert np.all(np.linalg.matrix_power(P, trial.s + 1) > 0)


def test_detailed_balance_fails_for_wrong_ratio(monkeypatch):
    trial = make_trial(40, 7, 3, lam=0.5, r=0.6, seed=4)
    eps = 6.0
    sup, lp = exact_pi(trial, eps)
    pi = np.exp(lp)
    monkeypatch.setattr(mcmc_mod, "log_acceptance", wrong_log_acceptance)
    flow = pi[:, None] * transition_matrix(trial, eps, sup)
    assert np.max(np.abs(flow - flow.T)) > 1e-3 * flow.max()


def test_one_step_of_sampler_matches_transition_row():
    """The sampler's actual step from a fixed support follows the enumerated row (chi-square)."""
    trial = make_trial(40, 7, 3, lam=0.5, r=0.6, seed=4)
    eps = 6.0
    S0 = np.array([1, 3, 5])
    row = mcmc_mod.one_step_transition(trial, eps, S0)
    N = 20000
    gens = mcmc_mod.chain_generators(12345, range(N))
    final, accepted, _ = mcmc_mod.run_chains(trial, eps, np.repeat(S0[None], N, 0), 1, gens, trace_chain=None)
    keys = list(row)
    index = {k: i for i, k in enumerate(keys)}
    counts = np.bincount([index[tuple(S)] for S in final.tolist()], minlength=len(keys))
    expected = N * np.array([row[k] for k in keys])
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    keep = exp > 0
    assert chisquare(obs[keep], exp[keep]).pvalue > 1e-3
    assert accepted.sum() == N - counts[index[tuple(S0)]]


def test_incremental_scores_equal_shared_score():
    trial = make_trial(50, 30, 4, lam=0.0, r=0.4, seed=2)  # mix of active / inactive l2 bound
    rng = np.random.default_rng(5)
    from dpbench.core.supports import uniform_supports

    init = uniform_supports(rng, trial.p, trial.s, 500)
    state = mcmc_mod.ChainState(mcmc_mod.design_transposed(trial), trial.score, init)
    np.testing.assert_allclose(state.scores, trial.score(init), rtol=1e-10, atol=1e-10)
    for _ in range(5):
        pos = rng.integers(0, trial.s, 500)
        j = state.propose(pos, rng.integers(0, trial.p - trial.s, 500))
        assert not np.any(state.S == j[:, None])
        new, G, c, xj = state.proposal_scores(pos, j)
        S_new = state.S.copy()
        S_new[np.arange(500), pos] = j
        np.testing.assert_allclose(new, trial.score(S_new), rtol=1e-10, atol=1e-10)
        state.accept(rng.random(500) < 0.5, pos, j, G, c, xj, new)
        np.testing.assert_allclose(state.scores, trial.score(state.S), rtol=1e-10, atol=1e-10)


def test_nonmember_of_rank_is_a_bijection():
    rng = np.random.default_rng(0)
    p, s = 12, 4
    for _ in range(20):
        S = np.sort(rng.choice(p, s, replace=False))
        got = mcmc_mod.nonmember_of_rank(np.repeat(S[None], p - s, 0), np.arange(p - s))
        np.testing.assert_array_equal(got, np.setdiff1d(np.arange(p), S))


@pytest.mark.parametrize("init", ["random", "correlation", "lasso"])
def test_reproducible_regardless_of_number_of_chains(init, monkeypatch):
    trial = make_trial(80, 40, 3, lam=1.0)
    sel = registry().selector("mcmc")(iterations=60, init=init)
    prep = sel.prepare(trial, np.random.default_rng(0))
    a = sel.draw(trial, prep, 4.0, 7, np.random.default_rng(42)).supports
    b = sel.draw(trial, prep, 4.0, 50, np.random.default_rng(42)).supports
    np.testing.assert_array_equal(a, b[:7])
    # Advancing the chains in groups of one gives the same states as one batch.
    monkeypatch.setattr(mcmc_mod, "_GROUP_BYTES", 1)
    c = sel.draw(trial, prep, 4.0, 7, np.random.default_rng(42)).supports
    np.testing.assert_array_equal(a, c)
    # A different seed gives different chains (random start, or at least different paths).
    d = sel.draw(trial, prep, 4.0, 50, np.random.default_rng(43)).supports
    assert not np.array_equal(b, d)


def test_shorter_chain_is_prefix_of_longer():
    trial = make_trial(80, 40, 3, lam=1.0)
    gens = lambda: mcmc_mod.chain_generators(7, range(3))  # noqa: E731
    init = np.array([[0, 1, 2]] * 3)
    _, _, t1 = mcmc_mod.run_chains(trial, 4.0, init, 30, gens())
    _, _, t2 = mcmc_mod.run_chains(trial, 4.0, init, 2000, gens())
    np.testing.assert_array_equal(t1, t2[:31])


def test_metadata_diagnostics_and_starts():
    trial = make_trial(100, 30, 3, lam=1.0)
    cls = registry().selector("mcmc")
    info = cls.describe()
    assert info["dp_type"] == "approximate" and info["neighbouring"] == "replace-one"
    assert not info["analytic"]
    assert "after mixing" in info["summary"]
    sel = cls(iterations=100)
    d = sel.draw(trial, sel.prepare(trial, np.random.default_rng(0)), 50.0, 5, np.random.default_rng(1))
    assert d.supports.shape == (5, 3) and np.all(np.diff(d.supports, axis=1) > 0)
    assert np.isnan(d.delta)
    diag = json.loads(json.dumps(d.diagnostics, allow_nan=False))
    assert 0 <= diag["acceptance_rate"] <= 1 and diag["proposals_per_second"] > 0
    tr = diag["score_trace_chain0"]
    assert tr["min"] <= tr["final"] and len(tr["thinned"]["steps"]) == len(tr["thinned"]["scores"])
    # Data-driven starts are valid supports; on this easy problem both find the truth.
    for start in (mcmc_mod.correlation_start(trial), mcmc_mod.lasso_start(trial)):
        assert start.shape == (3,) and len(set(start.tolist())) == 3
        np.testing.assert_array_equal(start, trial.problem.true_support)


def test_bad_parameters():
    cls = registry().selector("mcmc")
    with pytest.raises(UserInputError):
        cls(init="nope")
    with pytest.raises(UserInputError):
        cls(iterations=-1)
    with pytest.raises(UserInputError):
        cls(iterations="many")
    trial = make_trial(30, 8, 2, lam=1.0)
    with pytest.raises(UserInputError):
        cls().draw(trial, None, 0.0, 2, np.random.default_rng(0))


def test_single_chain_scores_match_shared_score():
    """Regression: one chain (a one-row batch) used to get wrong scores because the shared
    solve_blocks overwrote its ``c`` argument in place for one-row blocks."""
    from dpbench.core.score import solve_blocks

    trial = make_trial(80, 40, 3, lam=1.0)
    S = np.array([[0, 1, 2]])
    G, c = trial.score.blocks(S)
    c0 = c.copy()
    solve_blocks(G, c, trial.score.yy, trial.score.r)
    np.testing.assert_array_equal(c, c0)
    state = mcmc_mod.ChainState(mcmc_mod.design_transposed(trial), trial.score, S)
    np.testing.assert_allclose(state.scores, trial.score(S), rtol=1e-12)
