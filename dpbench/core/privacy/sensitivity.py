"""Global sensitivities Delta of the scores the mechanisms use, under replace-one neighbours.

One place for every sensitivity bound: the ridge score of the exponential
mechanisms (docs/methods/score.md), the l1-bounded score of Roy & Tewari's code (``mcmc``
with ``score = l1``), the correlation scores of DP-SIS (4.6) and the votes of
subsample-and-aggregate (4.5).
"""

from __future__ import annotations

import math

import numpy as np

from dpbench.core.errors import UserInputError


def sensitivity(s: int, b_x: float, b_y: float, r: float, kind: str = "tight") -> float:
    """Global sensitivity Delta of the score under replace-one neighbouring data sets.

    Parameters
    ----------
    s : int
        Sparsity level.
    b_x, b_y : float
        Clipping bounds, ``|x_ij| <= b_x`` and ``|y_i| <= b_y``.
    r : float
        l2 bound on the coefficients.
    kind : {"tight", "paper"}
        ``"tight"`` (default): ``(b_y + b_x r sqrt(s))^2``, the bound the proof of Lemma 2
        of behdin2024-dp-bss-iclr-workshop actually establishes, since
        ``|y_n - x_{n,S}^T beta| <= b_y + ||x_{n,S}||_2 ||beta||_2 <= b_y + b_x sqrt(s) r``.
        ``"paper"``: the looser ``2 b_y^2 + 2 b_x^2 r^2 s`` stated in Lemma 2.
        The ridge term does not depend on the data and cancels.

    Returns
    -------
    float
        Delta, in units of the (unscaled) score.

    Raises
    ------
    UserInputError
        For an unknown ``kind`` or non-positive bounds.
    """
    if min(b_x, b_y, r) <= 0 or s < 1:
        raise UserInputError(f"b_x, b_y, r must be positive and s >= 1 (got b_x={b_x}, b_y={b_y}, r={r}, s={s})")
    if kind == "tight":
        return (b_y + b_x * r * math.sqrt(s)) ** 2
    if kind == "paper":
        return 2 * b_y**2 + 2 * b_x**2 * r**2 * s
    raise UserInputError(f"unknown sensitivity kind {kind!r}; use 'tight' or 'paper'")


def l1_sensitivity(b_x: float, b_y: float, bound: float) -> float:
    """Global sensitivity of the l1-bounded score under replace-one, after clipping.

    The score is ``R_1(S, D) = min_{||beta||_1 <= B} ||y - X_S beta||_2^2``
    (:func:`dpbench.core.score.l1.solve_l1_blocks`). Let D and D' differ in row n and let
    ``beta'`` be the minimiser on D'. It is feasible for D, so

        R_1(S, D) <= sum_{i != n} (y_i - x_{i,S}^T beta')^2 + (y_n - x_{n,S}^T beta')^2
                  =  R_1(S, D') - (y'_n - x'_{n,S}^T beta')^2 + (y_n - x_{n,S}^T beta')^2
                  <= R_1(S, D') + (y_n - x_{n,S}^T beta')^2,

    and by Hoelder ``|x_{n,S}^T beta'| <= ||x_{n,S}||_inf ||beta'||_1 <= b_x B``, so
    ``(y_n - x_{n,S}^T beta')^2 <= (b_y + b_x B)^2``; exchanging D and D' gives the other side:

        Delta = (b_y + b_x B)^2.

    It is exact for this argument: the residual bound is attained by a row with
    ``y_n = b_y`` and ``x_{n,S} = -b_x sign(beta')`` whenever ``||beta'||_1 = B``, and the
    dropped term ``(y'_n - x'_{n,S}^T beta')^2`` is 0 for a row fitted exactly. Unlike the
    ridge score's ``(b_y + b_x r sqrt(s))^2`` it does not grow with s (the l1 ball is the
    dual of the clipping's l_inf box). It is the same argument as docs/methods/score.md.

    Roy & Tewari's released code uses ``Du = (B * max|x| + max|y|)^2`` with max|y| read
    from the data: that bound is itself a function of the data (not private), whereas here
    y is clipped to the fixed ``b_y`` first.

    Parameters
    ----------
    b_x, b_y : float
        Clipping bounds, ``|x_ij| <= b_x`` and ``|y_i| <= b_y``; positive and finite.
    bound : float
        The l1 bound B on the coefficients; positive and finite.

    Returns
    -------
    float
        Delta, in units of the (unscaled) residual sum of squares.

    Raises
    ------
    UserInputError
        If a bound is not positive and finite.
    """
    if not all(np.isfinite(v) and v > 0 for v in (b_x, b_y, bound)):
        raise UserInputError(f"b_x, b_y and the l1 bound must be positive and finite "
                             f"(got b_x={b_x}, b_y={b_y}, B={bound})")
    return (b_y + b_x * bound) ** 2


