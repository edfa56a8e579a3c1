"""The private top-k family (issue 26): peeling, permute-and-flip, one-shot Laplace, joint EM.

* every exact law (dpbench.core.privacy.topk) against an independent brute force: enumeration of
  all sequences, or a literal simulation of the paper's algorithm (chi-square, fixed seeds,
  level 1e-4: a correct law is rejected with probability 1e-4 over seeds);
* peeling at s = 1 is the exponential mechanism over features;
* exact privacy audits: on score vectors moved by at most Delta_f per coordinate (the effect of
  one replaced row) and on a worst-case replace-one pair of data sets, the log-probability of
  every output set moves by at most epsilon; the same audit catches each mechanism run with
  half its noise.
"""

import itertools
import math

import numpy as np
import pytest
from scipy.special import logsumexp

from dpbench.api import Problem
from dpbench.bench.trial import Trial
from dpbench.core.privacy import joint_topk, topk
from dpbench.testing import chi_square_gof
from dpbench_plugins.selectors.joint import JointEM
from dpbench_plugins.selectors.laplace_topk import LaplaceTopK
from dpbench_plugins.selectors.peeling import Peeling
from dpbench_plugins.selectors.pnf import PermuteAndFlip
from dpbench.bench.registry import PluginInstances

ALPHA = 1e-4
SELECTORS = [Peeling, PermuteAndFlip, LaplaceTopK, JointEM]


def all_sets(p, k):
    return np.array(list(itertools.combinations(range(p), k)), dtype=np.int64)


def law(fn, p, k):
    """log P of every k-subset (lexicographic) from a set-law function."""
    S = all_sets(p, k)
    return S, np.array([fn(row) for row in S])


def gof(draws, S, lp):
    return chi_square_gof(np.sort(draws, axis=1), S, lp)[0]


# --------------------------------------------------------------------------- exact laws vs brute force

F = np.array([3.0, 1.0, 2.5, 0.0, 2.5, 1.7])  # a tie (2.5) on purpose


def test_peeling_law_is_the_exponential_mechanism_at_s_1_and_sums_to_one():
    lw = 0.8 * F
    S, lp = law(lambda s: topk.peeling_log_prob(lw, s), F.size, 1)
    np.testing.assert_allclose(lp, lw - logsumexp(lw), atol=1e-12)
    _, lp3 = law(lambda s: topk.peeling_log_prob(lw, s), F.size, 3)
    assert abs(logsumexp(lp3)) < 1e-10


def test_peeling_law_matches_a_literal_sequential_exponential_mechanism():
    """Brute force: k successive rng.choice draws without replacement (not the Gumbel trick)."""
    rng = np.random.default_rng(1)
    lw, k, m = 0.9 * F, 3, 6000
    draws = np.empty((m, k), dtype=np.int64)
    for d in range(m):
        left = list(range(F.size))
        for t in range(k):
            w = np.exp(lw[left] - lw[left].max())
            draws[d, t] = left.pop(rng.choice(len(left), p=w / w.sum()))
    S, lp = law(lambda s: topk.peeling_log_prob(lw, s), F.size, k)
    assert gof(draws, S, lp) > ALPHA
    assert gof(topk.gumbel_top_k(np.random.default_rng(2), lw, k, m), S, lp) > ALPHA
    # the test has power: the law of a different temperature is rejected
    assert gof(draws, S, law(lambda s: topk.peeling_log_prob(1.5 * lw, s), F.size, k)[1]) < ALPHA


def literal_permute_and_flip(rng, q, scale, k):
    """McKenna & Sheldon 2020, peeled k times: permute, flip coins exp((q - q*)/scale)."""
    left, out = list(range(q.size)), []
    for _ in range(k):
        qmax = max(q[left])
        # the best item flips heads with probability 1, so one pass always returns
        hit = next(j for j in rng.permutation(left) if rng.random() <= math.exp((q[j] - qmax) / scale))
        out.append(int(hit))
        left.remove(hit)
    return out


