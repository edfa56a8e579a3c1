"""Selector ``peeling``: s rounds of the exponential mechanism on |x_j^T y| (one-shot Gumbel).

Peeling (Dwork, Su & Zhang 2021, algorithm "peeling"; Durfee & Rogers 2019, one-shot Gumbel):
in round t = 1..s, draw one feature j not yet chosen with

    P(j) ∝ exp( (eps / s) f_j / (2 Delta_f) ),      f_j = |x_j^T y| on the clipped data,

and remove it. Each round is (eps/s)-DP, so the s rounds are eps-DP by basic composition
(pure DP). Adding i.i.d. Gumbel noise of scale ``2 s Delta_f / eps`` to f once and keeping the
s largest has exactly the same law (Durfee & Rogers 2019); that is how ``draw``
samples.

Sensitivity under replace-one: ``Delta_f = 2 b_x b_y`` per coordinate (a replaced row changes
``x_j^T y`` by ``x_nj y_n - x'_nj y'_n``). The scores are not monotone under replace-one, so
the exponential mechanism keeps its factor 1/2 (the sources' count data under add/remove are
monotone and use ``exp(eps' c / Delta)``; the reference code divides eps' by 2 for
non-monotone scores, as here). An (eps, delta) calibration of the rounds (advanced or
zCDP composition) is not offered: this selector is pure eps-DP only.

Output law: ``P(S) = sum over the s! orders of S of prod_t w_{j_t} / sum_{i not yet drawn} w_i``
(:func:`dpbench.core.privacy.topk.peeling_log_prob`), exact for s <= 8 and any p; it is the exact
exponential mechanism over features when s = 1.
"""

from dpbench.api import (Draws, MarginalTopK, check_epsilon, gumbel_top_k, hookimpl, peeling_log_prob,
                         set_log_prob, sorted_rows)


class Peeling(MarginalTopK):
    """Peeling exponential mechanism (one-shot Gumbel) on the marginal scores (pure eps-DP)."""

    name = "peeling"
    summary = "peeling: s exponential-mechanism rounds on |x_j^T y| as one-shot Gumbel top-s (pure DP; Dwork, Su & Zhang 2021)"
    source = ("Dwork, Su & Zhang 2021 (peeling); Durfee & Rogers 2019 (one-shot Gumbel); "
                 "McSherry & Talwar 2007")

    def _log_weights(self, trial, prepared, epsilon):
        eps_round = check_epsilon(epsilon) / trial.s
        return eps_round * prepared.scores / (2.0 * prepared.sensitivity)

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        ordered = gumbel_top_k(rng, self._log_weights(trial, prepared, epsilon), trial.s, n_draws)
        return Draws(sorted_rows(ordered), diagnostics={
            "sensitivity": prepared.sensitivity,
            "noise_scale": 2.0 * prepared.sensitivity * trial.s / epsilon,  # Gumbel scale, score units
        })

    def log_prob(self, trial, prepared, epsilon, support):
        """Exact log P(S): the sum over the s! orders of S (None for s > 8)."""
        lw = self._log_weights(trial, prepared, epsilon)
        return set_log_prob(trial, support, lambda S: peeling_log_prob(lw, S))


@hookimpl
def dpbench_selectors():
    return [Peeling]