def correlation_sensitivity(b_x: float, b_y: float) -> float:
    """Component-wise sensitivity of the correlation scores ``f_j = |x_j^T y|`` (replace-one).

    Replacing row n changes ``x_j^T y`` by ``x_{nj} y_n - x'_{nj} y'_n``, at most
    ``2 b_x b_y`` in absolute value when ``|x_ij| <= b_x`` and ``|y_i| <= b_y``; the absolute
    value is 1-Lipschitz, so ``Delta_f = 2 b_x b_y`` for every j (docs/methods/dpsis.md; the "1" of
    algorithm 1 of swope2024-dp-sis is the add/remove bound with b_x = b_y = 1).

    Parameters
    ----------
    b_x, b_y : float
        Clipping bounds, positive and finite.

    Returns
    -------
    float

    Raises
    ------
    UserInputError
        If a bound is not positive and finite.
    """
    if not (np.isfinite(b_x) and np.isfinite(b_y) and b_x > 0 and b_y > 0):
        raise UserInputError(f"clipping bounds must be positive and finite (got b_x={b_x}, b_y={b_y})")
    return 2.0 * b_x * b_y


def vote_sensitivity(s: int, m: int) -> float:
    """L1 sensitivity ``2 s / m`` of the averaged block votes of subsample-and-aggregate.

    Each of the m disjoint blocks casts 0/1 votes for at most s features; replacing one row
    changes one block's vote vector by at most ``2 s`` in L1 (s votes withdrawn, s cast), and
    the average divides by m (docs/methods/sampagg.md; Kifer, Smith & Thakurta 2012).

    Parameters
    ----------
    s : int
        Votes per block, ``s >= 1``.
    m : int
        Number of blocks, ``m >= 1``.

    Returns
    -------
    float
    """
    if s < 1 or m < 1:
        raise UserInputError(f"need s >= 1 votes per block and m >= 1 blocks (got s={s}, m={m})")
    return 2.0 * s / m


def gradient_sensitivity(b_x: float, b_y: float, fit_bound: float, n: int) -> float:
    """l_inf sensitivity of the least-squares gradient ``(1/n) X^T (X beta - y)`` under replace-one.

    For a fixed coefficient vector beta (chosen privately at an earlier step, so fixed by
    adaptive composition), replacing row i changes coordinate j of the gradient by
    ``(1/n) |(x_i^T beta - y_i) x_ij - (x'_i^T beta - y'_i) x'_ij|
    <= (2/n) b_x (b_y + max_i |x_i^T beta|)``, with ``|x_ij| <= b_x``, ``|y_i| <= b_y``.
    ``fit_bound`` bounds ``|x_i^T beta|`` over the feasible beta: ``b_x sqrt(s) r`` for an
    s-sparse beta with ``||beta||_2 <= r`` (Cauchy-Schwarz; noisy IHT, Cai, Wang & Zhang 2021,
    the l_inf bound of Lemma 3.3's condition), ``b_x C`` for ``||beta||_1 <= C`` (Hoelder;
    Frank-Wolfe on the l1 ball, Talwar, Thakurta & Zhang 2015, the ``L_1 ||C||_1 / n`` of
    Algorithm 2 with the factor 2 of replace-one).

    Parameters
    ----------
    b_x, b_y : float
        Clipping bounds, positive and finite.
    fit_bound : float
        Bound on ``|x_i^T beta|``, >= 0.
    n : int
        Number of rows (the same in both neighbours), >= 1.

    Returns
    -------
    float
        ``2 b_x (b_y + fit_bound) / n``, in units of the gradient.

    Raises
    ------
    UserInputError
        For a bound that is not positive (fit_bound: non-negative) and finite, or n < 1.
    """
    if not (np.isfinite(b_x) and np.isfinite(b_y) and b_x > 0 and b_y > 0
            and np.isfinite(fit_bound) and fit_bound >= 0 and n >= 1):
        raise UserInputError(f"clipping bounds must be positive and finite, the fit bound finite and >= 0, "
                             f"n >= 1 (got b_x={b_x}, b_y={b_y}, fit_bound={fit_bound}, n={n})")
    return 2.0 * b_x * (b_y + fit_bound) / n
