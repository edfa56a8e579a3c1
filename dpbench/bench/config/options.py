"""The options of ``dpbench compare``, declared once for the command line and TOML files.

Every option is an :class:`Option`: its type converter, default, choices and help. The
command line (:mod:`dpbench.cli.main`) builds its argparse options from :data:`OPTIONS`,
and ``--config FILE.toml`` goes through the same converters (:func:`load_config`), so a
value that the command line refuses (``trials = "abc"``, ``s = 2.5``, ``backend = "spark"``)
is refused in a file too, with one line that names the key and the fix.

TOML keys are the long option names with dashes or underscores (``b-x`` or ``b_x``); lists
may be TOML arrays or comma-separated strings; ``[params]`` is a table of per-plugin
parameters (``exhaustive = { limit = 1e7 }``) or ``param = ["NAME.KEY=VALUE", ...]``.
Command-line options override the file.

Grids (as benchopt's parameter grids): every run-level option marked ``grid`` (``b_x``,
``b_y``, ``r``, ``lam``, ``sensitivity``, ``solver``, ...) and every plugin parameter accepts
a list (``--b-x 0.5,0.75``, ``--param topr.R=2,300,1000``, ``b_x = [0.5, 0.75]``,
``topr = { R = [2, 300] }``). The product of the run-level lists (and of the solver's
parameter lists) is expanded here, by :func:`grid_points`, into one option set per point, run
one after another into the same database; lists of a method's parameters become method
*variants* and lists of a generator's parameters data settings
(:func:`dpbench.cli.main.build_run_config`). Random streams are named by the data setting,
the trial and the method, never by a run option, so adding a value to a list never changes
the rows of the values already there.
"""

from __future__ import annotations

import itertools
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from dpbench.core.errors import UserInputError
from dpbench.core.params import to_integer
from dpbench.core.datafiles import STANDARDIZE_MODES
from dpbench.bench.trial import DEFAULT_SOLVER, PrivacySetup

_SETUP = PrivacySetup()  # the one source of the privacy defaults


class OptionTypeError(ValueError):
    """A value that does not convert to its option's type (the message says what is expected)."""


def to_int(value) -> int:
    """An integer from an int, an integral float or a numeric string; refuses 2.5, "abc", True
    (:func:`dpbench.core.params.to_integer`)."""
    try:
        return to_integer(value)
    except ValueError as exc:
        raise OptionTypeError(str(exc)) from None


def to_float(value) -> float:
    """A float from a number or a numeric string; refuses "half" and true/false."""
    if isinstance(value, bool):
        raise OptionTypeError("must be a number, not true/false")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise OptionTypeError("must be a number")


def to_str(value) -> str:
    """A string (TOML strings, command-line text); refuses numbers, lists and tables."""
    if isinstance(value, str):
        return value
    raise OptionTypeError("must be a string")


#: Sparsity rules resolved per data set from its number of features p before the run
#: (:func:`resolve_sparsity`): ``log`` is k = floor(ln p), swope2024 section 5 ("k in {5, floor(log(d))}",
#: d the number of features; natural log: their Figure 8 text reads k = 10 on Chin, p = 22215).
SPARSITY_RULES = ("log",)


def to_sparsity(value) -> int | str:
    """A sparsity level: an integer (:func:`to_int`) or a rule of :data:`SPARSITY_RULES` (``"log"``)."""
    if isinstance(value, str) and value.strip().lower() in SPARSITY_RULES:
        return value.strip().lower()
    try:
        return to_int(value)
    except OptionTypeError:
        raise OptionTypeError(f"must be an integer or {' or '.join(SPARSITY_RULES)} "
                              "(log: floor(ln p) per data set)") from None


