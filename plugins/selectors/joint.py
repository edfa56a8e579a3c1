"""Selector ``joint``: the joint exponential mechanism for top-s (Gillenwater et al. 2022).

One exponential mechanism over all p!/(p-s)! *sequences* of s distinct features (Gillenwater,
Joseph, Medina & Ribero Diaz 2022). With the scores ``f_j = |x_j^T y|`` sorted
decreasingly, ``g_1 >= ... >= g_p``, a sequence has utility

    u(s_1..s_s) = - max_i (g_i - f_{s_i}),      P(sequence) ∝ exp( eps u / (2 Delta_u) ),

and the output is its set. Sequences are grouped by their utility and the position that
attains it, which are counted in closed form (lemma 3.7 of the source;
:func:`dpbench.core.privacy.joint_topk.joint_table`): O(s^2 p log p) once per trial in ``prepare``, then
O(s^2 p) per draw. Pure eps-DP.

Sensitivity under replace-one: ``Delta_u = 2 Delta_f = 4 b_x b_y``. Each sorted score g_i and
each f_j moves by at most ``Delta_f`` (sorting is 1-Lipschitz in the sup-norm), but in
opposite directions, so a gap moves by up to ``2 Delta_f``. The source's counts under
add/remove move the same way, so there ``Delta_u = 1`` (and 2 for its swap relation, the case
matching ours). The source rounds gaps of integer counts and separates ties with
data-independent offsets; here the scores are real and ties are counted exactly.

Output law: the sum over the s! orders of the set of ``exp(eps u / (2 Delta_u)) / Z``, exact
for s <= 8 and any p (:func:`dpbench.core.privacy.joint_topk.joint_log_prob`).
"""

from dataclasses import dataclass, field

import numpy as np

from dpbench.api import (Draws, EpsilonCache, MarginalTopK, check_epsilon, hookimpl, joint_log_normaliser,
                         joint_log_prob, joint_sample, joint_table, marginal_scores, set_log_prob, sorted_rows)


@dataclass(frozen=True, eq=False)
class JointPrepared:
    """The preparation of ``joint`` for one trial (epsilon-independent).

    Attributes
    ----------
    scores : ndarray of shape (p,), float64
        ``|x_j^T y|`` on the clipped data.
    sensitivity : float
        ``Delta_u = 2 Delta_f = 4 b_x b_y``, the sensitivity of the utility.
    order : ndarray of shape (p,), int64
        Features by decreasing score.
    gaps : ndarray of shape (V,), float64
        The distinct values v of ``max_i (g_i - f_{s_i})``.
    a, b : ndarray of shape (s, V), int64
        Prefix lengths of the sorted order allowed at each position (``< v`` and ``<= v``).
    log_count : ndarray of shape (V, s), float64
        log of the number of sequences with maximal gap v first attained at position i*.
    log_z : EpsilonCache
        The log normaliser per epsilon.
    """

    scores: np.ndarray
    sensitivity: float
    order: np.ndarray
    gaps: np.ndarray
    a: np.ndarray
    b: np.ndarray
    log_count: np.ndarray
    log_z: EpsilonCache = field(default_factory=EpsilonCache, repr=False)

    def table(self):
        return {"order": self.order, "gaps": self.gaps, "a": self.a, "b": self.b, "log_count": self.log_count}


class JointEM(MarginalTopK):
    """Joint exponential mechanism over sequences of s features (pure eps-DP)."""

    name = "joint"
    summary = "joint exponential mechanism over sequences of s features of |x_j^T y| (pure DP; Gillenwater et al. 2022)"
    source = "Gillenwater, Joseph, Medina & Ribero Diaz 2022 (lemma 3.7: sequence counts)"
    prepared_type = JointPrepared

    def prepare(self, trial, rng):
        base = marginal_scores(trial)
        t = joint_table(base.scores, trial.s)
        return JointPrepared(base.scores, 2.0 * base.sensitivity, t["order"], t["gaps"], t["a"], t["b"],
                             t["log_count"])

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        eps = check_epsilon(epsilon)
        seq = joint_sample(rng, prepared.table(), eps, prepared.sensitivity, n_draws)
        return Draws(sorted_rows(seq), diagnostics={"sensitivity": prepared.sensitivity})

    def log_prob(self, trial, prepared, epsilon, support):
        """Exact log P(S): the sum over the s! orders (None for s > 8)."""
        eps, sens, table = check_epsilon(epsilon), prepared.sensitivity, prepared.table()
        log_z = prepared.log_z(eps, sens, lambda: joint_log_normaliser(table, eps, sens))
        return set_log_prob(trial, support, lambda S: joint_log_prob(prepared.scores, table, S, eps, sens, log_z))


@hookimpl
def dpbench_selectors():
    return [JointEM]
