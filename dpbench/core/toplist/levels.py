"""Swap neighbourhoods of the best support: the shared preparation of ``topr`` and ``mistakes``.

Not a plugin (no hooks): the one implementation of the epsilon-independent work both
selectors need for a trial, cached with :meth:`dpbench.bench.trial.Trial.shared` so that running
both on the same trial does every oracle call and every batched scoring once.

Vocabulary (docs/methods/topr.md, docs/methods/mistakes.md): ``S1`` is the oracle's optimum (the ``bss`` optimum, cached
by :meth:`dpbench.bench.trial.Trial.optimum`, as for the ``bss`` baseline). Every other support
lies in exactly one *level* t = |S \\ S1| in 1 .. min(s, p - s); level t has
C(s, t) C(p - s, t) members. Level 1 (the single swaps) is scored in closed form; the
minimum R_t of each level t >= 2 comes from one oracle call with the overlap constraint
|S ∩ S1| = s - t, or from a complete threshold enumeration of the level that ``topr`` made
first (:func:`level_minimum_from_list`); ``mistakes`` starts from boxes on it given by those
enumerations (:func:`~dpbench.core.toplist.listings.listed_level_boxes`) and searches a level
only when it needs more (:func:`level_optimum_within`, :func:`level_optimum`).

The top-R list (docs/methods/topr.md) is the R smallest scores overall, built in
:mod:`dpbench.core.toplist.toplist` (:func:`top_list`, :class:`TopList`) by a
k-way merge of sorted sources: {S1} and the single swaps (explicit, sorted), and one source
per level t >= 2 whose elements arrive in increasing order from repeated oracle calls
(overlap constraint + no-good cuts), from a closed-form enumeration of a small level, or,
for a large level that contributes more than its optimum, from a threshold enumeration
(``OracleSession.supports_below``: all members with score <= an upper bound on the R-th
score; measured at p = 10 000, n = 200: 30 000 2-swap members in 1-4 s, where one call per
member gave up after 1000 calls). Merging stops as soon as R supports are taken; every
untaken support is then at least as large as a source head that is at least the largest
taken score, so the list is exact (certified) whenever every oracle call was.

Why the >= 2-swap region is handled level by level rather than with one call excluding S1
and all (p - s) s single swaps as no-good cuts: ``mistakes`` needs exactly these per-level
optima anyway (so running both selectors costs nothing extra), and at p = 10 000 the
alternative puts ~50 000 no-good constraints into the MIP master.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from dpbench.core.contracts.oracle import OracleResult
from dpbench.core.oracle.threshold import overlap_by_roots
from dpbench.core.supports import iter_supports, single_swaps
from dpbench.core.oracle.limits import NODE_LIMIT, canonical_minimum, tie_bar
from dpbench.core.oracle.parallel import map_session_calls

#: Chunk of supports scored per call when enumerating a swap level.
_CHUNK = 200_000

#: Default cap on the supports a threshold enumeration of one level may hold (memory ~ 50
#: bytes each); beyond it the list is uncertified, never truncated silently.
THRESHOLD_MAX_COUNT = 2_000_000

#: Default work limit (branch-and-bound nodes) of each oracle call on the swap levels and of each
#: root of a threshold enumeration, for ``topr`` and ``mistakes`` (the same for both, so that they
#: share a trial's listings). A count, so every machine certifies the same trials. On the 16
#: shipped real data sets at the defaults (s = 5, Lambda = 10, issue 22) the hardest roots are
#: gravier's: level 4's root that keeps feature 1336 takes 151 002 nodes and level 5's one root
#: 186 088 (each finished in two parts of about half, split_parts); then shipp's level 5, 54 916.
#: With 100 000 (until session 22) gravier's topr stopped at level 4, uncertified; with 250 000
#: every shipped set is certified (gravier's topr + mistakes preparation about 8 min on this
#: 2-core machine). The limit bounds the time spent before a trial is reported uncertified: a
#: root that reaches it costs minutes. Raise it per run with --param topr.node_limit=... (and
#: --retry-uncertified to redo only the uncertified rows), or lower it to hear sooner.
SWAP_LEVEL_NODE_LIMIT = 250_000

#: The reason an uncertified topr / mistakes preparation gives in its diagnostics.
UNCERTIFIED_CALL = "an oracle call was not certified optimal (work limit, safety time limit or error)"

#: Factor by which :func:`limit_advice` suggests raising a deterministic work limit that stopped a call.
RAISE_FACTOR = 10


def limit_advice(selector: str, what: str, status: str, message: str, node_limit: int | None,
                 solver: str | None = None):
    """Why a preparation is uncertified and which work limit to raise (issue 22, item 4).

    Parameters
    ----------
    selector : str
        ``"topr"`` or ``"mistakes"`` (the parameter's owner in ``--param``).
    what : str
        The call that stopped, e.g. ``"level 4 minimum"``.
    status, message : str
        The call's :class:`~dpbench.api.OracleResult` / ``ThresholdResult`` status and message.
    node_limit : int or None
        The limit that stopped the call: the selector's ``node_limit``, or with ``solver``
        the backend's own (None: the backend's default, :data:`NODE_LIMIT`).
    solver : str or None
        The oracle backend's name when the call ran with the backend's own ``node_limit``
        (the optimum S1), so the advice names ``--param SOLVER.node_limit``.

    Returns
    -------
    reason : str
        One line: the call, its status and message, and what to raise.
    raise_limit : dict or None
        ``{"param", "now", "suggest", "option"}`` for a deterministic work limit
        (``suggest = RAISE_FACTOR * now``; ``option`` the command-line spelling); None when
        the call stopped for another reason (safety time limit, error), where raising a work
        limit would not help.
    """
    reason = f"{what} not certified: {status} ({message})" if message else f"{what} not certified: {status}"
    if status != "work_limit":
        if status == "time_limit":
            reason += (f"; the wall-clock safety net stopped it (--param {solver or 'SOLVER'}.safety_time_limit=...)")
        return reason, None
    if solver is not None or node_limit is None:
        now = NODE_LIMIT if node_limit is None else int(node_limit)
        param = f"{solver or 'SOLVER'}.node_limit"
        option = f"--param {param}={RAISE_FACTOR * now}"
    else:
        now = int(node_limit)
        param, option = f"{selector}.node_limit", f"--param {selector}.node_limit={RAISE_FACTOR * now}"
    reason += f"; raise {param} above {now} (e.g. {option}) and rerun with --retry-uncertified"
    return reason, {"param": param, "now": now, "suggest": RAISE_FACTOR * now, "option": option}


def level_minima_advice(trial, selector: str, solver=None, node_limit=None):
    """:func:`limit_advice` for the first uncertified value behind :func:`level_minima` (S1, then
    the levels in order; all cached, so no new oracle call), or ``(None, None)`` if all are
    certified."""
    name = solver_name(trial, solver)
    opt = optimum(trial, name)
    if not opt.certified:
        return limit_advice(selector, "the optimum S1", opt.status, opt.message,
                            getattr(trial.oracle(name), "node_limit", None), solver=name)
    for t in range(2, max_level(trial.p, trial.s) + 1):
        res = level_optimum(trial, t, name, node_limit=node_limit)
        if not res.certified:
            return limit_advice(selector, f"level {t} minimum", res.status, res.message, node_limit)
    return None, None


def solver_name(trial, solver) -> str:
    """The backend actually used: the selector's ``solver`` parameter or the run's default."""
    return solver or trial.solver


def optimum(trial, solver=None):
    """The unconstrained best support S1 of the trial (an :class:`dpbench.api.OracleResult`).

    :meth:`dpbench.bench.trial.Trial.optimum`, shared with the ``bss`` baseline and the runner, so
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