def test_pnf_law_matches_literal_permute_and_flip_and_exponential_noise():
    rng = np.random.default_rng(3)
    scale, k, m = 1.2, 2, 6000
    S, lp = law(lambda s: topk.pnf_peeling_log_prob(F, s, scale), F.size, k)
    assert abs(logsumexp(lp)) < 1e-10
    lit = np.array([literal_permute_and_flip(rng, F, scale, k) for _ in range(m)])
    assert gof(lit, S, lp) > ALPHA
    assert gof(topk.exponential_noise_peeling(np.random.default_rng(4), F, k, scale, m), S, lp) > ALPHA
    # power: the exponential mechanism's law (same scale) is not permute-and-flip's
    lw = F / scale
    assert gof(lit, S, law(lambda s: topk.peeling_log_prob(lw, s), F.size, k)[1]) < ALPHA


def test_pnf_single_round_is_exact_against_enumerating_orders():
    """One round over 5 items: P(r) by enumerating all 120 orders and coin outcomes."""
    q = np.array([0.0, -0.4, -1.1, -0.4, -2.0])
    scale = 0.7
    a = np.exp((q - q.max()) / scale)
    want = np.zeros(q.size)
    for perm in itertools.permutations(range(q.size)):
        stay = 1.0
        for j in perm:
            want[j] += stay * a[j] / 120
            stay *= 1 - a[j]
    got = topk._pnf_round_log_probs(q, scale, np.arange(q.size))
    np.testing.assert_allclose(np.exp(got), want, rtol=1e-12)


def test_laplace_law_matches_literal_noisy_top_k():
    rng = np.random.default_rng(5)
    scale, k, m = 1.5, 2, 8000
    S, lp = law(lambda s: topk.laplace_top_k_log_prob(F, s, scale), F.size, k)
    assert abs(logsumexp(lp)) < 1e-10
    noisy = F + rng.laplace(0, scale, size=(m, F.size))
    lit = np.argsort(-noisy, axis=1)[:, :k]
    assert gof(lit, S, lp) > ALPHA
    assert gof(topk.laplace_top_k(np.random.default_rng(6), F, k, scale, m), S, lp) > ALPHA
    assert gof(lit, S, law(lambda s: topk.laplace_top_k_log_prob(F, s, 2 * scale), F.size, k)[1]) < ALPHA


def test_laplace_law_is_accurate_when_concentrated_and_with_equal_scores():
    f = np.array([40.0, 0.0, 0.0, 0.0, 39.0])
    S, lp = law(lambda s: topk.laplace_top_k_log_prob(f, s, 1.0), f.size, 2)
    assert abs(logsumexp(lp)) < 1e-9
    # {0, 4} against the rest: P(not {0,4}) is about e^-39: its log must be finite, not 0 - 0
    assert np.isfinite(lp).all() and lp[np.flatnonzero((S == [0, 4]).all(axis=1))[0]] > -1e-12


def brute_joint(f, k, eps, sens):
    """The joint mechanism by enumerating all p!/(p-k)! sequences: log P of every set."""
    g = np.sort(f)[::-1]
    seqs = list(itertools.permutations(range(f.size), k))
    u = np.array([-np.max(g[:k] - f[list(s)]) for s in seqs])
    lw = eps * u / (2 * sens)
    lw -= logsumexp(lw)
    out = {}
    for s, v in zip(seqs, lw):
        key = tuple(sorted(s))
        out[key] = np.logaddexp(out.get(key, -np.inf), v)
    return out, seqs, u


@pytest.mark.parametrize("f", [F, np.array([2.0, 2.0, 1.0, 1.0, 0.0, 2.0]), np.arange(7.0)])
def test_joint_table_counts_every_sequence_once(f):
    k = 3
    t = joint_topk.joint_table(f, k)
    _, seqs, u = brute_joint(f, k, 1.0, 1.0)
    assert math.isclose(logsumexp(t["log_count"]), math.log(len(seqs)), rel_tol=1e-12)
    for v, row in zip(t["gaps"], t["log_count"]):
        assert math.isclose(np.exp(logsumexp(row)), np.sum(np.isclose(-u, v, atol=0)), rel_tol=1e-9, abs_tol=1e-9)


