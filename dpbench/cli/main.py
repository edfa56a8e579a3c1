"""The ``dpbench`` command line: compare, list, export, report, bss, plot, audit.

User errors (bad input, unknown names) print one line and exit with status 2; nothing
already computed is lost because every finished trial is already in the database.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from rich.markup import escape

from dpbench.core.errors import DPBenchError, UserInputError
from dpbench.bench.config import build_run_configs, merge_options, name_the_file
from dpbench.cli.output import machine_stdout, stdout_to_devnull
from dpbench.cli.shared import GUARANTEE_NOTE, check_output_path, console, err_console
from dpbench.cli.resources import FORCED_JOBS_PER_CORE, check_jobs

def _cli_type(opt):
    """argparse ``type`` for one option: its converter, with argparse's error type."""
    def parse(text):
        try:
            return opt.parse(text, "")  # argparse's message names the flag: "argument --s: '2.5' must be ..."
        except UserInputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = opt.name  # argparse names the type in some messages
    return parse


def _add_compare(sub):
    from dpbench.bench.config.options import OPTIONS

    p = sub.add_parser("compare", help="run selectors on the same trials and tabulate recovery",
                       description="Run every method on the same trials, the same epsilon and the same "
                                   "(replace-one) neighbouring relation; store each trial in SQLite and "
                                   "print a table of exact recovery, F1 and time. With only --methods it "
                                   "runs a small built-in default (toeplitz design, p=20, s=3, n=200,400,800). Limits, checked "
                                   "before the first trial: --jobs at most the usable cores (--force-jobs: up to "
                                   f"{FORCED_JOBS_PER_CORE} per core); the run's memory estimate (data and --draws "
                                   "of each worker's trial) must fit in the available memory and is shown above "
                                   "1 GiB. SIGTERM and Ctrl-C keep the finished trials (exit 143 / 130).")
    p.add_argument("--config", help="TOML file with any of these options (command-line options override it)")
    for opt in OPTIONS:
        if opt.name == "param":  # repeatable, one NAME.KEY=VALUE each
            p.add_argument(opt.flag, action="append", help=opt.help)
            continue
        p.add_argument(opt.flag, *opt.flags, dest=opt.name, type=_cli_type(opt), metavar=opt.name.upper(),
                       help=opt.help + (f" ({', '.join(opt.choices)})" if opt.choices else ""))
    p.add_argument("--retry-failed", dest="retry_failed", action="store_true",
                   help="re-run the rows of --out that failed (otherwise a failed row counts as done)")
    p.add_argument("--retry-uncertified", dest="retry_uncertified", action="store_true",
                   help="re-run only the stored rows whose status is uncertified, or whose trial had no "
                        "certified bss reference (e.g. with a larger --param topr.node_limit=... or "
                        "highs.node_limit=...); certified rows are not recomputed")
    p.add_argument("--force-jobs", dest="force_jobs", action="store_true",
                   help=f"allow --jobs above the usable cores (at most {FORCED_JOBS_PER_CORE} per core)")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    from dpbench.bench.evaluation.metrics import summarize
    from dpbench.bench.keys import row_key
    from dpbench.bench.run import execute, plan
    from dpbench.bench.results.store import ResultStore

    opts = merge_options(args)
    try:
        cfgs = build_run_configs(opts)
    except UserInputError as exc:
        raise name_the_file(exc, opts) from None
    if opts.get("json"):
        check_output_path(opts["json"], "--json")
    # a missing directory is a typo far more often than a wish (a config's out was created anywhere)
    where = f"config {opts['config_keys']['out']}: out =" if "out" in opts.get("config_keys", {}) else "--out"
    check_output_path(opts["out"], where)
    if getattr(args, "solver", None) is not None or "solver" in (opts.get("config_keys") or {}):
        from dpbench.bench.config import check_solver_used

        check_solver_used(cfgs, opts["solver"])
    if opts.get("scheduler") and opts.get("backend") != "dask":  # it was ignored without a word
        raise UserInputError(f"--scheduler {opts['scheduler']} applies to --backend dask only; add --backend dask "
                             "or drop --scheduler")
    opts["jobs"] = check_jobs(opts["jobs"], getattr(args, "force_jobs", False))
    from dpbench.cli.resources import check_resources

    check_resources(cfgs, opts["jobs"], err_console)
    if opts.get("scheduler"):
        from dpbench.bench.backends import check_scheduler_address

        check_scheduler_address(opts["scheduler"])
    store = ResultStore(opts["out"])
    done = store.done_keys()
    if getattr(args, "retry_failed", False):
        done -= store.failed_keys()  # the retry's rows replace the failed ones (ResultStore.write)
    if getattr(args, "retry_uncertified", False):
        # e.g. with a larger node_limit: work budgets are not part of a row's key
        # (runner.BUDGET_PARAMS); certified rows are kept as they are.
        done -= store.uncertified_keys()
    # the grid's points run one after another into the same database
    plans = [(cfg, plan(cfg, done)) for cfg in cfgs]
    labels = {row_key(cfg, st, t, m, e): m for cfg in cfgs for st in cfg.data for t in range(cfg.trials)
              for m in cfg.methods for e in cfg.epsilons}
    keys = set(labels)
    resumed = len(keys & done)
    if resumed:
        err_console.print(f"[dim]resuming: {resumed} of {len(keys)} results already in {escape(str(opts['out']))}[/dim]")
        # A work limit (or where the work runs) is not part of a row's identity: say so when this run
        # asks for other values than the stored rows had, else the new value looks ignored.
        stored = store.labels(keys & done)
        for old, new in sorted({(stored[k], labels[k]) for k in stored if stored[k] != labels[k]}):
            err_console.print(f"resuming: the stored rows of {new} were computed as {old}; work limits (and workers, "
                              "split_parts, split_after: where the work runs) are not part of a result's identity, so "
                              "they are kept (--retry-uncertified reruns the uncertified ones with this run's limits; "
                              "another --out starts afresh)",
                              style="yellow", markup=False, highlight=False, soft_wrap=True)
    for flag, which in (("retry_failed", "failed"), ("retry_uncertified", "uncertified")):
        if getattr(args, flag, False):  # else the run silently printed the stored table again
            retried = len(keys & getattr(store, f"{which}_keys")())
            err_console.print(f"[dim]--{flag.replace('_', '-')}: {retried} {which} result(s) of this run in "
                              f"{escape(str(opts['out']))} to run again[/dim]")
    try:
        from dpbench.cli.progress import RunProgress

        recorded = []

        def task_done(rows, params):
            if not recorded:  # the command and package versions, once the run has written a trial
                store.record_run(getattr(args, "argv", None) or sys.argv[1:])
                recorded.append(True)
            progress.task_done(rows, params)

        with RunProgress(err_console, sum(len(tasks) for _, tasks in plans), jobs=opts["jobs"],
                         backend=opts["backend"]) as progress:
            for cfg, tasks in plans:
                execute(cfg, store, tasks, on_event=progress.event,
                        on_task_done=lambda rows, params=cfg.method_params: task_done(rows, params),
                        jobs=opts["jobs"], backend=opts["backend"], scheduler=opts["scheduler"])
    except (KeyboardInterrupt, Exception) as exc:  # SIGINT or SIGTERM (runner.signals), on every backend
        from dpbench.bench.signals import Interrupted, exit_status, received

        if not isinstance(exc, KeyboardInterrupt):
            if received() is None:
                raise
            exc = Interrupted(received())  # a worker the job's signal reached died first
        store.close()
        err_console.print(f"\ninterrupted ({exc or 'SIGINT'}): finished trials are saved in "
                          f"{escape(str(opts['out']))}; run the same command again to resume.", soft_wrap=True)
        return exit_status(exc)
    cfg = cfgs[0]
    rows = [r for r in store.rows() if r["key"] in keys]
    for r in rows:
        r["setting"] = json.loads(r["setting"])
        r["config"] = r["config"]
    summary = summarize(rows)
    print_frame_summary(rows, cfg)
    failed = [r for r in rows if r["status"] == "failed"]
    if failed:
        first = failed[0]
        err_console.print(f"[yellow]{len(failed)} failed result(s); first: {escape(first['label'] or first['method'])} "
                          f"trial {first['trial']}: {escape(str(first['error']))}[/yellow]")
    if opts.get("json"):
        Path(opts["json"]).write_text(json.dumps(_json_summary(summary), indent=1))
    store.close()
    return 0


