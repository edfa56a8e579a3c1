"""Per-setting summaries of the tidy frame, keyed on every column that varies, with intervals.

Intervals
---------
* exact recovery (a rate): by default the Wilson score interval (Wilson 1927; via
  ``scipy.stats.binomtest(...).proportion_ci(method="wilson")``) of the pooled successes
  over all draws of all ok trials, or the exact Clopper–Pearson interval
  (``method="exact"``). The pooled interval treats draws as independent given the data;
  ``"bootstrap"`` instead resamples trials (percentile bootstrap of the mean per-trial
  rate, ``scipy.stats.bootstrap``), which also covers the between-trial variation.
  A rate of 0 out of N draws therefore shows as ``0 [0, 3.8/N]``, never ``0 ± 0``.
* means over trials (F1, analytic P(exact), seconds): percentile bootstrap over trials
  (``scipy.stats.bootstrap``, 2000 resamples, fixed seed so the table is reproducible).
"""

from __future__ import annotations

import math

import numpy as np

from dpbench.bench.results import schema
from dpbench.bench.results.frame import identity_columns

INTERVALS = ("wilson", "clopper-pearson", "bootstrap")
LEVEL = 0.95
_BOOT = 2000


def rate_interval(successes: int, total: int, method: str = "wilson", level: float = LEVEL) -> tuple[float, float]:
    """Confidence interval for a binomial rate ``successes / total``.

    Parameters
    ----------
    successes, total : int
        Exact recoveries and draws (``0 <= successes <= total``).
    method : {"wilson", "clopper-pearson"}
        Wilson score interval or the exact Clopper–Pearson interval
        (``scipy.stats.binomtest(...).proportion_ci``).
    level : float
        Confidence level in (0, 1).

    Returns
    -------
    (float, float)
        Lower and upper bound in [0, 1]; ``(nan, nan)`` when ``total == 0``.
    """
    from scipy.stats import binomtest

    if total <= 0:
        return math.nan, math.nan
    ci = binomtest(int(successes), int(total)).proportion_ci(
        confidence_level=level, method="wilson" if method == "wilson" else "exact")
    return float(ci.low), float(ci.high)


