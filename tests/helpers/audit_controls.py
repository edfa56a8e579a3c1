"""Controls for the privacy audit: selectors that are NOT what they claim (test fixtures only).

Each one states a guarantee it does not have, through the public selector contract, so that
``dpbench audit`` (and :func:`dpbench.testing.audit_selector`) must catch it. They are never
registered as plugins; tests register them in a private registry for the command line.

* ``em-half-sensitivity``: the exponential mechanism calibrated to Δ/2 (a sensitivity that
  counted a bound once too few) — exact law, so exact mode;
* ``dpsis-literal``: DP-SIS with the literal (overlapping) utility classes of Swope et al. 2024,
  definition A.2 read as |C_{h,t}| = C(t-h-1, k-h-1) — exact mode (its law by quadrature);
* ``sampagg-half-noise``: Samp-Agg with half the Laplace scale s/(m ε) — Monte-Carlo mode;
* ``mistakes-claims-pure``: ``mistakes`` claiming pure ε also when its gap condition failed —
  exact mode (loss 1.5–2.35 ε where the optimum flips, docs/methods/mistakes.md);
* ``reference-reader``: returns the non-private optimum half the time — Monte-Carlo mode.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import simpson
from scipy.special import logsumexp

from dpbench.api import Draws, Selector
from dpbench.core.privacy.lipschitz import sample_members, select_class, utility_classes
from dpbench.core.supports import iter_supports, log_binom, uniform_supports
from dpbench_plugins.selectors.dpsis import DPSIS
from dpbench_plugins.selectors.swaps.mistakes import Mistakes
from dpbench_plugins.selectors.sampagg import SampAgg


def scored_supports(trial):
    """Every support (lexicographic) and its score R(S, D) on the trial."""
    S = np.concatenate(list(iter_supports(trial.p, trial.s)))
    return S, trial.score(S)


class HalfSensitivityEM(Selector):
    """P(S) ∝ exp(-ε R(S, D) / (2 · Δ/2)): twice the ε it claims on the worst pairs."""

    name = "em-half-sensitivity"
    summary = "control: exponential mechanism with half the sensitivity"
    dp_type = "pure"

    def prepare(self, trial, rng):
        return scored_supports(trial)

    def _lp(self, trial, prepared, epsilon):
        S, scores = prepared
        lw = -epsilon * scores / trial.sensitivity  # 2 * (Delta / 2)
        return S, lw - logsumexp(lw)

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        S, lp = self._lp(trial, prepared, epsilon)
        return Draws(S[rng.choice(len(S), size=n_draws, p=np.exp(lp))])

    def log_prob(self, trial, prepared, epsilon, support):
        S, lp = self._lp(trial, prepared, epsilon)
        hit = np.flatnonzero((S == np.sort(np.asarray(support))).all(axis=1))
        return float(lp[hit[0]]) if hit.size else -np.inf


class LiteralDPSIS(DPSIS):
    """DP-SIS with the overlapping classes: body from ranks h..t-2, |C_{h,t}| = C(t-h-1, k-h-1).

    Its law is a finite mixture over the classes: class c wins with probability
    ``∫ f_c(z) Π_{c' != c} F_{c'}(u_c + z - u_{c'}) dz`` (noise of class c: the maximum of m_c
    Exp(1) variables, F(z) = (1 - e^-z)^m), then each of its m_c members is equally likely.
    One-dimensional quadrature (Simpson's rule, 6 000 nodes) gives it, so the audit runs in exact mode.
    """

    name = "dpsis-literal"
    summary = "control: DP-SIS with the literal overlapping classes"

    @staticmethod
    def _log_m(d, k):
        h, t, _ = utility_classes(d, k)
        lm = log_binom(t - h - 1, k - h - 1)
        lm[0] = 0.0
        return h, t, lm

    def log_prob(self, trial, prepared, epsilon, support):
        d, k = trial.p, trial.s
        h, t, lm = self._log_m(d, k)
        key = (prepared.x_sorted.tobytes(), float(epsilon))
        cache = self.__dict__.setdefault("_wins", {})
        if key not in cache:
            cache.clear()
            cache[key] = self._class_probs(prepared.x_sorted, h, t, lm, epsilon)
        win, m = cache[key], np.exp(lm)
        rank = np.empty(d, dtype=np.int64)
        rank[prepared.order] = np.arange(d)
        r = np.sort(rank[np.asarray(support)])
        total = 0.0
        for c in range(len(win)):
            hc, tc = int(h[c]), int(t[c])
            rest = set(r.tolist()) - set(range(hc)) - {tc - 1}
            if set(range(hc)) <= set(r.tolist()) and tc - 1 in r and len(rest) == k - hc - 1 \
                    and all(hc <= v <= tc - 2 for v in rest):
                total += win[c] / m[c]
        return float(np.log(total)) if total > 0 else -np.inf

    def _class_probs(self, x, h, t, lm, epsilon):
        m = np.exp(lm)
        gamma = self.config["gamma"]
        u = 0.5 * gamma * epsilon * x[t - 1] - 0.5 * (1 - gamma) * epsilon * x[h]
        # Simpson's rule on a fine grid (the integrand is smooth and decays like e^-z)
        z = np.linspace(0.0, 40.0 + np.ptp(u), 6001)[1:]
        w = u[:, None, None] + z[None, None, :] - u[None, :, None]  # (winner c, other c', z)
        with np.errstate(divide="ignore"):
            log_cdf = np.where(w > 0, m[None, :, None] * np.log1p(-np.exp(-np.maximum(w, 1e-300))), -np.inf)
        K = len(u)
        log_cdf[np.arange(K), np.arange(K)] = 0.0
        log_f = lm[:, None] - z[None, :] + (m[:, None] - 1) * np.log1p(-np.exp(-z))[None, :]
        win = simpson(np.exp(log_f + log_cdf.sum(axis=1)), x=z, axis=1)
        return win / win.sum()

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        k = trial.s
        h, t, lm = self._log_m(trial.p, k)
        cls = select_class(rng, prepared.x_sorted, k, epsilon, self.config["gamma"], n_draws, log_m=lm)
        out = np.empty((n_draws, k), dtype=np.int64)
        for c in np.unique(cls):
            rows = np.flatnonzero(cls == c)
            hc, tc = int(h[c]), int(t[c])
            ranks = np.empty((rows.size, k), dtype=np.int64)
            ranks[:, :hc] = np.arange(hc)
            ranks[:, k - 1] = tc - 1
            if tc > k and k - hc - 1 > 0:
                keys = rng.random((rows.size, tc - 1 - hc))
                ranks[:, hc:k - 1] = np.argsort(keys, axis=1)[:, :k - hc - 1] + hc
            out[rows] = np.sort(prepared.order[ranks], axis=1)
        return Draws(out)


class HalfNoiseSampAgg(SampAgg):
    """Samp-Agg whose Laplace noise has half the scale 2s/(m ε) its ε needs."""

    name = "sampagg-half-noise"
    summary = "control: Samp-Agg with half the Laplace scale"

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        return Draws(super().draw(trial, prepared, 2 * epsilon, n_draws, rng).supports)


class MistakesClaimsPure(Mistakes):
    """``mistakes`` that claims pure ε whether or not its gap condition held."""

    name = "mistakes-claims-pure"
    summary = "control: mistakes without its gap condition, claiming pure DP"

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        d = super().draw(trial, prepared, epsilon, n_draws, rng)
        d.no_guarantee = None
        return d


class ReferenceReader(Selector):
    """Returns the non-private optimum (the reference support on real data) with probability 1/2."""

    name = "reference-reader"
    summary = "control: leaks the reference support"
    dp_type = "pure"

    def prepare(self, trial, rng):
        S, scores = scored_supports(trial)
        return S[int(np.argmin(scores))]

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        out = uniform_supports(rng, trial.p, trial.s, n_draws)
        out[rng.random(n_draws) < 0.5] = prepared
        return Draws(out)


CONTROLS = (HalfSensitivityEM, LiteralDPSIS, HalfNoiseSampAgg, MistakesClaimsPure, ReferenceReader)
