"""Selector ``exhaustive``: the exponential mechanism over all C(p, s) supports.

design.md 4.1 (McSherry & Talwar 2007):  P(S) ∝ exp(-epsilon R(S, D) / (2 Delta)).
Pure epsilon-DP under replace-one neighbours because |R(S, D) - R(S, D')| <= Delta.

Supports are streamed in chunks, so memory does not grow with C(p, s). Sampling is exact
and hierarchical: a first pass computes the log-mass of every chunk; each draw picks a
chunk from those masses and then a support inside it, rescoring only the chunks that were
picked. When C(p, s) is small the scores are cached by ``prepare`` and reused across draws
and epsilons. It is the ground truth the other exponential-mechanism selectors are tested
against.
"""

import numpy as np
from scipy.special import logsumexp

from dpbench import Draws, Param, Selector, UserInputError, hookimpl
from dpbench.base import EXPONENTIAL_MECHANISM, Memo
from dpbench.supports import iter_supports, n_supports, unrank_support
from dpbench.privacy.exponential import em_log_weights, sample_log_weights


class Exhaustive(Selector):
    """Exact exponential mechanism by enumeration (pure epsilon-DP, replace-one)."""

    name = "exhaustive"
    summary = "exponential mechanism over all C(p,s) supports, exact sampling and probabilities"
    dp_type = "pure"
    reference = "McSherry & Talwar 2007; design.md 4.1"
    output_law = EXPONENTIAL_MECHANISM
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
        return {"total": total, "scores": scores, "logz": Memo()}  # log Z per epsilon

    def save_prepared(self, prepared):
        """The scores of all C(p, s) supports (see Selector.save_prepared); None when not cached."""
        if prepared["scores"] is None:
            return None  # nothing expensive was done: recomputing is as cheap as loading
        return {"total": int(prepared["total"]), "scores": np.asarray(prepared["scores"], dtype=np.float64)}

    def load_prepared(self, state):
        return {"total": state["total"], "scores": state["scores"], "logz": Memo()}

    def _chunks(self, p, s):
        return iter_supports(p, s, chunk_size=self.config["chunk"])

    def _log_weights(self, trial, scores, epsilon):
        return em_log_weights(scores, epsilon, trial.sensitivity)

    def log_normaliser(self, trial, prepared, epsilon):
        """log of sum_S exp(-epsilon R(S) / (2 Delta)) over all supports (streamed, cached per epsilon)."""
        if epsilon not in prepared["logz"]:
            if prepared["scores"] is not None:
                prepared["logz"][epsilon] = float(logsumexp(self._log_weights(trial, prepared["scores"], epsilon)))
            else:
                masses = self._chunk_masses(trial, epsilon)[0]
                prepared["logz"][epsilon] = float(logsumexp(masses))
        return prepared["logz"][epsilon]

    def _chunk_masses(self, trial, epsilon):
        masses, sizes = [], []
        for chunk in self._chunks(trial.p, trial.s):
            masses.append(logsumexp(self._log_weights(trial, trial.score(chunk), epsilon)))
            sizes.append(len(chunk))
        return np.array(masses), np.array(sizes)

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        p, s = trial.p, trial.s
        if prepared["scores"] is not None:
            lw = self._log_weights(trial, prepared["scores"], epsilon)
            ranks = sample_log_weights(rng, lw, n_draws)
            supports = np.array([unrank_support(int(k), p, s) for k in ranks]).reshape(n_draws, s)
            return Draws(supports)
        # Two passes over the stream: chunk log-masses, then a draw inside each picked chunk.
        masses, _ = self._chunk_masses(trial, epsilon)
        prepared["logz"][epsilon] = float(logsumexp(masses))
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

    def log_prob(self, trial, prepared, epsilon, support):
        support = np.sort(np.asarray(support, dtype=np.int64))
        lw = self._log_weights(trial, trial.score(support[None, :]), epsilon)[0]
        return float(lw - self.log_normaliser(trial, prepared, epsilon))


@hookimpl
def dpbench_selectors():
    return [Exhaustive]
