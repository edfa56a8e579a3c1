"""docs/plugins.md's `random` example ("A selector from your own package"), and a broken variant.

`random` is that page's code unchanged (no log_prob: dpbench audits it by Monte-Carlo).
`leaky-random` claims the same pure guarantee but returns the s columns most correlated with y
half the time: `dpbench audit` must report it (exit status 1), with no change to dpbench.
"""

import numpy as np

from dpbench.api import Draws, Selector, hookimpl, uniform_supports


class RandomSupport(Selector):
    name = "random"
    summary = "a uniformly random support (0-DP, a floor for comparisons)"
    dp_type = "pure"                 # "pure", "approximate" or "none"
    neighbouring = "replace-one"

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        return Draws(uniform_supports(rng, trial.p, trial.s, n_draws))


class LeakyRandom(Selector):
    name = "leaky-random"
    summary = "broken on purpose: leaks the top correlated columns half the time"
    dp_type = "pure"

    def prepare(self, trial, rng):
        c = np.abs(trial.problem.X.T @ trial.problem.y)
        return np.sort(np.argsort(-c, kind="stable")[:trial.s]).astype(np.int64)

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        out = uniform_supports(rng, trial.p, trial.s, n_draws)
        out[rng.random(n_draws) < 0.5] = prepared
        return Draws(out)


@hookimpl
def dpbench_selectors():
    return [RandomSupport, LeakyRandom]