def test_joint_law_and_sampler_match_enumeration():
    f, k, eps, sens = F, 3, 2.0, 0.7
    want, _, _ = brute_joint(f, k, eps, sens)
    t = joint_topk.joint_table(f, k)
    S, lp = law(lambda s: joint_topk.joint_log_prob(f, t, s, eps, sens), f.size, k)
    np.testing.assert_allclose(lp, [want[tuple(s)] for s in S.tolist()], atol=1e-10)
    draws = joint_topk.joint_sample(np.random.default_rng(7), t, eps, sens, 6000)
    assert gof(draws, S, lp) > ALPHA
    assert gof(draws, S, law(lambda s: joint_topk.joint_log_prob(f, t, s, 2 * eps, sens), f.size, k)[1]) < ALPHA


# --------------------------------------------------------------------------- exact privacy audits


def mechanism_laws(name, f, k, eps, sens, noise=1.0):
    """log P of every k-set for mechanism ``name`` at budget eps, with its noise times ``noise``."""
    if name == "peeling":
        return law(lambda s: topk.peeling_log_prob((eps / k) * f / (2 * sens * noise), s), f.size, k)[1]
    if name == "pnf":
        return law(lambda s: topk.pnf_peeling_log_prob(f, s, noise * topk.scale_for(eps, sens, k)), f.size, k)[1]
    if name == "laplace":
        return law(lambda s: topk.laplace_top_k_log_prob(f, s, noise * 2 * k * sens / eps), f.size, k)[1]
    t = joint_topk.joint_table(f, k)
    return law(lambda s: joint_topk.joint_log_prob(f, t, s, eps, noise * 2 * sens), f.size, k)[1]


def sup_norm_pairs(rng, p, count, sens):
    """Score pairs with ||f - f'||_inf = sens, each coordinate moved by -sens, 0 or +sens."""
    yield np.array([0.0, 1.0, 2.0, 1.0, 0.5]) * sens, np.array([1.0, 2.0, 1.0, 0.0, 1.5]) * sens
    for _ in range(count):
        f = rng.integers(0, 4, size=p) * sens / 2
        yield f, np.abs(f + rng.choice([-sens, 0.0, sens], size=p))


#: Scores on which the joint mechanism's loss comes closest to its bound (found by a search
#: over sup-norm pairs): eight tied leaders of which seven drop by Delta_f, two laggards rise.
JOINT_PAIR = (np.array([0, 0] + [2] * 8, dtype=float), np.array([1, 1, 2] + [1] * 7, dtype=float))


@pytest.mark.parametrize("name", ["peeling", "pnf", "laplace", "joint"])
def test_exact_audit_on_sup_norm_neighbours_and_half_noise_fails(name):
    """max_S |log P(S) - log P'(S)| <= eps on every pair; with half the noise it exceeds eps."""
    rng = np.random.default_rng(8)
    sens, k = 1.0, 2
    worst, half = 0.0, 0.0
    pairs = list(sup_norm_pairs(rng, 5, 12, sens))
    for f, g in pairs + ([JOINT_PAIR] if name == "joint" else []):
        for eps in (0.5, 2.0) + ((8.0,) if name == "joint" else ()):
            loss = np.max(np.abs(mechanism_laws(name, f, k, eps, sens) - mechanism_laws(name, g, k, eps, sens)))
            worst = max(worst, loss / eps)
            half = max(half, np.max(np.abs(mechanism_laws(name, f, k, eps, sens, 0.5)
                                           - mechanism_laws(name, g, k, eps, sens, 0.5))) / eps)
    assert worst <= 1 + 1e-9
    assert worst > 0.3  # the pairs do move the law: the audit is not vacuous
    # measured (calibrated / half noise): peeling 0.68 / 1.42, pnf 0.87 / 1.83, laplace 0.78 / 1.54,
    # joint 0.56 / 1.13 (JOINT_PAIR at eps = 8)
    assert half > 1.05


