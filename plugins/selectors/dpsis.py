"""Selector ``dpsis``: differentially private sure independence screening (Swope et al. 2024).

docs/methods/dpsis.md; algorithm 1 of swope2024-dp-sis. Scores ``f_j = |x_j^T y|`` on the clipped
data, component-wise sensitivity ``Delta_f = 2 b_x b_y`` under replace-one
(:func:`dpbench.core.score.correlation_sensitivity`), private top-s by the canonical Lipschitz
mechanism (:func:`dpbench.lipschitz.canonical_lipschitz_topk`). Pure epsilon-DP.

``prepare`` computes the scores and their order once per trial (epsilon-independent);
each draw costs O(p s) for the utility classes.
"""

from dataclasses import dataclass

import numpy as np

from dpbench.api import (Draws, Param, Selector, check_epsilon, correlation_sensitivity, hookimpl,
                         sample_members, select_class, utility_classes)


def correlation_scores(X, y) -> np.ndarray:
    """SIS scores ``|x_j^T y|`` (Fan & Lv 2008, without standardisation; algorithm 1 of swope2024).

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)

    Returns
    -------
    ndarray of shape (p,)
    """
    return np.abs(np.asarray(X, dtype=np.float64).T @ np.asarray(y, dtype=np.float64))


@dataclass(frozen=True, eq=False)
class DPSISPrepared:
    """The preparation of ``dpsis`` for one trial.

    Attributes
    ----------
    order : ndarray of shape (p,), int64
        Features by decreasing score f_j / Delta_f (stable order).
    x_sorted : ndarray of shape (p,), float64
        The scores f_j / Delta_f in that order.
    delta_f : float
        The component-wise sensitivity Delta_f = 2 b_x b_y.
    """

    order: np.ndarray
    x_sorted: np.ndarray
    delta_f: float


class DPSIS(Selector):
    """DP-SIS: private top-s of |x_j^T y| by the canonical Lipschitz mechanism (pure epsilon-DP)."""

    name = "dpsis"
    summary = "DP sure independence screening: canonical Lipschitz top-s of |x_j^T y| (pure DP)"
    dp_type = "pure"
    # correlation screening of a real response: least squares only (issue 16)
    losses = ("least-squares",)
    source = ("Swope, Khanna, Doldo, Roy & Raff 2024 (algorithm 1, appendix A); "
                 "Shekelyan & Loukides 2022; docs/methods/dpsis.md")
    prepared_type = DPSISPrepared
    params = {
        "gamma": Param(0.5, "loss parameter in [0, 1]: epsilon_2 = gamma*epsilon weighs the worst "
                            "included score, epsilon_1 = (1-gamma)*epsilon the best excluded one", float,
                       interval=(0.0, 1.0, "both")),
    }

    def prepare(self, trial, rng):
        delta_f = correlation_sensitivity(trial.b_x, trial.b_y)
        x = correlation_scores(trial.problem.X, trial.problem.y) / delta_f
        order = np.argsort(-x, kind="stable")
        utility_classes(trial.p, trial.s)  # build (and cache) the class table outside the draw timing
        return DPSISPrepared(order, x[order], delta_f)

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        eps = check_epsilon(epsilon)
        s = trial.s
        cls = select_class(rng, prepared.x_sorted, s, eps, self.config["gamma"], n_draws)
        h, t, _ = utility_classes(trial.p, s)
        supports = sample_members(rng, prepared.order, s, h[cls], t[cls])
        return Draws(supports, diagnostics={
            "sensitivity": prepared.delta_f,
            "top_class_rate": float(np.mean(cls == 0)),  # share of draws returning the exact top-s
        })


@hookimpl
def dpbench_selectors():
    return [DPSIS]
