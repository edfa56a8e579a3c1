"""The proven gap against the node limit on the two searches issue 22 could not certify.

Both are exact branch-and-bound searches with the k-support node relaxation (the default
``highs`` oracle), s = 5, Lambda = 10, clipped to b_x = b_y = 0.5, r = 1.1:

* ``gravier``: the certified optimum S1 of gravier (168 x 2905) at the default ``standardize``
  (``dpbench bss --dataset gravier --s 5 --lam 10``);
* ``toeplitz_level5``: the level-5 minimum R_5 that ``mistakes`` needs on the toeplitz trial
  n = 200, p = 10 000 (``dpbench compare --n 200 --p 10000 --s 5 --lam 10 --seed 0``): the best
  support sharing no feature with S1, one root (S1 fixed out).

For each node limit, a fresh trial (no caches or cuts from another call) runs the search to
that limit and the row records the incumbent's score, the proven lower bound, the relative gap
``(score - bound) / score`` and the seconds. Node counts, scores and bounds are deterministic;
seconds are wall clock with the 1-minute load average. A gap that hardly moves as the limit
grows by 20x says that cheaper nodes cannot certify the search: it needs a stronger bound.

    python benchmarks/bench_gap_trend.py [--only gravier] [--limits 20000,100000] [--out rows.json]
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

LIMITS = {"gravier": (20_000, 100_000, 400_000), "toeplitz_level5": (2_000, 10_000, 40_000)}


def search_trial(name):
    """A fresh trial (empty caches) for a search named ``toeplitz...`` (the n = 200, p = 10 000 trial
    of ``--seed 0``) or ``SET`` / ``SET_...`` (the real data set SET at Lambda = 10, ``standardize``)."""
    if name.startswith("toeplitz"):
        from bench_oracle_scale import make_trial

        return make_trial(0, n=200, p=10_000, s=5, lam=10.0)
    from bench_real_data import make_trial

    return make_trial(name.split("_")[0], 10.0, "standardize")


def gap_row(name, node_limit):
    """One search of ``name`` to ``node_limit`` nodes, in a fresh trial: a dict (JSON row)."""
    tr = search_trial(name)
    sess = tr.oracle("highs")
    extra = {}
    if name == "toeplitz_level5":
        opt = tr.optimum("highs")
        center = np.sort(np.asarray(opt.support, dtype=np.int64))
        extra = {"S1": center.tolist(), "S1_score": float(opt.objective), "S1_certified": bool(opt.certified)}
        kw = {"fixed_out": center}
    else:
        kw = {}
    t0 = time.perf_counter()
    res = sess.solve(node_limit=int(node_limit), **kw)
    seconds = time.perf_counter() - t0
    return {"search": name, "node_limit": int(node_limit), "nodes": int(res.iterations), "status": res.status,
            "support": np.sort(res.support).tolist(), "score": float(res.objective),
            "lower_bound": float(res.lower_bound),
            "gap": float((res.objective - res.lower_bound) / res.objective),
            "seconds": round(seconds, 2), "load": round(os.getloadavg()[0], 2), **extra}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(LIMITS), help="searches (comma-separated): " + ", ".join(LIMITS))
    ap.add_argument("--limits", default=None, help="node limits (comma-separated; default per search)")
    ap.add_argument("--out", default=None, help="write the rows as JSON")
    args = ap.parse_args(argv)
    rows = []
    for name in args.only.split(","):
        limits = [int(x) for x in args.limits.split(",")] if args.limits else LIMITS[name]
        for limit in limits:
            row = gap_row(name, limit)
            rows.append(row)
            print(f"{name:16s} nodes {row['nodes']:>7d}  score {row['score']:.6f}  bound {row['lower_bound']:.6f}  "
                  f"gap {100 * row['gap']:6.3f} %  {row['seconds']:7.1f} s  load {row['load']}", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
