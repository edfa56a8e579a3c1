"""Exact references for the oracle-based selectors: every support enumerated and scored, the
selectors' closed-form laws on neighbouring data sets, and the top-R list checked against them."""

import math

import numpy as np

from dpbench.api import Problem
from dpbench.bench.trial import Trial
from dpbench.core import toplist as _swaps
from dpbench.testing import brute_force_scores
from dpbench_plugins.generators.toeplitz import Toeplitz
from dpbench.bench.registry import PluginInstances


BX, BY, RR = 0.5, 0.5, 1.1


def toeplitz_problem(n, p, s, seed, snr=5.0):
    return Toeplitz(n=n, p=p, s=s, snr=snr).generate(np.random.default_rng(seed))


def toeplitz_trial(n, p, s, lam=1.0, r=RR, seed=0, snr=5.0):
    """The clipped Toeplitz design of seed ``seed`` in a trial with b_x = b_y = 0.5 (default oracle)."""
    return Trial(toeplitz_problem(n, p, s, seed, snr).clipped(BX, BY), b_x=BX, b_y=BY, r=r, lam=lam, instances=PluginInstances())


def enumerate_trial(problem, lam=0.0, b_x=BX, b_y=BY, r=RR, delta=0.0):
    """The trial of ``problem`` clipped to (b_x, b_y), answered by the exact ``enumerate`` oracle."""
    return Trial(problem.clipped(b_x, b_y), b_x=b_x, b_y=b_y, r=r, lam=lam, solver="enumerate", delta=delta, instances=PluginInstances())


def enumerate_all(trial):
    """All supports and their scores, sorted by (score, lexicographic support)."""
    S, sc = brute_force_scores(trial)
    order = _swaps.lex_order(sc, S)
    return S[order], sc[order]


def worst_case_neighbour(problem, rng, b_x, b_y):
    """Replace one random row by a vertex of the clipping box (random signs)."""
    X, y = problem.X.copy(), problem.y.copy()
    i = rng.integers(problem.n)
    X[i] = b_x * rng.choice([-1.0, 1.0], size=problem.p)
    y[i] = b_y * rng.choice([-1.0, 1.0])
    return Problem(X, y, problem.s)


def adversarial_pair(problem, rng, b_x, b_y, lam):
    """Two neighbours whose replaced row sits on a vertex aligned with a good support's fit.

    Row i becomes x with x_j = b_x sign(beta_j) on a top-5 support S (random signs elsewhere)
    and y = +b_y in one data set, -b_y in the other: S's residual on that row moves from
    about b_y - b_x ||beta||_1 to b_y + b_x ||beta||_1, close to the sensitivity bound.
    """
    trial = enumerate_trial(problem, lam=lam, b_x=b_x, b_y=b_y)
    S, _ = enumerate_all(trial)
    Sk = S[rng.integers(0, min(len(S), 5))]
    beta = trial.score.solve(Sk[None])[1][0]
    X, y = problem.X.copy(), problem.y.copy()
    i = rng.integers(problem.n)
    X[i] = b_x * rng.choice([-1.0, 1.0], size=problem.p)
    X[i, Sk] = b_x * np.sign(beta)
    y2 = y.copy()
    y[i], y2[i] = b_y, -b_y
    return Problem(X, y, problem.s), Problem(X, y2, problem.s)


def neighbour_pairs(problem, rng, b_x, b_y, lam, k=4):
    for _ in range(k):
        yield problem, worst_case_neighbour(problem, rng, b_x, b_y)
        yield adversarial_pair(problem, rng, b_x, b_y, lam)


def exact_distribution(sel, problem, eps, lam, b=(BX, BY), delta_scale=1.0):
    """log P of every support (fixed lexicographic order); delta_scale miscalibrates Delta."""
    trial = enumerate_trial(problem, lam=lam, b_x=b[0], b_y=b[1])
    if delta_scale != 1.0:
        trial.__dict__["sensitivity"] = trial.sensitivity * delta_scale  # overrides the cached property
    prep = sel.prepare(trial, None)
    S, _ = enumerate_all(trial)
    order = np.lexsort(S.T[::-1])
    return sel.log_probs(trial, prep, eps, S[order]), prep, trial