def _json_summary(summary):
    keep = ("method", "label", "guaranteed", "guarantee", "data", "n", "p", "s", "epsilon", "delta", "trials",
            "total_trials", "recovery_rate", "recovery_se", "recovery_prob", "f1", "topk", "rank_top", "rank_great",
            "rank_good", "time_median_s",
            "dp_type", "epsilon_spent", "reference", "failed", "uncertified", "utility_loss",
            "test_mse", "test_accuracy")
    return [{k: _nan_to_none(d[k]) for k in keep} | {"setting": d["setting"], "config": _config(d)}
            for d in summary]


def _config(d) -> dict:
    """A summary row's run configuration, with ``solver`` the oracle that ran (as the table's footer)."""
    from dpbench.bench.results.frame import solver_that_ran

    c = d.get("config") or {}
    c = dict(json.loads(c) if isinstance(c, str) else c)
    if isinstance(c.get("solver"), str) and c.get("loss"):
        c["solver"] = solver_that_ran(c["solver"], c["loss"])
    return c


def _nan_to_none(v):
    return None if isinstance(v, float) and math.isnan(v) else v


#: Footnote of the table: what the guarantee column and the split mean.
def _add_export(sub):
    p = sub.add_parser("export", help="write a results database as a tidy table (CSV, JSON or Parquet)",
                       description="One row per (data setting, trial, method, epsilon), every setting, "
                                   "configuration and diagnostic field in its own column (the frame of "
                                   "dpbench.load_results).")
    p.add_argument("database", help="results database written by `dpbench compare --out`")
    p.add_argument("-o", "--output", required=True, help="output file (.csv, .json or .parquet), or - for standard "
                   "output (CSV unless --format)")
    p.add_argument("--format", choices=["csv", "json", "parquet"], help="default: from the output suffix")
    p.add_argument("--supports", action="store_true", help="include the per-draw supports (large)")
    p.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
    from dpbench.bench.results.frame import export_frame, load_results

    if args.output == "-":  # the table on stdout (a file named '-' was written before)
        df = load_results(args.database, supports=args.supports)
        with machine_stdout() as out:
            count = export_frame(df, out, args.format or "csv")
        err_console.print(f"wrote {count} rows to standard output", soft_wrap=True)
        return 0
    check_output_path(args.output, "-o")
    df = load_results(args.database, supports=args.supports)
    count = export_frame(df, args.output, args.format)
    err_console.print(f"wrote {count} rows to {escape(str(args.output))}", soft_wrap=True)
    return 0


