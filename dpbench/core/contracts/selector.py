"""The selector contract: :class:`Selector`, its outputs :class:`Draws`, and the row guarantee.

Part of the core contracts (re-exported by :mod:`dpbench.api`). A selector reads one trial
through the :class:`~dpbench.core.contracts.trial.TrialView` protocol. The split follows docs/architecture.md: a selector has an expensive,
epsilon-independent ``prepare`` step per trial and a cheap ``draw`` step, so many draws or an
epsilon sweep reuse one preparation.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dpbench.core.contracts.trial import TrialView
from dpbench.core.params import Configurable
from dpbench.core.preparation import prepared_from_state, prepared_state

from dpbench.core.problem import as_support


#: DP types a selector can declare (docs/methods/).
DP_TYPES = ("pure", "approximate", "none")
#: The one neighbouring relation every built-in selector is calibrated to.
REPLACE_ONE = "replace-one"
#: Data preprocessings a selector can declare (``Selector.preprocessing``).
PREPROCESSING = ("clip", "none")
#: How a summary reduces a per-row value over the rows of one (setting, method, ε)
#: (:func:`dpbench.bench.results.summary.aggregate`): ``"count"`` ``"k/m"`` rows where it is true,
#: ``"mean"``, ``"mean_ci"`` (mean with a bootstrap interval), ``"median"``, ``"max"``.
AGGREGATES = ("count", "mean", "mean_ci", "median", "max")


@dataclass(frozen=True)
class Diagnostic:
    """A selector's declaration of one of its diagnostics (``Draws.diagnostics[name]``).

    Summaries report it as the selector says, so the host never names a plugin's diagnostic.

    Parameters
    ----------
    aggregate : str
        One of :data:`AGGREGATES` (e.g. ``"count"`` for a bool, ``"mean"`` for a rate).
    label : str
        Short label shown next to the value in tables (e.g. ``"gap"``).
    doc : str
        What it means (shown in documentation).
    """

    aggregate: str
    label: str
    doc: str = ""

    def __post_init__(self):
        if self.aggregate not in AGGREGATES:
            raise ValueError(f"diagnostic {self.label!r}: unknown aggregate {self.aggregate!r}; "
                             f"use one of {AGGREGATES}")


@dataclass
class Draws:
    """The private outputs of one selector for one trial and one epsilon.

    Parameters
    ----------
    supports : ndarray of shape (n_draws, s), int64
        One support per draw: s distinct column indices in ``[0, p)``, sorted ascending.
        Always valid, also when ``certified`` is False (never placeholder rows such as -1).
    certified : bool
        False when the mechanism's guarantee could not be established (for example a top-R
        list that is not provably exact); such outputs are never reported as private.
    epsilon_spent : float, optional
        The privacy loss actually guaranteed when it differs from the requested epsilon
        (finite T in top-R, Theorem 1 of behdin2024).
    delta : float
        The DP delta of an approximate (epsilon, delta) guarantee, 0 for pure DP, NaN when
        not known (never 0 for an unknown delta).
    no_guarantee : str, optional
        Set when the mechanism ran but its guarantee does not hold for this trial: a short
        reason such as ``"gap condition failed"`` or ``"mixing not established"``. The row
        then carries no guarantee (:meth:`guarantee`).
    diagnostics : dict
        JSON-serialisable per-trial diagnostics (acceptance rate, oracle calls, ...).
    """

    supports: np.ndarray
    certified: bool = True
    epsilon_spent: float | None = None
    delta: float = 0.0
    no_guarantee: str | None = None
    diagnostics: dict = field(default_factory=dict)

    def guarantee(self, dp_type: str, epsilon: float) -> str:
        """The privacy guarantee that holds for these outputs, as the string a result row carries.

        This is the one place where a row's guarantee is decided (the runner and the Python
        API call it; neither knows any selector by name).

        Parameters
        ----------
        dp_type : {"pure", "approximate", "none"}
            The selector's declared DP type.
        epsilon : float
            The requested epsilon; ``epsilon_spent`` replaces it when set.

        Returns
        -------
        str
            ``"pure ε=<ε>"``, ``"(ε=<ε>, δ=<δ>)"``, or ``"none: <reason>"`` with reason
            ``not private`` (dp_type "none"), ``uncertified`` (``certified`` False), the
            selector's ``no_guarantee``, or ``δ unknown`` (an approximate selector that
            reported no finite δ). Anything starting with ``"none"`` is not a guarantee
            (:func:`has_guarantee`).
        """
        if dp_type == "none":
            return f"{NO_GUARANTEE}: not private"
        if not self.certified:
            return f"{NO_GUARANTEE}: uncertified"
        if self.no_guarantee:
            return f"{NO_GUARANTEE}: {self.no_guarantee}"
        eps = float(epsilon if self.epsilon_spent is None else self.epsilon_spent)
        if dp_type == "pure" and self.delta == 0:
            return f"pure ε={eps:.4g}"
        if not (math.isfinite(self.delta) and 0 <= self.delta < 1):
            return f"{NO_GUARANTEE}: δ unknown"
        return f"(ε={eps:.4g}, δ={self.delta:.3g})"


#: Prefix of every guarantee string that is not a guarantee (:meth:`Draws.guarantee`).
NO_GUARANTEE = "none"


def has_guarantee(guarantee: str | None) -> bool:
    """True when a row's guarantee string (:meth:`Draws.guarantee`) states a DP guarantee."""
    return bool(guarantee) and not str(guarantee).startswith(NO_GUARANTEE)


