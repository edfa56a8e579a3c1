"""Supports as combinations: enumeration order, ranks, ids, uniform sampling, swaps."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import chisquare

import dpbench.core.supports as comb
from dpbench.core.supports import (iter_supports, log_binom, n_supports, single_swaps, support_ids, uniform_supports, unrank_support)

CASES = [(1, 1), (5, 1), (6, 5), (7, 3), (9, 4), (10, 9), (12, 6), (13, 2)]


def combos(p, s):
    return np.array(list(itertools.combinations(range(p), s)), dtype=np.int64).reshape(-1, s)


@pytest.mark.parametrize("p,s", CASES)
@pytest.mark.parametrize("chunk", [1, 7, 200_000])
def test_iter_supports_is_itertools_order(p, s, chunk):
    chunks = list(iter_supports(p, s, chunk_size=chunk))
    assert all(len(c) == chunk for c in chunks[:-1]) and 0 < len(chunks[-1]) <= chunk
    assert all(c.dtype == np.int64 and c.shape[1] == s for c in chunks)
    np.testing.assert_array_equal(np.concatenate(chunks), combos(p, s))


@pytest.mark.parametrize("p,s", [(11, 5), (14, 7), (9, 8), (20, 3)])
def test_iter_supports_with_prefix_loop(monkeypatch, p, s):
    """A small suffix table forces the prefix + table-tail path for every s."""
    monkeypatch.setattr(comb, "_SUFFIX_TABLE", 30)
    got = np.concatenate(list(iter_supports(p, s, chunk_size=13)))
    np.testing.assert_array_equal(got, combos(p, s))


def test_iter_supports_chunks_are_independent_arrays():
    chunks = list(iter_supports(8, 3, chunk_size=10))
    chunks[0][:] = -1
    np.testing.assert_array_equal(np.concatenate(chunks[1:]), combos(8, 3)[10:])


def test_iter_supports_large_count_is_lazy():
    it = iter_supports(10_000, 5, chunk_size=1000)  # C(10000, 5) ~ 8e17: must not materialise
    first = next(it)
    np.testing.assert_array_equal(first[:3], [[0, 1, 2, 3, 4], [0, 1, 2, 3, 5], [0, 1, 2, 3, 6]])
    assert first.shape == (1000, 5)


@pytest.mark.parametrize("p,s", CASES)
def test_unrank_is_inverse_of_enumeration(p, s):
    all_s = combos(p, s)
    for k in range(len(all_s)):
        np.testing.assert_array_equal(unrank_support(k, p, s), all_s[k])
    with pytest.raises(IndexError):
        unrank_support(len(all_s), p, s)
    with pytest.raises(IndexError):
        unrank_support(-1, p, s)


def test_unrank_large_problem_matches_stream_and_ends():
    p, s = 300, 4
    first = next(iter_supports(p, s, chunk_size=5000))
    for k in (0, 1, 296, 297, 4999):
        np.testing.assert_array_equal(unrank_support(k, p, s), first[k])
    np.testing.assert_array_equal(unrank_support(math.comb(p, s) - 1, p, s), [296, 297, 298, 299])


@pytest.mark.parametrize("p,s", CASES)
def test_support_ids_bijective(p, s):
    ids = support_ids(combos(p, s), p)
    assert ids.dtype == np.int64
    np.testing.assert_array_equal(np.sort(ids), np.arange(math.comb(p, s)))
    assert support_ids(combos(p, s)[0], p).shape == (1,)


def test_support_ids_overflow_is_reported():
    with pytest.raises(OverflowError):
        support_ids(np.arange(30)[None, :], 200)  # C(200, 30) > 2^63


def test_counts_and_log_binomials():
    assert n_supports(10_000, 5) == math.comb(10_000, 5)
    for n, k in [(10, 3), (10_000, 5), (50, 25), (7, 0), (7, 7)]:
        assert log_binom(n, k) == pytest.approx(math.log(math.comb(n, k)), rel=1e-12, abs=1e-12)
    assert log_binom(5, 6) == -np.inf and log_binom(5, -1) == -np.inf
    np.testing.assert_allclose(log_binom(np.array([4, 5]), np.array([2, 2])), np.log([6, 10]))


@pytest.mark.parametrize("p,s", [(7, 3), (6, 4), (5, 1), (6, 5)])  # both sampling branches
def test_uniform_supports_are_uniform(p, s):
    """Chi-square goodness of fit to the uniform law over C(p, s) cells; seed fixed,
    rejection level 1e-3 (a wrong sampler with visibly unequal cells fails at this size)."""
    rng = np.random.default_rng(2024)
    m = math.comb(p, s)
    draws = uniform_supports(rng, p, s, 1000 * m)
    assert draws.shape == (1000 * m, s) and draws.dtype == np.int64
    assert np.all(np.diff(draws, axis=1) > 0)  # sorted, distinct
    counts = np.bincount(support_ids(draws, p), minlength=m)
    assert chisquare(counts).pvalue > 1e-3
    # the test has power: one support 30 % too frequent is rejected
    biased = counts.astype(float)
    biased[0] *= 1.3
    biased *= counts.sum() / biased.sum()
    assert chisquare(biased).pvalue < 1e-3 or m == 1


def test_uniform_supports_reproducible():
    a = uniform_supports(np.random.default_rng(1), 50, 5, 100)
    b = uniform_supports(np.random.default_rng(1), 50, 5, 100)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("support,p", [([0, 2, 4], 8), ([1], 4), ([0, 1, 2, 3], 5), ([3, 7, 8, 11, 12], 13)])
def test_single_swaps_count_content_and_order(support, p):
    S = np.array(support)
    s = S.size
    got = single_swaps(S, p)
    assert got.shape == ((p - s) * s, s)
    assert np.all(np.diff(got, axis=1) > 0)
    # content: exactly the supports sharing s - 1 indices with S, each once
    want = {c for c in itertools.combinations(range(p), s) if len(set(c) & set(support)) == s - 1}
    assert {tuple(r) for r in got.tolist()} == want and len(want) == got.shape[0]
    # documented order: position i of S outer, non-member j ascending inner
    outside = [j for j in range(p) if j not in support]
    k = 0
    for i in range(s):
        for j in outside:
            assert tuple(got[k]) == tuple(sorted(set(support) - {support[i]} | {j}))
            k += 1
