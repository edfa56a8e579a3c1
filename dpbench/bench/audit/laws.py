"""The two audit statistics: exact divergences of two output laws, and Monte-Carlo lower bounds.

Exact (a selector's ``log_prob`` over all C(p, s) supports):

* privacy loss ``max_S |log P_D(S) - log P_D'(S)|`` (pure ε-DP holds on the pair iff it is <= ε;
  Dwork & Roth 2014, Definition 2.4 with events reduced to single outputs, which suffices for a
  discrete output);
* hockey-stick divergence ``sum_S max(0, P_D(S) - e^ε P_D'(S))`` in both directions ((ε, δ)-DP
  holds on the pair iff both are <= δ; Balle et al. 2018, Theorem 1 / Barthe & Olmedo 2013).

Monte-Carlo (draws only): for an event E, ``P_D(E) <= e^ε P_D'(E) + δ`` gives
``ε >= log((P_D(E) - δ) / P_D'(E))``; with one-sided Clopper–Pearson bounds ``p_lo(D)`` and
``p_hi(D')`` (each at level α/2), ``ε_lb = log((p_lo - δ) / p_hi)`` is a lower bound on the
true ε with confidence ``1 - α`` (the statistic of Jagielski, Ullman & Oprea 2020, and of
DP-Sniper, Bichsel et al. 2021). The event must be chosen on draws independent of those that
evaluate it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp
from scipy.stats import beta, binomtest

#: Absolute tolerance of the exact checks (floating-point rounding of log-probabilities).
EXACT_TOL = 1e-9
#: Largest event considered: the supports with the largest empirical ratio, at most this many.
MAX_EVENT = 64


def privacy_loss(la: np.ndarray, lb: np.ndarray) -> tuple[float, int]:
    """``max_S |log P_D(S) - log P_D'(S)|`` and the support index where it is reached.

    Parameters
    ----------
    la, lb : ndarray of shape (K,), float64
        Natural-log probabilities of the same K supports under D and D' (-inf allowed).

    Returns
    -------
    loss : float
        In nats; ``inf`` when one law gives mass to a support the other excludes; supports
        impossible under both are ignored.
    index : int
    """
    la, lb = np.asarray(la, float), np.asarray(lb, float)
    both = np.isneginf(la) & np.isneginf(lb)
    with np.errstate(invalid="ignore"):
        diff = np.where(both, 0.0, np.abs(la - lb))
    diff = np.where(np.isnan(diff), np.inf, diff)
    k = int(np.argmax(diff))
    return float(diff[k]), k


def hockey_stick(la: np.ndarray, lb: np.ndarray, epsilon: float) -> float:
    """``max`` over both directions of ``sum_S max(0, P(S) - e^ε Q(S))`` (computed in log space).

    Parameters
    ----------
    la, lb : ndarray of shape (K,), float64
        Log-probabilities of the same supports under D and D'.
    epsilon : float

    Returns
    -------
    float
        The smallest δ for which the pair satisfies (ε, δ)-DP.
    """
    la, lb = np.asarray(la, float), np.asarray(lb, float)
    out = 0.0
    for a, b in ((la, lb), (lb, la)):
        with np.errstate(invalid="ignore"):
            gap = a - (b + epsilon)
        keep = gap > 0
        if keep.any():
            # P - e^eps Q = P (1 - exp(-(log P - log Q - eps)))
            terms = a[keep] + np.log(-np.expm1(-gap[keep]))
            out = max(out, float(np.exp(logsumexp(terms))))
    return out


def clopper_pearson(k, n, alpha):
    """One-sided Clopper–Pearson bounds: ``(lower, upper)`` each holding with probability ``1 - alpha``.

    The exact binomial interval (Clopper & Pearson 1934) by the beta quantiles, vectorised;
    equal to ``scipy.stats.binomtest(k, n).proportion_ci(1 - 2 alpha, method="exact")``
    (:func:`clopper_pearson_scipy`).

    Parameters
    ----------
    k : int or ndarray of int
        Successes, ``0 <= k <= n``.
    n : int
        Trials, ``n >= 1``.
    alpha : float
        Error probability of each one-sided bound, in (0, 1/2).

    Returns
    -------
    lower, upper : float or ndarray
    """
    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, beta.ppf(alpha, k, n - k + 1), 0.0)
        hi = np.where(k < n, beta.ppf(1 - alpha, k + 1, n - k), 1.0)
    return lo, hi


def clopper_pearson_scipy(k: int, n: int, alpha: float) -> tuple[float, float]:
    """:func:`clopper_pearson` for one count through ``scipy.stats.binomtest`` (the final bounds)."""
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=1 - 2 * alpha, method="exact")
    return float(ci.low), float(ci.high)


def epsilon_lower_bound(p_lo: float, p_hi: float, delta: float) -> float:
    """``log((p_lo - δ) / p_hi)``, or ``-inf`` when ``p_lo <= δ`` (the event proves nothing)."""
    if p_lo <= delta or p_hi <= 0:
        return -math.inf if p_lo <= delta else math.inf
    return math.log((p_lo - delta) / p_hi)


def support_counts(draws_a: np.ndarray, draws_b: np.ndarray):
    """Counts of every support drawn on D or D' (rows of two (N, s) int arrays).

    Returns
    -------
    keys : ndarray of shape (K, s), int64
        The distinct supports seen.
    ca, cb : ndarray of shape (K,), int64
        Their counts among ``draws_a`` and ``draws_b``.
    """
    both = np.concatenate([draws_a, draws_b])
    keys, inv = np.unique(both, axis=0, return_inverse=True)
    inv = inv.ravel()
    ca = np.bincount(inv[:len(draws_a)], minlength=len(keys))
    cb = np.bincount(inv[len(draws_a):], minlength=len(keys))
    return keys, ca, cb


def choose_event(draws_a, draws_b, delta: float, alpha: float):
    """The event (a set of supports) and direction with the best lower bound on these draws.

    Candidates: for each direction, the sets of the j supports with the largest empirical
    ratio ``(c_1 + 1/2) / (c_2 + 1/2)``, j = 1..:data:`MAX_EVENT`; each is scored by the
    Clopper–Pearson lower bound it gives on the same draws (a plug-in score: the final bound
    must be computed on other draws, :func:`evaluate_event`).

    Returns
    -------
    event : set of tuple
        The supports of E.
    forward : bool
        True for ``P_D(E)`` against ``P_D'(E)``, False for the reverse direction.
    score : float
        The plug-in lower bound (-inf if no event proves anything).
    """
    keys, ca, cb = support_counts(draws_a, draws_b)
    na, nb = len(draws_a), len(draws_b)
    best = (set(), True, -math.inf)
    for forward, c1, c2, n1, n2 in ((True, ca, cb, na, nb), (False, cb, ca, nb, na)):
        order = np.argsort(-(c1 + 0.5) / (c2 + 0.5), kind="stable")[:MAX_EVENT]
        k1, k2 = np.cumsum(c1[order]), np.cumsum(c2[order])
        lo, _ = clopper_pearson(k1, n1, alpha / 2)
        _, hi = clopper_pearson(k2, n2, alpha / 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            lb = np.where(lo > delta, np.log(np.maximum(lo - delta, 1e-300)) - np.log(hi), -np.inf)
        j = int(np.argmax(lb))
        if lb[j] > best[2]:
            best = ({tuple(r) for r in keys[order[:j + 1]].tolist()}, forward, float(lb[j]))
    return best


def evaluate_event(event, forward: bool, draws_a, draws_b, delta: float, alpha: float) -> dict:
    """The lower bound on ε of a fixed event on fresh draws (confidence ``1 - alpha``).

    Returns
    -------
    dict
        ``epsilon_lb`` (nats), ``p_lo``, ``p_hi``, ``k1``, ``k2``, ``n`` (draws per side).
    """
    d1, d2 = (draws_a, draws_b) if forward else (draws_b, draws_a)
    k1 = sum(tuple(r) in event for r in d1.tolist())
    k2 = sum(tuple(r) in event for r in d2.tolist())
    lo, _ = clopper_pearson_scipy(k1, len(d1), alpha / 2)
    _, hi = clopper_pearson_scipy(k2, len(d2), alpha / 2)
    return {"epsilon_lb": epsilon_lower_bound(lo, hi, delta), "p_lo": lo, "p_hi": hi, "k1": int(k1),
            "k2": int(k2), "n": int(len(d1))}
