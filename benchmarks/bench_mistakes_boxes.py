"""How often level boxes decide the draws of ``mistakes`` (the toeplitz p = 10^4 trial, issue 22).

``mistakes`` draws its level t by inverse-CDF sampling of one uniform number; where a level's
minimum R_t is only boxed, L_t <= R_t <= U_t (its search stopped at the work limit), a draw is
still the exact mechanism's draw when every R in the box gives the same t
(docs/methods/mistakes.md, "Exact draws from bounded level minima"). This script measures, on
the trial of ``dpbench compare --methods topr,mistakes --n 200 --p 10000 --s 5 --lam 10 --seed 0``
(trial 0), the level boxes and the share of seeds whose draws are all decided:

* ``--run compare``: topr then mistakes preparation at the defaults, as the main job runs them
  (about 40 s since session 10: the large levels are listed below topr's bar, and mistakes' first
  boxes are these listings);
* ``--run mistakes --node-limit N``: mistakes alone with N nodes per root;
* ``--searched`` (with ``--run``): then also every level's minimum searched (what an undecided
  draw asks, about six minutes; before session 10 the default preparation did this);
* ``--levels FILE``: no search; the boxes stored by an earlier run (``--out``).

Then, for each epsilon and number of draws, the share of ``--seeds`` seeds (the draws' random
numbers) for which every draw is decided by the first boxes, with ``--searched`` also after each
boxed level's search (in increasing t, as ``mistakes`` makes them for an undecided draw; after the
last one, the draws' final certification), and the bounds on P(t) at the largest level. Node counts and boxes are deterministic; seconds are wall clock with
the load average.

    python benchmarks/bench_mistakes_boxes.py --run compare --searched --out benchmarks/mistakes_boxes_session10.json
    python benchmarks/bench_mistakes_boxes.py --run mistakes --node-limit 2000
    python benchmarks/bench_mistakes_boxes.py --levels benchmarks/mistakes_boxes_session6.json
"""

import argparse
import json
import os
import sys
import time

import numpy as np

SETTING = {"generator": "toeplitz", "n": 200, "p": 10_000, "s": 5}


def make_trial():
    """A fresh trial 0 of the toeplitz setting (seed 0, Lambda = 10), as ``dpbench compare`` builds it."""
    from dpbench.bench.config import RunConfig, make_problem
    from dpbench.bench.trial import Trial
    from dpbench.bench.registry import PluginInstances

    cfg = RunConfig(methods=["topr", "mistakes"], data=[SETTING], seed=0, lam=10.0)
    prob = make_problem(cfg, SETTING, 0)
    return Trial.from_problem(prob, cfg.privacy_setup, preprocessing="clip", solver=cfg.solver,
                              solver_params=cfg.solver_params, loss=cfg.loss, instances=PluginInstances())


def run_levels(which, node_limit=None, searched=False):
    """Prepare the selectors and return the level boxes with what each level cost (and, with
    ``searched``, the boxes after every level's minimum is searched, as an undecided draw asks)."""
    from dpbench.api import toplist
    from dpbench.bench.registry import registry

    trial = make_trial()
    load0, t0 = os.getloadavg()[0], time.perf_counter()
    opt = trial.optimum("highs")
    methods = ["topr", "mistakes"] if which == "compare" else ["mistakes"]
    seconds = {}
    prep = sel = None
    for m in methods:
        t = time.perf_counter()
        sel = registry().selector(m)(**({"node_limit": node_limit} if node_limit and m == "mistakes" else {}))
        prep = sel.prepare(trial, np.random.default_rng(0))
        seconds[m] = time.perf_counter() - t
    total = time.perf_counter() - t0
    out = {"run": which, "node_limit": node_limit, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "load1_start": load0, "optimum_seconds": float(opt.seconds), "prepare_seconds": seconds,
           "total_seconds": total, "sensitivity": trial.sensitivity, "p": trial.p, "s": trial.s,
           "first_boxes": bool(prep.first_boxes), **_boxes(trial, prep, node_limit)}
    if searched:
        t = time.perf_counter()
        full = sel.refined(trial, prep)
        out["searched"] = {"seconds": time.perf_counter() - t, **_boxes(trial, full, node_limit)}
    out["load1_end"] = os.getloadavg()[0]
    return out


