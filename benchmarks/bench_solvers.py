"""asv benchmarks: the certified best-subset oracle (solver ``highs``, outer approximation).

Paper design (NeurIPS 2025): toeplitz rho = 0.1, SNR = 5, s = 5, b_x = b_y = 0.5, r = 1.1,
Lambda = 120. Targets on the 2-core machine: certified optimum (score set-up + oracle
session + solve; data generation excluded) in a median of <= 2 s at n = 800, p = 10 000
and <= 0.3 s at n = 400, p = 1000; no p x p matrix at p = 10 000 (peak RSS reported).
Run ``python benchmarks/bench_solvers.py`` to print medians next to the targets.
"""

import statistics
import time

TARGETS = {"time_certified_n800_p10000": 2.0, "time_certified_n400_p1000": 0.3}
SEEDS = (0, 1, 2, 3, 4)


def _problem(n, p, seed):
    from dpbench.bench.registry import registry
    from dpbench.core.seeding import rng_for

    gen = registry().generator("toeplitz")(n=n, p=p, s=5, rho=0.1, snr=5.0)
    return gen.generate(rng_for(seed, "data", gen.setting())).clipped(0.5, 0.5)


def _solve(problem, solver="highs"):
    from dpbench.bench.registry import registry
    from dpbench.core.score import RidgeScore

    score = RidgeScore(problem.X, problem.y, lam=120.0, r=1.1)
    res = registry().solver(solver)().session(score, problem.s).solve()
    if res.status != "optimal":
        raise RuntimeError(f"oracle not certified: {res}")
    return res


class TimeCertified:
    """Certified optimum of one paper-design problem per seed."""

    params = [[(400, 1000), (800, 10000)], list(SEEDS[:3])]
    param_names = ["n_p", "seed"]
    timeout = 120

    def setup(self, n_p, seed):
        self.problem = _problem(*n_p, seed)

    def time_certified(self, n_p, seed):
        _solve(self.problem)

    def track_master_solves(self, n_p, seed):
        return _solve(self.problem).iterations


def peakmem_certified_n800_p10000():
    _solve(_problem(800, 10000, 0))


def _median_seconds(n, p):
    times, iters = [], []
    for seed in SEEDS:
        prob = _problem(n, p, seed)
        t = time.perf_counter()
        res = _solve(prob)
        times.append(time.perf_counter() - t)
        iters.append(res.iterations)
    return statistics.median(times), times, iters


if __name__ == "__main__":
    import resource

    _solve(_problem(100, 200, 0))  # imports, HiGHS start-up
    for (n, p), key in (((400, 1000), "time_certified_n400_p1000"), ((800, 10000), "time_certified_n800_p10000")):
        med, times, iters = _median_seconds(n, p)
        ok = "OK" if med <= TARGETS[key] else "SLOW"
        print(f"{key}: median {med:.3f} s (target <= {TARGETS[key]} s) {ok}; "
              f"runs {[round(t, 3) for t in times]}, master solves {iters}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process after the p = 10000 runs (data generation included): {rss:.0f} MB")


# ------------------------------------------------------------- overlap (swap-level) calls
LEVEL_TARGETS = {"level_p20_default": 0.05}


def _level_calls(n, p, s, lam, seed, ts, node_limit=None):
    """Certified best support with exactly t swaps from S1, for t in ts (one session)."""
    from dpbench.bench.registry import registry
    from dpbench.core.score import RidgeScore
    from dpbench.core.seeding import rng_for

    gen = registry().generator("toeplitz")(n=n, p=p, s=s, rho=0.1, snr=5.0)
    prob = gen.generate(rng_for(seed, "data", gen.setting())).clipped(0.5, 0.5)
    sess = registry().solver("highs")().session(RidgeScore(prob.X, prob.y, lam=lam, r=1.1), s)
    S1 = sess.solve().support
    out = []
    for t in ts:
        t0 = time.perf_counter()
        r = sess.solve(overlap=(S1, s - t), node_limit=node_limit)
        out.append((t, r.status, r.iterations, time.perf_counter() - t0))
    return out


def time_levels_p20_default():
    """The built-in compare default (p = 20, s = 3, Lambda = 1): every level is enumerated."""
    _level_calls(200, 20, 3, 1.0, 0, (2, 3), None)


def time_levels_p200():
    _level_calls(400, 200, 5, 120.0, 0, (2, 3, 4, 5))


if __name__ == "__main__":
    for (n, p, s, lam, ts) in ((200, 20, 3, 1.0, (2, 3)), (400, 200, 5, 120.0, (2, 3, 4, 5)),
                               (800, 10000, 5, 120.0, (2, 3, 4, 5))):
        for seed in (0,):
            rows = _level_calls(n, p, s, lam, seed, ts)
            print(f"levels n={n} p={p} s={s} lam={lam} seed={seed}: " +
                  ", ".join(f"t={t} {st} {it} nodes {sec:.2f} s" for t, st, it, sec in rows))
