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

Session 17 added two rows on what the children's order and their bounds could still gain:

* ``exclusion_orders`` (``--greedy-max K``): how many features must be fixed out before the root
  bound reaches the reference, in the order the branch and bound uses (decreasing
  ``(x_j^T alpha)^2`` at the root's dual point; smallest such k by bisection) and in an order
  re-solved after every exclusion (fix out the feature of largest ``(x_j^T alpha)^2`` at the dual
  point of the relaxation without the ones already out; at most K steps). Fewer exclusions would
  mean fewer open children per node.
* ``siblings`` (``--sibling-nodes N``): the first N nodes of the reference's own search, with
  every node relaxation also bounded beforehand from the dual point of its previous sibling
  (the last relaxed child of the same parent; :meth:`~dpbench.core.oracle.OASession._dual_node`,
  no solve). Per number of fixed-in features: relaxations, the share closed by the node's own
  relaxation, the share the sibling's point alone would close, and the median milliseconds of
  each. The search itself is unchanged (the extra bound is only recorded).

Bounds and counts are deterministic; seconds are wall clock.

    python benchmarks/bench_relaxation_depth.py [--dataset gravier] [--lam 10] [--pairs 3]
        [--excluded 0,10,30,100,300,1000] [--node-limit 300000] [--greedy-max 0]
        [--sibling-nodes 0] [--out rows.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from unittest import mock

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_real_data import make_trial  # noqa: E402  (the benchmarks folder is on the path now)


def make_score(dataset, lam, standardize="standardize"):
    """The shared score of trial 0 of ``dpbench compare --dataset DATASET --s 5 --lam LAM``: (score, s)."""
    trial = make_trial(dataset, lam, standardize)
    return trial.oracle("highs").score, trial.s


def depth_rows(dataset, lam, pairs, excluded, node_limit, greedy_max=0, sibling_nodes=0):
    """The rows of the module docstring for one data set (a dict, JSON-ready); the session-17
    rows only with ``greedy_max`` > 0, resp. ``sibling_nodes`` > 0."""
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
    if greedy_max > 0:
        out["exclusion_orders"] = exclusion_orders(score, s, ref, order, greedy_max)
    if sibling_nodes > 0:
        out["siblings"] = sibling_rows(score, s, sibling_nodes)
    return out


#: At most this many nodes for ``--sibling-nodes``: the row keeps a record of every relaxed node and
#: the dual point of every parent (a few KB each) until the search ends.
MAX_SIBLING_NODES = 200_000


def exclusion_orders(score, s, ref, order, greedy_max):
    """The ``exclusion_orders`` row: features fixed out until the root bound reaches ``ref``, in the
    static ``order`` (the root's, by bisection) and re-solved after each exclusion (a dict)."""
    from dpbench.core.oracle.relaxation import relaxation_bound

    none = np.zeros(0, dtype=np.int64)
    p = score.p

    def bound(free, warm=None):
        b, _, (warm_out, a) = relaxation_bound(score, none, [(np.sort(free), s)], method="prox", warm=warm,
                                               with_warm=True)
        return b, warm_out, a

    static = None
    if bound(order[p - s:])[0] >= ref:
        lo, hi = 0, p - s  # bound(lo) < ref <= bound(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if bound(order[mid:])[0] >= ref:
                hi = mid
            else:
                lo = mid
        static = hi
    free, warm, out = np.arange(p), None, []
    for _ in range(greedy_max + 1):
        b, warm, a = bound(free, warm)
        if b >= ref or free.size <= s:
            break
        j = int(np.argmax(a[free] ** 2))
        out.append(int(free[j]))
        free = np.delete(free, j)
    resolved = len(out) if b >= ref else None
    return {"static": static, "resolved": resolved, "greedy_max": greedy_max, "resolved_features": out,
            "static_features": order[:static].tolist() if static is not None else None}


def sibling_rows(score, s, nodes, solver_params=None, keep_nodes=False):
    """The ``siblings`` row: the first ``nodes`` nodes of the instance's optimum search, each node
    relaxation also bounded from its previous sibling's dual point (a dict of per-depth rows).
    ``solver_params`` go to the solver; with ``keep_nodes``, ``bounded`` also lists each such
    node's (F, C, m, sibling bound) (tests, on small instances: gravier's would take gigabytes)."""
    from dpbench.bench.registry import registry
    from dpbench.core.oracle import OASession

    orig = OASession._relax_node
    last, rec = {}, []

    def recorded(self, F, C, m, warm=None, close_at=None):
        # siblings share their parent's warm start object: it keys the last sibling's alpha, and is
        # kept beside it so that its id is never reused by another parent's
        key = id(warm) if warm is not None else None
        entry = last.get(key)
        sib = entry[1] if entry is not None and entry[0] is warm else None
        t0 = time.perf_counter()
        b_sib = self._dual_node(sib, F, C, m)[0] if sib is not None else -np.inf
        t1 = time.perf_counter()
        res = orig(self, F, C, m, warm, close_at)
        t2 = time.perf_counter()
        if key is not None:
            last[key] = (warm, self._relax_alphas[-1])
        bar = close_at if close_at is not None else np.inf
        node = (np.asarray(F).tolist(), np.asarray(C).tolist(), int(m), float(b_sib)) if keep_nodes else None
        rec.append((len(F), sib is not None, b_sib >= bar, res[0] >= bar, t1 - t0, t2 - t1, node))
        return res

    with mock.patch.object(OASession, "_relax_node", recorded):
        registry().solver("highs")(node_limit=nodes, **(solver_params or {})).session(score, s).solve()
    rows = []
    for d in sorted({r[0] for r in rec}):
        x = [r for r in rec if r[0] == d]
        with_sib = [r for r in x if r[1]]
        rows.append({"fixed_in": d, "relaxed": len(x), "with_sibling": len(with_sib),
                     "closed_by_relaxation": sum(r[3] for r in x),
                     "closed_by_sibling": sum(r[2] for r in with_sib),
                     "closed_by_sibling_only": sum(r[2] and not r[3] for r in with_sib),
                     "relaxation_ms": round(1e3 * float(np.median([r[5] for r in x])), 3),
                     "sibling_bound_ms": round(1e3 * float(np.median([r[4] for r in with_sib])), 3) if with_sib else None})
    out = {"nodes": nodes, "depths": rows}
    if keep_nodes:
        out["bounded"] = [r[6] for r in rec if r[1]]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="gravier")
    ap.add_argument("--lam", type=float, default=10.0)
    ap.add_argument("--pairs", type=int, default=3, help="features of largest single gain fixed in with every other")
    ap.add_argument("--excluded", default="0,10,30,100,300,1000", help="numbers of features fixed out")
    ap.add_argument("--node-limit", type=int, default=300_000, help="node limit of the reference optimum")
    ap.add_argument("--greedy-max", type=int, default=0,
                    help="at most this many re-solved exclusions (0: skip the exclusion_orders row)")
    ap.add_argument("--sibling-nodes", type=int, default=0,
                    help="nodes of the search bounded from their previous sibling too (0: skip)")
    ap.add_argument("--out", default=None, help="write the rows as JSON")
    a = ap.parse_args(argv)
    if not 0 <= a.sibling_nodes <= MAX_SIBLING_NODES:
        ap.error(f"--sibling-nodes must be in 0..{MAX_SIBLING_NODES} (each relaxed node and parent is kept in "
                 f"memory while the row is made); pass a smaller count")
    row = depth_rows(a.dataset, a.lam, a.pairs, [int(k) for k in a.excluded.split(",")], a.node_limit,
                     a.greedy_max, a.sibling_nodes)
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
    e = row.get("exclusion_orders")
    if e is not None:
        print(f"  features fixed out until the root bound reaches the reference: {e['static']} in the root's order, "
              f"{e['resolved'] if e['resolved'] is not None else '> ' + str(e['greedy_max'])} re-solved after each")
    if "siblings" in row:
        print(f"  first {row['siblings']['nodes']} nodes, node relaxations by features fixed in:")
        for d in row["siblings"]["depths"]:
            print(f"    {d['fixed_in']} in: {d['relaxed']} relaxed, {d['closed_by_relaxation']} closed by their own "
                  f"({d['relaxation_ms']} ms); {d['with_sibling']} with a sibling before, whose dual point closes "
                  f"{d['closed_by_sibling']} ({d['closed_by_sibling_only']} that their own does not; "
                  f"{d['sibling_bound_ms']} ms)")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(row, fh, indent=1)


if __name__ == "__main__":
    main()