#: ``OracleResult.message`` of a level optimum read off a complete threshold enumeration of the level.
FROM_THRESHOLD = "minimum of the level's complete threshold enumeration"

#: Levels with at most this many members get their optimum R_t by closed-form enumeration
#: (exact, certified by construction, and far cheaper than a MIP for e.g. t = 2 at p = 200);
#: larger levels use the oracle. Either way the cached value is the same exact optimum.
LEVEL_ENUM_LIMIT = 2_000_000


def closed_form_limit(trial, enum_limit: int | None = None) -> int:
    """Largest level scored in closed form: ``enum_limit`` (None: :data:`LEVEL_ENUM_LIMIT`), capped by
    the score's ``level_enum_limit`` (a score much costlier than the ridge closed form, e.g. the hinge loss)."""
    limit = LEVEL_ENUM_LIMIT if enum_limit is None else int(enum_limit)
    return min(limit, getattr(trial.score, "level_enum_limit", limit))


def _limit(node_limit):
    """Keyword arguments passing a work limit to a session (none when the backend default applies)."""
    return {} if node_limit is None else {"node_limit": int(node_limit)}


def level_optimum(trial, t: int, solver=None, enum_limit: int | None = None, node_limit: int | None = None,
                  workers: int = 1):
    """Best support with exactly t swaps, |S ∩ S1| = s - t (t >= 2), as an OracleResult.

    Cached under ``("swap_level", solver, t)``; shared by ``topr`` (first element of the
    level's stream) and ``mistakes`` (R_t). Levels with at most ``enum_limit`` (default
    :data:`LEVEL_ENUM_LIMIT`) members are scored in closed form, the others by one oracle
    call with the overlap constraint, limited to ``node_limit`` branch-and-bound nodes (a
    deterministic count; None: the backend's default; a call that reaches it is
    uncertified). The cache holds the first computation, whatever limit a later caller
    passes. A level that the joint call does not certify goes to its roots
    (:func:`~dpbench.core.oracle.threshold.overlap_by_roots`), which run on up to ``workers``
    processes (:func:`~dpbench.core.oracle.parallel.map_session_calls`) with the same answer,
    certification and work count for any ``workers``.
    """
    name = solver_name(trial, solver)
    limit = closed_form_limit(trial, enum_limit)

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
            best_S, best_sc = canonical_minimum(np.concatenate(tied_S), np.concatenate(tied_sc))
            return OracleResult(best_S, best_sc, best_sc, "optimal", 0, time.perf_counter() - t0, CLOSED_FORM)
        return _level_by_oracle(trial.oracle(name), center, trial.s - t, node_limit, workers)

    return trial.shared(("swap_level", name, int(t)), compute)


