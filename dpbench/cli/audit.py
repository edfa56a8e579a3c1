"""``dpbench audit``: check selectors' privacy claims on neighbouring data sets (docs/auditing.md).

Example::

    dpbench audit --methods exhaustive,topr,mistakes,mistakes-ptr,dpsis,sampagg,mcmc --delta 1e-6

Exit status: 0 when no pair exceeds the guarantee its rows state, 1 on a finding (so a plugin
author can run it in CI), 2 on bad input (one line, no traceback).
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from dpbench.core.errors import UserInputError

#: Suffix of the audit results stored next to a results database (``--out DB``); the HTML
#: report of that database (``dpbench report DB --html``) shows them in a section.
AUDIT_SUFFIX = ".audit.json"


def add_parser(sub) -> None:
    """Add the ``audit`` subcommand to an argparse subparsers object."""
    from dpbench.bench.audit import DEFAULT_BUDGET, AuditSetup

    d = AuditSetup()
    p = sub.add_parser("audit", help="audit selectors' privacy claims on neighbouring data sets (exit 1 on a finding)")
    p.add_argument("--methods", required=True, help="comma-separated registered selector names")
    p.add_argument("--epsilon", type=float, default=d.epsilon, help=f"requested epsilon (default {d.epsilon:g})")
    p.add_argument("--delta", type=float, default=d.delta, help=f"run delta for (eps, delta) selectors (default {d.delta:g})")
    p.add_argument("--lam", type=float, default=d.lam, help=f"ridge penalty Lambda (default {d.lam:g})")
    p.add_argument("--seed", type=int, default=0, help="seed of every pair and draw (default 0)")
    p.add_argument("--budget", type=int, default=None, metavar="PAIRS",
                   help=f"exact-mode pairs searched and climbed, each (default {DEFAULT_BUDGET.pairs}; Monte-Carlo "
                        f"mode searches PAIRS/{DEFAULT_BUDGET.pairs // DEFAULT_BUDGET.mc_pairs})")
    p.add_argument("--draws", type=int, default=None,
                   help=f"Monte-Carlo draws per side for the reported bound (default {DEFAULT_BUDGET.final_draws})")
    p.add_argument("--confidence", type=float, default=d.confidence,
                   help=f"confidence of Monte-Carlo lower bounds (default {d.confidence:g})")
    p.add_argument("--quick", action="store_true", help="a small budget (about a minute for the built-ins)")
    p.add_argument("--pair", action="append", default=[], metavar="SPEC",
                   help="audit only this pair (as printed with a finding); repeatable")
    p.add_argument("--sweep", metavar="PARAM=V1,V2,...",
                   help="audit each method at these values of one parameter (e.g. iterations=1,10,100 for mcmc)")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                   help="write the results as JSON to PATH (or stdout without PATH)")
    p.add_argument("--out", metavar="DB", help=f"store the results next to a results database (DB{AUDIT_SUFFIX}) "
                                              "for its HTML report")
    p.add_argument("--plot", metavar="PATH", help="figure: worst figure per method, or the --sweep curve (matplotlib)")
    p.set_defaults(func=cmd_audit)


def _budget(args):
    from dataclasses import replace

    from dpbench.bench.audit import DEFAULT_BUDGET, QUICK_BUDGET

    MAX_BUDGET = 10_000  # 80x the default; each pair keeps its two small data sets

    b = QUICK_BUDGET if args.quick else DEFAULT_BUDGET
    if args.budget is not None:
        if not 1 <= args.budget <= MAX_BUDGET:  # pairs are kept for the report: bound the memory
            raise UserInputError(f"--budget {args.budget}: give between 1 and {MAX_BUDGET} pairs")
        ratio = DEFAULT_BUDGET.pairs // DEFAULT_BUDGET.mc_pairs
        b = replace(b, pairs=args.budget, climb=args.budget, mc_pairs=max(1, args.budget // ratio),
                    mc_climb=args.budget // (ratio * 4))
    if args.draws is not None:
        if not 100 <= args.draws <= 10_000_000:
            raise UserInputError(f"--draws {args.draws}: give between 100 and 10000000 draws per side")
        b = replace(b, final_draws=args.draws, search_draws=max(100, args.draws // 30))
    return b


def _sweep_values(text):
    key, _, vals = (text or "").partition("=")
    try:
        values = [int(v) if v.strip().lstrip("-").isdigit() else float(v) for v in vals.split(",")]
    except ValueError:
        values = []
    if not key or not values:
        raise UserInputError(f"--sweep {text!r}: write PARAM=V1,V2,... (e.g. iterations=1,10,100,1000)")
    return key.strip(), values


def _fmt(v, digits=3):
    if v is None:
        return "–"
    if isinstance(v, float) and math.isinf(v):
        return "∞" if v > 0 else "−∞"
    return f"{v:.{digits}g}"


def worst_text(a) -> str:
    """The worst figure of one audit as the table shows it."""
    w = a.worst
    if w is None:
        return "–"
    if a.mode == "exact":
        return f"loss {_fmt(w.loss / a.epsilon)}·ε, hockey-stick {_fmt(w.hockey_stick)}"
    return f"ε ≥ {_fmt(w.epsilon_lb)} ({a.confidence:.0%}, N = {a.draws} per side)"


def audit_table(audits) -> Table:
    """The rich table: selector, guarantee audited, mode, pairs, worst figure, verdict."""
    t = Table(title="privacy audit (replace-one neighbours)")
    for col in ("selector", "DP type", "guarantee audited", "mode", "pairs", "worst pair", "verdict"):
        t.add_column(col)
    for a in audits:
        claims = "; ".join(a.claims) or "–"
        if a.verdict == "nothing claimed":
            claims += " (nothing to violate: figures for information)"
        style = {"FINDING": "bold red", "ok": "green"}.get(a.verdict, "yellow")
        t.add_row(escape(a.method), a.dp_type, escape(claims), a.mode, str(a.pairs_tried), escape(worst_text(a)),
                  f"[{style}]{a.verdict}[/{style}]")
    return t


def to_json(audits, sweep=None) -> dict:
    out = {"audits": [a.to_dict() for a in audits]}
    if sweep is not None:
        out["sweep"] = {"param": sweep["param"], "values": sweep["values"],
                        "audits": [a.to_dict() for a in sweep["audits"]],
                        "reference": sweep["reference"].to_dict() if sweep["reference"] else None}
    return out


def _dump(obj) -> str:
    return json.dumps(obj, indent=1, default=lambda v: None, allow_nan=True)


def plot_audit(path, audits, sweep=None) -> None:
    """Write the audit figure: the ``--sweep`` curve (ε lower bound vs the parameter, the exact
    reference and the claimed ε) or, without a sweep, the worst figure per method over ε."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserInputError("--plot needs matplotlib: pip install 'dpbench[plot]'") from None
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    if sweep is not None:
        eps = sweep["audits"][0].epsilon
        lbs = [max(a.worst.epsilon_lb, 0.0) if a.worst and a.worst.epsilon_lb is not None else
               (a.worst.loss if a.worst else float("nan")) for a in sweep["audits"]]
        ax.plot(sweep["values"], lbs, "o-", label=f"{sweep['audits'][0].method}: ε lower bound "
                                                   f"({sweep['audits'][0].confidence or 0:.0%})")
        ref = sweep["reference"]
        if ref is not None and ref.worst is not None:
            ax.axhline(ref.worst.loss, color="k", ls="--", label=f"exact {ref.method} loss on that pair")
        ax.axhline(eps, color="r", ls=":", label="ε requested")
        ax.set_xscale("log")
        ax.set_xlabel(sweep["param"])
        ax.set_ylabel("privacy loss (nats)")
    else:
        names = [a.method for a in audits]
        vals = [(a.worst.loss if a.mode == "exact" else max(a.worst.epsilon_lb, 0.0)) / a.epsilon
                if a.worst else 0.0 for a in audits]
        vals = [min(v, 10.0) for v in vals]
        colors = ["tab:red" if a.finding else "tab:blue" for a in audits]
        ax.barh(names, vals, color=colors)
        ax.axvline(1.0, color="k", ls=":")
        ax.set_xlabel("worst loss / ε (exact) or ε lower bound / ε (Monte-Carlo); capped at 10")
    ax.legend(loc="best", fontsize=8) if sweep is not None else None
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def cmd_audit(args) -> int:
    """Run the audit, print the table, write JSON / plot / stored results; 1 on a finding."""
    from dpbench.bench.audit import AuditSetup, audit_methods, sweep
    from dpbench.cli.shared import check_output_path, console, err_console

    names = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not names:
        raise UserInputError("--methods is empty: name at least one selector (`dpbench list selectors`)")
    if args.seed < 0:
        raise UserInputError(f"--seed {args.seed}: give a seed >= 0")
    setup = AuditSetup(epsilon=args.epsilon, delta=args.delta, lam=args.lam, confidence=args.confidence)
    budget = _budget(args)
    for path, flag in ((args.plot, "--plot"), (None if args.json in (None, "-") else args.json, "--json")):
        if path:
            check_output_path(path, flag)
    sw = None
    if args.sweep:
        if len(names) != 1:
            raise UserInputError("--sweep audits one method: give a single name to --methods")
        key, values = _sweep_values(args.sweep)
        sw = sweep(names[0], key, values, setup, budget, args.seed, pairs=args.pair or None)
        audits = sw["audits"]
    else:
        quoted = " ".join(shlex.quote(a) for a in ("dpbench", "audit", "--methods", "{method}", "--epsilon",
                                                    f"{args.epsilon:g}", "--delta", f"{args.delta:g}", "--lam",
                                                    f"{args.lam:g}", "--seed", str(args.seed)))
        audits = audit_methods(names, setup, budget, args.seed, pairs=args.pair or None, command=quoted,
                               progress=lambda n: err_console.print(f"auditing {escape(n)} ...", highlight=False))
    data = to_json(audits, sw)
    if args.json == "-":
        print(_dump(data))
    else:
        console.print(audit_table(audits))
        for a in audits:
            if a.finding:
                console.print(f"[bold red]finding[/bold red] {escape(a.method)}: {escape(worst_text(a))} "
                              f"against {escape(a.worst.claim)}; reproduce with:\n  {escape(a.reproduce)}",
                              highlight=False, soft_wrap=True)
        if args.json:
            Path(args.json).write_text(_dump(data))
    if args.out:
        Path(str(args.out) + AUDIT_SUFFIX).write_text(_dump(data))
    if args.plot:
        plot_audit(args.plot, audits, sw)
    return 1 if any(a.finding for a in audits) else 0
