r"""Selector ``fw-lasso``: private Frank-Wolfe on the l1 ball (Talwar, Thakurta & Zhang 2015).

K. Talwar, A. Thakurta and L. Zhang, "Nearly optimal private LASSO", NeurIPS 2015,
Algorithm 2 ("Differentially private Frank-Wolfe algorithm, polytope version") on the Lasso
constraint set C = {||theta||_1 <= c}, the convex hull of its 2p vertices V = {+-c e_j}.
The loss is least squares, L(theta; D) = (1 / (2n)) ||y - X theta||^2, with gradient
``g(theta) = (1/n) X^T (X theta - y)``. With theta_1 = 0 and t = 1, ..., T:

(1)  v_t = a vertex v in V drawn with probability proportional to
           exp(-epsilon_0 <v, g(theta_t)> / (2 Delta_u))                  (exponential mechanism)
(2)  theta_{t+1} = (1 - mu_t) theta_t + mu_t v_t,   mu_t = 2 / (t + 2)      (Frank-Wolfe step)

and the selector releases the s largest |theta_{T+1, j}| (ties, e.g. among zeros when fewer
than s coordinates were ever selected, broken uniformly at random: post-processing).

Differences from the paper, and why
-----------------------------------
* Step (1): Algorithm 2 draws the vertex by report-noisy-min with Laplace noise of scale
  ``L_1 ||C||_1 sqrt(8 T log(1/delta)) / (n epsilon)`` on <v, g>; here it is the exponential
  mechanism on the same utility -<v, g> (report-noisy-min with Gumbel noise has its law), as issue
  26 specifies: epsilon_0-DP per step like the Laplace version, and epsilon_0-bounded-range,
  which the RDP accountant turns into (epsilon_0^2 / 8)-zCDP (Cesar & Rogers 2021) -- about
  half the noise of the paper's advanced-composition constant at the same (epsilon, delta).
* epsilon_0 is calibrated by an accountant (:mod:`dpbench.core.privacy.accounting`, dp-accounting's
  RDP by default, PLD optional) so that the T steps are (epsilon, delta)-DP as it states,
  instead of the paper's sqrt(8 T log(1/delta)) bound.
* The paper indexes T - 1 steps and outputs theta_T; ``iterations = T`` here counts the
  steps (T draws of the exponential mechanism).
* Data: clipped (|x_ij| <= b_x, |y_i| <= b_y) instead of the paper's Lipschitz assumption.
* Neighbouring relation: replace-one. For theta_t fixed by the earlier steps, the utility
  <v, g(theta_t)> of every vertex moves by at most
  Delta_u = c * 2 b_x (b_y + b_x c) / n                                        (3)
  (|<v, g - g'>| <= c ||g - g'||_inf; :func:`dpbench.core.privacy.sensitivity.gradient_sensitivity`
  with fit bound ``|x_i^T theta| <= b_x ||theta||_1 <= b_x c``), twice the add/remove
  ``L_1 ||C||_1 / n`` of the paper.

The radius c defaults to ``r sqrt(s)``: the l1 norm of any s-sparse vector in the l2 ball of
radius r of the shared score (docs/methods/score.md) is at most that.

Work: ``prepare`` computes ``X^T y / n`` and, for p <= :data:`GRAM_MAX`, ``X^T X / n``; the
draw updates the gradient incrementally, ``g_{t+1} = (1 - mu_t) g_t + mu_t (G v_t - X^T y / n)``
(G v_t is one Gram column: from the stored Gram, or one product ``X^T X[:, j]`` per step
batched over the draws).
"""

from __future__ import annotations

import math
import numpy as np
from scipy.special import expit

from dpbench.api import (ACCOUNTANTS, Diagnostic, Draws, GRAM_MAX, GramProducts, Param, Selector,
                         accounting_diagnostics, calibrate, check_epsilon, gradient_sensitivity,
                         gram_products, hookimpl)


def fw_template(iterations: int) -> tuple:
    """The run's steps in units of sigma = 1 / epsilon_0: T exponential-mechanism steps."""
    return (("exponential", iterations, 1.0),)


def fw_step_sizes(iterations: int) -> np.ndarray:
    """Frank-Wolfe step sizes mu_t = 2 / (t + 2), t = 1..T (Talwar et al. 2015, Algorithm 2)."""
    return 2.0 / (np.arange(1, iterations + 1) + 2.0)


