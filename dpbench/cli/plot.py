"""``dpbench plot``: recovery (or another metric) against n or epsilon, one line per method.

The layout of the papers' figures: exact-recovery rate on the y axis with standard-error
bars over trials, one line per method, one panel per other setting. Needs matplotlib
(``pip install 'dpbench[plot]'``).
"""

from __future__ import annotations

import math
from collections import defaultdict

from ..errors import UserInputError

METRICS = {"recovery": ("recovery_rate", "recovery_se", "exact recovery"),
           "recovery_prob": ("recovery_prob", None, "P(exact recovery), analytic"),
           "f1": ("f1", None, "F1"), "topk": ("topk", None, "top-k accuracy"),
           "time": ("time_median_s", None, "median selection seconds")}


def add_parser(sub):
    p = sub.add_parser("plot", help="plot a metric against n or epsilon from a results database")
    p.add_argument("database", help="results database written by `dpbench compare --out`")
    p.add_argument("--x", choices=["n", "epsilon", "p", "s"], default="n", help="x axis (default n)")
    p.add_argument("--metric", choices=sorted(METRICS), default="recovery", help="y axis (default recovery)")
    p.add_argument("-o", "--output", required=True, help="image file (.png, .pdf, .svg)")
    p.add_argument("--logx", action="store_true", help="logarithmic x axis (useful for epsilon sweeps)")
    p.add_argument("--heatmap", action="store_true",
                   help="data set x epsilon heatmap of the metric, one panel per method and one for the "
                        "difference of the first two (swope2024 Figures 6-7)")
    p.set_defaults(func=run)


def _panel_order(item):
    # numeric settings in numeric order (epsilon 1, 3, 10, 30 — not 1, 10, 3, 30)
    return tuple((0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v)) for v in item[0])


def plot_summary(summary, x: str, metric: str, output, logx: bool = False) -> int:
    """Draw ``metric`` against ``x`` per method; one panel per remaining setting. Returns the panel count."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserInputError("dpbench plot needs matplotlib: pip install 'dpbench[plot]'") from None
    ykey, ekey, ylabel = METRICS[metric]
    panels = defaultdict(lambda: defaultdict(list))
    others = [k for k in ("data", "n", "p", "s", "epsilon") if k != x]
    for d in summary:
        if d[ykey] is None or (isinstance(d[ykey], float) and math.isnan(d[ykey])):
            continue
        panels[tuple(d[k] for k in others)][d.get("label", d["method"])].append(d)
    if not panels:
        raise UserInputError(f"no {metric} values to plot in this database")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8), squeeze=False, sharey=True)
    for ax, (key, methods) in zip(axes[0], sorted(panels.items(), key=_panel_order)):
        for method, rows in sorted(methods.items()):
            rows.sort(key=lambda d: d[x])
            xs = [d[x] for d in rows]
            ys = [d[ykey] for d in rows]
            err = [0 if (ekey is None or d[ekey] is None or math.isnan(d[ekey])) else d[ekey] for d in rows]
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=f"{method} ({rows[0]['dp_type']})")
        ax.set_title(", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in zip(others, key)),
                     fontsize=9)
        ax.set_xlabel("ε" if x == "epsilon" else x)
        if logx:
            ax.set_xscale("log")
        if metric in ("recovery", "recovery_prob", "f1", "topk"):
            ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    axes[0][-1].legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(output, dpi=130)
    plt.close(fig)
    return len(panels)


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
    ykey, _, label = METRICS[metric]
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


def run(args) -> int:
    from rich.markup import escape

    from .main import check_output_path, err_console, summary_from_db

    check_output_path(args.output, "-o")
    summary = summary_from_db(args.database)
    if args.heatmap:
        n = plot_heatmap(summary, args.metric, args.output)
    else:
        n = plot_summary(summary, args.x, args.metric, args.output, args.logx)
    err_console.print(f"wrote {escape(str(args.output))} ({n} panel{'s' if n > 1 else ''})")
    return 0
