"""Side by side: dpbench's ``topr`` + ``mistakes`` trial vs the authors' released code (issue 15).

The authors' own comparison: toeplitz n = 400, p = 200, s = 5, Lambda = 120, b_x = b_y = 0.5,
r = 1.1, epsilon = 1, 100 draws per method. Target: dpbench at least 100x faster per trial.

What is timed, on the *same* data (dpbench's toeplitz generator with the authors' support
``first = 1``, clipped as both codes clip):

* **dpbench**: a fresh :class:`~dpbench.Trial`, ``topr`` and ``mistakes`` prepared (certified
  top-R list, certified mistakes levels) and 100 draws each.
* **authors**: ``_select_supports`` of ``bss_neurips.py`` (petrosprastakos/DP-variable-selection)
  with its Lasso-subsample and MCMC parts replaced by stubs, i.e. their OA solve
  (``outer_approx_gurobi_constraint_pgd_with_cuts``), the top-R and mistakes probabilities
  and 100 draws each, with the arguments of their ``frac_f1_over_n`` run (tol 5e-3, 5000 PGD
  iterations, 10 % of the features for the 1-mistake cuts). Their loop *discards* a trial
  whose top-R check fails (``gap == -1``: the best 2-swap support scores below the worst
  single swap) and draws new data until it has enough, so their cost per kept trial is the
  total time over the kept trials; both figures are printed.

Their code is not part of dpbench: pass the path of a checkout (the benchmark is skipped with
a message when it is absent or gurobipy cannot run). It is loaded without running its
experiment: only its imports and definitions are executed (top-level statements after the
first definition are dropped). cvxpy, which only their objective-perturbation code uses, is
stubbed when not installed. Their prints are silenced.

    python benchmarks/bench_authors.py /path/to/DP-variable-selection [--seeds 0,1,2,3,4]

asv: set ``DPBENCH_AUTHORS_REPO`` to the checkout.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import sys
import time
import types
from pathlib import Path

import numpy as np
from dpbench.bench.registry import PluginInstances

N, P, S, LAM, B, R_BOUND, EPS, DRAWS = 400, 200, 5, 120.0, 0.5, 1.1, 1.0, 100
TARGET_SPEEDUP = 100.0


def load_authors(repo):
    """The functions of ``bss_neurips.py`` in ``repo`` as a namespace, without its experiment.

    Raises
    ------
    NotImplementedError
        When the file is absent or gurobipy is not installed (asv: skip).
    """
    path = Path(repo) / "bss_neurips.py"
    if not path.is_file():
        raise NotImplementedError(f"no bss_neurips.py under {repo!r}: pass a checkout of "
                                  "petrosprastakos/DP-variable-selection")
    try:
        import gurobipy  # noqa: F401
    except ImportError:
        raise NotImplementedError("gurobipy is not installed") from None
    tree = ast.parse(path.read_text())
    first_def = next(i for i, node in enumerate(tree.body) if isinstance(node, (ast.FunctionDef, ast.ClassDef)))
    keep = [node for i, node in enumerate(tree.body)
            if i < first_def or isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))]
    for name in ("cvxpy",):  # used only by code not timed here
        try:
            __import__(name)
        except ImportError:
            sys.modules.setdefault(name, types.ModuleType(name))
    ns = {"__name__": "bss_neurips", "__file__": str(path)}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(path), "exec"), ns)  # noqa: S102
    # Lasso-subsample and MCMC are other methods: not part of a topr + mistakes trial.
    ns["subsample"] = lambda X, y, s, eps, func, num_iterations=50, Lambda=-1: np.zeros((X.shape[1], num_iterations))
    ns["private_mcmc"] = lambda X, y, s, eps, mcmc_iter, b_x=1, b_y=1, num_chains=50, l1bound=3.5: \
        np.zeros((X.shape[1], num_chains))
    return ns


def make_data(seed):
    """Unclipped (X, y) of the toeplitz design with the authors' support (first = 1)."""
    from dpbench.bench.registry import registry
    from dpbench.core.seeding import rng_for

    gen = registry().generator("toeplitz")(n=N, p=P, s=S, rho=0.1, snr=5.0, first=1)
    prob = gen.generate(rng_for(seed, "bench_authors"))
    return prob