def exponential_vertex(rng: np.random.Generator, grad: np.ndarray, radius: float, epsilon0: float,
                       sensitivity: float) -> tuple[np.ndarray, np.ndarray]:
    """Step (1): one exponential-mechanism draw of an l1-ball vertex per row.

    ``P(sign c e_j) ∝ exp(-epsilon_0 sign c g_j / (2 Delta_u))`` (McSherry & Talwar 2007) is
    sampled in two exact stages: the coordinate j with probability proportional to the pair's
    mass ``exp(a g_j) + exp(-a g_j)`` (a = epsilon_0 c / (2 Delta_u)), by inversion of its
    cumulative sum with one uniform; then the sign, ``+`` with probability
    ``exp(-a g_j) / (exp(a g_j) + exp(-a g_j)) = 1 / (1 + exp(2 a g_j))``. In log space
    relative to the row's largest ``|a g_j|``, so nothing overflows.

    Parameters
    ----------
    rng : numpy.random.Generator
    grad : ndarray of shape (B, p)
        The gradient at each draw's iterate.
    radius : float
        c, the l1 radius (vertices +-c e_j).
    epsilon0, sensitivity : float
        Per-step epsilon_0 and Delta_u of (3).

    Returns
    -------
    j : ndarray of shape (B,), int64
        Coordinate of the vertex.
    sign : ndarray of shape (B,), float64
        +1 or -1.
    """
    B, p = grad.shape
    u = (epsilon0 * radius / (2.0 * sensitivity)) * grad
    m = np.abs(u)
    top = m.max(axis=1, keepdims=True)
    # pair mass relative to exp(top): exp(|u| - top) (1 + exp(-2|u|))
    mass = np.exp(m - top) * (1.0 + np.exp(-2.0 * m))
    cdf = np.cumsum(mass, axis=1)
    threshold = rng.random((B, 1)) * cdf[:, -1:]
    j = np.minimum(np.count_nonzero(cdf <= threshold, axis=1), p - 1)
    uj = u[np.arange(B), j]
    plus = rng.random(B) < expit(-2.0 * uj)  # P(+) = 1 / (1 + exp(2 u_j))
    return j.astype(np.int64), np.where(plus, 1.0, -1.0)


class FWLasso(Selector):
    """Private Frank-Wolfe Lasso: exponential mechanism over the l1-ball vertices, T steps ((ε, δ)-DP)."""

    name = "fw-lasso"
    summary = ("private Frank-Wolfe Lasso (Talwar, Thakurta & Zhang 2015): T exponential-mechanism steps over "
               "the l1-ball vertices, RDP-calibrated; support = s largest |theta_T| ((eps, delta)-DP)")
    dp_type = "approximate"
    losses = ("least-squares",)
    source = ("Talwar, Thakurta & Zhang 2015, NeurIPS, 'Nearly optimal private LASSO' (Algorithm 2, "
                 "polytope Frank-Wolfe); exponential mechanism; accounting by dp-accounting")
    prepared_type = GramProducts
    params = {
        "iterations": Param(100, "number T of Frank-Wolfe steps", int, interval=(1, 100_000, "both")),
        "radius": Param(0.0, "l1 radius c of the constraint set; 0 means r * sqrt(s)", float,
                        interval=(0.0, math.inf, "left")),
        "accountant": Param("rdp", "accountant calibrating epsilon_0: 'rdp' (zCDP of the exponential "
                                   "mechanism; the tighter here) or 'pld' (pure-DP pair per step)",
                            str, choices=ACCOUNTANTS),
    }
    diagnostics = {
        "step_epsilon": Diagnostic("median", "ε0", "per-step epsilon_0 of the exponential mechanism"),
        "epsilon_accountant": Diagnostic("max", "ε acc", "epsilon the accountant states for the run"),
    }

    def radius(self, trial) -> float:
        """The l1 radius c: the ``radius`` parameter, or r sqrt(s) when it is 0."""
        return self.config["radius"] or trial.r * math.sqrt(trial.s)

    def prepare(self, trial, rng):
        return gram_products(trial.problem.X, trial.problem.y, GRAM_MAX)

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        eps = check_epsilon(epsilon)
        T, c, p = self.config["iterations"], self.radius(trial), trial.p
        sens = c * gradient_sensitivity(trial.b_x, trial.b_y, trial.b_x * c, trial.n)
        cal = calibrate(fw_template(T), eps, float(trial.delta), self.config["accountant"])
        eps0 = 1.0 / cal.sigma
        theta = np.zeros((n_draws, p))
        grad = np.broadcast_to(-prepared.xty, (n_draws, p)).copy()  # g(0) = -X^T y / n
        rows = np.arange(n_draws)
        X = trial.problem.X
        for mu in fw_step_sizes(T):
            j, sign = exponential_vertex(rng, grad, c, eps0, sens)                      # (1)
            theta *= 1.0 - mu                                                            # (2)
            theta[rows, j] += mu * c * sign
            col = prepared.gram[:, j].T if prepared.gram.size else (X.T @ X[:, j]).T / trial.n
            grad = (1.0 - mu) * grad + mu * ((c * sign)[:, None] * col - prepared.xty)
        # s largest |theta_j|; ties (e.g. zeros) in uniformly random order
        key = np.lexsort((rng.random((n_draws, p)), -np.abs(theta)), axis=1)
        support = np.sort(key[:, :trial.s], axis=1).astype(np.int64)
        diagnostics = accounting_diagnostics(cal, eps)
        diagnostics.update(sensitivity=sens, radius=c, iterations=T, step_epsilon=eps0,
                           nonzeros=float(np.mean(np.count_nonzero(theta, axis=1))))
        return Draws(support, epsilon_spent=cal.epsilon, delta=cal.delta, diagnostics=diagnostics)


@hookimpl
def dpbench_selectors():
    return [FWLasso]
