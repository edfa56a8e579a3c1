"""Generator ``toeplitz`` (docs/reproductions.md): exact SNR, Toeplitz correlation, support."""

import math
import tracemalloc

import numpy as np
import pytest

from dpbench.core.errors import UserInputError
from dpbench_plugins.generators.toeplitz import Toeplitz, toeplitz_rows


def signal_and_noise(problem):
    beta = np.zeros(problem.p)
    beta[problem.true_support] = 1.0 / math.sqrt(problem.s)
    signal = problem.X @ beta
    return signal, problem.y - signal


@pytest.mark.parametrize("n,p,s,snr,rho", [(200, 20, 3, 5.0, 0.1), (50, 9, 5, 0.3, 0.7),
                                           (400, 100, 1, 20.0, 0.0), (30, 12, 4, 1.0, -0.4)])
def test_snr_is_exact(n, p, s, snr, rho):
    for seed in range(5):
        prob = Toeplitz(n=n, p=p, s=s, snr=snr, rho=rho).generate(np.random.default_rng(seed))
        sig, e = signal_and_noise(prob)
        assert (sig @ sig) / (e @ e) == pytest.approx(snr, rel=1e-12)
        assert prob.X.shape == (n, p) and prob.y.shape == (n,)


@pytest.mark.parametrize("s", [1, 3, 5, 10])
def test_true_support_is_spread_out(s):
    prob = Toeplitz(n=20, p=2 * s + 3, s=s).generate(np.random.default_rng(0))
    np.testing.assert_array_equal(prob.true_support, np.arange(0, 2 * s, 2))  # 1-based 1,3,..,2s-1
    assert prob.s == s
    tight = Toeplitz(n=20, p=2 * s - 1 if s > 1 else 2, s=s).generate(np.random.default_rng(0))
    np.testing.assert_array_equal(tight.true_support, np.arange(0, 2 * s, 2))  # p = 2s - 1 suffices


@pytest.mark.parametrize("rho", [0.1, 0.5, -0.6, 0.9])
def test_covariance_is_toeplitz(rho):
    """Empirical covariance of the columns vs Sigma_ij = rho^|i-j|.

    n = 40 000 rows: each sample covariance has standard deviation at most
    sqrt((1 + rho^2) / n) <= 0.0071, so the stated tolerance 0.03 is over 4 standard
    deviations; a structure with rho off by 0.05 is rejected at the same tolerance.
    """
    n, p, tol = 40_000, 7, 0.03
    X = toeplitz_rows(np.random.default_rng(11), n, p, rho)
    emp = X.T @ X / n  # mean zero by construction
    i = np.arange(p)
    sigma = rho ** np.abs(i[:, None] - i[None, :])
    assert np.max(np.abs(emp - sigma)) < tol
    wrong = (rho + 0.05 * np.sign(rho)) ** np.abs(i[:, None] - i[None, :])
    assert np.max(np.abs(emp - wrong)) > tol
    assert abs(X.mean()) < tol


def test_generator_columns_follow_rho():
    prob = Toeplitz(n=40_000, p=6, s=2, rho=0.5).generate(np.random.default_rng(3))
    corr = np.corrcoef(prob.X, rowvar=False)
    for lag in range(1, 6):
        np.testing.assert_allclose(np.diagonal(corr, lag), 0.5**lag, atol=0.03)


def test_never_forms_p_by_p():
    """p = 10 000: a p x p float64 matrix would be 800 MB; peak allocation must stay tiny."""
    gen = Toeplitz(n=20, p=10_000, s=5)
    tracemalloc.start()
    try:
        prob = gen.generate(np.random.default_rng(0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert prob.X.shape == (20, 10_000)
    assert peak < 20 * 2**20, peak  # a few copies of the 1.6 MB design matrix at most


def test_reproducible_and_seed_dependent():
    gen = Toeplitz(n=30, p=10, s=3)
    a = gen.generate(np.random.default_rng(5))
    b = gen.generate(np.random.default_rng(5))
    c = gen.generate(np.random.default_rng(6))
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.X, c.X)


@pytest.mark.parametrize("params", [dict(p=4, s=3), dict(p=10, s=10), dict(n=1), dict(rho=1.0),
                                    dict(snr=0.0), dict(s=0)])
def test_bad_settings_raise_user_errors(params):
    base = dict(n=20, p=10, s=3)
    with pytest.raises(UserInputError):
        Toeplitz(**{**base, **params}).generate(np.random.default_rng(0))


def test_toeplitz_support_placement_of_the_released_code():
    """first = 1 puts the support at 0-based 1, 3, 5, 7, 9 (the authors' bss_neurips.py)."""
    prob = Toeplitz(n=50, p=100, s=5, first=1).generate(np.random.default_rng(0))
    np.testing.assert_array_equal(prob.true_support, [1, 3, 5, 7, 9])
    assert Toeplitz(n=20, p=10, s=5, first=1).generate(np.random.default_rng(0)).true_support[-1] == 9
    with pytest.raises(UserInputError, match="first"):
        Toeplitz(n=20, p=9, s=5, first=1).generate(np.random.default_rng(0))
