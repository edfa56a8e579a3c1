"""Private top-k selection on a score vector: the mechanisms and their exact output laws.

Shared by the selectors ``peeling``, ``pnf``, ``laplace-topk``, ``joint``
and ``dpkendall``. Every mechanism here takes a score vector ``f`` (larger is better) whose
entries each move by at most ``sensitivity`` between neighbouring data sets
(``||f(D) - f(D')||_inf <= Delta_f``), and returns k distinct indices.

Calibration under replace-one
-----------------------------
The top-k literature calibrates to counts under add/remove, which are *monotone*: one
person's arrival moves every count the same way, and the exponential mechanism then needs only
``exp(eps u / Delta)``. The correlation scores ``|x_j^T y|`` under replace-one are not
monotone (a replaced row moves some scores up and others down), so every mechanism here uses
the non-monotone calibration: ``exp(eps u / (2 Delta))`` for the exponential mechanism,
Gumbel or exponential noise of scale ``2 Delta / eps`` per round, and Laplace noise of
scale ``2 k Delta / eps`` for the one-shot top-k -- the factor 2 that the reference code of
Gillenwater et al. 2022 (``dp_topk``) applies to its "swap" relation.

Exact laws
----------
The output of every selector is an unordered set. For the peeling mechanisms the probability
of a set is the sum, over its k! orders, of the product of the per-round probabilities; for
the joint mechanism the sum over its k! orders of the sequence probability; for the one-shot
Laplace mechanism an integral of piecewise exponentials, evaluated in closed form. All in log
space (scores over 2 Delta reach 1e4).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from dpbench.core.errors import UserInputError
from dpbench.core.problem import as_support
from dpbench.core.contracts.selector import Selector
from dpbench.core.privacy.exponential import check_epsilon
from dpbench.core.privacy.sensitivity import correlation_sensitivity

#: Draws per numpy block in the vectorised samplers (noise matrices of block x p values).
_BLOCK_ELEMENTS = 2_000_000
#: Largest p for which the permute-and-flip and Laplace laws are evaluated (Gauss-Legendre
#: with ceil(p/2) nodes per round; 2^(p-1) exponential pieces for Laplace).
PNF_LAW_MAX_P = 400
LAPLACE_LAW_MAX_P = 12
#: Largest k for the sums over the k! orders of a set.
ORDERS_MAX_K = 8


def check_k(p: int, k: int) -> None:
    """Raise a UserInputError unless ``1 <= k < p`` (k distinct indices out of p)."""
    if not (isinstance(k, (int, np.integer)) and 1 <= k < p):
        raise UserInputError(f"top-k selection needs an integer 1 <= k < p = {p} (got k = {k}); lower s")


def check_scores(scores) -> np.ndarray:
    """The scores as float64 of shape (p,); UserInputError for NaN or infinite entries."""
    f = np.asarray(scores, dtype=np.float64).ravel()
    if not np.all(np.isfinite(f)):
        raise UserInputError("the feature scores contain NaN or infinite values; check the data for NaN/inf")
    return f


def _lse(x) -> float:
    """log(sum(exp(x))) of a small 1-d array (scipy's logsumexp costs ~50 us per call)."""
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x) if x.size else -math.inf
    if not np.isfinite(m):
        return float(m)
    return float(m + math.log(np.sum(np.exp(x - m))))


