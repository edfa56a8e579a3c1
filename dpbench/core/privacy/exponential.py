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

    Inverse-CDF sampling (:func:`inverse_cdf`) of ``size`` uniform numbers from ``rng``.

    Returns
    -------
    ndarray of shape (size,), int64
    """
    return inverse_cdf(log_weights, rng.random(size))


def inverse_cdf(log_weights, u) -> np.ndarray:
    """The indices that inverse-CDF sampling assigns to the uniform numbers ``u``.

    The probabilities are normalised from the log-weights after subtracting their maximum, so
    no weight overflows; with F their cumulative sums (F(K - 1) = 1 up to rounding, which the
    comparison scales away), index i takes the ``u`` with ``F(i - 1) <= u F(K - 1) < F(i)``.
    Entries of ``-inf`` have probability zero.

    Parameters
    ----------
    log_weights : array_like of shape (K,), float64
        Unnormalised log-weights, at least one finite.
    u : ndarray of shape (size,), float64 in [0, 1)

    Returns
    -------
    ndarray of shape (size,), int64

    Raises
    ------
    ValueError
        Every weight is zero (all ``-inf``), or a ``u`` outside [0, 1).
    """
    u = np.asarray(u, dtype=np.float64)
    if u.size and not (u.min() >= 0.0 and u.max() < 1.0):
        raise ValueError("uniform numbers u must lie in [0, 1)")
    if np.all(np.isneginf(np.asarray(log_weights, dtype=np.float64))):
        raise ValueError("every weight is zero (all log-weights are -inf): nothing to sample")
    lp = log_normalize(log_weights)
    cdf = np.cumsum(np.exp(lp))
    idx = np.searchsorted(cdf, u * cdf[-1], side="right")
    return np.minimum(idx, len(cdf) - 1).astype(np.int64)


#: Margin (absolute, on the CDF in [0, 1]) by which a uniform number must clear a bound on the
#: CDF to count as decided: the CDFs are sums of at most a few dozen exponentials, computed to a
#: few ulps (1e-15), so 1e-12 leaves a wide margin and costs a 2e-12 share of the draws.
DECIDED_MARGIN = 1e-12


def decided_by_bounds(log_lo, log_hi, u, idx) -> np.ndarray:
    """Whether inverse-CDF sampling gives ``idx`` for ``u`` whatever the weights in a box.

    The weights are known only to lie in a box, ``log_lo[i] <= log w[i] <= log_hi[i]`` (e.g. the
    exponential mechanism on group minima R_t known only within certified bounds). A uniform
    number u decides index i when ``F_hi(i - 1) <= u < F_lo(i)`` for the largest and smallest
    possible values of the CDF at i - 1 and i over the box, which are

        F_lo(i) = A_lo / (A_lo + B_hi),   F_hi(i) = A_hi / (A_hi + B_lo),

    with A the sum of the weights at indices <= i and B of those above i (F increases in every
    weight at or below i and decreases in every weight above it). Then :func:`inverse_cdf` with
    the exact weights, whichever they are, picks i for that u: a decided draw is the exact
    sampler's draw for the same random number (lazy sampling from refinable bounds, as in exact
    sampling by "retrospective" refinement: Papaspiliopoulos & Roberts 2008, Biometrika 95(1)).
    A margin of 1e-12 on the CDF (``DECIDED_MARGIN`` of this module) keeps rounding from deciding
    a draw.

    Parameters
    ----------
    log_lo, log_hi : array_like of shape (K,), float64
        Entrywise bounds on the log-weights, ``log_lo <= log_hi`` (-inf allowed: a weight that
        may be, or is, zero).
    u : ndarray of shape (size,), float64 in [0, 1)
        The uniform numbers of the draws.
    idx : ndarray of shape (size,), int64
        The index each draw took (:func:`inverse_cdf` with any weights in the box).

    Returns
    -------
    ndarray of shape (size,), bool
        True where every weight vector in the box gives ``idx`` for ``u``.

    Raises
    ------
    ValueError
        Bounds of different shapes, ``log_lo > log_hi`` somewhere, or ``u`` and ``idx`` of
        different shapes.
    """
    lo, hi = _check_box(log_lo, log_hi)
    u = np.asarray(u, dtype=np.float64)
    idx = np.asarray(idx, dtype=np.int64)
    if u.shape != idx.shape:
        raise ValueError(f"u {u.shape} and idx {idx.shape} must have the same shape (one index per draw)")
    f_lo, f_hi = _cdf_bounds(lo, hi)
    below = np.concatenate([[0.0], f_hi[:-1]])[idx]  # F_hi(i - 1); F(-1) = 0
    above = f_lo[idx]  # F_lo(i); F(K - 1) = 1
    return (u >= below + DECIDED_MARGIN * (idx > 0)) & (u < above - DECIDED_MARGIN * (idx < lo.size - 1))


def _check_box(log_lo, log_hi):
    lo = np.asarray(log_lo, dtype=np.float64)
    hi = np.asarray(log_hi, dtype=np.float64)
    if lo.shape != hi.shape or lo.ndim != 1 or np.any(lo > hi):
        raise ValueError("log_lo and log_hi must be (K,) arrays with log_lo <= log_hi")
    return lo, hi


def _lse(v):
    """log of the sum of exp(v); -inf for no terms or only zero weights."""
    return -np.inf if not v.size or np.isneginf(v).all() else float(logsumexp(v))


def _share(a, b):
    """a' / (a' + b') from logs a, b (elementwise): 0 when a = -inf or b = +inf, 1 when b = -inf or a = +inf."""
    with np.errstate(invalid="ignore"):
        out = np.exp(a - np.logaddexp(a, b))
    return np.where(np.isneginf(a) | np.isposinf(b), 0.0, np.where(np.isneginf(b) | np.isposinf(a), 1.0, out))


