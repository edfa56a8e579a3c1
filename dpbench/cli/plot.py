"""``dpbench plot``: a metric against any column, lines by ``--hue``, panels by ``--col``/``--row``.

Built on the tidy frame (:func:`dpbench.load_results`) and its summary: every column that
varies in the run and is not on the x axis, the hue or a facet is added to the line label, so
distinct settings (ρ, SNR, Λ, seeds, method parameters, ...) are never merged into one line.
Error bars are the chosen interval (Wilson / Clopper–Pearson / bootstrap, see
:mod:`dpbench.bench.results.summary`). Needs matplotlib (``pip install 'dpbench[plot]'``).
"""

from __future__ import annotations

import math

from dpbench.core.errors import UserInputError

#: metric -> (summary column, interval columns or None, axis label)
METRICS = {"recovery": ("recovery", ("recovery_lo", "recovery_hi"), "exact recovery"),
           "recovery_prob": ("recovery_prob", None, "P(exact recovery), analytic"),
           "f1": ("f1", ("f1_lo", "f1_hi"), "F1"),
           "prepare": ("prepare_s", None, "preparation per trial (s, median)"),
           "draw": ("draw_ms", None, "time per draw (ms, median)"),
           "trial_prepare": ("trial_prepare_all_s", None, "preparation of all methods per trial (s, median)"),
           "time": ("prepare_s", None, "preparation per trial (s, median)"),
           "topk": ("topk", None, "top-k accuracy"),
           # swope2024 Figure 8 (against the reference's full ranking: --reference sis or lasso)
           "top": ("rank_top", None, "TOP rate"), "great": ("rank_great", None, "GREAT rate"),
           "good": ("rank_good", None, "GOOD rate"),
           # private estimation after selection (--estimate)
           "utility_loss": ("utility_loss", None, "utility loss (objective gap of the private estimate)"),
           "test_mse": ("test_mse", None, "test MSE (held-out rows)"),
           "test_accuracy": ("test_accuracy", None, "test accuracy (held-out rows)")}
#: metric -> (key of dpbench.bench.evaluation.metrics.summarize, label) for --heatmap
_HEATMAP = {"recovery": ("recovery_rate", "exact recovery"), "recovery_prob": ("recovery_prob", "P(exact recovery), analytic"),
            "f1": ("f1", "F1"), "topk": ("topk", "top-k accuracy"), "time": ("time_median_s", "median selection seconds"),
            "top": ("rank_top", "TOP rate"), "great": ("rank_great", "GREAT rate"), "good": ("rank_good", "GOOD rate")}
_RATES = ("recovery", "recovery_prob", "f1")
#: Suffix of a summary row's method label for the trials without a privacy guarantee
#: (:func:`dpbench.bench.results.summary.summary_frame`).
NO_GUARANTEE = "(no guarantee)"


def add_parser(sub):
    p = sub.add_parser("plot", help="plot a metric against any setting from a results database")
    p.add_argument("database", help="results database written by `dpbench compare --out`")
    p.add_argument("--x", default="n", help="x-axis column (default n; e.g. epsilon, p, rho)")
    p.add_argument("--hue", default="method_label", help="one line per value of this column (default: method)")
    p.add_argument("--col", help="one panel column per value of this column (e.g. rho)")
    p.add_argument("--row", help="one panel row per value of this column")
    p.add_argument("--metric", choices=sorted(METRICS), default="recovery",
                   help="y axis (default recovery; prepare and draw are the two honest timings)")
    p.add_argument("--interval", choices=["wilson", "clopper-pearson", "bootstrap"], default="wilson",
                   help="error bars of the recovery rate (default wilson)")
    p.add_argument("-o", "--output", required=True, help="image file (.png, .pdf, .svg)")
    p.add_argument("--logx", action="store_true", help="logarithmic x axis (default for epsilon)")
    p.add_argument("--logy", action="store_true",
                   help="logarithmic y axis for small probabilities (symlog: zeros stay visible at 0)")
    p.add_argument("--heatmap", action="store_true",
                   help="data set x epsilon heatmap of the metric, one panel per method and one for the "
                        "difference of the first two (swope2024 Figures 6-7)")
    p.set_defaults(func=run)


def _alias(col):
    return {"method": "method_label", "eps": "epsilon", "ε": "epsilon"}.get(col, col)


