"""The configuration of a comparison, built in one place: options, TOML, grids, defaults, validation.

The command line only parses and calls this package:

* :mod:`dpbench.bench.config.options` -- every option of ``dpbench compare`` with its type,
  default and help (:data:`OPTIONS`), reading TOML files (:func:`load_config`) and expanding
  grids (:func:`grid_points`);
* this module -- :class:`RunConfig`, everything that determines a comparison, and
  :func:`build_run_configs`, which turns merged options (:func:`merge_options`) into one
  validated :class:`RunConfig` per grid point (:meth:`RunConfig.validate`: every name, value
  and data setting checked before the first trial).

The privacy defaults (b_x, b_y, r, Λ, the sensitivity bound, δ) are those of
:class:`dpbench.bench.trial.PrivacySetup`; the solver default is :data:`DEFAULT_SOLVER`.
"""

from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass, field

import numpy as np

from dpbench.bench.datasets import problem_from_dataset
from dpbench.bench.keys import _canon, selector_name, variant_label
from dpbench.bench.config.options import (COMPARE_DEFAULTS, GRID_OPTIONS, OPTION_BY_NAME, OPTIONS,
                                          grid_points, load_config, param_values, resolve_sparsity)
from dpbench.bench.registry import PluginInstances, oracle_backend, registry
from dpbench.bench.selection import run_instances
from dpbench.bench.trial import DEFAULT_LAM, DEFAULT_SOLVER, PrivacySetup
from dpbench.core.errors import UserInputError
from dpbench.core.oracle.constraints import check_lam_for_outer_approximation
from dpbench.core.privacy.exponential import check_epsilon
from dpbench.core.problem import Problem
from dpbench.core.score.loss import DEFAULT_LOSS
from dpbench.core.seeding import rng_for

__all__ = [
    "BUILTIN_DEFAULT", "COMPARE_DEFAULTS", "GRID_OPTIONS", "OPTIONS", "OPTION_BY_NAME", "RunConfig", "available_memory",
    "build_run_config", "build_run_configs", "check_memory", "check_seed", "check_setting", "check_solver_used",
    "data_settings", "grid_points", "load_config", "make_problem", "merge_options", "name_the_file", "param_values",
    "resolve_sparsity", "uses_oracle",
]

#: The built-in default of ``dpbench compare --methods ...`` alone: the paper's toeplitz design scaled down.
BUILTIN_DEFAULT = {"n": [200, 400, 800], "p": [20], "s": [3]}


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
        Clipping bounds, coefficient l2 bound, ridge penalty (docs/vocabulary.md).
    sensitivity_bound : {"tight", "paper"}
        Which bound on the sensitivity Δ (``--sensitivity``; docs/methods/score.md).
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
    sensitivity_bound: str = PrivacySetup.sensitivity_bound
    solver: str = DEFAULT_SOLVER
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
                            sensitivity_bound=self.sensitivity_bound, delta=self.delta)

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
    keys = [k for k, v in grid.items() if v is not None]
    combos = itertools.product(*[grid[k] if isinstance(grid[k], (list, tuple)) else [grid[k]] for k in keys])
    return [{"generator": generator, **dict(zip(keys, c))} for c in combos]


def make_problem(cfg: RunConfig, setting: dict, trial: int) -> Problem:
    """The (unclipped) data of one trial, drawn from its own seeded stream."""
    rng = rng_for(cfg.seed, "data", _canon(setting), trial)
    if "generator" in setting:
        params = {k: v for k, v in setting.items() if k != "generator"}
        return run_instances(cfg).get("generator", setting["generator"], params).generate(rng)
    return problem_from_dataset(setting)  # real data: the same in every trial


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


def merge_options(args) -> dict:
    """The compare options of one command: defaults, then ``--config FILE.toml``, then the command line.

    Parameters
    ----------
    args : argparse.Namespace or object
        The parsed command line: an attribute per option of :data:`OPTIONS` (None: not given)
        and ``config`` (a TOML path or None).

    Returns
    -------
    dict
        Every option of :data:`COMPARE_DEFAULTS`, plus ``config_param``, ``config_keys`` and
        ``config_file`` when a file was read (to name it in error messages).
    """
    opts = dict(COMPARE_DEFAULTS)
    if getattr(args, "config", None):
        from_file = load_config(args.config)
        # per-plugin parameters merge (the command line's come last and win); the file's
        # parameters for plugins this run does not use are ignored, not errors
        opts["config_param"] = from_file.pop("param", [])
        opts.update(from_file)
        opts["config_keys"] = {k: args.config for k in from_file}
        opts["config_file"] = args.config
    for k in COMPARE_DEFAULTS:
        v = getattr(args, k, None)
        if v is not None:
            opts[k] = v
            opts.get("config_keys", {}).pop(k, None)
    return opts


