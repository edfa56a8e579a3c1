"""Generator ``roy-tewari``: the simulation design of Roy & Tewari's released code.

roysaptaumich/DP-BSS, ``main.py`` (the Python version, commit 9099153, October 2024; the
experiment of Table 1 of roy-tewari2023-mcmc):

* X: n rows of i.i.d. N(0, I_p), each row divided by its largest absolute entry
  (``sklearn.preprocessing.normalize(X, norm="max", axis=1)``), so ``max_j |x_ij| = 1``
  (``design = "gaussian-maxnorm"``, the code's ``data_type = 'Gaussian'``); or i.i.d.
  U[-1, 1] entries (``design = "uniform"``, the code's ``'Uniform'``, which the paper's
  appendix A.1 describes and the code's earlier commits use);
* beta: equal on the first s features, ``2 sqrt(s log p / n)`` (``signal = "strong"``) or
  ``2 sqrt(log p / n)`` (``signal = "weak"``), zero elsewhere;
* noise: i.i.d. U[-noise, noise] with noise = 0.1; ``y = X beta + e`` (no intercept, no
  standardisation);
* defaults n = 900, p = 2000, s = 4; the true support is {0, .., s-1}.

The random numbers differ from the authors' (``np.random.seed(1)``, legacy global stream):
the data are drawn from dpbench's named stream of the setting and trial.
"""

import math

import numpy as np

from dpbench.api import Generator, Param, Problem, UserInputError, hookimpl

SIGNALS = ("strong", "weak")
DESIGNS = ("gaussian-maxnorm", "uniform")


def signal_strength(n: int, p: int, s: int, signal: str) -> float:
    """The common coefficient of the true features: ``2 sqrt(s log p / n)`` or ``2 sqrt(log p / n)``."""
    return 2.0 * math.sqrt((s if signal == "strong" else 1) * math.log(p) / n)


class RoyTewari(Generator):
    """Roy & Tewari's design: max-norm-scaled Gaussian (or uniform) rows, uniform noise."""

    name = "roy-tewari"
    summary = ("rows N(0, I) scaled to max-norm 1 (or U[-1,1]), beta = 2 sqrt(s log p/n) (strong) or "
               "2 sqrt(log p/n) (weak) on the first s, noise U[-0.1, 0.1] (roysaptaumich/DP-BSS main.py)")
    params = {
        "n": Param(900, "number of rows", int),
        "p": Param(2000, "number of features", int),
        "s": Param(4, "sparsity level (true support: the first s features)", int),
        "signal": Param("strong", "strong: beta_j = 2 sqrt(s log p / n); weak: 2 sqrt(log p / n)", str, SIGNALS),
        "design": Param("gaussian-maxnorm", "gaussian-maxnorm: N(0, I) rows divided by their max |entry| "
                                            "(main.py); uniform: U[-1, 1] entries", str, DESIGNS),
        "noise": Param(0.1, "noise e_i ~ U[-noise, noise]", float, interval=(0, None, "left")),
    }

    def generate(self, rng):
        c = self.config
        n, p, s = c["n"], c["p"], c["s"]
        if not 1 <= s < p:
            raise UserInputError(f"sparsity level s = {s} must satisfy 1 <= s < p = {p}")
        if n < 2:
            raise UserInputError(f"n = {n}: need at least 2 rows")
        if not (math.isfinite(c["noise"]) and c["noise"] >= 0):
            raise UserInputError(f"roy-tewari.noise = {c['noise']} must be >= 0 and finite")
        if c["design"] == "uniform":
            X = rng.uniform(-1.0, 1.0, size=(n, p))
        else:
            X = rng.standard_normal((n, p))
            X /= np.abs(X).max(axis=1, keepdims=True)
        support = np.arange(s)
        beta = signal_strength(n, p, s, c["signal"])
        y = beta * X[:, :s].sum(axis=1) + rng.uniform(-c["noise"], c["noise"], size=n)
        return Problem(X, y, s, true_support=support, name=self.name, provenance=self.setting())


@hookimpl
def dpbench_generators():
    return [RoyTewari]
