"""Selector ``mistakes``: the grouped exponential mechanism (Prastakos, Behdin, Mazumder 2025).

docs/methods/mistakes.md. Supports are grouped by the number of "mistakes" t = |S \\ S1| relative to the
optimum S1 (t = 0 .. min(s, p - s)); group t has C(s, t) C(p - s, t) members and minimum
score R_t (R_0 = R(S1), R_1 = best single swap in closed form, R_t for t >= 2 from one
oracle call with |S ∩ S1| = s - t). Draw

    P(t) ∝ C(s, t) C(p - s, t) exp(-epsilon R_t / (2 Delta))

in log space, then return a **uniformly random** member of group t (drop t uniform members of
S1, add t uniform non-members). That is exactly the exponential mechanism on the lower-bounded
score R̂(S) = R_{t(S)}, so every support of group t has probability P(t) / |group t|.

The authors' code returns the group's best support instead; that makes no difference to exact
recovery but is not the mechanism the analysis describes, so it is not copied.

Privacy: pure epsilon-DP **when S1 is the same for every neighbouring data set**; the gap
condition R(S2) - R(S1) > 2 Delta (S2 the second-best support overall) suffices, because each
score moves by at most Delta. The condition is data dependent: when it fails the draws say so
(``Draws.no_guarantee = "gap condition failed"``) and the row carries no guarantee; an exact
audit found a privacy loss of 2.35 epsilon on a pair where S1 flips. ``mistakes-ptr`` is the
unconditional (epsilon, delta) variant.

The R_t are first only boxed, L_t <= R_t <= U_t, by the listings of the default top-R list
(``levels="listed"``, the default; :func:`dpbench.api.toplist.listed_level_boxes`, the listings
``topr`` makes at its default R): a large level with members under the listing's threshold
gives its R_t exactly, one with none the listing's bound below and its best known member above;
a short search (:data:`LAW_NODES` nodes per level) then makes the easy ones exact. Only when the boxes
leave a draw undecided (below), or the gap condition open, is a level's minimum searched to
``node_limit``, one level at a time in increasing t until every draw is decided
(:meth:`Mistakes.refined`), and the boxes intersected; ``levels="searched"`` searches every
level in ``prepare``. A search that reaches its work limit still boxes its level by its proven
bound and its best support.

Each draw takes t by inverse-CDF sampling of one uniform number u (with the weights at U_t);
it is **decided** when every R in the box gives the same t for that u
(:func:`dpbench.api.decided_by_bounds`), and a decided draw is the draw the mechanism with the
exact R_t makes with the same u, whatever the box. So the draws, and whether they are
certified, do not depend on which boxes decided them. The draws are certified when S1 is and
every draw is decided; an undecided draw (after the searches) leaves them uncertified with the
work limit to raise (the same seed then gives the same u). The exact output law, hence
``log_prob`` and P exact, needs the exact R_t: without it there is none (bounds on P(t) are in the diagnostics).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpbench.api import (BatchLogProb, Diagnostic, Draws, EpsilonCache, Param, Selector, check_epsilon,
                         decided_by_bounds, em_log_weights, inverse_cdf, log_binom, log_normalize, probability_bounds,
                         toplist, uniform_supports)



@dataclass(frozen=True, eq=False)
class MistakesPrepared:
    """The preparation of ``mistakes`` for one trial: the optimum S1 and the group minima R_t.

    Attributes
    ----------
    center : ndarray of shape (s,), int64, or None
        S1, the optimum; None when the oracle found none (then only ``reason`` is set and
        the draws are uniform and uncertified).
    outside : ndarray of shape (p - s,), int64, or None
        The features not in S1.
    minima : ndarray of shape (t_max + 1,), float64, or None
        R_t, the smallest score of group t (t = |S \\ S1|); where a level is not certified, the
        best score found (an upper bound on R_t).
    lower : ndarray of shape (t_max + 1,), float64, or None
        Certified lower bounds on R_t (equal to ``minima`` where certified; -inf where a call
        gave none); None when S1 is not certified (the groups themselves are then uncertain).
    log_sizes : ndarray of shape (t_max + 1,), float64, or None
        log |group t| = log C(s, t) + log C(p - s, t).
    certified : bool
        Every oracle call behind ``minima`` was certified optimal.
    gap : float
        R(S2) - R(S1), S2 the second-best support overall (inf when there is none), from
        ``minima`` (an upper bound when a level is not certified).
    gap_condition : bool
        The gap is certified to exceed 2 Δ (its lower bound from ``lower``), the condition under
        which the mechanism is pure ε-DP.
    oracle_calls : int
    oracle_seconds : float
        Oracle work behind the minima (diagnostics).
    reason : str or None
        Why there is no S1, or why the minima are not certified and which work limit to raise
        (:func:`dpbench.core.toplist.limit_advice`).
    raise_limit : dict or None
        The work limit to raise when a deterministic limit stopped a call (``limit_advice``).
    first_boxes : bool
        The bounds start from the listings' boxes (:func:`dpbench.api.toplist.listed_level_boxes`);
        where they do not decide a draw, :meth:`Mistakes.refined` narrows a level's box by
        searching its minimum (False: every level was searched in ``prepare``, ``levels =
        "searched"``).
    log_pt : EpsilonCache
        log P(t), t = 0 .. t_max, per ε.
    """

    center: np.ndarray | None = None
    outside: np.ndarray | None = None
    minima: np.ndarray | None = None
    lower: np.ndarray | None = None
    log_sizes: np.ndarray | None = None
    certified: bool = False
    gap: float = math.nan
    gap_condition: bool = False
    oracle_calls: int = 0
    oracle_seconds: float = 0.0
    reason: str | None = None
    raise_limit: dict | None = None
    first_boxes: bool = False
    log_pt: EpsilonCache = field(default_factory=EpsilonCache, repr=False)


def exact_gap(prep: MistakesPrepared) -> float | None:
    """R(S2) - R(S1) when the (possibly boxed) level minima determine it exactly, else None.

    The smallest R_t over t >= 1 is exact when it is attained at a certified level (R_1 always
    is, in closed form; a level is certified where its lower bound equals its minimum) and every
    boxed level's lower bound lies at or above it. None also without an S1 (or around an
    uncertified one, where no level is boxed).
    """
    if prep.minima is None or prep.lower is None:
        return None
    if len(prep.minima) < 2:
        return math.inf
    exact = prep.lower[1:] == prep.minima[1:]
    best = float(np.min(prep.minima[1:][exact]))
    if np.any(prep.lower[1:][~exact] < best):
        return None
    return best - float(prep.minima[0])


#: Work of the short search that ``prepare`` makes of every level t the listings leave boxed
#: (:meth:`Mistakes.refined`): this many branch-and-bound nodes shared out over the level's C(s, t)
#: roots (at most ``node_limit`` per root), for a level whose listing took at most as many. Where the
#: level is easy it certifies R_t, so the law and ``P exact`` are known as with searched levels: on
#: the shipped data sets the boxed levels (level 5 of chowdary, gordon, golub, sorlie, su; one root,
#: listed in at most 1 723 nodes) certify in 2 051-6 702 nodes. Levels 4 and 5 of the toeplitz
#: n = 200, p = 10 000 trial (listed in 32 114 and 24 507 nodes) get none; a draw a box leaves
#: undecided searches the level to ``node_limit`` per root.
LAW_NODES = 10_000


def _law_known(prep: MistakesPrepared) -> bool:
    """The output law is known: S1 exists and every R_t is exact, or S1 is uncertified (then the
    law is that of the upper bounds, and the draws are uncertified anyway). With S1 certified and
    a level only boxed, the law is that of the unknown exact R_t."""
    return prep.center is not None and (prep.certified or prep.lower is None)


class Mistakes(BatchLogProb, Selector):
    """Grouped exponential mechanism over the number of swaps from the optimum."""

    name = "mistakes"
    summary = ("grouped exponential mechanism by number of swaps t from the optimum, uniform member of "
               "group t (pure eps-DP under the gap condition R(S2)-R(S1) > 2 Delta, recorded per trial)")
    dp_type = "pure"
    source = "Prastakos, Behdin, Mazumder, NeurIPS 2025; docs/methods/mistakes.md"
    uses_oracle = True
    prepared_type = MistakesPrepared
    prepared_version = 4  # 4: first boxes (3: lower bounds on R_t; 2: the fields of MistakesPrepared; 1: a flat dict)
    diagnostics = {"gap_condition": Diagnostic("count", "gap", "trials where R(S2) - R(S1) > 2Δ held: pure DP only then")}
    params = {
        "solver": Param(None, "oracle backend (default: the run's --solver)", str),
        "node_limit": Param(toplist.SWAP_LEVEL_NODE_LIMIT, "work limit: branch-and-bound nodes per oracle call on the swap levels "
                            "(a deterministic count, so every machine certifies the same trials); a level "
                            "call that reaches it leaves R_t only bounded, and the draws are certified only "
                            "if the bounds decide every draw's level (docs/methods/mistakes.md)", int),
        "workers": Param(2, "processes for the roots of a swap level (its listing, or its minimum when a draw needs "
                         "it); capped at the CPU count; the boxes, draws and node counts are the same for any "
                         "value; 1 = this process only", int, interval=(1, None, "left")),
        "levels": Param("listed", "'listed': bound R_t by the listings of the default top-R list and search a level's "
                        "minimum to node_limit only when a draw or the gap condition needs it (exact draws; P exact where "
                        "the listings and a short search give every R_t); 'searched': search every level's minimum (the exact law "
                        "wherever the searches certify; docs/methods/mistakes.md)", str, choices=("listed", "searched")),
    }

    def prepare(self, trial, rng):
        name, limit, workers = self.config["solver"], self.config["node_limit"], self.config["workers"]
        first = toplist.listed_level_boxes(trial, name, limit, workers) if self.config["levels"] == "listed" else None
        if first is None:
            return self._searched(trial)
        prep = self._prepared(trial, first.upper, first.lower, bool(np.all(first.lower == first.upper)), first.calls,
                              first.seconds, first_boxes=True)
        # A short search of every boxed level: where it certifies, R_t is exact (and with every R_t
        # exact, the law and P exact are known), at a bounded cost where it does not. A level whose
        # listing already took more nodes gets none: its minimum search has more to prove.
        for t in range(2, len(prep.minima)) if LAW_NODES else ():
            if first.nodes[t] <= LAW_NODES:
                per_root = max(1, min(LAW_NODES // math.comb(trial.s, t), self.config["node_limit"]))
                prep = self.refined(trial, prep, [t], node_limit=per_root)
        if not prep.gap_condition and prep.gap > 2 * trial.sensitivity:
            return self.refined(trial, prep)  # narrower boxes may establish the gap condition
        return prep

    def refined(self, trial, prepared: MistakesPrepared, levels=None, node_limit=None) -> MistakesPrepared:
        """The preparation with the boxes of ``levels`` narrowed by searching their minima.

        Each listed level t (None: every boxed one) whose box is not exact gets its minimum
        searched (its roots on up to ``workers`` processes), and its box becomes the intersection
        of both: the search's value where it certifies, else at least as narrow as either box. A
        search stopped by the wall-clock safety net or an error leaves the box as it was. A
        preparation that is not made of first boxes, or whose boxes are all exact, is returned
        as it is.

        Parameters
        ----------
        trial : dpbench.bench.trial.Trial
        prepared : MistakesPrepared
        levels : iterable of int, optional
            Levels t >= 2 to search.
        node_limit : int, optional
            A smaller work limit per root than the selector's ``node_limit``
            (:func:`dpbench.api.toplist.level_optimum_within`: only a certified answer is kept,
            and the reason of an uncertified search is not recorded, since a draw may still
            search the level to ``node_limit``). None: the selector's ``node_limit``
            (:func:`dpbench.api.toplist.level_optimum`, cached on the trial).

        Returns
        -------
        MistakesPrepared
        """
        if not prepared.first_boxes or prepared.certified:
            return prepared
        name, limit, workers = self.config["solver"], self.config["node_limit"], self.config["workers"]
        upper, lower = prepared.minima.copy(), prepared.lower.copy()
        calls, seconds, advice = prepared.oracle_calls, prepared.oracle_seconds, (None, None)
        for t in range(2, len(upper)) if levels is None else levels:
            if lower[t] == upper[t]:
                continue
            if node_limit is None:
                res = toplist.level_optimum(trial, t, name, node_limit=limit, workers=workers)
            else:
                res = toplist.level_optimum_within(trial, t, name, node_limit, workers)
            calls, seconds = calls + 1, seconds + float(res.seconds)
            if res.certified:
                upper[t] = lower[t] = res.objective
                continue
            if advice[0] is None and node_limit is None:
                advice = toplist.limit_advice(self.name, f"level {t} minimum", res.status, res.message, limit)
            if res.support is not None:
                upper[t] = min(upper[t], float(res.objective))
            bound = float(res.lower_bound)
            if res.status in ("work_limit", "suboptimal") and not math.isnan(bound):
                lower[t] = min(max(lower[t], bound), upper[t])
        certified = bool(np.all(lower == upper))
        reason, raise_limit = (None, None) if certified else (advice if advice[0] else (prepared.reason,
                                                                                          prepared.raise_limit))
        return self._prepared(trial, upper, lower, certified, calls, seconds, reason, raise_limit, first_boxes=True)

    def _searched(self, trial) -> MistakesPrepared:
        """The preparation from one minimum search per large level (boxes where a search stops)."""
        name, limit = self.config["solver"], self.config["node_limit"]
        minima, cert, seconds, calls = toplist.level_minima(trial, name, limit, self.config["workers"])
        opt = toplist.optimum(trial, name)
        if minima is None:
            return MistakesPrepared(reason=f"oracle found no optimum (status {opt.status})")
        lower = toplist.level_lower_bounds(trial, name, limit)
        reason, raise_limit = (None, None) if np.all(cert) else toplist.level_minima_advice(
            trial, self.name, name, limit)
        return self._prepared(trial, minima, lower, bool(np.all(cert)), calls, seconds, reason, raise_limit)

    def _prepared(self, trial, minima, lower, certified, calls, seconds, reason=None, raise_limit=None,
                  first_boxes=False) -> MistakesPrepared:
        p, s = trial.p, trial.s
        t = np.arange(len(minima))
        log_sizes = log_binom(s, t) + log_binom(p - s, t)
        second = float(np.min(minima[1:])) if len(minima) > 1 else math.inf
        # The condition must hold for the exact gap, so it is checked with the lower bounds on R_t
        # (equal to R_t where certified); around an uncertified S1 it cannot be established.
        gap_lower = -math.inf
        if lower is not None:
            gap_lower = (float(np.min(lower[1:])) if len(lower) > 1 else math.inf) - float(minima[0])
        center = toplist.single_swap_scores(trial, self.config["solver"]).center
        mask = np.ones(p, dtype=bool)
        mask[center] = False
        return MistakesPrepared(
            center=center, outside=np.flatnonzero(mask), minima=minima, lower=lower,
            log_sizes=np.asarray(log_sizes, dtype=np.float64), certified=certified, gap=second - float(minima[0]),
            gap_condition=bool(gap_lower > 2 * trial.sensitivity), oracle_calls=int(calls), oracle_seconds=float(seconds),
            reason=reason, raise_limit=raise_limit, first_boxes=first_boxes)

    def _log_pt(self, trial, prep, epsilon):
        """log P(t) ∝ log |group t| - epsilon R_t / (2 Delta), t = 0 .. t_max (shape (t_max + 1,))."""
        eps = check_epsilon(epsilon)
        return prep.log_pt(eps, trial.sensitivity, lambda: log_normalize(
            em_log_weights(prep.minima, eps, trial.sensitivity, log_multiplicity=prep.log_sizes)))

    def log_probs(self, trial, prepared, epsilon, supports) -> np.ndarray:
        """Exact log-probabilities of a batch of supports (B, s): log P(t) - log |group t|."""
        lp = self._log_pt(trial, prepared, epsilon)
        S = np.asarray(supports, dtype=np.int64)
        t = trial.s - np.isin(S, prepared.center).sum(axis=1)
        return lp[t] - prepared.log_sizes[t]

    def has_law(self, prepared):
        # Boxed levels (first boxes, or searches stopped by their work limit) leave the law that of
        # the unknown exact R_t; the draws are still exact where decided (module docstring).
        # levels=searched gives the law wherever the searches certify.
        return _law_known(prepared)

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        eps = check_epsilon(epsilon)
        prep = prepared
        p, s = trial.p, trial.s
        if prep.center is None:
            return Draws(uniform_supports(rng, p, s, n_draws), certified=False,
                         diagnostics={"reason": prep.reason})
        lp = self._log_pt(trial, prep, eps)
        u = rng.random(n_draws)
        t = inverse_cdf(lp, u)
        searched = []
        for level in range(2, len(prep.minima)) if prep.first_boxes else ():
            # A draw the boxes do not decide: search the boxed levels' minima one at a time, in
            # increasing t, until every draw is decided. A draw a box decides is the exact
            # mechanism's draw, which every narrower box gives as well.
            if prep.certified or self._decided(trial, prep, eps, u, t, {}):
                break
            if prep.lower[level] < prep.minima[level]:
                prep = self.refined(trial, prep, [level])
                searched.append(level)
                lp = self._log_pt(trial, prep, eps)
                t = inverse_cdf(lp, u)
        center, outside = prep.center, prep.outside
        supports = np.empty((n_draws, s), dtype=np.int64)
        for tv in np.unique(t):
            idx = np.flatnonzero(t == tv)
            m = idx.size
            if tv == 0:
                supports[idx] = center
                continue
            # Uniform member of group t: a uniform t-subset of S1 to drop and a uniform
            # t-subset of the non-members to add, independently.
            drop = uniform_supports(rng, s, int(tv), m)
            add = outside[uniform_supports(rng, p - s, int(tv), m)]
            keep_mask = np.ones((m, s), dtype=bool)
            keep_mask[np.arange(m)[:, None], drop] = False
            kept = np.broadcast_to(center, (m, s))[keep_mask].reshape(m, s - int(tv))
            supports[idx] = np.sort(np.concatenate([kept, add], axis=1), axis=1)
        diag = {
            "R_t": [float(v) for v in prep.minima],
            "gap": float(prep.gap),
            "gap_over_2delta": float(prep.gap / (2 * trial.sensitivity)),
            "gap_condition": prep.gap_condition,
            "oracle_calls": prep.oracle_calls,
            "oracle_seconds": prep.oracle_seconds,
            "level_boxes": "searches" if not prep.first_boxes else "listings",
            "levels_searched_for_draws": searched,
        }
        if _law_known(prep):  # else P(t) is only bounded (p_t_bounds, below)
            diag.update(p_t=[float(v) for v in np.exp(lp)], p_opt=float(np.exp(lp[0])))
        ts = trial.problem.true_support
        certified = prep.certified
        if not certified and prep.lower is not None:
            certified = self._decided(trial, prep, eps, u, t, diag)
        if ts is not None and _law_known(prep):
            diag["p_true"] = float(np.exp(self.log_probs(trial, prep, eps, ts[None, :])[0]))
        if not certified:
            diag["reason"] = prep.reason or toplist.UNCERTIFIED_CALL
            if "undecided_draws" in diag:  # the levels are boxed: the draws, not the calls, are the cause
                diag["reason"] = (f"{diag['undecided_draws']} of {n_draws} draws not decided by the bounds on R_t "
                                  f"of level(s) {', '.join(map(str, diag['levels_bounded']))} ({diag['reason']})")
            if prep.lower is not None and prep.gap <= 2 * trial.sensitivity:  # even its upper bound fails
                diag["reason"] += ("; the gap condition fails whatever the levels (R(S2) - R(S1) <= "
                                   f"{prep.gap:.4g} <= 2 Delta), so these rows carry no guarantee either way")
            if prep.raise_limit is not None:
                diag["raise_limit"] = dict(prep.raise_limit)
        # The analysis needs S1 to be the same on every neighbour; the gap condition is what
        # certifies that here, so without it the row carries no guarantee (docs/methods/mistakes.md).
        no_guarantee = None
        if not prep.gap_condition:
            no_guarantee = ("gap condition failed" if prep.gap <= 2 * trial.sensitivity else
                            "gap condition not established (a level minimum is only bounded)")
        return Draws(supports, certified=certified, no_guarantee=no_guarantee, diagnostics=diag)

    def _decided(self, trial, prep, eps, u, t, diag) -> bool:
        """Whether every draw's level t is the one the exact R_t give for its u (module docstring);
        records the bounds on P(t) and the undecided draws in ``diag``."""
        lw_lo = em_log_weights(prep.minima, eps, trial.sensitivity, log_multiplicity=prep.log_sizes)
        lw_hi = em_log_weights(prep.lower, eps, trial.sensitivity, log_multiplicity=prep.log_sizes)
        decided = decided_by_bounds(lw_lo, lw_hi, u, t)
        low, high = probability_bounds(lw_lo, lw_hi)
        diag["R_t_lower"] = [float(v) for v in prep.lower]
        diag["levels_bounded"] = [int(t) for t in np.flatnonzero(prep.lower < prep.minima)]
        diag["p_t_bounds"] = [[float(a), float(b)] for a, b in zip(low, high)]
        diag["undecided_draws"] = int((~decided).sum())
        return bool(decided.all())