def _cdf_bounds(lo, hi):
    """(F_lo, F_hi) of :func:`decided_by_bounds`, each of shape (K,), F(K - 1) = 1 exactly."""
    K = lo.size
    below = [slice(0, i + 1) for i in range(K)]  # indices <= i
    above = [slice(i + 1, K) for i in range(K)]  # indices > i (none for the last)

    def sums(v, parts):
        return np.array([_lse(v[part]) for part in parts])

    return _share(sums(lo, below), sums(hi, above)), _share(sums(hi, below), sums(lo, above))


def probability_bounds(log_lo, log_hi) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on the probabilities ``w[i] / sum(w)`` over the box of :func:`decided_by_bounds`.

    ``P(i)`` increases in ``w[i]`` and decreases in every other weight, so its extremes are
    ``lo_i / (lo_i + sum_{k != i} hi_k)`` and ``hi_i / (hi_i + sum_{k != i} lo_k)``.

    Parameters
    ----------
    log_lo, log_hi : array_like of shape (K,), float64

    Returns
    -------
    (low, high) : two ndarrays of shape (K,), float64

    Raises
    ------
    ValueError
        As :func:`decided_by_bounds` for the box.
    """
    lo, hi = _check_box(log_lo, log_hi)
    rest_hi = np.array([_lse(np.delete(hi, i)) for i in range(lo.size)])
    rest_lo = np.array([_lse(np.delete(lo, i)) for i in range(lo.size)])
    return _share(lo, rest_hi), _share(hi, rest_lo)


def gumbel_argmax(rng: np.random.Generator, log_weights, axis=-1):
    """Gumbel-max trick: ``argmax(log_weights + Gumbel noise)`` along ``axis``.

    One exact sample per slice from the distribution proportional to exp(log_weights);
    useful when the weights are produced in chunks and must not be normalised first.
    """
    lw = np.asarray(log_weights, dtype=np.float64)
    return np.argmax(lw + rng.gumbel(size=lw.shape), axis=axis)
