"""``dpbench list [KIND ...]``: the registered plugins with their parameters, DP type and distribution."""

from __future__ import annotations

import json

from rich.markup import escape
from rich.table import Table

from dpbench.core.errors import UserInputError

#: Kinds of plugin ``dpbench list KIND`` shows (the registry's, plural).
LIST_KINDS = ("selectors", "generators", "solvers", "datasets", "losses", "estimators")


def add_parser(sub) -> None:
    """Add the ``list`` subcommand to an argparse subparsers object."""
    p = sub.add_parser("list", help="show registered selectors, generators, solvers and data sets")
    p.add_argument("kinds", nargs="*", metavar="KIND",
                   help=f"only these kinds ({', '.join(LIST_KINDS)}); default all")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=cmd_list)


def cmd_list(args) -> int:
    """Print the registry (or only ``args.kinds``) as tables, or as JSON with ``--json``.

    Raises
    ------
    UserInputError
        A kind that is not one of the registry's.
    """
    from dpbench.bench.registry import registry
    from dpbench.cli.shared import console  # the command line's stdout console (100 columns off a terminal)

    info = registry().describe()
    kinds = [k if k in info or k + "s" not in info else k + "s" for k in getattr(args, "kinds", None) or []]
    unknown = [k for k in kinds if k not in info]
    if unknown:
        raise UserInputError(f"dpbench list {unknown[0]}: not a kind of plugin; give one or more of "
                             f"{', '.join(info)}, or none for all")
    if kinds:
        info = {k: v for k, v in info.items() if k in kinds}
    if args.json:
        print(json.dumps(info, indent=1, default=str))
        return 0
    for kind, entries in info.items():
        table = Table(title=kind, header_style="bold", title_justify="left")
        # fold, not rich's default ellipsis: a long word ("Metropolis-Hastings", "enum_limit=2000000")
        # was cut to "Metropolis-Hasti…", hiding a parameter's default
        heads = ["name"] + (["DP type", "neighbours"] if kind == "selectors" else []) + [
            "description", "parameters", "distribution"]
        rows = []
        for e in entries:
            params = ", ".join(f"{k}={v['default']}" for k, v in e.get("params", {}).items())
            cells = [e["name"]]
            if kind == "selectors":
                cells += [e["dp_type"], e["neighbouring"]]
            cells += [e.get("summary", ""), params, e["distribution"]]
            rows.append([str(c) for c in cells])
        for j, h in enumerate(heads):
            # a column is at least as wide as its longest word (up to 30): cells wrap between words,
            # never inside a number ("limit=2000" over "00")
            longest = max([len(w) for r in rows for w in r[j].split()] + [len(h)])
            table.add_column(h, overflow="fold", min_width=min(longest, 30))
        for cells in rows:
            table.add_row(*[escape(c) for c in cells])  # third-party text is not markup
        from dpbench.cli.tables import print_table

        print_table(console, table)  # wider than the console rather than cropping the last column
    return 0
