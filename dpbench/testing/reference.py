"""Brute-force references: every support enumerated and scored independently of the code under test.

The helpers enumerate every support with :mod:`itertools` and score it with a fresh
:class:`dpbench.core.score.RidgeScore`, independently of the selectors' and oracles' own code paths;
:func:`tiny_trial` is the small problem every conformance check runs on.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import logsumexp
from scipy.stats import chisquare

from dpbench.core.privacy.sensitivity import sensitivity
from dpbench.core.problem import Problem
from dpbench.core.score import RidgeScore
from dpbench.bench.trial import Trial
from dpbench.bench.registry import PluginInstances



def all_supports(p: int, s: int) -> np.ndarray:
    """Every support of size s of {0, ..., p-1}, shape (C(p, s), s), int64, lexicographic order
    (that of :func:`itertools.combinations`)."""
    return np.array(list(itertools.combinations(range(p), s)), dtype=np.int64).reshape(-1, s)


def brute_force_scores(trial: Trial) -> tuple[np.ndarray, np.ndarray]:
    """All supports (lexicographic) and their scores R(S, D) from a fresh RidgeScore.

    Returns
    -------
    supports : ndarray of shape (C(p, s), s), int64
    scores : ndarray of shape (C(p, s),), float64
        R(S, D) of docs/methods/score.md on ``trial.problem`` with the trial's Lambda and r.
    """
    S = all_supports(trial.p, trial.s)
    return S, RidgeScore(trial.problem.X, trial.problem.y, lam=trial.lam, r=trial.r)(S)


def exponential_mechanism_log_probs(trial: Trial, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """The exponential mechanism on the shared score, by enumeration of every support.

    log P(S) = -ε R(S, D) / (2 Δ) - log Σ_S' exp(-ε R(S', D) / (2 Δ)) (McSherry & Talwar
    2007; docs/methods/exponential-mechanism.md), with Δ recomputed from the trial's bounds
    (:func:`dpbench.core.privacy.sensitivity.sensitivity`).

    Returns
    -------
    supports : ndarray of shape (C(p, s), s), int64, lexicographic
    log_probs : ndarray of shape (C(p, s),), natural logarithms summing (as probabilities) to 1
    """
    S, scores = brute_force_scores(trial)
    delta = sensitivity(trial.s, trial.b_x, trial.b_y, trial.r, trial.sensitivity_bound)
    lw = -epsilon * scores / (2 * delta)
    return S, lw - logsumexp(lw)


def chi_square_gof(draws, supports, log_probs, min_expected: float = 5.0) -> tuple[float, int]:
    """Chi-square goodness of fit of drawn supports to exact probabilities.

    Cells are pooled, smallest expected count first, until each expects at least
    ``min_expected`` draws (Cochran's rule).

    Parameters
    ----------
    draws : array_like of shape (m, s), int
        Drawn supports (each row sorted).
    supports : array_like of shape (K, s), int
        Every support with positive probability, sorted rows, in any order.
    log_probs : array_like of shape (K,)
        Their exact natural-log probabilities.

    Returns
    -------
    pvalue : float
        From :func:`scipy.stats.chisquare`; 0.0 if a draw is not among ``supports``.
    cells : int
        Number of cells after pooling.
    """
    S = np.asarray(supports, dtype=np.int64)
    idx = {tuple(r): i for i, r in enumerate(S.tolist())}
    keys = [idx.get(tuple(r), -1) for r in np.asarray(draws, dtype=np.int64).tolist()]
    if min(keys, default=0) < 0:
        return 0.0, 0
    counts = np.bincount(keys, minlength=len(S)).astype(float)
    exp = np.exp(np.asarray(log_probs, dtype=float)) * len(keys)
    obs_c, exp_c, acc_o, acc_e = [], [], 0.0, 0.0
    for i in np.argsort(exp, kind="stable"):
        acc_o += counts[i]
        acc_e += exp[i]
        if acc_e >= min_expected:
            obs_c.append(acc_o)
            exp_c.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e or acc_o:
        if not obs_c:
            return 1.0, 1
        obs_c[-1] += acc_o
        exp_c[-1] += acc_e
    if len(obs_c) < 2:
        return 1.0, len(obs_c)
    exp_c = np.array(exp_c) * sum(obs_c) / sum(exp_c)  # the draws' total, to rounding
    return float(chisquare(obs_c, exp_c).pvalue), len(obs_c)


def tiny_problem(n: int, p: int, s: int, seed: int) -> Problem:
    """A small Gaussian design with a planted support (y = X β + noise, β = 1 on the support)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    support = np.sort(rng.choice(p, size=s, replace=False)).astype(np.int64)
    y = X[:, support].sum(axis=1) / math.sqrt(s) + 0.5 * rng.standard_normal(n)
    return Problem(X, y, s, true_support=support, name=f"conformance-{n}x{p}-s{s}")


def tiny_trial(n: int = 40, p: int = 6, s: int = 2, seed: int = 0, lam: float = 1.0,
               solver: str = "enumerate", clip: bool = True, delta: float = 1e-6) -> Trial:
    """The trial of :func:`tiny_problem`: b_x = b_y = 0.5 (data clipped to them if ``clip``),
    r = 1.1, oracle ``solver``, run-level DP δ ``delta`` (for approximate-DP selectors)."""
    b = 0.5
    problem = tiny_problem(n, p, s, seed)
    return Trial(problem.clipped(b, b) if clip else problem, b_x=b, b_y=b, r=1.1, lam=lam, solver=solver,
                 delta=delta, instances=PluginInstances())
