"""Solver ``enumerate``: the best-support oracle by brute-force enumeration.

Exact for any Lambda >= 0 (including 0) and every constraint of the oracle interface, and
certified by construction; its cost is C(p, s) score evaluations per call, so it is the
reference the MIP backends are tested against and a practical backend for small problems.
"""

import time

import numpy as np

from dpbench.api import (OracleResult, OracleSession, Param, Solver, ThresholdByCalls, UserInputError,
                         hookimpl, iter_supports, lexmin, n_supports, support_ids, tie_bar)


class EnumerationSession(ThresholdByCalls, OracleSession):
    """Oracle session that scores every support (see :class:`dpbench.api.OracleSession`)."""

    def __init__(self, score, s, limit):
        super().__init__(score, s)
        total = n_supports(score.p, s)
        if total > limit:
            raise UserInputError(f"solver 'enumerate': C({score.p}, {s}) = {total:,} supports exceeds its "
                                 f"limit {limit:,}; use --solver highs for large problems")
        # Scores never change for a data set: compute them once for all calls.
        chunks = list(iter_supports(score.p, s))
        self._supports = np.concatenate(chunks)
        self._scores = np.concatenate([score(c) for c in chunks])
        self._ids = support_ids(self._supports, score.p)

    def solve(self, *, exclude=(), overlap=None, fixed_in=(), fixed_out=(), time_limit=None, gap_tol=1e-6,
              node_limit=None):
        # No limit applies: the work is fixed, C(p, s) scores computed once per session.
        t0 = time.perf_counter()
        S = self._supports
        ok = np.ones(len(S), dtype=bool)
        if len(exclude):
            ok &= ~np.isin(self._ids, support_ids(np.asarray(exclude), self.score.p))
        if overlap is not None:
            ref, k = overlap
            ok &= np.isin(S, np.asarray(ref)).sum(axis=1) == k
        for j in np.asarray(fixed_in, dtype=np.int64):
            ok &= (S == j).any(axis=1)
        for j in np.asarray(fixed_out, dtype=np.int64):
            ok &= ~(S == j).any(axis=1)
        seconds = time.perf_counter() - t0
        if not ok.any():
            return OracleResult(None, np.inf, np.inf, "infeasible", 1, seconds)
        cand = np.flatnonzero(ok)
        vals = self._scores[cand]
        tied = cand[vals <= tie_bar(float(vals.min()))]  # canonical ties (TIE_RTOL), as every backend
        best = lexmin(S[tied])
        obj = float(self._scores[tied][np.flatnonzero((S[tied] == best).all(axis=1))[0]])
        return OracleResult(best, obj, obj, "optimal", 1, seconds)


class Enumerate(Solver):
    """Brute-force oracle over all C(p, s) supports (exact; small problems only)."""

    name = "enumerate"
    summary = "brute-force enumeration with the shared score; exact, any lam >= 0, small C(p,s) only"
    handles_lam_zero = True
    losses = ("least-squares", "generic")  # uses only the batched score
    params = {"limit": Param(2_000_000, "refuse problems with more supports than this", int)}

    def session(self, score, s):
        return EnumerationSession(score, s, self.config["limit"])


@hookimpl
def dpbench_solvers():
    return [Enumerate]