def resolve_sparsity(s, p: int) -> int:
    """The integer sparsity level of ``s`` (an integer or a rule) for a data set with ``p`` features.

    Parameters
    ----------
    s : int or {"log"}
        ``"log"``: ``floor(ln p)`` (swope2024 section 5, Figure 7: k = floor(log d), d = p).
    p : int
        Number of features of the data set (after its preprocessing).

    Returns
    -------
    int
        ``s`` itself when it is an integer (so settings, keys and seeds of numeric s do not change).

    Raises
    ------
    UserInputError
        A rule that gives s < 1 (p < 3).
    """
    if not isinstance(s, str):
        return int(s)
    # floor() of the rounded log is exact here: for p < e^28 (5e11) the integers nearest each
    # e^k lie at least 3.7e-13 (relative) from it, far above the log's rounding error
    k = int(math.floor(math.log(p)))
    if k < 1:
        raise UserInputError(f"s = {s}: floor(ln p) = {k} for p = {p} features; give a numeric s")
    return k


@dataclass(frozen=True)
class Option:
    """One option of ``dpbench compare``.

    Parameters
    ----------
    name : str
        Python name (``b_x``); the command-line flag is ``--b-x``.
    convert : callable
        Converts one value (command-line text or a TOML value); raises :class:`OptionTypeError`.
    default : object
        Value when neither the command line nor the file sets it (None: decided later).
    help : str
    choices : tuple, optional
    many : bool
        A list: comma-separated on the command line, a TOML array or string in a file.
    flags : tuple of str, optional
        Extra command-line spellings (``--eps``, ``-m``).
    grid : bool
        A run-level option that accepts a list; each value is one point of the run's grid
        (:func:`grid_points`). Parsed values are then always lists.
    """

    name: str
    convert: Callable[[Any], Any]
    default: Any
    help: str
    choices: tuple | None = None
    many: bool = False
    flags: tuple = ()
    grid: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, value, where: str):
        """Convert ``value`` (one value or, for list options, a list or comma-separated text).

        Parameters
        ----------
        value : str, number, bool or list
            Command-line text, or a TOML value.
        where : str
            ``config x.toml: trials`` for a value from a file: messages then show the value in
            TOML syntax (``s = 2.5``, ``n = [100, "abc"]``). A command-line flag (``--trials``)
            or ``""`` (argparse names the flag itself) for command-line text, shown as given.

        Raises
        ------
        UserInputError
            One line naming ``where``, the value and what is expected.
        """
        toml = bool(where) and not where.startswith("-")
        shown = _toml_text(value) if toml else repr(value)
        head = f"{where} = {shown}" if toml else (f"{where} {shown}" if where else shown)
        try:
            if self.many or self.grid:
                if isinstance(value, (list, tuple)):
                    items = list(value)
                elif isinstance(value, str):
                    items = [t for t in value.replace(" ", ",").split(",") if t != ""]
                else:  # one TOML number (or a mistyped true/false), not text to split
                    items = [value]
                if not items:
                    example = _LIST_EXAMPLES.get(self.name, ["1", "2"])
                    raise OptionTypeError("must be a non-empty list, e.g. " + (
                        _toml_text([_toml_number(v) for v in example]) if toml else ",".join(example)))
                out = []
                for v in items:
                    try:
                        out.append(self.convert(v))
                    except OptionTypeError as exc:
                        if len(items) == 1 and not isinstance(value, (list, tuple)):
                            raise  # one value: the message of a plain option
                        item = _toml_text(v) if toml else repr(v)
                        raise OptionTypeError(f"has an item {item} that {exc}") from None
            else:
                if isinstance(value, (list, tuple, dict)):
                    raise OptionTypeError("takes one value, not a list or table")
                out = self.convert(value)
        except OptionTypeError as exc:
            raise UserInputError(f"{head} {exc}") from None
        if self.grid and len(set(map(repr, out))) < len(out):
            raise UserInputError(f"{head} repeats a value; give each value once")
        for v in out if (self.many or self.grid) else [out]:
            if self.choices is not None and v not in self.choices:
                item = _toml_text(v) if toml else repr(v)
                raise UserInputError(f"{head}: {item} must be one of {', '.join(map(str, self.choices))}"
                                     if item != shown else
                                     f"{head} must be one of {', '.join(map(str, self.choices))}")
        return out


