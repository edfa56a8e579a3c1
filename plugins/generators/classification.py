"""Generator ``classification``: the toeplitz design with +-1 labels from a logistic model.

The design of the hinge-loss experiment of the NeurIPS 2025 paper (Prastakos, Behdin &
Mazumder; ``generate_input_data`` in the authors' ``hinge_neurips.py``): rows of X are
N(0, Sigma) with Sigma_ij = rho^|i-j| (:func:`~dpbench_plugins.generators.toeplitz.toeplitz_rows`), beta*_j = 1/sqrt(s) on s
spread-out indices, a latent ``z = X beta* + e`` with Gaussian noise rescaled so that
``||X beta*||^2 / ||e||^2 = snr`` exactly (:func:`dpbench.problem.add_noise_at_snr`, the
authors' ``alpha``), and labels ``y_i = +1`` with probability ``1 / (1 + exp(-z_i))``, else -1.

Differences from the authors' file, on purpose: the support is the toeplitz generator's
0-based 0, 2, ..., 2s-2 (theirs is 1, 3, ..., 2s-1; with rho = 0.1 the two are equivalent in
distribution up to boundary effects of the AR(1) design), and the noise and labels come from
the trial's named random stream instead of numpy's global state.
"""

import numpy as np
from scipy.special import expit

from dpbench import Param, Problem, hookimpl
from dpbench_plugins.generators.toeplitz import Toeplitz


class Classification(Toeplitz):
    """Toeplitz design, logistic +-1 labels at an exact latent SNR (NeurIPS 2025 hinge experiment)."""

    name = "classification"
    summary = ("toeplitz rows, beta* = 1/sqrt(s) on 0,2,..,2s-2, y = +-1 with P(y=1) = 1/(1+e^-z), "
               "z = X beta* + noise at exact SNR (NeurIPS 2025 hinge experiment)")
    params = {**{k: v for k, v in Toeplitz.params.items() if k != "first"},
              "snr": Param(5.0, "latent signal-to-noise ratio ||X beta*||^2 / ||e||^2", float,
                           interval=(0, None, "neither"))}

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
        X, support, z = self.draw_latent(rng)  # the toeplitz design and its latent signal
        # P(y = 1) = 1 / (1 + e^-z), computed stably by scipy's expit
        y = np.where(rng.random(self.config["n"]) < expit(z), 1.0, -1.0)
        return Problem(X, y, self.config["s"], true_support=support, name=self.name, provenance=self.setting())


@hookimpl
def dpbench_generators():
    return [Classification]
