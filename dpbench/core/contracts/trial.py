"""What a plugin reads of one trial: the :class:`TrialView` protocol.

A selector's :meth:`~dpbench.core.contracts.selector.Selector.prepare` (and an estimation
stage's ``estimate``) receives an object with exactly these members. The runner passes a
:class:`dpbench.bench.trial.Trial`, built with its solver and loss already resolved; a test or
a third-party harness may pass anything that satisfies the protocol. The true support is
never part of it: evaluation keeps it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only
    from dpbench.core.contracts.oracle import OracleResult, OracleSession
    from dpbench.core.problem import Problem
    from dpbench.core.score import RidgeScore


@runtime_checkable
class TrialView(Protocol):
    """One trial as a plugin sees it: the preprocessed data, the privacy setup, the shared score.

    Attributes
    ----------
    problem : Problem
        The data **after** the selector's declared preprocessing (clipping to ``b_x``,
        ``b_y`` for the score-based mechanisms): ``X`` float64 (n, p), ``y`` float64 (n,);
        its ``true_support`` is None.
    s, n, p : int
        Sparsity level, number of samples, number of features.
    b_x, b_y : float
        Clipping bounds, ``|x_ij| <= b_x`` and ``|y_i| <= b_y`` (docs/vocabulary.md).
    r : float
        l2 bound on the coefficients, ``||beta||_2 <= r``.
    lam : float
        Ridge penalty Λ >= 0 of the score.
    sensitivity_bound : {"tight", "paper"}
        Which bound on the sensitivity Δ the run uses (docs/methods/score.md).
    sensitivity : float
        The score's global sensitivity Δ under the replace-one relation.
    score : RidgeScore
        The shared score R(S, D) (batched: supports int (B, s) -> float64 (B,)); a loss plugin
        other than least squares supplies its own with the same interface.
    score_bound : float
        Upper bound on R(S, D) over all supports and data sets (top-R's ε').
    delta : float
        The run's DP δ in [0, 1) that approximate-DP selectors are calibrated to (0: pure).
    solver : str
        The run's solver backend name (``--solver``).
    loss : str
        The run's loss name (``--loss``).
    """

    problem: "Problem"
    b_x: float
    b_y: float
    r: float
    lam: float
    sensitivity_bound: str
    delta: float
    solver: str
    loss: str

    @property
    def s(self) -> int: ...

    @property
    def n(self) -> int: ...

    @property
    def p(self) -> int: ...

    @property
    def sensitivity(self) -> float: ...

    @property
    def score(self) -> "RidgeScore": ...

    @property
    def score_bound(self) -> float: ...

    def shared(self, key, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per trial under ``key``: epsilon-independent work shared by selectors.

        If ``compute`` raises, nothing is stored under ``key`` and the exception propagates."""

    def optimum(self, solver: str | None = None) -> "OracleResult":
        """The certified (or not: see ``certified``) best support of this trial, solved once per backend."""

    def oracle(self, solver: str | None = None, **params) -> "OracleSession":
        """The best-subset oracle session of this trial for ``solver`` (cuts shared across calls)."""