#: Example values of list options for "must be a non-empty list" (numbers otherwise).
_LIST_EXAMPLES = {"methods": ["topr", "mistakes"], "dataset": ["khan", "alon"], "param": ["topr.R=100"],
                  "s": ["3", "5"]}


def _toml_number(text: str):
    try:
        return int(text)
    except ValueError:
        return text


def _toml_text(value) -> str:
    """``value`` written as in a TOML file (``true``, ``"abc"``, ``[1, "x"]``): messages about a
    config show what the user wrote, not Python's repr (``True``, ``'abc'``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_text(v)}" for k, v in value.items()) + " }"
    return str(value)


STANDARDIZE_CHOICES = STANDARDIZE_MODES

#: Every option of ``dpbench compare`` (the one source of its defaults).
OPTIONS: tuple[Option, ...] = (
    Option("methods", to_str, None, "comma-separated selector names (see `dpbench list`)", many=True,
           flags=("-m",)),
    Option("generator", to_str, "toeplitz", "data generator (default toeplitz)"),
    Option("dataset", to_str, None, "registered real data set(s) instead of a generator, comma-separated: one "
           "setting each (see `dpbench list`)", many=True),
    Option("data", to_str, None, "a user data file (.csv, .tsv, .parquet, .npz) instead of a generator"),
    Option("target", to_str, None, "response column of --data"),
    Option("standardize", to_str, "standardize", "preprocessing of real data before clipping (default "
           "standardize; uses the data, so it is NOT private)", choices=STANDARDIZE_CHOICES),
    Option("design", to_str, None, "design matrix for the planted generator (a data set name, e.g. nci60)"),
    Option("n", to_int, None, "list of sample sizes, e.g. 100,200,400", many=True),
    Option("p", to_int, None, "number of features (list allowed)", many=True),
    Option("s", to_sparsity, None, "sparsity level s (list allowed); for real data also log: floor(ln p) per "
           "data set (swope2024 Figure 7)", many=True),
    Option("snr", to_float, None, "signal-to-noise ratio (generator default 5)", many=True),
    Option("rho", to_float, None, "Toeplitz correlation rho (generator default 0.1)", many=True),
    Option("epsilon", to_float, [1.0], "privacy parameter(s) epsilon, e.g. 0.5,1,2 (default 1)", many=True,
           flags=("--eps",)),
    Option("trials", to_int, 10, "trials per setting (default 10)"),
    Option("draws", to_int, 100, "private outputs per trial (default 100; list: a grid); bounded by the run's "
           "memory estimate, shown before a run above 1 GiB", grid=True),
    Option("seed", to_int, 0, "run seed (default 0)"),
    Option("b_x", to_float, _SETUP.b_x, f"clipping bound on |x_ij| (default {_SETUP.b_x:g}; list, e.g. 0.5,1: "
           "a grid)", grid=True),
    Option("b_y", to_float, _SETUP.b_y, f"clipping bound on |y_i| (default {_SETUP.b_y:g}; list: a grid)", grid=True),
    Option("r", to_float, _SETUP.r, f"l2 bound on the coefficients (default {_SETUP.r:g}; list: a grid)", grid=True),
    Option("lam", to_float, _SETUP.lam, f"ridge penalty Lambda (default {_SETUP.lam:g}; the OA solvers need "
           "Lambda > 0; list: a grid)", grid=True),
    Option("sensitivity", to_str, _SETUP.sensitivity_bound, "Delta = (b_y + b_x r sqrt(s))^2 (tight, default) or "
           "2b_y^2 + 2b_x^2 r^2 s (paper); list: a grid", choices=("tight", "paper"), grid=True),
    Option("loss", to_str, "least-squares", "loss of the score R(S, D): least-squares (default) or hinge "
           "(labels +-1, e.g. --generator classification); see `dpbench list`"),
    Option("estimate", to_str, None, "private estimation after selection on each selected support (e.g. objpert; "
           "see `dpbench list`): each epsilon splits into (1 - f) epsilon for the selection and f epsilon for "
           "the estimate, trials split 70/30 into training and held-out rows; adds utility loss and test MSE"),
    Option("estimate_fraction", to_float, 0.5, "share f of each epsilon given to --estimate (default 0.5: "
           "epsilon_estimate = f epsilon, epsilon_select = (1 - f) epsilon)"),
    Option("solver", to_str, DEFAULT_SOLVER, f"best-subset oracle backend (default {DEFAULT_SOLVER}; list: a grid)", grid=True),
    Option("delta", to_float, _SETUP.delta, "the run's DP delta (default 0); required > 0 when an approximate-DP method "
           "(e.g. mistakes-ptr, mcmc) runs, which is calibrated to it; stored in every row; list: a grid",
           grid=True),
    Option("reference", to_str, None, "support to score against: true (simulations, default) or "
           "bss/lasso/sis (real data)", choices=("true", "bss", "lasso", "sis"), grid=True),
    Option("param", to_str, [], "per-plugin parameter NAME.KEY=VALUE, repeatable (e.g. "
           "exhaustive.limit=1e7, toeplitz.rho=0.2); VALUE may be a comma-separated list "
           "(topr.R=2,300,1000): one method variant, data setting or grid point per value", many=True),
    Option("out", to_str, "dpbench-results.db", "results database (SQLite; default dpbench-results.db). "
           "Re-running resumes."),
    Option("json", to_str, None, "also write the summary table as JSON to this path"),
    Option("jobs", to_int, 1, "trials in parallel on this many processes (joblib), at most the usable cores "
           "unless --force-jobs; -1: all usable cores"),
    Option("backend", to_str, "serial", "execution backend", choices=("serial", "dask")),
    Option("scheduler", to_str, None, "dask.distributed scheduler address (default: a LocalCluster)"),
)

OPTION_BY_NAME = {o.name: o for o in OPTIONS}

#: Defaults of every option, derived from :data:`OPTIONS`.
COMPARE_DEFAULTS = {o.name: o.default for o in OPTIONS}


def load_config(path, known: dict | None = None) -> dict:
    """Read a TOML config and return the options it sets, converted and checked like the command line's.

    Parameters
    ----------
    path : str or Path
    known : dict, optional
        Option names allowed (default: every option of :data:`OPTIONS`).

    Returns
    -------
    dict
        Option name -> converted value; per-plugin parameters under ``"param"`` as
        ``NAME.KEY=VALUE`` strings.

    Raises
    ------
    UserInputError
        A missing or unreadable file, a directory, TOML syntax, an unknown key (the message lists
        the known ones) or a value of the wrong type or outside its choices.
    """
    path = Path(path)
    if path.is_dir():
        raise UserInputError(f"config file {path} is a directory; give the path of a .toml file")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is not TOML syntax
    except FileNotFoundError:
        raise UserInputError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserInputError(f"config file {path} cannot be read ({exc})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserInputError(f"config file {path} is not valid TOML: {exc}") from None
    raw = {k.replace("-", "_"): v for k, v in raw.items()}
    if "eps" in raw:
        raw["epsilon"] = raw.pop("eps")
    given = raw.pop("param", None) or []
    # one NAME.KEY=VALUE string is one parameter: its commas separate the values of a list
    params = OPTION_BY_NAME["param"].parse([given] if isinstance(given, str) else given,
                                           f"config {path}: param") if given else []
    tables = raw.pop("params", {}) or {}
    if not isinstance(tables, dict):
        raise UserInputError(f"config {path}: params must be a table [params] of PLUGIN = {{ KEY = VALUE }}")
    for plugin, table in tables.items():
        if not isinstance(table, dict):
            raise UserInputError(f"config {path}: [params] {plugin} must be a table of KEY = VALUE")
        params += [f"{plugin}.{k}={_param_text(v)}" for k, v in table.items()]
    known = set(known if known is not None else OPTION_BY_NAME)
    unknown = sorted(set(raw) - known - {"description"})
    if unknown:
        raise UserInputError(f"config {path}: unknown option(s) {', '.join(unknown)}; known: "
                             f"{', '.join(sorted(known))}, params")
    raw.pop("description", None)
    out = {}
    for k, v in raw.items():
        opt = OPTION_BY_NAME[k]
        value = opt.parse(v, f"config {path}: {k}")
        out[k] = value
    if params:
        out["param"] = params
    return out


def _param_text(value) -> str:
    """A TOML parameter value as ``--param`` text (an array becomes a comma-separated list)."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def param_values(text: str) -> list[str]:
    """The values of one ``NAME.KEY=VALUE`` parameter: its comma-separated items, in order.

    Raises
    ------
    UserInputError
        An empty item (``R=2,,3``) or a repeated value (``R=2,2``).
    """
    items = [t.strip() for t in text.split(",")]
    if any(t == "" for t in items):
        raise UserInputError(f"parameter value {text!r} has an empty item; give e.g. 2,300,1000")
    if len(set(items)) < len(items):
        raise UserInputError(f"parameter value {text!r} repeats a value; give each value once")
    return items


