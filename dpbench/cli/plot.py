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


def run(args) -> int:
    from rich.markup import escape

    from .main import check_output_path, err_console, summary_from_db

    check_output_path(args.output, "-o")
    summary = summary_from_db(args.database)
    n = plot_summary(summary, args.x, args.metric, args.output, args.logx)
    err_console.print(f"wrote {escape(str(args.output))} ({n} panel{'s' if n > 1 else ''})")
    return 0
