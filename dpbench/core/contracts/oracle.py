"""The oracle contracts: a best-subset backend (:class:`Solver`), its per-data-set
:class:`OracleSession` and the results of its calls (:class:`OracleResult`, :class:`ThresholdResult`).

Re-exported by :mod:`dpbench.api`; the oracle
itself (:mod:`dpbench.core.oracle`) implements them. The score is named in annotations only.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from dpbench.core.params import Configurable

if TYPE_CHECKING:  # annotations only: the score is a higher layer
    from dpbench.core.score import RidgeScore

ORACLE_STATUSES = ("optimal", "infeasible", "work_limit", "time_limit", "suboptimal", "error")


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
    status : {"optimal", "infeasible", "work_limit", "time_limit", "suboptimal", "error"}
        Only ``"optimal"`` (gap within tolerance) and ``"infeasible"`` (no support satisfies
        the constraints) are certified. ``"work_limit"``: a deterministic count (nodes, master
        iterations) stopped it, alike on every machine; ``"time_limit"``: the wall-clock safety
        net (machine-dependent); ``"suboptimal"``: a bound not closed (numerics). Uncertified.
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


class OracleSession(abc.ABC):
    """Best-support oracle bound to one data set; keeps what it learns across calls.

    Returned by :meth:`Solver.session` and shared by every selector of a trial
    (``trial.oracle()``); it may keep state (cuts, incumbents) across calls, but each
    answer must depend only on the call's arguments, not on earlier calls, except through
    certified facts. Checked against brute force by :func:`dpbench.testing.check_solver`.

    ``solve`` minimises R(S, D) over supports of size s subject to:

    * ``exclude``: supports that may not be returned (no-good cuts ``sum_{S_j} z_i <= s - 1``);
    * ``overlap``: ``(S0, k)`` requiring ``|S ∩ S0| = k`` exactly (k = s - t mistakes);
    * ``fixed_in`` / ``fixed_out``: features forced in / out; relative ``gap_tol``;
    * ``node_limit``: deterministic work limit ("work_limit"); ``time_limit``: safety net (s).
    """

    def __init__(self, score: RidgeScore, s: int):
        self.score = score
        self.s = s

    @abc.abstractmethod
    def solve(self, *, exclude=(), overlap=None, fixed_in=(), fixed_out=(),
              time_limit: float | None = None, gap_tol: float = 1e-6, node_limit: int | None = None) -> OracleResult:
        """The feasible support of smallest score R(S, D) (ties: the canonical one, TIE_RTOL).

        The constraints (``exclude`` as rows of shape (m, s), ``overlap=(S0, k)``, fixed
        sets, ``time_limit``, ``gap_tol``, ``node_limit``) are those of the class docstring.

        Returns
        -------
        OracleResult
            ``support`` int64 of shape (s,), sorted (or None), ``objective`` from the shared
            score, a valid ``lower_bound``; ``status="optimal"`` only when proven.

        Raises
        ------
        UserInputError
            Inconsistent constraints given by the caller (index out of range, ...).
        SolverLimitError
            The backend refuses the model (licence size limit, missing solver).
        """

    @abc.abstractmethod
    def supports_below(self, threshold: float, *, overlap=None, exclude=(), fixed_in=(), fixed_out=(),
                       time_limit: float | None = None, max_count: int = 2_000_000, rank: int | None = None,
                       known_scores=(), node_limit: int | None = None) -> "ThresholdResult":
        """Every feasible support with score <= a threshold (see :class:`ThresholdResult`).

        The feasible set is that of :meth:`solve` (overlap, fixed sets, excluded supports).
        A backend without a direct enumeration inherits
        :class:`dpbench.core.oracle.threshold.ThresholdByCalls` (repeated :meth:`solve` calls with
        no-good cuts, one per returned support); ``dpbench.core.oracle.OASession`` enumerates
        directly (threshold branch and bound).

        Parameters
        ----------
        threshold : float
            tau: return every feasible support with R(S, D) <= tau.
        overlap, exclude, fixed_in, fixed_out
            As in :meth:`solve`.
        time_limit : float, optional
            Safety net (seconds) of the whole enumeration; when hit: uncertified, "time_limit".
        node_limit : int, optional
            Deterministic work limit (nodes; per call when by calls); uncertified, "work_limit".
        max_count : int
            Stop (uncertified) once more than this many supports are held.
        rank, known_scores : int, array of floats
            Optional tightening (docs/methods/topr.md, top-R lists): with ``known_scores`` the scores
            of supports *outside* the feasible set (distinct supports), the threshold is
            lowered during the search to the ``rank``-th smallest of ``known_scores`` together
            with the scores found so far. Any ``rank`` distinct supports bound the ``rank``-th
            smallest score from above, so a support above the lowered threshold cannot be
            among the ``rank`` smallest overall.

        Returns
        -------
        ThresholdResult
        """

    def data_caches(self) -> dict:
        """Caches that are pure functions of the data (no call history), to hand to a copy.

        A search run on a copy of the session (a forked process, a cluster task) returns
        them, and :meth:`adopt_data_caches` installs them here, so the work is not repeated:
        adopting one changes no answer, bound or node count. The default has none; callers
        treat both methods as optional (an object that only wraps ``solve`` and
        ``supports_below`` hands nothing back).

        Returns
        -------
        dict
            Name -> array; empty by default.
        """
        return {}

    def adopt_data_caches(self, caches: dict) -> None:
        """Install caches from :meth:`data_caches` of a copy of this session (default: ignore them)."""


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
    status : {"complete", "work_limit", "time_limit", "max_count", "error"}
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


class Solver(Configurable, abc.ABC):
    """A best-subset oracle backend (docs/solvers.md).

    Subclasses set ``name``, ``summary``, ``params`` and implement :meth:`session`;
    ``handles_lam_zero`` says whether the backend accepts Lambda = 0. A backend that
    cannot run on this machine (missing licence or executable) raises
    :class:`dpbench.core.errors.SolverLimitError` from :meth:`session`.
    """

    kind: ClassVar[str] = "solver"
    handles_lam_zero: ClassVar[bool] = False
    #: ``Loss.oracle`` kinds it accepts: "least-squares" (ridge Gram structure), "generic" (batched score).
    losses: ClassVar[tuple] = ("least-squares",)

    @abc.abstractmethod
    def session(self, score: RidgeScore, s: int) -> OracleSession:
        """An oracle session for the shared score ``score`` and sparsity level ``s``.

        Raises
        ------
        UserInputError
            Settings the backend cannot handle (e.g. Lambda = 0), naming an alternative.
        SolverLimitError
            The backend is unavailable or refuses the model size.
        """

    @classmethod
    def describe(cls) -> dict:
        d = super().describe()
        d["handles_lam_zero"] = cls.handles_lam_zero
        return d