def bootstrap_interval(values, level: float = LEVEL, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of per-trial ``values`` (NaNs dropped).

    Returns ``(nan, nan)`` for fewer than 2 values, and ``(v, v)`` when all values are equal
    (the bootstrap distribution is degenerate; with rates prefer :func:`rate_interval`).
    """
    from scipy.stats import bootstrap

    v = np.asarray([x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))],
                   dtype=np.float64)
    if v.size < 2:
        return math.nan, math.nan
    if np.all(v == v[0]):
        return float(v[0]), float(v[0])
    res = bootstrap((v,), np.mean, confidence_level=level, n_resamples=_BOOT, method="percentile",
                    random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def summary_frame(df, interval: str = "wilson", level: float = LEVEL):
    """One row per distinct (setting, method configuration, ε) of the tidy frame.

    Parameters
    ----------
    df : pandas.DataFrame
        From :func:`dpbench.bench.results.frame.load_results`.
    interval : {"wilson", "clopper-pearson", "bootstrap"}
        Interval of the exact-recovery rate (see the module docstring).
    level : float
        Confidence level of every interval.

    Returns
    -------
    pandas.DataFrame
        The identity columns (every setting and configuration column, ``method_label``,
        ``epsilon``), then ``rows_all``, ``guarantee``, ``trials`` (ok), ``failed``,
        ``uncertified``, ``draws_total``, then the field of every column declared with a
        ``summary`` in :mod:`dpbench.bench.results.schema` (:func:`aggregate`), today:
        ``epsilon_spent`` (max), ``recovery`` (pooled rate) with ``recovery_lo``/``recovery_hi``,
        ``recovery_prob`` (mean analytic probability, NaN unless every ok trial has one), ``f1``
        with ``f1_lo``/``f1_hi``, ``topk`` (mean), ``prepare_s`` (median per-trial preparation of
        this method, shared oracle work included where this method did it), ``draw_ms`` (median
        milliseconds per draw), ``trial_prepare_all_s`` (median over trials of the preparation
        of all methods of the trial: the shared work counted once); then ``diag.<name>`` for
        each diagnostic the group's selector declares (:attr:`dpbench.api.Selector.diagnostics`,
        aggregated as declared) and ``diagnostics``, their labelled values as text. Sorted by
        the identity columns; ``attrs["identity"]`` lists them.
    """
    import pandas as pd

    if interval not in INTERVALS:
        from dpbench.core.errors import UserInputError

        raise UserInputError(f"unknown interval {interval!r}; use one of {', '.join(INTERVALS)}")
    keys = identity_columns(df)
    out = []
    declared = {}  # method -> its declared diagnostics
    for gkey, g in df.groupby(keys, dropna=False, sort=True):
        # with per-row guarantees (the split below), uncertified rows are reported in the
        # no-guarantee row like the summary of dpbench.bench.evaluation.metrics; without, never averaged
        ok = g[g["status"] != "failed"] if "guaranteed" in g else g[g["status"] == "ok"]
        total = int(ok["n_draws"].fillna(0).sum()) if len(ok) else 0
        row = dict(zip(keys, gkey if isinstance(gkey, tuple) else (gkey,)))
        row.update({
            "rows_all": int(len(g)),
            "guarantee": _counts(g["guarantee"]) if "guarantee" in g else None,
            "trials": int(len(ok)), "failed": int((g["status"] == "failed").sum()),
            "uncertified": int((g["status"] == "uncertified").sum()), "draws_total": total,
        })
        for col in schema.all_columns():  # every declared summary field, in schema order
            if col.summary is not None:
                row.update(aggregate(ok, col, interval, level))
        row.update(_diagnostics(ok, row.get("method"), declared, interval, level))
        out.append(row)
    res = pd.DataFrame(out)
    if "guaranteed" in keys and len(res):
        # k/N: trials in this row of all trials of its (setting, configuration, ε)
        others = [k for k in keys if k != "guaranteed"]
        res["total_trials"] = res.groupby(others, dropna=False)["rows_all"].transform("sum")
        res["method_label"] = [m if ok_ else f"{m} (no guarantee)"
                               for m, ok_ in zip(res["method_label"], res["guaranteed"])]
        # per setting and ε: the guaranteed rows first, then the rest
        setting = [k for k in others if k not in ("method", "method_label", "dp_type", "neighbouring")
                   and not k.startswith("param.")]
        res = res.sort_values(setting + ["guaranteed", "method_label"],
                              ascending=[True] * len(setting) + [False, True], kind="stable")
        res = res.reset_index(drop=True)
    else:
        res["total_trials"] = res["rows_all"] if len(res) else []
    res.attrs["identity"] = keys
    return res


def summarize(df, interval: str = "wilson", level: float = LEVEL):
    """The safe way to average a :func:`dpbench.load_results` frame: :func:`summary_frame`.

    Rows with and without a privacy guarantee are never averaged together: ``guaranteed`` is one of
    the grouping columns, and the rows without one are labelled ``"<method> (no guarantee)"``
    (a plain ``df.groupby("method_label")["recovery"].mean()`` mixes them). Failed trials are counted
    (``failed``), never averaged in.

    Parameters
    ----------
    df : pandas.DataFrame
        From :func:`dpbench.load_results`.
    interval : {"wilson", "clopper-pearson", "bootstrap"}
    level : float
        Confidence level of the intervals.

    Returns
    -------
    pandas.DataFrame
        One row per (setting, method configuration, ε, guaranteed); see :func:`summary_frame`.
    """
    return summary_frame(df, interval, level)


def aggregate(ok, col: "schema.Column", interval: str = "wilson", level: float = LEVEL) -> dict:
    """The summary fields of one declared column over the ok rows of a group.

    Parameters
    ----------
    ok : pandas.DataFrame
        The rows of one summary group that are averaged (tidy frame).
    col : dpbench.bench.results.schema.Column
        A column with ``summary`` set; ``how`` is one of :data:`dpbench.bench.results.schema.AGGREGATES`.
    interval, level
        As in :func:`summary_frame` (used by ``"rate"``; ``"mean_ci"`` always bootstraps).

    Returns
    -------
    dict
        ``{name: value}``, plus ``name_lo``/``name_hi`` for ``"rate"`` and ``"mean_ci"``. A
        column absent from the frame (a database written before it was declared) gives NaN
        (None for ``"count"``).
    """
    how, name, scale = col.summary_spec
    return _reduce(ok, col.name, how, name, scale, interval, level)


def _reduce(ok, column: str, how: str, name: str, scale: float = 1.0, interval: str = "wilson",
            level: float = LEVEL) -> dict:
    """:func:`aggregate` of the frame column ``column`` by ``how``, output as ``name``."""
    if column not in ok:
        nan = None if how == "count" else math.nan
        return {name: nan, **({f"{name}_lo": math.nan, f"{name}_hi": math.nan} if how in ("rate", "mean_ci") else {})}
    v = ok[column]
    if how == "rate":  # pooled over all draws of the ok trials (see the module docstring)
        # a trial without the rate (no certified bss reference to score against) adds no draws
        v = _numeric(v)
        scored = ok[v.notna()]
        v = v.dropna()
        succ = int((v * scored["n_draws"].astype("float64")).round().fillna(0).sum()) if len(scored) else 0
        total = int(scored["n_draws"].fillna(0).sum()) if len(scored) else 0
        if interval == "bootstrap":
            lo, hi = bootstrap_interval(v.tolist(), level)
            rate = float(v.mean()) if len(v) else math.nan
        else:
            rate = succ / total if total else math.nan
            lo, hi = rate_interval(succ, total, interval, level)
        return {name: rate, f"{name}_lo": lo, f"{name}_hi": hi}
    if how == "count":  # "k/m": rows where the value held, of the rows that report it
        vals = v.dropna()
        return {name: f"{int(sum(bool(x) for x in vals))}/{len(vals)}" if len(vals) else None}
    v = _numeric(v)
    if how == "mean_ci":
        v = v.dropna()  # as for a rate: a trial without the value is not averaged in
        lo, hi = bootstrap_interval(v.tolist(), level)
        return {name: float(v.mean()) if len(v) else math.nan, f"{name}_lo": lo, f"{name}_hi": hi}
    if how == "mean_all":
        value = float(v.mean()) if len(ok) and v.notna().all() else math.nan
    elif how == "max":
        vals = v.dropna()
        value = float(vals.max()) if len(vals) else math.nan
    else:  # mean, median
        value = float(getattr(v, how)()) if len(ok) else math.nan
    return {name: scale * value}


def _numeric(values):
    """``values`` as float64 (a diagnostic column may hold text; what is not a number is NaN)."""
    import pandas as pd

    return pd.to_numeric(values, errors="coerce").astype("float64")


def _diagnostics(ok, method, declared: dict, interval: str, level: float) -> dict:
    """The diagnostics ``method`` declares (:attr:`dpbench.api.Selector.diagnostics`), aggregated.

    Returns ``{"diag.<name>": value, ...}`` (plus ``_lo``/``_hi`` for ``"mean_ci"``) and
    ``"diagnostics"``: ``"<label> <value>"`` of each, joined by ``"; "`` (None when there is none).
    ``declared`` caches each method's declaration; an uninstalled plugin declares nothing.
    """
    if method not in declared:
        from dpbench.bench.registry import registry

        try:
            declared[method] = dict(getattr(registry().selector(method), "diagnostics", {}) or {})
        except Exception:  # noqa: BLE001 - an uninstalled plugin: its diagnostics stay unsummarised
            declared[method] = {}
    out, text = {}, []
    for name, diag in declared[method].items():
        vals = _reduce(ok, f"diag.{name}", diag.aggregate, f"diag.{name}", 1.0, interval, level)
        out.update(vals)
        v = vals[f"diag.{name}"]
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            text.append(f"{diag.label} {v:.3g}" if isinstance(v, float) else f"{diag.label} {v}")
    out["diagnostics"] = "; ".join(text) or None
    return out


def _counts(values) -> str:
    """One guarantee string, or each distinct one with its count (most frequent first)."""
    vc = values.fillna("none: unknown").astype(str).value_counts()
    if len(vc) == 1:
        return str(vc.index[0])
    return "; ".join(f"{g} ×{k}" for g, k in sorted(vc.items(), key=lambda kv: (-kv[1], kv[0])))


def _ident(df) -> list[str]:
    return list(df.attrs.get("identity") or identity_columns(df))


def _varying(df, cols) -> list[str]:
    return [c for c in cols if df[c].astype("string").fillna("<NA>").nunique() > 1]


def _names_data(df, c) -> bool:
    """True when column ``c`` (``dataset``, ``generator``) only repeats ``data`` where it is set: a
    table with two data sets showed the name twice and had no room left for the guarantee."""
    if c not in ("dataset", "generator") or "data" not in df:
        return False
    set_ = df[c].notna()
    return bool((df.loc[set_, c].astype(str) == df.loc[set_, "data"].astype(str)).all())


def display_columns(df) -> list[str]:
    """The identity columns a table must show: ``method_label``, every varying column, ``epsilon``.

    ``df`` is a tidy or a summary frame. Method parameters are in ``method_label``.
    """
    skip = ("method", "label", "method_label", "epsilon", "dp_type", "neighbouring", "data", "guaranteed")
    vary = [c for c in _varying(df, _ident(df)) if c not in skip and not c.startswith("param.")
            and not _names_data(df, c)]
    cols = ["method_label"]
    if "data" in df and df["data"].nunique(dropna=False) > 1:
        cols.append("data")
    return cols + vary + ["epsilon"]


def constant_columns(df) -> dict:
    """Identity columns with one value in the run (shown once, above or below the table)."""
    ident = _ident(df)
    vary = set(_varying(df, ident))
    out = {}
    for c in ident:
        if c in vary or c in ("method", "method_label", "label", "dp_type", "neighbouring", "guaranteed") \
                or c.startswith("param.") or (c != "data" and _names_data(df, c)):
            continue
        v = df[c].dropna()
        if len(v):
            out[c] = v.iloc[0]
    return out