def level_optimum_within(trial, t: int, solver=None, node_limit: int | None = None, workers: int = 1):
    """Level t's minimum searched within ``node_limit`` nodes per root; kept only when certified.

    As :func:`level_optimum`, except for the cache: a certified answer (the level's exact
    canonical minimum, whatever limit found it) is cached as :func:`level_optimum`'s, an
    uncertified one is returned and not cached, so that a later :func:`level_optimum` with a
    larger limit searches the level again (with the cuts this search left in the session). A
    level already cached, or small enough for closed form, is answered by :func:`level_optimum`.

    Parameters
    ----------
    trial : dpbench.bench.trial.Trial
    t : int
        Level, 2 <= t <= min(s, p - s).
    solver : str or None
        Oracle backend (None: the trial's).
    node_limit : int or None
        Work limit per root (None: the backend's default).
    workers : int
        Processes for the level's roots; the answer does not depend on it.

    Returns
    -------
    OracleResult
    """
    name = solver_name(trial, solver)
    if level_size(trial.p, trial.s, t) <= closed_form_limit(trial):
        return level_optimum(trial, t, name)

    def certified_or_raise():
        res = _level_by_oracle(trial.oracle(name), single_swap_scores(trial, name).center, trial.s - t,
                               node_limit, workers)
        if not res.certified:
            raise _Uncertified(res)  # trial.shared stores nothing when its compute raises
        return res

    try:
        return trial.shared(("swap_level", name, int(t)), certified_or_raise)  # level_optimum's key
    except _Uncertified as stop:
        return stop.result


class _Uncertified(Exception):
    """An uncertified search in :func:`level_optimum_within`, carried out of ``trial.shared`` uncached."""

    def __init__(self, result):
        super().__init__(result.status)
        self.result = result


