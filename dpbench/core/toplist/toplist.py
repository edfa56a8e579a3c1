"""The exact top-R list of ``topr`` (docs/methods/topr.md): a k-way merge over the swap levels.

Sources, exactness argument and the threshold enumerations of the large levels are
described in :func:`top_list`; the level machinery (S1, single swaps, level optima, closed-
form level enumeration) is in :mod:`dpbench.core.toplist.levels`.

The threshold enumerations start at a *seeded bar* and run root by root
(:mod:`dpbench.core.toplist.roots`: :func:`~dpbench.core.toplist.roots.seed_bar`,
:func:`~dpbench.core.toplist.roots.threshold_by_roots`); the large levels that will enter the
list are enumerated first and give their minima R_t with no optimum call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpbench.core.toplist.levels import (CLOSED_FORM, FROM_THRESHOLD, THRESHOLD_MAX_COUNT, UNCERTIFIED_CALL,
                                          _limit, closed_form_limit, enumerate_level, lex_order, level_optimum,
                                          level_size, limit_advice, max_level, optimum, single_swap_scores,
                                          solver_name)
from dpbench.core.toplist.listings import _threshold_level, list_large_levels
from dpbench.core.toplist.roots import seed_bar


class _Explicit:
    """A fully known source, sorted by (score, support)."""

    def __init__(self, supports, scores, label):
        self.S, self.sc, self.i, self.label = supports, scores, 0, label

    def head(self):
        if self.i >= len(self.sc):
            return None
        return (float(self.sc[self.i]), tuple(self.S[self.i].tolist()))

    def take(self, limit_key, room):
        """Take up to ``room`` elements strictly before ``limit_key`` (at least one)."""
        hi = len(self.sc) if limit_key is None else int(np.searchsorted(self.sc, limit_key[0], side="left"))
        hi = min(max(hi, self.i + 1), self.i + room)
        out = self.S[self.i:hi], self.sc[self.i:hi]
        self.i = hi
        return out


class _Stream:
    """One swap level t >= 2 explored by oracle calls in increasing order of score."""

    def __init__(self, trial, name, center, t, first, stats, node_limit=None):
        self.trial, self.name, self.center, self.t = trial, name, center, t
        self.node_limit = node_limit
        self.taken: list[np.ndarray] = []
        self.stats = stats
        self.oracle_first = first.message not in (CLOSED_FORM, FROM_THRESHOLD)
        self._set(first)

    def _set(self, res):
        # An uncertified call (work limit) spoils the list only if its support is taken or
        # its lower bound stays below the final R-th score (checked at the end of the merge).
        self.certified = res.certified
        if not res.certified:
            self.stats["uncertified_calls"] += 1
            what = f"level {self.t} minimum" if not self.taken else f"level {self.t}, member {len(self.taken) + 1}"
            self.stats.setdefault("first_uncertified", {})[self.t] = (what, res.status, res.message)
        # The latest call's bound holds for every member of the level not yet taken.
        self.lower = float(res.lower_bound)
        if res.support is None:
            self.current = None
        else:
            self.current = (float(res.objective), np.sort(np.asarray(res.support, dtype=np.int64)))

    def head(self):
        if self.current is None:
            return None
        return (self.current[0], tuple(self.current[1].tolist()))

    def pop(self, fetch_next: bool):
        score, S = self.current
        if not self.certified:
            self.stats["taken_uncertified"] = True
        self.taken.append(S)
        self.current = None
        if fetch_next:
            if self.stats["extra_calls"] >= self.stats["max_calls"]:
                self.stats["budget_exhausted"] = True
                return S[None, :], np.array([score])
            res = self.trial.oracle(self.name).solve(overlap=(self.center, self.trial.s - self.t),
                                                     exclude=np.array(self.taken), **_limit(self.node_limit))
            self.stats["extra_calls"] += 1
            self.stats["oracle_seconds"] += res.seconds
            self._set(res)
        return S[None, :], np.array([score])


@dataclass
class TopList:
    """The exact top-R list of a trial (docs/methods/topr.md) and how it was obtained.

    Attributes
    ----------
    supports : ndarray of shape (R, s)
        The R supports with the smallest scores, sorted by (score, support).
    scores : ndarray of shape (R,)
    certified : bool
        True when every oracle call was certified and the merge completed within the call
        budget; only then is the list provably the exact top-R.
    diagnostics : dict
        JSON-serialisable: ``check_passed`` (the authors' test v2 >= worst single swap),
        ``extra_calls`` (oracle calls beyond S1 and the per-level optima), ``oracle_calls``,
        ``levels_enumerated``, ``slack`` (largest listed score minus the smallest lower bound
        known for the unlisted supports; 0 for an exact oracle, at most the oracle's gap
        tolerance otherwise), ...
    """

    supports: np.ndarray
    scores: np.ndarray
    certified: bool
    diagnostics: dict = field(default_factory=dict)


def top_list(trial, R: int, solver=None, enum_limit: int = 2_000_000, max_calls: int = 1000,
             node_limit: int | None = None, level_search: str = "threshold",
             max_count: int = THRESHOLD_MAX_COUNT, workers: int = 1) -> TopList:
    """The exact top-R list by a k-way merge over swap levels (cached per trial and arguments).

    Parameters
    ----------
    trial : dpbench.bench.trial.Trial
    R : int
        List length, 2 <= R <= C(p, s) - 1.
    solver : str, optional
        Oracle backend (default: the trial's).
    enum_limit : int
        A level t >= 2 whose C(s, t) C(p - s, t) members are at most this many is scored in
        closed form (once it turns out to contribute more than its optimum) instead of by
        one oracle call per member; 0 forces oracle calls throughout.
    max_calls : int
        Budget of extra oracle calls; when exhausted the list is marked uncertified.
    node_limit : int, optional
        Deterministic work limit (branch-and-bound nodes) of each oracle call on the swap
        levels and of each threshold enumeration (None: the backend's default).
    level_search : {"threshold", "calls"}
        How a level too large for closed-form enumeration yields its members beyond the
        optimum: ``"threshold"`` (default) asks the session once for all its members below
        the tightening bound on the R-th score (:meth:`dpbench.api.OracleSession.supports_below`
        with ``rank = R``); ``"calls"`` pulls them one oracle call (no-good cuts) at a time.
    max_count : int
        Passed to ``supports_below``: more supports held than this leaves the list
        uncertified.
    workers : int
        Processes for the roots of a threshold enumeration (:func:`threshold_by_roots`); the
        list, its certification and the node counts do not depend on it (not in the cache key).

    Returns
    -------
    TopList

    Notes
    -----
    Sources: E = {S1} ∪ single swaps (explicit), and for each level t = 2 .. min(s, p - s) a
    stream starting at the level optimum (``level_optimum``). Repeatedly the source with the
    smallest head under (score, support) gives up its elements up to the next-smallest head.
    A stream that loses its head fetches the level's next best support (overlap constraint
    and no-good cuts on its taken members) unless the list is already full, or, if the level
    is small enough, is replaced by the closed-form enumeration of the level restricted to
    scores <= the current bound on the R-th score, or else (``level_search="threshold"``) by
    one threshold enumeration of the level: every member with score <= tau, where tau, the
    R-th smallest score among the R or more distinct supports known (taken, the explicit
    sources, the other levels' heads, and the level's members found so far), is a valid
    upper bound on the final R-th score and tightens during the search. Every member not
    returned is then provably > tau >= the final R-th score, so the level is complete for
    the merge; a threshold enumeration stopped by its work limit or ``max_count`` certifies
    the list only if its bound on the unreturned members exceeds the final R-th score. When the authors' check passes
    (R = (p - s) s + 2 and v2 >= worst single swap) the merge takes E and then the single
    best >= 2-swap support, with no extra call. Before the first level contributes more than
    its optimum, tau is capped by the seeded bar (:func:`seed_bar`), and a session with a
    direct enumeration enumerates each level root by root (:func:`threshold_by_roots`,
    ``node_limit`` per root); the diagnostics report ``seeded_bar`` and the supports it scored.

    Lists first (issue 22, item 2): with a direct enumeration, every large level (more than
    ``enum_limit`` members) is enumerated below the seeded bar before the streams start
    (:func:`list_large_levels`; tau from the bar and the scores of E and of the levels listed
    before it) and enters the merge as an explicit source. A level with members under tau gives
    its minimum R_t from the list
    (:func:`~dpbench.core.toplist.levels.level_minimum_from_list`), one with none a bound above
    tau, so no large level gets an optimum call; ``levels_first`` in the diagnostics names them.
    """
    name = solver_name(trial, solver)
    if level_search not in ("threshold", "calls"):
        raise ValueError(f"level_search must be 'threshold' or 'calls', not {level_search!r}")
    key = ("topr_list", name, int(R), int(enum_limit), int(max_calls), node_limit, level_search, int(max_count))
    return trial.shared(key, lambda: _top_list(trial, int(R), name, int(enum_limit), int(max_calls), node_limit,
                                               level_search, int(max_count), int(workers)))


def _top_list(trial, R, name, enum_limit, max_calls, node_limit, level_search="threshold",
              max_count=None, workers=1) -> TopList:
    enum_limit = closed_form_limit(trial, enum_limit)
    max_count = THRESHOLD_MAX_COUNT if max_count is None else max_count
    p, s = trial.p, trial.s
    opt = optimum(trial, name)
    singles = single_swap_scores(trial, name)
    stats = {"extra_calls": 0, "max_calls": max_calls, "budget_exhausted": False, "uncertified_calls": 0,
             "taken_uncertified": False,
             "oracle_seconds": float(opt.seconds)}
    if singles is None:
        return TopList(np.empty((0, s), dtype=np.int64), np.empty(0), False,
                       {"reason": f"oracle found no optimum (status {opt.status})", "oracle_calls": 1})
    center = singles.center
    E_S = np.concatenate([center[None, :], singles.supports])
    E_sc = np.concatenate([[singles.center_score], singles.scores])
    order = lex_order(E_sc, E_S)
    if not opt.certified:
        # No list built around an uncertified S1 can be certified, so the level searches (each
        # up to node_limit nodes per root) would only delay an answer that cannot count as
        # private: the list is S1 and its single swaps (closed form), uncertified, with the
        # limit to raise (gravier at Lambda = 10: > 600 CPU-s before, the optimum's 100 000 nodes now).
        keep = order[:R]
        reason, raise_limit = limit_advice("topr", "the optimum S1", opt.status, opt.message,
                                           getattr(trial.oracle(name), "node_limit", None), solver=name)
        diag = {"R": int(R), "list_size": int(len(keep)), "oracle_calls": 1, "oracle_seconds": float(opt.seconds),
                "uncertified_calls": 1, "reason": reason}
        if raise_limit is not None:
            diag["raise_limit"] = raise_limit
        return TopList(E_S[keep], E_sc[keep], False, diag)
    thresholded = {}  # level -> ThresholdResult of its threshold enumeration
    seeded = {"best": {}}  # the seeded bar U (seed_bar), computed when a level first needs more than its optimum

    def bar():
        if "U" not in seeded:
            seeded["U"], seeded["scored"] = seed_bar(trial, singles, R, level_best=seeded["best"])
        return seeded["U"]

    listed = list_large_levels(trial, name, R, enum_limit, node_limit, max_count, workers) \
        if level_search == "threshold" else None
    if listed is not None:
        seeded.update(U=listed.bar, scored=listed.scored, best=dict(listed.level_best))
        thresholded.update(listed.listings)
        stats["extra_calls"] += listed.calls
        stats["oracle_seconds"] += listed.seconds
    sources = [_Explicit(E_S[order], E_sc[order], 1)]
    streams = {}
    for t in range(2, max_level(p, s) + 1):
        if t in thresholded:
            sources.append(_Explicit(thresholded[t].supports, thresholded[t].scores, t))
            continue
        res = level_optimum(trial, t, name, enum_limit, node_limit, workers)
        stats["oracle_seconds"] += res.seconds
        st = _Stream(trial, name, center, t, res, stats, node_limit)
        streams[t] = st
        sources.append(st)
    # the smallest >= 2-swap score known (a listed level with no member under its threshold gives its bound)
    v2 = min([st.current[0] for st in streams.values() if st.current is not None]
             + [float(r.scores[0]) if len(r.scores) else float(r.lower_bound) for r in thresholded.values()],
             default=math.inf)

    out_S, out_sc, enumerated = [], [], []
    taken = 0
    while taken < R:
        heads = [(src.head(), k) for k, src in enumerate(sources)]
        heads = [(h, k) for h, k in heads if h is not None]
        if not heads:
            break  # fewer than R supports exist; guarded against by the caller
        heads.sort()
        (h0, k0) = heads[0]
        nxt = heads[1][0] if len(heads) > 1 else None
        src = sources[k0]
        room = R - taken
        if isinstance(src, _Explicit):
            S, sc = src.take(nxt, room)
        else:
            full_after = taken + 1 >= R
            lvl = src.t
            if (not full_after and level_search == "threshold" and lvl not in thresholded
                    and not (enum_limit and level_size(p, s, lvl) <= enum_limit)):
                # The level contributes more than its optimum and is too large to score whole:
                # one threshold enumeration replaces the stream (nothing is taken this round).
                res = _threshold_level(trial, name, center, lvl, src.taken, _known_scores(out_sc, sources, k0, R), R,
                                       node_limit, max_count, max_calls - stats["extra_calls"], bar(), workers)
                stats["extra_calls"] += res.calls
                stats["oracle_seconds"] += res.seconds
                thresholded[lvl] = res
                sources[k0] = _Explicit(res.supports, res.scores, lvl)
                continue
            if not full_after and enum_limit and level_size(p, s, lvl) <= enum_limit and lvl not in enumerated:
                # The level contributes more than its optimum: score it whole in closed form.
                S, sc = src.pop(fetch_next=False)
                bound = min(_rth_bound(out_sc, sc, sources, R), bar())
                LS, Lsc = enumerate_level(trial, center, lvl, bound)
                T = np.array(src.taken)
                keep = ~(LS[:, None, :] == T[None, :, :]).all(axis=2).any(axis=1)
                enumerated.append(lvl)
                sources[k0] = _Explicit(LS[keep], Lsc[keep], lvl)
            else:
                S, sc = src.pop(fetch_next=not full_after)
        out_S.append(S)
        out_sc.append(sc)
        taken += len(sc)
        if stats["budget_exhausted"]:
            break

    S = np.concatenate(out_S) if out_S else np.empty((0, s), dtype=np.int64)
    sc = np.concatenate(out_sc) if out_sc else np.empty(0)
    order = lex_order(sc, S)
    S, sc = S[order], sc[order]
    complete = len(sc) == R and not stats["budget_exhausted"]
    # Exact iff S1 is certified, nothing taken came from an uncertified call, and every level
    # still holding an uncertified head has a lower bound at or above the R-th score.
    rth = sc[-1] if len(sc) else math.inf
    open_uncertified = [st for t, st in streams.items()
                        if t not in enumerated and t not in thresholded and not st.certified and st.lower < rth]
    # A threshold enumeration stopped early still bounds every member it did not return.
    open_uncertified += [t for t, res in thresholded.items() if not res.certified and not res.lower_bound > rth]
    certified = complete and opt.certified and not stats["taken_uncertified"] and not open_uncertified
    lows = [st.lower for t, st in streams.items()
            if t not in enumerated and t not in thresholded and (st.current is not None or st.taken)]
    lows += [res.lower_bound for res in thresholded.values()]
    lows += [src.head()[0] for src in sources if isinstance(src, _Explicit) and src.head() is not None]
    slack = max(0.0, float(sc[-1]) - min(lows)) if (len(sc) and lows) else 0.0
    diag = {
        "R": int(R),
        "list_size": int(len(sc)),
        "check_passed": bool(v2 >= singles.worst),
        "v2": float(v2),
        "worst_single": float(singles.worst),
        "r_th_score": float(sc[-1]) if len(sc) else None,
        "extra_calls": int(stats["extra_calls"]),
        "oracle_calls": 1 + sum(st.oracle_first for st in streams.values()) + int(stats["extra_calls"]),
        "levels_first": sorted(int(t) for t in listed.listings) if listed is not None else [],
        "oracle_seconds": float(stats["oracle_seconds"]),
        "uncertified_calls": int(stats["uncertified_calls"]),
        "levels_enumerated": [int(t) for t in enumerated],
        "levels_thresholded": {str(t): {"members_below": int(len(res.scores)), "threshold": float(res.threshold),
                                        "lower_bound_rest": float(res.lower_bound), "certified": bool(res.certified),
                                        "status": res.status, "nodes": int(res.nodes), "calls": int(res.calls),
                                        "seconds": float(res.seconds)}
                               for t, res in thresholded.items()},
        "from_levels": {str(t): int(np.sum(_levels(S, center) == t)) for t in range(0, max_level(p, s) + 1)},
        "slack": slack,
        "seeded_bar": float(seeded["U"]) if "U" in seeded else None,
        "seed_supports_scored": int(seeded.get("scored", 0)),
    }
    bad = [t for t, res in thresholded.items() if not res.certified and not res.lower_bound > rth]
    advice = (None, None)
    if bad:  # first: an incomplete level can also be why fewer than R supports were found
        res = thresholded[bad[0]]
        advice = limit_advice("topr", f"threshold enumeration of level {bad[0]}", res.status, res.message, node_limit)
    elif not complete:
        diag["reason"] = ("extra oracle-call budget exhausted (raise max_calls)" if stats["budget_exhausted"]
                          else "fewer than R supports found")
    elif not certified:
        spoilt = stats.get("first_uncertified", {})
        if spoilt:
            advice = limit_advice("topr", *spoilt[min(spoilt)], node_limit)
        else:
            diag["reason"] = UNCERTIFIED_CALL
    if advice[0] is not None:
        diag["reason"] = advice[0]
        if advice[1] is not None:
            diag["raise_limit"] = advice[1]
    return TopList(S, sc, certified, diag)


def _known_scores(out_sc, sources, k0, R) -> np.ndarray:
    """Scores of distinct supports outside the level of ``sources[k0]``: those taken, the
    explicit sources' next R and the other streams' heads (for the rank bound on tau)."""
    known = list(out_sc)
    for k, other in enumerate(sources):
        if k == k0:
            continue
        if isinstance(other, _Explicit):
            known.append(other.sc[other.i:other.i + R])
        elif other.current is not None:
            known.append(np.array([other.current[0]]))
    return np.concatenate(known) if known else np.empty(0)


def _levels(S, center) -> np.ndarray:
    """t = |S \\ center| for each row of S (B, s)."""
    return S.shape[1] - np.isin(S, center).sum(axis=1)


def _rth_bound(out_sc, new_sc, sources, R) -> float:
    """An upper bound on the final R-th score: the R-th smallest score among known supports."""
    known = list(out_sc) + [new_sc]
    for src in sources:
        if isinstance(src, _Explicit):
            known.append(src.sc[src.i:src.i + R])
        elif src.current is not None:
            known.append(np.array([src.current[0]]))
    allsc = np.concatenate(known)
    if len(allsc) < R:
        return math.inf
    return float(np.partition(allsc, R - 1)[R - 1])
