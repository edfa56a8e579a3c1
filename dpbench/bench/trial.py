"""The trial: one data set after its declared preprocessing, with the privacy setup.

Everything a selector sees of one trial (docs/vocabulary.md): the data after the
preprocessing the selector declares (clipping for the score-based mechanisms), the privacy
setup (:class:`PrivacySetup`: b_x, b_y, r, Lambda, the bound on Delta, the run's delta), the
sensitivity Delta of the score and the oracle sessions shared by the selectors of the trial.
A trial never holds the true support: the runner keeps it for evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Protocol

from dpbench.core.contracts.selector import PREPROCESSING
from dpbench.core.errors import UserInputError
from dpbench.core.privacy.sensitivity import sensitivity
from dpbench.core.problem import Problem
from dpbench.core.score import RidgeScore
from dpbench.core.score.loss import DEFAULT_LOSS

if TYPE_CHECKING:
    from dpbench.core.contracts.oracle import OracleResult, OracleSession

#: Default ridge penalty Lambda of runs and of the Python API. Outer-approximation oracles
#: need Lambda > 0 and slow down sharply as Lambda -> 0 (weaker cuts); the NeurIPS 2025
#: experiments used 120 (configs/neurips2025.toml), the ICLR-workshop ones 0.
DEFAULT_LAM = 10.0

#: Default best-subset oracle backend of runs, of the Python API and of ``dpbench bss``.
DEFAULT_SOLVER = "highs"


def serving_backend(name: str, solver, loss) -> str:
    """The backend that answers oracle calls for the solver ``name`` under ``loss``.

    A backend serves only the oracle kinds it lists in ``losses`` (default: the least-squares
    Gram structure); a loss of another kind (``hinge``: ``oracle = "generic"``) is served by the
    ``generic`` branch and bound on the loss's own score and bounds, whatever ``--solver`` says.

    Parameters
    ----------
    name : str
        Registered solver name (``--solver``).
    solver : Solver class or instance
        That solver plugin.
    loss : Loss class or instance, or None
        The loss plugin, or None for least squares.

    Returns
    -------
    str
        ``name`` itself, or ``"generic"``.
    """
    if loss is None or loss.oracle == "least-squares" or loss.oracle in getattr(solver, "losses", ("least-squares",)):
        return name
    return "generic"


@dataclass(frozen=True)
class PrivacySetup:
    """The privacy setup of a run: the one place its defaults are written.

    The command line (:data:`dpbench.bench.config.OPTIONS`), TOML files, :func:`dpbench.select`,
    :class:`dpbench.DPSubsetSelector` and ``dpbench bss`` take their defaults from here.

    Parameters
    ----------
    b_x, b_y : float
        Clipping bounds, ``|x_ij| <= b_x`` and ``|y_i| <= b_y`` after clipping (docs/vocabulary.md).
    r : float
        l2 bound on the coefficients, ``||beta||_2 <= r``.
    lam : float
        Ridge penalty Lambda >= 0.
    sensitivity_bound : {"tight", "paper"}
        Which bound on the sensitivity Delta (:func:`dpbench.core.privacy.sensitivity.sensitivity`).
    delta : float
        The run's DP delta in [0, 1) that approximate-DP selectors are calibrated to (0: pure).
    """

    b_x: float = 0.5
    b_y: float = 0.5
    r: float = 1.1
    lam: float = DEFAULT_LAM
    sensitivity_bound: str = "tight"
    delta: float = 0.0


@dataclass
class Trial:
    """Everything a selector sees of one trial: the clipped data and the privacy setup.

    Build it with :meth:`from_problem`, which applies the preprocessing and drops the true
    support; the plain constructor trusts its caller to have done both (tests do).

    Parameters
    ----------
    problem : Problem
        The data **after** the selector's preprocessing (clipping to ``b_x``, ``b_y``).
    b_x, b_y : float
        Clipping bounds.
    r : float
        l2 bound on the coefficients.
    lam : float
        Ridge penalty Lambda >= 0.
    sensitivity_bound : {"tight", "paper"}
        Which bound on Delta to use (see :func:`dpbench.core.privacy.sensitivity.sensitivity`).
    solver : str
        Default solver backend for oracle calls.
    solver_params : dict
        Parameters of that backend.
    delta : float
        The run-level DP delta (``--delta``) that approximate-DP selectors are calibrated to;
        0 for a pure-DP run. The score's sensitivity Delta is :attr:`sensitivity`.
    loss : str
        Registered loss whose score and sensitivity the trial uses (``--loss``; default
        ``"least-squares"``, the ridge score of docs/methods/score.md). ``problem`` must already be
        preprocessed by that loss (:meth:`dpbench.core.score.loss.Loss.prepare`).
    loss_params : dict
        Parameters of that loss.
    cache : dict
        Epsilon-independent work shared between the selectors of this trial (for example
        the optimum and the single-swap scores used by both topr and mistakes).
    instances : PluginLookup, optional
        Where the trial's solver and loss instances come from: the run's
        :class:`dpbench.bench.registry.PluginInstances` (the runner shares one among all
        trials). A trial without one (None) serves the ridge score of least squares only and
        refuses :meth:`oracle` (there is no solver to call).
    """

    problem: Problem
    b_x: float = PrivacySetup.b_x
    b_y: float = PrivacySetup.b_y
    r: float = PrivacySetup.r
    lam: float = PrivacySetup.lam
    sensitivity_bound: str = PrivacySetup.sensitivity_bound
    solver: str = DEFAULT_SOLVER
    solver_params: dict = field(default_factory=dict)
    delta: float = PrivacySetup.delta
    loss: str = DEFAULT_LOSS
    loss_params: dict = field(default_factory=dict)
    cache: dict = field(default_factory=dict)
    instances: "PluginLookup | None" = field(default=None, repr=False, compare=False)

    @classmethod
    def from_problem(cls, problem: Problem, setup: PrivacySetup = PrivacySetup(), *, preprocessing: str = "clip",
                     solver: str = DEFAULT_SOLVER, solver_params: dict | None = None, loss: str = DEFAULT_LOSS,
                     loss_params: dict | None = None, instances: "PluginLookup | None" = None) -> "Trial":
        """The one way the runner and the Python API build a trial.

        Parameters
        ----------
        problem : Problem
            The data as drawn or read (not yet clipped); its true support is dropped.
        setup : PrivacySetup
        preprocessing : {"clip", "none"}
            What the selector's guarantee needs (``Selector.preprocessing``): ``"clip"`` clips X to
            [-b_x, b_x] and y to [-b_y, b_y] (docs/vocabulary.md), or applies the loss's own
            preprocessing (:meth:`dpbench.core.score.loss.Loss.prepare`) for a loss other than least
            squares; ``"none"`` keeps the data as given.
        solver, solver_params, loss, loss_params, instances
            As the fields of the same names.

        Raises
        ------
        UserInputError
            For an unknown preprocessing.
        """
        if preprocessing not in PREPROCESSING:
            raise UserInputError(f"a selector declares preprocessing {preprocessing!r}; known: "
                                 f"{', '.join(PREPROCESSING)}")
        if preprocessing == "none":
            data = problem
        elif loss == DEFAULT_LOSS:
            data = problem.clipped(setup.b_x, setup.b_y)
        else:
            data = _lookup(instances, "loss", loss, loss_params).prepare(problem, setup.b_x, setup.b_y)
        data = replace(data, true_support=None)  # selectors never see it: evaluation keeps it
        return cls(data, b_x=setup.b_x, b_y=setup.b_y, r=setup.r, lam=setup.lam,
                   sensitivity_bound=setup.sensitivity_bound, solver=solver, solver_params=dict(solver_params or {}),
                   delta=setup.delta, loss=loss, loss_params=dict(loss_params or {}), instances=instances)

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
        """The trial's :class:`dpbench.core.score.loss.Loss` instance."""
        if self.loss == DEFAULT_LOSS and not self.loss_params:
            return None  # the ridge score needs no plugin lookup (and keeps its exact code path)
        return _lookup(self.instances, "loss", self.loss, self.loss_params)

    @cached_property
    def sensitivity(self) -> float:
        """Global sensitivity Delta of the score (docs/methods/score.md; the loss's own for others)."""
        if self.loss_plugin is None:
            return sensitivity(self.s, self.b_x, self.b_y, self.r, self.sensitivity_bound)
        return self.loss_plugin.sensitivity(self.s, self.n, self.b_x, self.b_y, self.r, self.sensitivity_bound)

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
        """Return ``cache[key]``, computing it once with ``compute()`` if absent (nothing is stored
        when ``compute`` raises)."""
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]

    def optimum(self, solver: str | None = None) -> "OracleResult":
        """The unconstrained best support S1 of this trial, solved once per backend.

        The one accessor for the optimum that ``bss``, ``topr``, ``mistakes``, the ``bss``
        reference and the runner's objective gap share (whichever asks first pays for it).

        Parameters
        ----------
        solver : str, optional
            Backend name (default: the trial's ``solver``).

        Returns
        -------
        OracleResult
            Certified only when ``result.certified`` (see :class:`dpbench.api.OracleResult`).
        """
        name = solver or self.solver
        return self.shared(("optimum", name), lambda: self.oracle(name).solve())

    def oracle(self, solver: str | None = None, **params) -> "OracleSession":
        """The best-subset oracle session of this trial for ``solver`` (cached per backend).

        Cuts a backend learns are kept across all calls for the trial, whichever selector
        makes them.
        """
        name = solver or self.solver
        if self.loss_plugin is not None:
            name = serving_backend(name, _lookup(self.instances, "solver", name, {}), self.loss_plugin)
        merged = {**(self.solver_params if name == self.solver else {}), **params}
        key = ("oracle", name, tuple(sorted((k, repr(v)) for k, v in merged.items())))
        return self.shared(key, lambda: _lookup(self.instances, "solver", name, merged).session(self.score, self.s))


class PluginLookup(Protocol):
    """Builds the plugin instances a trial uses (:class:`dpbench.bench.registry.PluginInstances`)."""

    def get(self, kind: str, name: str, params: dict | None = None) -> Any: ...


def _lookup(instances: PluginLookup | None, kind: str, name: str, params: dict | None):
    if instances is None:
        raise RuntimeError(f"this trial was built without its plugins, so it cannot use the {kind} {name!r}: "
                           f"pass instances=dpbench.bench.registry.PluginInstances() when building it")
    return instances.get(kind, name, params)
