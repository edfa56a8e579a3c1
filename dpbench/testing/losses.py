"""Conformance checks of loss plugins: the score they define and the sensitivity privacy rests on.

A loss declares Δ, the largest change of its score R(S, D) over every support S when one row
of the clipped data is replaced (:meth:`dpbench.core.contracts.loss.Loss.sensitivity`). Every
exponential mechanism of dpbench is calibrated to that number, so a Δ below the truth breaks
the privacy of every selector run with that loss. :func:`check_loss_sensitivity` computes
|R(S, D) - R(S, D')| for every support on small data sets and neighbours built to move the score
the most (the replaced row set to each vertex of the clipping box), a brute-force lower bound
on the true Δ that the declared value must not be below.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dpbench.core.errors import UserInputError
from dpbench.core.problem import Problem
from dpbench.testing.checks import _declared, _fail, _rng
from dpbench.testing.reference import all_supports

#: Setup of the loss checks: clipping bounds, coefficient bound and ridge (b_x, b_y, r, Λ).
LOSS_SETUP = (0.5, 0.5, 1.1, 0.1)
#: Small data sets of the checks (n, p, s, seed, design), 2 * 2^(p+1) neighbours each: random
#: rows in the clipping box, and a "pinned" design whose rows hold the fit of the first s features
#: on the boundary ||beta|| = r, where one replaced row moves the score by close to the bound.
LOSS_PROBLEMS = ((6, 3, 1, 0, "random"), (6, 3, 2, 1, "random"), (8, 4, 2, 2, "random"),
                 (40, 3, 1, 3, "pinned"), (40, 3, 2, 4, "pinned"))
#: Relative slack allowed above the declared Δ (rounding of the two score solves).
SENSITIVITY_RTOL = 1e-7


def _data(cls, n, p, seed, b_x, b_y, design):
    """A data set inside the clipping box (labels ±1 for a binary response).

    ``"random"``: uniform rows and a noisy linear response. ``"pinned"``: every row
    x = (b_x / 5) on the first two features (0 elsewhere) with the largest response, so that
    the best fit needs ||beta|| far above r and sits on the boundary in the direction of the
    ones vector; a row replaced by the opposite vertex then changes its residual from
    b_y - b_x r sqrt(s) to about b_y + b_x r sqrt(s) (the extremes of the sensitivity proof).
    """
    rng = _rng(n, p, seed, 7)
    binary = cls.response == "binary"
    if design == "pinned":
        X = np.zeros((n, p))
        X[:, :2] = b_x / 5
        return X, np.full(n, 1.0 if binary else b_y)
    X = rng.uniform(-b_x, b_x, size=(n, p))
    if binary:
        y = np.where(X[:, 0] + 0.3 * rng.standard_normal(n) >= 0, 1.0, -1.0)
        y[:2] = (1.0, -1.0)  # both classes present
    else:
        y = np.clip(X.sum(axis=1) / math.sqrt(p) + 0.3 * rng.standard_normal(n), -b_y, b_y)
    return X, y


def _scores(loss, X, y, s, n, b_x, b_y, r, lam):
    """R(S, D) of every support of size s, on the data as the loss prepares it."""
    prepared = loss.prepare(Problem(X, y, s), b_x, b_y)
    S = all_supports(X.shape[1], s)
    return S, np.asarray(loss.score(prepared.X, prepared.y, lam, r)(S), dtype=float)


def check_loss_declarations(cls: type, **params) -> None:
    """The class declarations of a loss and the numbers it declares.

    Checks the registry's rules (base class, name, parameters), ``response`` in {"real",
    "binary"}, a non-empty ``oracle`` name, and that :meth:`~dpbench.core.contracts.loss.Loss.sensitivity`
    and :meth:`~dpbench.core.contracts.loss.Loss.score_bound` return positive finite floats on the setup
    :data:`LOSS_SETUP`, Δ non-increasing in n (a larger data set is never more sensitive).

    Raises
    ------
    AssertionError
        Naming the loss and what is wrong.
    """
    _declared("loss", cls)
    label = f"loss {cls.name!r}"
    if cls.response not in ("real", "binary"):
        _fail(label, f"response = {cls.response!r}; set it to 'real' or 'binary' (labels in {{-1, +1}})")
    if not (isinstance(cls.oracle, str) and cls.oracle):
        _fail(label, f"oracle = {cls.oracle!r}; name the oracle kind that serves the score ('generic' for any)")
    loss = cls(**params)
    b_x, b_y, r, _ = LOSS_SETUP
    deltas = []
    for n in (10, 100):
        delta = loss.sensitivity(2, n, b_x, b_y, r)
        bound = loss.score_bound(n, b_y)
        for what, v in (("sensitivity", delta), ("score_bound", bound)):
            if not (isinstance(v, (int, float, np.floating)) and math.isfinite(v) and v > 0):
                _fail(label, f"{what}(s=2, n={n}, b_x={b_x}, b_y={b_y}, r={r}) = {v!r}; expected a positive float")
        deltas.append(delta)
    if deltas[1] > deltas[0] * (1 + SENSITIVITY_RTOL):
        _fail(label, f"the sensitivity grows with n ({deltas[0]!r} at n=10, {deltas[1]!r} at n=100)")


def check_loss_score(cls: type, **params) -> None:
    """The batched score on small data sets: shape (B,), finite, in [0, ``score_bound``],
    the same for a support alone as in a batch, and the same on a second call.

    Raises
    ------
    AssertionError
        Naming the loss, the data set and the support that disagrees.
    """
    _declared("loss", cls)
    loss = cls(**params)
    b_x, b_y, r, lam = LOSS_SETUP
    for n, p, s, seed, design in LOSS_PROBLEMS:
        label = f"loss {cls.name!r} on a small {design} data set (n={n}, p={p}, s={s}, seed={seed})"
        X, y = _data(cls, n, p, seed, b_x, b_y, design)
        S, sc = _scores(loss, X, y, s, n, b_x, b_y, r, lam)
        if sc.shape != (len(S),):
            _fail(label, f"score of {len(S)} supports has shape {sc.shape}, expected ({len(S)},)")
        bound = loss.score_bound(n, b_y)
        bad = np.flatnonzero(~np.isfinite(sc) | (sc < -1e-12) | (sc > bound * (1 + 1e-9)))
        if bad.size:
            _fail(label, f"R({S[bad[0]].tolist()}) = {sc[bad[0]]!r}; expected a finite value in [0, score_bound = {bound!r}]")
        _, again = _scores(loss, X, y, s, n, b_x, b_y, r, lam)
        if not np.array_equal(sc, again):
            _fail(label, "two calls on the same data give different scores (the score must be deterministic)")
        prepared = loss.prepare(Problem(X, y, s), b_x, b_y)
        score = loss.score(prepared.X, prepared.y, lam, r)
        for k in (0, len(S) - 1):
            alone = float(np.asarray(score(S[k:k + 1]), dtype=float)[0])
            if not math.isclose(alone, sc[k], rel_tol=1e-9, abs_tol=1e-12):
                _fail(label, f"R({S[k].tolist()}) is {alone!r} alone but {sc[k]!r} in a batch")


def check_loss_sensitivity(cls: type, kinds=("tight", "paper"), **params) -> None:
    """The declared Δ bounds every score change a replaced row causes on small data sets.

    For each data set of :data:`LOSS_PROBLEMS` (inside the clipping box of :data:`LOSS_SETUP`)
    and each neighbour that replaces one row by a vertex of the box (every sign pattern of
    x and y; labels ±1 for a binary response), every support's |R(S, D) - R(S, D')| must be at
    most ``sensitivity(s, n, b_x, b_y, r, kind)`` for each bound choice in ``kinds`` the loss
    accepts (a loss that refuses a choice with :class:`~dpbench.core.errors.UserInputError` or
    ``ValueError`` is not held to it). Replace-one neighbouring (Dwork & Roth 2014, Definition
    2.4): the exponential mechanism exp(-ε R / (2 Δ)) is ε-DP only if Δ bounds this change
    (McSherry & Talwar 2007, Theorem 6).

    Raises
    ------
    AssertionError
        Naming the loss, the data set, the neighbour, the support and the change above Δ.
    """
    _declared("loss", cls)
    loss = cls(**params)
    b_x, b_y, r, lam = LOSS_SETUP
    for n, p, s, seed, design in LOSS_PROBLEMS:
        label = f"loss {cls.name!r} on a small {design} data set (n={n}, p={p}, s={s}, seed={seed})"
        declared = {}
        for kind in kinds:
            try:
                declared[kind] = float(loss.sensitivity(s, n, b_x, b_y, r, kind))
            except (UserInputError, ValueError):
                continue
        if not declared:
            _fail(label, f"sensitivity refuses every bound choice of {list(kinds)}")
        X, y = _data(cls, n, p, seed, b_x, b_y, design)
        S, base = _scores(loss, X, y, s, n, b_x, b_y, r, lam)
        y_values = (-1.0, 1.0) if cls.response == "binary" else (-b_y, b_y)
        worst, where = 0.0, None
        for row in (0, n - 1):
            for signs in itertools.product((-1.0, 1.0), repeat=p):
                for yv in y_values:
                    X2, y2 = X.copy(), y.copy()
                    X2[row], y2[row] = b_x * np.array(signs), yv
                    _, other = _scores(loss, X2, y2, s, n, b_x, b_y, r, lam)
                    diff = np.abs(other - base)
                    k = int(np.argmax(diff))
                    if diff[k] > worst:
                        worst, where = float(diff[k]), (row, signs, yv, S[k].tolist())
        for kind, delta in declared.items():
            if worst > delta * (1 + SENSITIVITY_RTOL) + 1e-12:
                row, signs, yv, sup = where
                _fail(label, f"replacing row {row} by x = {b_x} * {list(signs)}, y = {yv} changes R({sup}) by "
                             f"{worst!r}, above the declared sensitivity({kind!r}) = {delta!r}: the exponential "
                             "mechanisms calibrated to it are not private")


#: The loss checks, one test id each in :func:`dpbench.testing.parametrize_with_checks`.
LOSS_CHECKS = (check_loss_declarations, check_loss_score, check_loss_sensitivity)
