"""asv benchmarks: the ``mistakes`` and ``topr`` preparations on Khan (issue 15), with work counts.

Instance: Khan (63 x 2308, the DP-SIS paper's data), standardised, s = 5, clipped to
b_x = b_y = 0.5, r = 1.1, solver ``highs``, Lambda in {10, 120}, and the selectors' default work
limit (:data:`dpbench.core.toplist.SWAP_LEVEL_NODE_LIMIT` nodes per call). Issue 15 target: one full
``topr`` + ``mistakes`` preparation certified in <= 60 s.

Printed per stage (certified optimum S1; ``mistakes``: the level minima R_2 .. R_5; ``topr``:
the top-R list, R = (p - s) s + 2): seconds, certified or not, and the deterministic work
(branch-and-bound nodes / master iterations summed over the calls, read from the oracle
results' ``iterations``; per threshold enumeration its members below tau, nodes, optimum
calls and certification). Seconds
are wall clock on a shared machine (noisy); the work counts are the same on every machine.

    python benchmarks/bench_khan_levels.py [--lam 10,120] [--stages optimum,mistakes,topr]

Measured 2026-11-21, Lambda = 10, 2-core machine shared by many processes (load 5-30, so
seconds are several times the idle figures):

* optimum: certified, 295 nodes, 6-16 s (before: 249 s, of which a threshold tie-check after
  the k-support branch and bound, already canonical, took 13 146 nodes);
* ``mistakes`` (levels 2-5): certified, 3 342 nodes/iterations in all, 74-109 s; levels 3-5 by
  one call per root (before: level 4 stopped uncertified at 20 000 joint nodes, lower bound
  3.836 against 3.985, and level 5 likewise);
* ``topr`` (before the seeded bar and the per-root enumerations): not certified, 417-627 s.
  The R-th score (<= 4.2796) lies above the minima of levels 2-5 (3.800, 3.870, 3.985,
  4.190), so every level must be enumerated below it: level 2 (1 385 nodes) and level 3
  (16 432 nodes) certified; levels 4 and 5 (C(5, t) C(2303, t) ~ 1.2e12 and 5.4e14 members)
  stopped at 20 000 nodes with 278 and 12 members found.
* ``topr`` now (docs/performance.md, "Oracle scale targets"): **certified**, 2 699 s at load 5-7; R-th
  score 4.27839; levels 2 / 3 / 4 by threshold search per root (6 893 / 4 709 / 941 members,
  1 337 / 29 977 / 32 150 nodes), level 5 by optimum calls (20 members; alone: 21 calls,
  21 174 nodes).

Lambda = 120: everything certified, 6.9 s in all at load 6 (optimum 1 node, levels 263, topr's
threshold enumerations 145 / 262 / 189 nodes, seeded bar 10.8405, R-th score 10.8354; before:
17 s, 289 / 300 / 189 nodes).
"""

import time

import numpy as np
from dpbench.bench.registry import PluginInstances

BX, BY, R_BOUND, SEED = 0.5, 0.5, 1.1, 1
SETTING = {"dataset": "khan", "s": 5, "standardize": "standardize"}
TARGET_SECONDS = 60.0


def _highs_available() -> bool:
    from dpbench.bench.registry import registry

    return "highs" in registry(refresh=True).names("solver")


def make_trial(lam: float):
    """A fresh Trial (empty cache) of standardised Khan, as ``dpbench compare --dataset khan`` builds it."""
    from dpbench.bench.config import RunConfig, make_problem
    from dpbench.bench.trial import Trial

    cfg = RunConfig(methods=["topr", "mistakes"], data=[SETTING], seed=SEED, lam=lam, b_x=BX, b_y=BY, r=R_BOUND)
    prob = make_problem(cfg, SETTING, 0)
    return Trial.from_problem(prob, cfg.privacy_setup, preprocessing="clip", solver="highs", solver_params={},
                              loss=cfg.loss, instances=PluginInstances())


def run(lam: float, stages=("optimum", "mistakes", "topr")) -> dict:
    """Seconds, certification and work counts of each stage on one fresh trial."""
    from dpbench.core import toplist
    from dpbench_plugins.selectors.swaps.topr import auto_r

    trial = make_trial(lam)
    out = {}
    t0 = time.perf_counter()
    opt = toplist.optimum(trial)
    out["optimum"] = {"seconds": time.perf_counter() - t0, "certified": opt.certified, "work": int(opt.iterations),
                      "message": opt.message}
    if "mistakes" in stages:
        t0 = time.perf_counter()
        minima, cert, _, calls = toplist.level_minima(trial, node_limit=toplist.SWAP_LEVEL_NODE_LIMIT)
        levels = {t: trial.cache[("swap_level", "highs", t)] for t in range(2, len(minima))}
        out["mistakes"] = {"seconds": time.perf_counter() - t0, "certified": bool(np.all(cert)),
                           "work": int(sum(r.iterations for r in levels.values())),
                           "levels": {t: (round(float(r.objective), 6), r.status, int(r.iterations))
                                      for t, r in levels.items()}}
    if "topr" in stages:
        t0 = time.perf_counter()
        lst = toplist.top_list(trial, auto_r(trial.p, trial.s), node_limit=toplist.SWAP_LEVEL_NODE_LIMIT)
        d = lst.diagnostics
        out["topr"] = {"seconds": time.perf_counter() - t0, "certified": lst.certified,
                       "tau": d.get("r_th_score"), "reason": d.get("reason"),
                       "seeded_bar": d.get("seeded_bar"),
                       "thresholded": {t: (v["members_below"], v["nodes"], v["calls"], v["certified"])
                                       for t, v in d.get("levels_thresholded", {}).items()}}
    return out


class TimeKhanPreparation:
    """Wall-clock time of the optimum + ``mistakes`` level minima on Khan (topr: script mode only)."""

    params = [10.0, 120.0]
    param_names = ["lam"]
    timeout = 900
    number = 1
    repeat = 1

    def setup(self, lam):
        if not _highs_available():
            raise NotImplementedError("solver 'highs' is not registered")

    def time_mistakes_preparation(self, lam):
        run(lam, stages=("optimum", "mistakes"))

    def track_mistakes_work(self, lam):
        return run(lam, stages=("optimum", "mistakes"))["mistakes"]["work"]

    track_mistakes_work.unit = "nodes"


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lam", default="10,120")
    ap.add_argument("--stages", default="optimum,mistakes,topr")
    a = ap.parse_args()
    if not _highs_available():
        raise SystemExit("solver 'highs' is not registered")
    for lam in (float(x) for x in a.lam.split(",")):
        res = run(lam, tuple(a.stages.split(",")))
        total = sum(v["seconds"] for v in res.values())
        for stage, v in res.items():
            print(f"lam={lam:g} {stage}: {v}")
        ok = all(v["certified"] for v in res.values())
        verdict = "OK" if ok and total <= TARGET_SECONDS else ("UNCERTIFIED" if not ok else "SLOWER THAN TARGET")
        print(f"lam={lam:g}: {total:.1f} s in all, certified {ok} (target: certified, <= {TARGET_SECONDS:g} s)  {verdict}")
