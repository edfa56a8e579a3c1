"""asv benchmarks: every built-in selector on one trial, and its recovery.

Three families, one entry per built-in selector (``exhaustive``, ``topr``, ``mistakes``,
``mcmc``, ``sampagg``, ``dpsis``, ``bss``):

* ``Selection.time_selection(method, setting)`` -- wall time of one trial's selection:
  a fresh :class:`dpbench.Trial` (empty per-trial cache, so the shared score and every
  oracle call are inside the timing), ``prepare`` and one ``draw`` of 100 supports at
  epsilon = 1 (the NeurIPS 2025 protocol: 100 draws per trial). Data generation is outside
  the timing. Settings (toeplitz design of docs/reproductions.md: rho = 0.1, SNR = 5, s = 5,
  b_x = b_y = 0.5, r = 1.1, Lambda = 120, solver ``highs``):

  =============  ====================  ==========================
  setting        exhaustive            every other selector
  =============  ====================  ==========================
  ``small``      n = 200, p = 30       n = 400, p = 200
  ``large``      n = 200, p = 50       n = 800, p = 10 000 (paper)
  =============  ====================  ==========================

  ``exhaustive`` enumerates C(p, 5) supports, so its large setting is C(50, 5) = 2.1 M
  supports (cached scores), not the paper's p; the 1e8-support streaming run is
  ``bench_score.peakmem_exhaustive_1e8``.
* ``PeakMemory.peakmem_selection(method)`` -- peak RSS of the same selection where memory
  matters: ``exhaustive`` streaming C(60, 5) = 5.5 M supports (above its 5 M score cache),
  and the oracle selectors (``bss``, ``topr``, ``mistakes``) at p = 10 000, where a p x p
  Gram matrix (800 MB) must never be formed.
* ``AnalyticRecovery.track_recovery_probability(method)`` (``exhaustive``, ``topr``,
  ``mistakes``, ``bss``: selectors with ``log_prob``) -- the exact probability that one
  draw equals the true support, averaged over the trials of :data:`SEEDS`;
  ``EmpiricalRecovery.track_recovery_rate(method)`` (``mcmc``, ``sampagg``, ``dpsis``) --
  the exact-recovery rate of 100 draws per trial over the same trials. Each selector is
  tracked at its own :data:`RECOVERY` setting, chosen so that the value sits between 0
  and 1 where a change in the mechanism moves it (at epsilon = 1 and these n most
  selectors recover with probability ~0 or ~1, and a regression would not show). Every
  number is a deterministic function of the fixed seeds.

Benchmarks whose selector or solver is not registered (an older commit, a missing
backend) are skipped: asv's convention is ``NotImplementedError`` raised in ``setup``.

Run ``python benchmarks/bench_selectors.py`` to print the timings, peak memory and
recovery values (``--quick`` skips the large setting).
"""

import time

import numpy as np
from dpbench.bench.registry import PluginInstances

METHODS = ("exhaustive", "topr", "mistakes", "mcmc", "sampagg", "dpsis", "bss")
ORACLE_METHODS = ("topr", "mistakes", "bss")
S = 5
SNR, RHO = 5.0, 0.1
B, R_BOUND, LAM = 0.5, 1.1, 120.0
EPSILON, DRAWS = 1.0, 100
SEEDS = (0, 1, 2)

#: (n, p) of the timed settings, per selector.
SETTINGS = {m: {"small": (400, 200), "large": (800, 10_000)} for m in METHODS}
SETTINGS["exhaustive"] = {"small": (200, 30), "large": (200, 50)}

#: (n, p, epsilon) at which recovery is tracked, per selector (see the module docstring).
RECOVERY = {
    "exhaustive": (400, 30, 10.0),
    "topr": (400, 200, 30.0),
    "mistakes": (400, 200, 20.0),
    "bss": (400, 200, EPSILON),
    "mcmc": (400, 200, 20.0),
    "sampagg": (3200, 200, 50.0),
    "dpsis": (400, 200, 1.5),
}

#: Selector parameters of the peak-memory runs (exhaustive: never keep the scores).
PEAKMEM = {"exhaustive": ((200, 60), {"cache": 0}), "bss": ((800, 10_000), {}),
           "topr": ((800, 10_000), {}), "mistakes": ((800, 10_000), {})}


def _registry():
    from dpbench.bench.registry import registry

    return registry()


def require(method: str) -> None:
    """Raise NotImplementedError (asv: skip) unless ``method`` and, if needed, ``highs`` exist."""
    try:
        reg = _registry()
    except Exception as exc:  # noqa: BLE001 - an old commit without a registry: skip
        raise NotImplementedError(f"dpbench plugin registry unavailable: {exc}") from None
    if method not in reg.names("selector"):
        raise NotImplementedError(f"selector {method!r} is not registered")
    if method in ORACLE_METHODS and "highs" not in reg.names("solver"):
        raise NotImplementedError("solver 'highs' is not registered")


def make_problem(n: int, p: int, seed: int):
    """One toeplitz problem of the paper design (as drawn); the seed depends only on (seed, n, p)."""
    from dpbench.core.seeding import rng_for

    gen = _registry().generator("toeplitz")(n=n, p=p, s=S, rho=RHO, snr=SNR)
    return gen.generate(rng_for(seed, "bench_selectors", n, p))


