"""The result schema: every column of a result row, declared once.

The SQLite table (:mod:`dpbench.bench.results.store`), the CSV and JSON exports, the tidy
frame of :func:`dpbench.load_results` (:mod:`dpbench.bench.results.frame`) and the per-setting
summary (:mod:`dpbench.bench.results.summary`) all derive their field lists from :data:`COLUMNS`
(the stored columns) and :data:`FRAME_COLUMNS` (the columns :func:`~dpbench.load_results`
adds); no other module spells a list of result fields.

Adding a column
---------------
One line in :data:`COLUMNS`, e.g.::

    Column("test_mse", "real", "mean squared error on held-out data (units of y squared)",
           summary="mean"),

and the runner (:mod:`dpbench.bench.run`) puts the value in its rows under that name.
Nothing else changes: the store creates the column (and adds it, NULL for the rows already
there, to a database written before it existed), the exports and ``load_results`` carry it
with its dtype, it never splits a summary (it is an outcome unless declared
``role="identity"``), and ``summary=`` makes :func:`~dpbench.bench.results.summary.summary_frame`
report its aggregate. Append new columns at the end (the order is that of the table and of
the CSV export). A column a row fills but the schema does not declare is refused when the row
is written (:meth:`dpbench.bench.results.store.ResultStore.write`), never silently dropped.

Roles
-----
``"identity"``
    Says *what* was run (setting, method, ε, seed...); summaries group on it, tables show it
    when it varies.
``"outcome"``
    What came out of the run (metrics, timings, supports, the guarantee); never splits a
    summary.
``"spread"``
    A JSON object that :func:`~dpbench.load_results` spreads into one column per field:
    ``setting`` (data-setting fields, e.g. ``rho``), ``config`` (run options; ``params`` →
    ``param.<name>``, ``solver_params`` → ``solver.<key>``) and ``diagnostics``
    (``diag.<name>``). Spread fields that the schema does not declare (``rho``,
    ``param.R``...) are identity columns; ``diag.*`` are neither identity nor summarised,
    except as the selector declares (:attr:`dpbench.api.Selector.diagnostics`).

Types
-----
``"text"`` (SQL TEXT, pandas ``string``), ``"integer"`` (INTEGER, ``Int64``), ``"real"``
(REAL, ``float64``), ``"json"`` (TEXT holding JSON; decoded by the JSON export and by
``load_results``), ``"bool"`` (frame-only, pandas ``bool``).
"""

from __future__ import annotations

from dataclasses import dataclass

from dpbench.core.contracts import selector as selector_contract

#: SQL type of each column type.
SQL_TYPES = {"text": "TEXT", "integer": "INTEGER", "real": "REAL", "json": "TEXT"}
ROLES = ("identity", "outcome", "spread")
#: How a summary reduces a column over the ok rows of a group (see
#: :func:`dpbench.bench.results.summary.aggregate`): ``"rate"`` pooled over all draws with a
#: binomial interval (``<name>_lo``/``<name>_hi``); ``"mean_all"`` the mean, NaN unless every
#: row has a value; and those a selector's diagnostics can use too
#: (:data:`dpbench.api.AGGREGATES`): ``"count"`` ``"k/m"`` rows where the value is true,
#: ``"mean"``, ``"mean_ci"`` (mean with a bootstrap interval), ``"median"``, ``"max"``.
AGGREGATES = ("rate", "mean_all", *selector_contract.AGGREGATES)


