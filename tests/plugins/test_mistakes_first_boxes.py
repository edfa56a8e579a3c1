"""``mistakes`` from first boxes: the listings of the default top-R list bound every R_t, and the
level searches run only for a draw (or the gap condition, or the law) the boxes do not decide.

Every test compares with brute force (all supports scored) or with the preparation made of the
level searches (:meth:`Mistakes.refined`), drawn with the same random numbers.
"""

import dataclasses

import numpy as np
import pytest

from dpbench.core import toplist as _swaps
from dpbench.core.privacy.exponential import em_log_weights, log_normalize
from dpbench.core.toplist import levels as _levels
from dpbench.core.toplist import listings as _listings
from dpbench_plugins.selectors.swaps import mistakes as _mistakes
from dpbench_plugins.selectors.swaps.mistakes import Mistakes
from dpbench_plugins.selectors.swaps.topr import TopR
from helpers.exact import enumerate_all, highs_trial, toeplitz_problem

PROBLEMS = [(0, 60, 12, 3, 2.0), (1, 40, 11, 4, 0.5), (2, 200, 13, 3, 8.0)]


def exact_levels(trial, center):
    """Level t = |S \\ center| of every support, and the scores (brute force, canonical order)."""
    S, sc = enumerate_all(trial)
    return S, sc, trial.s - np.isin(S, center).sum(axis=1)


@pytest.fixture
def listed(monkeypatch):
    """Every level t >= 2 too large for closed form, so each one is listed (highs enumerates
    directly), and no short search in ``prepare``: the boxes are the listings' own."""
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", 0)
    monkeypatch.setattr(_mistakes, "LAW_NODES", 0)


@pytest.mark.parametrize("seed,n,p,s,lam", PROBLEMS)
def test_the_short_search_makes_easy_levels_exact(seed, n, p, s, lam, monkeypatch):
    """With the short search of ``prepare`` (``LAW_NODES`` per root) these easy levels certify: every
    R_t is the brute-force minimum and the law (P exact) is the brute-force law, with no search
    to the full work limit."""
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", 0)
    trial = highs_trial(toeplitz_problem(n, p, s, seed), lam)
    sel = Mistakes()
    prep = sel.prepare(trial, None)
    assert prep.first_boxes and prep.certified and sel.has_law(prep)
    S, sc, t = exact_levels(trial, prep.center)
    sizes = np.array([np.sum(t == k) for k in range(len(prep.minima))])
    Rt = np.array([sc[t == k].min() for k in range(len(prep.minima))])
    np.testing.assert_allclose(prep.minima, Rt, rtol=1e-12)
    lpt = log_normalize(em_log_weights(Rt, 2.0, trial.sensitivity, log_multiplicity=np.log(sizes)))
    np.testing.assert_allclose(sel.log_probs(trial, prep, 2.0, S), lpt[t] - np.log(sizes[t]), atol=1e-9)
    assert sel.draw(trial, prep, 2.0, 10, np.random.default_rng(0)).diagnostics["levels_searched_for_draws"] == []


def test_a_level_whose_listing_took_more_than_the_short_search_gets_none(monkeypatch):
    """With LAW_NODES below every listing's node count no level is searched in ``prepare``: the boxes
    are the listings' own (and the draws still the searched preparation's)."""
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", 0)
    trial = highs_trial(toeplitz_problem(60, 12, 3, 0), 2.0)
    upper, lower, nodes, _, _ = _swaps.listed_level_boxes(trial, node_limit=_swaps.SWAP_LEVEL_NODE_LIMIT)
    boxed = lower < upper
    assert boxed.any() and nodes[boxed].min() >= 1
    monkeypatch.setattr(_mistakes, "LAW_NODES", int(nodes[boxed].min()) - 1)
    prep = Mistakes().prepare(trial, None)
    np.testing.assert_array_equal(prep.lower, lower)
    np.testing.assert_array_equal(prep.minima, upper)
    monkeypatch.setattr(_mistakes, "LAW_NODES", int(nodes[boxed].max()))
    assert Mistakes().prepare(highs_trial(toeplitz_problem(60, 12, 3, 0), 2.0), None).certified


