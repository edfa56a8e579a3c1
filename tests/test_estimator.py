"""The Python API (`dpbench.select`) and the scikit-learn transformer."""

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import check_estimator

import dpbench
from dpbench.bench.trial import DEFAULT_LAM
from dpbench.api import RidgeScore
from dpbench import UserInputError
from dpbench.core.supports import iter_supports


def _data(seed=0, n=150, p=8):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = X[:, [1, 4]].sum(axis=1) + 0.3 * rng.standard_normal(n)
    return X, y


def test_select_returns_support_and_exact_probability():
    X, y = _data()
    res = dpbench.select("exhaustive", X, y, s=2, epsilon=2.0, random_state=0, draws=5)
    assert res.supports.shape == (5, 2) and res.dp_type == "pure" and res.neighbouring == "replace-one"
    # the reported log-probability equals the exponential mechanism computed here by hand
    Xc, yc = np.clip(X, -0.5, 0.5), np.clip(y, -0.5, 0.5)
    S = np.concatenate(list(iter_supports(8, 2)))
    scores = RidgeScore(Xc, yc, lam=DEFAULT_LAM, r=1.1)(S)
    delta = (0.5 + 0.5 * 1.1 * np.sqrt(2)) ** 2
    lw = -2.0 * scores / (2 * delta)
    k = int(np.flatnonzero((S == res.support).all(axis=1))[0])
    assert res.log_prob == pytest.approx(lw[k] - logsumexp(lw), abs=1e-9)
    again = dpbench.select("exhaustive", X, y, s=2, epsilon=2.0, random_state=0, draws=5)
    assert np.array_equal(res.supports, again.supports)


def test_select_rejects_bad_input():
    X, y = _data()
    with pytest.raises(UserInputError, match="epsilon"):
        dpbench.select("exhaustive", X, y, s=2, epsilon=0)
    with pytest.raises(UserInputError, match="1 <= s < p"):
        dpbench.select("exhaustive", X, y, s=8, epsilon=1)
    with pytest.raises(UserInputError, match="Did you mean"):
        dpbench.select("exhaustve", X, y, s=2, epsilon=1)
    X[0, 0] = np.nan
    with pytest.raises(UserInputError, match="NaN"):
        dpbench.select("exhaustive", X, y, s=2, epsilon=1)


def test_transformer_in_pipeline():
    X, y = _data()
    sel = dpbench.DPSubsetSelector("exhaustive", s=2, epsilon=50.0, random_state=1)
    pipe = make_pipeline(sel, LinearRegression()).fit(X, y)
    mask = pipe[0].get_support()
    assert mask.sum() == 2 and list(np.flatnonzero(mask)) == list(pipe[0].support_)
    assert pipe[0].transform(X).shape == (150, 2)
    # at a large epsilon the mechanism concentrates on the best support, here the signal {1, 4}
    assert list(pipe[0].support_) == [1, 4]


def test_check_estimator():
    # s = 1 so that every data shape scikit-learn's checks use has s < p (where p >= 2)
    check_estimator(dpbench.DPSubsetSelector("exhaustive", s=1, epsilon=1.0, random_state=0),
                    expected_failed_checks={
                        # one feature cannot hold a support of size s < p
                        "check_fit2d_1feature": "needs s < n_features",
                    })
