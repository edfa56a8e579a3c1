"""Running one selector on one trial: the path ``dpbench compare`` and ``dpbench.select`` share.

:meth:`SelectorRun.prepare` (or :meth:`SelectorRun.load`, a preparation stored by an
earlier run) does the ε-independent work once; :meth:`SelectorRun.draw` then, per ε, draws
the private supports, checks them against the contract (:meth:`dpbench.api.Selector.draw`:
shape ``(n_draws, s)``, distinct indices in ``[0, p)``), sorts each row, and states the
privacy guarantee that holds for the output (:meth:`dpbench.api.Draws.guarantee`), withdrawn
when the trial's score could not certify a value the mechanism used. What the caller does
with an exception (the runner records a failed row, :func:`dpbench.select` raises) is its own.
:func:`run_instances` holds the plugin instances of a run (each built once).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbench.core.contracts.selector import Draws, Selector
from dpbench.bench.registry import PluginInstances


@dataclass(frozen=True)
class Selection:
    """The private output of one selector at one ε.

    Parameters
    ----------
    epsilon : float
        Privacy parameter ε requested.
    supports : ndarray of shape (n_draws, s), int64
        The private supports, each row sorted ascending.
    draws : Draws
        The selector's output, ``certified`` withdrawn when the score was not certified.
    guarantee : str
        The privacy guarantee that holds (``"pure ε=1"``, ``"(ε=1, δ=1e-06)"``, ``"none: ..."``).
    log_prob : float or None
        ``log P(output = reference)`` when a reference support was given and the selector's
        law is known (:meth:`dpbench.api.Selector.log_prob`), else None.
    draw_seconds : float
        Wall-clock seconds of :meth:`dpbench.api.Selector.draw` alone (reported, never used
        to decide anything).
    evaluation : object
        What the caller's ``evaluate`` returned (:meth:`SelectorRun.draw`), else None.
    """

    epsilon: float
    supports: np.ndarray
    draws: Draws
    guarantee: str
    log_prob: float | None
    draw_seconds: float
    evaluation: Any = None

    @property
    def certified(self) -> bool:
        return self.draws.certified

    @property
    def status(self) -> str:
        """``"ok"`` or ``"uncertified"`` (the output is then not private)."""
        return "ok" if self.draws.certified else "uncertified"


class SelectorRun:
    """A selector prepared on one trial, ready to draw at any ε.

    Build it with :meth:`prepare` or :meth:`load`.

    Parameters
    ----------
    selector : Selector
        The plugin instance (stateless: one per run).
    trial : Trial
        The trial after the selector's preprocessing (read-only).
    prepared : object
        The selector's preparation (read-only).
    name : str
        Name used in error messages (default: the selector's registered name).
    """

    def __init__(self, selector: Selector, trial, prepared: Any, name: str | None = None):
        self.selector = selector
        self.trial = trial
        self.prepared = prepared
        self.name = name or selector.name

    @classmethod
    def prepare(cls, selector: Selector, trial, rng: np.random.Generator, name: str | None = None) -> "SelectorRun":
        """Run :meth:`dpbench.api.Selector.prepare` once; exceptions propagate."""
        return cls(selector, trial, selector.prepare(trial, rng), name)

    @classmethod
    def load(cls, selector: Selector, trial, state: dict, name: str | None = None) -> "SelectorRun":
        """Rebuild a stored preparation (:meth:`dpbench.api.Selector.load_prepared`)."""
        return cls(selector, trial, selector.load_prepared(state), name)

    def save(self) -> dict | None:
        """The preparation as plain data (:meth:`dpbench.api.Selector.save_prepared`), or None."""
        return self.selector.save_prepared(self.prepared)

    def log_prob(self, epsilon: float, support) -> float | None:
        """Exact log-probability that a draw at ``epsilon`` outputs ``support``, or None."""
        return self.selector.log_prob(self.trial, self.prepared, epsilon, support)

    def draw(self, epsilon: float, n_draws: int, rng: np.random.Generator, reference=None,
             evaluate=None) -> Selection:
        """Draw ``n_draws`` private supports at ``epsilon``, check them and state their guarantee.

        Parameters
        ----------
        epsilon : float
            Privacy parameter ε > 0 (already validated).
        n_draws : int
            Number of supports, >= 1.
        rng : numpy.random.Generator
            The selector's only source of randomness for these draws.
        reference : ndarray of shape (s,), optional
            A support whose exact probability to report (:attr:`Selection.log_prob`).
        evaluate : callable, optional
            ``evaluate(supports)`` (the checked, sorted supports), e.g. the runner's metrics and
            objective gap; its result is :attr:`Selection.evaluation`. It runs before the
            certification check, so a score it finds uncertified also withdraws the guarantee.

        Returns
        -------
        Selection

        Raises
        ------
        RuntimeError
            Supports that break the contract (wrong shape, a repeated or out-of-range index).
        Exception
            Whatever the selector raises.
        """
        t0 = time.perf_counter()
        draws = self.selector.draw(self.trial, self.prepared, epsilon, n_draws, rng)
        seconds = time.perf_counter() - t0
        supports = check_supports(draws.supports, n_draws, self.trial.s, self.trial.p, self.name)
        lp = None if reference is None else self.log_prob(epsilon, reference)
        evaluation = None if evaluate is None else evaluate(supports)
        # A score computed to a tolerance (the hinge loss) counts the supports whose certificate
        # failed; the mechanism's sensitivity holds only for certified scores, so the output is
        # not private (checked last: log_prob and evaluate may score supports too, and an
        # uncertified score anywhere in the trial is not taken as private).
        if getattr(self.trial.__dict__.get("score"), "uncertified", 0) and draws.certified:
            draws = dataclasses.replace(draws, certified=False)
        return Selection(float(epsilon), supports, draws, draws.guarantee(type(self.selector).dp_type, epsilon),
                         lp, seconds, evaluation)


#: The plugin instances of the last few runs in this process (a grid runs one configuration
#: after another), keyed by what builds them; workers of a parallel run build their own.
_RUN_INSTANCES: dict[str, PluginInstances] = {}
_KEEP_RUNS = 4


def run_instances(cfg) -> PluginInstances:
    """The plugin instances of a run (a :class:`~dpbench.bench.run.RunConfig`): each
    selector, generator, solver and loss built once.

    Keyed by the run options that build plugins (methods and their parameters, data
    settings, solver, loss), so a run's validation, its trials and, in a worker process of a
    parallel run, every task of that worker share them. Plugins keep nothing between calls
    but their configuration, so sharing them cannot make a result depend on job order.
    """
    key = json.dumps([cfg.methods, cfg.method_params, cfg.data, cfg.solver, cfg.solver_params, cfg.loss],
                     sort_keys=True, default=str)
    inst = _RUN_INSTANCES.get(key)
    if inst is None:
        while len(_RUN_INSTANCES) >= _KEEP_RUNS:
            _RUN_INSTANCES.pop(next(iter(_RUN_INSTANCES)))
        inst = _RUN_INSTANCES[key] = PluginInstances()
    return inst


def check_supports(supports, n_draws: int, s: int, p: int, name: str) -> np.ndarray:
    """The supports as sorted int64 rows, after checking the selector's contract.

    Returns
    -------
    ndarray of shape (n_draws, s), int64

    Raises
    ------
    RuntimeError
        Naming ``name``, for a wrong shape or a repeated or out-of-range index.
    """
    S = np.asarray(supports, dtype=np.int64)
    if S.shape != (n_draws, s):
        raise RuntimeError(f"{name} returned supports of shape {S.shape}, expected {(n_draws, s)}")
    if S.size and (S.min() < 0 or S.max() >= p or np.any(np.diff(np.sort(S, axis=1), axis=1) == 0)):
        raise RuntimeError(f"{name} returned an invalid support (repeated or out-of-range index)")
    return np.sort(S, axis=1)
