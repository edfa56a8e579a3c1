"""Node relaxations of the branch and bound: the old ("pg") and new ("prox") code paths on the same nodes.

Issue 22, item 1: the median node relaxation at least ten times cheaper. One search runs (driven
by ``--drive``, default the new path); at every node that takes a k-support relaxation every
code path of :data:`PATHS` solves the same node (same F, C, m, the same warm dual points, the
prox paths also their parent's primal warm start), in rotating order so that a change of the
machine's load hits all alike: ``pg`` (the projected gradient, the issue's "today"), ``numpy``
(the prox relaxation with the numpy reference functions) and ``prox`` (the same with the
compiled kernels of ``dpbench/core/oracle/kernels.py``, the default). Printed per instance: nodes
measured, median (mean) milliseconds of each path, the ratios of the medians, and how the
bounds compare (all are valid lower bounds whatever their accuracy:
:mod:`dpbench.core.oracle.relaxation`); the CPU seconds of the whole search show the load's share.

    python benchmarks/bench_node_cost.py [--only gravier,khan] [--nodes 200] [--drive prox]

The default 200 nodes are the first of a search, where a node's candidates are nearly all of p;
``--nodes 2000`` reaches the deeper nodes whose products cover their own features only
(docs/performance.md, session 14); a limit past the end of the search (``--only toep200,khan,golub
--nodes 8000``) measures every relaxation of a whole certified search (session 16).

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


#: The code paths compared: (relax_method, compiled kernels). "pg" is the projected gradient of
#: round 2 (the issue's "today"), "numpy" the prox node relaxation with the numpy reference
#: functions of dpbench/core/oracle/ksupport.py, "prox" the same with the compiled kernels
#: (dpbench/core/oracle/kernels.py, the default).
PATHS = {"pg": ("pg", False), "numpy": ("prox", False), "prox": ("prox", True)}


def measure(name, lam, nodes, drive, close=True):
    """Run one search of ``nodes`` nodes; return per-node times and bounds of every path
    (arrays of shape (nodes, len(PATHS)) in the order of :data:`PATHS`), the result, the wall
    seconds and the CPU seconds of the search."""
    from dpbench.core.oracle import OASession
    from dpbench.bench.registry import registry

    score, s = make_score(INSTANCES[name], lam)
    times, bounds = [], []
    orig = OASession._relax_node
    names = list(PATHS)
    base = dict(OASession.PROX_NODE)

    def both(self, F, C, m, warm=None, close_at=None):
        alphas = list(self._relax_alphas)
        out = {}
        k = len(times) % len(names)
        for path in names[k:] + names[:k]:  # rotate the order: a change of load hits every path alike
            meth, compiled = PATHS[path]
            self._relax_alphas = list(alphas)
            self.relax_method = meth
            self.PROX_NODE = {**base, "compiled": compiled}
            t = time.perf_counter()
            res = orig(self, F, C, m, warm if meth == "prox" else None, close_at=close_at if close else None)
            out[path] = (time.perf_counter() - t, res, list(self._relax_alphas))
        self.relax_method, compiled = PATHS[drive]
        self.PROX_NODE = {**base, "compiled": compiled}
        times.append([out[q][0] for q in names])
        bounds.append([out[q][1][0] for q in names])
        _, res, self._relax_alphas = out[drive]
        return res

    OASession._relax_node = both
    try:
        meth, compiled = PATHS[drive]
        sess = registry().solver("highs")(relax_method=meth).session(score, s)
        sess.PROX_NODE = {**base, "compiled": compiled}
        t, c = time.perf_counter(), time.process_time()
        res = sess.solve(node_limit=nodes)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
    finally:
        OASession._relax_node = orig
    k = len(names)
    return np.array(times).reshape(-1, k), np.array(bounds).reshape(-1, k), res, wall, cpu


def warm_up():
    """Load (or compile, once) the numba kernels before anything is timed."""
    from dpbench.core.oracle.relaxation import relaxation_bound
    from dpbench.core.score import RidgeScore

    rng = np.random.default_rng(0)
    sc = RidgeScore(rng.normal(size=(20, 12)), rng.normal(size=20), lam=1.0, r=1.1)
    relaxation_bound(sc, np.zeros(0, dtype=np.int64), [(np.arange(12), 3)], per_feature=True, method="prox")
    from dpbench.core.oracle import children

    children.child_bounds(np.ones(4), 1.0, 1.0, 1.0, 1.1, np.zeros(0, dtype=np.int64), np.arange(4), 2, np.zeros(4))


class NodeCost:
    """asv: the median node relaxation of the default path ("prox", ms) and pg's median over it,
    on the same nodes of one search of 2 000 nodes (toeplitz: most are deep nodes, whose products
    cover their own features only; docs/performance.md, session 14). Issue 22's target: 10x."""

    params = [["toep200", "gravier"]]
    param_names = ["instance"]
    timeout = 900

    def setup_cache(self):
        warm_up()
        out = {}
        for name in self.params[0]:
            t = measure(name, 10.0, 2000, "prox")[0]
            med = dict(zip(PATHS, np.median(t, axis=0)))
            out[name] = (float(1e3 * med["prox"]), float(med["pg"] / med["prox"]))
        return out

    def track_prox_ms(self, cache, instance):
        return cache[instance][0]

    track_prox_ms.unit = "ms"

    def track_pg_over_prox(self, cache, instance):
        return cache[instance][1]

    track_pg_over_prox.unit = "ratio"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(INSTANCES), help="comma-separated instance names")
    ap.add_argument("--nodes", type=int, default=200, help="branch-and-bound node limit of the search")
    ap.add_argument("--lam", type=float, default=10.0)
    ap.add_argument("--prox", default="", help="override work counts of the prox path, e.g. iters=10,rounds=2")
    ap.add_argument("--drive", choices=tuple(PATHS), default="prox", help="the path whose results steer the search")
    ap.add_argument("--no-close", action="store_true",
                    help="solve every node's relaxation to the end, as before session 11 (default: the prox "
                         "paths stop at the first working-set round whose bound reaches the search's bar)")
    a = ap.parse_args(argv)
    import os

    from dpbench.core.oracle import OASession

    for kv in filter(None, a.prox.split(",")):
        k, v = kv.split("=")
        OASession.PROX_NODE = {**OASession.PROX_NODE, k: float(v) if k == "tol" else int(v)}

    warm_up()
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at start; node limit {a.nodes}, Lambda {a.lam:g}, "
          f"search driven by {a.drive!r}; per path: median ms of a node relaxation (mean)")
    names = list(PATHS)
    print(f"{'instance':10} {'nodes':>5} " + " ".join(f"{q + ' ms':>15}" for q in names)
          + f" {'pg/prox':>7} {'numpy/prox':>10}  bound prox vs pg (rel): median / min / max; prox vs numpy: max |rel|")
    for name in a.only.split(","):
        t, bnd, res, wall, cpu = measure(name, a.lam, a.nodes, a.drive, close=not a.no_close)
        if not len(t):
            print(f"{name:10} no node relaxation ({res.status}: {res.message})")
            continue
        med = np.median(t, axis=0)
        i_pg, i_np, i_px = (names.index(q) for q in ("pg", "numpy", "prox"))
        rel = (bnd[:, i_px] - bnd[:, i_pg]) / np.maximum(np.abs(bnd[:, i_pg]), 1e-12)
        rel_np = np.abs(bnd[:, i_px] - bnd[:, i_np]) / np.maximum(np.abs(bnd[:, i_np]), 1e-12)
        cells = " ".join(f"{1e3 * med[j]:7.2f} ({1e3 * t[:, j].mean():5.1f})" for j in range(len(names)))
        print(f"{name:10} {len(t):5d} {cells} {med[i_pg] / med[i_px]:7.1f} {med[i_np] / med[i_px]:10.1f}  "
              f"{np.median(rel):+.2e} / {rel.min():+.2e} / {rel.max():+.2e}; {rel_np.max():.1e}")
        print(f"{'':10} search: {res.status}, objective {res.objective:.6f}, bound {res.lower_bound:.6f}, "
              f"{wall:.1f} s wall, {cpu:.1f} s CPU (all paths), load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