def level_minimum_from_list(trial, solver, t: int, listing):
    """R_t read off a certified threshold enumeration of the whole level t, cached as :func:`level_optimum`.

    ``listing`` (a ``ThresholdResult`` of level t with nothing excluded) holds every member
    with score <= its ``threshold``. When it holds at least one, and every support tied with
    its smallest score (:func:`~dpbench.core.oracle.limits.tie_bar`) is listed (the tie
    window lies under the threshold, or the bound on the members not listed lies above it),
    its canonical minimum (the lexicographically smallest of the ties, as every oracle
    backend returns) is the level's exact optimum, with no oracle call (issue 22, item 2).

    Parameters
    ----------
    trial : dpbench.bench.trial.Trial
    solver : str or None
        Oracle backend (None: the trial's).
    t : int
        Level, 2 <= t <= min(s, p - s).
    listing : ThresholdResult

    Returns
    -------
    OracleResult or None
        The cached level optimum (whatever computed it first), or None when the listing
        cannot give it (uncertified, empty, or a tie could lie above its threshold).
    """
    sc = np.asarray(listing.scores, dtype=np.float64)
    if not listing.certified or not sc.size:
        return None
    bar = tie_bar(float(sc.min()))
    if not (bar <= float(listing.threshold) or float(listing.lower_bound) > bar):
        return None  # a support tied with the minimum could be among those not listed
    best, _ = canonical_minimum(np.sort(np.asarray(listing.supports, dtype=np.int64), axis=1), sc)
    objective = float(trial.score(best[None, :])[0])  # recomputed with the shared score, as an oracle's
    return trial.shared(("swap_level", solver_name(trial, solver), int(t)),
                        lambda: OracleResult(best, objective, objective, "optimal", 0, 0.0, FROM_THRESHOLD))


#: Branch-and-bound nodes of the first, joint call over all roots of a level (enough where the
#: level is easy); if it does not certify, its best support is the incumbent of a search root by
#: root (:func:`overlap_by_roots`: the incumbent's root solved, the others listed below it).
LEVEL_JOINT_NODES = 300


def _level_by_oracle(sess, center, k, node_limit, workers=1):
    """The optimum of a swap level (overlap k with ``center``): joint call, else root by root (on up
    to ``workers`` processes) with the joint call's best support as incumbent."""
    first = LEVEL_JOINT_NODES if node_limit is None else min(LEVEL_JOINT_NODES, int(node_limit))
    res = sess.solve(overlap=(center, k), node_limit=first)
    if res.certified:
        return res
    by_roots = overlap_by_roots(sess, center, k, node_limit=node_limit, incumbent=res,
                                beside=lambda fn, args, here: map_session_calls(sess, fn, args, workers, here))
    if by_roots is not None:
        by_roots.seconds += res.seconds
        by_roots.iterations += res.iterations
        return by_roots
    return sess.solve(overlap=(center, k), **_limit(node_limit))  # near-tie across roots: joint tie-break


