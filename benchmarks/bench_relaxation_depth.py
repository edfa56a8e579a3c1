"""How far a search's k-support bounds are from its optimum: fixed-in features against excluded ones.

Issue 22, session 11. Why gravier's optimum (``standardize``, Lambda = 10) needs a quarter of a
million nodes: the node bound of the k-support relaxation (:mod:`dpbench.core.oracle.relaxation`)
barely rises when features are fixed *in*, and rises fast when the strongest ones are fixed
*out*, which is what the branch and bound's children do (child i takes the i-th feature of its
parent's order and excludes the ones before it). For one real data set at s = 5, b_x = b_y = 0.5,
r = 1.1 (the trial of ``dpbench compare --dataset NAME --s 5 --lam LAM``), given the score of a
reference support (default: the certified optimum, which this script computes first):

* ``root``: the root bound and its gap;
* ``one in``: the bound of every node with one feature fixed in and all others free (how many
  stay below the reference, the largest bound);
* ``two in``: the same with the ``--pairs`` features of largest single gain fixed in, each with
  every other feature;
* ``excluded``: the root bound with the k features of largest ``(x_j^T alpha)^2`` at the root's
  dual point fixed out, for several k.

Bounds are deterministic; seconds are wall clock.

    python benchmarks/bench_relaxation_depth.py [--dataset gravier] [--lam 10] [--pairs 3]
        [--excluded 0,10,30,100,300,1000] [--node-limit 300000] [--out rows.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_real_data import make_trial  # noqa: E402  (the benchmarks folder is on the path now)


def make_score(dataset, lam, standardize="standardize"):
    """The shared score of trial 0 of ``dpbench compare --dataset DATASET --s 5 --lam LAM``: (score, s)."""
    trial = make_trial(dataset, lam, standardize)
    return trial.oracle("highs").score, trial.s


def depth_rows(dataset, lam, pairs, excluded, node_limit):
    """The rows of the module docstring for one data set (a dict, JSON-ready)."""
    from dpbench.bench.registry import registry
    from dpbench.core.oracle.relaxation import relaxation_bound

    score, s = make_score(dataset, lam)
    p = score.p
    t0 = time.perf_counter()
    opt = registry().solver("highs")(node_limit=node_limit).session(score, s).solve()
    ref = float(opt.objective)
    out = {"dataset": dataset, "lam": lam, "n": score.n, "p": p, "s": s,
           "reference": {"support": np.sort(opt.support).tolist(), "score": ref, "status": opt.status,
                         "nodes": int(opt.iterations), "seconds": round(time.perf_counter() - t0, 1)}}
    none = np.zeros(0, dtype=np.int64)
    everyone = np.arange(p)
    root, _, per, (_, a) = relaxation_bound(score, none, [(everyone, s)], per_feature=True, method="prox",
                                            with_warm=True)
    out["root"] = {"bound": root, "gap": (ref - root) / ref, "features_screened": int((per >= ref).sum())}
    t0 = time.perf_counter()
    one = np.array([relaxation_bound(score, np.array([j]), [(np.delete(everyone, j), s - 1)], method="prox")[0]
                    for j in range(p)])
    out["one_in"] = {"below_reference": int((one < ref).sum()), "of": p, "largest": float(one.max()),
                     "seconds": round(time.perf_counter() - t0, 1)}
    gain = score.c ** 2 / (score.col_sq + score.lam)
    out["two_in"] = []
    for j in np.argsort(-gain, kind="stable")[:pairs]:
        two = np.array([relaxation_bound(score, np.sort([j, k]), [(np.delete(everyone, [min(j, k), max(j, k)]), s - 2)],
                                         method="prox")[0] for k in range(p) if k != j])
        out["two_in"].append({"feature": int(j), "below_reference": int((two < ref).sum()), "of": p - 1,
                              "largest": float(two.max())})
    order = np.argsort(-a ** 2, kind="stable")
    out["excluded"] = [{"k": int(k), "bound": float(relaxation_bound(score, none, [(np.sort(order[k:]), s)],
                                                                     method="prox")[0])}
                       for k in excluded if k <= p - s]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="gravier")
    ap.add_argument("--lam", type=float, default=10.0)
    ap.add_argument("--pairs", type=int, default=3, help="features of largest single gain fixed in with every other")
    ap.add_argument("--excluded", default="0,10,30,100,300,1000", help="numbers of features fixed out")
    ap.add_argument("--node-limit", type=int, default=300_000, help="node limit of the reference optimum")
    ap.add_argument("--out", default=None, help="write the rows as JSON")
    a = ap.parse_args(argv)
    row = depth_rows(a.dataset, a.lam, a.pairs, [int(k) for k in a.excluded.split(",")], a.node_limit)
    ref = row["reference"]
    print(f"{a.dataset} n={row['n']} p={row['p']} lam={a.lam:g}: reference {ref['score']:.6f} ({ref['status']}, "
          f"{ref['nodes']} nodes, {ref['seconds']} s)")
    print(f"  root bound {row['root']['bound']:.4f}, gap {100 * row['root']['gap']:.2f} %, "
          f"{row['root']['features_screened']} features screened")
    o = row["one_in"]
    print(f"  one feature in: {o['below_reference']} of {o['of']} nodes below the reference, largest bound {o['largest']:.4f}")
    for t in row["two_in"]:
        print(f"  feature {t['feature']} and one more in: {t['below_reference']} of {t['of']} below, "
              f"largest {t['largest']:.4f}")
    for e in row["excluded"]:
        print(f"  {e['k']:>5d} strongest fixed out: root bound {e['bound']:.4f}")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(row, fh, indent=1)


if __name__ == "__main__":
    main()
