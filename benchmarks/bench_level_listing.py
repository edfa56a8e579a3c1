"""One listing of gravier's top-R list in one process, with the time of each part of its nodes.

Issue 22, session 26. topr's level 5 on gravier at the defaults (``standardize``, Lambda = 10,
s = 5) is the listing of every support below the list's R-th score, 25.486591323124824, with the
optimum's five features excluded; it holds none, and proving that takes 194 604 nodes on an Intel
Xeon (session 24's machine type). This script runs that listing in one process (its two split
parts one after the other, ``workers = 1``), after a five-node warm-up that compiles the kernels,
and prints the seconds, the nodes, the status and lower bound, and the seconds summed over the
node relaxations (``_relax_node``), the leaves' scans (``_scan_leaf``) and the closures that score
a node's open children's pairs (``_score_open_pairs``). Node counts and bounds are deterministic
on one machine; seconds are wall clock. Two codes are compared by running this script from each
checkout, alternating. ``--pair-leaf-limit`` sets the oracle's ``pair_leaf_limit`` (session 27:
nodes with two features left and at most that many pairs are scanned whole; 0 turns that off), and
``--optimum`` runs gravier's certified optimum instead of the listing, in one process too.

    python benchmarks/bench_level_listing.py [--node-limit 250000] [--pair-leaf-limit N] [--optimum]
        [--out row.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.bench_real_data import make_trial  # noqa: E402  (the checkout is on the path now)

#: gravier's top-R list at the defaults: the R-th score and the optimum's support (sessions 20-25).
THRESHOLD = 25.486591323124824
OPTIMUM = (62, 666, 731, 1336, 2672)
PARTS = ("_relax_node", "_scan_completions", "_score_open_pairs")


def run(node_limit: int, pair_leaf_limit: int | None = None, optimum: bool = False) -> dict:
    """The listing's row (or the optimum's, ``optimum=True``): seconds, nodes, status, lower bound,
    and seconds per part of the nodes (``scan_completions`` includes the closures' scans)."""
    from dpbench.core.oracle import OASession

    spent = {name: [0, 0.0] for name in PARTS}
    saved = {name: getattr(OASession, name) for name in PARTS}

    def timed(name):
        inner = saved[name]

        def wrapper(self, *args, **kw):
            t0 = time.perf_counter()
            try:
                return inner(self, *args, **kw)
            finally:
                spent[name][0] += 1
                spent[name][1] += time.perf_counter() - t0
        return wrapper

    try:
        for name in PARTS:
            setattr(OASession, name, timed(name))
        params = {} if pair_leaf_limit is None else {"pair_leaf_limit": pair_leaf_limit}
        sess = make_trial("gravier", 10.0, "standardize").oracle(split_parts=2, workers=1, **params)
        sess.supports_below(1e9, fixed_out=list(range(2900, 2905)), node_limit=5)  # compiles the kernels
        for v in spent.values():
            v[:] = [0, 0.0]
        t0 = time.perf_counter()
        if optimum:
            res = sess.solve(node_limit=node_limit)
            members, nodes = int(res.support is not None), res.iterations
        else:
            res = sess.supports_below(THRESHOLD, fixed_out=list(OPTIMUM), node_limit=node_limit)
            members, nodes = len(res.supports), res.nodes
        seconds = time.perf_counter() - t0
    finally:
        for name in PARTS:
            setattr(OASession, name, saved[name])
    return {"search": "optimum" if optimum else "level 5", "seconds": round(seconds, 1), "nodes": int(nodes),
            "status": res.status, "lower_bound": float(res.lower_bound), "members": members,
            "parts": {name.strip("_"): {"calls": c, "seconds": round(s, 2)} for name, (c, s) in spent.items()},
            "load": round(os.getloadavg()[0], 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--node-limit", type=int, default=250_000, help="deterministic work limit (nodes)")
    ap.add_argument("--pair-leaf-limit", type=int, default=None,
                    help="the oracle's pair_leaf_limit (default: the library's; 0: no pair leaves)")
    ap.add_argument("--optimum", action="store_true", help="gravier's certified optimum instead of level 5")
    ap.add_argument("--out", help="write the row as JSON here")
    args = ap.parse_args(argv)
    row = run(args.node_limit, args.pair_leaf_limit, args.optimum)
    print(json.dumps(row))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(row, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
