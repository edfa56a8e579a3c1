"""Inverse-CDF sampling and the draws that certified bounds on the weights decide
(:mod:`dpbench.core.privacy.exponential`): exact checks against the sampler with every weight
vector tried from the box, and the closed forms of the probability bounds."""

import numpy as np
import pytest

from dpbench.api import decided_by_bounds, inverse_cdf, log_normalize, probability_bounds, sample_log_weights


def _box(rng, K, width):
    lo = rng.normal(scale=3.0, size=K)
    return lo, lo + rng.uniform(0.0, width, size=K)


def _points(rng, lo, hi, m):
    """m weight vectors of the box: its two extreme corners for every split index, and random points."""
    K = lo.size
    pts = [np.where(np.arange(K) <= i, lo, hi) for i in range(K)] + [np.where(np.arange(K) <= i, hi, lo) for i in range(K)]
    pts += [lo + rng.uniform(size=K) * (hi - lo) for _ in range(m)]
    return pts


def test_inverse_cdf_is_the_sampler_on_the_same_uniform_numbers():
    lw = np.array([-1.0, 0.5, -np.inf, 2.0, 0.0])
    a = sample_log_weights(np.random.default_rng(7), lw, 1000)
    b = inverse_cdf(lw, np.random.default_rng(7).random(1000))
    assert np.array_equal(a, b)
    assert not np.any(a == 2)  # a zero weight is never drawn


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("width", [0.05, 1.0, 6.0])
def test_a_decided_draw_is_the_exact_draw_for_every_weight_vector_in_the_box(seed, width):
    rng = np.random.default_rng(seed)
    K = 6
    lo, hi = _box(rng, K, width)
    u = rng.random(20_000)
    idx = inverse_cdf(lo, u)  # the draws made with one corner of the box (mistakes: the upper R_t)
    dec = decided_by_bounds(lo, hi, u, idx)
    for w in _points(rng, lo, hi, 20):
        assert np.array_equal(inverse_cdf(w, u)[dec], idx[dec])
    # the undecided share is at most the total width of the CDF bounds (plus sampling noise)
    cdf_lo = [np.exp(lo[:i + 1]).sum() / (np.exp(lo[:i + 1]).sum() + np.exp(hi[i + 1:]).sum()) for i in range(K)]
    cdf_hi = [np.exp(hi[:i + 1]).sum() / (np.exp(hi[:i + 1]).sum() + np.exp(lo[i + 1:]).sum()) for i in range(K)]
    assert (~dec).mean() <= sum(h - l for l, h in zip(cdf_lo, cdf_hi)) + 0.01


def test_exact_weights_decide_every_draw_and_wide_bounds_few():
    rng = np.random.default_rng(3)
    lw = rng.normal(size=5)
    u = rng.random(50_000)
    idx = inverse_cdf(lw, u)
    assert decided_by_bounds(lw, lw, u, idx).all()
    # one weight free to grow without bound: only the draws of that index above every other are decided
    hi = lw.copy()
    hi[4] = np.inf
    dec = decided_by_bounds(lw, hi, u, idx)
    assert np.all(idx[dec] == 4) and dec.any()
    lo2 = lw.copy()
    lo2[0] = -np.inf  # a weight that may be zero: no draw of index 0 is decided
    idx2 = inverse_cdf(lw, u)
    dec2 = decided_by_bounds(lo2, lw, u, idx2)
    assert np.any(idx2 == 0) and not np.any(dec2[idx2 == 0]) and dec2[idx2 == 4].all()


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="log_lo <= log_hi"):
        decided_by_bounds([0.0, 1.0], [0.0, 0.5], np.array([0.3]), np.array([0]))
    with pytest.raises(ValueError, match="log_lo <= log_hi"):
        probability_bounds([0.0, 1.0], [0.0, 0.5])
    with pytest.raises(ValueError, match="same shape"):
        decided_by_bounds([0.0, 1.0], [0.0, 1.0], np.array([0.3, 0.4]), np.array([0]))
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        inverse_cdf([0.0, 1.0], np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match="every weight is zero"):
        inverse_cdf([-np.inf, -np.inf], np.array([0.5]))


@pytest.mark.parametrize("seed", range(4))
def test_probability_bounds_hold_and_are_attained_at_the_corners(seed):
    rng = np.random.default_rng(seed)
    lo, hi = _box(rng, 5, 2.0)
    low, high = probability_bounds(lo, hi)
    for w in _points(rng, lo, hi, 50):
        p = np.exp(log_normalize(w))
        assert np.all(p >= low - 1e-12) and np.all(p <= high + 1e-12)
    for i in range(5):  # P(i) is smallest with w_i low and the rest high, largest the other way
        w_min = hi.copy(); w_min[i] = lo[i]
        w_max = lo.copy(); w_max[i] = hi[i]
        assert np.exp(log_normalize(w_min))[i] == pytest.approx(low[i], rel=1e-12)
        assert np.exp(log_normalize(w_max))[i] == pytest.approx(high[i], rel=1e-12)
    same = probability_bounds(lo, lo)
    np.testing.assert_allclose(same[0], np.exp(log_normalize(lo)), rtol=1e-12)
    np.testing.assert_allclose(same[1], np.exp(log_normalize(lo)), rtol=1e-12)