def make_trial(problem, method: str):
    """A fresh Trial (empty cache: the score and the oracle session are rebuilt), preprocessed
    as ``method`` declares (clipped to B for the score-based mechanisms)."""
    from dpbench.bench.trial import Trial
    from dpbench.bench.trial import PrivacySetup

    return Trial.from_problem(problem, PrivacySetup(b_x=B, b_y=B, r=R_BOUND, lam=LAM),
                              preprocessing=_registry().selector(method).preprocessing, solver="highs", instances=PluginInstances())


def select(method: str, problem, epsilon: float = EPSILON, n_draws: int = DRAWS, seed: int = 0, **params):
    """One trial's selection: prepare + one draw of ``n_draws`` supports.

    Returns (selector, trial, prepared, draws).
    """
    trial = make_trial(problem, method)
    sel = _registry().selector(method)(**params)
    prepared = sel.prepare(trial, np.random.default_rng([seed, 1]))
    draws = sel.draw(trial, prepared, epsilon, n_draws, np.random.default_rng([seed, 2]))
    return sel, trial, prepared, draws


class Selection:
    """Wall time of one trial's selection (prepare + 100 draws) per selector and setting."""

    params = [list(METHODS), ["small", "large"]]
    param_names = ["method", "setting"]
    number = 1
    repeat = (1, 5, 30.0)
    warmup_time = 0.0
    timeout = 300

    def setup(self, method, setting):
        require(method)
        self.problem = make_problem(*SETTINGS[method][setting], seed=0)

    def time_selection(self, method, setting):
        select(method, self.problem)


class PeakMemory:
    """Peak RSS of one trial's selection where memory matters (exhaustive streaming, p = 10 000)."""

    params = [list(PEAKMEM)]
    param_names = ["method"]
    timeout = 300

    def setup(self, method):
        require(method)
        (n, p), self.params_ = PEAKMEM[method]
        self.problem = make_problem(n, p, seed=0)

    def peakmem_selection(self, method):
        select(method, self.problem, **self.params_)


def recovery(method: str, seeds=SEEDS) -> float:
    """Recovery of ``method`` at its :data:`RECOVERY` setting, averaged over ``seeds``.

    The exact probability P(draw = true support) from ``log_prob`` when the selector has
    one, else the share of 100 draws per trial equal to the true support.
    """
    n, p, eps = RECOVERY[method]
    values = []
    for seed in seeds:
        problem = make_problem(n, p, seed)
        truth = np.sort(problem.true_support)
        sel, trial, prepared, draws = select(method, problem, epsilon=eps, seed=seed)
        if not draws.certified:
            raise RuntimeError(f"{method}: uncertified trial (seed {seed}): {draws.diagnostics.get('reason')}")
        lp = sel.log_prob(trial, prepared, eps, truth)
        if lp is not None:
            values.append(float(np.exp(lp)))
        else:
            hits = np.all(np.sort(draws.supports, axis=1) == truth, axis=1)
            values.append(float(hits.mean()))
    return float(np.mean(values))


class AnalyticRecovery:
    """Exact P(exact recovery) of one draw (selectors with ``log_prob``), mean over SEEDS."""

    params = [["exhaustive", "topr", "mistakes", "bss"]]
    param_names = ["method"]
    timeout = 300

    def setup(self, method):
        require(method)

    def track_recovery_probability(self, method):
        return recovery(method)

    track_recovery_probability.unit = "probability"


class EmpiricalRecovery:
    """Exact-recovery rate of 100 draws per trial (selectors without ``log_prob``), over SEEDS."""

    params = [["mcmc", "sampagg", "dpsis"]]
    param_names = ["method"]
    timeout = 300

    def setup(self, method):
        require(method)

    def track_recovery_rate(self, method):
        return recovery(method)

    track_recovery_rate.unit = "rate"


def _peak_rss_subprocess(method):
    """Peak RSS (bytes) of one PeakMemory run in a fresh interpreter (as asv measures it)."""
    import subprocess
    import sys
    from pathlib import Path

    # VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's RSS at fork time.
    code = ("import sys; sys.path.insert(0, %r); import bench_selectors as b; "
            "x = b.PeakMemory(); x.setup(%r); x.peakmem_selection(%r); "
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])") % (
                str(Path(__file__).parent), method, method)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return int(out.stdout.split()[-1]) * 1024  # kB


def main(argv=None):
    import sys

    argv = sys.argv[1:] if argv is None else argv
    settings = ["small"] if "--quick" in argv else ["small", "large"]
    print(f"one trial's selection (prepare + {DRAWS} draws, epsilon = {EPSILON}), seconds")
    for method in METHODS:
        for setting in settings:
            b = Selection()
            try:
                b.setup(method, setting)
            except NotImplementedError as exc:
                print(f"  {method:10s} {setting:5s}  skipped: {exc}")
                continue
            t = time.perf_counter()
            b.time_selection(method, setting)
            n, p = SETTINGS[method][setting]
            print(f"  {method:10s} {setting:5s} n={n:<4d} p={p:<6d} {time.perf_counter() - t:8.2f} s", flush=True)
    print("recovery (mean over seeds %s)" % (SEEDS,))
    for method in RECOVERY:
        n, p, eps = RECOVERY[method]
        print(f"  {method:10s} n={n:<4d} p={p:<4d} eps={eps:<5g} {recovery(method):.4f}", flush=True)
    if "--quick" not in argv:
        print("peak RSS of one selection in a fresh interpreter (data generation included)")
        for method in PEAKMEM:
            print(f"  {method:10s} {_peak_rss_subprocess(method) / 2**20:8.1f} MiB", flush=True)


if __name__ == "__main__":
    main()