#: Value of :attr:`Selector.output_law` for a selector that samples exactly the exponential
#: mechanism on the shared score over all C(p, s) supports, P(S) ∝ exp(-ε R(S, D) / (2 Δ))
#: (McSherry & Talwar 2007; docs/methods/exponential-mechanism.md). :func:`dpbench.testing.check_selector` then
#: compares its ``log_prob`` with a brute-force reference.
EXPONENTIAL_MECHANISM = "exponential-mechanism"


class Selector(Configurable, abc.ABC):
    """A (differentially private) variable-selection method: the contract of a selector plugin.

    A subclass declares the class attributes below and implements :meth:`draw` (and
    usually :meth:`prepare`; :meth:`log_prob` when its output law is known in closed
    form). :func:`dpbench.testing.check_selector` checks an implementation against this
    contract; run it in the plugin's own tests.

    Attributes
    ----------
    name : str
        Unique, non-empty name (``--methods name``).
    summary : str
        One line for ``dpbench list``.
    dp_type : {"pure", "approximate", "none"}
        The guarantee the mechanism gives when its output is certified (:data:`DP_TYPES`).
        Must be declared by every subclass (the base leaves it None and registration
        refuses a selector without it): a forgotten declaration must never read as "pure".
    neighbouring : str
        The neighbouring relation the guarantee is calibrated to (:data:`REPLACE_ONE` for
        every built-in, the default).
    source : str
        The paper, algorithm and equation implemented (the citation; ``docs/methods/`` has the page).
    params : dict of str to Param
        Declared parameters; values arrive validated in ``self.config``.
    uses_oracle : bool
        True if :meth:`prepare` calls the best-subset oracle (``trial.oracle()``), so the
        run checks its solver before the first trial.
    output_law : str or None
        :data:`EXPONENTIAL_MECHANISM` when the output law is exactly the exponential
        mechanism on the shared score over all supports (``exhaustive``); None otherwise.
    prepared_type : type or None
        The frozen dataclass :meth:`prepare` returns (see **Preparation** below); declaring
        it makes the preparation storable for resumed runs with no further code.
    diagnostics : dict of str to Diagnostic
        The diagnostics (keys of ``Draws.diagnostics``) that summaries aggregate, and how;
        undeclared diagnostics are stored and loaded (``diag.<name>``) but not summarised.

    Notes
    -----
    **Supports.** Every support is an int64 array of s distinct column indices in
    ``[0, p)``, sorted ascending; a batch has shape ``(n_draws, s)``.

    **Randomness.** All randomness comes from the ``rng`` argument (a
    :class:`numpy.random.Generator`; no ``np.random.*`` globals, clock or process id): the
    same trial, parameters and seed give the same output whatever the machine load.

    **Preparation.** :meth:`prepare` returns a frozen dataclass (declared as
    :attr:`prepared_type`; every built-in does) or any other object. It is immutable after
    ``prepare``: the runner passes the same object to :meth:`draw` for every epsilon and to
    :meth:`log_prob`, or one rebuilt from the results store by :meth:`load_prepared`.
    Mutating it (a field, an array's entries, a dict inside it) would make a row depend on
    which epsilons ran before it (so on resume history, job order and backend), which
    :func:`dpbench.testing.check_selector` detects. The only part that may change is a
    :class:`Memo` field (:class:`EpsilonCache` for per-ε normalisers): it may gain entries,
    each a pure function of its key and the rest of the preparation. The trial and its data
    are read-only too; the trial's shared work goes through ``trial.shared`` / ``trial.oracle``.

    **Errors.** A :class:`dpbench.core.errors.UserInputError` raised during validation, before
    any trial (``__init__``: parameter values; :meth:`check_setting`: sizes), stops the run
    with one line and exit status 2. Anything raised by :meth:`prepare` or :meth:`draw`
    during a trial (a UserInputError included) is recorded as a *failed* row for that
    (trial, epsilon) with its message; the run goes on with the other methods and trials.

    **Certification.** When the guarantee cannot be established for a trial (an oracle
    call not certified optimal, a top-R list not provably exact), :meth:`draw` still
    returns ``n_draws`` valid supports (the best it has) with ``Draws.certified=False``;
    the row is then reported as uncertified, never as private. Placeholder rows (``-1``,
    repeated indices) are a contract violation; if there is no support to return, raise
    (the row is failed).
    """

    kind: ClassVar[str] = "selector"
    dp_type: ClassVar[str | None] = None
    neighbouring: ClassVar[str] = REPLACE_ONE
    source: ClassVar[str] = ""
    uses_oracle: ClassVar[bool] = False
    #: Data preprocessing the selector's guarantee needs (:data:`PREPROCESSING`): ``"clip"``
    #: (X, y clipped to b_x, b_y, which bounds the score's sensitivity) or ``"none"`` (the
    #: guarantee holds on raw data, e.g. bounded votes); the runner builds the trial data from it.
    preprocessing: ClassVar[str] = "clip"
    output_law: ClassVar[str | None] = None
    #: Losses (``--loss``) it works with; ``("*",)``: any, via trial.score/delta (others refused up front).
    losses: ClassVar[tuple] = ("*",)
    diagnostics: ClassVar[dict[str, Diagnostic]] = {}

    def check_setting(self, p: int, s: int) -> None:
        """Refuse, before the first trial, a problem size this selector cannot handle.

        Called by the runner for every data setting once p and s are known, so that a
        problem the selector would refuse fails the run up front (one line, exit 2) instead of
        becoming a failed row in every trial.

        Parameters
        ----------
        p, s : int
            Number of features and sparsity level of the setting.

        Raises
        ------
        UserInputError
            Naming the limit and the parameter that raises it.
        """

    def prepare(self, trial: TrialView, rng: np.random.Generator) -> Any:
        """Epsilon-independent work for one trial (enumeration, oracle calls, ...).

        Called once per trial and selector, before any :meth:`draw`.

        Parameters
        ----------
        trial : TrialView
            The clipped data and the privacy setup (``trial.s``, ``trial.p``,
            ``trial.score``, ``trial.oracle()``); read-only.
        rng : numpy.random.Generator
            The only source of randomness.

        Returns
        -------
        prepared_type or object
            Everything :meth:`draw` and :meth:`log_prob` need: preferably an instance of the
            frozen dataclass :attr:`prepared_type` (then stored and reloaded without further
            code); immutable from now on except its :class:`Memo` fields. The default
            returns None.

        Raises
        ------
        Exception
            Anything: the trial's rows for this selector are recorded as failed (use
            UserInputError, with the fix in the message, for a parameter incompatible
            with this data set).
        """
        return None

    @abc.abstractmethod
    def draw(self, trial: TrialView, prepared: Any, epsilon: float, n_draws: int,
             rng: np.random.Generator) -> Draws:
        """Return ``n_draws`` independent private supports for privacy parameter ``epsilon``.

        Parameters
        ----------
        trial, prepared
            The trial of :meth:`prepare` and its return value (read-only).
        epsilon : float
            Privacy parameter ε > 0 (finite).
        n_draws : int
            Number of supports, >= 1.
        rng : numpy.random.Generator
            The only source of randomness.

        Returns
        -------
        Draws
            ``supports`` of shape ``(n_draws, s)``, int64, each row sorted ascending with
            distinct indices in ``[0, p)``; ``certified=False`` when the guarantee does
            not hold for this trial (the supports must still be valid).

        Raises
        ------
        Exception
            Recorded as a failed row for this (trial, epsilon).
        """

    def log_prob(self, trial: TrialView, prepared: Any, epsilon: float, support) -> float | None:
        """Exact natural-log probability that :meth:`draw` outputs ``support``, or None.

        Parameters
        ----------
        trial, prepared, epsilon
            As in :meth:`draw`; ``prepared`` must not be mutated.
        support : array_like of int
            s distinct column indices, in any order.

        Returns
        -------
        float or None
            ``log P(draw returns support)`` (``-inf`` for an impossible support, 0.0 for a
            certain one), exact up to floating-point rounding, summing (in probability)
            to 1 over all C(p, s) supports; None when the law is not known in closed
            form (the default) or not for this trial (e.g. uncertified). Never an
            approximation.
        """
        return None

    #: The frozen dataclass :meth:`prepare` returns, or None. When set, the default
    #: :meth:`save_prepared` / :meth:`load_prepared` store it field by field
    #: (:func:`dpbench.core.preparation.prepared_state`): arrays as ``.npy`` data, other fields as
    #: JSON, nested dataclasses flattened, ``init=False`` and :class:`Memo` fields rebuilt.
    prepared_type: ClassVar[type | None] = None
    #: Bump when the fields of the saved preparation change: stored artefacts of another
    #: version are ignored (recomputed), never misread.
    prepared_version: ClassVar[int] = 1

    def save_prepared(self, prepared: Any) -> dict | None:
        """The ε-independent preparation as plain data, so a resumed run need not redo it.

        Optional. The runner stores the returned dict in the results database (artefact
        table: arrays as ``.npy`` data, everything else as JSON; no pickle) under a key of
        (data setting, trial, method configuration, seed, :attr:`prepared_version`). Adding
        ε values or draws to a finished run then costs only :meth:`draw`.

        Parameters
        ----------
        prepared : object
            What :meth:`prepare` returned.

        Returns
        -------
        dict or None
            ``{name: value}`` where each value is a numpy array (numeric or bool dtype) or a
            JSON-serialisable value (None, bool, int, float including inf/nan, str, lists and
            dicts of those). None means "not storable": the preparation is recomputed on
            resume. :meth:`load_prepared` must rebuild an object with which :meth:`draw` and
            :meth:`log_prob` give bit-identical results (:func:`dpbench.testing.check_selector`
            checks it). The default stores a :attr:`prepared_type` instance field by field
            and returns None when :attr:`prepared_type` is None.

        Raises
        ------
        TypeError
            A field that is not storable without pickle.
        """
        if self.prepared_type is None or prepared is None:
            return None
        if not isinstance(prepared, self.prepared_type):
            raise TypeError(f"{self.name}: prepare returned a {type(prepared).__name__}, "
                            f"not its prepared_type {self.prepared_type.__name__}")
        return prepared_state(prepared)

    def load_prepared(self, state: dict) -> Any:
        """Rebuild the ``prepared`` object from :meth:`save_prepared`'s dict (arrays as ndarray).

        Raises
        ------
        ValueError
            The dict does not have the fields of :attr:`prepared_type`.
        """
        if self.prepared_type is None:
            raise NotImplementedError(f"{self.name} does not implement load_prepared")
        return prepared_from_state(self.prepared_type, state)

    @classmethod
    def describe(cls) -> dict:
        d = super().describe()
        d.update(dp_type=cls.dp_type, neighbouring=cls.neighbouring, source=cls.source,
                 analytic=cls.log_prob is not Selector.log_prob, losses=list(cls.losses))
        return d


class BatchLogProb:
    """Mixin for a selector whose law is given for a batch of supports by ``log_probs``.

    Put it before :class:`Selector` in the bases (``class TopR(BatchLogProb, Selector)``)
    and implement ``log_probs(trial, prepared, epsilon, supports)`` for sorted supports of
    shape (B, s), returning log-probabilities of shape (B,); :meth:`log_prob` then follows
    the contract of :meth:`Selector.log_prob` for one support in any order. Override
    :meth:`has_law` when the law is unknown for some trials.
    """

    def has_law(self, prepared) -> bool:
        """False when the output law is not known for this preparation (``log_prob`` returns None)."""
        return True

    def log_prob(self, trial, prepared, epsilon, support):
        """:meth:`Selector.log_prob` from ``log_probs``: -inf for a wrong size, None without a law."""
        if not self.has_law(prepared):
            return None
        S = as_support(support, trial.p)
        if S.size != trial.s:
            return -math.inf
        return float(self.log_probs(trial, prepared, epsilon, S[None, :])[0])
