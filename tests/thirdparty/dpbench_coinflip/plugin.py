"""A third-party selector: uniformly random supports (trivially 0-DP, reported as pure)."""

import numpy as np

from dpbench.api import Draws, Selector, hookimpl, log_binom, uniform_supports


class CoinFlip(Selector):
    name = "coinflip"
    summary = "uniformly random support (third-party test plugin)"
    dp_type = "pure"

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        return Draws(uniform_supports(rng, trial.p, trial.s, n_draws))

    def log_prob(self, trial, prepared, epsilon, support):
        return -float(log_binom(trial.p, trial.s))


@hookimpl
def dpbench_selectors():
    return [CoinFlip]
