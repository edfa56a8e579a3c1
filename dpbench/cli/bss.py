"""``dpbench bss``: the certified non-private best subset of one generated or real problem.

Example::

    dpbench bss --generator toeplitz --n 800 --p 10000 --s 5 --solver highs

Defaults follow ``dpbench compare`` (b_x = b_y = 0.5, r = 1.1) except the ridge penalty,
which defaults to the NeurIPS 2025 authors' Λ = 120 (outer-approximation backends need
Λ > 0; use ``--solver enumerate`` or ``--solver gurobi --solver-param formulation=misocp``
for Λ = 0). Data are exactly those of trial 0 of ``dpbench compare`` with the same seed and
setting (:func:`dpbench.bench.run.make_problem`), or a real data set (``--dataset``) or user
file (``--data --target``), then clipped to [-b_x, b_x] / [-b_y, b_y].
"""

from __future__ import annotations

import json
import math
import sys
import time

from dpbench.core.datafiles import STANDARDIZE_MODES


def add_parser(subparsers) -> None:
    """Add the ``bss`` subcommand to an argparse subparsers object."""
    from dpbench.bench.trial import DEFAULT_SOLVER, PrivacySetup

    p = subparsers.add_parser("bss", help="certified non-private best subset of a generated problem",
                              epilog="exit status: 0 when the optimum is certified, 1 when it is not (a line on "
                                     "stderr says why and which limit to raise), 2 on bad input")
    p.add_argument("--generator", default="toeplitz", help="simulation design (default toeplitz)")
    p.add_argument("--n", type=int, default=800, help="rows (default 800)")
    p.add_argument("--p", type=int, default=10000, help="features (default 10000)")
    p.add_argument("--s", type=int, default=5, help="sparsity level (default 5)")
    p.add_argument("--rho", type=float, default=None, help="design correlation (generator default)")
    p.add_argument("--snr", type=float, default=None, help="signal-to-noise ratio (generator default)")
    p.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    setup = PrivacySetup()  # the defaults of compare; bss's own Lambda default is the paper's
    p.add_argument("--b-x", dest="b_x", type=float, default=setup.b_x, help=f"clipping bound of X (default {setup.b_x:g})")
    p.add_argument("--b-y", dest="b_y", type=float, default=setup.b_y, help=f"clipping bound of y (default {setup.b_y:g})")
    p.add_argument("--r", type=float, default=setup.r, help=f"l2 bound on the coefficients (default {setup.r:g})")
    p.add_argument("--lam", type=float, default=120.0, help="ridge penalty Lambda (default 120, the paper's)")
    p.add_argument("--solver", default=DEFAULT_SOLVER, help=f"oracle backend (default {DEFAULT_SOLVER})")
    p.add_argument("--solver-param", dest="solver_param", action="append", default=[], metavar="KEY=VALUE",
                   help="backend parameter, repeatable (e.g. formulation=misocp for gurobi)")
    p.add_argument("--time-limit", dest="time_limit", type=float, default=None, help="seconds (default none)")
    p.add_argument("--dataset", help="a registered real data set instead of a generator (see `dpbench list`)")
    p.add_argument("--data", help="a user data file (.csv, .tsv, .parquet, .npz) instead of a generator")
    p.add_argument("--target", help="response column of --data")
    p.add_argument("--standardize", choices=list(STANDARDIZE_MODES), default="standardize",
                   help="preprocessing of real data before clipping (default standardize; not private)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    """Generate, clip, solve and print; returns the exit status (0 certified, 1 not)."""
    from rich.console import Console
    from rich.table import Table

    from dpbench.core.errors import UserInputError
    from dpbench.bench.registry import registry
    from dpbench.bench.config import check_seed, check_setting

    reg = registry()
    if args.dataset or args.data:
        source = {"dataset": args.dataset} if args.dataset else {"data": args.data, "target": args.target}
        setting = {**source, "s": args.s, "standardize": args.standardize}
    else:
        gen_cls = reg.generator(args.generator)
        gparams = {"n": args.n, "p": args.p, "s": args.s, "rho": args.rho, "snr": args.snr}
        setting = {"generator": args.generator,
                   **{k: v for k, v in gparams.items() if v is not None and k in gen_cls.params}}
    sparams = {}
    for kv in args.solver_param:
        if "=" not in kv:
            raise UserInputError(f"--solver-param {kv!r}: expected KEY=VALUE, e.g. formulation=misocp")
        k, v = kv.split("=", 1)
        sparams[k.strip()] = v.strip()
    # as compare does: names, 1 <= s < p and n x p against the free memory, before generating
    # (--p 10000000 ran for minutes towards a MemoryError)
    check_setting(setting)
    check_seed(args.seed)
    if args.time_limit is not None and not (math.isfinite(args.time_limit) and args.time_limit > 0):
        # a negative limit returned "time_limit" with no support and exit status 1, as if the solve ran
        raise UserInputError(f"--time-limit = {args.time_limit} must be a positive number of seconds "
                             "(or leave it out: no limit)")
    if args.json:  # stdout carries the JSON only, whatever the solver library prints (main.machine_stdout)
        from dpbench.cli.output import machine_stdout

        with machine_stdout() as stdout:
            out, status = _solve(args, reg, setting, sparams)
            stdout.write((json.dumps(out) + "\n").encode("utf-8"))
        _say_uncertified(out, sparams)
        return status
    out, status = _solve(args, reg, setting, sparams)
    _say_uncertified(out, sparams)
    table = Table(title=f"best subset ({args.solver}), {out['name']} n={out['n']} p={out['p']} s={out['s']}")
    table.add_column("field")
    table.add_column("value")
    table.add_row("support", str(out["support"]))
    table.add_row("true support", str(out["true_support"]))
    table.add_row("objective", f"{out['objective']:.10g}")
    table.add_row("lower bound", f"{out['lower_bound']:.10g}")
    table.add_row("status", out["status"] + (f" ({out['message']})" if out["message"] else ""))
    table.add_row("solve seconds", f"{out['seconds']:.3f}")
    table.add_row("total seconds", f"{out['total_seconds']:.3f}")
    Console().print(table)
    return status


def _say_uncertified(out, sparams) -> None:
    """One stderr line for an optimum that is not certified: the status, and the limit to raise in
    this command's own spelling (``--solver-param``; ``dpbench compare`` spells it ``--param
    SOLVER.node_limit``)."""
    if out["status"] == "optimal":
        return
    from dpbench.core.oracle.limits import NODE_LIMIT
    from dpbench.core.toplist.levels import RAISE_FACTOR

    if out["status"] == "work_limit":
        now = int(float(sparams.get("node_limit", NODE_LIMIT)))
        advice = f"raise the node limit, e.g. --solver-param node_limit={RAISE_FACTOR * now}"
    elif out["status"] == "time_limit":
        advice = "raise --time-limit (or --solver-param safety_time_limit=...)"
    else:
        advice = "see the status line above"
    print(f"dpbench bss: not certified ({out['status']}): {advice}; exit status 1", file=sys.stderr)


def _solve(args, reg, setting, sparams):
    """Generate (or load), clip and solve; returns (the JSON record, the exit status)."""
    from dpbench.bench.config import RunConfig, make_problem
    from dpbench.core.score import RidgeScore

    t0 = time.perf_counter()
    # the same data as trial 0 of `dpbench compare` with this seed and setting
    problem = make_problem(RunConfig(methods=[], data=[setting], seed=args.seed), setting, 0)
    problem = problem.clipped(args.b_x, args.b_y)
    score = RidgeScore(problem.X, problem.y, lam=args.lam, r=args.r)
    session = reg.solver(args.solver)(**sparams).session(score, problem.s)
    res = session.solve(time_limit=args.time_limit)
    total = time.perf_counter() - t0
    out = {
        "support": None if res.support is None else [int(i) for i in res.support],
        "objective": res.objective, "lower_bound": res.lower_bound, "status": res.status,
        "seconds": res.seconds, "total_seconds": total, "iterations": res.iterations,
        "solver": args.solver, "message": res.message,
        "true_support": None if problem.true_support is None else [int(i) for i in problem.true_support],
        "setting": {**setting, "seed": args.seed, "b_x": args.b_x, "b_y": args.b_y, "r": args.r,
                    "lam": args.lam},
    }
    if not args.json:  # table-only fields (the JSON record is unchanged)
        out = {**out, "name": problem.name, "n": problem.n, "p": problem.p, "s": problem.s}
    return out, (0 if res.status == "optimal" else 1)
