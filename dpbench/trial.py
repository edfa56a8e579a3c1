"""The trial: one data set after its declared preprocessing, with the privacy setup.

Layer 3. Everything a selector sees of one trial (design.md section 2): the clipped data,
the clipping bounds, r, Lambda, the sensitivity Delta of the shared score and the oracle
sessions shared by the selectors of the trial.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable

from .plugin_manager import registry
from .privacy.sensitivity import sensitivity
from .problem import Problem
from .score import RidgeScore
from .score.loss import DEFAULT_LOSS

if TYPE_CHECKING:
    from .base import OracleSession

#: Default ridge penalty Lambda of runs and of the Python API. Outer-approximation oracles
#: need Lambda > 0 and slow down sharply as Lambda -> 0 (weaker cuts); the NeurIPS 2025
#: experiments used 120 (configs/neurips2025.toml), the ICLR-workshop ones 0.
DEFAULT_LAM = 10.0


@dataclass
class Trial:
    """Everything a selector sees of one trial: the clipped data and the privacy setup.

    Parameters
    ----------
    problem : Problem
        The data **after** clipping to ``b_x``, ``b_y``.
    b_x, b_y : float
        Clipping bounds.
    r : float
        l2 bound on the coefficients.
    lam : float
        Ridge penalty Lambda >= 0.
    sensitivity_kind : {"tight", "paper"}
        Which bound on Delta to use (see :func:`dpbench.score.sensitivity`).
    solver : str
        Default solver backend for oracle calls.
    solver_params : dict
        Parameters of that backend.
    dp_delta : float
        The run-level DP delta (``--delta``) that approximate-DP selectors are calibrated to;
        0 for a pure-DP run. (``Trial.delta`` is the score's sensitivity Delta.)
    loss : str
        Registered loss whose score and sensitivity the trial uses (``--loss``; default
        ``"least-squares"``, the ridge score of design.md 3). ``problem`` must already be
        preprocessed by that loss (:meth:`dpbench.score.loss.Loss.prepare`).
    loss_params : dict
        Parameters of that loss.
    cache : dict
        Epsilon-independent work shared between the selectors of this trial (for example
        the optimum and the single-swap scores used by both topr and mistakes).
    """

    problem: Problem
    b_x: float = 0.5
    b_y: float = 0.5
    r: float = 1.1
    lam: float = 0.0
    sensitivity_kind: str = "tight"
    solver: str = "highs"
    solver_params: dict = field(default_factory=dict)
    dp_delta: float = 0.0
    loss: str = DEFAULT_LOSS
    loss_params: dict = field(default_factory=dict)
    cache: dict = field(default_factory=dict)

    @property
    def s(self) -> int:
        return self.problem.s

    @property
    def n(self) -> int:
        return self.problem.n

    @property
    def p(self) -> int:
        return self.problem.p

    @cached_property
    def loss_plugin(self):
        """The trial's :class:`dpbench.score.loss.Loss` instance."""
        if self.loss == DEFAULT_LOSS and not self.loss_params:
            return None  # the ridge score needs no plugin lookup (and keeps its exact code path)
        return registry().loss(self.loss)(**self.loss_params)

    @cached_property
    def delta(self) -> float:
        """Global sensitivity Delta of the score (design.md section 3; the loss's own for others)."""
        if self.loss_plugin is None:
            return sensitivity(self.s, self.b_x, self.b_y, self.r, self.sensitivity_kind)
        return self.loss_plugin.sensitivity(self.s, self.n, self.b_x, self.b_y, self.r, self.sensitivity_kind)

    @cached_property
    def score(self) -> RidgeScore:
        """The shared score R(S, D) on this trial's clipped data (batched: supports (B, s) -> (B,))."""
        if self.loss_plugin is None:
            return RidgeScore(self.problem.X, self.problem.y, lam=self.lam, r=self.r)
        return self.loss_plugin.score(self.problem.X, self.problem.y, self.lam, self.r)

    @property
    def score_bound(self) -> float:
        """Upper bound on R(S, D) over all supports and data sets (top-R's epsilon')."""
        if self.loss_plugin is None:
            return self.n * self.b_y ** 2
        return self.loss_plugin.score_bound(self.n, self.b_y)

    def shared(self, key, compute: Callable[[], Any]):
        """Return ``cache[key]``, computing it once with ``compute()`` if absent."""
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]

    def oracle(self, solver: str | None = None, **params) -> "OracleSession":
        """The best-subset oracle session of this trial for ``solver`` (cached per backend).

        Cuts a backend learns are kept across all calls for the trial, whichever selector
        makes them.
        """
        name = solver or self.solver
        if self.loss_plugin is not None and self.loss_plugin.oracle != "least-squares" \
                and self.loss_plugin.oracle not in getattr(registry().solver(name), "losses", ("least-squares",)):
            name = "generic"  # the certified oracle built on the loss's own score and bounds
        merged = {**(self.solver_params if name == self.solver else {}), **params}
        key = ("oracle", name, tuple(sorted((k, repr(v)) for k, v in merged.items())))
        return self.shared(key, lambda: registry().solver(name)(**merged).session(self.score, self.s))

