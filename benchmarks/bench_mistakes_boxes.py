"""How often level boxes decide the draws of ``mistakes`` (the toeplitz p = 10^4 trial, issue 22).

``mistakes`` draws its level t by inverse-CDF sampling of one uniform number; where a level's
minimum R_t is only boxed, L_t <= R_t <= U_t (its search stopped at the work limit), a draw is
still the exact mechanism's draw when every R in the box gives the same t
(docs/methods/mistakes.md, "Exact draws from bounded level minima"). This script measures, on
the trial of ``dpbench compare --methods topr,mistakes --n 200 --p 10000 --s 5 --lam 10 --seed 0``
(trial 0), the level boxes and the share of seeds whose draws are all decided:

* ``--run compare``: topr then mistakes preparation at the defaults, as the main job runs them
  (about six minutes: topr certifies level 4's optimum and searches level 5 to its limit);
* ``--run mistakes --node-limit N``: mistakes alone with N nodes per root;
* ``--levels FILE``: no search; the boxes stored by an earlier run (``--out``).

Then, for each epsilon and number of draws, the share of ``--seeds`` seeds (the draws' random
numbers) for which every draw is decided, and the bounds on P(t) at the largest level. Node
counts and boxes are deterministic; seconds are wall clock with the load average.

    python benchmarks/bench_mistakes_boxes.py --run compare --out benchmarks/mistakes_boxes_session7.json
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


def run_levels(which, node_limit=None):
    """Prepare the selectors and return the level boxes with what each level cost."""
    from dpbench.bench.registry import registry

    trial = make_trial()
    load0, t0 = os.getloadavg()[0], time.perf_counter()
    opt = trial.optimum("highs")
    methods = ["topr", "mistakes"] if which == "compare" else ["mistakes"]
    seconds = {}
    prep = None
    for m in methods:
        t = time.perf_counter()
        sel = registry().selector(m)(**({"node_limit": node_limit} if node_limit and m == "mistakes" else {}))
        prep = sel.prepare(trial, np.random.default_rng(0))
        seconds[m] = time.perf_counter() - t
    levels = []
    for t in range(2, len(prep.minima)):
        res = trial.cache.get(("swap_level", "highs", t))
        levels.append({"t": t, "upper": float(res.objective), "lower": float(res.lower_bound), "status": res.status,
                       "nodes": int(res.iterations), "seconds": float(res.seconds), "how": res.message})
    return {"run": which, "node_limit": node_limit, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load1_start": load0, "load1_end": os.getloadavg()[0], "optimum_seconds": float(opt.seconds),
            "prepare_seconds": seconds, "total_seconds": time.perf_counter() - t0, "sensitivity": trial.sensitivity,
            "p": trial.p, "s": trial.s, "R_t": [float(v) for v in prep.minima],
            "R_t_lower": [float(v) for v in prep.lower], "gap_condition": bool(prep.gap_condition), "levels": levels}


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
        out.append(row)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", choices=["compare", "mistakes"], help="run the preparation(s) to get the boxes")
    src.add_argument("--levels", help="read the boxes from an earlier --out file")
    ap.add_argument("--node-limit", type=int, default=None, help="mistakes.node_limit with --run mistakes")
    ap.add_argument("--epsilons", default="0.5,1,2,4")
    ap.add_argument("--draws", default="20,100")
    ap.add_argument("--seeds", type=int, default=2000)
    ap.add_argument("--out", default=None, help="write the boxes and shares as JSON")
    args = ap.parse_args(argv)
    box = json.load(open(args.levels))["boxes"] if args.levels else run_levels(args.run, args.node_limit)
    print(json.dumps({k: v for k, v in box.items() if k != "levels"}))
    for lv in box["levels"]:
        print(f"  level {lv['t']}: {lv['lower']:.4f} <= R_t <= {lv['upper']:.4f}  {lv['status']:<10} "
              f"{lv['nodes']:>7} nodes {lv['seconds']:7.1f} s")
    shares = decided_shares(box, [float(e) for e in args.epsilons.split(",")],
                            [int(d) for d in args.draws.split(",")], args.seeds)
    for row in shares:
        print("  eps {epsilon:g}: P(t_max) in [{lo:.4f}, {hi:.4f}]; ".format(epsilon=row["epsilon"], lo=row["p_last"][0],
                                                                         hi=row["p_last"][1])
              + ", ".join(f"{k.split('_')[-1]} draws all decided for {v:.1%} of seeds"
                          for k, v in row.items() if k.startswith("all_decided")))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"boxes": box, "shares": shares}, f, indent=1)


if __name__ == "__main__":
    main()
