"""The contract of an estimation-stage plugin: private estimation after selection (hook ``dpbench_estimators``).

Re-exported by :mod:`dpbench.api`: the plugin manager checks registered estimation stages
against :class:`PrivateEstimator` (the scikit-learn wrapper of a selector, :mod:`dpbench.sklearn`,
is unrelated). The first built-in,
objective perturbation (``objpert``), is in ``plugins/estimators/objpert.py``.

An estimator is the second stage of a two-stage private analysis (issue 16, NeurIPS 2025):
a selector releases a support S under a budget epsilon_1, then the estimator fits coefficients
on S under epsilon_2. The pair is (epsilon_1 + epsilon_2)-DP by basic (adaptive) composition
(Dwork & Roth 2014, Theorem 3.16 and its adaptive form, Theorem B.1): the estimator's guarantee
holds for *every* fixed support, so conditioning on the private S costs nothing more.
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from dpbench.core.contracts.selector import Draws, REPLACE_ONE
from dpbench.core.contracts.trial import TrialView
from dpbench.core.params import Configurable


#: DP types an estimator can declare (an estimator without a guarantee has no place here).
ESTIMATOR_DP_TYPES = ("pure", "approximate")


@dataclass
class Estimates:
    """Private coefficients on given supports, one vector per support.

    Parameters
    ----------
    coef : ndarray of shape (B, s), float64
        ``coef[b]`` are the coefficients of the columns ``supports[b]`` (sorted ascending,
        the order :class:`dpbench.api.Draws` uses); the other p - s coefficients are 0.
    certified : bool
        False when the estimator could not establish its guarantee (e.g. a solve that did not
        reach its exact minimiser); such estimates are never reported as private.
    epsilon_spent : float, optional
        The epsilon actually guaranteed when it differs from the requested one.
    delta : float
        DP delta of an approximate guarantee, 0 for pure DP.
    diagnostics : dict
        JSON-serialisable per-call diagnostics (noise scale, ridge added, ...).
    """

    coef: np.ndarray
    certified: bool = True
    epsilon_spent: float | None = None
    delta: float = 0.0
    diagnostics: dict = field(default_factory=dict)


class PrivateEstimator(Configurable, abc.ABC):
    """Private estimation of coefficients on a selected support (plugin kind ``estimator``).

    Subclasses set ``name``, ``summary``, ``dp_type`` (``"pure"`` or ``"approximate"``),
    ``neighbouring`` (the relation of the guarantee; every built-in uses replace-one),
    ``losses`` (the loss names, :mod:`dpbench.core.contracts.loss`, the guarantee is proved for;
    ``("*",)`` for any) and implement :meth:`estimate` and :meth:`objective`.
    """

    kind: ClassVar[str] = "estimator"
    dp_type: ClassVar[str] = ""
    neighbouring: ClassVar[str] = REPLACE_ONE
    losses: ClassVar[tuple] = ()

    @abc.abstractmethod
    def estimate(self, trial: TrialView, supports: np.ndarray, epsilon: float, rng: np.random.Generator) -> Estimates:
        """Private coefficients for each support, each an independent epsilon-DP release.

        Parameters
        ----------
        trial : TrialView
            The (training) data after the loss's preprocessing (clipping), with the privacy
            setup (b_x, b_y, r, Lambda) the guarantee is calibrated to.
        supports : ndarray of shape (B, s), int64
            Sorted supports (a selector's draws); each is treated as fixed (data independent).
        epsilon : float
            The estimation budget epsilon_2 > 0 of *each* release.
        rng : numpy.random.Generator
            The only source of randomness.

        Returns
        -------
        Estimates
        """

    @abc.abstractmethod
    def objective(self, trial: TrialView, supports: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """The trial's own (non-private) objective at the given coefficients, in utility-loss units.

        Parameters
        ----------
        trial : TrialView
        supports : ndarray of shape (B, s), int64
        coef : ndarray of shape (B, s)

        Returns
        -------
        ndarray of shape (B,)
            The objective whose minimum over all supports and feasible coefficients is
            :meth:`optimum_value` of the trial's certified optimum (the utility loss is the
            difference, NeurIPS 2025 ``objpert_least_squares``).
        """

    @abc.abstractmethod
    def optimum_value(self, trial: TrialView, score: float) -> float:
        """The best-subset optimum in the units of :meth:`objective`, from the score R(S1, D)."""

    @classmethod
    def describe(cls) -> dict:
        d = super().describe()
        d.update(dp_type=cls.dp_type, neighbouring=cls.neighbouring, losses=list(cls.losses))
        return d


def composed_guarantee(draws: Draws, dp_type: str, epsilon_select: float, estimates: Estimates | None,
                       estimator_dp_type: str, epsilon_estimate: float) -> str:
    """The guarantee of the pair (support, estimate) by basic composition, as a row's string.

    The selection's guarantee is decided by :meth:`dpbench.api.Draws.guarantee` (the one
    place); the pair has a guarantee only when both stages have one, and then
    ``epsilon = epsilon_1' + epsilon_2'`` (each stage's spent epsilon) and
    ``delta = delta_1 + delta_2`` (Dwork & Roth 2014, Theorem 3.16; adaptive, Theorem B.1).

    Parameters
    ----------
    draws : Draws
        The selection's outputs.
    dp_type : str
        The selector's declared DP type.
    epsilon_select, epsilon_estimate : float
        The budgets of the two stages.
    estimates : Estimates or None
        None when no estimate was made.
    estimator_dp_type : str

    Returns
    -------
    str
        ``"pure ε=<ε1+ε2>"``, ``"(ε=<ε1+ε2>, δ=<δ>)"`` or ``"none: <reason>"``.
    """
    first = draws.guarantee(dp_type, epsilon_select)
    if estimates is None or first.startswith("none"):
        return first
    if not estimates.certified:
        return "none: estimate uncertified"
    eps1 = float(epsilon_select if draws.epsilon_spent is None else draws.epsilon_spent)
    eps2 = float(epsilon_estimate if estimates.epsilon_spent is None else estimates.epsilon_spent)
    pure = dp_type == "pure" and draws.delta == 0 and estimator_dp_type == "pure" and estimates.delta == 0
    pair = dataclasses.replace(draws, epsilon_spent=eps1 + eps2, delta=draws.delta + estimates.delta)
    return pair.guarantee("pure" if pure else "approximate", eps1 + eps2)