@dataclass(frozen=True)
class Column:
    """One result column.

    Parameters
    ----------
    name : str
        Column name (SQL, export, frame).
    type : {"text", "integer", "real", "json", "bool"}
        Stored type (see the module docstring); ``"bool"`` only in :data:`FRAME_COLUMNS`.
    description : str
        Meaning, with the unit where there is one.
    nullable : bool
        Whether a row may lack a value (failed rows lack every outcome).
    role : {"identity", "outcome", "spread"}
        See the module docstring.
    summary : str or None
        How :func:`~dpbench.bench.results.summary.summary_frame` aggregates it (one of
        :data:`AGGREGATES`), or None: not summarised. ``"how:name"`` names the summary field
        (default: the column's name) and ``"how:name*scale"`` multiplies it (``draw_ms``).
    source : str or None
        Frame columns only: where :func:`~dpbench.load_results` reads it, ``"config.<key>"``
        or ``"setting.<key>"`` (a renamed spread field), or ``"derived"`` (computed there).
    """

    name: str
    type: str
    description: str
    nullable: bool = True
    role: str = "outcome"
    summary: str | None = None
    source: str | None = None

    def __post_init__(self):
        if self.type not in (*SQL_TYPES, "bool") or self.role not in ROLES:
            raise ValueError(f"column {self.name!r}: bad type {self.type!r} or role {self.role!r}")
        if self.summary is not None and self.summary.split(":")[0] not in AGGREGATES:
            raise ValueError(f"column {self.name!r}: unknown summary {self.summary!r}; use one of {AGGREGATES}")

    @property
    def summary_spec(self) -> tuple[str, str, float] | None:
        """``(how, output name, scale)`` of :attr:`summary`, or None."""
        if self.summary is None:
            return None
        how, _, rest = self.summary.partition(":")
        name, _, scale = (rest or self.name).partition("*")
        return how, name, float(scale) if scale else 1.0


_I, _O = "identity", "outcome"

#: The stored columns, in table order (the order of the CSV export). One line per column.
COLUMNS: tuple[Column, ...] = (
    Column("key", "text", "hash of everything that determines the row (resume skips stored keys)", False),
    Column("method", "text", "registered selector name", False, _I),
    Column("label", "text", "method label with its non-default parameters (a variant: topr(R=300))", False),
    Column("config", "json", "run options that change the method's results (draws, b_x, b_y, r, lam, "
           "sensitivity bound, solver, reference, delta, params, solver_params)", False, "spread"),
    Column("data", "text", "short display name of the data setting", False, _I),
    Column("setting", "json", "the data setting (generator or data set and its parameters)", False, "spread"),
    Column("n", "integer", "number of observations", False, _I),
    Column("p", "integer", "number of features", False, _I),
    Column("s", "integer", "sparsity level s", False, _I),
    Column("epsilon", "real", "privacy parameter ε requested", False, _I),
    Column("trial", "integer", "trial index within the data setting (0-based)", False),
    Column("seed", "integer", "run seed", False, _I),
    Column("status", "text", "ok, uncertified or failed", False),
    Column("error", "text", "exception of a failed row (type: message (at file:line))"),
    Column("guarantee", "text", "privacy guarantee that holds for the row ('pure ε=1', '(ε=1, δ=1e-06)', "
           "'none: <reason>')", False),
    Column("dp_type", "text", "declared DP type of the selector: pure, approximate or none", False, _I),
    Column("neighbouring", "text", "neighbouring relation of the guarantee (replace-one)", False, _I),
    Column("epsilon_spent", "real", "ε actually guaranteed when it differs from the requested one",
           summary="max"),
    Column("delta", "real", "the run's DP δ (0: pure DP)"),
    Column("sensitivity", "real", "sensitivity Δ of the score on this trial"),
    Column("n_draws", "integer", "private outputs drawn (0 for a failed row)"),
    Column("recovery", "real", "exact-recovery rate over the trial's draws, in [0, 1]", summary="rate"),
    Column("recovery_prob", "real", "analytic probability of exact recovery (where the law is known)",
           summary="mean_all"),
    Column("f1", "real", "mean F1 score of the draws against the reference support", summary="mean_ci"),
    Column("topk", "real", "mean top-k accuracy |Ŝ ∩ S| / s of the draws", summary="mean"),
    Column("hamming", "real", "mean Hamming distance |Ŝ Δ S| of the draws (features)"),
    Column("objective_gap", "real", "mean R(Ŝ) - R(S1) over the draws (certified optimum S1; score units)"),
    Column("prepare_seconds", "real", "wall-clock seconds of the ε-independent preparation (on the first ε)"),
    Column("draw_seconds", "real", "wall-clock seconds of the draws at this ε"),
    Column("reference", "text", "what outputs are scored against: true, bss, lasso or sis", False, _I),
    Column("reference_support", "json", "the reference support (list of s ints)"),
    Column("supports", "json", "the private supports (list of n_draws sorted lists of s ints)"),
    Column("diagnostics", "json", "the selector's diagnostics (dict)", role="spread"),
    Column("created", "real", "Unix time the row was made (seconds)"),
    # swope2024 Figure 8, against the reference's full ranking (sis, lasso; NULL for bss and true):
    # dpbench.bench.evaluation.metrics.rank_metrics
    Column("rank_top", "real", "TOP rate: share of the draws that are the reference's top s", summary="mean"),
    Column("rank_great", "real", "GREAT rate: share of the draws holding the reference's top s/10 with the "
           "rest within its top 11s/10", summary="mean"),
    Column("rank_good", "real", "GOOD rate: share of the draws holding the reference's top s/100 with the "
           "rest within its top 3s/2", summary="mean"),
    # private estimation after selection (--estimate; dpbench.bench.evaluation.estimation): NULL without it
    Column("estimate", "text", "estimator run on each drawn support (e.g. objpert)", role=_I),
    Column("estimate_fraction", "real", "share f of ε given to the estimate", role=_I),
    Column("epsilon_select", "real", "ε of the selection, (1 - f) ε"),
    Column("epsilon_estimate", "real", "ε of each estimate, f ε"),
    Column("utility_loss", "real", "mean over draws of the estimate's objective minus the certified optimum on the "
           "training rows (least squares: score units / 2n)", summary="mean"),
    Column("test_mse", "real", "mean over draws of the held-out mean squared error (units of y squared)",
           summary="mean"),
    Column("test_accuracy", "real", "mean over draws of the held-out share of correctly signed labels (±1)",
           summary="mean"),
)

