"""Results as a tidy pandas DataFrame: one row per (data setting, trial, method, ε).

The SQLite store keeps the data setting, the method configuration and the selector's
diagnostics as JSON text; :func:`load_results` spreads every field into its own column so
that a researcher can filter, group and plot with ordinary pandas, and so that tables and
figures can be keyed on *every* quantity that varies in a run (ρ, SNR, Λ, b_x, seeds,
design, method parameters) instead of merging distinct settings.

Column naming
-------------
* store columns keep their names (``method``, ``n``, ``p``, ``s``, ``epsilon``, ``trial``,
  ``seed``, ``status``, ``recovery``, ``f1``, ``prepare_seconds``, ...);
* data-setting fields are plain columns (``generator``, ``rho``, ``snr``, ``design``,
  ``dataset``, ``standardize``, ...); a user file's path is ``data_file`` (``data`` stays
  the short display name);
* run options that change a method's results: ``draws``, ``b_x``, ``b_y``, ``r``, ``lam``,
  ``sensitivity_bound`` (``"tight"``/``"paper"``; ``sensitivity`` is the value Δ),
  ``solver``, ``solver.<key>`` (solver parameters), ``param.<name>`` (method parameters as
  given, ``<NA>`` where not given);
* ``diag.<name>``: each scalar diagnostic of the selector (lists/dicts as JSON text);
* ``method_label``: the method name with its non-default parameters, e.g. ``topr(R=5)``;
* ``guarantee``: the privacy guarantee that holds for the row (``"pure ε=1"``, ``"none: ..."``)
  and ``guaranteed`` (bool): whether it states one; ``run_delta`` is the run's ``--delta``.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

from dpbench.core.errors import UserInputError
from dpbench.core.score.loss import DEFAULT_LOSS
from dpbench.bench.results import schema

#: pandas dtype of each schema type (text columns become ``string`` when every value is a str).
_DTYPES = {"integer": "Int64", "real": "float64"}


def _renames(prefix: str) -> dict:
    """``{spread field: frame column}`` of the frame columns declared with source ``prefix.<field>``."""
    return {c.source.split(".", 1)[1]: c.name for c in schema.FRAME_COLUMNS
            if c.source and c.source.startswith(prefix + ".")}


def _loads(text):
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return {}
    if isinstance(text, (dict, list)):
        return text
    return json.loads(text) if text else {}


def _scalar(v):
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, sort_keys=True, default=str)
    return v


@functools.lru_cache(maxsize=None)
def _generator_defaults_cached(name: str) -> tuple:
    try:
        from dpbench.bench.registry import registry

        return tuple((k, p.default) for k, p in registry().generator(name).params.items())
    except Exception:  # noqa: BLE001 - a generator not installed here: only what was stored
        return ()


def _generator_defaults(name) -> dict:
    """A generator's declared defaults: a setting stores only the parameters the user gave (its
    key must not change when a default is spelled out), but the frame shows the design that ran
    (rho, SNR, ...). A later change of a default would show the new value: the stored key is
    unaffected, and such a change is a new prepared data version in its commit."""
    return dict(_generator_defaults_cached(name)) if isinstance(name, str) else {}


@functools.lru_cache(maxsize=None)
def solver_that_ran(solver: str, loss: str) -> str:
    """:func:`dpbench.bench.registry.oracle_backend` by names; ``solver`` as stored when a plugin is not installed."""
    from dpbench.bench.registry import oracle_backend

    try:
        return oracle_backend(solver, loss)
    except Exception:  # noqa: BLE001 - an uninstalled loss or solver: the stored name
        return solver


def _flatten(row: dict, supports: bool) -> dict:
    json_cols = schema.names(type="json")
    out = {k: v for k, v in row.items() if k not in json_cols}
    stored = set(schema.names())
    rename_setting, rename_config = _renames("setting"), _renames("config")
    setting = _loads(row.get("setting"))
    for k, v in {**_generator_defaults(setting.get("generator")), **setting}.items():
        # a setting field the store also has as a column (n, p, s) is that column
        if k in rename_setting or k not in stored:
            out[rename_setting.get(k, k)] = _scalar(v)
    cfg = _loads(row.get("config"))
    for k, v in cfg.items():
        if k == "params":
            for pk, pv in (v or {}).items():
                out[f"param.{pk}"] = _scalar(pv)
        elif k == "solver_params":
            for sk, sv in (v or {}).items():
                out[f"solver.{sk}"] = _scalar(sv)
        else:
            out[rename_config.get(k, k)] = _scalar(v)
    out.setdefault("loss", DEFAULT_LOSS)  # rows store the loss only when it is not the default
    if out["loss"] != DEFAULT_LOSS:  # b_y and the Δ bound shape only the least-squares Δ
        out["b_y"] = out["sensitivity_bound"] = None
        if isinstance(out.get("solver"), str):  # the backend that ran (hinge: generic), not --solver
            out["solver"] = solver_that_ran(out["solver"], out["loss"])
    for k, v in _loads(row.get("diagnostics")).items():
        out[f"diag.{k}"] = _scalar(v)
    if supports:  # the JSON columns kept whole (supports, reference_support)
        for k in schema.names(type="json", role="outcome"):
            out[k] = _loads(row.get(k)) or None
    return out


def method_label(method: str, params: dict) -> str:
    """``method`` followed by the parameters that differ from the selector's defaults.

    Parameters
    ----------
    method : str
        Registered selector name.
    params : dict
        The parameters given for it (strings from the command line are converted with the
        selector's declared :class:`~dpbench.api.Param` before comparing). When the selector
        is not installed, every given parameter is shown.

    Returns
    -------
    str
        E.g. ``"topr"`` or ``"topr(R=5)"``.
    """
    from dpbench.bench.keys import variant_label

    given = {k: v for k, v in (params or {}).items() if v is not None and not _isna(v)}
    try:
        return variant_label(method, given)  # the label the run gave the method
    except Exception:  # noqa: BLE001 - an uninstalled plugin: show what was given
        return method + "(" + ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                        for k, v in sorted(given.items())) + ")" if given else method


def _isna(v) -> bool:
    try:
        import pandas as pd

        return bool(pd.isna(v)) if not isinstance(v, (list, dict, tuple)) else False
    except (TypeError, ValueError):
        return False


def frame_from_rows(rows, supports: bool = False):
    """The tidy DataFrame of store rows (dicts as returned by ``ResultStore.rows``).

    See :func:`load_results` for the columns and dtypes.
    """
    import pandas as pd

    flat = [_flatten(r, supports) for r in rows]
    df = pd.DataFrame(flat)
    if df.empty:
        return df
    for col in schema.all_columns():
        if col.type in _DTYPES and col.name in df:
            df[col.name] = pd.to_numeric(df[col.name], errors="coerce").astype(_DTYPES[col.type])
    labels = {}
    pcols = [c for c in df.columns if c.startswith("param.")]
    lab = []
    for _, r in df[["method", *pcols]].iterrows():
        params = {c[6:]: r[c] for c in pcols if not _isna(r[c])}
        k = (r["method"], json.dumps(params, sort_keys=True, default=str))
        if k not in labels:
            labels[k] = method_label(r["method"], params)
        lab.append(labels[k])
    df["method_label"] = lab
    if "guarantee" in df:
        from dpbench.core.contracts.selector import has_guarantee

        df["guaranteed"] = [has_guarantee(None if _isna(g) else g) for g in df["guarantee"]]
    # Honest timing: a trial's preparation is stored once (on its first ε); spread it as a
    # per-(trial, method) quantity, and draw time per draw, so neither depends on ε order.
    # per (trial, method): not split by ε nor by whether an ε's guarantee held
    grp_cols = _identity_columns(df, exclude=("epsilon", "guaranteed"))
    df["trial_prepare_seconds"] = df.groupby(grp_cols + ["trial"], dropna=False)["prepare_seconds"].transform("sum")
    # the same (setting, configuration, trial) for every method: their preparations summed, so
    # oracle work shared between methods (charged to whichever needed it first) counts once
    trial_cols = [c for c in grp_cols if c not in ("method", "method_label", "dp_type", "neighbouring")
                  and not c.startswith("param.")]
    df["trial_prepare_all_seconds"] = df.groupby(trial_cols + ["trial"], dropna=False)["prepare_seconds"].transform("sum")
    nd = df["n_draws"].astype("float64").where(df["n_draws"] > 0)
    df["draw_seconds_per_draw"] = df["draw_seconds"] / nd
    df["successes"] = (df["recovery"] * df["n_draws"].astype("float64")).round().astype("Int64")
    whole = schema.names(type="json", role="outcome")
    for c in df.columns:
        if df[c].dtype == object and c not in whole:
            vals = df[c].dropna()
            if len(vals) and all(isinstance(v, str) for v in vals):
                df[c] = df[c].astype("string")
    lead = [c for c in ("method", "method_label", "data", "n", "p", "s", "epsilon", "trial") if c in df]
    return df[lead + [c for c in df.columns if c not in lead]]


def _identity_columns(df, exclude=()) -> list[str]:
    """Columns that say what was run (setting, configuration, method, ε), not outcomes.

    Declared columns (:mod:`dpbench.bench.results.schema`) are identity when their role says so; an
    undeclared one (a data-setting field such as ``rho``, ``param.*``, ``solver.*``) is identity;
    ``diag.*`` never is. So any outcome column added later never splits a summary, and the
    derived boolean ``guaranteed`` is identity: rows with and without a guarantee are never pooled.
    """
    declared = {c.name: c.role for c in schema.all_columns()}
    return [c for c in df.columns
            if c not in exclude and not c.startswith("diag.") and declared.get(c, "identity") == "identity"]


def identity_columns(df) -> list[str]:
    """The columns that identify a setting, method configuration and ε (no outcomes, no diagnostics)."""
    return _identity_columns(df)


def varying_columns(df, exclude=("method", "label")) -> list[str]:
    """Identity columns that take more than one value in ``df`` (missing counts as a value).

    These are the columns a table or figure must show or facet on so that distinct settings
    are never merged.
    """
    out = []
    for c in identity_columns(df):
        if c in exclude:
            continue
        if df[c].astype("string").fillna("<NA>").nunique() > 1:
            out.append(c)
    return out


def load_results(path, *, supports: bool = False):
    """Load a results database as a tidy pandas DataFrame.

    Parameters
    ----------
    path : str or Path
        A database written by ``dpbench compare --out``.
    supports : bool, default False
        Also include the per-draw supports (``supports``: list of D lists of s ints) and the
        reference support (``reference_support``); off by default because they are large.

    Returns
    -------
    pandas.DataFrame
        One row per (data setting, trial, method, ε). Columns (see the module docstring for
        the naming): ``n, p, s, trial, seed, n_draws, draws`` as nullable ``Int64``;
        ``epsilon, delta, sensitivity`` (Δ), ``recovery`` (exact-recovery rate over the
        trial's draws, in [0, 1]), ``recovery_prob`` (analytic), ``f1, topk, hamming``,
        ``objective_gap``, ``prepare_seconds`` and ``draw_seconds`` (wall-clock seconds),
        ``b_x, b_y, r, lam`` as ``float64`` (missing: NaN); names and categorical fields as
        pandas ``string``; ``diag.*`` and ``param.*`` keep their own types (JSON text for
        lists). Derived: ``method_label`` (str), ``trial_prepare_seconds`` (float64: the
        preparation of the (trial, method), whichever ε row carries it),
        ``trial_prepare_all_seconds`` (float64: the preparation of every method of that trial),
        ``draw_seconds_per_draw`` (float64) and ``successes`` (Int64: exact recoveries among
        the trial's draws).

    Raises
    ------
    UserInputError
        If the file does not exist or is not a dpbench results database.
    """
    from dpbench.bench.results.store import ResultStore

    store = ResultStore(path, readonly=True)  # says so in one line when missing or not ours
    try:
        rows = store.rows()
    finally:
        store.close()
    return frame_from_rows(rows, supports=supports)


def export_frame(df, path, fmt: str | None = None) -> int:
    """Write the tidy frame to CSV, JSON (records) or Parquet; returns the number of rows.

    ``path``: a file path, or a binary stream (standard output: ``dpbench export -o -``), which is
    given the whole encoded table at once.

    Raises
    ------
    UserInputError
        For an unknown format, or Parquet without pyarrow.
    """
    if hasattr(path, "write"):
        import tempfile

        fmt = (fmt or "csv").lower()
        if fmt in ("parquet", "pq"):
            with tempfile.TemporaryDirectory() as tmp:
                count = export_frame(df, Path(tmp) / "t.parquet", fmt)
                path.write((Path(tmp) / "t.parquet").read_bytes())
            return count
        text = (df.to_csv(index=False) if fmt == "csv" else
                df.to_json(orient="records", indent=1, force_ascii=False, double_precision=15) if fmt == "json" else None)
        if text is None:
            raise UserInputError(f"unknown export format {fmt!r}; use csv, json or parquet")
        path.write(text.encode("utf-8"))
        return len(df)
    path = Path(path)
    fmt = (fmt or path.suffix.lstrip(".") or "csv").lower()
    if fmt in ("pq",):
        fmt = "parquet"
    if fmt == "csv":
        df.to_csv(path, index=False)
    elif fmt == "json":
        df.to_json(path, orient="records", indent=1, force_ascii=False, double_precision=15)
    elif fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UserInputError("Parquet export needs pyarrow: pip install 'dpbench[parquet]'") from None
        out = df.copy()
        for c in out.columns:  # mixed-type diagnostic columns: Parquet needs one type per column
            if out[c].dtype == object:
                out[c] = out[c].map(lambda v: None if v is None or _isna(v) else
                                    (json.dumps(v) if isinstance(v, (list, dict)) else str(v))).astype("string")
        out.to_parquet(path, index=False)
    else:
        raise UserInputError(f"unknown export format {fmt!r}; use csv, json or parquet")
    return len(df)
