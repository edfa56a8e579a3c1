"""asv benchmarks: ``mcmc`` with Roy & Tewari's l1-bounded score on their design.

Setting (issue 13): generator ``roy-tewari`` (n = 900, p = 2000, s = 4, strong signal,
seed 0), b_x = b_y = 1, B = 0.5, 10 chains (one trial of configs/roy-tewari2023.toml) at
epsilon = 10, 2000 steps; and the batched exact l1 solver alone on 10 000 random supports.

Targets (2-core machine): 10 chains x 10^4 steps in at most 25 s (so the authors' 10^5 steps
per epsilon in at most about 4 minutes; their code calls cvxpy per step, about 80 proposals per
second), and at least 20 000 l1 scores per second in batches of 10 000.

Measured (shared 2-core machine): 19 s per 10 chains x 10^4 steps at load ~2, 40 s and
16 000 scores per second at load 7-9 (other helpers' jobs); noisy.

Run ``python benchmarks/bench_mcmc_l1.py`` to print medians next to the targets.
"""

import sys

import numpy as np
from dpbench.bench.registry import PluginInstances

try:
    from ._timing import median_seconds
except ImportError:  # script mode
    from _timing import median_seconds

CHAINS, STEPS, EPSILON, BOUND = 10, 2000, 10.0, 0.5
TARGET_SECONDS_PER_1E4_STEPS = 25.0
TARGET_SCORES_PER_SECOND = 20_000
BATCH = 10_000


def _trial():
    from dpbench.bench.trial import Trial
    from dpbench.bench.registry import registry
    from dpbench.bench.trial import PrivacySetup

    prob = registry().generator("roy-tewari")().generate(np.random.default_rng(0))
    return Trial.from_problem(prob, PrivacySetup(b_x=1.0, b_y=1.0, r=1.1, lam=10.0), instances=PluginInstances())


class MCMCL1Chains:
    """10 chains of the l1-score sampler in lockstep."""

    timeout = 300

    def setup(self):
        from dpbench.bench.registry import registry

        self.trial = _trial()
        self.sel = registry().selector("mcmc")(iterations=STEPS, score="l1", l1_bound=BOUND)
        self.prep = self.sel.prepare(self.trial, np.random.default_rng(0))

    def time_chains(self):
        self.sel.draw(self.trial, self.prep, EPSILON, CHAINS, np.random.default_rng(1))


class L1ScoreBatch:
    """The exact batched solver on random supports of the design (mostly the fast path)."""

    def setup(self):
        trial = _trial()
        rng = np.random.default_rng(2)
        X, y = trial.score.X, trial.score.y
        S = np.stack([rng.choice(trial.p, trial.s, replace=False) for _ in range(BATCH)])
        S[: BATCH // 2, :2] = [0, 1]  # half hold two true features: the constrained path
        XS = X[:, S].transpose(1, 0, 2)
        self.G = np.einsum("kni,knj->kij", XS, XS)
        self.c = np.einsum("kni,n->ki", XS, y)
        self.yy = float(y @ y)

    def time_scores(self):
        from dpbench.core.score.l1 import solve_l1_blocks

        solve_l1_blocks(self.G, self.c, self.yy, BOUND)


def main() -> int:
    chains = MCMCL1Chains()
    chains.setup()
    sec = median_seconds(chains.time_chains, repeat=3) * (10_000 / STEPS)
    batch = L1ScoreBatch()
    batch.setup()
    rate = BATCH / median_seconds(batch.time_scores, repeat=5)
    print(f"mcmc l1, 10 chains x 1e4 steps: {sec:.1f} s (target <= {TARGET_SECONDS_PER_1E4_STEPS:g} s)")
    print(f"l1 scores per second: {rate:,.0f} (target >= {TARGET_SCORES_PER_SECOND:,})")
    return 0 if sec <= TARGET_SECONDS_PER_1E4_STEPS and rate >= TARGET_SCORES_PER_SECOND else 1


if __name__ == "__main__":
    sys.exit(main())
