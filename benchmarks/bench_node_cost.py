"""Node relaxations of the branch and bound: old ("pg") and new ("prox") code paths on the same nodes.

Issue 22, item 1: the median node relaxation at least ten times cheaper. One search runs (driven
by ``--drive``, default the new path); at every node that takes a k-support relaxation both
code paths solve the same node (same F, C, m, the same warm dual points, the new path also its
parent's primal warm start), in alternating order so that a change of the machine's load hits
both alike. Printed per instance: nodes measured, median / mean seconds of each path, the
ratio of the medians, and how the bounds compare (both are valid lower bounds whatever their
accuracy: :mod:`dpbench.core.oracle.relaxation`).

    python benchmarks/bench_node_cost.py [--only gravier,khan] [--nodes 200] [--drive prox]

Instances: s = 5, b_x = b_y = 0.5, r = 1.1, Lambda = 10, the default standardization of real
data (``standardize``): gravier, khan, golub (``optimum`` calls: the survivors' branch and bound)
and toeplitz n = 200, p = 10 000 (seed 3 of ``bench_oracle_hard``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

INSTANCES = {
    "gravier": {"dataset": "gravier", "s": 5, "standardize": "standardize"},
    "khan": {"dataset": "khan", "s": 5, "standardize": "standardize"},
    "golub": {"dataset": "golub", "s": 5, "standardize": "standardize"},
    "toep200": {"generator": "toeplitz", "n": 200, "p": 10_000, "s": 5},
}


def make_score(setting, lam, seed=3):
    """(RidgeScore, s) of one instance (the data of trial 0 of ``dpbench compare --seed SEED``)."""
    from dpbench.bench.config import RunConfig, make_problem
    from dpbench.core.score import RidgeScore

    prob = make_problem(RunConfig(methods=[], data=[setting], seed=seed), setting, 0).clipped(0.5, 0.5)
    return RidgeScore(prob.X, prob.y, lam=lam, r=1.1), prob.s


def measure(name, lam, nodes, drive):
    """Run one search of ``nodes`` nodes; return per-node (t_pg, t_prox, b_pg, b_prox) arrays."""
    from dpbench.core.oracle import OASession
    from dpbench.bench.registry import registry

    score, s = make_score(INSTANCES[name], lam)
    rows = []
    orig = OASession._relax_node

    def both(self, F, C, m, warm=None):
        alphas = list(self._relax_alphas)
        out = {}
        order = ("pg", "prox") if len(rows) % 2 else ("prox", "pg")
        for meth in order:
            self._relax_alphas = list(alphas)
            self.relax_method = meth
            t = time.perf_counter()
            res = orig(self, F, C, m, warm if meth == "prox" else None)
            out[meth] = (time.perf_counter() - t, res, list(self._relax_alphas))
        self.relax_method = drive
        rows.append((out["pg"][0], out["prox"][0], out["pg"][1][0], out["prox"][1][0]))
        _, res, self._relax_alphas = out[drive]
        return res

    OASession._relax_node = both
    try:
        sess = registry().solver("highs")(relax_method=drive).session(score, s)
        t = time.perf_counter()
        res = sess.solve(node_limit=nodes)
        wall = time.perf_counter() - t
    finally:
        OASession._relax_node = orig
    return np.array(rows).reshape(-1, 4), res, wall


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(INSTANCES), help="comma-separated instance names")
    ap.add_argument("--nodes", type=int, default=200, help="branch-and-bound node limit of the search")
    ap.add_argument("--lam", type=float, default=10.0)
    ap.add_argument("--prox", default="", help="override work counts of the prox path, e.g. iters=10,rounds=2")
    ap.add_argument("--drive", choices=("prox", "pg"), default="prox", help="the path whose results steer the search")
    a = ap.parse_args(argv)
    import os

    from dpbench.core.oracle import OASession

    for kv in filter(None, a.prox.split(",")):
        k, v = kv.split("=")
        OASession.PROX_NODE = {**OASession.PROX_NODE, k: float(v) if k == "tol" else int(v)}

    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at start; node limit {a.nodes}, Lambda {a.lam:g}, "
          f"search driven by {a.drive!r}")
    print(f"{'instance':10} {'nodes':>5} {'pg med ms':>9} {'prox med ms':>11} {'ratio':>6} {'pg mean':>8} "
          f"{'prox mean':>9} {'bound prox-pg (rel), median / min / max':>40}")
    for name in a.only.split(","):
        rows, res, wall = measure(name, a.lam, a.nodes, a.drive)
        if not len(rows):
            print(f"{name:10} no node relaxation ({res.status}: {res.message})")
            continue
        tp, tx, bp, bx = rows.T
        rel = (bx - bp) / np.maximum(np.abs(bp), 1e-12)
        print(f"{name:10} {len(rows):5d} {1e3 * np.median(tp):9.2f} {1e3 * np.median(tx):11.2f} "
              f"{np.median(tp) / np.median(tx):6.1f} {1e3 * tp.mean():8.2f} {1e3 * tx.mean():9.2f} "
              f"{np.median(rel):+12.2e} / {rel.min():+.2e} / {rel.max():+.2e}")
        print(f"{'':10} search: {res.status}, objective {res.objective:.6f}, bound {res.lower_bound:.6f}, "
              f"{wall:.1f} s wall (both paths), load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
