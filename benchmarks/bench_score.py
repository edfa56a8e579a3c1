"""asv benchmarks: the shared batched score and the memory of exhaustive enumeration.

Targets (issue 2, this 2-core machine):

* batched score R(S, D) (docs/methods/score.md): at least 2 million supports per second
  for s = 5, n = 200, measured by scoring all C(40, 5) = 658,008 supports from
  ``iter_supports`` in chunks of 200,000 (lam = 1, r = 1.1, toeplitz data clipped at 0.5);
* ``exhaustive`` (docs/methods/exponential-mechanism.md) streams: peak RSS under 1 GiB for
  C(106, 5) = 101,340,876 >= 1e8 supports (n = 200, cache = 0, one prepare + 10 draws,
  about half a minute: a peakmem_ benchmark with a long timeout, not a unit test).

Run ``python benchmarks/bench_score.py`` to print medians next to the targets
(``--quick`` skips the 1e8 run).
"""

import math
import statistics
import sys
import time

import numpy as np
from dpbench.bench.registry import PluginInstances

TARGET_RATE = 2e6  # supports per second
TARGET_RSS = 2**30  # bytes
N, P, S = 200, 40, 5
CHUNK = 200_000
P_BIG = 106  # C(106, 5) = 101,340,876


def _trial(n=N, p=P, s=S, seed=0, lam=1.0, r=1.1):
    from dpbench.bench.trial import PrivacySetup, Trial
    from dpbench_plugins.generators.toeplitz import Toeplitz

    problem = Toeplitz(n=n, p=p, s=s, rho=0.1, snr=5.0).generate(np.random.default_rng(seed))
    return Trial.from_problem(problem, PrivacySetup(b_x=0.5, b_y=0.5, r=r, lam=lam), instances=PluginInstances())


def _rate(fn, count, repeat=5):
    """Median supports/s of ``fn()`` (which handles ``count`` supports) over ``repeat`` runs."""
    fn()  # warm-up: first-touch page faults and lazily built tables
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return count / statistics.median(times)


class ScoreRate:
    """Scores of all C(40, 5) supports at n = 200 (full Gram mode, p <= GRAM_LIMIT)."""

    timeout = 120

    def setup(self):
        from dpbench.core.supports import iter_supports

        self.trial = _trial()
        self.score = self.trial.score
        self.chunks = list(iter_supports(P, S, chunk_size=CHUNK))
        self.count = sum(len(c) for c in self.chunks)

    def _score_all(self):
        for c in self.chunks:
            self.score(c)

    def _enumerate_and_score(self):
        from dpbench.core.supports import iter_supports

        for c in iter_supports(P, S, chunk_size=CHUNK):
            self.score(c)

    def _solve_all(self):
        for c in self.chunks:
            self.score.solve(c)

    def time_score_c40_5(self):
        self._score_all()

    def time_iter_supports_c40_5(self):
        from dpbench.core.supports import iter_supports

        for _ in iter_supports(P, S, chunk_size=CHUNK):
            pass

    def track_score_rate(self):
        return _rate(self._score_all, self.count)

    track_score_rate.unit = "supports/s"

    def track_enumerate_and_score_rate(self):
        return _rate(self._enumerate_and_score, self.count)

    track_enumerate_and_score_rate.unit = "supports/s"

    def track_solve_with_beta_rate(self):
        return _rate(self._solve_all, self.count)

    track_solve_with_beta_rate.unit = "supports/s"


class ScoreRateOtherPaths:
    """Informative (no target): the p > GRAM_LIMIT column path and an always-active l2 bound."""

    timeout = 120

    def setup(self):
        from dpbench.core.supports import iter_supports
        from dpbench.core.score import RidgeScore

        t = _trial()
        X, y = t.problem.X, t.problem.y
        self.chunk = next(iter_supports(P, S, chunk_size=CHUNK))
        self.columns = RidgeScore(X, y, lam=1.0, r=1.1, gram="columns")
        self.active = RidgeScore(X, y, lam=1.0, r=1e-3)
        self.small = self.chunk[:20_000]

    def track_score_rate_columns(self):
        return _rate(lambda: self.columns(self.chunk), len(self.chunk), repeat=3)

    track_score_rate_columns.unit = "supports/s"

    def track_score_rate_all_active(self):
        return _rate(lambda: self.active(self.small), len(self.small), repeat=3)

    track_score_rate_all_active.unit = "supports/s"


def _exhaustive_1e8(n_draws=10):
    from dpbench_plugins.selectors.exhaustive import Exhaustive

    trial = _trial(p=P_BIG)
    sel = Exhaustive(limit=2 * 10**8, cache=0)  # cache = 0: always stream, never keep scores
    prepared = sel.prepare(trial, np.random.default_rng(1))
    return sel.draw(trial, prepared, 1.0, n_draws, np.random.default_rng(2))


def peakmem_exhaustive_1e8():
    """Peak RSS of exhaustive selection over C(106, 5) = 101,340,876 supports (target < 1 GiB)."""
    _exhaustive_1e8()


peakmem_exhaustive_1e8.timeout = 900


def _exhaustive_in_subprocess():
    """Wall seconds and peak RSS (bytes) of the 1e8 exhaustive run in a fresh interpreter."""
    import resource
    import subprocess
    from pathlib import Path

    code = ("import sys; sys.path.insert(0, %r); import bench_score as b; "
            "d = b._exhaustive_1e8(); print(d.supports.tolist())") % str(Path(__file__).parent)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
    return wall, rss, out.stdout.strip()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    b = ScoreRate()
    b.setup()
    print(f"batched score, s = {S}, n = {N}, all C({P}, {S}) = {b.count:,} supports, chunks of {CHUNK:,}")
    rate = b.track_score_rate()
    print(f"  score only          median {rate / 1e6:6.2f} M supports/s   target >= {TARGET_RATE / 1e6:.1f} M/s"
          f"   {'OK' if rate >= TARGET_RATE else 'MISSED'}")
    rate2 = b.track_enumerate_and_score_rate()
    print(f"  iter_supports+score median {rate2 / 1e6:6.2f} M supports/s   target >= {TARGET_RATE / 1e6:.1f} M/s"
          f"   {'OK' if rate2 >= TARGET_RATE else 'MISSED'}")
    print(f"  solve (with beta)   median {b.track_solve_with_beta_rate() / 1e6:6.2f} M supports/s")
    o = ScoreRateOtherPaths()
    o.setup()
    print(f"  gram='columns'      median {o.track_score_rate_columns() / 1e6:6.2f} M supports/s  (informative)")
    print(f"  l2 bound always active    {o.track_score_rate_all_active() / 1e6:6.2f} M supports/s  (informative)")
    if "--quick" in argv:
        return
    total = math.comb(P_BIG, S)
    print(f"exhaustive, C({P_BIG}, {S}) = {total:,} supports, cache=0, prepare + 10 draws (one run)")
    wall, rss, _ = _exhaustive_in_subprocess()
    print(f"  peak RSS {rss / 2**20:8.1f} MiB   target < {TARGET_RSS / 2**20:.0f} MiB   "
          f"{'OK' if rss < TARGET_RSS else 'MISSED'}   ({wall:.1f} s, {total / wall / 1e6:.2f} M supports/s incl. 2 passes)")


if __name__ == "__main__":
    main()