def name_the_file(exc: UserInputError, opts: dict) -> UserInputError:
    """``exc`` with the config file named when the value it refuses came from one: the checks
    after parsing (:meth:`RunConfig.validate`) speak of ``--delta``, which a TOML user never typed."""
    msg = str(exc)
    for k, path in (opts.get("config_keys") or {}).items():
        if msg.startswith((f"{OPTION_BY_NAME[k].flag} = ", f"{k} = ")):
            return UserInputError(f"{msg} (set in config {path}: {k})")
    return exc


def build_run_configs(opts: dict) -> list:
    """All the run configurations of merged compare options: one per point of the grid.

    Run-level lists (``b_x = [0.5, 0.75]``, solver-parameter lists) are expanded by
    :func:`dpbench.bench.config.grid_points`; each point is built and validated by
    :func:`build_run_config`. The configurations run one after another into one database.
    """
    solvers = opts.get("solver") or [DEFAULT_SOLVER]
    solvers = solvers if isinstance(solvers, (list, tuple)) else [solvers]
    loss = opts.get("loss") or "least-squares"
    backends = [oracle_backend(s, loss) for s in solvers]
    if len(set(backends)) < len(backends):
        # their rows would be the same trials twice, counted twice in one table row
        raise UserInputError(f"--solver {','.join(solvers)}: with --loss {loss} every one of these runs the "
                             f"{backends[0]} oracle; give one --solver")
    return [build_run_config(point) for point in grid_points(opts)]


