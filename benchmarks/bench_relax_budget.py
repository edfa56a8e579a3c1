"""How many nodes of a search solve their own k-support relaxation: the same searches at several budgets.

Issue 22, session 8. A call's branch and bound relaxes its first ``relax_nodes`` nodes
(:data:`dpbench.core.oracle.limits.RELAX_NODES`, ``--param highs.relax_nodes``); every later node is
bounded from its parent's dual point, which hardly rises with depth. Until this session the budget
was 2 000, and the long searches of issue 22 ran almost wholly on inherited bounds. Three
searches, s = 5, Lambda = 10, b_x = b_y = 0.5, r = 1.1, each in a fresh trial per budget:

* ``shipp_level5``: topr's threshold enumeration of shipp's level 5 (S1 fixed out) at its final
  threshold, as ``dpbench compare --dataset shipp --s 5`` runs it (default ``standardize``);
* ``toeplitz_level5``: the same for the toeplitz n = 200, p = 10 000 trial (``--seed 0``) at the
  R-th score of its top-R list, 23.57: what topr needs of level 5;
* ``gravier``: gravier's optimum (``dpbench bss --dataset gravier --s 5 --lam 10``).

Each row: nodes, certified or not, the proven lower bound, the members found (threshold) or the
incumbent's score (optimum), seconds and the 1-minute load. Node counts, bounds and answers are
deterministic; seconds are wall clock.

    python benchmarks/bench_relax_budget.py [--only shipp_level5] [--budgets 2000,20000,1000000000]
        [--node-limit 100000] [--out rows.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_gap_trend import search_trial  # noqa: E402  (the benchmarks folder is on the path now)

#: The searches, with the threshold of the two level searches (None: an optimum call).
SEARCHES = {"shipp_level5": 8.452282675770185, "toeplitz_level5": 23.57, "gravier": None}
BUDGETS = (2_000, 20_000, 1_000_000_000)


def budget_row(name, budget, node_limit):
    """One search of ``name`` with ``budget`` relaxed nodes, in a fresh trial: a dict (JSON row)."""
    trial = search_trial(name)
    sess = trial.oracle("highs")
    tau = SEARCHES[name]
    extra = {}
    if tau is not None:
        center = np.sort(np.asarray(trial.optimum("highs").support, dtype=np.int64))
        extra = {"S1": center.tolist(), "threshold": tau}
    sess.relax_nodes = sess.relax_overlap_nodes = int(budget)
    t0 = time.perf_counter()
    if tau is None:
        res = sess.solve(node_limit=node_limit)
        out = {"nodes": int(res.iterations), "certified": res.status == "optimal", "status": res.status,
               "lower_bound": float(res.lower_bound), "score": float(res.objective),
               "support": np.sort(res.support).tolist()}
    else:
        res = sess.supports_below(tau, fixed_out=center, node_limit=node_limit)
        out = {"nodes": int(res.nodes), "certified": bool(res.certified), "status": res.status,
               "lower_bound": float(res.lower_bound), "members": int(len(res.scores))}
    return {"search": name, "relax_nodes": int(budget), "node_limit": int(node_limit), **out,
            "seconds": round(time.perf_counter() - t0, 2), "load": round(os.getloadavg()[0], 2), **extra}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(SEARCHES), help="searches (comma-separated): " + ", ".join(SEARCHES))
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="relax_nodes values (comma-separated)")
    ap.add_argument("--node-limit", type=int, default=100_000, help="node limit of every search (default 100000)")
    ap.add_argument("--out", default=None, help="write the rows as JSON")
    args = ap.parse_args(argv)
    rows = []
    for name in args.only.split(","):
        for budget in (int(b) for b in args.budgets.split(",")):
            row = budget_row(name, budget, args.node_limit)
            rows.append(row)
            what = f"members {row['members']}" if "members" in row else f"score {row['score']:.6f}"
            print(f"{name:16s} relax_nodes {budget:>10d}  nodes {row['nodes']:>7d}  {row['status']:10s} "
                  f"bound {row['lower_bound']:.6f}  {what}  {row['seconds']:7.1f} s  load {row['load']}", flush=True)
            if args.out:
                with open(args.out, "w") as fh:
                    json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
