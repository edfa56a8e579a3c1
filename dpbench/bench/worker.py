"""One trial on a worker: its data, every pending (method, ε) of it, evaluated, as result rows.

A *trial* is one data set (drawn from a generator, or a real data set) and one run of each
selector on it. :func:`run_trial` is the worker every backend calls
(:mod:`dpbench.bench.backends`); it reads nothing from the database (stored preparations
travel with the :class:`TrialTask`) and returns the rows, which the coordinating process
writes (:func:`dpbench.bench.run.execute`). Every random number comes from a stream named by
(run seed, purpose, data setting, trial, method, epsilon) — see :mod:`dpbench.core.seeding` —
so results do not depend on job order, on how many jobs run at once or on resuming.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from dpbench.bench.trial import Trial
from dpbench.core.errors import UserInputError
from dpbench.bench.evaluation.metrics import RANK_METRICS, rank_metrics, support_metrics
from dpbench.bench.evaluation.reference import UncertifiedReference, compute_reference, reference_positions
from dpbench.bench.evaluation.estimation import estimation_fields, split_budget, split_rows
from dpbench.core.problem import Problem
from dpbench.core.seeding import rng_for
from dpbench.bench.config import RunConfig, make_problem, uses_oracle
from dpbench.bench.keys import _canon, artefact_key, method_config, row_key, selector_name, setting_label
from dpbench.bench.selection import SelectorRun, run_instances


#: What a plugin may raise during a trial that becomes a failed row (a plugin calling
#: ``sys.exit`` must not end the run with status 0 and no table).
PLUGIN_FAILURES = (Exception, SystemExit)


@dataclass
class TrialTask:
    """Work for one (data setting, trial): the (method, epsilon) pairs still to run.

    ``prepared`` maps a method to its stored ε-independent preparation (see
    :meth:`dpbench.api.Selector.save_prepared`), filled by :func:`execute` from the store.
    """

    setting: dict
    trial: int
    jobs: list  # [(method, [epsilon, ...]), ...]
    prepared: dict = field(default_factory=dict)


class TrialRows(list):
    """The rows of one trial (a list) plus ``artefacts``: ``[(key, method, state), ...]`` to store."""

    artefacts: list


def reference_support(cfg: RunConfig, problem: Problem, trial: Trial) -> tuple[np.ndarray | None, str | None]:
    """The support outputs are scored against (docs/metrics.md, docs/methods/bss.md).

    Returns
    -------
    reference : ndarray of shape (s,), int64, or None
        None when the ``bss`` reference of this trial is not certified: the selectors still
        run, and their rows leave the metrics against the reference undefined.
    reason : str or None
        Why there is no reference and which limit to raise (None when there is one).
    """
    if cfg.reference == "true":
        if problem.true_support is None:
            raise UserInputError(f"{problem.name} has no true support; choose --reference bss, lasso or sis")
        return problem.true_support, None
    try:
        return compute_reference(cfg.reference, trial), None
    except UncertifiedReference as exc:
        return None, str(exc)


def run_trial(cfg: RunConfig, task: TrialTask, on_event=None) -> list[dict]:
    """Run every pending (method, epsilon) of one trial and return the result rows.

    Each selector goes through the path :func:`dpbench.select` also takes
    (:class:`~dpbench.bench.selection.SelectorRun`: prepare once, then per ε draw, check
    the supports and state the guarantee); the plugin instances are the run's
    (:func:`run_instances`). Whatever a selector raises during the trial,
    :class:`UserInputError` and ``SystemExit`` included, is recorded as a failed row with its
    error, and the run goes on: the run's configuration was validated before the first trial
    (:meth:`RunConfig.validate`), so an error here belongs to this trial. Only
    ``KeyboardInterrupt`` stops the run. ``on_event(task, method, stage)``, if given, is
    called before each method's ``"prepare"`` and ``"draws"`` (progress display within a
    trial; serial runs only).
    """
    instances = run_instances(cfg)
    problem = make_problem(cfg, task.setting, task.trial)
    skey = _canon(task.setting)
    test = None
    if cfg.estimate is not None:  # the selection and the estimate see the training rows only
        problem, test = split_rows(problem, rng_for(cfg.seed, "split", skey, task.trial))
    trials = {}

    def trial_for(preprocessing: str) -> Trial:
        """The trial's data as a selector's declared preprocessing needs it (one Trial per kind)."""
        if preprocessing not in trials:
            trials[preprocessing] = Trial.from_problem(problem, cfg.privacy_setup, preprocessing=preprocessing,
                                                       solver=cfg.solver, solver_params=cfg.solver_params,
                                                       loss=cfg.loss, instances=instances)
        return trials[preprocessing]

    trial = trial_for("clip")
    ref, ref_missing = reference_support(cfg, problem, trial)
    # TOP / GREAT / GOOD are scored at row time against the reference's full ranking (not stored)
    positions = reference_positions(cfg.reference, trial)
    base = {
        "data": setting_label(task.setting), "setting": task.setting, "n": problem.n, "p": problem.p,
        "s": problem.s, "trial": task.trial, "seed": cfg.seed, "reference": cfg.reference,
        "reference_support": None if ref is None else ref.tolist(), "sensitivity": trial.sensitivity,
        "delta": cfg.delta,
    }
    rows = TrialRows()
    rows.artefacts = []
    optimum = next((st["optimum"] for st in task.prepared.values() if st and st.get("optimum") is not None), None)
    if optimum is None and (uses_oracle(cfg) or cfg.estimate is not None):
        # The objective gap of every row of a run that uses the oracle, whichever method runs
        # first (the same certified solve topr / mistakes / bss make, so nothing is done twice).
        try:
            trial.optimum()
        except PLUGIN_FAILURES:
            pass  # the methods that need it record the failure in their own rows
        optimum = _optimum_objective(trial)
    for label, epsilons in task.jobs:
        # streams are named by the selector, not the variant: the variants of a parameter
        # sweep see the same random numbers (common random numbers across the sweep)
        method = selector_name(label)
        selector = instances.get("selector", method, cfg.method_params.get(label, {}))
        cls = type(selector)
        trial = trial_for(cls.preprocessing)
        meta = {**base, "method": method, "label": label, "config": method_config(cfg, label),
                "dp_type": cls.dp_type, "neighbouring": cls.neighbouring}
        if on_event:
            on_event(task, method, "prepare")
        t0 = time.perf_counter()
        stored = task.prepared.get(label)
        try:
            run = None
            if stored is not None:  # done by an earlier run: only the draws are new
                try:
                    run = SelectorRun.load(selector, trial, stored["state"], method)
                    opt_here = stored.get("optimum")
                except (ValueError, TypeError, KeyError):
                    # a stored preparation this plugin version cannot read (its format changed
                    # without a prepared_version bump): prepare afresh, the result is the same
                    stored = None
            if run is None:
                run = SelectorRun.prepare(selector, trial, rng_for(cfg.seed, "prepare", skey, task.trial, method),
                                          method)
                opt_here = _optimum_objective(trial)
                state = run.save()
                if state is not None:
                    state = {**state, "__optimum__": opt_here}
                    rows.artefacts.append((artefact_key(cfg, task.setting, task.trial, label), method, state))
        except PLUGIN_FAILURES as exc:  # recorded, the other methods go on
            rows += [_failed(cfg, task, meta, e, exc) for e in epsilons]
            continue
        # the objective gap uses the certified optimum whichever method (or earlier run) found it
        optimum = optimum if optimum is not None else (opt_here if opt_here is not None else _optimum_objective(trial))
        t_prep = time.perf_counter() - t0
        if on_event:
            on_event(task, method, "draws")
        for eps in epsilons:
            try:
                # evaluated right after the draw (called within run.draw), which may have solved the optimum
                # with --estimate the selection runs at its share of eps; the row keeps the pair's eps
                sel = run.draw(selection_epsilon(cfg, eps), cfg.draws,
                               rng_for(cfg.seed, "draw", skey, task.trial, method, float(eps)),
                               reference=ref if ref is not None and ref.size == trial.s else None,
                               # the gap is on the clipped data the optimum was solved on, whatever
                               # data the selector saw (sampagg's are unclipped)
                               evaluate=lambda S: _evaluate(trial_for("clip"), S, ref, optimum if optimum is not None
                                                            else _optimum_objective(trial), positions))
                row = _row(cfg, task, meta, sel, t_prep, eps)
                if ref_missing is not None:  # the row is kept; what it cannot be scored against is said
                    row["diagnostics"] = {**(row["diagnostics"] or {}), "reference_uncertified": ref_missing}
                if cfg.estimate is not None:  # one row per (method, eps): failed as a whole if this fails
                    row.update(estimation_fields(
                        cfg.estimate, cfg.estimate_fraction, cfg.estimate_params, trial_for("clip"), sel.draws, row,
                        eps, test, optimum if optimum is not None else _optimum_objective(trial),
                        rng_for(cfg.seed, "estimate", skey, task.trial, method, float(eps))))
                rows.append(row)
                if stored is not None:  # prepare_seconds is then the loading time of this run
                    rows[-1]["diagnostics"] = {**(rows[-1]["diagnostics"] or {}), "prepared_from_store": True}
            except PLUGIN_FAILURES as exc:
                rows.append(_failed(cfg, task, meta, eps, exc))
            t_prep = 0.0  # preparation is charged once, to the first epsilon
    return rows


def _optimum_objective(trial) -> float | None:
    """The certified best-subset objective if some preparation of this trial computed it."""
    opt = trial.cache.get(("optimum", trial.solver))
    if opt is not None and getattr(opt, "certified", False) and opt.support is not None:
        return float(opt.objective)
    return None


def _evaluate(trial, S, ref, optimum, positions=None) -> dict:
    """The metrics of the checked supports ``S`` against ``ref`` and their objective gap.

    ``positions``: place of every feature in the reference's full ranking, for TOP / GREAT / GOOD
    (None: a reference without a ranking, the three are None)."""
    gap = None if optimum is None else float(np.mean(trial.score(S)) - optimum)
    if ref is None:  # an uncertified bss reference: nothing to score against (its optimum is uncertified too)
        return {"recovery": None, "f1": None, "topk": None, "hamming": None, "objective_gap": gap,
                **{f"rank_{k}": None for k in RANK_METRICS}}
    m = support_metrics(S, ref)
    ranked = {f"rank_{k}": None for k in RANK_METRICS} if positions is None else \
        {f"rank_{k}": float(v.mean()) for k, v in rank_metrics(S, positions).items()}
    return {"recovery": float(m["exact"].mean()), "f1": float(m["f1"].mean()), "topk": float(m["topk"].mean()),
            "hamming": float(m["hamming"].mean()), "objective_gap": gap, **ranked}


def selection_epsilon(cfg: RunConfig, epsilon: float) -> float:
    """The selection's share of a row's epsilon: all of it, or (1 - f) epsilon with ``--estimate``."""
    return float(epsilon) if cfg.estimate is None else split_budget(epsilon, cfg.estimate_fraction)[0]


def _row(cfg, task, meta, sel, t_prep, eps) -> dict:
    lp = sel.log_prob
    return {
        **meta, "key": row_key(cfg, task.setting, task.trial, meta["label"], eps), "epsilon": float(eps),
        "status": sel.status, "error": None, "guarantee": sel.guarantee,
        "epsilon_spent": sel.draws.epsilon_spent, "n_draws": cfg.draws,
        "recovery_prob": None if lp is None else float(np.exp(lp)), **sel.evaluation,
        "prepare_seconds": t_prep, "draw_seconds": sel.draw_seconds,
        "supports": sel.supports.tolist(), "diagnostics": sel.draws.diagnostics, "created": time.time(),
    }


def _failed(cfg, task, meta, eps, exc) -> dict:
    err = f"{type(exc).__name__}: {exc}"
    tb = traceback.extract_tb(exc.__traceback__)
    if tb:
        err += f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})"
    return {
        **meta, "key": row_key(cfg, task.setting, task.trial, meta["label"], eps), "epsilon": float(eps),
        "status": "failed", "error": err, "guarantee": "none: failed", "n_draws": 0, "recovery": None, "recovery_prob": None,
        "f1": None, "topk": None, "hamming": None, "prepare_seconds": 0.0, "draw_seconds": 0.0,
        "supports": None, "diagnostics": {}, "created": time.time(),
    }
