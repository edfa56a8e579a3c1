"""Selector ``laplace-topk``: one-shot Laplace report-noisy-top-s of |x_j^T y|.

Add independent ``Laplace(2 s Delta_f / eps)`` noise to every score ``f_j = |x_j^T y|`` once and
return the s largest (Qiao, Su & Zhang 2021, the one-shot mechanism). Pure eps-DP: noisy top-k
with Laplace scale ``2 k Delta / eps`` releases an eps-DP ordered top-k for scores whose
coordinates each move by at most Delta in either direction (Ding, Wang, Zhang & Kifer 2019,
noisy top-k; the scale ``k Delta / eps`` needs monotone scores). The pure calibration is what
the reference code ``dp_topk`` uses for its swap relation (sensitivity ``2k``); Qiao, Su &
Zhang's own theorem is the (eps, delta) calibration of order ``sqrt(k log(1/delta)) / eps``,
not offered here (pure DP only).

Sensitivity under replace-one: ``Delta_f = 2 b_x b_y`` per coordinate, and a replaced row can
move scores in both directions, hence the factor 2 (the source's add/remove counts have
Delta = 1 and are monotone).

Output law: ``P(S) = P(min_{i in S} Y_i > max_{j not in S} Y_j)``, a finite sum of integrals of
exponentials (:func:`dpbench.core.privacy.topk.laplace_top_k_log_prob`), evaluated for p <= 12
(None beyond).
"""

from dpbench.api import (Draws, LAPLACE_LAW_MAX_P, MarginalTopK, check_epsilon, hookimpl, laplace_top_k,
                         laplace_top_k_log_prob, set_log_prob, sorted_rows)


class LaplaceTopK(MarginalTopK):
    """One-shot Laplace noisy top-s on the marginal scores (pure eps-DP)."""

    name = "laplace-topk"
    summary = "one-shot Laplace noisy top-s of |x_j^T y|, scale 2 s Delta_f / eps (pure DP; Qiao, Su & Zhang 2021)"
    source = ("Qiao, Su & Zhang 2021 (one-shot top-k); Ding, Wang, Zhang & Kifer 2019 (pure-DP noisy "
                 "top-k calibration)")

    def _scale(self, trial, prepared, epsilon):
        return 2.0 * trial.s * prepared.sensitivity / check_epsilon(epsilon)

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        scale = self._scale(trial, prepared, epsilon)
        ordered = laplace_top_k(rng, prepared.scores, trial.s, scale, n_draws)
        return Draws(sorted_rows(ordered), diagnostics={"sensitivity": prepared.sensitivity, "noise_scale": scale})

    def log_prob(self, trial, prepared, epsilon, support):
        """Exact log P(S) for p <= 12 (closed-form piecewise integrals); None otherwise."""
        scale = self._scale(trial, prepared, epsilon)
        return set_log_prob(trial, support, lambda S: laplace_top_k_log_prob(prepared.scores, S, scale),
                            LAPLACE_LAW_MAX_P)


@hookimpl
def dpbench_selectors():
    return [LaplaceTopK]