def _add_report(sub):
    p = sub.add_parser("report", help="print the summary of a results database, or write it as Markdown or HTML")
    p.add_argument("database")
    p.add_argument("--markdown", "-o", help="write the table as Markdown to this file (an .html name writes the "
                   "HTML report, as --html)")
    p.add_argument("--html", help="write a self-contained HTML report (table, figures, configuration) to this file")
    p.add_argument("--interval", choices=["wilson", "clopper-pearson", "bootstrap"], default="wilson",
                   help="interval of the exact-recovery rate (default wilson over draws; bootstrap over trials)")
    p.set_defaults(func=cmd_report)


def print_frame_summary(rows, cfg=None, interval="wilson", out=None, df=None) -> None:
    """Print the summary of store rows (or of a tidy frame ``df``) keyed on every varying column.

    The layout fits 100 columns: settings that are the same in every row are printed once
    above the footnote instead of as columns.
    """
    from dpbench.bench.results.frame import frame_from_rows
    from dpbench.bench.results.summary import summary_frame
    from dpbench.cli.tables import constants_text, footnote, print_table, rich_table

    out = out or console
    if df is None:
        rows = [{**r, "setting": json.dumps(r["setting"]) if isinstance(r["setting"], dict) else r["setting"]}
                for r in rows]
        df = frame_from_rows(rows)
    if df.empty:
        out.print("no results")
        return
    sf = summary_frame(df, interval)
    print_table(out, rich_table(sf, title="dpbench compare" if cfg is not None else "dpbench report",
                                width=out.width))
    out.print(f"[dim]same for every row: {escape(constants_text(sf))}[/dim]")
    ref = ""
    if cfg is not None:
        ref = {"true": "the true support", "bss": "the certified non-private best subset",
               "lasso": "the non-private Lasso top-s", "sis": "the non-private SIS top-s"}[cfg.reference]
        ref = f"reference: {ref} · "
    note = GUARANTEE_NOTE.replace("'(no guarantee)' rows", "'(no DP)' rows") + " · " if "guaranteed" in df else ""
    out.print(f"[dim]neighbouring data sets: replace-one · {ref}{escape(note)}"
              f"{escape(footnote(sf, interval))}[/dim]")