def _fmt(v):
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _order(v):
    return (0, float(v), "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0.0, str(v))


def make_figure(sf, x="n", metric="recovery", hue="method_label", col=None, row=None, logx=None, logy=False):
    """A matplotlib Figure of ``metric`` against ``x`` from a summary frame.

    Parameters
    ----------
    sf : pandas.DataFrame
        From :func:`dpbench.bench.results.summary.summary_frame`.
    x, hue, col, row : str
        Column names of ``sf`` (``method`` means ``method_label``).
    metric : str
        A key of :data:`METRICS`.
    logx : bool or None
        None: logarithmic for ``epsilon``, linear otherwise.
    logy : bool
        Symmetric-log y axis, linear below the smallest positive value's decade, so that
        probabilities of 1e-18 are distinguishable and exact zeros stay visible.

    Returns
    -------
    (matplotlib.figure.Figure, int)
        The figure and its number of panels.

    Raises
    ------
    UserInputError
        Unknown column, no values to plot, or matplotlib not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FixedLocator, NullLocator
    except ImportError:
        raise UserInputError("dpbench plot needs matplotlib: pip install 'dpbench[plot]'") from None
    from dpbench.bench.results.summary import display_columns

    x, hue, col, row = _alias(x), _alias(hue), _alias(col) if col else None, _alias(row) if row else None
    for name, c in (("--x", x), ("--hue", hue), ("--col", col), ("--row", row)):
        if c is not None and c not in sf.columns:
            # the varying columns first, then those with one value (--x n is valid on a run with one n)
            from dpbench.bench.results.summary import constant_columns

            known = display_columns(sf) + [k for k in constant_columns(sf) if k not in display_columns(sf)]
            raise UserInputError(f"{name} {c!r} is not a column of these results; columns: {', '.join(known)}")
    import pandas as pd

    if not pd.api.types.is_numeric_dtype(sf[x]):
        raise UserInputError(f"--x {x!r} is not numeric; put it on --hue, --col or --row and choose a numeric "
                             "--x such as n, p or epsilon")
    ykey, ekeys, ylabel = METRICS[metric]
    data = sf[sf[ykey].notna()]
    if data.empty:
        raise UserInputError(f"no {metric} values to plot in this database")
    if data[x].nunique(dropna=True) < 2:
        # the side-by-side shift below would spread the methods across the panel as if they sat
        # at different values of x
        from dpbench.bench.results.summary import display_columns as _shown

        vary = [c for c in _shown(sf) if c not in ("method_label", x) and pd.api.types.is_numeric_dtype(sf[c])
                and sf[c].nunique() > 1]
        raise UserInputError(f"--x {x}: every row has {x} = {_fmt(data[x].iloc[0])}, so nothing varies along x; "
                             + (f"choose a column that varies: --x {' or --x '.join(vary)}" if vary else
                                "no numeric setting varies in these results: see `dpbench report` for the table"))
    used = {x, hue, col, row}
    # every other varying column goes into the line label: distinct settings never merge
    extra = [c for c in display_columns(sf) if c not in used and c != "method_label"
             and sf[c].astype("string").fillna("<NA>").nunique() > 1]
    if hue != "method_label" and "method_label" in display_columns(sf) and sf["method_label"].nunique() > 1:
        extra = ["method_label"] + extra
    cols = sorted(data[col].unique(), key=_order) if col else [None]
    rows = sorted(data[row].unique(), key=_order) if row else [None]
    fig, axes = plt.subplots(len(rows), len(cols), figsize=(3.6 * len(cols) + 0.6, 3.0 * len(rows) + 0.6),
                             squeeze=False, sharey=True, sharex=True)
    if logx is None:
        logx = x == "epsilon"
    vals = [data[k].astype(float).to_numpy() for k in (ykey, *(ekeys or ()))]
    import numpy as np

    pos = np.concatenate([v[v > 0] for v in vals])
    linthresh = float(10 ** np.floor(np.log10(pos.min()))) if pos.size else 1e-3
    handles = {}
    # lines with equal values (e.g. two methods at 0) would hide each other: shift each line
    # sideways by a small, fixed fraction of the x range (ticks stay at the true values)
    n_lines = max(1, len(data.groupby([hue, *extra], dropna=False)))
    xall = data[x].astype(float).to_numpy()
    span = (np.log10(xall.max() / xall.min()) if logx and xall.min() > 0 else xall.max() - xall.min()) or 1.0
    order_of = {}
    palette, greys_of = {}, {}  # colours of the private lines; grey shades of those without a guarantee
    for i, rv in enumerate(rows):
        for j, cv in enumerate(cols):
            ax = axes[i][j]
            sub = data
            if col:
                sub = sub[sub[col] == cv]
            if row:
                sub = sub[sub[row] == rv]
            groups = sub.groupby([hue, *extra], dropna=False, sort=False)
            for gk, g in sorted(groups, key=lambda kv: tuple(_order(v) for v in
                                                             (kv[0] if isinstance(kv[0], tuple) else (kv[0],)))):
                gk = gk if isinstance(gk, tuple) else (gk,)
                label = _fmt(gk[0]) if hue == "method_label" else f"{hue}={_fmt(gk[0])}"
                if extra:
                    label += " · " + ", ".join(f"{c}={_fmt(v)}" for c, v in zip(extra, gk[1:]))
                g = g.sort_values(x)
                k = order_of.setdefault(label, len(order_of))
                shift = 0.012 * span * (k - (n_lines - 1) / 2)
                xs = g[x].astype(float).to_numpy()
                xs = xs * 10 ** shift if logx and xall.min() > 0 else xs + shift
                ys = g[ykey].astype(float).to_numpy()
                yerr = None
                if ekeys:
                    lo = g[ekeys[0]].astype(float).to_numpy()
                    hi = g[ekeys[1]].astype(float).to_numpy()
                    ok = ~(_isnan(lo) | _isnan(hi))
                    yerr = [[(ys[k] - lo[k]) if ok[k] else 0.0 for k in range(len(ys))],
                            [(hi[k] - ys[k]) if ok[k] else 0.0 for k in range(len(ys))]]
                # one colour per label in every panel (the axes' own colour cycles restarted per panel,
                # so a label first seen in the second panel could take the colour of another)
                if NO_GUARANTEE not in label:
                    style = {"color": palette.setdefault(label, f"C{len(palette) % 10}")}
                else:
                    # trials without a privacy guarantee: grey, dashed, hollow markers, never in the
                    # palette of the private lines (at n = 400 a "mcmc (no guarantee)" line was the top
                    # one, drawn like the others)
                    greys = greys_of.setdefault(label, str(0.3 + 0.2 * (len(greys_of) % 3)))
                    style = {"ls": "--", "mfc": "white", "color": greys, "zorder": 1}
                h = ax.errorbar(xs, ys, yerr=yerr, marker="o", ms=4, capsize=3, lw=1.4, **style)
                handles.setdefault(label, h)
            title = ", ".join(f"{c}={_fmt(v)}" for c, v in ((row, rv), (col, cv)) if c)
            if title:
                ax.set_title(title, fontsize=9)
            if logx:
                ax.set_xscale("log")
            if logy:
                # symlog: exact zeros (no recovery in any draw) stay visible at 0 instead of vanishing
                ax.set_yscale("symlog", linthresh=linthresh, linscale=0.5)
                if metric in _RATES:
                    ax.set_ylim(0, 1.05)
            elif metric in _RATES:
                ax.set_ylim(-0.03, 1.03)
            xv = sorted(set(data[x].astype(float)))
            if len(xv) <= 8:  # the run's own values as ticks, printed plainly (no 10^0 / 2x10^0 clutter)
                ax.xaxis.set_major_locator(FixedLocator(xv))
                ax.xaxis.set_minor_locator(NullLocator())
                ax.set_xticks(xv, [f"{v:g}" for v in xv], rotation=45 if len(xv) > 5 else 0)
            ax.grid(alpha=0.3)
            if i == len(rows) - 1:
                ax.set_xlabel("ε" if x == "epsilon" else x)
        axes[i][0].set_ylabel(ylabel)
    # the private lines first, then those without a guarantee (grey, dashed)
    labels = sorted(handles, key=lambda lab: NO_GUARANTEE in lab)
    fig.legend([handles[lab] for lab in labels], labels, loc="center left", bbox_to_anchor=(1.0, 0.5),
               fontsize=8, frameon=False)
    fig.tight_layout()
    return fig, len(rows) * len(cols)


def _isnan(a):
    import numpy as np

    return np.isnan(a)


def plot_frame(sf, output, **kw) -> int:
    """Draw :func:`make_figure` into ``output`` (legend outside the panels); returns the panel count."""
    fig, n = make_figure(sf, **kw)  # first: it turns a missing matplotlib into one UserInputError
    import matplotlib.pyplot as plt

    fig.savefig(output, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return n


def plot_heatmap(summary, metric: str, output) -> int:
    """Data set (rows) x epsilon (columns) heatmaps of ``metric``, one panel per method.

    With two or more methods a last panel shows the first minus the second (in name order),
    as swope2024 Figures 6-7 show DP-SIS minus two-stage. A setting with several s gets one
    row per (data set, s). Returns the panel count.
    """
    import numpy as np

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserInputError("dpbench plot needs matplotlib: pip install 'dpbench[plot]'") from None
    if metric not in _HEATMAP:
        raise UserInputError(f"--heatmap draws {', '.join(sorted(_HEATMAP))}; not {metric!r}")
    ykey, label = _HEATMAP[metric]
    rows = sorted({(d["data"], d["s"]) for d in summary})
    eps = sorted({d["epsilon"] for d in summary})
    methods = sorted({d["method"] for d in summary})
    grids = {m: np.full((len(rows), len(eps)), np.nan) for m in methods}
    for d in summary:
        v = d[ykey]
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            grids[d["method"]][rows.index((d["data"], d["s"])), eps.index(d["epsilon"])] = v
    panels = [(m, grids[m], "viridis", (0.0, 1.0)) for m in methods]
    if len(methods) >= 2:
        diff = grids[methods[0]] - grids[methods[1]]
        panels.append((f"{methods[0]} - {methods[1]}", diff, "RdBu", (-1.0, 1.0)))
    ylabels = [name if len({s for _, s in rows}) == 1 else f"{name} (s={s})" for name, s in rows]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 + 2.6 * len(panels), 0.3 * len(rows) + 1.8),
                             squeeze=False, sharey=True)
    for ax, (title, grid, cmap, (lo, hi)) in zip(axes[0], panels):
        im = ax.imshow(grid, cmap=cmap, vmin=lo, vmax=hi, aspect="auto")
        ax.set_xticks(range(len(eps)), [f"{e:g}" for e in eps], fontsize=7)
        ax.set_yticks(range(len(rows)), ylabels, fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("ε")
        fig.colorbar(im, ax=ax, shrink=0.8, label=label if title in methods else "difference")
    fig.tight_layout()
    fig.savefig(output, dpi=130)
    plt.close(fig)
    return len(panels)


def _check_image_format(output) -> None:
    """Refuse, before reading the database, a file name matplotlib cannot write (its ValueError
    was a traceback after the figure was drawn); no suffix is matplotlib's default, png."""
    from pathlib import Path

    suffix = Path(output).suffix.lstrip(".").lower()
    if not suffix:
        return
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return  # make_figure names the missing extra
    known = FigureCanvasAgg(Figure()).get_supported_filetypes()
    if suffix not in known:
        raise UserInputError(f"-o {output}: matplotlib cannot write .{suffix} files; use one of "
                             f"{', '.join(sorted(known))} (e.g. fig.png)")


def run(args) -> int:
    from rich.markup import escape

    from dpbench.bench.results.frame import load_results
    from dpbench.bench.results.summary import summary_frame
    from dpbench.cli.shared import check_output_path, err_console

    check_output_path(args.output, "-o")
    _check_image_format(args.output)
    if args.heatmap:
        from dpbench.cli.shared import summary_from_db

        n = plot_heatmap(summary_from_db(args.database), args.metric, args.output)
        err_console.print(f"wrote {escape(str(args.output))} ({n} panel{'s' if n > 1 else ''})", soft_wrap=True)
        return 0
    df = load_results(args.database)
    if df.empty:
        raise UserInputError(f"{args.database} holds no results yet")
    sf = summary_frame(df, args.interval)
    n = plot_frame(sf, args.output, x=args.x, metric=args.metric, hue=args.hue, col=args.col, row=args.row,
                   logx=True if args.logx else None, logy=args.logy)
    err_console.print(f"wrote {escape(str(args.output))} ({n} panel{'s' if n > 1 else ''})", soft_wrap=True)
    return 0
