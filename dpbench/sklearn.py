"""Python API: run any registered selector on arrays, and a scikit-learn transformer.

>>> from dpbench.sklearn import select
>>> result = select("exhaustive", X, y, s=3, epsilon=1.0, random_state=0)   # doctest: +SKIP
>>> result.support, result.dp_type                                          # doctest: +SKIP
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpbench.bench.trial import DEFAULT_SOLVER, PrivacySetup, Trial
from dpbench.core.privacy.exponential import check_epsilon
from dpbench.bench.registry import PluginInstances, registry
from dpbench.core.problem import Problem
from dpbench.bench.selection import SelectorRun
from dpbench.core.seeding import rng_for


@dataclass
class SelectionResult:
    """Output of :func:`select`.

    Parameters
    ----------
    support : ndarray of shape (s,)
        The (first) private support.
    supports : ndarray of shape (draws, s)
        All private supports drawn.
    method, dp_type, neighbouring : str
        The selector and its guarantee (pure / approximate / none; replace-one).
    epsilon : float
        Requested privacy parameter; ``epsilon_spent`` the guaranteed one if it differs.
    certified : bool
        False if the guarantee could not be established; such output is not private.
    log_prob : float or None
        The mechanism's exact log-probability of ``support`` where available.
    guarantee : str
        The privacy guarantee that holds for this output, as in a result row of
        ``dpbench compare`` (``"pure ε=1"``, ``"(ε=1, δ=1e-06)"`` or ``"none: <reason>"``).
    """

    support: np.ndarray
    supports: np.ndarray
    method: str
    dp_type: str
    neighbouring: str
    epsilon: float
    epsilon_spent: float | None
    delta: float
    certified: bool
    log_prob: float | None
    prepare_seconds: float
    draw_seconds: float
    diagnostics: dict = field(default_factory=dict)
    guarantee: str = ""


_SETUP = PrivacySetup()


def select(method: str, X, y, *, s: int, epsilon: float, random_state=None, draws: int = 1,
           b_x: float = _SETUP.b_x, b_y: float = _SETUP.b_y, r: float = _SETUP.r, lam: float = _SETUP.lam,
           sensitivity_bound: str = _SETUP.sensitivity_bound, delta: float = _SETUP.delta, solver: str = DEFAULT_SOLVER,
           **params) -> SelectionResult:
    """Run the registered selector ``method`` on (X, y) and return its private support.

    The data get the preprocessing the selector declares, as in ``dpbench compare``
    (:meth:`dpbench.bench.trial.Trial.from_problem`: clipped to [-b_x, b_x] and [-b_y, b_y] for the
    score-based mechanisms, Lemma 2 of behdin2024); every selector is calibrated to replace-one
    neighbouring data sets. Defaults come from :class:`dpbench.bench.trial.PrivacySetup`.

    Parameters
    ----------
    method : str
        A selector name from ``dpbench list``.
    X : array_like of shape (n, p)
    y : array_like of shape (n,)
    s : int
        Sparsity level, 1 <= s < p.
    epsilon : float
        Privacy parameter, > 0.
    random_state : int, numpy Generator or None
        Seed of the selector's randomness (None: fresh entropy).
    draws : int
        Number of private outputs (they share one preparation).
    b_x, b_y, r, lam, sensitivity_bound, delta, solver
        As in ``dpbench compare`` (``delta``: the DP δ an approximate-DP selector is calibrated to).
    **params
        The selector's own parameters (``dpbench list`` shows them).

    Returns
    -------
    SelectionResult

    Raises
    ------
    UserInputError
        Bad data (NaN, shapes), bad parameters, unknown method.
    RuntimeError
        The selector returned supports that break its contract (wrong shape, repeated or
        out-of-range index), as ``dpbench compare`` would record for a trial.
    """
    epsilon = check_epsilon(epsilon)
    cls = registry().selector(method)
    selector = cls(**params)
    problem = Problem(np.asarray(X, dtype=float), np.asarray(y, dtype=float), s, name="array")
    setup = PrivacySetup(b_x=b_x, b_y=b_y, r=r, lam=lam, sensitivity_bound=sensitivity_bound, delta=delta)
    trial = Trial.from_problem(problem, setup, preprocessing=cls.preprocessing, solver=solver, instances=PluginInstances())
    if isinstance(random_state, np.random.Generator):
        rng_prepare, rng_draw = random_state.spawn(2)
    else:
        seed = random_state if random_state is not None else np.random.SeedSequence().entropy
        rng_prepare, rng_draw = rng_for(seed, "prepare", method), rng_for(seed, "draw", method)
    # the runner's path: prepare once, draw, check the supports, state the guarantee
    t0 = time.perf_counter()
    run = SelectorRun.prepare(selector, trial, rng_prepare, method)
    t1 = time.perf_counter()
    out = run.draw(epsilon, draws, rng_draw)
    lp = run.log_prob(epsilon, out.supports[0])
    return SelectionResult(out.supports[0], out.supports, method, cls.dp_type, cls.neighbouring, epsilon,
                           out.draws.epsilon_spent, out.draws.delta, out.certified, lp, t1 - t0, out.draw_seconds,
                           out.draws.diagnostics, out.guarantee)


class DPSubsetSelector(SelectorMixin, BaseEstimator):
    """scikit-learn transformer that keeps the s features chosen by a dpbench selector.

    Usable in a ``Pipeline``; ``get_support()`` gives the mask and ``transform`` keeps the
    selected columns. ``fit`` draws one private support (see :func:`select`), so with a
    fixed ``random_state`` refitting is deterministic.

    Parameters
    ----------
    method : str
        Registered selector (default ``"exhaustive"``).
    s : int
        Number of features to keep.
    epsilon : float
        Privacy parameter.
    b_x, b_y, r, lam, sensitivity_bound, delta, solver
        As in :func:`select`.
    params : dict, optional
        The selector's own parameters.
    random_state : int or None

    Attributes
    ----------
    support_ : ndarray of shape (s,)
        Selected column indices.
    result_ : SelectionResult
        Diagnostics of the fit (DP type, certification, timings).
    n_features_in_ : int
    """

    def __init__(self, method="exhaustive", s=1, epsilon=1.0, b_x=_SETUP.b_x, b_y=_SETUP.b_y, r=_SETUP.r,
                 lam=_SETUP.lam, sensitivity_bound=_SETUP.sensitivity_bound, delta=_SETUP.delta, solver=DEFAULT_SOLVER,
                 params=None, random_state=None):
        self.method = method
        self.s = s
        self.epsilon = epsilon
        self.b_x = b_x
        self.b_y = b_y
        self.r = r
        self.lam = lam
        self.sensitivity_bound = sensitivity_bound
        self.delta = delta
        self.solver = solver
        self.params = params
        self.random_state = random_state

    def fit(self, X, y):
        """Select s features of X (n_samples, n_features) privately; returns self."""
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, ensure_min_samples=2)
        self.result_ = select(self.method, X, y, s=self.s, epsilon=self.epsilon, random_state=self.random_state,
                              b_x=self.b_x, b_y=self.b_y, r=self.r, lam=self.lam,
                              sensitivity_bound=self.sensitivity_bound, delta=self.delta, solver=self.solver,
                              **(self.params or {}))
        self.support_ = self.result_.support
        return self

    def _get_support_mask(self):
        check_is_fitted(self, "support_")
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.support_] = True
        return mask