def cmd_report(args) -> int:
    from dpbench.bench.results.frame import load_results
    from dpbench.bench.results.summary import summary_frame

    if args.markdown and Path(args.markdown).suffix.lower() in (".html", ".htm") and not args.html:
        args.html, args.markdown = args.markdown, None  # -o r.html: Markdown in an .html file read as garbage
    for path, flag in ((args.html, "--html"), (args.markdown, "--markdown")):
        if path:
            check_output_path(path, flag)
    if args.html:
        from dpbench.cli.html_report import write_report

        write_report(args.database, args.html, interval=args.interval)
        err_console.print(f"wrote {escape(str(args.html))}", soft_wrap=True)
        if not args.markdown:  # both given: both written
            return 0
    df = load_results(args.database)
    if args.markdown:
        from dpbench.cli.tables import markdown_table as md

        from dpbench.cli.tables import footnote

        note = GUARANTEE_NOTE + " · " if "guaranteed" in df else ""
        sf = summary_frame(df, args.interval) if not df.empty else None
        from dpbench.cli.html_report import run_versions  # the package versions each run recorded

        runs = "".join(f"* run of {when}: {versions}\n" for when, versions in run_versions(args.database))
        text = (md(sf) + f"\n{runs}\n{note}{footnote(sf, args.interval)}\n" if sf is not None else "no results\n")
        Path(args.markdown).write_text(text)
        err_console.print(f"wrote {escape(str(args.markdown))}")
    else:
        print_frame_summary(None, None, args.interval, df=df)
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with the project's error format: one line, exit status 2."""

    def error(self, message):
        hint = f"see `{self.prog} --help`"
        from dpbench.cli.listing import LIST_KINDS

        for kind in LIST_KINDS:  # `dpbench datasets`: the user looks for a listing
            if f"invalid choice: '{kind}'" in message or f"invalid choice: '{kind[:-1]}'" in message:
                hint = f"the registered {kind}: `dpbench list {kind}`"
        err_console.print(f"[bold red]dpbench: error:[/bold red] {escape(message)} ({escape(hint)})",
                          highlight=False, soft_wrap=True)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    from dpbench.core.version import __version__

    parser = _Parser(prog="dpbench", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"dpbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    from dpbench.cli import listing

    _add_compare(sub)
    listing.add_parser(sub)
    _add_export(sub)
    _add_report(sub)
    from dpbench.cli import audit, bss, plot  # they use helpers of this module, so they are imported last

    bss.add_parser(sub)
    plot.add_parser(sub)
    audit.add_parser(sub)
    return parser


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    err_console.print(f"[yellow]dpbench: warning:[/yellow] {escape(str(message))}", highlight=False, soft_wrap=True)


def main(argv=None) -> int:
    """Entry point of the ``dpbench`` console script; returns the exit status.

    Bad input (:class:`~dpbench.core.errors.DPBenchError`) prints one line and returns 2; Ctrl-C at
    any moment returns 130 (finished trials are already in the database).
    """
    import warnings

    from dpbench.bench.signals import exit_status, stop_on_signals

    try:
        with stop_on_signals():
            warnings.showwarning = _one_line_warning
            parser = build_parser()
            try:
                args = parser.parse_args(argv)
            except SystemExit as exc:  # --help (0) or a usage error already printed (2)
                return int(exc.code or 0)
            args.argv = list(sys.argv[1:] if argv is None else argv)
            status = args.func(args) or 0
            sys.stdout.flush()  # a full disk (> /dev/full) fails here, inside the handlers below
            return status
    except DPBenchError as exc:
        err_console.print(f"[bold red]dpbench: error:[/bold red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt as exc:
        err_console.print(f"interrupted ({exc or 'SIGINT'})")
        return exit_status(exc)
    except OSError as exc:
        import errno

        if isinstance(exc, BrokenPipeError):
            # `dpbench list --json | head`: the reader left; a traceback (and another one when Python
            # flushes stdout at exit) said nothing useful. Results are already in the database.
            stdout_to_devnull()
            return 1  # what rich's Console does on a broken pipe (the tables go through it)
        if exc.errno not in (errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT):
            raise
        # `dpbench report DB > /dev/full`: the results are in the database; only the printing failed
        stdout_to_devnull()
        where = f"{exc.filename}" if getattr(exc, "filename", None) else "the output"
        err_console.print(f"[bold red]dpbench: error:[/bold red] cannot write {escape(where)} ({escape(exc.strerror or str(exc))}); "
                          "free some space or write elsewhere", highlight=False, soft_wrap=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
