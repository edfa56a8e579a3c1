"""Selector ``mistakes-ptr``: ``mistakes`` behind propose-test-release, (epsilon, delta)-DP on every data set.

docs/methods/mistakes.md. ``mistakes`` (Prastakos, Behdin, Mazumder 2025) is pure epsilon-DP only when the
optimum S1 is the same on every neighbouring data set; an exact audit found a privacy loss of
2.35 epsilon where it flips. Propose-test-release (Dwork & Lei 2009; Thakurta & Smith 2013)
tests privately that S1 is stable and falls back to the unconditionally private ``topr``
otherwise.

**Stability distance.** Let R_(1)(D) <= R_(2)(D) be the two smallest scores over all supports
and g(D) = R_(2) - R_(1) >= 0 the gap (R(S2) - R(S1)). Replacing one row moves every score by
at most Delta (docs/methods/score.md), hence every order statistic by at most Delta and g by at
most 2 Delta. Define

    d(D) = ceil(g / (2 Delta)) - 1          (an integer >= -1; d = -1 iff g = 0, a tie).

For an integer k >= 0, d >= k  <=>  ceil(g / (2 Delta)) > k  <=>  g > 2 Delta k. So if d >= k, every
D' within k replaced rows has R(S1, D') <= R(S1, D) + k Delta < R(S, D) - k Delta <= R(S, D') for
all S != S1: the optimum is the same, with a strict margin (no tie-breaking involved). g/(2 Delta)
moves by at most 1 per replaced row, so its ceiling -- and d -- moves by at most 1: **d has
sensitivity 1**. (A gap exactly at a multiple of 2 Delta is a case where the ceiling matters:
g = 2 Delta k gives d = k - 1, since at distance k a tie, resolved either way, is possible.)

**Mechanism.** With epsilon_1 = ptr_fraction * epsilon and epsilon_2 = epsilon - epsilon_1,
draw L ~ Laplace(1 / epsilon_1); if d + L > tau run ``mistakes`` with epsilon_2, else ``topr``
with epsilon_2, where

    tau = log(1 / (2 delta)) / epsilon_1           (0 < delta < 1/2, so tau > 0).

**Theorem.** The output S is (epsilon_1 + epsilon_2, delta)-DP under replace-one for every data
set (given certified oracle answers: the exact gap, the exact top-R list). The ``mistakes`` branch
may run on boxed level minima when the boxes fix the gap (:func:`~dpbench_plugins.selectors.swaps.mistakes.exact_gap`):
its decided draws are its exact draws (docs/methods/mistakes.md), and an undecided one leaves the
draws uncertified.

*Proof sketch.* Fix neighbours D, D' and an event E. (a) If d(D) >= 1 or d(D') >= 1, S1 is the
same on both (above, k = 1); then ``mistakes`` with epsilon_2 is epsilon_2-DP between them (its
group minima R_t relative to the common S1 each move by at most Delta: the exponential
mechanism on a score of sensitivity Delta), ``topr`` is epsilon_2-DP always (Theorem 1 of
behdin2024), and the test bit is epsilon_1-DP (Laplace mechanism on a sensitivity-1 query). By
composition, P_D(E) <= e^(epsilon_1 + epsilon_2) P_D'(E). (b) Otherwise d(D) <= 0, so the test passes
on D with probability P(d(D) + L > tau) <= P(L > tau) = exp(-epsilon_1 tau) / 2 = delta, and

    P_D(E) <= P_D(pass) + P_D(fail) P_topr,D(E) <= delta + e^epsilon_1 P_D'(fail) e^epsilon_2 P_topr,D'(E)
           <= delta + e^(epsilon_1 + epsilon_2) P_D'(E).

(The test bit is released only through the output; outputting it as well changes nothing.) ∎

**The split** ``ptr_fraction`` (default 0.1). Passing the test needs d > tau, i.e.
epsilon_1 > log(1/(2 delta)) / d (13.1 / d at delta = 1e-6), and whatever epsilon_1 takes is lost
to both branches. On the NeurIPS 2025 design (configs/neurips2025.toml, epsilon = 1) d is only
7-23 at n = 3000-8000, so the test cannot pass with any useful split and the mechanism is
essentially ``topr`` at epsilon_2: the closed-form probability of exact recovery (3 trials per n)
was 0.011 / 0.81 / 1.00 at n = 3000 / 4000 / 5000 for a split of 0.1, against 0.001 / 0.05 / 0.84
for 0.3 and 0.000 / 0.001 / 0.02 for 0.5 (docs/methods/mistakes.md). A small split keeps the fallback almost
as strong as ``topr`` with the whole budget, and still lets ``mistakes`` run on clearly stable
data (d > 131 at epsilon = 1, delta = 1e-6, or at larger epsilon). Raise it when d is large
relative to log(1/(2 delta)) / epsilon.

Output probabilities are in closed form (:meth:`MistakesPTR.log_probs`): with
q = P(d + L > tau) the law of S is q P_mistakes(epsilon_2) + (1 - q) P_topr(epsilon_2).
Floating-point scores make g, hence d, exact only up to rounding (~1e-12 relative); a gap within
rounding of a multiple of 2 Delta is the only place this could matter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbench.api import (BatchLogProb, Draws, Param, Selector, UserInputError, check_epsilon,
                         toplist, uniform_supports)

from .mistakes import Mistakes, MistakesPrepared, exact_gap
from .topr import TopR, TopRPrepared, r_type


def stability_distance(gap: float, sensitivity: float) -> int:
    """d = ceil(g / (2 Delta)) - 1: rows that can be replaced while S1 provably stays the optimum.

    Parameters
    ----------
    gap : float
        g = R(S2) - R(S1) >= 0 (inf when there is only one support); a round-off negative
        value within 1e-9 (2 Delta) of 0 is a tie, g = 0.
    sensitivity : float
        Delta > 0, the score's sensitivity.

    Returns
    -------
    int
        >= -1; sensitivity 1 under replace-one (module docstring). ``sys.maxsize`` for g = inf.
    """
    # A tie (duplicated columns, e.g. duplicated microarray probes) is a gap of 0, computed as
    # R(S2) - R(S1) of two equal sums: round-off leaves about +-1e-16 relative. d depends only on
    # g / (2 Delta), so a negative g within 1e-9 of 2 Delta (seven orders above that round-off,
    # far below any step of d) is the tie it stands for: d = -1, the test fails, topr runs.
    if -1e-9 * 2.0 * sensitivity <= gap < 0:
        gap = 0.0
    if not gap >= 0:
        raise ValueError(f"gap = {gap} must be >= 0")
    if math.isinf(gap):
        return 2 ** 62
    return int(math.ceil(gap / (2.0 * sensitivity))) - 1


def ptr_threshold(epsilon1: float, delta: float) -> float:
    """tau = log(1 / (2 delta)) / epsilon_1, so that P(Laplace(1/epsilon_1) > tau) = delta.

    Raises
    ------
    UserInputError
        Unless 0 < delta < 1/2.
    """
    if not 0 < delta < 0.5:
        raise UserInputError(f"mistakes-ptr needs a run delta in (0, 1/2), got {delta}; give e.g. --delta 1e-6 (delta=1e-6 in Python)")
    return math.log(1.0 / (2.0 * delta)) / epsilon1


def log_pass_probability(d: int, tau: float, epsilon1: float) -> tuple[float, float]:
    """(log q, log(1 - q)) with q = P(d + L > tau), L ~ Laplace(0, 1/epsilon_1), exactly in log space."""
    z = epsilon1 * (d - tau)
    if z <= 0:
        lq = math.log(0.5) + z
        return lq, math.log1p(-math.exp(lq))
    l1q = math.log(0.5) - z
    return math.log1p(-math.exp(l1q)), l1q


@dataclass(frozen=True, eq=False)
class MistakesPTRPrepared:
    """The preparation of ``mistakes-ptr`` for one trial: those of its two branches and d.

    Attributes
    ----------
    mistakes : MistakesPrepared
    topr : TopRPrepared
    ok : bool
        Both branches have their law (an optimum S1 and a non-empty top-R list).
    d : int or None
        The stability distance d = ceil(g / (2 Delta)) - 1 (None when not ``ok``).
    certified : bool
        ``ok`` and both branches certified.
    boxed : bool
        ``ok``, the top-R list certified and the ``mistakes`` levels certified only up to their
        boxes but with the gap, hence d, exact: then the draws are certified when the boxes
        decide every ``mistakes`` draw (docs/methods/mistakes.md, exact draws from bounded level
        minima), and there is no closed-form law.
    """

    mistakes: MistakesPrepared
    topr: TopRPrepared
    ok: bool
    d: int | None
    certified: bool
    boxed: bool = False


class MistakesPTR(BatchLogProb, Selector):
    """Propose-test-release around ``mistakes`` with a ``topr`` fallback: (epsilon, delta)-DP always."""

    name = "mistakes-ptr"
    summary = ("mistakes behind propose-test-release on the stability of S1 (Laplace test of "
               "d = ceil(gap/2Delta) - 1), topr fallback; (eps, delta)-DP on every data set")
    dp_type = "approximate"
    source = ("Dwork & Lei 2009; Thakurta & Smith 2013 (propose-test-release); Prastakos, Behdin, "
                 "Mazumder 2025; docs/methods/mistakes.md")
    uses_oracle = True
    prepared_type = MistakesPTRPrepared
    prepared_version = 2  # 2: boxed level minima (MistakesPrepared.lower, MistakesPTRPrepared.boxed)
    params = {
        "ptr_fraction": Param(0.1, "share epsilon_1 / epsilon of the budget spent on the stability test", float,
                              interval=(0.0, 1.0, "neither")),
        "R": Param("auto", "topr list length of the fallback ('auto' = (p-s)s+2)", r_type),
        "solver": Param(None, "oracle backend (default: the run's --solver)", str),
        "node_limit": Param(toplist.SWAP_LEVEL_NODE_LIMIT, "work limit: branch-and-bound nodes per oracle call on the swap levels "
                            "(as in mistakes/topr; deterministic); a call that reaches it leaves the trial "
                            "uncertified", int),
    }

    def __init__(self, **params):
        super().__init__(**params)
        c = self.config
        oracle = {"node_limit": c["node_limit"], **({"solver": c["solver"]} if c["solver"] else {})}
        # the searched levels: the output law and the test's stability distance need the exact R_t
        self.mistakes = Mistakes(levels="searched", **oracle)
        self.topr = TopR(R=c["R"], **oracle)

    def _split(self, epsilon):
        eps = check_epsilon(epsilon)
        e1 = self.config["ptr_fraction"] * eps
        return e1, eps - e1

    def prepare(self, trial, rng):
        pm = self.mistakes.prepare(trial, rng)
        pt = self.topr.prepare(trial, rng)
        ok = pm.center is not None and pt.R > 0
        gap = exact_gap(pm)
        # d must be the exact stability distance: from boxed levels only when they fix the gap
        boxed = bool(ok and not pm.certified and gap is not None and pt.top.certified)
        d = stability_distance(gap if boxed else pm.gap, trial.sensitivity) if ok else None
        return MistakesPTRPrepared(pm, pt, ok, d, bool(ok and pm.certified and pt.top.certified), boxed)

    def _log_q(self, trial, prep, epsilon):
        e1, e2 = self._split(epsilon)
        tau = ptr_threshold(e1, trial.delta)
        return (*log_pass_probability(prep.d, tau, e1), tau, e1, e2)

    def log_probs(self, trial, prepared, epsilon, supports) -> np.ndarray:
        """Exact log-probabilities of a batch of supports (B, s): the mixture of the two branches."""
        lq, l1q, _, _, e2 = self._log_q(trial, prepared, epsilon)
        S = np.asarray(supports, dtype=np.int64)
        return np.logaddexp(lq + self.mistakes.log_probs(trial, prepared.mistakes, e2, S),
                            l1q + self.topr.log_probs(trial, prepared.topr, e2, S))

    def has_law(self, prepared):
        return prepared.ok and not prepared.boxed

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        prep = prepared
        if not prep.ok:
            return Draws(uniform_supports(rng, trial.p, trial.s, n_draws), certified=False,
                         diagnostics={"reason": "the oracle found no optimum"})
        lq, _, tau, e1, e2 = self._log_q(trial, prep, epsilon)
        # One independent test per draw: each draw is a separate run of the mechanism.
        passed = prep.d + rng.laplace(0.0, 1.0 / e1, size=n_draws) > tau
        supports = np.empty((n_draws, trial.s), dtype=np.int64)
        diag = {"d": int(prep.d), "gap_over_2delta": float(prep.mistakes.gap / (2 * trial.sensitivity)),
                "tau": tau, "epsilon_1": e1, "epsilon_2": e2, "p_pass": math.exp(lq),
                "passed": int(passed.sum())}
        certified = prep.certified
        for branch, sel, idx in (("mistakes", self.mistakes, np.flatnonzero(passed)),
                                 ("topr", self.topr, np.flatnonzero(~passed))):
            if idx.size:
                out = sel.draw(trial, getattr(prep, branch), e2, idx.size, rng)
                supports[idx] = out.supports
                if prep.boxed and branch == "mistakes":
                    diag["undecided_draws"] = out.diagnostics["undecided_draws"]
        if prep.boxed:  # certified when every mistakes draw is decided by the level boxes
            certified = diag.get("undecided_draws", 0) == 0
        ts = trial.problem.true_support
        if ts is not None and prep.certified:
            diag["p_true"] = float(np.exp(self.log_probs(trial, prep, epsilon, ts[None, :])[0]))
        if not certified:
            diag["reason"] = "an oracle call was not certified (time limit or error)"
            if prep.boxed:  # the level boxes left a mistakes draw undecided: which limit to raise
                diag["reason"] = prep.mistakes.reason or diag["reason"]
                if prep.mistakes.raise_limit is not None:
                    diag["raise_limit"] = dict(prep.mistakes.raise_limit)
        return Draws(supports, certified=certified, delta=trial.delta, diagnostics=diag)

