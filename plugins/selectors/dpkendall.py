"""Selector ``dpkendall``: Kendall-tau feature scores with greedy decorrelation, by peeling.

DPKendall (Dick, Gillenwater, Joseph & Medina 2023). With
``c_j = (n / 2) |tau(x_j, y)|`` and the features ``j_1 .. j_{t-1}`` chosen so far, round
t = 1..s draws one feature j not yet chosen by the exponential mechanism with budget eps/s on

    score_t(j) = (n / 2) |tau(x_j, y)|  -  1/(t-1) sum_{u < t} (n / 2) |tau(x_j, x_{j_u})|

(the second term is 0 in round 1): a feature is rewarded for its rank correlation with the
response and penalised for its rank correlation with the features already chosen.
``P(j) ∝ exp( (eps / s) score_t(j) / (2 Delta_t) )``; pure eps-DP by basic composition.

Kendall's tau is ``tau_a = K / C(n, 2)``, ``K = sum_{i<l} sgn(a_i - a_l) sgn(b_i - b_l)`` with
ties scored 0 (:mod:`dpbench.core.score.kendall`), so ``(n / 2) tau_a = K / (n - 1)``.

Sensitivity under replace-one (n fixed): a replaced row changes the n - 1 pair terms it
belongs to, each by at most 2, so ``K / (n - 1)`` moves by at most 2; ``|.|`` is 1-Lipschitz
and an average of such terms moves by at most 2 as well. Hence ``Delta_1 = 2`` and
``Delta_t = 4`` for t >= 2. The source states 3/2 and 3 for add/remove (where n changes too);
its reference code uses scipy's tau-b, which coincides with tau-a only without ties -- tau-b's
data-dependent normaliser has no such bound, so dpbench uses tau-a. The scores are not
monotone, hence the factor 2 in the exponent.

Preprocessing: none -- ranks are bounded whatever the data, so no clipping is needed (the
guarantee holds on the raw data). ``prepare`` ranks every column once (epsilon-independent,
O(p n log n)); a draw computes ``tau(., x_j)`` against all features for each chosen j (a
compiled merge sort, O(p n log n)), memoised per feature across draws and epsilons.

Output law: the sum over the s! orders of the set of the product of the round probabilities
(exact, s <= 8; :meth:`DPKendall.log_prob`).
"""

import itertools
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from dpbench.api import (Draws, KendallRanks, Memo, Selector, UserInputError, check_epsilon, check_k,
                         concordance, gumbel_argmax, hookimpl, kendall_ranks, set_log_prob, strict_ranks)

#: Feature rows kept in the memo of a preparation (each p floats).
_MEMO_ROWS = 256
#: Draws x features per block of the vectorised rounds.
_BLOCK_ELEMENTS = 2_000_000


@dataclass(frozen=True, eq=False)
class DPKendallPrepared:
    """The epsilon-independent preparation of ``dpkendall`` for one trial.

    Attributes
    ----------
    ranks : KendallRanks
        Strict ranks of every column of X, shape (p, n), both tie-breaks.
    label_scores : ndarray of shape (p,), float64
        ``(n / 2) |tau_a(x_j, y)| = |K(x_j, y)| / (n - 1)``.
    rows : Memo
        Feature index j -> ``(n / 2) |tau_a(x_., x_j)|``, shape (p,): filled by draws.
    """

    ranks: KendallRanks
    label_scores: np.ndarray
    rows: Memo = field(default_factory=Memo, repr=False)