#: Columns :func:`dpbench.load_results` adds to the stored ones (spread run options and
#: quantities derived from the rows). Data-setting fields, ``param.*``, ``solver.*`` and
#: ``diag.*`` are named by the run, not here.
FRAME_COLUMNS: tuple[Column, ...] = (
    Column("data_file", "text", "path of a user data file", role=_I, source="setting.data"),
    Column("draws", "integer", "private outputs per trial requested", role=_I, source="config.draws"),
    Column("b_x", "real", "clipping bound of the features", role=_I, source="config.b_x"),
    Column("b_y", "real", "clipping bound of the response", role=_I, source="config.b_y"),
    Column("r", "real", "l2 bound on the coefficients", role=_I, source="config.r"),
    Column("lam", "real", "ridge penalty Λ", role=_I, source="config.lam"),
    Column("sensitivity_bound", "text", "bound used for Δ: tight or paper", role=_I, source="config.sensitivity"),
    Column("solver", "text", "best-subset oracle backend", role=_I, source="config.solver"),
    Column("run_delta", "real", "the run's --delta", role=_I, source="config.delta"),
    Column("loss", "text", "loss of the score (stored only when not least-squares)", role=_I, source="config.loss"),
    Column("method_label", "text", "method name with its non-default parameters", False, _I, source="derived"),
    Column("guaranteed", "bool", "whether the row's guarantee states a DP guarantee", False, _I, source="derived"),
    Column("trial_prepare_seconds", "real", "preparation of the (trial, method), whichever ε row carries it (s)",
           summary="median:prepare_s", source="derived"),
    Column("draw_seconds_per_draw", "real", "draw time per draw (s)", summary="median:draw_ms*1000",
           source="derived"),
    Column("successes", "integer", "exact recoveries among the trial's draws", source="derived"),
    Column("trial_prepare_all_seconds", "real", "preparation of every method of the trial (s): shared oracle "
           "work counted once", summary="median:trial_prepare_all_s", source="derived"),
)


def names(columns=None, *, type=None, role=None) -> tuple[str, ...]:
    """Names of the columns (default: the stored ones) with the given type and/or role."""
    cols = COLUMNS if columns is None else columns
    return tuple(c.name for c in cols
                 if (type is None or c.type == type) and (role is None or c.role == role))


def sql_columns() -> dict[str, str]:
    """``{name: SQL type}`` of the results table (``key`` is the primary key)."""
    return {c.name: SQL_TYPES[c.type] + (" PRIMARY KEY" if c.name == "key" else "") for c in COLUMNS}


def column(name: str) -> Column | None:
    """The declaration of a stored or frame column, or None."""
    return next((c for c in COLUMNS + FRAME_COLUMNS if c.name == name), None)


def all_columns() -> tuple[Column, ...]:
    """The stored columns followed by the frame's."""
    return COLUMNS + FRAME_COLUMNS
