"""Losses as plugins: the score R(S, D) a trial uses and its sensitivity.

A :class:`dpbench.core.contracts.loss.Loss` (the contract) declares everything the host needs to run the exponential-mechanism
selectors with it (issue 16):

* :meth:`Loss.prepare` -- the declared, data-independent preprocessing (clipping) of a problem;
* :meth:`Loss.score` -- the batched per-support score ``R(S, D)`` (a callable mapping supports
  (B, s) int to scores (B,));
* :meth:`Loss.sensitivity` -- its global sensitivity Delta under replace-one neighbours
  after that preprocessing;
* :meth:`Loss.score_bound` -- an upper bound on R(S, D) over all supports and data sets
  (top-R's epsilon' with finite T, Theorem 1 of behdin2024);
* ``oracle`` -- what an oracle needs: ``"least-squares"`` for the outer-approximation
  backends that read the ridge Gram structure, ``"generic"`` when only the batched score
  (and its dual lower bounds) is available; a solver declares the kinds it accepts in
  ``Solver.losses``.

Least squares (:class:`LeastSquares`) is today's :class:`~dpbench.core.score.RidgeScore` with the
sensitivity of :func:`dpbench.core.privacy.sensitivity.sensitivity`, so every existing number is
unchanged; the hinge loss (:class:`Hinge`) is the second built-in.
"""

from __future__ import annotations

import math

import numpy as np

from dpbench.core.params import Param
from dpbench.core.contracts.loss import Loss
from dpbench.core.errors import UserInputError
from dpbench.core.privacy.sensitivity import sensitivity as ridge_sensitivity
from dpbench.core.score.hinge import HingeScore
from dpbench.core.score.ridge import RidgeScore

#: The loss of every run that names none.
DEFAULT_LOSS = "least-squares"


class LeastSquares(Loss):
    """Ridge least squares with an l2 ball (docs/methods/score.md): :class:`~dpbench.core.score.RidgeScore`."""

    name = "least-squares"
    summary = "||y - X_S beta||^2 + Lambda ||beta||^2 over ||beta|| <= r (docs/methods/score.md; every selector)"
    response = "real"
    oracle = "least-squares"

    def score(self, X, y, lam, r):
        return RidgeScore(X, y, lam=lam, r=r)

    def sensitivity(self, s, n, b_x, b_y, r, kind="tight"):
        """Delta of :func:`dpbench.core.privacy.sensitivity.sensitivity` (independent of n)."""
        return ridge_sensitivity(s, b_x, b_y, r, kind)

    def score_bound(self, n, b_y):
        """``R(S, D) <= ||y||^2 <= n b_y^2`` (beta = 0 is feasible)."""
        return n * b_y * b_y


class Hinge(Loss):
    """Hinge loss of sparse classification (NeurIPS 2025, ``hinge_neurips.py``), labels +-1.

    ``R(S, D) = min_{||beta|| <= r} (1/n) sum_i max(0, 1 - y_i x_{i,S}^T beta) + (Lambda/n) ||beta||^2``,
    solved per support by :class:`~dpbench.core.score.hinge.HingeScore` with a duality-gap certificate.
    """

    name = "hinge"
    summary = ("(1/n) sum max(0, 1 - y x_S^T beta) + (Lambda/n)||beta||^2 over ||beta|| <= r, labels +-1 "
               "(NeurIPS 2025 classification)")
    response = "binary"
    oracle = "generic"
    params = {
        "gap_tol": Param(1e-4, "certified duality gap, in units of 1/n (added to Delta; 1e-4 is "
                                 "under 1e-4 of Delta)", float),
        "max_epochs": Param(500, "deterministic work limit: dual coordinate passes per batch of supports", int),
    }

    def prepare(self, problem, b_x, b_y):
        """Clip X to [-b_x, b_x]; labels stay +-1 (b_y is not used: |y_i| = 1)."""
        y = np.asarray(problem.y, dtype=np.float64)
        if not np.all(np.abs(y) == 1.0):
            raise UserInputError("--loss hinge needs labels in {-1, +1}; use --generator classification "
                                 "or a two-class data set")
        clipped = problem.clipped(b_x, 1.0)
        return clipped

    def score(self, X, y, lam, r):
        return HingeScore(X, y, lam=lam, r=r, gap_tol=self.config["gap_tol"] / len(y),
                          max_epochs=self.config["max_epochs"])

    def sensitivity(self, s, n, b_x, b_y, r, kind="tight"):
        """Delta = (1 + b_x r sqrt(s)) / n + gap_tol / n under replace-one (gap_tol default 1e-4) neighbours.

        Proof sketch. Let F_D(beta) be the objective on D and D' differ in row n only. For a
        feasible beta (||beta|| <= r) and a clipped row (||x_{n,S}|| <= b_x sqrt(s)),
        ``|y_n x_{n,S}^T beta| <= b_x sqrt(s) r``, so each hinge term lies in
        [0, 1 + b_x r sqrt(s)] and ``|F_D(beta) - F_D'(beta)| <= (1 + b_x r sqrt(s)) / n``
        for every feasible beta; the ridge term does not depend on the data. Minima over
        the same feasible set of two functions within c of each other are within c, which
        gives the exact score's Delta (the authors' ``delta = 1/n (1 + b_x r sqrt(s))``).
        The computed score is the primal value at a certified point, within
        ``gap_tol / n`` above the exact minimum (duality gap), so it moves by at most
        Delta + gap_tol / n between neighbours; that is what is returned, so the exponential
        mechanism is calibrated to the score it actually uses. ``kind`` is ignored.
        """
        if min(b_x, r) <= 0 or s < 1 or n < 1:
            raise UserInputError(f"b_x, r must be positive, s >= 1 and n >= 1 (got b_x={b_x}, r={r}, s={s}, n={n})")
        return (1.0 + b_x * r * math.sqrt(s)) / n + self.config["gap_tol"] / n

    def score_bound(self, n, b_y):
        """``R(S, D) <= 1``: beta = 0 is feasible and scores exactly 1."""
        return 1.0