def _level_chunks(trial, center, t: int, outside=None):
    """Stream (supports (m, s) unsorted rows, scores (m,)) over all members of level t.

    ``outside``: the features (not in ``center``) the t added ones are drawn from; None: all
    p - s of them (the whole level), else the level's members restricted to that pool.
    """
    p, s = trial.p, trial.s
    center = np.asarray(center, dtype=np.int64)
    if outside is None:
        mask = np.ones(p, dtype=bool)
        mask[center] = False
        outside = np.flatnonzero(mask)
    outside = np.asarray(outside, dtype=np.int64)
    q = outside.size
    drops = list(itertools.combinations(range(s), t))
    kept = [np.delete(center, d) for d in drops]
    if t > q:
        return
    if t == q:
        add_chunks = [np.arange(q, dtype=np.int64)[None, :]]
    else:
        add_chunks = iter_supports(q, t, chunk_size=max(1, _CHUNK // len(drops)))
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


#: Supports per swap level t >= 2 scored in closed form by :func:`~dpbench.core.toplist.roots.seed_bar` (a deterministic
#: budget): the added features are drawn from the M best single-swap features, M the largest
#: with C(s, t) C(M, t) <= this. Khan, Lambda = 10 (R = 11 517): 383 530 supports scored, U =
#: 4.3039 (500 000 per level: 1.8e6 supports, U = 4.2884; the final R-th score is <= 4.2796).
#: Toeplitz n = 200, p = 10 000 (R = 49 977): 500 000 per level cost more seconds (1.8e6
#: supports) than the nodes they saved, hence 100 000.
SEED_SUPPORTS = 100_000


def seeded_pool(trial, singles, t: int, per_level: int = SEED_SUPPORTS):
    """The outside features whose level-t members :func:`~dpbench.core.toplist.roots.seed_bar` scores.

    The M outside features (not in S1) with the best single swaps, M the largest with
    C(s, t) C(M, t) <= ``per_level`` (capped by the score's ``level_enum_limit``); None when M < t.

    Parameters
    ----------
    trial : dpbench.bench.trial.Trial
    singles : SingleSwaps
        S1 and its single swaps, sorted by (score, support).
    t : int
    per_level : int

    Returns
    -------
    ndarray of shape (M,), int64, or None
    """
    per_level = min(int(per_level), getattr(trial.score, "level_enum_limit", per_level))  # costly scores (hinge)
    p, s, center = trial.p, trial.s, singles.center
    rows = singles.supports
    added = rows[~np.isin(rows, center)]  # one per row, in row order (singles are sorted)
    ranked = added[np.sort(np.unique(added, return_index=True)[1])]
    M = p - s
    while M >= t and math.comb(s, t) * math.comb(M, t) > per_level:
        M -= 1 if M < 64 else max(1, M // 16)
    return ranked[:M] if M >= t else None


def level_minima(trial, solver=None, node_limit=None, workers: int = 1):
    """R_t for t = 0 .. min(s, p - s) and whether each is certified (docs/methods/mistakes.md).

    R_0 = R(S1); R_1 = the best single swap (closed form); R_t, t >= 2, from
    :func:`level_optimum` (its roots on up to ``workers`` processes; the values do not depend on it).

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
    if not opt.certified:
        # Levels around an uncertified S1 cannot make the draws private, so no level calls (each
        # up to node_limit nodes per root): R_t, t >= 2, is the best member of level t on the
        # seeded pool (closed form, an upper bound on R_t), marked uncertified.
        for t in range(2, tmax + 1):
            pool = seeded_pool(trial, singles, t)
            best = [float(sc.min()) for _, sc in _level_chunks(trial, singles.center, t, pool)] if pool is not None else []
            R[t], cert[t] = min(best, default=math.inf), False
        return R, cert, seconds, calls
    for t in range(2, tmax + 1):
        res = level_optimum(trial, t, name, node_limit=node_limit, workers=workers)
        R[t], cert[t] = res.objective, res.certified
        seconds += res.seconds
        calls += res.message not in (CLOSED_FORM, FROM_THRESHOLD)
    return R, cert, seconds, calls


def level_lower_bounds(trial, solver=None, node_limit=None):
    """Certified lower bounds L_t <= R_t, t = 0 .. min(s, p - s), or None when S1 is not certified.

    R_0 (the certified optimum's score) and R_1 (closed form) are exact; for t >= 2 the bound of
    :func:`level_optimum` (cached: after :func:`level_minima` no new call is made), which equals
    R_t when the level is certified and is the oracle's proven bound otherwise (the smallest
    open bound over the level's roots, :func:`~dpbench.core.oracle.threshold.overlap_by_roots`).
    With the upper bounds of :func:`level_minima` they box the exact R_t, which is all that
    ``mistakes`` needs to decide most of its draws exactly (docs/methods/mistakes.md).

    Only a deterministic stop may leave a level open (``work_limit``, or ``suboptimal``: a bound
    not closed for numerical reasons): a call stopped by the wall-clock safety net, or an error,
    has answers that depend on the machine's speed and load, so then there are none (None) and
    the draws stay uncertified.

    Returns
    -------
    ndarray of shape (t_max + 1,), float64, or None
        -inf where a call gave no bound.
    """
    name = solver_name(trial, solver)
    if not optimum(trial, name).certified:
        return None
    minima, cert, _, _ = level_minima(trial, name, node_limit)
    if minima is None:
        return None
    lower = minima.copy()
    for t in range(2, len(minima)):
        if not cert[t]:
            res = level_optimum(trial, t, name, node_limit=node_limit)
            if res.status not in ("work_limit", "suboptimal"):
                return None
            bound = float(res.lower_bound)
            lower[t] = min(bound, float(minima[t])) if not math.isnan(bound) else -math.inf
    return lower