@pytest.mark.parametrize("seed,n,p,s,lam", PROBLEMS)
def test_first_boxes_hold_the_exact_minima(seed, n, p, s, lam, listed):
    trial = highs_trial(toeplitz_problem(n, p, s, seed), lam)
    prep = Mistakes().prepare(trial, None)
    assert prep.first_boxes
    S, sc, t = exact_levels(trial, prep.center)
    assert np.array_equal(S[0], prep.center)
    Rt = np.array([sc[t == k].min() for k in range(len(prep.minima))])
    assert np.all(prep.lower <= Rt * (1 + 1e-9)) and np.all(Rt <= prep.minima * (1 + 1e-12))
    for k, u in enumerate(prep.minima):  # each upper bound is the score of a member of its level
        assert np.any(np.isclose(sc[t == k], u, rtol=1e-12, atol=0))
    np.testing.assert_allclose(prep.minima[:2], Rt[:2], rtol=1e-12)  # R_0, R_1 exact


@pytest.mark.parametrize("seed,n,p,s,lam", PROBLEMS)
def test_draws_from_first_boxes_are_the_searched_preparations_draws(seed, n, p, s, lam, listed):
    """Same random numbers, same supports and certification as the preparation made of the level
    searches; across seeds and epsilons both the first boxes and the searches decide draws."""
    trial = highs_trial(toeplitz_problem(n, p, s, seed), lam)
    sel = Mistakes()
    first = sel.prepare(trial, None)
    searched = Mistakes(levels="searched").prepare(trial, None)
    assert first.first_boxes and not first.certified and not searched.first_boxes and searched.certified
    seen = set()
    for eps in (0.5, 4.0, 40.0):
        for k in range(40):
            a = sel.draw(trial, first, eps, 10, np.random.default_rng(k))
            b = sel.draw(trial, searched, eps, 10, np.random.default_rng(k))
            assert np.array_equal(a.supports, b.supports) and a.certified == b.certified
            assert a.no_guarantee == b.no_guarantee
            assert a.diagnostics["level_boxes"] == "listings" and b.diagnostics["level_boxes"] == "searches"
            seen.add(tuple(a.diagnostics["levels_searched_for_draws"]))
    assert () in seen and len(seen) > 1, seen  # the listings decided some runs, searches the others
    assert all(list(lv) == sorted(lv) for lv in seen)


@pytest.mark.parametrize("seed,n,p,s,lam", PROBLEMS)
def test_a_level_is_searched_only_when_a_draw_needs_it(seed, n, p, s, lam, listed):
    """The levels are searched in increasing t and the search stops once every draw is decided:
    the levels searched are a prefix of the boxed ones, and the last one was needed (the draws
    were not all decided before it)."""
    trial = highs_trial(toeplitz_problem(n, p, s, seed), lam)
    sel = Mistakes()
    first = sel.prepare(trial, None)
    boxed = [t for t in range(2, len(first.minima)) if first.lower[t] < first.minima[t]]
    for k in range(60):
        d = sel.draw(trial, first, 8.0, 10, np.random.default_rng(k))
        lv = d.diagnostics["levels_searched_for_draws"]
        assert lv == boxed[:len(lv)]
        if lv:
            before = sel.refined(trial, first, lv[:-1])
            u = np.random.default_rng(k).random(10)
            lo = em_log_weights(before.minima, 8.0, trial.sensitivity, log_multiplicity=before.log_sizes)
            hi = em_log_weights(before.lower, 8.0, trial.sensitivity, log_multiplicity=before.log_sizes)
            from dpbench.api import decided_by_bounds, inverse_cdf
            assert not decided_by_bounds(lo, hi, u, inverse_cdf(log_normalize(lo), u)).all()


