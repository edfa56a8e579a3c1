"""asv benchmarks: dpsis (canonical Lipschitz top-k) and sampagg (subsample-and-aggregate).

Targets (2-core machine, issue 6):

* ``dpsis`` at p = 22 283 (the gene-expression width of swope2024), k = s = 5: one draw
  in at most 50 ms (prepare -- the scores |X^T y| and their sort -- is timed separately).
* ``sampagg`` at n = 800, p = 10 000, s = 5 (the NeurIPS 2025 design, b_x = b_y = 0.5): one
  trial (prepare = 28 block Lasso fits, plus one draw) in at most 5 s, for the default
  ``alpha = 0.1`` and for ``alpha = 0.01`` (about 27 non-zeros per block, a far slower fit).

Run ``python benchmarks/bench_sampagg_dpsis.py`` to print medians next to the targets.
"""

import numpy as np
from dpbench.bench.registry import PluginInstances

try:  # as a module of the asv suite (package ``benchmarks``) or as a script
    from ._timing import median_seconds
except ImportError:
    from _timing import median_seconds

TARGETS = {
    "time_dpsis_draw": 0.050,
    "time_canonical_lipschitz_topk": 0.050,
    "time_dpsis_prepare": None,
    "time_sampagg_trial": 5.0,
    "time_sampagg_trial_alpha_001": 5.0,
    "time_sampagg_trial_lasso_path": 5.0,
}


def _trial(n, p, s, b, seed, generator="toeplitz"):
    from dpbench.bench.trial import PrivacySetup, Trial
    from dpbench_plugins.generators.toeplitz import Toeplitz

    problem = Toeplitz(n=n, p=p, s=s, rho=0.1, snr=5.0).generate(np.random.default_rng(seed))
    return Trial.from_problem(problem, PrivacySetup(b_x=b, b_y=b, r=1.1, lam=0.0), instances=PluginInstances())


class TimeDPSIS:
    """One dpsis draw at p = 22 283, s = 5 (n = 127, Burczynski's size)."""

    def setup(self):
        from dpbench_plugins.selectors.dpsis import DPSIS

        self.trial = _trial(127, 22_283, 5, 1.0, seed=0)
        self.sel = DPSIS()
        self.prepared = self.sel.prepare(self.trial, np.random.default_rng(1))
        self.rng = np.random.default_rng(2)
        self.scores = np.abs(self.trial.problem.X.T @ self.trial.problem.y)

    def time_dpsis_draw(self):
        self.sel.draw(self.trial, self.prepared, 1.0, 1, self.rng)

    def time_dpsis_prepare(self):
        self.sel.prepare(self.trial, self.rng)

    def time_canonical_lipschitz_topk(self):
        from dpbench.core.privacy.lipschitz import canonical_lipschitz_topk

        canonical_lipschitz_topk(self.rng, self.scores, 5, 1.0, 2.0)


class TimeSampAgg:
    """One sampagg trial (prepare + one draw) at n = 800, p = 10 000, s = 5."""

    timeout = 120

    def setup(self):
        self.trial = _trial(800, 10_000, 5, 0.5, seed=3)

    def _run(self, **params):
        from dpbench_plugins.selectors.sampagg import SampAgg

        sel = SampAgg(**params)
        prepared = sel.prepare(self.trial, np.random.default_rng(4))
        sel.draw(self.trial, prepared, 1.0, 1, np.random.default_rng(5))

    def time_sampagg_trial(self):
        self._run()

    def time_sampagg_trial_alpha_001(self):
        self._run(alpha=0.01)

    def time_sampagg_trial_lasso_path(self):
        self._run(estimator="lasso_path")




if __name__ == "__main__":
    d, a = TimeDPSIS(), TimeSampAgg()
    d.setup()
    a.setup()
    measured = {
        "time_dpsis_draw": median_seconds(d.time_dpsis_draw, 51),
        "time_canonical_lipschitz_topk": median_seconds(d.time_canonical_lipschitz_topk, 51),
        "time_dpsis_prepare": median_seconds(d.time_dpsis_prepare, 11),
        "time_sampagg_trial": median_seconds(a.time_sampagg_trial, 5),
        "time_sampagg_trial_alpha_001": median_seconds(a.time_sampagg_trial_alpha_001, 3),
        "time_sampagg_trial_lasso_path": median_seconds(a.time_sampagg_trial_lasso_path, 3),
    }
    print(f"{'benchmark':34s} {'median':>10s} {'target':>10s}")
    for name, sec in measured.items():
        target = TARGETS[name]
        verdict = "" if target is None else ("ok" if sec <= target else "SLOWER THAN TARGET")
        tgt = "-" if target is None else f"{target * 1e3:.0f} ms"
        print(f"{name:34s} {sec * 1e3:8.1f} ms {tgt:>10s}  {verdict}")
