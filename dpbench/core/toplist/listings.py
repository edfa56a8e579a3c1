"""The large swap levels listed below the seeded bar: topr's list sources and mistakes' first boxes.

:func:`list_large_levels` enumerates every swap level too large for closed form below the
seeded bar of a top-R list (root by root, :func:`~dpbench.core.toplist.roots.threshold_by_roots`),
once per trial and arguments; :func:`~dpbench.core.toplist.toplist.top_list` merges them as
explicit sources, and :func:`listed_level_boxes` reads a box on every level minimum off the
listings of the default R for ``mistakes`` (docs/methods/topr.md, docs/methods/mistakes.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from dpbench.core.oracle.threshold import supports_below_by_calls
from dpbench.core.toplist.levels import (THRESHOLD_MAX_COUNT, _limit, closed_form_limit, level_minimum_from_list,
                                          level_optimum, level_size, max_level, optimum, single_swap_scores,
                                          solver_name)
from dpbench.core.toplist.roots import seed_bar, threshold_by_roots


@dataclass
class LevelListings:
    """The large swap levels listed below the seeded bar of a top-R list (:func:`list_large_levels`).

    Attributes
    ----------
    bar : float
        The seeded bar U (:func:`~dpbench.core.toplist.roots.seed_bar`), an upper bound on the R-th score.
    scored : int
        Supports the seeded bar scored in closed form (work count).
    level_best : dict of int to float
        ``{t: smallest seeded score of level t}``, each the score of a member of level t (an upper
        bound on R_t).
    listings : dict of int to ThresholdResult
        Level t's members with score at most its threshold (the bar lowered by the R-th score of
        S1, the single swaps and the levels listed before it), nothing excluded; with
        ``certified``, every other member of the level scores above the listing's ``lower_bound``.
    calls : int
    seconds : float
        Oracle calls and seconds of the listings.
    """

    bar: float
    scored: int
    level_best: dict
    listings: dict
    calls: int
    seconds: float


def list_large_levels(trial, solver, R: int, enum_limit: int | None, node_limit: int | None,
                      max_count: int = THRESHOLD_MAX_COUNT, workers: int = 1) -> LevelListings | None:
    """Every swap level too large for closed form, listed below the seeded bar of the top-R list.

    One threshold enumeration per level t >= 2 with more than ``enum_limit`` members, in
    increasing t, each below the R-th smallest score known so far (the seeded bar, S1, the
    single swaps and the levels listed before it), root by root on up to ``workers`` processes
    (:func:`~dpbench.core.toplist.roots.threshold_by_roots`). A level with members under that
    threshold gives its minimum R_t with no optimum call
    (:func:`~dpbench.core.toplist.levels.level_minimum_from_list`); a level with none is
    bounded below by the listing's bound, which is all topr needs from it and often far cheaper
    than its minimum (the toeplitz n = 200, p = 10 000, Λ = 10 trial: level 4 listed in 32 114
    nodes where its minimum took 96 671, level 5 in 24 507 where its minimum did not certify in
    100 000).

    Cached per trial and arguments (``workers`` excluded: the listings and their work counts do
    not depend on it), so ``topr`` at the default R and ``mistakes`` (its first level boxes,
    :func:`listed_level_boxes`) share them.

    Parameters
    ----------
    trial : dpbench.bench.trial.Trial
    solver : str or None
        Oracle backend (None: the trial's); it must enumerate directly (``supports_below``).
    R : int
        The list length whose bar the levels are listed below.
    enum_limit : int or None
        Levels with at most this many members are left to closed form (not listed); None:
        :func:`~dpbench.core.toplist.levels.closed_form_limit`'s default, as for ``level_optimum``.
    node_limit : int or None
        Work limit of each root's enumeration (None: the backend's default).
    max_count : int
        More members held than this leaves a listing uncertified (never truncated silently).
    workers : int

    Returns
    -------
    LevelListings or None
        None when no level is that large, S1 is not certified or the backend lists by repeated
        optimum calls.
    """
    name = solver_name(trial, solver)
    enum_limit = closed_form_limit(trial, enum_limit)
    p, s = trial.p, trial.s
    if (all(enum_limit and level_size(p, s, t) <= enum_limit for t in range(2, max_level(p, s) + 1))
            or not optimum(trial, name).certified or not _native_threshold(trial.oracle(name))):
        return None
    key = ("levels_listed", name, int(R), enum_limit, node_limit, int(max_count))
    return trial.shared(key, lambda: _list_large_levels(trial, name, int(R), enum_limit, node_limit,
                                                        int(max_count), int(workers)))


def _list_large_levels(trial, name, R, enum_limit, node_limit, max_count, workers) -> LevelListings:
    p, s = trial.p, trial.s
    singles = single_swap_scores(trial, name)
    best: dict = {}
    U, scored = seed_bar(trial, singles, R, level_best=best)
    known = [np.concatenate([[singles.center_score], singles.scores])]
    listings, calls, seconds = {}, 0, 0.0
    for t in range(2, max_level(p, s) + 1):
        if enum_limit and level_size(p, s, t) <= enum_limit:
            continue
        res = _threshold_level(trial, name, singles.center, t, [], np.concatenate(known), R, node_limit, max_count,
                               calls_left=0, threshold=U, workers=workers)  # calls_left: call-based sessions only
        calls += res.calls
        seconds += res.seconds
        listings[t] = res
        known.append(res.scores)
        level_minimum_from_list(trial, name, t, res)
    return LevelListings(float(U), int(scored), best, listings, calls, seconds)


def default_list_length(p: int, s: int) -> int:
    """R = (p - s) s + 2, the list length of the NeurIPS 2025 setting: S1, all single swaps and one more."""
    return (p - s) * s + 2


class LevelBoxes(NamedTuple):
    """Boxes on the level minima from the listings (:func:`listed_level_boxes`), t = 0 .. t_max."""

    upper: np.ndarray
    lower: np.ndarray
    nodes: np.ndarray
    seconds: float
    calls: int


def listed_level_boxes(trial, solver=None, node_limit: int | None = None, workers: int = 1) -> LevelBoxes | None:
    """Boxes L_t <= R_t <= U_t on every level minimum from the listings of the default top-R list.

    The listings are those of :func:`list_large_levels` at R = :func:`default_list_length`
    (capped at C(p, s) - 1), the ones ``topr`` makes at its default R, so a run of both selectors
    makes them once. R_0 = R(S1) and R_1 (closed form) are exact, and so is every level small
    enough for closed form (:func:`~dpbench.core.toplist.levels.level_optimum`) and every listed
    level whose listing holds its minimum
    (:func:`~dpbench.core.toplist.levels.level_minimum_from_list`). Any other listed level has
    U_t = the smallest score of a level-t member known (listed, or scored by the seeded bar) and
    L_t = the listing's bound on the members it did not return (at or above its threshold when
    the listing is certified), lowered to its smallest listed score.

    These are the first boxes of ``mistakes`` (docs/methods/mistakes.md): they usually decide
    every draw; the level searches of :func:`~dpbench.core.toplist.levels.level_minima` run only
    when a draw, the gap condition or the output law needs narrower ones.

    Parameters
    ----------
    trial : dpbench.bench.trial.Trial
    solver : str or None
        Oracle backend (None: the trial's).
    node_limit : int or None
        Work limit of each root's listing (the selector's ``node_limit``).
    workers : int
        Processes for a level's roots; the boxes do not depend on it.

    Returns
    -------
    LevelBoxes or None, with
    upper : ndarray of shape (t_max + 1,), float64
        U_t, each the score of a member of level t.
    lower : ndarray of shape (t_max + 1,), float64
        L_t (equal to ``upper`` where exact).
    nodes : ndarray of shape (t_max + 1,), int64
        Branch-and-bound nodes of each level's listing (0 where the level is not listed): a
        listing proves every other member above a threshold at most R_t, less than a minimum
        search has to prove, so it is a floor on that search's work (deterministic).
    seconds : float
        Oracle seconds of the optimum S1 and the listings.
    calls : int
        Oracle calls behind the boxes (S1 and the listings).

    None when there is no listing (no level too large for closed form, S1 not certified,
    or a backend that lists by repeated optimum calls), when a listing was stopped by the
    wall-clock safety net or an error (its bound would depend on the machine), or when a level
    has no known member.
    """
    name = solver_name(trial, solver)
    p, s = trial.p, trial.s
    R = min(default_list_length(p, s), math.comb(p, s) - 1)
    listed = list_large_levels(trial, name, R, None, node_limit, THRESHOLD_MAX_COUNT, workers)
    if listed is None:
        return None
    singles = single_swap_scores(trial, name)
    tmax = max_level(p, s)
    upper, lower, nodes = np.empty(tmax + 1), np.empty(tmax + 1), np.zeros(tmax + 1, dtype=np.int64)
    upper[0] = lower[0] = singles.center_score
    upper[1] = lower[1] = singles.best
    for t in range(2, tmax + 1):
        res = listed.listings.get(t)
        exact = level_optimum(trial, t, name) if res is None else level_minimum_from_list(trial, name, t, res)
        nodes[t] = 0 if res is None else res.nodes
        if exact is not None:
            upper[t] = lower[t] = exact.objective
            continue
        if res.status not in ("complete", "work_limit", "max_count"):
            return None
        listed_min = float(res.scores.min()) if len(res.scores) else math.inf
        upper[t] = min(listed_min, listed.level_best.get(t, math.inf))
        lower[t] = min(float(res.lower_bound), listed_min)
        if not math.isfinite(upper[t]) or math.isnan(lower[t]):
            return None
    return LevelBoxes(upper, lower, nodes, float(optimum(trial, name).seconds) + float(listed.seconds),
                      1 + int(listed.calls))


def _native_threshold(sess) -> bool:
    """Whether the session enumerates a root directly (else one oracle call per member)."""
    return getattr(sess, "supports_below", None) is not None and not getattr(sess, "threshold_by_calls", False)


def _threshold_level(trial, name, center, t, taken, known, R, node_limit, max_count, calls_left,
                     threshold=math.inf, workers=1):
    """All members of level t, except those ``taken``, that can still be in the top-R list.

    ``threshold``: an upper bound on the final R-th score (the seeded bar). ``known``: scores
    of distinct supports outside the level's remaining members (:func:`_known_scores`); with
    ``rank = R`` the session lowers tau to the R-th smallest of these and the level members
    it finds. A session with a direct enumeration is asked once per root
    (:func:`threshold_by_roots`); a call-based one once for the level.
    """
    sess = trial.oracle(name)
    kw = dict(overlap=(center, trial.s - t), exclude=np.array(taken, dtype=np.int64).reshape(-1, trial.s),
              rank=R, known_scores=known, **_limit(node_limit))
    if not _native_threshold(sess):
        # Call-based (ThresholdByCalls): one oracle call per member, within the extra-call budget.
        return supports_below_by_calls(sess, threshold, max_count=max(0, calls_left), **kw)
    del kw["overlap"]
    # no short first search per root (few_by_calls): since the threshold search screens a root as
    # an optimum call does, the calls' detour only repeated its work (chowdary: 10 roots x 1 000 nodes)
    return threshold_by_roots(sess, center, t, threshold, max_count=max_count, workers=workers, **kw)
