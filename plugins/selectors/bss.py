"""Selector ``bss``: the non-private best subset (docs/methods/bss.md; the "ε = ∞" row).

Returns the oracle's certified optimum Ŝ₁ = argmin_S R(S, D) of the shared score, n_draws
times (``certified=False`` when the oracle could not prove it optimal; a failed row when it
found no support at all). It is the non-private baseline of a comparison and, on real data, the default
reference support. dp_type is "none": it spends no privacy budget and protects nothing.

Shared with ``topr`` / ``mistakes``
----------------------------------
The unconstrained optimum is :meth:`dpbench.bench.trial.Trial.optimum`: whichever selector asks
first solves it, the others reuse it, and the oracle session (with its global cuts) is the
trial's shared one.
"""

import numpy as np

from dpbench.api import Draws, Param, Selector, hookimpl


def bss_optimum(trial, solver=None):
    """The unconstrained oracle result for ``solver`` (default: the trial's): :meth:`Trial.optimum`."""
    return trial.optimum(solver)


class BSS(Selector):
    """Non-private best-subset selection: the certified optimum of the shared score."""

    name = "bss"
    summary = "non-private best subset (certified optimum of the shared score); baseline, not private"
    dp_type = "none"
    uses_oracle = True  # its preparation is the oracle's certified optimum
    source = "docs/methods/bss.md; Bertsimas, King & Mazumder 2016 (best subset); outer approximation of docs/solvers.md"
    params = {
        "solver": Param(None, "oracle backend (default: the run's --solver)", str),
    }

    def prepare(self, trial, rng):
        res = bss_optimum(trial, self.config["solver"])
        return res

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        res = prepared
        diag = {"status": res.status, "objective": res.objective, "lower_bound": res.lower_bound,
                "oracle_iterations": res.iterations, "oracle_seconds": res.seconds}
        if res.support is None:
            # The oracle stopped before any incumbent: there is no best support to report, and
            # a made-up one (or -1 placeholders) would be scored as if it were an answer. Raise,
            # so that the runner records this (trial, epsilon) as failed with the oracle's status.
            raise RuntimeError(f"bss: the oracle found no support (status {res.status}"
                               f"{': ' + res.message if res.message else ''})")
        # Uncertified but with an incumbent (time limit, numerical trouble): the best support
        # found, with certified=False, so that the row counts as uncertified, never as exact.
        supports = np.tile(np.asarray(res.support, dtype=np.int64), (n_draws, 1))
        return Draws(supports, certified=res.status == "optimal", diagnostics=diag)

    def log_prob(self, trial, prepared, epsilon, support):
        """Deterministic output: log 1 for the optimum, -inf otherwise (only when certified)."""
        if prepared.status != "optimal":
            return None
        same = np.array_equal(np.sort(np.asarray(support)), np.asarray(prepared.support))
        return 0.0 if same else -np.inf


@hookimpl
def dpbench_selectors():
    return [BSS]