# A worst-case replace-one pair (b_x = b_y = 1, Delta_f = 2): three common rows give X^T y =
# (1, 3, 3, 1); the replaced row adds (-1, -1, 1, 1) or (1, 1, -1, -1), so every score moves by
# the full sensitivity and the ranking reverses.
_COMMON = [[1, 1, 1, 1], [0, 1, 1, 0], [0, 1, 1, 0]]
AUDIT_D = np.array(_COMMON + [[-1, -1, 1, 1]], dtype=float)
AUDIT_D2 = np.array(_COMMON + [[1, 1, -1, -1]], dtype=float)
# JOINT_PAIR as data (Delta_f = 2, y = 1): common rows give X^T y = (1, 1, 4, 3, ..., 3); the
# replaced row adds (-1, -1, 0, 1, ..., 1) or its negative, giving 2 x JOINT_PAIR.
_JCOMMON = [[1] * 10, [0, 0] + [1] * 8, [0, 0] + [1] * 8, [0, 0, 1] + [0] * 7]
JOINT_D = np.array(_JCOMMON + [[-1, -1, 0] + [1] * 7], dtype=float)
JOINT_D2 = np.array(_JCOMMON + [[1, 1, 0] + [-1] * 7], dtype=float)


def audit_trial(X):
    return Trial(Problem(X, np.ones(len(X)), 2).clipped(1.0, 1.0), b_x=1.0, b_y=1.0, r=1.0, lam=0.0, instances=PluginInstances())


def selector_loss(sel, eps, pair=(AUDIT_D, AUDIT_D2)):
    laws = []
    for X in pair:
        trial = audit_trial(X)
        prep = sel.prepare(trial, None)
        laws.append(np.array([sel.log_prob(trial, prep, eps, s) for s in all_sets(X.shape[1], 2)]))
    return np.max(np.abs(laws[0] - laws[1])) / eps


def half_noise(cls):
    """The same selector calibrated to half the sensitivity (half the noise): not eps-DP."""
    class Half(cls):
        def prepare(self, trial, rng):
            prep = super().prepare(trial, rng)
            object.__setattr__(prep, "sensitivity", prep.sensitivity / 2)
            return prep
    Half.__name__ = f"Half{cls.__name__}"
    return Half


@pytest.mark.parametrize("cls", SELECTORS, ids=lambda c: c.name)
def test_selector_audit_on_a_worst_case_replace_one_pair(cls):
    """The selectors' own sensitivity (2 b_x b_y) and calibration, end to end from the data."""
    pair = (JOINT_D, JOINT_D2) if cls is JointEM else (AUDIT_D, AUDIT_D2)
    losses = [selector_loss(cls(), eps, pair) for eps in (0.5, 1.0, 8.0)]
    assert max(losses) <= 1 + 1e-9
    half = max(selector_loss(half_noise(cls)(), eps, pair) for eps in (0.5, 1.0, 8.0))
    # measured (calibrated / half noise): peeling 0.62 / 1.33, pnf 0.83 / 1.65, laplace-topk 0.62 / 1.24,
    # joint 0.56 / 1.13
    assert half > 1.05


def test_marginal_scores_and_sensitivity_of_the_audit_pair():
    a, b = (topk.marginal_scores(audit_trial(X)) for X in (AUDIT_D, AUDIT_D2))
    assert a.sensitivity == b.sensitivity == 2.0
    np.testing.assert_allclose(np.abs(a.scores - b.scores), 2.0)


def test_selectors_recover_clear_signal_and_are_reproducible():
    rng = np.random.default_rng(9)
    X = rng.uniform(-0.5, 0.5, size=(400, 30))
    y = np.clip(X[:, [2, 11, 17]].sum(axis=1), -0.5, 0.5)
    trial = Trial(Problem(X, y, 3), b_x=0.5, b_y=0.5, r=1.0, lam=0.0, instances=PluginInstances())
    for cls in SELECTORS:
        sel = cls()
        prep = sel.prepare(trial, None)
        d1 = sel.draw(trial, prep, 50.0, 20, np.random.default_rng(10)).supports
        d2 = sel.draw(trial, prep, 50.0, 20, np.random.default_rng(10)).supports
        assert np.array_equal(d1, d2)
        assert np.mean((d1 == [2, 11, 17]).all(axis=1)) > 0.9, cls.name
        lp = sel.log_prob(trial, prep, 50.0, [2, 11, 17])
        assert lp is None or lp > math.log(0.9)
