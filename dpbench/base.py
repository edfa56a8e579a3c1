"""The interfaces a plugin implements: selectors, data generators, data sets and solvers.

Layer 1 (core types): this module imports nothing of dpbench but errors and problem; the
trial (:mod:`dpbench.trial`) and the score are named in annotations only.
A plugin module returns subclasses of these from the hooks in :mod:`dpbench.hookspecs`.
The split follows design.md section 6: a selector has an expensive, epsilon-independent
``prepare`` step per trial and a cheap ``draw`` step, so many draws or an epsilon sweep
reuse one preparation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import numpy as np

from .errors import UserInputError
from .problem import Problem

if TYPE_CHECKING:  # annotations only: the trial and the score are higher layers
    from .score import RidgeScore
    from .trial import Trial

#: DP types a selector can declare (design.md section 4).
DP_TYPES = ("pure", "approximate", "none")
#: The one neighbouring relation every built-in selector is calibrated to.
REPLACE_ONE = "replace-one"
#: Data preprocessings a selector can declare (``Selector.preprocessing``).
PREPROCESSING = ("clip", "none")


@dataclass(frozen=True)
class Param:
    """Declaration of one parameter of a plugin.

    Parameters
    ----------
    default : object
        Value used when the user gives none.
    doc : str
        One-line description shown by ``dpbench list``.
    type : callable, optional
        Converts a command-line string (or a value) to the parameter's type; defaults to
        the type of ``default``.
    choices : tuple, optional
        Allowed values.
    """

    default: Any
    doc: str
    type: Callable | None = None
    choices: tuple | None = None

    def convert(self, name: str, value):
        """Convert ``value`` (often a string from the command line), or raise UserInputError."""
        conv = self.type or (type(self.default) if self.default is not None else _auto)
        if conv is bool:
            conv = _to_bool
        try:
            out = conv(value)
        except (TypeError, ValueError) as exc:
            raise UserInputError(f"parameter {name}={value!r}: {exc}") from None
        if self.choices is not None and out not in self.choices:
            raise UserInputError(f"parameter {name}={value!r} must be one of {', '.join(map(str, self.choices))}")
        return out


def _to_bool(v):
    if isinstance(v, bool):
        return v
    t = str(v).strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true/false")


def _auto(v):
    """Best-effort conversion for parameters whose default is None."""
    if not isinstance(v, str):
        return v
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


def int_or_inf(v):
    """Parameter type: a positive integer or ``inf`` (e.g. the number of rejection rounds T)."""
    if isinstance(v, str) and v.strip().lower() in ("inf", "infinity", "none"):
        return math.inf
    f = float(v)
    if math.isinf(f):
        return math.inf
    if f != int(f) or f < 1:
        raise ValueError("expected a positive integer or 'inf'")
    return int(f)


class Configurable:
    """Base for plugins with declared parameters (``params``) validated at construction."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    params: ClassVar[dict[str, Param]] = {}

    def __init__(self, **params):
        unknown = set(params) - set(self.params)
        if unknown:
            known = ", ".join(sorted(self.params)) or "(none)"
            raise UserInputError(
                f"{self.kind} {self.name!r} has no parameter {sorted(unknown)[0]!r}; its parameters are: {known}"
            )
        self.config = {k: p.default for k, p in self.params.items()}
        for k, v in params.items():
            self.config[k] = self.params[k].convert(f"{self.name}.{k}", v)

    kind: ClassVar[str] = "plugin"

    @classmethod
    def describe(cls) -> dict:
        """Metadata for ``dpbench list`` (JSON-serialisable)."""
        return {
            "name": cls.name,
            "summary": cls.summary,
            "params": {k: {"default": _jsonable(p.default), "doc": p.doc} for k, p in cls.params.items()},
        }


def _jsonable(v):
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return v