def run_dpbench(prob, seed):
    """(seconds, certified) of one fresh topr + mistakes trial, prepare + 100 draws each."""
    from dpbench.bench.trial import Trial
    from dpbench.bench.registry import registry
    from dpbench.bench.trial import PrivacySetup

    t = time.perf_counter()
    trial = Trial.from_problem(prob, PrivacySetup(b_x=B, b_y=B, r=R_BOUND, lam=LAM), solver="highs", instances=PluginInstances())
    cert = True
    for method in ("topr", "mistakes"):
        sel = registry().selector(method)()
        prep = sel.prepare(trial, np.random.default_rng(seed))
        cert &= bool(sel.draw(trial, prep, EPS, DRAWS, np.random.default_rng(seed + 1)).certified)
    return time.perf_counter() - t, cert


def run_authors(ns, prob, seed):
    """(seconds, kept) of one call of their selection on the same data; kept False = discarded."""
    X, y = np.asarray(prob.X), np.asarray(prob.y)
    np.random.seed(seed)
    t = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        Xc, yc = ns["_clip_for_selection"](X, y, B, B)
        out = ns["_select_supports"](X_sel=Xc, y_sel=yc, X_full=X, y_full=y, n=N, p=P, s=S, eps=EPS,
                                     Lambda_ridge=LAM, r=R_BOUND, tolr=5e-3, iters_pgd=5000, perc1mist=0.1, R=None,
                                     b_x=B, b_y=B, num_iterations=DRAWS, Lambda=20.0, l1bound=3.5, mcmc_iter=1000)
    return time.perf_counter() - t, not out.get("oops", False)


class AuthorsSpeedup:
    """Their seconds per kept trial over ours (``DPBENCH_AUTHORS_REPO``: checkout path)."""

    timeout = 1800
    number = 1
    repeat = 1

    def setup(self):
        self.ns = load_authors(os.environ.get("DPBENCH_AUTHORS_REPO", ""))

    def track_speedup(self):
        rows = [(run_dpbench(make_data(seed), seed)[0], *run_authors(self.ns, make_data(seed), seed))
                for seed in range(3)]
        ours = float(np.median([r[0] for r in rows]))
        kept = sum(r[2] for r in rows)
        theirs = sum(r[1] for r in rows) / max(kept, 1)
        return theirs / ours

    track_speedup.unit = "x"


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", nargs="?", default=os.environ.get("DPBENCH_AUTHORS_REPO", ""),
                    help="checkout of petrosprastakos/DP-variable-selection")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    a = ap.parse_args(argv)
    try:
        ns = load_authors(a.repo)
    except NotImplementedError as exc:
        print(f"skipped: {exc}")
        return
    print(f"load: {os.getloadavg()[0]:.1f} (1-min average; the machine may be shared)")
    print(f"n={N} p={P} s={S} Lambda={LAM:g} b_x=b_y={B} r={R_BOUND} eps={EPS:g}, {DRAWS} draws per method")
    ours, theirs, kept = [], [], []
    for seed in (int(x) for x in a.seeds.split(",")):
        prob = make_data(seed)
        o, cert = run_dpbench(prob, seed)
        t, k = run_authors(ns, prob, seed)
        ours.append(o)
        theirs.append(t)
        kept.append(k)
        print(f"seed {seed}: dpbench {o:7.3f} s (certified {cert})   authors {t:7.2f} s "
              f"({'kept' if k else 'DISCARDED: top-R check failed'})", flush=True)
    per_kept = sum(theirs) / max(sum(kept), 1)
    med_o, med_t = float(np.median(ours)), float(np.median(theirs))
    print(f"dpbench median {med_o:.3f} s per trial; authors median {med_t:.2f} s per call, "
          f"{sum(kept)}/{len(kept)} kept, {per_kept:.2f} s per kept trial")
    for label, ratio in (("per call", med_t / med_o), ("per kept trial", per_kept / med_o)):
        print(f"speed-up {label}: {ratio:.0f}x (target >= {TARGET_SPEEDUP:g}x) "
              f"{'OK' if ratio >= TARGET_SPEEDUP else 'BELOW TARGET'}")
    print(f"load: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
