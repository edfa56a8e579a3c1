"""Private estimation after selection: the budget split, the train/test split and its metrics (issue 16).

A run with ``--estimate NAME --estimate-fraction f`` (``RunConfig.estimate``):

* every epsilon of the run is the budget of the *pair* (support, coefficients): the selection
  gets ``epsilon_select = (1 - f) epsilon``, the estimator ``epsilon_estimate = f epsilon``
  (:func:`split_budget`), and the row's guarantee is their basic composition
  (:func:`dpbench.core.contracts.estimation.composed_guarantee`), or, for a selection whose steps an
  accountant calibrated (diagnostics ``accountant`` and ``dp_steps``), the same accountant's
  composition of those steps with the estimate when that is tighter
  (:func:`dpbench.core.privacy.accounting.compose_with_pure`); the row's ``composition``
  diagnostic says which;
* each trial's rows are split once, 70/30, into training and held-out rows (:func:`split_rows`;
  the permutation comes from the stream ``(seed, "split", setting, trial)``, so every method and
  every epsilon of a trial sees the same split); the selection and the estimate see only the
  training rows;
* per draw, the estimator releases coefficients on the drawn support; the row stores the means
  over draws of (:func:`estimation_metrics`)

  - ``utility_loss``: the estimator's objective at the private estimate on the training data
    minus the certified best-subset optimum of the same objective on the same data (for
    least squares ``(R_S(theta_hat) - R(S_1, D_train)) / (2 n_train)``, the authors' units;
    ``objpert_least_squares`` of the NeurIPS 2025 code), None when the optimum is not certified;
  - ``test_mse``: ``mean_i (y_i - x_{i,S}^T theta_hat)^2`` over the held-out rows as drawn
    (unclipped, as the authors' ``_compute_test_mse_batch``);
  - ``test_accuracy`` (labels +-1 only, e.g. ``--generator classification`` with least squares,
    whose objpert fit is then a linear probability model): the share of held-out rows with
    ``sign(x_{i,S}^T theta_hat) = y_i`` (sign 0 counted as +1).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpbench.core.contracts.estimation import composed_guarantee
from dpbench.core.privacy.accounting import accountant_of, compose_with_pure, steps_from_json
from dpbench.bench.registry import registry
from dpbench.core.problem import Problem

#: Share of each trial's rows held out for the test metrics (the authors' ``test_size=0.30``).
TEST_FRACTION = 0.3


def split_budget(epsilon: float, fraction: float) -> tuple[float, float]:
    """``(epsilon_select, epsilon_estimate) = ((1 - f) epsilon, f epsilon)`` for f in (0, 1)."""
    return (1.0 - fraction) * float(epsilon), fraction * float(epsilon)


def split_rows(problem: Problem, rng: np.random.Generator, test_fraction: float = TEST_FRACTION,
               ) -> tuple[Problem, Problem]:
    """Training and held-out parts of a data set (a uniformly random permutation of its rows).

    Parameters
    ----------
    problem : Problem
        n rows, as drawn or read (before any clipping).
    rng : numpy.random.Generator
        The trial's split stream.
    test_fraction : float
        Share held out; ``ceil(test_fraction n)`` rows (as scikit-learn's ``train_test_split``).

    Returns
    -------
    train, test : Problem
        Same s, true support and provenance; ``train`` has ``n - ceil(test_fraction n)`` rows.
    """
    n = problem.n
    n_test = int(np.ceil(test_fraction * n))
    perm = rng.permutation(n)
    test_idx, train_idx = np.sort(perm[:n_test]), np.sort(perm[n_test:])

    def part(idx):
        return dataclasses.replace(problem, X=problem.X[idx], y=problem.y[idx])

    return part(train_idx), part(test_idx)


def estimation_metrics(estimator, trial, supports: np.ndarray, epsilon: float, rng: np.random.Generator,
                       test: Problem, optimum: float | None, binary: bool) -> tuple[object, dict]:
    """Run the estimator on each drawn support and summarise its estimates.

    Parameters
    ----------
    estimator : dpbench.core.contracts.estimation.PrivateEstimator
    trial : Trial
        The clipped training data.
    supports : ndarray of shape (draws, s), int64
    epsilon : float
        ``epsilon_estimate`` of each release.
    rng : numpy.random.Generator
    test : Problem
        Held-out rows, unclipped.
    optimum : float or None
        Certified best-subset score R(S_1, D_train) (None: no utility loss).
    binary : bool
        Labels +-1: also report ``test_accuracy``.

    Returns
    -------
    estimates : Estimates
    metrics : dict
        ``utility_loss``, ``test_mse``, ``test_accuracy`` (means over draws; None where not defined).
    """
    S = np.asarray(supports, dtype=np.int64)
    est = estimator.estimate(trial, S, epsilon, rng)
    utility = None
    if optimum is not None:
        utility = float(np.mean(estimator.objective(trial, S, est.coef)) - estimator.optimum_value(trial, optimum))
    pred = np.einsum("nbi,bi->bn", test.X[:, S], est.coef)  # (draws, n_test)
    mse = float(np.mean((test.y[None, :] - pred) ** 2))
    acc = float(np.mean(np.where(pred >= 0, 1.0, -1.0) == test.y[None, :])) if binary else None
    return est, {"utility_loss": utility, "test_mse": mse, "test_accuracy": acc}


def estimation_fields(name: str, fraction: float, params: dict, trial, draws, row: dict, epsilon: float,
                      test: Problem, optimum: float | None, rng: np.random.Generator) -> dict:
    """The fields a result row of a run with ``--estimate`` gains (the runner's one call).

    Parameters
    ----------
    name, fraction, params
        The estimator, f and its parameters (``RunConfig.estimate*``).
    trial : Trial
        The clipped training data.
    draws : Draws
        The selection's outputs for this row.
    row : dict
        The row as built for the selection (its ``supports``, ``status``, ``dp_type``, ``method``).
    epsilon : float
        The row's epsilon: the budget of the pair.
    test : Problem
        Held-out rows.
    optimum : float or None
        Certified R(S_1, D_train).
    rng : numpy.random.Generator
        The row's estimation stream.

    Returns
    -------
    dict
        ``estimate``, ``estimate_fraction``, ``epsilon_select``, ``epsilon_estimate``,
        ``utility_loss``, ``test_mse``, ``test_accuracy``, the composed ``guarantee``, the
        ``diagnostics`` with the estimator's and ``composition`` (``"basic composition"`` or
        the accountant's label), and ``status`` "uncertified" if the estimate is.
    """
    eps_sel, eps_est = split_budget(epsilon, fraction)
    estimator = registry().estimator(name)(**params)
    out = {"estimate": name, "estimate_fraction": fraction, "epsilon_select": eps_sel, "epsilon_estimate": eps_est}
    # labels +-1 (a classification loss, or least squares on +-1 labels: a linear probability fit)
    binary = getattr(trial.loss_plugin, "response", "real") == "binary" or bool(np.all(np.abs(test.y) == 1.0))
    est, metrics = estimation_metrics(estimator, trial, np.asarray(row["supports"], dtype=np.int64), eps_est, rng,
                                      test, optimum, binary)
    out.update(metrics)
    # a row the runner found uncertified (e.g. an uncertified hinge score) has no guarantee either way
    certified = draws.certified and row["status"] == "ok"
    draws = dataclasses.replace(draws, certified=certified)
    out["guarantee"] = composed_guarantee(draws, row["dp_type"], eps_sel, est, estimator.dp_type, eps_est)
    composition = "basic composition"
    accountant = accountant_of((draws.diagnostics or {}).get("accountant", ""))
    if (accountant and not out["guarantee"].startswith("none") and estimator.dp_type == "pure"
            and est.delta == 0 and est.epsilon_spent is None):
        # the selection's steps are known: compose them with the estimate in the same accountant
        eps_pair, composition = compose_with_pure(steps_from_json(draws.diagnostics["dp_steps"]), accountant,
                                                  float(draws.epsilon_spent or eps_sel), draws.delta, eps_est)
        out["guarantee"] = dataclasses.replace(draws, epsilon_spent=eps_pair).guarantee("approximate", eps_pair)
    if not est.certified and row["status"] == "ok":
        out["status"] = "uncertified"
    out["diagnostics"] = {**(row.get("diagnostics") or {}), **est.diagnostics, "composition": composition}
    return out
