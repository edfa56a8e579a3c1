"""Log-space sampling utilities shared by the exponential-mechanism selectors.

Exponents such as epsilon R / (2 Delta) reach 1e4 and output spaces reach C(10000, 5), so
every probability is handled as a logarithm (docs/methods/score.md): no mpmath, no overflow
and no underflow to "probability 0" for an outcome that has mass.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from dpbench.core.errors import UserInputError


def check_epsilon(epsilon) -> float:
    """Return epsilon as a float, or raise a UserInputError if it is not positive and finite."""
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise UserInputError(f"epsilon = {epsilon!r} is not a number; give a positive value such as 1.0") from None
    if not (np.isfinite(eps) and eps > 0):
        raise UserInputError(f"epsilon = {epsilon} must be positive and finite (e.g. 1.0)")
    return eps


def em_log_weights(scores, epsilon: float, sensitivity: float, log_multiplicity=None) -> np.ndarray:
    """Unnormalised log-weights of the exponential mechanism for a score to *minimise*.

    ``log w = -epsilon * score / (2 * Delta) + log(multiplicity)`` (McSherry & Talwar 2007;
    docs/methods/exponential-mechanism.md). ``log_multiplicity`` gives the log of the number of outputs sharing a
    score (the grouped mechanisms of topr and mistakes).

    Parameters
    ----------
    scores : array_like of shape (K,)
    epsilon, sensitivity : float
    log_multiplicity : array_like of shape (K,), optional

    Returns
    -------
    ndarray of shape (K,)
    """
    lw = -check_epsilon(epsilon) * np.asarray(scores, dtype=np.float64) / (2.0 * sensitivity)
    if log_multiplicity is not None:
        lw = lw + np.asarray(log_multiplicity, dtype=np.float64)
    return lw


def log_normalize(log_weights) -> np.ndarray:
    """Log-probabilities from log-weights: ``log_weights - logsumexp(log_weights)``."""
    lw = np.asarray(log_weights, dtype=np.float64)
    return lw - logsumexp(lw)


def sample_log_weights(rng: np.random.Generator, log_weights, size: int) -> np.ndarray:
    """Draw ``size`` indices i with probability proportional to ``exp(log_weights[i])``.

    Inverse-CDF sampling on the normalised probabilities, which are computed from the
    log-weights after subtracting their maximum, so no weight overflows. Entries of
    ``-inf`` have probability zero.

    Returns
    -------
    ndarray of shape (size,), int64
    """
    lp = log_normalize(log_weights)
    cdf = np.cumsum(np.exp(lp))
    u = rng.random(size) * cdf[-1]
    idx = np.searchsorted(cdf, u, side="right")
    return np.minimum(idx, len(cdf) - 1).astype(np.int64)


def gumbel_argmax(rng: np.random.Generator, log_weights, axis=-1):
    """Gumbel-max trick: ``argmax(log_weights + Gumbel noise)`` along ``axis``.

    One exact sample per slice from the distribution proportional to exp(log_weights);
    useful when the weights are produced in chunks and must not be normalised first.
    """
    lw = np.asarray(log_weights, dtype=np.float64)
    return np.argmax(lw + rng.gumbel(size=lw.shape), axis=axis)
