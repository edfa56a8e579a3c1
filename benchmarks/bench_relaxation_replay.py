"""The node relaxations of one search, recorded once and replayed by any version of the code.

Issue 22, session 12. ``--record FILE`` runs an instance's optimum search (the trial of
``dpbench compare --dataset NAME --s 5 --lam LAM``, as :mod:`bench_relaxation_depth` builds it)
and stores, for its first ``--count`` node relaxations, what each received: the fixed-in features
F, the candidates C, how many more m, the parent's warm start and the bar, with the bound it
returned. ``--replay FILE`` solves exactly those relaxations again with whatever ``dpbench`` is
imported, so two versions compare on the same inputs, one after the other in one shell::

    python benchmarks/bench_relaxation_replay.py --record /tmp/gravier.pkl --dataset gravier
    PYTHONPATH=/path/to/old/checkout python benchmarks/bench_relaxation_replay.py --replay /tmp/gravier.pkl
    python benchmarks/bench_relaxation_replay.py --replay /tmp/gravier.pkl

Printed: milliseconds per relaxation (median of ``--repeats`` passes, each over all of them), how
many bounds equal the recorded ones bitwise, and the largest relative difference. Every bound is
valid whatever its accuracy (:mod:`dpbench.core.oracle.relaxation`); equal bounds mean the
search would take the same tree. The file is a pickle: replay only files you recorded.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_relaxation_depth import make_score  # noqa: E402  (the benchmarks folder is on the path now)


def record(dataset, lam, count, node_limit):
    """The first ``count`` node relaxations of the instance's optimum search: a dict, pickle-ready.

    A search over screened survivors may run on their own columns (a session over ``X[:, keep]``,
    :meth:`~dpbench.core.oracle.session.OASession._on_columns`); the relaxations recorded are those
    of the first column space that relaxes, and ``columns`` says which (None: all features).
    """
    from dpbench.bench.registry import registry

    score, s = make_score(dataset, lam)
    sess = registry().solver("highs")(node_limit=node_limit).session(score, s)
    cls, calls, spaces, space = type(sess), [], {id(score): None}, []
    orig, orig_cols = cls._relax_node, cls._on_columns

    def keep(self, F, C, m, warm=None, close_at=None):
        out = orig(self, F, C, m, warm, close_at=close_at)
        if not space:
            space.append(id(self.score))
        if len(calls) < count and id(self.score) == space[0]:
            calls.append((np.array(F), np.array(C), int(m), warm, close_at, float(out[0])))
        return out

    def on_columns(self, cols, cons):
        out = orig_cols(self, cols, cons)
        spaces[id(out[0].score)] = np.array(cols)
        return out

    cls._relax_node, cls._on_columns = keep, on_columns
    try:
        sess.solve()
    finally:
        cls._relax_node, cls._on_columns = orig, orig_cols
    columns = spaces.get(space[0]) if space else None
    return {"dataset": dataset, "lam": lam, "prox": dict(sess.PROX_NODE), "calls": calls, "columns": columns}


def replay(doc, repeats):
    """(ms per relaxation: median over the passes, bitwise-equal bounds, largest relative difference)."""
    from dpbench.core.oracle.relaxation import relaxation_bound

    score, _ = make_score(doc["dataset"], doc["lam"])
    if doc.get("columns") is not None:
        score = type(score)(score.X[:, doc["columns"]], score.y, lam=score.lam, r=score.r)
    passes, bounds = [], []
    for _ in range(repeats):
        bounds, t = [], time.perf_counter()
        for F, C, m, warm, close_at, _b in doc["calls"]:
            close = close_at if close_at is not None and np.isfinite(close_at) else None
            bounds.append(relaxation_bound(score, F, [(C, m)], per_feature=True, method="prox", with_warm=True,
                                           **dict(doc["prox"], warm=warm, close_at=close))[0])
        passes.append((time.perf_counter() - t) / len(doc["calls"]) * 1e3)
    rec = np.array([c[5] for c in doc["calls"]])
    got = np.array(bounds)
    rel = np.abs(got - rec) / np.maximum(np.abs(rec), 1e-300)
    return float(np.median(passes)), int((got == rec).sum()), float(rel.max()) if rel.size else 0.0


# ----------------------------------------------------------------------------- asv
class NodeRelaxation:
    """asv: the first 300 node relaxations of gravier's and khan's optimum searches (``standardize``,
    Lambda = 10), recorded in ``setup`` by the benchmarked commit and timed when solved again.

    ``time_relaxations`` is the time of all of them (divide by ``track_relaxations`` for the cost
    of one); ``track_bounds_equal`` counts the bounds equal to the ones the search computed
    (all of them, unless a relaxation stopped being deterministic).
    """

    params = [["gravier", "khan"]]
    param_names = ["dataset"]
    number = 1
    repeat = 3
    timeout = 300

    def setup(self, dataset):
        self.doc = record(dataset, 10.0, 300, 1000)
        replay(self.doc, 1)  # loads (or compiles) the kernels before anything is timed

    def time_relaxations(self, dataset):
        replay(self.doc, 1)

    def track_relaxations(self, dataset):
        return len(self.doc["calls"])

    track_relaxations.unit = "relaxations"

    def track_bounds_equal(self, dataset):
        return replay(self.doc, 1)[1]

    track_bounds_equal.unit = "relaxations"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    act = ap.add_mutually_exclusive_group(required=True)
    act.add_argument("--record", metavar="FILE", help="run the search and store its relaxations")
    act.add_argument("--replay", metavar="FILE", help="solve the stored relaxations again")
    ap.add_argument("--dataset", default="gravier")
    ap.add_argument("--lam", type=float, default=10.0)
    ap.add_argument("--count", type=int, default=4000, help="relaxations to record (default 4000)")
    ap.add_argument("--node-limit", type=int, default=20_000, help="node limit of the recorded search")
    ap.add_argument("--repeats", type=int, default=3, help="replay passes (default 3; the first also compiles)")
    a = ap.parse_args(argv)
    if a.record:
        doc = record(a.dataset, a.lam, a.count, a.node_limit)
        with open(a.record, "wb") as fh:
            pickle.dump(doc, fh)
        print(f"{len(doc['calls'])} relaxations of {a.dataset} (Lambda = {a.lam:g}) recorded in {a.record}")
        return 0
    with open(a.replay, "rb") as fh:
        doc = pickle.load(fh)
    ms, equal, rel = replay(doc, a.repeats)
    import dpbench

    print(f"{doc['dataset']}: {len(doc['calls'])} relaxations, {ms:.3f} ms each (median of {a.repeats} passes), "
          f"{equal} bounds bitwise equal to the recorded ones, largest relative difference {rel:.1e} "
          f"(dpbench from {os.path.dirname(dpbench.__file__)}, load {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