@functools.lru_cache(maxsize=64)
def _legendre01(m: int):
    """Gauss-Legendre nodes and log-weights on [0, 1], exact for polynomials of degree < 2 ceil(m/2) + 1."""
    nodes, weights = np.polynomial.legendre.leggauss(max(1, (m + 1) // 2))
    return 0.5 * (nodes + 1.0), np.log(0.5 * weights)


def _blocks(n_draws: int, p: int):
    step = max(1, _BLOCK_ELEMENTS // max(p, 1))
    for a in range(0, n_draws, step):
        yield a, min(n_draws, a + step)


def _top_k_rows(noisy: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest entries of every row, in decreasing order of value."""
    part = np.argpartition(-noisy, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(noisy, part, axis=1)
    return np.take_along_axis(part, np.argsort(-vals, axis=1, kind="stable"), axis=1)


# --------------------------------------------------------------------------- peeling (EM / Gumbel)


def gumbel_top_k(rng: np.random.Generator, log_weights, k: int, n_draws: int = 1) -> np.ndarray:
    """k rounds of the exponential mechanism without replacement, by one-shot Gumbel noise.

    Adding i.i.d. standard Gumbel noise to ``log_weights`` and keeping the k largest gives the
    same ordered output law as k successive draws ``P(j) ∝ exp(log_weights[j])`` from the
    items not yet drawn (Durfee & Rogers 2019; the Gumbel-max trick applied k times).

    Parameters
    ----------
    rng : numpy.random.Generator
    log_weights : array_like of shape (p,)
        Unnormalised log-weights, e.g. ``eps' f / (2 Delta_f)``.
    k : int
        Number of rounds, ``1 <= k < p``.
    n_draws : int

    Returns
    -------
    ndarray of shape (n_draws, k), int64
        The drawn indices in the order of the rounds.
    """
    lw = check_scores(log_weights)
    check_k(lw.size, k)
    out = np.empty((n_draws, k), dtype=np.int64)
    for a, b in _blocks(n_draws, lw.size):
        out[a:b] = _top_k_rows(lw + rng.gumbel(size=(b - a, lw.size)), k)
    return out


def _check_subset(subset, p: int) -> np.ndarray:
    S = np.unique(np.asarray(subset, dtype=np.int64))
    if S.size != np.asarray(subset).size or S.min(initial=0) < 0 or S.max(initial=0) >= p:
        raise ValueError(f"subset {np.asarray(subset).tolist()} is not a set of distinct indices in [0, {p})")
    if S.size > ORDERS_MAX_K:
        raise ValueError(f"exact set laws sum over k! orders; k = {S.size} > {ORDERS_MAX_K} is not supported")
    return S


def peeling_log_prob(log_weights, subset) -> float:
    """log P(the k rounds of :func:`gumbel_top_k` draw exactly the set ``subset``).

    ``P(S) = sum over the k! orders (j_1..j_k) of S of prod_t w_{j_t} / sum_{i not in
    {j_1..j_{t-1}}} w_i`` (the exponential mechanism applied k times without replacement;
    Dwork, Su & Zhang 2021, peeling). The normaliser of round t is the mass of the items
    outside S plus that of the members of S not yet drawn, so it is computed without
    subtracting masses (no cancellation).

    Parameters
    ----------
    log_weights : array_like of shape (p,)
    subset : array_like of shape (k,), int
        Distinct indices.

    Returns
    -------
    float
        Natural log of the probability (``<= 0``).
    """
    lw = np.asarray(log_weights, dtype=np.float64)
    S = _check_subset(subset, lw.size)
    outside = np.ones(lw.size, dtype=bool)
    outside[S] = False
    l_out = logsumexp(lw[outside]) if outside.any() else -math.inf
    ws = lw[S]
    terms = []
    for order in itertools.permutations(range(S.size)):
        left = list(order)
        total = 0.0
        for j in order:
            total += ws[j] - np.logaddexp(l_out, _lse(ws[left]))
            left.remove(j)
        terms.append(total)
    return _lse(terms)


# --------------------------------------------------------------------------- permute-and-flip


def exponential_noise_peeling(rng: np.random.Generator, scores, k: int, scale: float,
                              n_draws: int = 1) -> np.ndarray:
    """k rounds of permute-and-flip, each as report-noisy-max with exponential noise.

    Round t returns ``argmax_{j not yet drawn} f_j + E_j`` with fresh ``E_j ~ Exp(scale)``;
    one round has exactly the law of permute-and-flip with flip probabilities
    ``exp((f_j - max f) / scale)`` (McKenna & Sheldon 2020; the equivalence is
    shown by Ding, Kifer, Steinke, Wang, Xiao & Zhang 2021). With ``scale = 2 Delta_f / eps'``
    a round is eps'-DP.

    Parameters
    ----------
    rng : numpy.random.Generator
    scores : array_like of shape (p,)
    k : int
    scale : float
        Mean of the exponential noise, > 0.
    n_draws : int

    Returns
    -------
    ndarray of shape (n_draws, k), int64
        Indices in the order of the rounds.
    """
    f = check_scores(scores)
    check_k(f.size, k)
    out = np.empty((n_draws, k), dtype=np.int64)
    for a, b in _blocks(n_draws, f.size):
        rows = np.arange(b - a)
        taken = np.zeros((b - a, f.size), dtype=bool)
        for t in range(k):
            noisy = f + rng.exponential(scale, size=(b - a, f.size))
            noisy[taken] = -np.inf
            j = np.argmax(noisy, axis=1)
            out[a:b, t] = j
            taken[rows, j] = True
    return out


def _pnf_round_log_probs(q: np.ndarray, scale: float, which: np.ndarray) -> np.ndarray:
    """log P(permute-and-flip over the scores ``q`` returns item i), for the items ``which``.

    With flip probabilities ``a_j = exp((q_j - max q) / scale)``, item r is returned when its
    coin is the first head in a uniformly random order, so
    ``P(r) = a_r * sum_{T ⊆ others} |T|! (m - 1 - |T|)! / m! * prod_{j in T} (1 - a_j)
    = a_r * int_0^1 prod_{j != r} (1 - t a_j) dt`` (the Beta integral of
    ``t^|T| (1 - t)^(m-1-|T|)``; derived here from the algorithm of McKenna & Sheldon 2020). The integrand is a
    polynomial of degree m - 1 with positive factors, integrated exactly by Gauss-Legendre
    quadrature on ceil(m/2) nodes, in log space.
    """
    m = q.size
    log_a = (q - q.max()) / scale
    a = np.exp(log_a)
    t, log_w = _legendre01(m)
    with np.errstate(divide="ignore"):
        log_factors = np.log1p(-np.outer(t, a))  # (nodes, m); -inf only at t = 1, a = 1 (not a node)
    total = log_factors.sum(axis=1)
    out = np.empty(which.size)
    for n, r in enumerate(which):
        out[n] = log_a[r] + _lse(log_w + total - log_factors[:, r])
    return out


def pnf_peeling_log_prob(scores, subset, scale: float) -> float:
    """log P(k rounds of :func:`exponential_noise_peeling` draw exactly the set ``subset``).

    Sum over the k! orders of the product of the per-round permute-and-flip probabilities
    over the items not yet drawn (each round's maximum recomputed over those items).

    Parameters
    ----------
    scores : array_like of shape (p,), p <= :data:`PNF_LAW_MAX_P`
    subset : array_like of shape (k,), int
    scale : float
        The per-round noise scale ``2 Delta_f / eps'``.

    Returns
    -------
    float
    """
    f = np.asarray(scores, dtype=np.float64)
    S = _check_subset(subset, f.size)
    if f.size > PNF_LAW_MAX_P:
        raise ValueError(f"the permute-and-flip law is evaluated for p <= {PNF_LAW_MAX_P} only")
    memo = {}
    terms = []
    for order in itertools.permutations(S.tolist()):
        total, taken = 0.0, ()
        for j in order:
            key = (taken, j)
            if key not in memo:
                keep = np.setdiff1d(np.arange(f.size), taken)
                memo[key] = float(_pnf_round_log_probs(f[keep], scale, np.searchsorted(keep, [j]))[0])
            total += memo[key]
            taken = tuple(sorted(taken + (j,)))
        terms.append(total)
    return _lse(terms)


# --------------------------------------------------------------------------- one-shot Laplace


def laplace_top_k(rng: np.random.Generator, scores, k: int, scale: float, n_draws: int = 1) -> np.ndarray:
    """One-shot report-noisy-top-k: ``f + Laplace(scale)`` noise once, keep the k largest.

    Qiao, Su & Zhang 2021 (the one-shot mechanism); with ``scale = 2 k Delta_f / eps`` the
    released (ordered) top-k is eps-DP for scores of sup-norm sensitivity ``Delta_f`` that may
    move in both directions (Ding, Wang, Zhang & Kifer 2019, noisy top-k; ``k Delta_f / eps``
    suffices only for monotone scores).

    Returns
    -------
    ndarray of shape (n_draws, k), int64
        Indices by decreasing noisy score.
    """
    f = check_scores(scores)
    check_k(f.size, k)
    out = np.empty((n_draws, k), dtype=np.int64)
    for a, b in _blocks(n_draws, f.size):
        out[a:b] = _top_k_rows(f + rng.laplace(0.0, scale, size=(b - a, f.size)), k)
    return out


def _signed_logsumexp(log_mag: np.ndarray, sign: np.ndarray) -> tuple[float, float]:
    """(log |sum|, sign of sum) of ``sum sign_i exp(log_mag_i)``."""
    if log_mag.size == 0:
        return -math.inf, 0.0
    m = np.max(log_mag)
    if not np.isfinite(m):
        return -math.inf, 0.0
    s = float(np.sum(sign * np.exp(log_mag - m)))
    return (math.log(abs(s)) + m if s != 0 else -math.inf), math.copysign(1.0, s)


def laplace_top_k_log_prob(scores, subset, scale: float) -> float:
    """log P(:func:`laplace_top_k` returns exactly the set ``subset``), in closed form.

    ``P(S) = P(min_{i in S} Y_i > max_{j not in S} Y_j)`` with ``Y = f + Laplace(scale)``
    independent. Conditioning on which outsider j attains the maximum, and at which value t:
    ``P(S) = sum_{j not in S} int f_j(t) prod_{j' not in S, j' != j} F_{j'}(t)
    prod_{i in S} (1 - F_i(t)) dt``. Between consecutive centres every density and tail is
    ``1/2 e^{±(t - c)}`` or ``1 - 1/2 e^{±(t - c)}``, so the integrand expands into at most
    ``2^(p-1)`` exponentials integrated exactly. Each expanded factor ``1 - a`` has
    ``a <= 1/2``, so the cancellation in the signed sum is bounded by ``3^p`` (small for
    p <= :data:`LAPLACE_LAW_MAX_P`).

    Parameters
    ----------
    scores : array_like of shape (p,)
    subset : array_like of shape (k,), int
    scale : float
        The Laplace scale ``2 k Delta_f / eps``.

    Returns
    -------
    float
    """
    c = np.asarray(scores, dtype=np.float64) / scale
    p = c.size
    S = _check_subset(subset, p)
    if p > LAPLACE_LAW_MAX_P:
        raise ValueError(f"the Laplace top-k law is evaluated for p <= {LAPLACE_LAW_MAX_P} only")
    inside = np.zeros(p, dtype=bool)
    inside[S] = True
    cuts = np.concatenate([[-np.inf], np.sort(c), [np.inf]])
    log_terms, signs = [], []
    for j in np.flatnonzero(~inside):
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            if not lo < hi:
                continue
            # On (lo, hi) every centre lies on one side of t. A factor is either a pure
            # exponential 1/2 e^{alpha + beta t} or (1 - 1/2 e^{alpha + beta t}).
            alpha0, beta0 = 0.0, 0
            pure_alpha, mixed = [], []
            for i in range(p):
                right = c[i] >= hi  # centre right of the piece: t < c_i
                sgn = 1 if right else -1  # exponent sign: e^{t - c} left of c, e^{-(t - c)} right
                a_i, b_i = -sgn * c[i] + math.log(0.5), sgn
                if i == j:  # density f_j(t) = 1/2 e^{-|t - c_j|}
                    alpha0, beta0 = alpha0 + a_i, beta0 + b_i
                elif inside[i]:  # tail 1 - F_i(t): 1 - 1/2 e^{t - c} left of c_i, 1/2 e^{-(t - c)} right of it
                    if right:
                        mixed.append((a_i, b_i))
                    else:
                        pure_alpha.append((a_i, b_i))
                else:  # CDF F_i(t): 1/2 e^{t - c} if t < c_i else 1 - 1/2 e^{-(t - c)}
                    if right:
                        pure_alpha.append((a_i, b_i))
                    else:
                        mixed.append((a_i, b_i))
            for a_i, b_i in pure_alpha:
                alpha0, beta0 = alpha0 + a_i, beta0 + b_i
            for choose in itertools.product((0, 1), repeat=len(mixed)):
                alpha, beta, sign = alpha0, beta0, 1.0
                for pick, (a_i, b_i) in zip(choose, mixed):
                    if pick:
                        alpha, beta, sign = alpha + a_i, beta + b_i, -sign
                # int_lo^hi e^{alpha + beta t} dt, in log space
                if beta == 0:
                    if not np.isfinite(hi - lo):
                        raise AssertionError("an unbounded piece with a constant integrand")
                    lm = alpha + math.log(hi - lo)
                elif beta > 0:
                    if hi == np.inf:
                        raise AssertionError("divergent piece")
                    lm = alpha + beta * hi - math.log(beta)
                    if np.isfinite(lo):
                        lm += math.log(-math.expm1(-beta * (hi - lo)))
                else:
                    if lo == -np.inf:
                        raise AssertionError("divergent piece")
                    lm = alpha + beta * lo - math.log(-beta)
                    if np.isfinite(hi):
                        lm += math.log(-math.expm1(beta * (hi - lo)))
                log_terms.append(lm)
                signs.append(sign)
    lp, sign = _signed_logsumexp(np.array(log_terms), np.array(signs))
    if sign < 0:
        return -math.inf  # rounding below zero: a probability that is 0 to working precision
    return float(min(lp, 0.0))


def scale_for(epsilon: float, sensitivity: float, rounds: int) -> float:
    """Per-round noise scale ``2 Delta / (eps / rounds)`` of a non-monotone score (module docstring)."""
    return 2.0 * sensitivity * rounds / check_epsilon(epsilon)


# --------------------------------------------------------------------------- the marginal score


@dataclass(frozen=True, eq=False)
class MarginalScores:
    """The epsilon-independent preparation of the top-k selectors on the marginal score.

    Attributes
    ----------
    scores : ndarray of shape (p,), float64
        ``f_j = |x_j^T y|`` on the clipped data (the DP-SIS score; Fan & Lv 2008 without
        standardisation, algorithm 1 of Swope et al. 2024).
    sensitivity : float
        Its component-wise sensitivity under replace-one, ``Delta_f = 2 b_x b_y``
        (:func:`dpbench.core.privacy.sensitivity.correlation_sensitivity`).
    """

    scores: np.ndarray
    sensitivity: float


def marginal_scores(trial) -> MarginalScores:
    """:class:`MarginalScores` of a trial's (clipped) data and clipping bounds.

    Parameters
    ----------
    trial : dpbench.bench.trial.Trial
        ``trial.problem.X`` (n, p), ``trial.problem.y`` (n,), ``trial.b_x``, ``trial.b_y``.

    Returns
    -------
    MarginalScores
    """
    X = np.asarray(trial.problem.X, dtype=np.float64)
    y = np.asarray(trial.problem.y, dtype=np.float64)
    return MarginalScores(np.abs(X.T @ y), correlation_sensitivity(trial.b_x, trial.b_y))


def sorted_rows(ordered: np.ndarray) -> np.ndarray:
    """The drawn index sets as supports: each row sorted ascending, int64."""
    return np.sort(np.asarray(ordered, dtype=np.int64), axis=1)


def set_log_prob(trial, support, law, max_p: int | None = None):
    """:meth:`Selector.log_prob` of a top-k selector from a set law, with the contract's edge cases.

    Parameters
    ----------
    trial : dpbench.bench.trial.Trial
    support : array_like of int
        s distinct indices in any order.
    law : callable
        ``law(S)`` for S the sorted support (int64, shape (s,)) returns log P(S).
    max_p : int, optional
        Largest p for which the law is evaluated.

    Returns
    -------
    float or None
        None when the law is not evaluated for this trial (s > :data:`ORDERS_MAX_K` or
        p > ``max_p``: the same answer for every support); ``-inf`` for a support of the wrong
        size; otherwise ``law(S)``.
    """
    if trial.s > ORDERS_MAX_K or (max_p is not None and trial.p > max_p):
        return None
    S = as_support(support, trial.p)
    if S.size != trial.s:
        return -math.inf
    return law(S)


class MarginalTopK(Selector):
    """Base of the selectors that run a private top-s on :func:`marginal_scores` (not registered).

    Declares the shared parts: pure DP on clipped data, least squares, the preparation
    :class:`MarginalScores` (epsilon-independent), and the check ``1 <= s < p``. A subclass
    sets ``name``, ``summary``, ``reference`` and implements ``draw`` (and ``log_prob``).
    """

    dp_type = "pure"
    losses = ("least-squares",)
    prepared_type = MarginalScores

    def check_setting(self, p, s):
        check_k(p, s)

    def prepare(self, trial, rng):
        return marginal_scores(trial)