@pytest.mark.parametrize("seed,n,p,s,lam", PROBLEMS)
def test_searched_levels_give_the_exact_law_the_first_boxes_do_not(seed, n, p, s, lam, listed):
    trial = highs_trial(toeplitz_problem(n, p, s, seed), lam)
    first = Mistakes().prepare(trial, None)
    searched = Mistakes(levels="searched")
    prep = searched.prepare(trial, None)
    assert not first.certified and not Mistakes().has_law(first)
    assert not prep.first_boxes and searched.has_law(prep)
    S, sc, t = exact_levels(trial, prep.center)
    sizes = np.array([np.sum(t == k) for k in range(len(prep.minima))])
    Rt = np.array([sc[t == k].min() for k in range(len(prep.minima))])
    lpt = log_normalize(em_log_weights(Rt, 2.0, trial.sensitivity, log_multiplicity=np.log(sizes)))
    np.testing.assert_allclose(searched.log_probs(trial, prep, 2.0, S), lpt[t] - np.log(sizes[t]), atol=1e-9)
    refined = Mistakes().refined(trial, first)
    np.testing.assert_allclose(refined.minima, prep.minima, rtol=1e-12)
    np.testing.assert_allclose(refined.lower, prep.lower, rtol=1e-12)


def test_a_gap_condition_the_first_boxes_cannot_show_is_searched_in_prepare(listed, monkeypatch):
    """First boxes whose lower bounds leave the gap condition open (though its upper bound meets
    it) are narrowed at once: the condition decides the row's guarantee, not a single draw."""
    trial = highs_trial(toeplitz_problem(400, 12, 3, 0, snr=10), 2.0)
    exact = Mistakes().refined(trial, Mistakes().prepare(trial, None))
    assert exact.certified and exact.gap_condition
    real = _swaps.listed_level_boxes

    def loose(*args, **kw):
        boxes = real(*args, **kw)
        lower = boxes.lower.copy()
        lower[2:] = lower[0]  # valid (R_t >= R_0) but useless for the gap
        return boxes._replace(lower=lower)

    monkeypatch.setattr(_swaps, "listed_level_boxes", loose)
    prep = Mistakes().prepare(highs_trial(toeplitz_problem(400, 12, 3, 0, snr=10), 2.0), None)
    assert prep.gap_condition and prep.certified  # every level searched in prepare
    np.testing.assert_allclose(prep.minima, exact.minima, rtol=1e-12)


def test_topr_at_its_default_and_mistakes_share_the_listings(listed, monkeypatch):
    trial = highs_trial(toeplitz_problem(60, 12, 3, 0), 2.0)
    made = []
    real = _listings._list_large_levels
    monkeypatch.setattr(_listings, "_list_large_levels", lambda *a: made.append(a[2]) or real(*a))
    TopR().prepare(trial, None)
    Mistakes().prepare(trial, None)
    assert made == [_swaps.default_list_length(12, 3)]


def test_workers_and_levels_are_checked_before_any_trial():
    from dpbench.api import UserInputError

    with pytest.raises(UserInputError, match="workers"):
        Mistakes(workers=0)
    with pytest.raises(UserInputError, match="levels"):
        Mistakes(levels="all")


def test_stored_first_boxes_round_trip(listed):
    trial = highs_trial(toeplitz_problem(60, 12, 3, 0), 2.0)
    sel = Mistakes()
    first = sel.prepare(trial, None)
    loaded = sel.load_prepared(sel.save_prepared(first))
    assert loaded.first_boxes
    for k in range(5):
        a = sel.draw(trial, first, 4.0, 10, np.random.default_rng(k))
        b = sel.draw(trial, loaded, 4.0, 10, np.random.default_rng(k))
        assert np.array_equal(a.supports, b.supports) and a.certified == b.certified
    assert dataclasses.asdict(loaded).keys() == dataclasses.asdict(first).keys()