class DPKendall(Selector):
    """DPKendall: rank-correlation scores, greedy decorrelation, peeling (pure eps-DP)."""

    name = "dpkendall"
    summary = ("DPKendall: Kendall-tau scores with greedy decorrelation, s exponential-mechanism rounds "
               "(pure DP; Dick, Gillenwater, Joseph & Medina 2023)")
    dp_type = "pure"
    preprocessing = "none"
    losses = ("least-squares",)
    source = ("Dick, Gillenwater, Joseph & Medina 2023 (DPKendall); Kendall's tau-a; "
                 "Knight 1966 (merge-sort count)")
    prepared_type = DPKendallPrepared
    #: Sensitivities of the round scores under replace-one, in units of (n / 2) tau (module docstring).
    sensitivity_first = 2.0
    sensitivity_later = 4.0

    def check_setting(self, p, s):
        check_k(p, s)

    def prepare(self, trial, rng):
        X = np.asarray(trial.problem.X, dtype=np.float64)
        y = np.asarray(trial.problem.y, dtype=np.float64)
        n = X.shape[0]
        if n < 2:
            raise UserInputError(f"dpkendall needs at least 2 rows for Kendall's tau (got n = {n})")
        ranks = kendall_ranks(X)
        label = np.abs(concordance(strict_ranks(y), strict_ranks(y, True), ranks)) / (n - 1)
        return DPKendallPrepared(ranks, label)

    def save_prepared(self, prepared):
        """Not stored: the ranks are 2 p n int32 values and recomputing them costs O(p n log n)."""
        return None

    def _row(self, prepared, j):
        """``(n / 2) |tau_a(x_., x_j)|`` of every feature against feature j (memoised)."""
        if j not in prepared.rows:
            if len(prepared.rows) >= _MEMO_ROWS:
                prepared.rows.clear()  # every entry is recomputable: clearing changes no output
            r = prepared.ranks
            n = r.up.shape[1]
            prepared.rows[j] = np.abs(concordance(r.up[j], r.down[j], r)) / (n - 1)
        return prepared.rows[j]

    def _round_log_weights(self, prepared, chosen, eps_round):
        """log-weights of round t = len(chosen) + 1 over all features (chosen ones -inf)."""
        score = prepared.label_scores
        sens = self.sensitivity_first
        if chosen:
            score = score - np.mean([self._row(prepared, j) for j in chosen], axis=0)
            sens = self.sensitivity_later
        lw = eps_round * score / (2.0 * sens)
        lw[list(chosen)] = -np.inf
        return lw

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        eps_round = check_epsilon(epsilon) / trial.s
        p, s = trial.p, trial.s
        out = np.empty((n_draws, s), dtype=np.int64)
        step = max(1, _BLOCK_ELEMENTS // p)
        for a in range(0, n_draws, step):  # all draws of a block advance one round at a time
            b = min(n_draws, a + step)
            idx = np.arange(b - a)
            penalty = np.zeros((b - a, p))  # sum of (n/2)|tau(x_., x_j)| over the chosen j
            taken = np.zeros((b - a, p), dtype=bool)
            for t in range(s):
                if t:
                    for j in np.unique(out[a:b, t - 1]):
                        penalty[out[a:b, t - 1] == j] += self._row(prepared, int(j))
                    sens = self.sensitivity_later
                    score = prepared.label_scores - penalty / t
                else:
                    sens = self.sensitivity_first
                    score = np.broadcast_to(prepared.label_scores, (b - a, p))
                lw = eps_round * score / (2.0 * sens)
                lw = np.where(taken, -np.inf, lw)
                out[a:b, t] = gumbel_argmax(rng, lw, axis=1)  # one exponential-mechanism draw per row
                taken[idx, out[a:b, t]] = True
        return Draws(np.sort(out, axis=1), diagnostics={"sensitivity_first": self.sensitivity_first,
                                                        "sensitivity_later": self.sensitivity_later})

    def log_prob(self, trial, prepared, epsilon, support):
        """Exact log P(S): sum over the s! orders of the product of round probabilities (s <= 8)."""
        eps_round = check_epsilon(epsilon) / trial.s

        def law(S):
            terms = []
            for order in itertools.permutations(S.tolist()):
                total = 0.0
                for t, j in enumerate(order):
                    lw = self._round_log_weights(prepared, list(order[:t]), eps_round)
                    total += lw[j] - logsumexp(lw)
                terms.append(total)
            return float(logsumexp(terms))

        return set_log_prob(trial, support, law)


@hookimpl
def dpbench_selectors():
    return [DPKendall]
