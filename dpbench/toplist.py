"""Swap neighbourhoods of the best support: the shared preparation of ``topr`` and ``mistakes``.

Not a plugin (no hooks): the one implementation of the epsilon-independent work both
selectors need for a trial, cached with :meth:`dpbench.trial.Trial.shared` so that running
both on the same trial does every oracle call and every batched scoring once.

Vocabulary (design.md 4.2, 4.3): ``S1`` is the oracle's optimum (the ``bss`` optimum, cached
by :meth:`dpbench.trial.Trial.optimum`, as for the ``bss`` baseline). Every other support
lies in exactly one *level* t = |S \\ S1| in 1 .. min(s, p - s); level t has
C(s, t) C(p - s, t) members. Level 1 (the single swaps) is scored in closed form; the
minimum R_t of each level t >= 2 comes from one oracle call with the overlap constraint
|S ∩ S1| = s - t.

The top-R list (design.md 4.2) is the R smallest scores overall. It is built by a k-way
merge of sorted sources: {S1} and the single swaps (explicit, sorted), and one source per
level t >= 2 whose elements arrive in increasing order either from repeated oracle calls
(overlap constraint + no-good cuts on the members already taken) or, for levels small enough,
from a closed-form enumeration of the whole level, or, for a large level that contributes
more than its optimum, from one threshold enumeration (``OracleSession.supports_below``: all
members with score <= a tightening upper bound on the R-th score; measured at p = 10 000,
n = 200: 30 000 2-swap members in 1-4 s, where one call per member gave up after 1000
calls). Merging stops as soon as R supports are
taken; every untaken support is then at least as large as a source head that is at least
the largest taken score, so the list is exact (certified) whenever every oracle call was.

Why the >= 2-swap region is handled level by level rather than with one call excluding S1
and all (p - s) s single swaps as no-good cuts: ``mistakes`` needs exactly these per-level
optima anyway (so running both selectors costs nothing extra), and at p = 10 000 the
alternative puts ~50 000 no-good constraints into the MIP master.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .base import OracleResult
from .oracle.threshold import overlap_by_roots, supports_below_by_calls
from .supports import iter_supports, single_swaps, support_index  # noqa: F401 (support_index: re-export)
from .oracle.limits import lexmin, tie_bar

#: Chunk of supports scored per call when enumerating a swap level.
_CHUNK = 200_000

#: Default cap on the supports a threshold enumeration of one level may hold (memory ~ 50
#: bytes each); beyond it the list is uncertified, never truncated silently.
THRESHOLD_MAX_COUNT = 2_000_000

#: Default work limit of topr / mistakes / mistakes-ptr: branch-and-bound nodes per oracle call
#: on the swap levels. A count, not seconds, so every machine certifies the same trials. The
#: paper's designs (toeplitz, p = 200 to 10 000, Lambda = 120) certify far below it; on Khan
#: (63 x 2308, standardised, Lambda = 10) the level minima certify with one call per root
#: (about 2 000 nodes in all), but topr's threshold enumerations of levels 4 and 5 do not
#: (12 690 nodes for one root of level 4), and 20 000 nodes per call bounds the time spent
#: before the trial is reported uncertified (1 000 000 took hours). Raise it per run with --param topr.node_limit=... (and
#: --retry-uncertified to redo only the uncertified rows).
SWAP_LEVEL_NODE_LIMIT = 20_000


def solver_name(trial, solver) -> str:
    """The backend actually used: the selector's ``solver`` parameter or the run's default."""
    return solver or trial.solver


def optimum(trial, solver=None):
    """The unconstrained best support S1 of the trial (an :class:`dpbench.base.OracleResult`).

    :meth:`dpbench.trial.Trial.optimum`, shared with the ``bss`` baseline and the runner, so
    whichever selector runs first does the solve.
    """
    return trial.optimum(solver_name(trial, solver))


def lex_order(scores, supports) -> np.ndarray:
    """Indices sorting supports by (score, then lexicographic support): the deterministic tie-break.

    Parameters
    ----------
    scores : ndarray of shape (B,)
    supports : ndarray of shape (B, s), rows sorted

    Returns
    -------
    ndarray of shape (B,), int64
    """
    S = np.asarray(supports)
    keys = [S[:, j] for j in range(S.shape[1] - 1, -1, -1)] + [np.asarray(scores)]
    return np.lexsort(keys)


@dataclass
class SingleSwaps:
    """S1 and its (p - s) s single swaps scored in closed form, sorted by (score, support).

    Attributes
    ----------
    center : ndarray of shape (s,)
        S1.
    center_score : float
        R(S1, D).
    supports : ndarray of shape ((p - s) s, s)
    scores : ndarray of shape ((p - s) s,)
    seconds : float
        Wall-clock time of the batched scoring.
    """

    center: np.ndarray
    center_score: float
    supports: np.ndarray
    scores: np.ndarray
    seconds: float

    @property
    def best(self) -> float:
        """R_1: the smallest single-swap score (inf if there are none)."""
        return float(self.scores[0]) if self.scores.size else math.inf

    @property
    def worst(self) -> float:
        """The largest single-swap score (the authors' check compares v2 with it)."""
        return float(self.scores[-1]) if self.scores.size else -math.inf


def single_swap_scores(trial, solver=None) -> SingleSwaps | None:
    """All single swaps of S1 scored with the shared batched score (cached per trial and solver).

    Returns None when the oracle found no S1 (then nothing downstream can be certified).
    """
    name = solver_name(trial, solver)

    def compute():
        opt = optimum(trial, name)
        if opt.support is None:
            return None
        t0 = time.perf_counter()
        center = np.sort(np.asarray(opt.support, dtype=np.int64))
        S = single_swaps(center, trial.p)
        sc = np.concatenate([trial.score(S[a:a + _CHUNK]) for a in range(0, len(S), _CHUNK)]) if len(S) \
            else np.empty(0)
        order = lex_order(sc, S)
        return SingleSwaps(center, float(trial.score(center[None, :])[0]), S[order], sc[order],
                           time.perf_counter() - t0)

    return trial.shared(("single_swaps", name), compute)


def max_level(p: int, s: int) -> int:
    """Largest possible number of swaps t = |S \\ S1|: min(s, p - s)."""
    return min(s, p - s)


def level_size(p: int, s: int, t: int) -> int:
    """Exact number of supports with t swaps relative to a fixed support: C(s, t) C(p - s, t)."""
    return math.comb(s, t) * math.comb(p - s, t)


#: ``OracleResult.message`` of a level optimum obtained by closed-form enumeration (no oracle call).
CLOSED_FORM = "closed-form enumeration of the level"

#: Levels with at most this many members get their optimum R_t by closed-form enumeration
#: (exact, certified by construction, and far cheaper than a MIP for e.g. t = 2 at p = 200);
#: larger levels use the oracle. Either way the cached value is the same exact optimum.
LEVEL_ENUM_LIMIT = 2_000_000


def _limit(node_limit):
    """Keyword arguments passing a work limit to a session (none when the backend default applies)."""
    return {} if node_limit is None else {"node_limit": int(node_limit)}


def level_optimum(trial, t: int, solver=None, enum_limit: int | None = None, node_limit: int | None = None):
    """Best support with exactly t swaps, |S ∩ S1| = s - t (t >= 2), as an OracleResult.

    Cached under ``("swap_level", solver, t)``; shared by ``topr`` (first element of the
    level's stream) and ``mistakes`` (R_t). Levels with at most ``enum_limit`` (default
    :data:`LEVEL_ENUM_LIMIT`) members are scored in closed form, the others by one oracle
    call with the overlap constraint, limited to ``node_limit`` branch-and-bound nodes (a
    deterministic count; None: the backend's default; a call that reaches it is
    uncertified). The cache holds the first computation, whatever limit a later caller
    passes.
    """
    name = solver_name(trial, solver)
    limit = LEVEL_ENUM_LIMIT if enum_limit is None else enum_limit
    # a score much costlier than the ridge closed form (the hinge loss) caps closed-form levels
    limit = min(limit, getattr(trial.score, "level_enum_limit", limit))

    def compute():
        center = single_swap_scores(trial, name).center
        if level_size(trial.p, trial.s, t) <= limit:
            t0 = time.perf_counter()
            tied_S, tied_sc = [], []  # each chunk's near-minima: a superset of the level's ties
            for S, sc in _level_chunks(trial, center, t):
                ok = sc <= tie_bar(float(sc.min()))
                tied_S.append(np.sort(S[ok], axis=1))
                tied_sc.append(sc[ok])
            if not tied_S:
                return OracleResult(None, math.inf, math.inf, "infeasible", 0, time.perf_counter() - t0, CLOSED_FORM)
            S, sc = np.concatenate(tied_S), np.concatenate(tied_sc)
            ok = sc <= tie_bar(float(sc.min()))
            best_S = lexmin(S[ok])  # canonical among ties (TIE_RTOL), as every oracle backend
            best_sc = float(sc[ok][np.flatnonzero((S[ok] == best_S).all(axis=1))[0]])
            return OracleResult(best_S, best_sc, best_sc, "optimal", 0, time.perf_counter() - t0, CLOSED_FORM)
        return _level_by_oracle(trial.oracle(name), center, trial.s - t, node_limit)

    return trial.shared(("swap_level", name, int(t)), compute)


#: Branch-and-bound nodes of the first, joint call over all roots of a level (enough where the
#: level is easy); if it does not certify, each root gets its own call (:func:`overlap_by_roots`).
LEVEL_JOINT_NODES = 300


def _level_by_oracle(sess, center, k, node_limit):
    """The optimum of a swap level (overlap k with ``center``): joint call, else one call per root."""
    first = LEVEL_JOINT_NODES if node_limit is None else min(LEVEL_JOINT_NODES, int(node_limit))
    res = sess.solve(overlap=(center, k), node_limit=first)
    if res.certified:
        return res
    by_roots = overlap_by_roots(sess, center, k, node_limit=node_limit)
    if by_roots is not None:
        by_roots.seconds += res.seconds
        by_roots.iterations += res.iterations
        return by_roots
    return sess.solve(overlap=(center, k), **_limit(node_limit))  # near-tie across roots: joint tie-break


def _level_chunks(trial, center, t: int):
    """Stream (supports (m, s) unsorted rows, scores (m,)) over all members of level t."""
    p, s = trial.p, trial.s
    center = np.asarray(center, dtype=np.int64)
    mask = np.ones(p, dtype=bool)
    mask[center] = False
    outside = np.flatnonzero(mask)
    drops = list(itertools.combinations(range(s), t))
    kept = [np.delete(center, d) for d in drops]
    if t == p - s:
        add_chunks = [np.arange(p - s, dtype=np.int64)[None, :]]
    else:
        add_chunks = iter_supports(p - s, t, chunk_size=max(1, _CHUNK // len(drops)))
    for add in add_chunks:
        added = outside[add]  # (m, t)
        m = len(added)
        S = np.empty((len(drops), m, s), dtype=np.int64)
        for k, kp in enumerate(kept):
            S[k, :, : s - t] = kp
            S[k, :, s - t:] = added
        S = S.reshape(-1, s)
        yield S, trial.score(S)


def enumerate_level(trial, center, t: int, bound: float = math.inf):
    """All supports with exactly t swaps relative to ``center`` whose score is <= ``bound``.

    Streams the C(s, t) C(p - s, t) members in chunks (memory independent of the level's
    size beyond the supports kept), scoring each chunk with the shared batched score.

    Returns
    -------
    supports : ndarray of shape (m, s), sorted rows, sorted by (score, support)
    scores : ndarray of shape (m,)
    """
    keep_S, keep_sc = [], []
    for S, sc in _level_chunks(trial, center, t):
        ok = sc <= bound
        keep_S.append(np.sort(S[ok], axis=1))
        keep_sc.append(sc[ok])
    S = np.concatenate(keep_S) if keep_S else np.empty((0, trial.s), dtype=np.int64)
    sc = np.concatenate(keep_sc) if keep_sc else np.empty(0)
    order = lex_order(sc, S)
    return S[order], sc[order]


# --------------------------------------------------------------------------- top-R list


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
        self.oracle_first = first.message != CLOSED_FORM
        self._set(first)

    def _set(self, res):
        # An uncertified call (work limit) spoils the list only if its support is taken or
        # its lower bound stays below the final R-th score (checked at the end of the merge).
        self.certified = res.certified
        if not res.certified:
            self.stats["uncertified_calls"] += 1
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
    """The exact top-R list of a trial (design.md 4.2) and how it was obtained.

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
             max_count: int = THRESHOLD_MAX_COUNT) -> TopList:
    """The exact top-R list by a k-way merge over swap levels (cached per trial and arguments).

    Parameters
    ----------
    trial : dpbench.trial.Trial
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
        the tightening bound on the R-th score (:meth:`dpbench.base.OracleSession.supports_below`
        with ``rank = R``); ``"calls"`` pulls them one oracle call (no-good cuts) at a time.
    max_count : int
        Passed to ``supports_below``: more supports held than this leaves the list
        uncertified.

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
    best >= 2-swap support, with no extra call.
    """
    name = solver_name(trial, solver)
    if level_search not in ("threshold", "calls"):
        raise ValueError(f"level_search must be 'threshold' or 'calls', not {level_search!r}")
    key = ("topr_list", name, int(R), int(enum_limit), int(max_calls), node_limit, level_search, int(max_count))
    return trial.shared(key, lambda: _top_list(trial, int(R), name, int(enum_limit), int(max_calls), node_limit,
                                               level_search, int(max_count)))


def _top_list(trial, R, name, enum_limit, max_calls, node_limit, level_search="threshold",
              max_count=None) -> TopList:
    enum_limit = min(enum_limit, getattr(trial.score, "level_enum_limit", enum_limit))  # see level_optimum
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
    if not opt.certified:
        stats["uncertified_calls"] += 1
    center = singles.center
    E_S = np.concatenate([center[None, :], singles.supports])
    E_sc = np.concatenate([[singles.center_score], singles.scores])
    order = lex_order(E_sc, E_S)
    sources = [_Explicit(E_S[order], E_sc[order], 1)]
    streams = {}
    for t in range(2, max_level(p, s) + 1):
        res = level_optimum(trial, t, name, enum_limit, node_limit)
        stats["oracle_seconds"] += res.seconds
        st = _Stream(trial, name, center, t, res, stats, node_limit)
        streams[t] = st
        sources.append(st)
    v2 = min((st.current[0] for st in streams.values() if st.current is not None), default=math.inf)

    out_S, out_sc, enumerated = [], [], []
    thresholded = {}  # level -> ThresholdResult of its threshold enumeration
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
                res = _threshold_level(trial, name, center, src, out_sc, sources, k0, R, node_limit,
                                       max_count, max_calls - stats["extra_calls"])
                stats["extra_calls"] += res.calls
                stats["oracle_seconds"] += res.seconds
                thresholded[lvl] = res
                sources[k0] = _Explicit(res.supports, res.scores, lvl)
                continue
            if not full_after and enum_limit and level_size(p, s, lvl) <= enum_limit and lvl not in enumerated:
                # The level contributes more than its optimum: score it whole in closed form.
                S, sc = src.pop(fetch_next=False)
                bound = _rth_bound(out_sc, sc, sources, R)
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
    }
    bad = [t for t, res in thresholded.items() if not res.certified and not res.lower_bound > rth]
    if bad:  # first: an incomplete level can also be why fewer than R supports were found
        res = thresholded[bad[0]]
        hint = "; raise node_limit" if res.status == "work_limit" else ""
        diag["reason"] = f"threshold enumeration of level {bad[0]} incomplete ({res.message}{hint})"
    elif not complete:
        diag["reason"] = ("extra oracle-call budget exhausted (raise max_calls)" if stats["budget_exhausted"]
                          else "fewer than R supports found")
    elif not certified:
        diag["reason"] = "an oracle call was not certified optimal (work limit, safety time limit or error)"
    return TopList(S, sc, certified, diag)


def _threshold_level(trial, name, center, stream, out_sc, sources, k0, R, node_limit, max_count, calls_left):
    """All members of a stream's level that can still be in the top-R list (one session call).

    ``known``: scores of distinct supports outside the level's remaining members (taken,
    explicit sources' next R, the other streams' heads); with ``rank = R`` the session
    lowers tau to the R-th smallest of these and the level members it finds.
    """
    known = list(out_sc)
    for k, other in enumerate(sources):
        if k == k0:
            continue
        if isinstance(other, _Explicit):
            known.append(other.sc[other.i:other.i + R])
        elif other.current is not None:
            known.append(np.array([other.current[0]]))
    known = np.concatenate(known) if known else np.empty(0)
    sess = trial.oracle(name)
    kw = dict(overlap=(center, trial.s - stream.t), exclude=np.array(stream.taken).reshape(-1, trial.s),
              rank=R, known_scores=known, **_limit(node_limit))
    native = getattr(sess, "supports_below", None)
    if native is None or getattr(sess, "threshold_by_calls", False):
        # Call-based (ThresholdByCalls): one oracle call per member, within the extra-call budget.
        return supports_below_by_calls(sess, math.inf, max_count=max(0, calls_left), **kw)
    return native(math.inf, max_count=max_count, **kw)


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


def level_minima(trial, solver=None, node_limit=None):
    """R_t for t = 0 .. min(s, p - s) and whether each is certified (design.md 4.3).

    R_0 = R(S1); R_1 = the best single swap (closed form); R_t, t >= 2, from
    :func:`level_optimum`.

    Returns
    -------
    minima : ndarray of shape (t_max + 1,)
    certified : ndarray of shape (t_max + 1,), bool
    seconds : float
        Seconds spent on these values (oracle calls and closed-form level enumerations).
    calls : int
        Oracle calls behind them (S1 and the levels too large to enumerate).
    """
    name = solver_name(trial, solver)
    opt = optimum(trial, name)
    singles = single_swap_scores(trial, name)
    if singles is None:
        return None, None, float(opt.seconds), 1
    tmax = max_level(trial.p, trial.s)
    R = np.empty(tmax + 1)
    cert = np.empty(tmax + 1, dtype=bool)
    R[0], cert[0] = singles.center_score, opt.certified
    R[1], cert[1] = singles.best, True
    seconds = float(opt.seconds)
    calls = 1
    for t in range(2, tmax + 1):
        res = level_optimum(trial, t, name, node_limit=node_limit)
        R[t], cert[t] = res.objective, res.certified
        seconds += res.seconds
        calls += res.message != CLOSED_FORM
    return R, cert, seconds, calls
