"""Selector ``pnf``: permute-and-flip peeling on |x_j^T y| (McKenna & Sheldon 2020).

Round t = 1..s runs permute-and-flip with budget eps/s over the features not yet chosen
(McKenna & Sheldon 2020): with ``q* = max f`` over them, visit them in a uniformly
random order and return the first j whose coin with probability
``exp( (eps / s) (f_j - q*) / (2 Delta_f) )`` comes up heads. Each round is (eps/s)-DP (theorem
1 of the source), the s rounds eps-DP by basic composition: pure DP. A round is sampled as
report-noisy-max with exponential noise of mean ``2 s Delta_f / eps``, which has exactly the
same law (Ding, Kifer, Steinke, Wang, Xiao & Zhang 2021) -- the implementation the
source's reference code uses too.

Sensitivity under replace-one: ``Delta_f = 2 b_x b_y`` per coordinate, scores not monotone,
hence ``2 Delta_f`` in the flip probability (the source's counts under add/remove are monotone
and use ``exp(eps (q - q*) / Delta)``; the reference code's exponential scale ``k / eps`` is that
monotone case with Delta = 1).

Output law: per round ``P(r) = a_r int_0^1 prod_{j != r} (1 - t a_j) dt`` with the flip
probabilities a (:func:`dpbench.core.privacy.topk.pnf_peeling_log_prob`), summed over the s! orders
of the set; evaluated exactly for p <= 400 and s <= 8, None beyond.
"""

from dpbench.api import (Draws, MarginalTopK, PNF_LAW_MAX_P, exponential_noise_peeling, hookimpl,
                         pnf_peeling_log_prob, scale_for, set_log_prob, sorted_rows)


class PermuteAndFlip(MarginalTopK):
    """Permute-and-flip peeling on the marginal scores (pure eps-DP)."""

    name = "pnf"
    summary = "permute-and-flip peeling: s rounds on |x_j^T y|, eps/s each (pure DP; McKenna & Sheldon 2020)"
    source = ("McKenna & Sheldon 2020 (permute-and-flip); Ding, Kifer, Steinke, Wang, Xiao & "
                 "Zhang 2021 (exponential-noise form)")

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        scale = scale_for(epsilon, prepared.sensitivity, trial.s)
        ordered = exponential_noise_peeling(rng, prepared.scores, trial.s, scale, n_draws)
        return Draws(sorted_rows(ordered), diagnostics={"sensitivity": prepared.sensitivity, "noise_scale": scale})

    def log_prob(self, trial, prepared, epsilon, support):
        """Exact log P(S) for p <= 400 and s <= 8; None otherwise."""
        scale = scale_for(epsilon, prepared.sensitivity, trial.s)
        return set_log_prob(trial, support, lambda S: pnf_peeling_log_prob(prepared.scores, S, scale), PNF_LAW_MAX_P)


@hookimpl
def dpbench_selectors():
    return [PermuteAndFlip]