def _boxes(trial, prep, node_limit):
    """R_t, R_t_lower and, per level t >= 2, where its box came from and what it cost."""
    from dpbench.api import toplist

    limit = toplist.SWAP_LEVEL_NODE_LIMIT if node_limit is None else node_limit  # the listings' cache key
    listed = toplist.list_large_levels(trial, "highs", toplist.default_list_length(trial.p, trial.s), None, limit)
    levels = []
    for t in range(2, len(prep.minima)):
        res = trial.cache.get(("swap_level", "highs", t))
        row = {"t": t, "upper": float(prep.minima[t]), "lower": float(prep.lower[t])}
        if res is not None:
            row.update(status=res.status, nodes=int(res.iterations), seconds=float(res.seconds), how=res.message)
        elif listed is not None and t in listed.listings:
            li = listed.listings[t]
            row.update(status=li.status, nodes=int(li.nodes), seconds=float(li.seconds),
                       how=f"listing below {li.threshold:.6g}: {len(li.scores)} members")
        levels.append(row)
    return {"R_t": [float(v) for v in prep.minima], "R_t_lower": [float(v) for v in prep.lower],
            "gap_condition": bool(prep.gap_condition), "levels": levels}


def decided_shares(box, epsilons, draws, seeds):
    """{(epsilon, n_draws): share of seeds deciding every draw} and the bounds on P(t_max)."""
    from dpbench.api import decided_by_bounds, em_log_weights, inverse_cdf, log_binom, probability_bounds

    t = np.arange(len(box["R_t"]))
    sizes = log_binom(box["s"], t) + log_binom(box["p"] - box["s"], t)
    out = []
    for eps in epsilons:
        lo = em_log_weights(box["R_t"], eps, box["sensitivity"], log_multiplicity=sizes)
        hi = em_log_weights(box["R_t_lower"], eps, box["sensitivity"], log_multiplicity=sizes)
        low, high = probability_bounds(lo, hi)
        row = {"epsilon": eps, "p_last": [float(low[-1]), float(high[-1])]}
        for nd in draws:
            ok = [decided_by_bounds(lo, hi, u, inverse_cdf(lo, u)).all()
                  for u in (np.random.default_rng(k).random(nd) for k in range(seeds))]
            row[f"all_decided_{nd}"] = float(np.mean(ok))
            if "searched" in box:
                # An undecided draw searches the boxed levels one at a time in increasing t, each
                # box then intersected with its search's: the share decided after each level.
                up, low = np.array(box["R_t"], float), np.array(box["R_t_lower"], float)
                boxed = [k for k in range(2, len(up)) if low[k] < up[k]]
                for k in boxed:
                    up[k] = min(up[k], box["searched"]["R_t"][k])
                    low[k] = max(low[k], box["searched"]["R_t_lower"][k])
                    lo2 = em_log_weights(up, eps, box["sensitivity"], log_multiplicity=sizes)
                    hi2 = em_log_weights(low, eps, box["sensitivity"], log_multiplicity=sizes)
                    ok2 = [decided_by_bounds(lo2, hi2, u, inverse_cdf(lo2, u)).all()
                           for u in (np.random.default_rng(j).random(nd) for j in range(seeds))]
                    key = "searches" if k == boxed[-1] else f"level_{k}_searched"
                    row[f"all_decided_{nd}_after_{key}"] = float(np.mean(ok2))
        out.append(row)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", choices=["compare", "mistakes"], help="run the preparation(s) to get the boxes")
    src.add_argument("--levels", help="read the boxes from an earlier --out file")
    ap.add_argument("--node-limit", type=int, default=None, help="mistakes.node_limit with --run mistakes")
    ap.add_argument("--searched", action="store_true",
                    help="also search every level's minimum (what an undecided draw asks; about six minutes)")
    ap.add_argument("--epsilons", default="0.5,1,2,4")
    ap.add_argument("--draws", default="20,100")
    ap.add_argument("--seeds", type=int, default=2000)
    ap.add_argument("--out", default=None, help="write the boxes and shares as JSON")
    args = ap.parse_args(argv)
    box = json.load(open(args.levels))["boxes"] if args.levels else run_levels(args.run, args.node_limit,
                                                                               args.searched)
    print(json.dumps({k: v for k, v in box.items() if k not in ("levels", "searched")}))
    for name, b in (("first", box), ("searched", box.get("searched"))):
        for lv in (b or {}).get("levels", []):
            print(f"  {name} level {lv['t']}: {lv['lower']:.4f} <= R_t <= {lv['upper']:.4f}  {lv.get('status', ''):<10} "
                  f"{lv.get('nodes', 0):>7} nodes {lv.get('seconds', 0.0):7.1f} s  {lv.get('how', '')}")
    shares = decided_shares(box, [float(e) for e in args.epsilons.split(",")],
                            [int(d) for d in args.draws.split(",")], args.seeds)
    for row in shares:
        print("  eps {epsilon:g}: P(t_max) in [{lo:.4f}, {hi:.4f}]; ".format(epsilon=row["epsilon"], lo=row["p_last"][0],
                                                                         hi=row["p_last"][1])
              + ", ".join(f"{k[len('all_decided_'):]}: {v:.1%}" for k, v in row.items() if k.startswith("all_decided")))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"boxes": box, "shares": shares}, f, indent=1)


if __name__ == "__main__":
    main()
