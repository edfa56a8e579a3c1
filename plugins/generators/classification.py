"""Generator ``classification``: the toeplitz design with +-1 labels from a logistic model.

The design of the hinge-loss experiment of the NeurIPS 2025 paper (Prastakos, Behdin &
Mazumder; ``generate_input_data`` in the authors' ``hinge_neurips.py``): rows of X are
N(0, Sigma) with Sigma_ij = rho^|i-j| (:func:`toeplitz_rows`), beta*_j = 1/sqrt(s) on s
spread-out indices, a latent ``z = X beta* + e`` with Gaussian noise rescaled so that
``||X beta*||^2 / ||e||^2 = snr`` exactly (:func:`dpbench.problem.add_noise_at_snr`, the
authors' ``alpha``), and labels ``y_i = +1`` with probability ``1 / (1 + exp(-z_i))``, else -1.

Differences from the authors' file, on purpose: the support is the toeplitz generator's
0-based 0, 2, ..., 2s-2 (theirs is 1, 3, ..., 2s-1; with rho = 0.1 the two are equivalent in
distribution up to boundary effects of the AR(1) design), and the noise and labels come from
the trial's named random stream instead of numpy's global state.
"""

import numpy as np

from dpbench import Generator, Param, Problem, UserInputError, hookimpl
from dpbench.problem import add_noise_at_snr
from dpbench_plugins.generators.toeplitz import toeplitz_rows


class Classification(Generator):
    """Toeplitz design, logistic +-1 labels at an exact latent SNR (NeurIPS 2025 hinge experiment)."""

    name = "classification"
    summary = ("toeplitz rows, beta* = 1/sqrt(s) on 0,2,..,2s-2, y = +-1 with P(y=1) = 1/(1+e^-z), "
               "z = X beta* + noise at exact SNR (NeurIPS 2025 hinge experiment)")
    params = {
        "n": Param(200, "number of rows", int),
        "p": Param(20, "number of features", int),
        "s": Param(3, "sparsity level", int),
        "rho": Param(0.1, "correlation rho of Sigma_ij = rho^|i-j|", float),
        "snr": Param(5.0, "latent signal-to-noise ratio ||X beta*||^2 / ||e||^2", float),
    }

    def generate(self, rng):
        """Draw (X, y) with y in {-1, +1}.

        Returns
        -------
        Problem
            ``X`` (n, p) float64, ``y`` (n,) float64 in {-1.0, +1.0}, the true support.

        Raises
        ------
        UserInputError
            For s outside [1, p), p < 2s - 1, n < 2 or a non-positive SNR.
        """
        c = self.config
        n, p, s, snr = c["n"], c["p"], c["s"], c["snr"]
        if not 1 <= s < p:
            raise UserInputError(f"sparsity level s = {s} must satisfy 1 <= s < p = {p}")
        if 2 * s - 1 > p:
            raise UserInputError(f"classification puts the support on indices 0,2,..,2s-2; need p >= 2s - 1 "
                                 f"(got p = {p}, s = {s})")
        if n < 2:
            raise UserInputError(f"n = {n}: need at least 2 rows")
        if not snr > 0:
            raise UserInputError(f"snr = {snr} must be positive")
        X = toeplitz_rows(rng, n, p, c["rho"])
        support = np.arange(0, 2 * s, 2)
        z = add_noise_at_snr(rng, X[:, support].sum(axis=1) / np.sqrt(s), snr)
        # P(y = 1) = 1 / (1 + e^-z), computed stably by scipy's expit
        from scipy.special import expit

        y = np.where(rng.random(n) < expit(z), 1.0, -1.0)
        return Problem(X, y, s, true_support=support, name=self.name, provenance=self.setting())


@hookimpl
def dpbench_generators():
    return [Classification]
