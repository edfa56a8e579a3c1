"""asv benchmarks: the iterative baselines noisy-iht and fw-lasso (issue 26).

Target (2-core machine): at n = 800, p = 10 000, s = 5, T = 100 (the NeurIPS 2025 design,
b_x = b_y = 0.5, run delta = 1e-6), one draw of either in at most 2 s after the
epsilon-independent ``prepare`` (``X^T y``; the p x p Gram is not stored above p = 1000, so
each iteration multiplies by X). The accountant's calibration is a pure function of
(T, s, epsilon, delta) cached per process (:func:`dpbench.core.privacy.accounting.calibrate`); it is
timed separately (``time_*_calibration``: one uncached calibration; the dp-accounting import
is paid in ``setup``).

Run ``python benchmarks/bench_iterative.py`` to print medians next to the targets.
"""

import numpy as np
from dpbench.bench.registry import PluginInstances

try:  # as a module of the asv suite (package ``benchmarks``) or as a script
    from ._timing import median_seconds
except ImportError:
    from _timing import median_seconds

TARGETS = {
    "time_noisy_iht_draw": 2.0,
    "time_fw_lasso_draw": 2.0,
    "time_noisy_iht_calibration": None,
    "time_fw_lasso_calibration": None,
}


def _trial(n, p, s, seed):
    from dpbench.bench.trial import PrivacySetup, Trial
    from dpbench_plugins.generators.toeplitz import Toeplitz

    problem = Toeplitz(n=n, p=p, s=s, rho=0.1, snr=5.0).generate(np.random.default_rng(seed))
    return Trial.from_problem(problem, PrivacySetup(b_x=0.5, b_y=0.5, r=1.1, lam=0.0, delta=1e-6), instances=PluginInstances())


class TimeIterative:
    """One draw (T = 100) of noisy-iht and of fw-lasso at n = 800, p = 10 000, s = 5."""

    timeout = 300

    def setup(self):
        try:  # asv's convention for a commit without these selectors: skip
            from dpbench_plugins.selectors.fw_lasso import FWLasso
            from dpbench_plugins.selectors.noisy_iht import NoisyIHT
        except ImportError as exc:
            raise NotImplementedError(f"noisy-iht / fw-lasso not available: {exc}") from None

        self.trial = _trial(800, 10_000, 5, seed=3)
        self.iht, self.fw = NoisyIHT(iterations=100), FWLasso(iterations=100)
        self.p_iht = self.iht.prepare(self.trial, np.random.default_rng(1))
        self.p_fw = self.fw.prepare(self.trial, np.random.default_rng(1))
        # calibration for epsilon = 1 once (cached, as in a run after its first trial)
        self.iht.draw(self.trial, self.p_iht, 1.0, 1, np.random.default_rng(0))
        self.fw.draw(self.trial, self.p_fw, 1.0, 1, np.random.default_rng(0))
        self.rng = np.random.default_rng(2)
        self.k = 0

    def time_noisy_iht_draw(self):
        self.iht.draw(self.trial, self.p_iht, 1.0, 1, self.rng)

    def time_fw_lasso_draw(self):
        self.fw.draw(self.trial, self.p_fw, 1.0, 1, self.rng)

    def _calibrate(self, template):
        from dpbench.core.privacy.accounting import calibrate

        self.k += 1  # a new epsilon each call: never a cache hit
        calibrate(template, 1.0 + 1e-6 * self.k, 1e-6, "rdp")

    def time_noisy_iht_calibration(self):
        from dpbench_plugins.selectors.noisy_iht import iht_template

        self._calibrate(iht_template(100, 5))

    def time_fw_lasso_calibration(self):
        from dpbench_plugins.selectors.fw_lasso import fw_template

        self._calibrate(fw_template(100))


if __name__ == "__main__":
    import os
    import time

    b = TimeIterative()
    b.setup()
    print(f"load average before: {os.getloadavg()}")
    print(f"{'benchmark':30s} {'wall':>9s} {'cpu':>9s} {'target':>8s}")
    for name, repeat in (("time_noisy_iht_draw", 7), ("time_fw_lasso_draw", 7), ("time_noisy_iht_calibration", 3),
                         ("time_fw_lasso_calibration", 3)):
        fn = getattr(b, name)
        wall, cpu = median_seconds(fn, repeat), median_seconds(fn, repeat, time.process_time)
        target = TARGETS[name]
        verdict = "" if target is None else ("ok" if wall <= target else "SLOWER THAN TARGET (wall)")
        tgt = "-" if target is None else f"{target:.1f} s"
        print(f"{name:30s} {wall:7.3f} s {cpu:7.3f} s {tgt:>8s}  {verdict}")
    print(f"load average after: {os.getloadavg()}")