def max_ratio(sel, a, b, eps, lam, bounds=(BX, BY), delta_scale=1.0):
    lp, pa, _ = exact_distribution(sel, a, eps, lam, bounds, delta_scale)
    lq, pb, _ = exact_distribution(sel, b, eps, lam, bounds, delta_scale)
    return np.max(np.abs(lp - lq)) / eps, pa, pb


def copies_problem(seed, n=60, p=24, s=4, noise=0.05):
    """True features 0..s-1 and near copies s..2s-1: many >= 2-swap supports beat single swaps."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, s:2 * s] = X[:, :s] + noise * rng.standard_normal((n, s))
    y = X[:, :s].sum(axis=1) / math.sqrt(s) + 0.1 * rng.standard_normal(n)
    return Problem(X, y, s, true_support=list(range(s)), name="copies")


def duplicates_problem(seed, n=60, p=11, s=3):
    """Exact duplicate columns 0 = 1 and 5 = 6: exactly tied supports inside and across roots."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, 1] = X[:, 0]
    X[:, 6] = X[:, 5]
    beta = np.zeros(p)
    beta[[1, 2, 8]] = 0.6
    return Problem(X, X @ beta + 0.3 * rng.standard_normal(n), s, true_support=[1, 2, 8])


def three_pairs_problem(seed, n=60, p=11):
    """Duplicates 0 = 1, 5 = 6, 8 = 9 and y on x0, x5, x8: S1 = {0, 5, 8} and level 2's minimum is
    tied exactly across three roots ({0, 6, 9}, {1, 5, 9}, {1, 6, 8}: kept {0}, {5}, {8})."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, 1], X[:, 6], X[:, 9] = X[:, 0], X[:, 5], X[:, 8]
    beta = np.zeros(p)
    beta[[0, 5, 8]] = 0.6
    return Problem(X, X @ beta + 0.3 * rng.standard_normal(n), 3, true_support=[0, 5, 8], name="ties-across-roots")


def highs_trial(problem, lam=2.0, **solver_params):
    return Trial(problem.clipped(BX, BY), b_x=BX, b_y=BY, r=RR, lam=lam, solver="highs",
                 solver_params=solver_params, instances=PluginInstances())


def exact_top_list(trial, R):
    """(top list with enum_limit=0, all supports, their scores), checked certified and equal to
    the R smallest of the brute-force enumeration in canonical order."""
    lst = _swaps.top_list(trial, R, enum_limit=0)
    S, sc = enumerate_all(trial)
    assert lst.certified, lst.diagnostics
    np.testing.assert_array_equal(lst.supports, S[:R])
    np.testing.assert_allclose(lst.scores, sc[:R], rtol=1e-12)
    return lst, S, sc


def thresholded_levels_match(lst, S, sc, R):
    """Yield each thresholded level's diagnostics after checking that it is certified, its
    threshold is at least the R-th score, and exactly its members at or below the threshold
    were returned."""
    s = S.shape[1]
    for t, info in lst.diagnostics["levels_thresholded"].items():
        lvl = s - np.isin(S, lst.supports[0]).sum(axis=1) == int(t)
        assert info["certified"] and info["threshold"] >= sc[R - 1]
        assert info["members_below"] == int(np.sum(lvl & (sc <= info["threshold"])))
        yield info



def exact_law(sel, trial, eps):
    prep = sel.prepare(trial, None)
    S, _ = enumerate_all(trial)
    S = S[np.lexsort(S.T[::-1])]
    return np.exp(sel.log_probs(trial, prep, eps, S)), prep


def hockey_stick(pa, pb, eps):
    """max over both directions of sum_S max(0, P(S) - e^eps Q(S))."""
    return max(np.maximum(0.0, pa - math.exp(eps) * pb).sum(), np.maximum(0.0, pb - math.exp(eps) * pa).sum())

