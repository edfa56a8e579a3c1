"""Selector ``topr``: the top-R truncated exponential mechanism (Algorithm 1 of behdin2024).

docs/methods/topr.md. With Ŝ_1 .. Ŝ_R the R supports of smallest score R(S, D) (ties broken by
the lexicographic order of the support),

    P0(k)     ∝ exp(-epsilon R(Ŝ_k) / (2 Delta))                    k = 1 .. R
    P0(R + 1) ∝ (C(p, s) - R) exp(-epsilon R(Ŝ_R) / (2 Delta))

(eq. 6 of behdin2024-dp-bss-iclr-workshop with the multiplicity C(p, s) - R that its proof,
eq. A.12, uses). Draw a ~ P0; return Ŝ_a if a <= R, else M0: draw supports uniformly from
all C(p, s), at most T times, stopping at the first one outside the list, and return the last
one drawn. With T = inf this is exactly the exponential mechanism on the truncated score
R̂ of eq. 7 (R̂(S) = R(S) on the list, R(Ŝ_R) elsewhere), whose sensitivity is Delta
(Lemma A.2), so it is pure epsilon-DP (Theorem 1). A finite T gives the epsilon' of
Theorem 1, reported in ``Draws.epsilon_spent``.

The guarantee needs the exact top-R list. The list is built by :func:`toplist.top_list`
(certified merge over swap levels, never dropping a trial: when the authors' check
v2 >= worst single swap fails it keeps enumerating). A list that cannot be certified
(oracle time limit / error, call budget) yields ``Draws(certified=False)``.

All probabilities are in log space; C(p, s) and C(p, s) - R are exact Python integers whose
logarithms are taken directly, so C(10 000, 5) ~ 8e17 needs no big-float arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from dpbench.api import (BatchLogProb, Draws, EpsilonCache, Param, Selector, UserInputError, check_epsilon,
                         em_log_weights, int_or_inf, log_normalize, n_supports, sample_log_weights,
                         support_index, toplist, uniform_supports)


#: Total candidate supports drawn per rejection round of M0 (memory ~ 40 bytes each).
_M0_BATCH = 1_000_000


def r_type(v):
    """Parameter type of R: ``"auto"`` or an integer >= 2."""
    if isinstance(v, str) and v.strip().lower() == "auto":
        return "auto"
    try:
        f = float(v)
    except (TypeError, ValueError):
        f = math.nan  # "abc": the message below, not float()'s "could not convert string to float"
    if not math.isfinite(f) or f != int(f) or f < 2:
        raise ValueError("expected 'auto' or an integer >= 2")
    return int(f)


def auto_r(p: int, s: int) -> int:
    """R = (p - s) s + 2, the NeurIPS 2025 setting: S1, all single swaps and one more support."""
    return toplist.default_list_length(p, s)


def epsilon_prime(epsilon: float, R: int, total: int, T, n: int, b_y: float, sensitivity: float) -> float:
    """The privacy level epsilon' of Algorithm 1 with T rejection rounds (Theorem 1, behdin2024).

    ``epsilon' = log(e^eps + gamma) - log(1 - q^T)`` with ``q = R / C(p, s)`` and
    ``gamma = R^T exp(n eps b_y^2 / (2 Delta)) / C(p, s)^(T - 1)``, evaluated in log space.
    (The bound uses 0 <= R(S, D) <= ||y||^2 <= n b_y^2, which holds for the shared ridge score.)

    Parameters
    ----------
    epsilon : float
    R, total : int
        List length and C(p, s).
    T : int or inf
    n : int
        Number of rows.
    b_y, sensitivity : float
        Response clipping bound and sensitivity Δ.

    Returns
    -------
    float
        epsilon' (equal to epsilon when T is infinite).
    """
    if math.isinf(T):
        return float(epsilon)
    log_q = math.log(R) - math.log(total)
    log_gamma = T * math.log(R) + n * epsilon * b_y ** 2 / (2 * sensitivity) - (T - 1) * math.log(total)
    return float(np.logaddexp(epsilon, log_gamma) - math.log1p(-math.exp(T * log_q)))


@dataclass(frozen=True, eq=False)
class TopRPrepared:
    """The preparation of ``topr`` for one trial: the top-R list and what is derived from it.

    Attributes
    ----------
    top : toplist.TopList
        The R supports of smallest score, sorted by (score, support), with its certificate
        (empty when the oracle found no optimum).
    total : int
        C(p, s), an exact Python integer.
    p : int
        Number of features.
    R : int
        List length (derived: ``len(top.scores)``).
    log_total, log_tail : float
        log C(p, s) and log(C(p, s) - R) (derived).
    lookup : callable
        Supports (B, s) -> list positions (B,), -1 when not listed (derived).
    log_p0 : EpsilonCache
        log P0(k), k = 1 .. R + 1, per ε (eq. 6).
    """

    top: toplist.TopList
    total: int
    p: int
    R: int = field(init=False)
    log_total: float = field(init=False)
    log_tail: float = field(init=False)
    lookup: Callable = field(init=False, repr=False)
    log_p0: EpsilonCache = field(default_factory=EpsilonCache, repr=False)

    def __post_init__(self):
        R = len(self.top.scores)
        for name, value in (("R", R), ("log_total", math.log(self.total)), ("log_tail", math.log(self.total - R)),
                            ("lookup", support_index(self.top.supports, self.p))):
            object.__setattr__(self, name, value)  # derived once; the dataclass stays frozen


class TopR(BatchLogProb, Selector):
    """Top-R truncated exponential mechanism (pure epsilon-DP for T = inf; replace-one)."""

    name = "topr"
    summary = "top-R truncated exponential mechanism (Algorithm 1); exact certified top-R list via the oracle"
    dp_type = "pure"
    source = "Behdin, Prastakos, Mazumder, ICLR 2024 workshop (Algorithm 1, Theorem 1); docs/methods/topr.md"
    uses_oracle = True
    prepared_type = TopRPrepared
    prepared_version = 2  # 2: the fields of TopRPrepared (1: a flat dict)
    params = {
        "R": Param("auto", "list length: 'auto' = (p-s)s+2 (NeurIPS 2025 setting) or an integer >= 2", r_type),
        "T": Param(math.inf, "rejection rounds of M0; inf = pure eps-DP, finite reports eps' of Theorem 1",
                   int_or_inf),
        "solver": Param(None, "oracle backend (default: the run's --solver)", str),
        "enum_limit": Param(2_000_000, "swap levels with at most this many supports are scored in closed form "
                            "when they enter the list (0 = oracle calls only)", int),
        "max_calls": Param(1000, "budget of extra oracle calls when the authors' check fails and the "
                           "backend has no threshold enumeration (supports_below; highs/gurobi/pyomo do), "
                           "one call per listed >= 2-swap support; beyond it the trial is uncertified", int),
        "node_limit": Param(toplist.SWAP_LEVEL_NODE_LIMIT, "work limit: branch-and-bound nodes per oracle call on the swap levels "
                            "(a deterministic count, so every machine certifies the same trials); a call "
                            "that reaches it leaves the trial uncertified unless its proven lower bound "
                            "clears the R-th score", int),
        "workers": Param(2, "processes for the roots of a swap level (its threshold enumeration, or its optimum "
                         "when the joint call does not certify it), capped at the CPU count; under --backend "
                         "dask: cluster tasks at a time; the list, its certification and the node counts are "
                         "the same for any value; 1 = this process only", int),
    }

    def _resolve_r(self, p, s):
        total = n_supports(p, s)
        R = self.config["R"]
        if total < 3:
            raise UserInputError(f"topr needs C(p, s) >= 3 supports (1 < R < C(p, s)); got C({p}, {s}) = {total}")
        if R == "auto":
            return min(auto_r(p, s), total - 1)
        if not 2 <= R < total:
            raise UserInputError(f"topr.R = {R} must satisfy 2 <= R < C({p}, {s}) = {total}; "
                                 f"lower it, e.g. --param topr.R={total - 1}")
        return R

    def check_setting(self, p, s):
        T = self.config["T"]
        if not math.isinf(T) and T < 2:
            raise UserInputError(f"topr.T = {T}: Theorem 1 needs T > 1; use T >= 2 or inf")
        if self.config["workers"] < 1:
            raise UserInputError(f"topr.workers = {self.config['workers']} must be >= 1; e.g. --param topr.workers=1")
        self._resolve_r(p, s)

    def prepare(self, trial, rng):
        self.check_setting(trial.p, trial.s)
        R = self._resolve_r(trial.p, trial.s)
        lst = toplist.top_list(trial, R, self.config["solver"], self.config["enum_limit"],
                              self.config["max_calls"], self.config["node_limit"], workers=self.config["workers"])
        return TopRPrepared(lst, n_supports(trial.p, trial.s), trial.p)

    # ------------------------------------------------------------------ probabilities

    def _log_p0(self, trial, prep, epsilon):
        """log P0(k), k = 1 .. R + 1, shape (R + 1,) (eq. 6, multiplicity C(p, s) - R)."""
        eps, sc = check_epsilon(epsilon), prep.top.scores
        return prep.log_p0(eps, trial.sensitivity, lambda: log_normalize(np.concatenate([
            em_log_weights(sc, eps, trial.sensitivity),
            em_log_weights(sc[-1:], eps, trial.sensitivity, log_multiplicity=[prep.log_tail]),
        ])))

    def log_probs(self, trial, prepared, epsilon, supports) -> np.ndarray:
        """Exact log-probabilities of a batch of supports (B, s) under Algorithm 1.

        With q = R / C(p, s): a listed support of rank k has probability
        ``P0(k) + P0(R+1) q^(T-1) / C(p, s)`` (M0 fails T times and its last draw is it); an
        unlisted one ``P0(R+1) (1 - q^T) / (C(p, s) - R)`` (proof of Lemma A.3). For T = inf
        the correction terms vanish.
        """
        prep = prepared
        if prep.R == 0:
            raise ValueError("no top-R list (the oracle found no optimum)")
        lp = self._log_p0(trial, prep, epsilon)
        R, T = prep.R, self.config["T"]
        S = np.sort(np.asarray(supports, dtype=np.int64), axis=1)
        k = prep.lookup(S)
        inside = k >= 0
        out = np.empty(len(S))
        if math.isinf(T):
            out[inside] = lp[k[inside]]
            out[~inside] = lp[R] - prep.log_tail
        else:
            log_q = math.log(R) - prep.log_total
            out[inside] = np.logaddexp(lp[k[inside]], lp[R] + (T - 1) * log_q - prep.log_total)
            out[~inside] = lp[R] + math.log1p(-math.exp(T * log_q)) - prep.log_tail
        return out

    def has_law(self, prepared):
        return prepared.R > 0

    # ------------------------------------------------------------------ sampling

    def _m0(self, trial, prep, count, rng):
        """M0 of Algorithm 1 for ``count`` independent draws, vectorised over draws.

        Each draw sees i.i.d. uniform supports one after the other and keeps the first one
        outside the list, or the T-th one; drawing them in blocks per round changes nothing
        in that law. Returns (supports (count, s), number of uniform supports examined).
        """
        p, s, T = trial.p, trial.s, self.config["T"]
        out = np.empty((count, s), dtype=np.int64)
        pending = np.arange(count)
        remaining = T
        accept = -math.expm1(math.log(prep.R) - prep.log_total) if prep.R else 1.0
        used = 0
        while pending.size:
            m = int(min(remaining, max(1, math.ceil(2.0 / accept)), max(1, _M0_BATCH // pending.size)))
            cand = uniform_supports(rng, p, s, pending.size * m).reshape(pending.size, m, s)
            outside = (prep.lookup(cand.reshape(-1, s)) < 0).reshape(pending.size, m)
            has = outside.any(axis=1)
            first = outside.argmax(axis=1)
            used += int(np.sum(np.where(has, first + 1, m)))
            out[pending[has]] = cand[has, first[has]]
            remaining -= m
            if remaining <= 0:
                out[pending[~has]] = cand[~has, m - 1]
                break
            pending = pending[~has]
        return out, used

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        eps = check_epsilon(epsilon)
        prep = prepared
        lst = prep.top
        diag = dict(lst.diagnostics)
        T = self.config["T"]
        if prep.R == 0:
            diag["reason"] = diag.get("reason", "no top-R list")
            return Draws(uniform_supports(rng, trial.p, trial.s, n_draws), certified=False, diagnostics=diag)
        lp = self._log_p0(trial, prep, eps)
        R = prep.R
        a = sample_log_weights(rng, lp, n_draws)
        supports = np.empty((n_draws, trial.s), dtype=np.int64)
        listed = a < R
        supports[listed] = lst.supports[a[listed]]
        tail = np.flatnonzero(~listed)
        used = 0
        if tail.size:
            supports[tail], used = self._m0(trial, prep, tail.size, rng)
        # trial.score_bound = n b_y^2 for least squares (so b_y = 1, n = bound is the same formula)
        eps_prime = epsilon_prime(eps, R, prep.total, T, trial.score_bound, 1.0, trial.sensitivity)
        diag.update({
            "T": "inf" if math.isinf(T) else int(T),
            "log_p0_first": float(lp[0]),
            "p_opt": float(np.exp(self.log_probs(trial, prep, eps, lst.supports[:1])[0])),
            "tail_mass": float(np.exp(lp[R])),
            "m0_calls": int(tail.size),
            "m0_uniform_draws": int(used),
            "epsilon_prime": eps_prime,
        })
        ts = trial.problem.true_support
        if ts is not None:
            diag["p_true"] = float(np.exp(self.log_probs(trial, prep, eps, ts[None, :])[0]))
        return Draws(supports, certified=lst.certified,
                     epsilon_spent=None if math.isinf(T) else eps_prime, diagnostics=diag)

