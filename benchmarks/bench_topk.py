"""asv benchmarks: the private top-k family and DPKendall at p = 10 000, n = 800 (issue 26).

Targets (2-core machine), one draw at epsilon = 1, s = 5, after the epsilon-independent
``prepare`` (scores, or the joint mechanism's table, or DPKendall's ranks), toeplitz design of
the NeurIPS 2025 protocol (rho = 0.1, SNR = 5, b_x = b_y = 0.5):

* ``peeling``, ``pnf``, ``laplace-topk``, ``joint``: at most 50 ms per draw;
* ``dpkendall``: at most 2 s per draw, *cold* (its per-feature tau memo emptied before each
  draw, so the s - 1 tau-against-all-features computations are inside the timing).

``prepare`` is timed separately (no target). Run ``python benchmarks/bench_topk.py`` to print
medians next to the targets.
"""

import time

import numpy as np
from dpbench.bench.registry import PluginInstances

try:  # as a module of the asv suite (package ``benchmarks``) or as a script
    from ._timing import median_seconds
except ImportError:
    from _timing import median_seconds

TOPK = ("peeling", "pnf", "laplace-topk", "joint")
TARGETS = {**{m: 0.050 for m in TOPK}, "dpkendall": 2.0}
N, P, S = 800, 10_000, 5


def _trial(clip=True):
    from dpbench.bench.trial import PrivacySetup, Trial
    from dpbench_plugins.generators.toeplitz import Toeplitz

    problem = Toeplitz(n=N, p=P, s=S, rho=0.1, snr=5.0).generate(np.random.default_rng(0))
    return Trial.from_problem(problem, PrivacySetup(b_x=0.5, b_y=0.5, r=1.1, lam=0.0),
                              preprocessing="clip" if clip else "none", instances=PluginInstances())


def _selector(name):
    from dpbench.bench.registry import registry

    reg = registry()
    if name not in reg.names("selector"):
        raise NotImplementedError(f"selector {name!r} is not registered at this commit")
    return reg.selector(name)()


class TopKDraw:
    """One draw of each top-k mechanism at p = 10 000, n = 800, s = 5, epsilon = 1."""

    params = [list(TOPK)]
    param_names = ["method"]
    timeout = 300

    def setup(self, method):
        self.sel = _selector(method)
        self.trial = _trial()
        self.prepared = self.sel.prepare(self.trial, np.random.default_rng(1))
        self.rng = np.random.default_rng(2)

    def time_draw(self, method):
        self.sel.draw(self.trial, self.prepared, 1.0, 1, self.rng)

    def time_prepare(self, method):
        self.sel.prepare(self.trial, self.rng)


class DPKendallDraw:
    """One cold dpkendall draw (memo emptied) at p = 10 000, n = 800, s = 5, epsilon = 1."""

    timeout = 300

    def setup(self):
        self.sel = _selector("dpkendall")
        self.trial = _trial(clip=False)
        self.prepared = self.sel.prepare(self.trial, np.random.default_rng(1))
        self.sel.draw(self.trial, self.prepared, 1.0, 1, np.random.default_rng(0))  # compile the kernel
        self.rng = np.random.default_rng(2)

    def time_draw_cold(self):
        self.prepared.rows.clear()
        self.sel.draw(self.trial, self.prepared, 1.0, 1, self.rng)

    def time_prepare(self):
        self.sel.prepare(self.trial, self.rng)


if __name__ == "__main__":
    rows = []
    for method in TOPK:
        b = TopKDraw()
        b.setup(method)
        rows.append((f"{method} draw", median_seconds(lambda: b.time_draw(method), 21), TARGETS[method]))
        rows.append((f"{method} prepare", median_seconds(lambda: b.time_prepare(method), 3), None))
    k = DPKendallDraw()
    k.setup()
    rows.append(("dpkendall draw (cold)", median_seconds(k.time_draw_cold, 5), TARGETS["dpkendall"]))
    rows.append(("dpkendall draw, CPU time", median_seconds(k.time_draw_cold, 5, time.process_time),
                 TARGETS["dpkendall"]))
    rows.append(("dpkendall prepare", median_seconds(k.time_prepare, 3), None))
    print(f"{'benchmark':26s} {'median':>11s} {'target':>9s}")
    for name, sec, target in rows:
        verdict = "" if target is None else ("ok" if sec <= target else "SLOWER THAN TARGET")
        tgt = "-" if target is None else f"{target * 1e3:.0f} ms"
        print(f"{name:26s} {sec * 1e3:8.1f} ms {tgt:>9s}  {verdict}")
