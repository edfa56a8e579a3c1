"""The ``dpbench`` command line: compare, list, export, report, bss.

User errors (bad input, unknown names) print one line and exit with status 2; nothing
already computed is lost because every finished trial is already in the database.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..trial import DEFAULT_LAM
from ..errors import DPBenchError, UserInputError

# Outside a terminal (logs, CI) rich would wrap the table at 80 columns; keep rows whole.
console = Console() if Console().is_terminal else Console(width=160)
err_console = Console(stderr=True)

#: The small built-in default of ``dpbench compare``: the paper's design scaled down so
#: that a first run takes seconds.
COMPARE_DEFAULTS = {
    "methods": None,
    "generator": "toeplitz",
    "dataset": None,
    "data": None,
    "target": None,
    "standardize": "standardize",
    "design": None,
    "n": None,  # the built-in default below applies to the toeplitz generator only
    "p": None,
    "s": None,  # 3 for the built-in simulation default, 5 on real data (DP-SIS paper's k)
    "snr": None,
    "rho": None,
    "epsilon": [1.0],
    "trials": 10,
    "draws": 100,
    "seed": 0,
    "b_x": 0.5,
    "b_y": 0.5,
    "r": 1.1,
    "lam": DEFAULT_LAM,
    "sensitivity": "tight",
    "solver": "highs",
    "reference": None,
    "param": [],
    "out": "dpbench-results.db",
    "json": None,
    "jobs": 1,
    "backend": "serial",
    "scheduler": None,
}


BUILTIN_DEFAULT = {"n": [200, 400, 800], "p": [20], "s": [3]}


def _list_of(conv, label):
    def parse(text):
        if isinstance(text, (list, tuple)):
            items = list(text)
        else:
            items = [t for t in str(text).replace(" ", ",").split(",") if t != ""]
        if not items:
            raise argparse.ArgumentTypeError(f"empty {label} list; give e.g. --{label} 1,2")
        try:
            return [conv(t) for t in items]
        except ValueError:
            raise argparse.ArgumentTypeError(f"--{label} {text!r} is not a comma-separated list of numbers") from None

    return parse


def _int(text):
    f = float(text)
    if f != int(f):
        raise ValueError(text)
    return int(f)


def _add_compare(sub):
    p = sub.add_parser("compare", help="run selectors on the same trials and tabulate recovery",
                       description="Run every method on the same trials, the same epsilon and the same "
                                   "(replace-one) neighbouring relation; store each trial in SQLite and "
                                   "print a table of exact recovery, F1 and time. With only --methods it "
                                   "runs a small built-in default (toeplitz design, p=20, s=3, n=200,400,800).")
    p.add_argument("--methods", "-m", help="comma-separated selector names (see `dpbench list`)")
    p.add_argument("--config", help="TOML file with any of these options (command-line options override it)")
    p.add_argument("--generator", help="data generator (default toeplitz)")
    p.add_argument("--dataset", help="a registered real data set instead of a generator (see `dpbench list`)")
    p.add_argument("--data", help="a user data file (.csv, .tsv, .parquet, .npz) instead of a generator")
    p.add_argument("--target", help="response column of --data")
    p.add_argument("--standardize", choices=["none", "center", "standardize"],
                   help="preprocessing of real data before clipping (default standardize; uses the data, "
                        "so it is NOT private)")
    p.add_argument("--design", help="design matrix for the planted generator (a data set name, e.g. nci60)")
    p.add_argument("--n", type=_list_of(_int, "n"), help="list of sample sizes, e.g. 100,200,400")
    p.add_argument("--p", type=_list_of(_int, "p"), help="number of features (list allowed)")
    p.add_argument("--s", type=_list_of(_int, "s"), help="sparsity level s (list allowed)")
    p.add_argument("--snr", type=_list_of(float, "snr"), help="signal-to-noise ratio (generator default 5)")
    p.add_argument("--rho", type=_list_of(float, "rho"), help="Toeplitz correlation rho (generator default 0.1)")
    p.add_argument("--epsilon", "--eps", type=_list_of(float, "epsilon"), help="privacy parameter(s) epsilon")
    p.add_argument("--trials", type=_int, help="trials per setting (default 10)")
    p.add_argument("--draws", type=_int, help="private outputs per trial (default 100)")
    p.add_argument("--seed", type=_int, help="run seed (default 0)")
    p.add_argument("--b-x", dest="b_x", type=float, help="clipping bound on |x_ij| (default 0.5)")
    p.add_argument("--b-y", dest="b_y", type=float, help="clipping bound on |y_i| (default 0.5)")
    p.add_argument("--r", type=float, help="l2 bound on the coefficients (default 1.1)")
    p.add_argument("--lam", type=float, help=f"ridge penalty Lambda (default {DEFAULT_LAM:g}; the OA solvers need Lambda > 0)")
    p.add_argument("--sensitivity", choices=["tight", "paper"],
                   help="Delta = (b_y + b_x r sqrt(s))^2 (tight, default) or 2b_y^2 + 2b_x^2 r^2 s (paper)")
    p.add_argument("--solver", help="best-subset oracle backend (default highs)")
    p.add_argument("--reference", choices=["true", "bss", "lasso", "sis"],
                   help="support to score against: true (simulations, default) or bss/lasso/sis (real data)")
    p.add_argument("--param", action="append",
                   help="per-plugin parameter NAME.KEY=VALUE, repeatable (e.g. exhaustive.limit=1e7, toeplitz.rho=0.2)")
    p.add_argument("--out", help="results database (SQLite; default dpbench-results.db). Re-running resumes.")
    p.add_argument("--json", help="also write the summary table as JSON to this path")
    p.add_argument("--jobs", type=_int, help="run trials in parallel on this many processes (joblib)")
    p.add_argument("--backend", choices=["serial", "dask"], help="execution backend")
    p.add_argument("--scheduler", help="dask.distributed scheduler address (default: a LocalCluster)")
    p.set_defaults(func=cmd_compare)


def _merge_options(args) -> dict:
    opts = dict(COMPARE_DEFAULTS)
    if getattr(args, "config", None):
        from ..runner.config import load_config

        from_file = load_config(args.config, COMPARE_DEFAULTS)
        # per-plugin parameters merge (the command line's come last and win); the file's
        # parameters for plugins this run does not use are ignored, not errors
        opts["config_param"] = from_file.pop("param", [])
        opts.update(from_file)
    for k in COMPARE_DEFAULTS:
        v = getattr(args, k, None)
        if v is not None:
            opts[k] = v
    return opts


def build_run_config(opts: dict):
    """Turn merged compare options into a :class:`dpbench.runner.execute.RunConfig` (validated)."""
    from ..plugin_manager import registry
    from ..runner.execute import RunConfig, data_settings

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
    gen_name = opts.get("generator") or "toeplitz"
    items = [(i, True) for i in opts.get("config_param") or []] + [(i, False) for i in opts.get("param") or []]
    for item, from_file in items:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise UserInputError(f"--param {item!r} must look like NAME.KEY=VALUE, e.g. exhaustive.limit=1000000")
        lhs, value = item.split("=", 1)
        name, key = lhs.split(".", 1)
        if name in methods:
            method_params.setdefault(name, {})[key] = value
        elif name == gen_name and not opts.get("dataset"):
            gen_params[key] = value
        elif name == (opts.get("solver") or "highs"):
            solver_params[key] = value
        elif from_file and any(name in reg.names(kind) for kind in ("selector", "generator", "solver")):
            continue
        else:
            raise UserInputError(f"--param {item!r}: {name!r} is neither one of the methods "
                                 f"({', '.join(methods)}), the generator ({gen_name}) nor the solver")
    if opts.get("dataset") or opts.get("data"):
        if opts.get("dataset") and opts.get("data"):
            raise UserInputError("give either --dataset or --data, not both")
        s_list = opts["s"] or [5]
        source = ({"dataset": opts["dataset"]} if opts.get("dataset")
                  else {"data": str(opts["data"]), "target": opts.get("target")})
        data = [{**source, "s": s, "standardize": opts["standardize"]} for s in s_list]
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
            gen_params["design"] = opts["design"]
        for k, v in gen_params.items():
            grid[k] = [v]
        data = data_settings(gen_name, grid)
        reference = opts.get("reference") or "true"
    cfg = RunConfig(
        methods=methods, data=data, epsilons=list(opts["epsilon"]), trials=opts["trials"],
        draws=opts["draws"], seed=opts["seed"], method_params=method_params, b_x=opts["b_x"],
        b_y=opts["b_y"], r=opts["r"], lam=opts["lam"], sensitivity=opts["sensitivity"],
        solver=opts["solver"], solver_params=solver_params, reference=reference,
    )
    cfg.validate()
    return cfg


def cmd_compare(args) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..evaluation.metrics import summarize
    from ..runner.execute import execute, plan, row_key
    from ..results.store import ResultStore

    opts = _merge_options(args)
    cfg = build_run_config(opts)
    store = ResultStore(opts["out"])
    done = store.done_keys()
    tasks = plan(cfg, done)
    keys = {row_key(cfg, st, t, m, e) for st in cfg.data for t in range(cfg.trials)
            for m in cfg.methods for e in cfg.epsilons}
    resumed = len(keys & done)
    if resumed:
        err_console.print(f"[dim]resuming: {resumed} of {len(keys)} results already in {opts['out']}[/dim]")
    try:
        with Progress(TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=err_console, transient=True) as progress:
            bar = progress.add_task("trials", total=len(tasks))
            execute(cfg, store, tasks, on_task_done=lambda rows: progress.advance(bar),
                    jobs=opts["jobs"], backend=opts["backend"], scheduler=opts["scheduler"])
    except KeyboardInterrupt:
        store.close()
        err_console.print(f"\ninterrupted: finished trials are saved in {opts['out']}; "
                          "run the same command again to resume.")
        return 130
    rows = [r for r in store.rows() if r["key"] in keys]
    for r in rows:
        r["setting"] = json.loads(r["setting"])
        r["config"] = r["config"]
    summary = summarize(rows)
    print_summary(summary, cfg)
    if any(("dataset" in st or "data" in st) and st.get("standardize", "none") != "none" for st in cfg.data):
        from ..data_io import NOT_PRIVATE_NOTICE

        err_console.print("[yellow]note:[/yellow] --standardize " + cfg.data[0]["standardize"] + ": " +
                          NOT_PRIVATE_NOTICE.format(sd=" and standard deviations"
                                                    if cfg.data[0]["standardize"] == "standardize" else ""))
    failed = [r for r in rows if r["status"] == "failed"]
    if failed:
        first = failed[0]
        err_console.print(f"[yellow]{len(failed)} failed result(s); first: {first['method']} trial "
                          f"{first['trial']}: {first['error']}[/yellow]")
    if opts.get("json"):
        Path(opts["json"]).write_text(json.dumps(_json_summary(summary), indent=1))
    store.close()
    return 0


def _json_summary(summary):
    keep = ("method", "data", "n", "p", "s", "epsilon", "trials", "recovery_rate", "recovery_se",
            "recovery_prob", "f1", "topk", "time_median_s", "dp_type", "epsilon_spent", "gap_condition", "reference",
            "failed", "uncertified")
    return [{k: _nan_to_none(d[k]) for k in keep} | {"setting": d["setting"]} for d in summary]


def _nan_to_none(v):
    return None if isinstance(v, float) and math.isnan(v) else v


def _fmt(v, spec=".3f"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return format(v, spec)


def dp_label(d) -> str:
    """DP type of a summary row, with the epsilon' actually guaranteed and mistakes' gap condition."""
    dp = d["dp_type"]
    if d.get("epsilon_spent") and d["epsilon_spent"] != d["epsilon"]:
        dp += f" (ε'={d['epsilon_spent']:.3g})"
    if d.get("gap_condition"):
        dp += f" (gap cond. {d['gap_condition']})"
    return dp


def print_summary(summary, cfg=None, out=console) -> None:
    """Print the per-setting summary as a rich table."""
    table = Table(title="dpbench compare", header_style="bold")
    for col, just in (("method", "left"), ("data", "left"), ("n", "right"), ("p", "right"), ("s", "right"),
                      ("ε", "right"), ("trials", "right"), ("recovery ± se", "right"),
                      ("P(exact)", "right"), ("F1", "right"), ("median s", "right"),
                      ("DP type", "left"), ("failed", "right"), ("uncert.", "right")):
        table.add_column(col, justify=just, no_wrap=True)
    for d in summary:
        rate = "—" if math.isnan(d["recovery_rate"]) else (
            f"{d['recovery_rate']:.3f} ± {_fmt(d['recovery_se'])}")
        dp = dp_label(d)
        table.add_row(d["method"], d["data"], str(d["n"]), str(d["p"]), str(d["s"]), f"{d['epsilon']:g}",
                      str(d["trials"]), rate, _fmt(d["recovery_prob"]), _fmt(d["f1"]),
                      _fmt(d["time_median_s"], ".3g"), dp, str(d["failed"]),
                      f"[red]{d['uncertified']}[/red]" if d["uncertified"] else "0")
    out.print(table)
    if cfg is not None:
        ref = {"true": "the true support", "bss": "the certified non-private best subset",
               "lasso": "the non-private Lasso top-s", "sis": "the non-private SIS top-s"}[cfg.reference]
        out.print(f"[dim]neighbouring data sets: replace-one · b_x={cfg.b_x:g}, b_y={cfg.b_y:g}, r={cfg.r:g}, "
                  f"Λ={cfg.lam:g}, Δ: {cfg.sensitivity} · reference: {ref} · recovery: mean over trials of "
                  f"the per-trial exact-recovery rate over {cfg.draws} draws · P(exact): the mechanism's "
                  f"analytic probability of exact recovery (— where not available) · median s: preparation + "
                  f"draws per trial; work shared between methods of a trial (e.g. topr/mistakes oracle calls) "
                  f"is charged to the first method that needs it · gap cond.: trials where mistakes' "
                  f"condition R(S2) - R(S1) > 2Δ for pure DP held[/dim]")


def _add_list(sub):
    p = sub.add_parser("list", help="show registered selectors, generators, solvers and data sets")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=cmd_list)


def cmd_list(args) -> int:
    from ..plugin_manager import registry

    info = registry().describe()
    if args.json:
        print(json.dumps(info, indent=1, default=str))
        return 0
    for kind, entries in info.items():
        table = Table(title=kind, header_style="bold", title_justify="left")
        table.add_column("name")
        if kind == "selectors":
            table.add_column("DP type")
            table.add_column("neighbours")
        table.add_column("description")
        table.add_column("parameters")
        table.add_column("distribution")
        for e in entries:
            params = ", ".join(f"{k}={v['default']}" for k, v in e.get("params", {}).items())
            cells = [e["name"]]
            if kind == "selectors":
                cells += [e["dp_type"], e["neighbouring"]]
            cells += [e.get("summary", ""), params, e["distribution"]]
            table.add_row(*cells)
        console.print(table)
    return 0


def _add_export(sub):
    p = sub.add_parser("export", help="write a results database to CSV or JSON")
    p.add_argument("database", help="results database written by `dpbench compare --out`")
    p.add_argument("-o", "--output", required=True, help="output file (.csv or .json)")
    p.add_argument("--format", choices=["csv", "json"], help="default: from the output suffix")
    p.set_defaults(func=cmd_export)


def _open_existing(path):
    from ..results.store import ResultStore

    if not Path(path).exists():
        raise UserInputError(f"results database {path} does not exist; run `dpbench compare --out {path}` first")
    return ResultStore(path)


def cmd_export(args) -> int:
    store = _open_existing(args.database)
    count = store.export(args.output, args.format)
    err_console.print(f"wrote {count} rows to {args.output}")
    return 0


def _add_report(sub):
    p = sub.add_parser("report", help="print (or write as Markdown) the summary of a results database")
    p.add_argument("database")
    p.add_argument("--markdown", "-o", help="write the table as Markdown to this file")
    p.set_defaults(func=cmd_report)


def summary_from_db(path):
    """Summary rows of every configuration stored in a results database."""
    from ..evaluation.metrics import summarize

    store = _open_existing(path)
    rows = store.rows()
    store.close()
    for r in rows:
        r["setting"] = json.loads(r["setting"])
    return summarize(rows)


def cmd_report(args) -> int:
    summary = summary_from_db(args.database)
    if args.markdown:
        Path(args.markdown).write_text(markdown_table(summary))
        err_console.print(f"wrote {args.markdown}")
    else:
        print_summary(summary)
    return 0


def markdown_table(summary) -> str:
    """The summary as a GitHub-flavoured Markdown table."""
    head = ["method", "data", "n", "p", "s", "ε", "trials", "exact recovery ± se", "P(exact) analytic",
            "F1", "median s", "DP type", "reference", "failed", "uncertified"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d in summary:
        lines.append("| " + " | ".join([
            d["method"], d["data"], str(d["n"]), str(d["p"]), str(d["s"]), f"{d['epsilon']:g}", str(d["trials"]),
            f"{_fmt(d['recovery_rate'])} ± {_fmt(d['recovery_se'])}", _fmt(d["recovery_prob"]), _fmt(d["f1"]),
            _fmt(d["time_median_s"], ".3g"), dp_label(d), d["reference"], str(d["failed"]),
            str(d["uncertified"])]) + " |")
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    _add_compare(sub)
    _add_list(sub)
    _add_export(sub)
    _add_report(sub)
    from . import bss, plot  # they use helpers of this module, so they are imported last

    bss.add_parser(sub)
    plot.add_parser(sub)
    return parser


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    err_console.print(f"[yellow]dpbench: warning:[/yellow] {message}", highlight=False, soft_wrap=True)


def main(argv=None) -> int:
    """Entry point of the ``dpbench`` console script; returns the exit status."""
    import warnings

    warnings.showwarning = _one_line_warning
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except DPBenchError as exc:
        err_console.print(f"[bold red]dpbench: error:[/bold red] {exc}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
