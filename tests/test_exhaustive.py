"""Selector ``exhaustive`` (docs/methods/exponential-mechanism.md): exact probabilities and exact sampling.

The reference distribution is built by brute force, independently of the selector's
streaming code (:func:`dpbench.testing.exponential_mechanism_log_probs`: every support from
itertools.combinations, scored with a fresh RidgeScore on the same clipped data,
log-weights -epsilon R / (2 Delta) normalised with scipy.special.logsumexp).
"""

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from dpbench.bench.trial import Trial
from dpbench.core.errors import UserInputError
from dpbench.testing import chi_square_gof
from dpbench.testing import exponential_mechanism_log_probs as brute_force_log_probs
from dpbench_plugins.selectors.exhaustive import Exhaustive
from dpbench_plugins.generators.toeplitz import Toeplitz
from dpbench.bench.registry import PluginInstances

B_X = B_Y = 0.5
R, LAM = 1.1, 1.0
EPS = 10.0  # spreads the mass over all 56 supports (largest probability about 0.15)
N_DRAWS = 20_000
ALPHA = 1e-3  # chi-square rejection level; the seeds are fixed, so the outcome is deterministic


def make_trial(n=30, p=8, s=3, seed=0, lam=LAM):
    problem = Toeplitz(n=n, p=p, s=s, snr=2.0).generate(np.random.default_rng(seed))
    return Trial(problem.clipped(B_X, B_Y), b_x=B_X, b_y=B_Y, r=R, lam=lam, instances=PluginInstances())


def streaming():
    return Exhaustive(cache=0, chunk=5)  # 56 supports in 12 chunks, never all held at once


def cached():
    return Exhaustive()


def chi_square_pvalue(draws, supports, log_probs):
    return chi_square_gof(draws, supports, log_probs)[0]


@pytest.mark.parametrize("make", [cached, streaming], ids=["cached", "streaming"])
def test_log_prob_equals_brute_force_enumeration(make):
    trial = make_trial()
    sel = make()
    prepared = sel.prepare(trial, np.random.default_rng(0))
    assert (prepared.scores is None) == (make is streaming)
    for eps in (0.5, EPS, 1e4):  # 1e4: most supports have probability far below 1e-300
        supports, ref = brute_force_log_probs(trial, eps)
        got = np.array([sel.log_prob(trial, prepared, eps, S) for S in supports])
        assert np.all(np.isfinite(got))  # no underflow to "probability 0"
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10)
        assert logsumexp(got) == pytest.approx(0.0, abs=1e-10)
    # argument order of a support does not matter
    supports, ref = brute_force_log_probs(trial, EPS)
    assert sel.log_prob(trial, prepared, EPS, supports[17][::-1]) == pytest.approx(ref[17], abs=1e-10)


def test_recovery_probability_of_true_support():
    trial = make_trial()
    sel = cached()
    prepared = sel.prepare(trial, np.random.default_rng(0))
    supports, ref = brute_force_log_probs(trial, EPS)
    k = int(np.flatnonzero((supports == trial.problem.true_support).all(axis=1))[0])
    assert math.exp(sel.log_prob(trial, prepared, EPS, trial.problem.true_support)) == pytest.approx(
        math.exp(ref[k]), rel=1e-10)


@pytest.mark.parametrize("make", [cached, streaming], ids=["cached", "streaming"])
def test_sampling_frequencies_match_exact_probabilities(make):
    trial = make_trial()
    sel = make()
    prepared = sel.prepare(trial, np.random.default_rng(1))
    supports, ref = brute_force_log_probs(trial, EPS)
    draws = sel.draw(trial, prepared, EPS, N_DRAWS, np.random.default_rng(2)).supports
    assert draws.shape == (N_DRAWS, trial.s) and draws.dtype == np.int64
    assert np.all(np.diff(draws, axis=1) > 0)
    assert chi_square_pvalue(draws, supports, ref) > ALPHA
    # the same test has power: these frequencies are rejected against the law at 1.5 epsilon
    _, wrong = brute_force_log_probs(trial, 1.5 * EPS)
    assert chi_square_pvalue(draws, supports, wrong) < ALPHA


@pytest.mark.parametrize("make", [cached, streaming], ids=["cached", "streaming"])
def test_draws_reproducible_from_seed(make):
    trial = make_trial()
    sel = make()
    prepared = sel.prepare(trial, np.random.default_rng(0))
    a = sel.draw(trial, prepared, EPS, 50, np.random.default_rng(7)).supports
    b = sel.draw(trial, prepared, EPS, 50, np.random.default_rng(7)).supports
    np.testing.assert_array_equal(a, b)


def test_streaming_with_concentrated_mass():
    """Large epsilon: almost all mass on the best support, found across chunk boundaries."""
    trial = make_trial(seed=3)
    supports, ref = brute_force_log_probs(trial, 500.0)
    best = supports[np.argmax(ref)]
    assert ref.max() > math.log(0.99)
    draws = streaming().draw(trial, streaming().prepare(trial, None), 500.0, 200,
                             np.random.default_rng(4)).supports
    assert np.mean((draws == best).all(axis=1)) > 0.95


def test_limit_error_names_the_count_and_the_fix():
    trial = make_trial(p=8, s=3)
    with pytest.raises(UserInputError) as err:
        Exhaustive(limit=55).prepare(trial, np.random.default_rng(0))
    msg = str(err.value)
    assert "C(8, 3) = 56" in msg and "exhaustive.limit" in msg
    assert "\n" not in msg
    Exhaustive(limit=56).prepare(trial, np.random.default_rng(0))  # at the limit: accepted


def test_metadata():
    assert Exhaustive.dp_type == "pure"
    assert Exhaustive.neighbouring == "replace-one"
    assert Exhaustive.describe()["analytic"] is True
