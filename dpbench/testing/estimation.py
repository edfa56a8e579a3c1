"""Conformance checks of estimation stages (plugin kind ``estimator``): private coefficients on a
selected support, and the constants their guarantee rests on.

An estimation stage releases coefficients on a support the selector chose; the pair is private
by composition only if each release is private for every fixed support
(:mod:`dpbench.core.contracts.estimation`). These checks run a stage on the tiny trials of
:func:`dpbench.testing.tiny_trial` and compare what it returns with the contract and with
brute-force references.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np

from dpbench.core.contracts.estimation import ESTIMATOR_DP_TYPES, Estimates
from dpbench.testing.checks import _declared, _fail, _rng
from dpbench.testing.reference import all_supports, brute_force_scores, tiny_trial

#: ε of the estimation checks.
ESTIMATE_EPSILON = 1.0
#: The tiny trials of the estimation checks (n, p, s, seed).
ESTIMATE_PROBLEMS = ((40, 6, 2, 0), (30, 5, 3, 1))
#: Random coefficient vectors per support at which the gradient-range check evaluates.
GRADIENT_POINTS = 64


def _trial(cls, n, p, s, seed):
    """A tiny least-squares trial when the stage accepts that loss (the only built-in it may)."""
    if not ("least-squares" in cls.losses or "*" in cls.losses):
        raise AssertionError(f"estimator {cls.name!r}: the conformance checks run on least squares, which "
                             f"losses = {cls.losses!r} leaves out")
    return tiny_trial(n, p, s, seed)


def check_estimator_declarations(cls: type, **params) -> None:
    """The class declarations (registry rules, ``dp_type`` in :data:`ESTIMATOR_DP_TYPES`, a
    non-empty ``losses`` tuple).

    Raises
    ------
    AssertionError
        Naming the class and the declaration that is wrong.
    """
    _declared("estimator", cls)
    if cls.dp_type not in ESTIMATOR_DP_TYPES:  # the registry checks it too; kept for the message
        _fail(f"estimator {cls.name!r}", f"dp_type = {cls.dp_type!r}; expected one of {ESTIMATOR_DP_TYPES}")


def check_estimator_estimates(cls: type, **params) -> None:
    """What :meth:`~dpbench.core.contracts.estimation.PrivateEstimator.estimate` returns on tiny trials.

    An :class:`~dpbench.core.contracts.estimation.Estimates` with ``coef`` float64 of shape (B, s),
    finite when certified, within the coefficient ball ``||coef|| <= r`` the score uses;
    ``certified`` a bool; ``epsilon_spent`` None or positive; ``delta`` 0 for a pure stage and in
    [0, 1) otherwise; JSON diagnostics; the same rng seed gives the same coefficients and
    another seed others (all randomness from the rng); the trial's data left unchanged.

    Raises
    ------
    AssertionError
        Naming the stage, the trial and what is wrong.
    """
    _declared("estimator", cls)
    for n, p, s, seed in ESTIMATE_PROBLEMS:
        label = f"estimator {cls.name!r} on a tiny trial (n={n}, p={p}, s={s}, seed={seed})"
        trial = _trial(cls, n, p, s, seed)
        X0, y0 = trial.problem.X.copy(), trial.problem.y.copy()
        S = all_supports(p, s)[[0, 1, 0, -1]]  # a repeated support: each row is its own release
        est = cls(**params).estimate(trial, S, ESTIMATE_EPSILON, _rng(seed, 5))
        if not isinstance(est, Estimates):
            _fail(label, f"estimate returned a {type(est).__name__}, expected dpbench.core.contracts.estimation.Estimates")
        coef = est.coef
        if not (isinstance(coef, np.ndarray) and coef.shape == S.shape and coef.dtype == np.float64):
            _fail(label, f"coef is {type(coef).__name__} {getattr(coef, 'shape', '')} "
                         f"{getattr(coef, 'dtype', '')}; expected float64 of shape {S.shape}")
        if not isinstance(est.certified, (bool, np.bool_)):
            _fail(label, f"certified is {est.certified!r}, expected a bool")
        if est.certified and not np.all(np.isfinite(coef)):
            _fail(label, "certified estimates hold NaN or inf")
        if est.certified and np.any(np.linalg.norm(coef, axis=1) > trial.r * (1 + 1e-9)):
            _fail(label, f"a certified estimate lies outside the coefficient ball ||beta|| <= r = {trial.r}")
        es = est.epsilon_spent
        if es is not None and not (isinstance(es, (int, float)) and es > 0):
            _fail(label, f"epsilon_spent = {es!r}, expected None or a positive float")
        if not (isinstance(est.delta, (int, float)) and 0 <= est.delta < 1):
            _fail(label, f"delta = {est.delta!r}, expected the DP delta in [0, 1)")
        if cls.dp_type == "pure" and est.delta != 0:
            _fail(label, f"delta = {est.delta!r} but dp_type is 'pure'")
        try:
            json.dumps(est.diagnostics, allow_nan=True)
        except (TypeError, ValueError) as exc:
            _fail(label, f"diagnostics are not JSON-serialisable ({exc})")
        if not (np.array_equal(trial.problem.X, X0) and np.array_equal(trial.problem.y, y0)):
            _fail(label, "estimate changed the trial's data")
        again = cls(**params).estimate(trial, S, ESTIMATE_EPSILON, _rng(seed, 5)).coef
        if not np.array_equal(again, coef):
            _fail(label, "two estimates with the same rng seed differ; all randomness must come from the rng")
        other = cls(**params).estimate(trial, S, ESTIMATE_EPSILON, _rng(seed, 6)).coef
        if np.array_equal(other, coef):
            _fail(label, "different rng seeds give identical estimates: estimate ignores its rng (no noise)")
        if np.array_equal(coef[0], coef[2]):
            _fail(label, "the two releases on the same support are identical: each row must be its own "
                         "release, with its own noise")


def check_estimator_objective(cls: type, **params) -> None:
    """``objective`` and ``optimum_value`` agree with the score by brute force.

    On each tiny trial, for every support S and its exact minimiser β_S of the ridge score
    (:meth:`dpbench.core.score.RidgeScore.solve`), ``objective(S, β_S)`` is
    ``optimum_value(R(S, D))`` (both are the score in the stage's units), and the objective at
    the private estimates and at β = 0 is never below the optimum of all supports: the utility
    loss it defines is non-negative.

    Raises
    ------
    AssertionError
        Naming the stage, the trial and the support that disagrees.
    """
    _declared("estimator", cls)
    for n, p, s, seed in ESTIMATE_PROBLEMS:
        label = f"estimator {cls.name!r} on a tiny trial (n={n}, p={p}, s={s}, seed={seed})"
        trial = _trial(cls, n, p, s, seed)
        est_cls = cls(**params)
        S, scores = brute_force_scores(trial)
        _, beta = trial.score.solve(S)
        obj = np.asarray(est_cls.objective(trial, S, beta), dtype=float)
        if obj.shape != (len(S),):
            _fail(label, f"objective of {len(S)} supports has shape {obj.shape}, expected ({len(S)},)")
        want = np.array([est_cls.optimum_value(trial, v) for v in scores])
        bad = np.flatnonzero(~np.isclose(obj, want, rtol=1e-8, atol=1e-12))
        if bad.size:
            k = bad[0]
            _fail(label, f"objective at the exact minimiser of {S[k].tolist()} is {obj[k]!r} but "
                         f"optimum_value(R(S, D) = {scores[k]!r}) = {want[k]!r}")
        best = float(want.min())
        est = est_cls.estimate(trial, S, ESTIMATE_EPSILON, _rng(seed, 7))
        for what, coef in (("the private estimates", est.coef), ("beta = 0", np.zeros_like(beta))):
            val = np.asarray(est_cls.objective(trial, S, coef), dtype=float)
            if np.any(val < best - 1e-9 * max(1.0, abs(best))):
                _fail(label, f"objective at {what} is {val.min()!r}, below the optimum {best!r}")


def check_estimator_gradient_range(cls: type, **params) -> None:
    """The constants of an objective-perturbation stage against a brute-force search.

    For a stage with ``calibration(trial, epsilon)`` (objective perturbation: Chaudhuri,
    Monteleoni & Sarwate 2011, Algorithm 2; Kifer, Smith & Thakurta 2012, Theorem 2), the
    privacy proof needs, for the per-row least-squares loss l(θ; x, y) = (y - x_S^T θ)^2 / 2 on
    clipped rows and ||θ|| <= r: ``hessian_bound >= ||x_S||^2`` (the row Hessian's largest
    eigenvalue) and ``gradient_range >= ||∇l(θ; d) - ∇l(θ; d')||`` for every pair of rows d, d'.
    Both maxima are searched over the vertices of the clipping box (where ||x_S|| is largest)
    and :data:`GRADIENT_POINTS` random θ on the sphere ||θ|| = r plus θ = ±r e_j; a declared
    constant below the largest value found fails. A stage without ``calibration`` passes.

    Raises
    ------
    AssertionError
        Naming the stage, the rows and θ that exceed a declared constant.
    """
    _declared("estimator", cls)
    stage = cls(**params)
    if not callable(getattr(stage, "calibration", None)):
        return
    for n, p, s, seed in ESTIMATE_PROBLEMS:
        label = f"estimator {cls.name!r} on a tiny trial (n={n}, p={p}, s={s}, seed={seed})"
        trial = _trial(cls, n, p, s, seed)
        cal = stage.calibration(trial, ESTIMATE_EPSILON)
        b_x, b_y, r = trial.b_x, trial.b_y, trial.r
        rows = [(b_x * np.array(sx), b_y * sy) for sx in itertools.product((-1.0, 1.0), repeat=s)
                for sy in (-1.0, 1.0)]
        hess = max(float(x @ x) for x, _ in rows)
        if cal.hessian_bound < hess * (1 - 1e-12):
            _fail(label, f"hessian_bound = {cal.hessian_bound!r} but a clipped row has ||x_S||^2 = {hess!r}")
        rng = _rng(seed, 8)
        thetas = rng.standard_normal((GRADIENT_POINTS, s))
        thetas = r * thetas / np.linalg.norm(thetas, axis=1, keepdims=True)
        thetas = np.vstack([thetas, r * np.eye(s), -r * np.eye(s)])
        grads = np.array([[(x @ t - y) * x for x, y in rows] for t in thetas])  # (T, rows, s)
        diff = np.linalg.norm(grads[:, :, None, :] - grads[:, None, :, :], axis=-1)
        t, i, j = np.unravel_index(int(np.argmax(diff)), diff.shape)
        worst = float(diff[t, i, j])
        if cal.gradient_range < worst * (1 - 1e-12):
            _fail(label, f"gradient_range = {cal.gradient_range!r} but rows {rows[i][0].tolist()}, y={rows[i][1]} and "
                         f"{rows[j][0].tolist()}, y={rows[j][1]} at theta = {thetas[t].tolist()} give gradients "
                         f"{worst!r} apart: the noise is calibrated below the sensitivity it must cover")
        if not math.isfinite(cal.gradient_range):
            _fail(label, f"gradient_range = {cal.gradient_range!r}, expected a finite number")


#: The estimation-stage checks, one test id each in :func:`dpbench.testing.parametrize_with_checks`.
ESTIMATOR_CHECKS = (check_estimator_declarations, check_estimator_estimates, check_estimator_objective,
                    check_estimator_gradient_range)
