"""The interfaces a plugin implements: selectors, data generators, data sets and solvers.

A plugin module returns subclasses of these from the hooks in :mod:`dpbench.hookspecs`.
The split follows design.md section 6: a selector has an expensive, epsilon-independent
``prepare`` step per trial and a cheap ``draw`` step, so many draws or an epsilon sweep
reuse one preparation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, ClassVar

import numpy as np

from .errors import UserInputError
from .problem import Problem
from .score import RidgeScore, sensitivity

#: DP types a selector can declare (design.md section 4).
DP_TYPES = ("pure", "approximate", "none")
#: Default ridge penalty Lambda of runs and of the Python API. Outer-approximation oracles
#: need Lambda > 0 and slow down sharply as Lambda -> 0 (weaker cuts); the NeurIPS 2025
#: experiments used 120 (configs/neurips2025.toml), the ICLR-workshop ones 0.
DEFAULT_LAM = 10.0
#: The one neighbouring relation every built-in selector is calibrated to.
REPLACE_ONE = "replace-one"


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


# --------------------------------------------------------------------------- trials


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
    def delta(self) -> float:
        """Global sensitivity Delta of the score (design.md section 3)."""
        return sensitivity(self.s, self.b_x, self.b_y, self.r, self.sensitivity_kind)

    @cached_property
    def score(self) -> RidgeScore:
        """The shared score R(S, D) on this trial's clipped data."""
        return RidgeScore(self.problem.X, self.problem.y, lam=self.lam, r=self.r)

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
        from .plugins import registry

        name = solver or self.solver
        merged = {**(self.solver_params if name == self.solver else {}), **params}
        key = ("oracle", name, tuple(sorted((k, repr(v)) for k, v in merged.items())))
        return self.shared(key, lambda: registry().solver(name)(**merged).session(self.score, self.s))


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
    diagnostics : dict
        JSON-serialisable per-trial diagnostics (acceptance rate, oracle calls, ...).
    """

    supports: np.ndarray
    certified: bool = True
    epsilon_spent: float | None = None
    delta: float = 0.0
    diagnostics: dict = field(default_factory=dict)


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
        direct enumeration (``dpbench.oa.OASession``: threshold branch and bound).

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
        """
        return supports_below_by_calls(self, threshold, overlap=overlap, exclude=exclude, fixed_in=fixed_in,
                                       fixed_out=fixed_out, time_limit=time_limit, max_count=max_count,
                                       rank=rank, known_scores=known_scores)


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


def rank_threshold(threshold: float, rank: int | None, *score_arrays) -> float:
    """``min(threshold, rank-th smallest value among score_arrays)`` (threshold if fewer values).

    Parameters
    ----------
    threshold : float
    rank : int or None
        None: return ``threshold`` unchanged.
    score_arrays : 1-d arrays of scores of distinct supports.
    """
    if rank is None:
        return float(threshold)
    vals = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in score_arrays]) if score_arrays \
        else np.empty(0)
    if rank < 1 or vals.size < rank:
        return float(threshold)
    return float(min(threshold, np.partition(vals, rank - 1)[rank - 1]))


def _order_supports(supports, scores):
    """Indices sorting (supports, scores) by (score, lexicographic support)."""
    S = np.asarray(supports)
    if not len(S):
        return np.zeros(0, dtype=np.int64)
    return np.lexsort([S[:, j] for j in range(S.shape[1] - 1, -1, -1)] + [np.asarray(scores)])


def supports_below_by_calls(session, threshold: float, *, overlap=None, exclude=(), fixed_in=(), fixed_out=(),
                            time_limit: float | None = None, max_count: int = 2_000_000, rank: int | None = None,
                            known_scores=()) -> ThresholdResult:
    """:meth:`OracleSession.supports_below` by repeated ``session.solve`` calls with no-good cuts.

    Works with any object that has the ``solve`` method of :class:`OracleSession`. The k-th
    call returns the k-th best feasible support; the loop stops at the first support above
    the (possibly rank-tightened) threshold, whose call's lower bound then bounds every
    support not returned. Exact when every call is certified (within each call's gap
    tolerance: the reported ``lower_bound`` says by how much). One call per returned
    support: meant for small outputs and as the reference implementation.
    """
    import time

    t0 = time.perf_counter()
    deadline = t0 + (time_limit if time_limit is not None and math.isfinite(time_limit) else math.inf)
    ex = [np.sort(np.asarray(S, dtype=np.int64)) for S in exclude]
    found_S, found_sc = [], []
    tau = rank_threshold(threshold, rank, known_scores)
    calls, status, lower, certified, msg = 0, "complete", math.inf, True, ""
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            status, certified, msg = "time_limit", False, "time limit reached"
            lower = -math.inf
            break
        res = session.solve(overlap=overlap, exclude=list(ex), fixed_in=fixed_in, fixed_out=fixed_out,
                            time_limit=None if math.isinf(left) else left)
        calls += 1
        if res.status == "infeasible":
            lower = math.inf  # nothing feasible is left
            break
        if not res.certified:
            status, certified, msg = ("time_limit" if res.status == "time_limit" else "error"), False, \
                f"an oracle call ended with status {res.status}"
            lower = float(res.lower_bound)
            break
        if res.objective > tau:
            lower = float(res.lower_bound)
            break
        S = np.sort(np.asarray(res.support, dtype=np.int64))
        ex.append(S)
        found_S.append(S)
        found_sc.append(float(res.objective))
        tau = rank_threshold(tau, rank, known_scores, found_sc)
        if len(found_S) > max_count:
            status, certified, msg, lower = "max_count", False, f"more than max_count = {max_count} supports", \
                float(res.lower_bound)
            break
    s = session.s
    S = np.array(found_S, dtype=np.int64).reshape(-1, s)
    sc = np.array(found_sc, dtype=np.float64)
    keep = sc <= tau
    if (~keep).any():  # dropped by the tightened threshold: not returned, so they bound the rest
        lower = min(lower, float(sc[~keep].min()))
    S, sc = S[keep], sc[keep]
    order = _order_supports(S, sc)
    return ThresholdResult(S[order], sc[order], certified, lower, tau, status, calls, 0,
                           time.perf_counter() - t0, msg)


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