GRID_OPTIONS = tuple(o.name for o in OPTIONS if o.grid)


def grid_points(opts: dict) -> list[dict]:
    """Expand the run-level lists of merged compare options into one option set per grid point.

    The product is taken over every :data:`GRID_OPTIONS` list (``b_x = [0.5, 0.75]``,
    ``lam = [120, 200]``) and over the list-valued parameters of each point's solver
    (``highs.time_limit=10,60``), in the order the values are given, the last option varying
    fastest. Method and generator parameter lists are not expanded here: they become method
    variants and data settings of each point (:func:`dpbench.cli.main.build_run_config`).

    Parameters
    ----------
    opts : dict
        Merged options (:data:`COMPARE_DEFAULTS` updated by the file and the command line);
        grid options may hold one value or a list; ``param`` and ``config_param`` hold
        ``NAME.KEY=VALUE`` strings.

    Returns
    -------
    list of dict
        Copies of ``opts`` with one scalar value per grid option and, for the solver's
        parameters, one value per ``NAME.KEY=VALUE`` item.

    Raises
    ------
    UserInputError
        An empty list or a repeated value.
    """
    lists = []
    for name in GRID_OPTIONS:
        v = opts.get(name)
        values = list(v) if isinstance(v, (list, tuple)) else [v]
        if not values:
            raise UserInputError(f"{OPTION_BY_NAME[name].flag} is an empty list; give at least one value")
        lists.append(values)
    points = []
    for combo in itertools.product(*lists):
        point = {**opts, **dict(zip(GRID_OPTIONS, combo))}
        points += _solver_param_points(point)
    return points


def _solver_param_points(point: dict) -> list[dict]:
    solver = point.get("solver") or DEFAULT_SOLVER
    fixed = {"config_param": [], "param": []}
    swept = []  # (source, NAME.KEY, values)
    for source in ("config_param", "param"):
        for item in point.get(source) or []:
            lhs, _, value = item.partition("=")
            if lhs.split(".", 1)[0] == solver and "," in value:
                swept.append((source, lhs, param_values(value)))
            else:
                fixed[source].append(item)
    if not swept:
        return [point]
    out = []
    for combo in itertools.product(*[v for _, _, v in swept]):
        extra = {"config_param": [], "param": []}
        for (source, lhs, _), v in zip(swept, combo):
            extra[source].append(f"{lhs}={v}")
        out.append({**point, "config_param": fixed["config_param"] + extra["config_param"],
                    "param": fixed["param"] + extra["param"]})
    return out
