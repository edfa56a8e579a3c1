"""Selector ``exhaustive``: the exponential mechanism over all C(p, s) supports.

docs/methods/exponential-mechanism.md (McSherry & Talwar 2007):  P(S) ∝ exp(-epsilon R(S, D) / (2 Delta)).
Pure epsilon-DP under replace-one neighbours because |R(S, D) - R(S, D')| <= Delta.

Supports are streamed in chunks, so memory does not grow with C(p, s). Sampling is exact
and hierarchical: a first pass computes the log-mass of every chunk; each draw picks a
chunk from those masses and then a support inside it, rescoring only the chunks that were
picked. When C(p, s) is small the scores are cached by ``prepare`` and reused across draws
and epsilons. It is the ground truth the other exponential-mechanism selectors are tested
against.
"""

from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from dpbench.api import (BatchLogProb, Draws, EpsilonCache, EXPONENTIAL_MECHANISM, Param, Selector,
                         UserInputError, em_log_weights, hookimpl, iter_supports, n_supports,
                         sample_log_weights, unrank_support)


@dataclass(frozen=True, eq=False)
class ExhaustivePrepared:
    """The preparation of ``exhaustive`` for one trial.

    Attributes
    ----------
    total : int
        C(p, s), the number of supports.
    scores : ndarray of shape (total,), float64, or None
        R(S, D) of every support in colexicographic rank order (:func:`dpbench.core.supports.unrank_support`)
        when C(p, s) is at most the ``cache`` parameter; None otherwise (scores are streamed).
    log_z : EpsilonCache
        log Z(ε) = log sum_S exp(-ε R(S, D) / (2 Δ)) per ε (docs/methods/exponential-mechanism.md).
    """

    total: int
    scores: np.ndarray | None
    log_z: EpsilonCache = field(default_factory=EpsilonCache, repr=False)


class Exhaustive(BatchLogProb, Selector):
    """Exact exponential mechanism by enumeration (pure epsilon-DP, replace-one)."""

    name = "exhaustive"
    summary = "exponential mechanism over all C(p,s) supports, exact sampling and probabilities"
    dp_type = "pure"
    source = "McSherry & Talwar 2007; docs/methods/exponential-mechanism.md"
    output_law = EXPONENTIAL_MECHANISM
    prepared_type = ExhaustivePrepared
    params = {
        "limit": Param(20_000_000, "refuse problems with more than this many supports C(p,s)", int),
        "chunk": Param(200_000, "supports scored per chunk (memory ~ chunk * s^2 * 24 bytes)", int),
        "cache": Param(5_000_000, "keep all scores in memory when C(p,s) is at most this", int),
    }

    def check_setting(self, p, s):
        total = n_supports(p, s)
        if total > self.config["limit"]:
            raise UserInputError(
                f"exhaustive: C({p}, {s}) = {total:,} supports exceeds the limit of "
                f"{self.config['limit']:,}; lower p or s, or raise it with --param exhaustive.limit={total}")

    def prepare(self, trial, rng):
        p, s = trial.p, trial.s
        self.check_setting(p, s)
        total = n_supports(p, s)
        scores = None
        if total <= self.config["cache"]:
            scores = np.concatenate([trial.score(chunk) for chunk in self._chunks(p, s)])
        return ExhaustivePrepared(total, scores)

    def save_prepared(self, prepared):
        """The scores of all C(p, s) supports (see Selector.save_prepared); None when not cached."""
        if prepared.scores is None:
            return None  # nothing expensive was done: recomputing is as cheap as loading
        return super().save_prepared(prepared)

    def _chunks(self, p, s):
        return iter_supports(p, s, chunk_size=self.config["chunk"])

    def _log_weights(self, trial, scores, epsilon):
        return em_log_weights(scores, epsilon, trial.sensitivity)

    def log_normaliser(self, trial, prepared, epsilon):
        """log Z = log of sum_S exp(-epsilon R(S) / (2 Delta)) over all supports (streamed, cached per epsilon)."""
        def log_z():
            if prepared.scores is not None:
                return float(logsumexp(self._log_weights(trial, prepared.scores, epsilon)))
            return float(logsumexp(self._chunk_masses(trial, epsilon)[0]))
        return prepared.log_z(epsilon, trial.sensitivity, log_z)

    def _chunk_masses(self, trial, epsilon):
        masses, sizes = [], []
        for chunk in self._chunks(trial.p, trial.s):
            masses.append(logsumexp(self._log_weights(trial, trial.score(chunk), epsilon)))
            sizes.append(len(chunk))
        return np.array(masses), np.array(sizes)

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        p, s = trial.p, trial.s
        if prepared.scores is not None:
            lw = self._log_weights(trial, prepared.scores, epsilon)
            ranks = sample_log_weights(rng, lw, n_draws)
            supports = np.array([unrank_support(int(k), p, s) for k in ranks]).reshape(n_draws, s)
            return Draws(supports)
        # Two passes over the stream: chunk log-masses, then a draw inside each picked chunk.
        masses, _ = self._chunk_masses(trial, epsilon)
        prepared.log_z(epsilon, trial.sensitivity, lambda: float(logsumexp(masses)))
        picked = sample_log_weights(rng, masses, n_draws)
        order = np.argsort(picked, kind="stable")
        supports = np.empty((n_draws, s), dtype=np.int64)
        want = iter(order)
        nxt = next(want, None)
        for j, chunk in enumerate(self._chunks(p, s)):
            if nxt is None:
                break
            lw = None
            while nxt is not None and picked[nxt] == j:
                if lw is None:
                    lw = self._log_weights(trial, trial.score(chunk), epsilon)
                supports[nxt] = chunk[sample_log_weights(rng, lw, 1)[0]]
                nxt = next(want, None)
        return Draws(supports)

    def log_probs(self, trial, prepared, epsilon, supports) -> np.ndarray:
        """log P(S) = -epsilon R(S, D) / (2 Delta) - log Z for sorted supports (B, s) (docs/methods/exponential-mechanism.md)."""
        return self._log_weights(trial, trial.score(supports), epsilon) - self.log_normaliser(trial, prepared, epsilon)


@hookimpl
def dpbench_selectors():
    return [Exhaustive]
