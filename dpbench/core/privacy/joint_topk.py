"""The joint exponential mechanism for top-k selection (Gillenwater, Joseph, Medina & Ribero Diaz,
ICML 2022): one exponential mechanism over all ordered k-sequences, sampled and scored exactly.

Split from :mod:`dpbench.core.privacy.topk` (the peeling, permute-and-flip and
one-shot Laplace mechanisms), whose module docstring states the replace-one calibration that
applies here too: utility sensitivity ``2 Delta_f``.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import logsumexp

from dpbench.core.privacy.topk import _BLOCK_ELEMENTS, _check_subset, check_k, check_scores


def joint_table(scores, k: int):
    """The epsilon-independent table of the joint exponential mechanism for top-k.

    Gillenwater, Joseph, Medina & Ribero Diaz 2022 (lemma 3.7). With the scores
    sorted decreasingly, ``g_1 >= ... >= g_p``, a sequence ``(s_1..s_k)`` of distinct items has
    utility ``u = -max_i (g_i - f_{s_i})`` (its worst shortfall against the true i-th score).
    Its possible values are ``-v`` for ``v`` among the gaps ``g_i - g_r >= 0``. A sequence with
    ``max = v`` is counted once, at the first position ``i*`` whose gap equals v: positions
    before ``i*`` take an item with ``g_i - f < v`` (a prefix of length ``a_i(v)`` of the sorted
    order), position ``i*`` one with ``g_{i*} - f = v`` (``e(v) = b_{i*}(v) - a_{i*}(v)`` items),
    positions after one with ``g_i - f <= v`` (a prefix of length ``b_i(v)``). The prefixes are
    nested and grow with i, so the number of such sequences is

        N(v, i*) = prod_{i < i*} (a_i(v) - (i - 1)) * e_{i*}(v) * prod_{i > i*} (b_i(v) - (i - 1)).

    Ties are counted exactly (the reference code instead separates them with data-independent
    offsets). Work: O(k^2 p log p).

    Parameters
    ----------
    scores : array_like of shape (p,)
    k : int

    Returns
    -------
    dict
        ``order`` (p,) int64: items by decreasing score (stable); ``gaps`` (V,) float64: the
        distinct values v >= 0; ``a``, ``b`` (k, V) int64: prefix lengths; ``log_count`` (V, k)
        float64: ``log N(v, i*)`` (``-inf`` when empty).
    """
    f = check_scores(scores)
    p = f.size
    check_k(p, k)
    order = np.argsort(-f, kind="stable")
    g = f[order]
    D = g[:k, None] - g[None, :]  # (k, p), each row increasing along the sorted order
    gaps = np.unique(D[D >= 0])
    a = np.stack([np.searchsorted(D[i], gaps, side="left") for i in range(k)])
    b = np.stack([np.searchsorted(D[i], gaps, side="right") for i in range(k)])
    pos = np.arange(k)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_a = np.log(np.maximum(a - pos, 0).astype(float))
        log_b = np.log(np.maximum(b - pos, 0).astype(float))
        log_e = np.log((b - a).astype(float))
    zeros = np.zeros((1, gaps.size))
    before = np.cumsum(np.vstack([zeros, log_a[:-1]]), axis=0)  # sum_{i < i*}
    after = np.cumsum(np.vstack([log_b[1:], zeros])[::-1], axis=0)[::-1]  # sum_{i > i*}
    log_count = (before + log_e + after).T
    log_count[~np.isfinite(log_count)] = -np.inf
    return {"order": order.astype(np.int64), "gaps": gaps, "a": a.astype(np.int64), "b": b.astype(np.int64),
            "log_count": log_count}


def _joint_logits(table, epsilon: float, sensitivity: float) -> np.ndarray:
    """log N(v, i*) - eps v / (2 Delta_u), shape (V, k): the exponential mechanism on u = -v."""
    return table["log_count"] - (epsilon * table["gaps"] / (2.0 * sensitivity))[:, None]


def _uniform_from_prefix(rng, length: int, chosen: list) -> int:
    """A uniform position in [0, length) not in ``chosen`` (all of which lie in that range)."""
    u = int(rng.integers(length - len(chosen)))
    for c in sorted(chosen):
        if u >= c:
            u += 1
    return u


def joint_sample(rng: np.random.Generator, table, epsilon: float, sensitivity: float,
                 n_draws: int = 1) -> np.ndarray:
    """Sequences from the joint exponential mechanism ``P(s) ∝ exp(eps u(s) / (2 Delta_u))``.

    Draws a cell (v, i*) with probability proportional to ``N(v, i*) exp(-eps v / (2 Delta_u))``
    (:func:`joint_table`), then a uniform sequence in it, position by position: a uniform
    unused item from the allowed prefix (Gillenwater et al. 2022).

    Parameters
    ----------
    table : dict from :func:`joint_table`
    epsilon : float
    sensitivity : float
        ``Delta_u``, the sensitivity of the utility (``2 Delta_f`` under replace-one).

    Returns
    -------
    ndarray of shape (n_draws, k), int64
        Item indices, in the order of the sequence.
    """
    lg = _joint_logits(table, epsilon, sensitivity)
    V, k = lg.shape
    cells = np.argmax(lg.ravel() + rng.gumbel(size=(n_draws, V * k)), axis=1) if n_draws * V * k <= _BLOCK_ELEMENTS \
        else np.array([np.argmax(lg.ravel() + rng.gumbel(size=V * k)) for _ in range(n_draws)])
    a, b, order = table["a"], table["b"], table["order"]
    out = np.empty((n_draws, k), dtype=np.int64)
    for n, cell in enumerate(cells):
        lv, star = divmod(int(cell), k)
        chosen = []
        for i in range(k):
            if i < star:
                pos = _uniform_from_prefix(rng, int(a[i, lv]), chosen)
            elif i == star:
                pos = int(a[i, lv]) + int(rng.integers(int(b[i, lv] - a[i, lv])))
            else:
                pos = _uniform_from_prefix(rng, int(b[i, lv]), chosen)
            chosen.append(pos)
        out[n] = order[chosen]
    return out


def joint_log_normaliser(table, epsilon: float, sensitivity: float) -> float:
    """log of sum over all p!/(p-k)! sequences of exp(eps u / (2 Delta_u))."""
    return float(logsumexp(_joint_logits(table, epsilon, sensitivity)))


def joint_log_prob(scores, table, subset, epsilon: float, sensitivity: float, log_z: float | None = None) -> float:
    """log P(the joint mechanism returns a sequence whose set is ``subset``): sum over its k! orders.

    Parameters
    ----------
    scores : array_like of shape (p,)
    table : dict from :func:`joint_table` of the same scores
    subset : array_like of shape (k,), int
    epsilon, sensitivity : float
    log_z : float, optional
        :func:`joint_log_normaliser`, when already known.

    Returns
    -------
    float
    """
    f = np.asarray(scores, dtype=np.float64)
    S = _check_subset(subset, f.size)
    k = S.size
    g = f[table["order"][:k]]
    if log_z is None:
        log_z = joint_log_normaliser(table, epsilon, sensitivity)
    utils = [-np.max(g - f[list(order)]) for order in itertools.permutations(S.tolist())]
    return float(logsumexp(epsilon * np.array(utils) / (2.0 * sensitivity)) - log_z)
