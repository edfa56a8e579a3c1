"""The one runner: plans trials, runs every selector on the same trials, stores each row.

A *trial* is one data set (drawn from a generator, or a real data set) and one run of each
selector on it. Every random number comes from a stream named by (run seed, purpose, data
setting, trial, method, epsilon) — see :mod:`dpbench.core.seeding` — so results do not depend
on job order, on how many jobs run at once or on resuming.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from dataclasses import asdict, dataclass, field

import numpy as np

from dpbench.core.oracle.constraints import check_lam_for_outer_approximation
from dpbench.core.score.loss import DEFAULT_LOSS
from dpbench.bench.registry import PluginInstances
from dpbench.bench.trial import DEFAULT_LAM, PrivacySetup, Trial
from dpbench.core.errors import UserInputError
from dpbench.core.privacy.exponential import check_epsilon
from dpbench.bench.evaluation.metrics import RANK_METRICS, rank_metrics, support_metrics
from dpbench.bench.evaluation.reference import reference_positions
from dpbench.bench.evaluation.estimation import estimation_fields, split_budget, split_rows
from dpbench.bench.registry import registry
from dpbench.core.problem import Problem
from dpbench.core.seeding import rng_for
from dpbench.bench.backends import backend_results
from dpbench.bench.keys import (BUDGET_PARAMS, _canon, artefact_key, method_config, row_key, selector_name,  # noqa: F401
                       setting_label, variant_label)
from dpbench.bench.selection import SelectorRun, run_instances


@dataclass
class RunConfig:
    """Everything that determines a comparison.

    Parameters
    ----------
    methods : list of str
        Method labels: a registered selector name, or a *variant* of one with its
        non-default parameters (``topr(R=300)``, :func:`variant_label`); rows store the
        selector name as ``method`` and the label as ``label``.
    data : list of dict
        Data settings: ``{"generator": name, **params}`` or ``{"dataset": name, "s": s}``.
    epsilons : list of float
        Privacy parameters; every selector is run at each.
    trials, draws, seed : int
        Trials per setting, private outputs per trial, run seed.
    method_params : dict
        ``{method label: {param: value}}``.
    b_x, b_y, r, lam : float
        Clipping bounds, coefficient l2 bound, ridge penalty (design.md section 2).
    sensitivity : {"tight", "paper"}
        Bound on Delta (design.md section 3).
    solver : str
        Default best-subset oracle backend; ``solver_params`` its parameters.
    reference : str
        Reference support the outputs are scored against: ``"true"`` for simulations
        (the generator's support); ``"bss"``, ``"lasso"`` or ``"sis"`` on real data.
    delta : float
        Run-level DP delta in [0, 1): every approximate-DP selector is calibrated to it and
        every row records it. Must be > 0 when an approximate-DP selector runs.
    loss : str
        Registered loss of the score (``--loss``; default ``"least-squares"``).
    estimate : str, optional
        Registered estimator (``--estimate``) run on every drawn support after selection
        (:mod:`dpbench.bench.evaluation.estimation`): each epsilon is then the pair's budget, split by
        ``estimate_fraction`` f into (1 - f) epsilon for the selection and f epsilon for the
        estimate, and trials are split 70/30 into training and held-out rows. None: selection only.
    estimate_fraction : float
        f in (0, 1) (``--estimate-fraction``; default 0.5, the authors' ``frac_eps``).
    estimate_params : dict
        Parameters of the estimator.
    """

    methods: list
    data: list
    epsilons: list = field(default_factory=lambda: [1.0])
    trials: int = 10
    draws: int = 100
    seed: int = 0
    method_params: dict = field(default_factory=dict)
    b_x: float = 0.5
    b_y: float = 0.5
    r: float = 1.1
    lam: float = DEFAULT_LAM
    sensitivity: str = "tight"
    solver: str = "highs"
    solver_params: dict = field(default_factory=dict)
    reference: str = "true"
    delta: float = 0.0
    loss: str = DEFAULT_LOSS
    estimate: str | None = None
    estimate_fraction: float = 0.5
    estimate_params: dict = field(default_factory=dict)

    @property
    def privacy_setup(self) -> PrivacySetup:
        """This run's :class:`~dpbench.bench.trial.PrivacySetup` (b_x, b_y, r, Lambda, Delta bound, delta)."""
        return PrivacySetup(b_x=self.b_x, b_y=self.b_y, r=self.r, lam=self.lam,
                            sensitivity_bound=self.sensitivity, delta=self.delta)

    def validate(self) -> None:
        """Check names and values before any work starts; raises UserInputError."""
        reg = registry()
        if not self.methods:
            raise UserInputError("no methods given; e.g. --methods exhaustive (see `dpbench list`)")
        instances = run_instances(self)  # built (and their parameters checked) once for the run
        selectors = [instances.get("selector", selector_name(m), self.method_params.get(m, {})) for m in self.methods]
        for name in self.method_params:
            if name not in self.methods:
                raise UserInputError(f"--param {name}.…: {name!r} is not among --methods {','.join(self.methods)}")
        self.epsilons = [check_epsilon(e) for e in self.epsilons]
        if not self.epsilons:
            raise UserInputError("empty --epsilon list; give e.g. --epsilon 1")
        check_seed(self.seed)
        for label, v in (("trials", self.trials), ("draws", self.draws)):
            if int(v) != v or v < 1:
                raise UserInputError(f"--{label} = {v} must be a positive integer")
        for label, v in (("b-x", self.b_x), ("b-y", self.b_y), ("r", self.r)):
            if not (np.isfinite(v) and v > 0):
                raise UserInputError(f"--{label} = {v} must be positive and finite")
        if not (np.isfinite(self.lam) and self.lam >= 0):
            raise UserInputError(f"--lam = {self.lam} must be >= 0")
        if not (np.isfinite(self.delta) and 0 <= self.delta < 1):
            raise UserInputError(f"--delta = {self.delta} must lie in [0, 1), e.g. --delta 1e-6")
        approx = [m for m in self.methods if reg.selector(selector_name(m)).dp_type == "approximate"]
        if approx and not self.delta > 0:
            raise UserInputError(f"{', '.join(approx)} {'is' if len(approx) == 1 else 'are'} approximate-DP: "
                                 "give the run's delta, e.g. --delta 1e-6")
        reg.loss(self.loss)
        for m in self.methods:  # a selector tied to one loss is refused up front for the others
            allowed = getattr(reg.selector(selector_name(m)), "losses", ("*",))
            if "*" not in allowed and self.loss not in allowed:
                raise UserInputError(f"method {m!r} only works with --loss {' or '.join(allowed)} "
                                     f"(got --loss {self.loss}); drop it from --methods or change --loss")
        if self.estimate is not None:
            est = reg.estimator(self.estimate)(**self.estimate_params)
            if "*" not in est.losses and self.loss not in est.losses:
                raise UserInputError(f"--estimate {self.estimate} works with --loss {' or '.join(est.losses)} only "
                                     f"(got --loss {self.loss}); drop --estimate or change --loss")
            if not (np.isfinite(self.estimate_fraction) and 0 < self.estimate_fraction < 1):
                raise UserInputError(f"--estimate-fraction = {self.estimate_fraction} must lie strictly between 0 "
                                     "and 1, e.g. 0.5")
        elif self.estimate_params:
            raise UserInputError("estimator parameters given without --estimate; add e.g. --estimate objpert")
        if uses_oracle(self):
            solver = instances.get("solver", self.solver, self.solver_params)  # its parameters checked up front
            if self.lam == 0 and self.loss == DEFAULT_LOSS and not solver.handles_lam_zero:
                check_lam_for_outer_approximation(self.lam, self.solver)
        for setting in self.data:
            shape = check_setting(setting, instances)
            if shape is None:  # real data, or a generator whose shape comes from its design (planted): trial 0 tells
                problem = make_problem(self, setting, 0)
                shape = (problem.n, problem.p, problem.s)
            if shape is not None:
                for sel in selectors:
                    sel.check_setting(shape[1], shape[2])


def check_seed(seed) -> int:
    """The run seed, an integer in [0, 2**63): numpy's SeedSequence refuses negative seeds
    (``--seed -1`` ended in a traceback) and rows store it as an SQLite INTEGER (a larger seed
    failed only when the first trial was written).

    Raises
    ------
    UserInputError
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63:
        raise UserInputError(f"--seed = {seed} must be an integer from 0 to 2^63 - 1, e.g. --seed 0")
    return int(seed)


#: Bytes per entry of X a trial holds at once: the generated data, its clipped copy and the
#: score's contiguous copy (float64).
_BYTES_PER_ENTRY = 3 * 8


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_memory(n: int, p: int) -> None:
    """Refuse, before allocating, a data setting whose n x p data cannot fit in memory.

    The estimate is 24 n p bytes (the data, its clipped copy and the score's copy, float64) plus
    the p x p Gram matrix the score caches when p <= GRAM_LIMIT.

    Raises
    ------
    UserInputError
        Naming the estimate and the memory available.
    """
    from dpbench.core.score import GRAM_LIMIT

    need = _BYTES_PER_ENTRY * n * p + (8 * p * p if p <= GRAM_LIMIT else 0)
    have = available_memory()
    if have is not None and need > have:
        raise UserInputError(f"n = {n:,} x p = {p:,} needs about {need / 2**30:.1f} GiB for the data of one trial "
                             f"but only {have / 2**30:.1f} GiB are available; lower --n or --p")


def check_setting(setting: dict, instances: PluginInstances | None = None) -> tuple[int, int, int] | None:
    """Validate one data setting (names, n >= 2, 1 <= s < p, memory) before any work.

    ``instances``: the run's plugin instances (:func:`run_instances`), so that the generator
    checked here is the one the trials use.

    Returns
    -------
    (n, p, s) or None
        The shape when the setting declares it (generators), None otherwise (real data).

    Raises
    ------
    UserInputError
    """
    reg = registry()
    if "generator" in setting:
        params = {k: v for k, v in setting.items() if k != "generator"}
        gen = (instances or PluginInstances()).get("generator", setting["generator"], params)
        c = gen.config
        if c.get("n") is not None and c["n"] < 2:
            raise UserInputError(f"n = {c['n']}: need at least 2 rows")
        if "s" in c and "p" in c and not 1 <= c["s"] < c["p"]:
            raise UserInputError(f"sparsity level s = {c['s']} must satisfy 1 <= s < p = {c['p']}")
        if c.get("n") is not None and c.get("p") is not None:
            check_memory(int(c["n"]), int(c["p"]))
            if "s" in c:
                return int(c["n"]), int(c["p"]), int(c["s"])
        return None
    elif "dataset" in setting:
        reg.dataset(setting["dataset"])
    elif "data" in setting:
        pass  # a user file: read (and checked) when the first trial loads it
    else:
        raise UserInputError(f"data setting {setting} names neither a generator nor a dataset")


def data_settings(generator: str | None, grid: dict) -> list[dict]:
    """Cartesian product of generator parameter lists, e.g. ``{"n": [100, 200], "p": [20]}``."""
    import itertools

    keys = [k for k, v in grid.items() if v is not None]
    combos = itertools.product(*[grid[k] if isinstance(grid[k], (list, tuple)) else [grid[k]] for k in keys])
    return [{"generator": generator, **dict(zip(keys, c))} for c in combos]


#: What a plugin may raise during a trial that becomes a failed row (a plugin calling
#: ``sys.exit`` must not end the run with status 0 and no table).
PLUGIN_FAILURES = (Exception, SystemExit)


@dataclass
class TrialTask:
    """Work for one (data setting, trial): the (method, epsilon) pairs still to run.

    ``prepared`` maps a method to its stored ε-independent preparation (see
    :meth:`dpbench.core.contracts.Selector.save_prepared`), filled by :func:`execute` from the store.
    """

    setting: dict
    trial: int
    jobs: list  # [(method, [epsilon, ...]), ...]
    prepared: dict = field(default_factory=dict)


class TrialRows(list):
    """The rows of one trial (a list) plus ``artefacts``: ``[(key, method, state), ...]`` to store."""

    artefacts: list


def plan(cfg: RunConfig, done: set[str] = frozenset()) -> list[TrialTask]:
    """All trial tasks with rows not yet in ``done`` (resume skips finished work)."""
    tasks = []
    for setting in cfg.data:
        for t in range(cfg.trials):
            jobs = []
            for m in cfg.methods:
                eps = [e for e in cfg.epsilons if row_key(cfg, setting, t, m, e) not in done]
                if eps:
                    jobs.append((m, eps))
            if jobs:
                tasks.append(TrialTask(setting, t, jobs))
    return tasks


def make_problem(cfg: RunConfig, setting: dict, trial: int) -> Problem:
    """The (unclipped) data of one trial, drawn from its own seeded stream."""
    rng = rng_for(cfg.seed, "data", _canon(setting), trial)
    if "generator" in setting:
        params = {k: v for k, v in setting.items() if k != "generator"}
        return run_instances(cfg).get("generator", setting["generator"], params).generate(rng)
    from dpbench.bench.datasets import problem_from_dataset  # real data: the same in every trial

    return problem_from_dataset(setting)


def reference_support(cfg: RunConfig, problem: Problem, trial: Trial) -> np.ndarray:
    """The support outputs are scored against (design.md section 7 and 4.7)."""
    if cfg.reference == "true":
        if problem.true_support is None:
            raise UserInputError(f"{problem.name} has no true support; choose --reference bss, lasso or sis")
        return problem.true_support
    from dpbench.bench.evaluation.reference import compute_reference

    return compute_reference(cfg.reference, trial)


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
    ref = reference_support(cfg, problem, trial)
    # TOP / GREAT / GOOD are scored at row time against the reference's full ranking (not stored)
    positions = reference_positions(cfg.reference, trial)
    base = {
        "data": setting_label(task.setting), "setting": task.setting, "n": problem.n, "p": problem.p,
        "s": problem.s, "trial": task.trial, "seed": cfg.seed, "reference": cfg.reference,
        "reference_support": ref.tolist(), "sensitivity": trial.sensitivity, "delta": cfg.delta,
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
                               reference=ref if ref.size == trial.s else None,
                               # the gap is on the clipped data the optimum was solved on, whatever
                               # data the selector saw (sampagg's are unclipped)
                               evaluate=lambda S: _evaluate(trial_for("clip"), S, ref, optimum if optimum is not None
                                                            else _optimum_objective(trial), positions))
                row = _row(cfg, task, meta, sel, t_prep, eps)
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


def uses_oracle(cfg: RunConfig) -> bool:
    """True when some method of the run (or its reference support) calls the best-subset oracle."""
    reg = registry()
    return cfg.reference == "bss" or any(getattr(reg.selector(selector_name(m)), "uses_oracle", False)
                                         for m in cfg.methods)


def check_solver_used(cfgs, solver) -> None:
    """Refuse a ``--solver`` the user gave for runs in which nothing calls the best-subset oracle: every
    row recorded it (``solver=cplex``) as if it had been used.

    Raises
    ------
    UserInputError
    """
    if not any(uses_oracle(c) or c.estimate is not None for c in cfgs):
        solver = solver if isinstance(solver, str) else ",".join(solver)
        raise UserInputError(f"--solver {solver}: none of the methods ({', '.join(cfgs[0].methods)}) nor the "
                             f"reference ({cfgs[0].reference}) uses the best-subset oracle; drop --solver")


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
    m = support_metrics(S, ref)
    gap = None if optimum is None else float(np.mean(trial.score(S)) - optimum)
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


def execute(cfg: RunConfig, store, tasks, on_task_done=None, jobs: int = 1, backend: str = "serial",
            scheduler: str | None = None, on_event=None) -> int:
    """Run ``tasks`` and write each trial's rows to ``store`` as soon as it finishes.

    Only this (coordinating) process writes to the database. Returns the number of rows
    written. ``jobs > 1`` runs trials in parallel with joblib (loky); ``backend="dask"``
    sends them to a dask.distributed cluster (``scheduler`` address, or a LocalCluster of
    ``jobs`` workers). ``on_event`` is forwarded to :func:`run_trial` in serial runs.
    """
    written = 0

    def with_prepared(t):
        # stored preparations travel with the task, so workers never read the database
        for method, _ in t.jobs if hasattr(store, "artefact") else ():
            if method not in t.prepared:
                state = store.artefact(artefact_key(cfg, t.setting, t.trial, method))
                if state is not None:
                    t.prepared[method] = {"optimum": state.pop("__optimum__", None), "state": state}
        return t

    serial = backend != "dask" and jobs <= 1
    if not serial:  # the database connection stays in this thread: load before dispatching
        tasks = [with_prepared(t) for t in tasks]
    from dpbench.bench.signals import held

    results = backend_results(run_trial, cfg, tasks, jobs, backend, scheduler, on_event,
                              with_prepared if serial else None)
    # closing(): on an interrupt the generator is closed here, not when the traceback is freed, so
    # joblib terminates its workers and the dask LocalCluster is closed before the command returns
    with contextlib.closing(results):
        for rows in results:
            with held():  # a signal during the commit is raised after it: the finished trial is kept
                if hasattr(store, "write_artefacts"):
                    store.write_artefacts(getattr(rows, "artefacts", []))
                store.write(rows)
            written += len(rows)
            if on_task_done:
                on_task_done(rows)
    return written


def config_dict(cfg: RunConfig) -> dict:
    """The configuration as a plain dict (for JSON summaries and reports)."""
    return asdict(cfg)