@dataclass
class Draws:
    """The private outputs of one selector for one trial and one epsilon.

    Parameters
    ----------
    supports : ndarray of shape (n_draws, s), int64
        One sorted support per draw.
    certified : bool
        False when the mechanism's guarantee could not be established (for example a top-R
        list that is not provably exact); such outputs are never reported as private.
    epsilon_spent : float, optional
        The privacy loss actually guaranteed when it differs from the requested epsilon
        (finite T in top-R, Theorem 1 of behdin2024).
    delta : float
        The delta of an approximate (epsilon, delta) guarantee, 0 for pure DP.
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


class Selector(Configurable):
    """A (differentially private) variable-selection method.

    Subclasses set ``name``, ``summary``, ``dp_type`` (one of :data:`DP_TYPES`),
    ``neighbouring`` (``"replace-one"`` for every built-in), ``reference`` (the paper) and
    ``params``, and implement :meth:`prepare` and :meth:`draw`. Selectors whose output
    distribution is known in closed form also implement :meth:`log_prob`.
    """

    kind: ClassVar[str] = "selector"
    dp_type: ClassVar[str] = "pure"
    neighbouring: ClassVar[str] = REPLACE_ONE
    reference: ClassVar[str] = ""
    #: True if the selector calls the best-subset oracle (so the run's solver is checked up front).
    uses_oracle: ClassVar[bool] = False
    #: Data preprocessing the selector's guarantee needs (:data:`PREPROCESSING`): ``"clip"``
    #: (X, y clipped to b_x, b_y, which bounds the score's sensitivity) or ``"none"`` (the
    #: guarantee holds on raw data, e.g. bounded votes); the runner builds the trial data from it.
    preprocessing: ClassVar[str] = "clip"

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

    def prepare(self, trial: Trial, rng: np.random.Generator) -> Any:
        """Epsilon-independent work for one trial (enumeration, oracle calls, ...)."""
        return None

    def draw(self, trial: Trial, prepared: Any, epsilon: float, n_draws: int,
             rng: np.random.Generator) -> Draws:
        """Return ``n_draws`` private supports for privacy parameter ``epsilon``."""
        raise NotImplementedError

    def log_prob(self, trial: Trial, prepared: Any, epsilon: float, support) -> float | None:
        """Exact log-probability that :meth:`draw` outputs ``support``, or None if unknown."""
        return None

    @classmethod
    def describe(cls) -> dict:
        d = super().describe()
        d.update(dp_type=cls.dp_type, neighbouring=cls.neighbouring, reference=cls.reference,
                 analytic=cls.log_prob is not Selector.log_prob)
        return d


# --------------------------------------------------------------------------- data


class Generator(Configurable):
    """A simulation design: draws a :class:`Problem` (with its true support) from an rng.

    ``params`` must include every argument of :meth:`generate` (typically n, p, s, ...).
    """

    kind: ClassVar[str] = "generator"

    def generate(self, rng: np.random.Generator) -> Problem:
        """Draw one data set using ``self.config``."""
        raise NotImplementedError

    def setting(self) -> dict:
        """The parameters that determine the distribution of the data (for seeding/keys)."""
        return {"generator": self.name, **self.config}


@dataclass
class DatasetArrays:
    """A loaded real data set: X (n, p), optional y (n,), and column names."""

    X: np.ndarray
    y: np.ndarray | None
    feature_names: list[str]
    target_name: str | None = None


class Dataset:
    """A real data set shipped with a plugin, with provenance.

    Subclasses set ``name``, ``summary``, ``provenance`` (source, version, citation,
    licence, sha256) and implement :meth:`load`.
    """

    kind: ClassVar[str] = "dataset"
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    provenance: ClassVar[dict] = {}
    params: ClassVar[dict] = {}

    def load(self) -> DatasetArrays:
        raise NotImplementedError

    @classmethod
    def describe(cls) -> dict:
        return {"name": cls.name, "summary": cls.summary, "provenance": cls.provenance}


# --------------------------------------------------------------------------- solvers

ORACLE_STATUSES = ("optimal", "infeasible", "time_limit", "suboptimal", "error")


@dataclass
class OracleResult:
    """Outcome of one best-support oracle call.

    Parameters
    ----------
    support : ndarray of shape (s,) or None
        Best support found (None if none was found).
    objective : float
        Its score R(S, D), recomputed with the shared score (inf if no support).
    lower_bound : float
        A valid lower bound on the constrained optimum.
    status : {"optimal", "infeasible", "time_limit", "suboptimal", "error"}
        Only ``"optimal"`` (gap within tolerance) and ``"infeasible"`` (no support satisfies
        the constraints) are certified answers. ``"time_limit"``: a work or time limit stopped
        the search; ``"suboptimal"``: the backend stopped with a support and a valid lower
        bound whose gap it could not close (numerical trouble); both are uncertified.
    iterations : int
        Master solves / cutting-plane rounds.
    seconds : float
        Wall-clock time of the call.
    message : str
        Backend detail (errors, licence messages).
    """

    support: np.ndarray | None
    objective: float
    lower_bound: float
    status: str
    iterations: int = 0
    seconds: float = 0.0
    message: str = ""

    @property
    def certified(self) -> bool:
        """True when the answer is provably correct (optimal, or provably infeasible)."""
        return self.status in ("optimal", "infeasible")


class OracleSession:
    """Best-support oracle bound to one data set; keeps what it learns across calls.

    ``solve`` minimises R(S, D) over supports of size s subject to:

    * ``exclude``: supports that may not be returned (no-good cuts
      ``sum_{i in S_j} z_i <= s - 1``);
    * ``overlap``: ``(S0, k)`` requiring ``|S ∩ S0| = k`` exactly (k = s - t mistakes);
    * ``fixed_in`` / ``fixed_out``: features forced in / out;
    * ``time_limit`` in seconds and relative ``gap_tol``.
    """

    def __init__(self, score: RidgeScore, s: int):
        self.score = score
        self.s = s

    def solve(self, *, exclude=(), overlap=None, fixed_in=(), fixed_out=(),
              time_limit: float | None = None, gap_tol: float = 1e-6) -> OracleResult:
        raise NotImplementedError

    def supports_below(self, threshold: float, *, overlap=None, exclude=(), fixed_in=(), fixed_out=(),
                       time_limit: float | None = None, max_count: int = 2_000_000, rank: int | None = None,
                       known_scores=()) -> "ThresholdResult":
        """Every feasible support with score <= a threshold (see :class:`ThresholdResult`).

        The feasible set is that of :meth:`solve` (overlap, fixed sets, excluded supports).
        The default implementation is :func:`supports_below_by_calls` (repeated :meth:`solve`
        calls with no-good cuts, one per returned support); backends override it with a
        direct enumeration (``dpbench.oracle.OASession``: threshold branch and bound).

        Parameters
        ----------
        threshold : float
            tau: return every feasible support with R(S, D) <= tau.
        overlap, exclude, fixed_in, fixed_out
            As in :meth:`solve`.
        time_limit : float, optional
            Seconds for the whole enumeration; when hit the result is uncertified.
        max_count : int
            Stop (uncertified) once more than this many supports are held.
        rank, known_scores : int, array of floats
            Optional tightening (design.md 4.2, top-R lists): with ``known_scores`` the scores
            of supports *outside* the feasible set (distinct supports), the threshold is
            lowered during the search to the ``rank``-th smallest of ``known_scores`` together
            with the scores found so far. Any ``rank`` distinct supports bound the ``rank``-th
            smallest score from above, so a support above the lowered threshold cannot be
            among the ``rank`` smallest overall.

        Returns
        -------
        ThresholdResult

        Notes
        -----
        A backend without a direct enumeration inherits
        :class:`dpbench.oracle.threshold.ThresholdByCalls`, which answers with repeated
        :meth:`solve` calls and no-good cuts.
        """
        raise NotImplementedError


@dataclass
class ThresholdResult:
    """Outcome of :meth:`OracleSession.supports_below`: all feasible supports with score <= tau.

    Unpacks as ``supports, scores, certified, lower_bound = result``.

    Attributes
    ----------
    supports : ndarray of shape (m, s), int64
        Sorted rows, ordered by (score, lexicographic support).
    scores : ndarray of shape (m,)
        Their scores R(S, D) from the shared score; all <= ``threshold``.
    certified : bool
        True when the enumeration is proven complete: every feasible, non-excluded support
        not returned has score > ``threshold`` (``lower_bound > threshold``; for the
        call-based default, within the oracle's certified gap tolerance).
    lower_bound : float
        A valid lower bound on the score of every feasible, non-excluded support not
        returned (inf when there is none).
    threshold : float
        The threshold actually used: the caller's, or lower when ``rank`` tightened it.
    status : {"complete", "time_limit", "max_count", "error"}
    calls : int
        Oracle ``solve`` calls made (0 for a direct enumeration).
    nodes : int
        Branch-and-bound nodes processed (0 when not applicable).
    seconds : float
    message : str
    """

    supports: np.ndarray
    scores: np.ndarray
    certified: bool
    lower_bound: float
    threshold: float
    status: str = "complete"
    calls: int = 0
    nodes: int = 0
    seconds: float = 0.0
    message: str = ""

    def __iter__(self):
        return iter((self.supports, self.scores, self.certified, self.lower_bound))


class Solver(Configurable):
    """A best-subset oracle backend (design.md section 5).

    Subclasses implement :meth:`session`; ``handles_lam_zero`` says whether the backend
    accepts Lambda = 0.
    """

    kind: ClassVar[str] = "solver"
    handles_lam_zero: ClassVar[bool] = False

    def session(self, score: RidgeScore, s: int) -> OracleSession:
        raise NotImplementedError

    @classmethod
    def describe(cls) -> dict:
        d = super().describe()
        d["handles_lam_zero"] = cls.handles_lam_zero
        return d


def check_dp_type(cls) -> None:
    """Raise if a selector class declares no valid DP type (used when registering)."""
    if getattr(cls, "dp_type", None) not in DP_TYPES:
        raise UserInputError(f"selector {cls.__name__} declares dp_type={cls.dp_type!r}; use one of {DP_TYPES}")
