"""Generators ``toeplitz`` and ``classification``: the simulation designs of the NeurIPS 2025 / ICLR-workshop papers.

docs/reproductions.md: rows of X are N(0, Sigma) with Sigma_ij = rho^|i-j|, the true
coefficients are beta*_j = 1/sqrt(s) on the s spread-out 0-based indices
``first, first + 2, ..., first + 2(s - 1)`` (``first = 0`` by default: 1-based 1, 3, ..., 2s-1;
the authors' released NeurIPS code uses ``first = 1``, i.e. 0-based 1, 3, 5, 7, 9), and the noise is rescaled so that ||X beta*||^2 / ||e||^2 equals the SNR exactly.
"""

import numpy as np
from scipy.special import expit
from scipy.signal import lfilter

from dpbench.api import Generator, Param, Problem, UserInputError, add_noise_at_snr, hookimpl


def toeplitz_rows(rng: np.random.Generator, n: int, p: int, rho: float) -> np.ndarray:
    """n rows of N(0, Sigma), Sigma_ij = rho^|i-j|, without forming the p x p matrix.

    A stationary AR(1) recursion along the columns, x_1 = z_1 and
    x_j = rho x_{j-1} + sqrt(1 - rho^2) z_j, has exactly that covariance.

    Returns
    -------
    ndarray of shape (n, p)
    """
    if not -1 < rho < 1:
        raise UserInputError(f"rho = {rho} must lie in (-1, 1)")
    z = rng.standard_normal((n, p))
    scale = np.sqrt(1.0 - rho * rho)
    z[:, 0] /= scale  # so that x_1 = z_1 has unit variance
    return lfilter([scale], [1.0, -rho], z, axis=1)


class Toeplitz(Generator):
    """Toeplitz-correlated Gaussian design with a spread-out support (docs/reproductions.md)."""

    name = "toeplitz"
    summary = "rows N(0, rho^|i-j|), beta* = 1/sqrt(s) on indices 1,3,..,2s-1, exact SNR (NeurIPS 2025 design)"
    params = {
        "n": Param(200, "number of rows", int),
        "p": Param(20, "number of features", int),
        "s": Param(3, "sparsity level", int),
        # intervals: checked when the run is configured, not when the first trial of the
        # setting is generated (--rho 0.1,2 ran every rho = 0.1 trial before refusing 2)
        "rho": Param(0.1, "correlation rho of Sigma_ij = rho^|i-j|", float, interval=(-1, 1, "neither")),
        "snr": Param(5.0, "signal-to-noise ratio ||X beta*||^2 / ||e||^2", float, interval=(0, None, "neither")),
        "first": Param(0, "0-based index of the first true feature; the support is first, first+2, ..., "
                          "first+2(s-1) (1 = the authors' released NeurIPS code)", int),
    }

    def draw_latent(self, rng):
        """Draw the design, the support and the noisy linear signal ``X beta* + e`` at the exact SNR.

        Returns
        -------
        X : ndarray of shape (n, p), float64
        support : ndarray of shape (s,), int64
            0-based ``first, first + 2, ..., first + 2(s - 1)``.
        z : ndarray of shape (n,), float64
            ``X beta* + e`` with beta*_j = 1/sqrt(s) on the support and ``||X beta*||^2 / ||e||^2 = snr``.

        Raises
        ------
        UserInputError
            For s outside [1, p), a support that does not fit in p, n < 2 or a non-positive SNR.
        """
        c = self.config
        n, p, s, snr = c["n"], c["p"], c["s"], c["snr"]
        if not 1 <= s < p:
            raise UserInputError(f"sparsity level s = {s} must satisfy 1 <= s < p = {p}")
        first = c.get("first", 0)
        last = first + 2 * (s - 1)
        if first < 0 or last >= p:
            raise UserInputError(f"{self.name} puts the support on 0-based indices {first}, {first + 2}, .., {last}; "
                                 f"need 0 <= first and first + 2(s - 1) < p (got p = {p}, s = {s}, first = {first})")
        if n < 2:
            raise UserInputError(f"n = {n}: need at least 2 rows")
        if not snr > 0:
            raise UserInputError(f"snr = {snr} must be positive")
        X = toeplitz_rows(rng, n, p, c["rho"])
        support = np.arange(first, last + 1, 2)
        signal = X[:, support].sum(axis=1) / np.sqrt(s)
        return X, support, add_noise_at_snr(rng, signal, snr)

    def generate(self, rng):
        X, support, y = self.draw_latent(rng)
        return Problem(X, y, self.config["s"], true_support=support, name=self.name, provenance=self.setting())


# ------------------------------------------------------------------------ classification
# Generator ``classification``: the toeplitz design with +-1 labels from a logistic model.
# 
# The design of the hinge-loss experiment of the NeurIPS 2025 paper (Prastakos, Behdin &
# Mazumder; ``generate_input_data`` in the authors' ``hinge_neurips.py``): rows of X are
# N(0, Sigma) with Sigma_ij = rho^|i-j| (:func:`toeplitz_rows`), beta*_j = 1/sqrt(s) on s
# spread-out indices, a latent ``z = X beta* + e`` with Gaussian noise rescaled so that
# ``||X beta*||^2 / ||e||^2 = snr`` exactly (:func:`dpbench.core.problem.add_noise_at_snr`, the
# authors' ``alpha``), and labels ``y_i = +1`` with probability ``1 / (1 + exp(-z_i))``, else -1.
# 
# Differences from the authors' file, on purpose: the support is the toeplitz generator's
# 0-based 0, 2, ..., 2s-2 (theirs is 1, 3, ..., 2s-1; with rho = 0.1 the two are equivalent in
# distribution up to boundary effects of the AR(1) design), and the noise and labels come from
# the trial's named random stream instead of numpy's global state.

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
    return [Toeplitz, Classification]