def build_run_config(opts: dict):
    """Turn merged compare options into a :class:`RunConfig` (validated).

    ``opts`` is one grid point (scalar run-level options; a one-element list is accepted).
    Comma-separated values of a method's parameter (``topr.R=2,300``) make one method
    *variant* per value (products over several parameters), labelled with the non-default
    values (``topr(R=300)``); those of the generator's parameters make data settings.

    Raises
    ------
    UserInputError
        A grid option with several values (use :func:`build_run_configs`), an unknown name,
        a malformed or repeated parameter, or any value :meth:`RunConfig.validate` refuses.
    """
    opts = dict(opts)
    for k in GRID_OPTIONS:
        if isinstance(opts.get(k), (list, tuple)):
            if len(opts[k]) != 1:
                raise UserInputError(f"{OPTION_BY_NAME[k].flag} has {len(opts[k])} values: expand the grid "
                                     "with build_run_configs")
            opts[k] = opts[k][0]
    reg = registry()
    if not opts.get("methods"):
        raise UserInputError("no methods given; use e.g. --methods exhaustive (known: "
                             f"{', '.join(reg.names('selector'))})")
    methods = opts["methods"]
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    for m in methods:
        reg.selector(m)
    method_params: dict = {}
    gen_params: dict = {}
    solver_params: dict = {}
    estimate_params: dict = {}
    gen_name = opts.get("generator") or "toeplitz"
    items = [(i, True) for i in opts.get("config_param") or []] + [(i, False) for i in opts.get("param") or []]
    for item, from_file in items:
        # a parameter from the file's [params] table or param list is named as the file has it
        where = f"config {opts.get('config_file')}: parameter {item!r}" if from_file else f"--param {item!r}"
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise UserInputError(f"{where} must look like NAME.KEY=VALUE, e.g. exhaustive.limit=1000000")
        lhs, value = item.split("=", 1)
        name, key = lhs.split(".", 1)
        if name in methods:
            method_params.setdefault(name, {})[key] = param_values(value)
        elif name == gen_name and not opts.get("dataset"):
            gen_params[key] = param_values(value)
        elif name == (opts.get("solver") or DEFAULT_SOLVER):
            solver_params[key] = value
        elif opts.get("estimate") and name == opts["estimate"]:
            estimate_params[key] = value
        elif from_file and any(name in reg.names(kind) for kind in ("selector", "generator", "solver", "estimator")):
            continue
        else:
            solver = opts.get("solver") or DEFAULT_SOLVER
            close = difflib.get_close_matches(name, [*methods, gen_name, solver, opts.get("estimate") or ""], n=1)
            raise UserInputError(f"{where}: {name!r} is neither one of the methods ({', '.join(methods)}), the "
                                 f"generator ({gen_name}) nor the solver ({solver})"
                                 + (f"; did you mean {close[0]}.{key}?" if close else ""))
    if solver_params:
        solver = opts.get("solver") or DEFAULT_SOLVER
        backend = oracle_backend(solver, opts.get("loss") or "least-squares")
        if backend != solver:  # Trial.oracle would drop them without a word
            first = next(iter(solver_params))
            raise UserInputError(f"--param {solver}.{first}=…: with --loss {opts.get('loss')} the oracle is {backend}, not "
                                 f"{solver}; use --solver {backend} --param {backend}.KEY=VALUE")
    labels, variant_params = [], {}
    twice = sorted({m for m in methods if methods.count(m) > 1})
    if twice:  # else reported below as "--param values ... give the same method twice", with no --param given
        raise UserInputError(f"--methods names {', '.join(twice)} more than once; give each method once "
                             "(variants: --param NAME.KEY=V1,V2)")
    for m in methods:
        given = method_params.get(m, {})
        keys = list(given)
        for combo in itertools.product(*[given[k] for k in keys]):
            params = dict(zip(keys, combo))
            label = variant_label(m, params)
            if label in variant_params:
                raise UserInputError(f"--param values of {m} give the same method twice ({label}); "
                                     "give each value once")
            labels.append(label)
            variant_params[label] = params
    if opts.get("dataset") or opts.get("data"):
        if opts.get("dataset") and opts.get("data"):
            raise UserInputError("give either --dataset or --data, not both")
        s_list = opts["s"] or [5]
        if opts.get("dataset"):
            # several data sets (a TOML array or "alon,khan") form one setting each, crossed with s
            names = opts["dataset"] if isinstance(opts["dataset"], list) else str(opts["dataset"]).split(",")
            sources = [{"dataset": d.strip()} for d in names if d.strip()]
        else:
            sources = [{"data": str(opts["data"]), "target": opts.get("target")}]
        data = []
        for source in sources:
            # a rule (s = "log") becomes each data set's own integer before the run, so its
            # settings, keys and seeds are those of the same numeric s
            p = _features(source, opts["standardize"]) if any(isinstance(s, str) for s in s_list) else None
            for s in s_list:
                setting = {**source, "s": resolve_sparsity(s, p), "standardize": opts["standardize"]}
                if setting not in data:
                    data.append(setting)
        reference = opts.get("reference") or "bss"
        if reference == "true":
            raise UserInputError("real data have no true support; use --reference bss, lasso or sis")
    else:
        gen = reg.generator(gen_name)
        grid = {}
        if gen_name == "toeplitz":  # the built-in default: the paper's design scaled down
            opts = {**opts, **{k: v for k, v in BUILTIN_DEFAULT.items() if opts.get(k) is None}}
        for k in ("n", "p", "s", "snr", "rho"):
            if opts.get(k) is not None and k in gen.params:
                grid[k] = opts[k] if isinstance(opts[k], list) else [opts[k]]
            elif opts.get(k) is not None:
                raise UserInputError(f"generator {gen_name!r} has no parameter {k!r}; its parameters are "
                                     f"{', '.join(gen.params)}")
        if opts.get("design"):
            if "design" not in gen.params:
                raise UserInputError(f"--design applies to the planted generator; use --generator planted")
            gen_params["design"] = [opts["design"]]
        for k, v in gen_params.items():
            grid[k] = v
        data = []
        for setting in data_settings(gen_name, grid):
            if isinstance(setting.get("s"), str):
                if setting.get("p") is None:
                    raise UserInputError(f"--s {setting['s']} needs the number of features p; give --p")
                setting = {**setting, "s": resolve_sparsity(setting["s"], setting["p"])}
            if setting not in data:
                data.append(setting)
        reference = opts.get("reference") or "true"
    cfg = RunConfig(
        methods=labels, data=data, epsilons=list(opts["epsilon"]), trials=opts["trials"],
        draws=opts["draws"], seed=opts["seed"], method_params=variant_params, b_x=opts["b_x"],
        b_y=opts["b_y"], r=opts["r"], lam=opts["lam"], sensitivity_bound=opts["sensitivity"],
        solver=opts["solver"], solver_params=solver_params, reference=reference, delta=float(opts["delta"]),
        loss=opts.get("loss") or "least-squares",
        estimate=opts.get("estimate") or None, estimate_fraction=float(opts.get("estimate_fraction", 0.5)),
        estimate_params=estimate_params,
    )
    cfg.validate()
    return cfg


def _features(source: dict, standardize: str) -> int:
    """Number of features p of a real-data source (a data set or a --data file) as the run sees it."""
    return problem_from_dataset({**source, "s": 1, "standardize": standardize}).p
