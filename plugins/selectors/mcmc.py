"""Selector ``mcmc``: Metropolis–Hastings on supports (Roy & Tewari 2023; docs/methods/mcmc.md).

Target: the exponential mechanism of ``exhaustive``,

    pi(S) ∝ exp(-epsilon R(S, D) / (2 Delta)),

with the shared score R (docs/methods/score.md), so that ``mcmc`` and ``exhaustive`` sample
the same distribution and differ only in ``mcmc`` being approximate.

Kernel (Roy & Tewari 2023, section 4, "double swap update", transition matrix (10)): from
the current support S pick a member uniformly and a non-member uniformly, propose S' = S
with the one replaced by the other, and accept with probability

    min(1, pi(S') / pi(S)) = min(1, exp(-epsilon (R(S') - R(S)) / (2 Delta))).

The proposal is symmetric (each of the s (p - s) neighbours has probability
1 / (s (p - s)) from either side), so the chain is reversible with respect to pi.

Output: the state after ``iterations`` steps, one independent chain per draw. All chains
of a trial advance in lockstep: one batched score evaluation per step for every chain.

Incremental scoring: a swap changes one column of X_S, so each chain keeps its Gram block
``X_S^T X_S + lam I`` (s x s), ``X_S^T y`` (s,) and the s member columns of X; a proposal
costs one gather of the new column and s dot products of length n, after which
:func:`dpbench.core.score.solve_blocks` scores every chain's proposal in closed form. No p x p
matrix is formed and no general QP solver is called.

Score (``score`` parameter): ``ridge`` (default) is the shared score above; ``l1`` is the score
of Roy & Tewari's released code (roysaptaumich/DP-BSS, ``DP_BSS.py``),
``R_1(S) = min_{||beta||_1 <= B} ||y - X_S beta||^2`` with B = ``l1_bound`` (Lambda and r do
not enter it), solved exactly per support and batched across chains by
:func:`dpbench.core.score.l1.solve_l1_blocks` (no QP solver per step), with its own sensitivity
``Delta = (b_y + b_x B)^2`` (:func:`dpbench.core.privacy.sensitivity.l1_sensitivity`). The target
is then ``exp(-epsilon R_1(S) / (2 Delta))``: the factor 2 is that of replace-one neighbours;
the authors' code uses ``exp(-epsilon RSS / Du)`` with ``Du = (B + max|y|)^2`` read from the
data, relying on data monotonicity (Lemma 1/2, add/remove neighbours).

Privacy: approximate (epsilon, delta)-DP, and only once the chain has mixed (Roy & Tewari
2023, Corollary 1). What that argument gives for a chosen number of iterations t: if the chain
is within total variation eta of the exponential mechanism on both neighbours after t steps,
the output is (epsilon, (1 + e^epsilon) eta)-DP. But the t that Corollary 1 supplies is
t >= C * (their polynomial mixing bound (14)) * log(1/eta) with an *unspecified universal
constant* C, under the margin condition (13) and Assumption 2, and part (b) further needs
Assumption 2 on **every** neighbouring data set -- data-dependent conditions nobody can check
privately. So no delta can be computed for any finite t: every row says
``none: mixing not established`` (``Draws.no_guarantee``), whatever the run's ``--delta``, which
is recorded (``requested_delta``) but not achieved. The output distribution is not known in closed form (no ``log_prob``).
Corollary 1 bounds the worst-case mixing time, i.e. from any start; the data-driven starts
(``correlation``, ``lasso``) are non-private functions of the data, and a chain that has
not mixed leaks its start.

Mixing in practice: a uniform double swap proposes a given feature with probability
1 / (p - s) per step, so from a random start at p = 10 000 a chain needs of the order of
10^4 steps per missing true feature; 1000 iterations (the authors' setting) do not mix
there, whatever epsilon.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from dpbench.api import (Draws, Param, Selector, UserInputError, check_epsilon, em_log_weights, hookimpl,
                         l1_sensitivity, solve_blocks, solve_l1_blocks, uniform_supports)

#: Steps of per-chain randomness drawn per call. Fixed (not tied to ``iterations``) so that
#: a chain run for k steps passes through the same states as the first k steps of a longer
#: run with the same seed.
RANDOM_BLOCK = 1024

# Chains advanced together are limited so that their cached member columns (chains x s x n
# float64) stay around this size; groups run one after the other with identical results.
_GROUP_BYTES = 256 * 2**20

#: Points kept in the thinned score trace of the diagnostic chain.
TRACE_POINTS = 50


def log_acceptance(old_scores, new_scores, epsilon: float, sensitivity: float) -> np.ndarray:
    """Log of the Metropolis ratio pi(S') / pi(S) for the exponential-mechanism target.

    ``log pi(S') - log pi(S) = -epsilon (R(S') - R(S)) / (2 Delta)`` (docs/methods/mcmc.md; Roy &
    Tewari 2023, section 4, acceptance probability). The score difference is taken before
    scaling, so no precision is lost to exponents of order 1e4.

    Parameters
    ----------
    old_scores, new_scores : ndarray of shape (C,)
        R(S, D) of the current and the proposed support of each chain.
    epsilon : float
        Privacy parameter (> 0).
    sensitivity : float
        Sensitivity Δ of the score.

    Returns
    -------
    ndarray of shape (C,)
        The proposal is accepted when ``log(u) < log_acceptance`` with u ~ U[0, 1), i.e.
        with probability ``min(1, exp(log_acceptance))``.
    """
    return em_log_weights(np.asarray(new_scores) - np.asarray(old_scores), epsilon, sensitivity)


def nonmember_of_rank(supports_sorted: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """The ``ranks[c]``-th smallest index outside ``supports_sorted[c]`` (0-based), per chain.

    A bijection from ``0 .. p - s - 1`` onto the non-members, so a uniform rank gives a
    uniform non-member with exactly one random integer (no rejection loop).

    Parameters
    ----------
    supports_sorted : ndarray of shape (C, s), int64
        Each row sorted ascending.
    ranks : ndarray of shape (C,), int64
        Values in ``0 .. p - s - 1``.

    Returns
    -------
    ndarray of shape (C,), int64
    """
    j = np.array(ranks, dtype=np.int64, copy=True)
    # Walking the members in ascending order, every member at or below the candidate
    # shifts it up by one.
    for k in range(supports_sorted.shape[1]):
        j += j >= supports_sorted[:, k]
    return j


def chain_generators(base: int, chains) -> list[np.random.Generator]:
    """One independent PCG64 stream per chain index, independent of how many chains run.

    Chain k's stream is ``SeedSequence(base, spawn_key=(k,))``, so draw k of a call with
    ``n_draws = 10`` equals draw k of a call with ``n_draws = 100`` for the same ``base``.
    """
    return [np.random.Generator(np.random.PCG64(np.random.SeedSequence(base, spawn_key=(int(k),))))
            for k in chains]


# Batched row-wise dot products; np.vecdot (numpy >= 2.0) avoids matmul's per-matrix
# BLAS dispatch for these (s x n)(n) products.
if hasattr(np, "vecdot"):
    _rowdot = np.vecdot
else:  # pragma: no cover - numpy < 2.0
    def _rowdot(a, b):
        return np.einsum("...n,...n->...", a, b)


class ChainState:
    """Current supports and incremental Gram blocks of a batch of chains.

    Parameters
    ----------
    XT : ndarray of shape (p, n)
        ``X^T`` of the clipped design, C-contiguous (one feature per row, so a column of X
        is one contiguous gather).
    score : dpbench.core.score.RidgeScore
        The shared score (supplies ``lam``, ``r``, ``y^T y``, ``X^T y`` and ``diag X^T X``).
    supports : ndarray of shape (C, s), int64
        Initial supports. The order of members inside a row is arbitrary and is kept as
        "positions": a swap overwrites one position.
    l1_bound : float, optional
        Score the supports with the l1-bounded least squares of bound ``l1_bound``
        (:func:`dpbench.core.score.l1.solve_l1_blocks`; no ridge term) instead of the shared
        ridge score.

    Attributes
    ----------
    S : ndarray of shape (C, s)
        Members by position.
    XS : ndarray of shape (C, s, n)
        The member columns of X.
    G : ndarray of shape (C, s, s)
        ``X_S^T X_S + lam I``.
    c : ndarray of shape (C, s)
        ``X_S^T y``.
    scores : ndarray of shape (C,)
        R(S, D).
    """

    def __init__(self, XT, score, supports, l1_bound=None):
        self.XT = XT
        self.score = score
        self.l1_bound = l1_bound
        self.lam = score.lam if l1_bound is None else 0.0
        self.S = np.array(supports, dtype=np.int64, copy=True)
        C, s = self.S.shape
        self.XS = XT[self.S]
        self.G = np.einsum("csn,ctn->cst", self.XS, self.XS)
        if self.lam:
            self.G += self.lam * np.eye(s)
        self.c = score.c[self.S]
        self.scores = self.solve(self.G, self.c)

    def solve(self, G, c):
        """Scores of the supports with Gram blocks G and ``X_S^T y`` c (ridge or l1 score)."""
        if self.l1_bound is None:
            return solve_blocks(G, c, self.score.yy, self.score.r)[0]
        return solve_l1_blocks(G, c, self.score.yy, self.l1_bound)[0]

    def propose(self, pos, ranks):
        """Feature entering at position ``pos`` for a non-member rank (see nonmember_of_rank)."""
        return nonmember_of_rank(np.sort(self.S, axis=1), ranks)

    def proposal_blocks(self, pos, j):
        """Gram blocks of the supports with position ``pos[c]`` replaced by feature ``j[c]``.

        Only row/column ``pos`` changes: ``X[:, j]^T X_S`` (s dot products of length n per
        chain) and ``X[:, j]^T y``; every entry is recomputed from X, so no rounding error
        accumulates along the chain.

        Returns
        -------
        G : ndarray of shape (C, s, s)
        c : ndarray of shape (C, s)
        xj : ndarray of shape (C, n)
            The entering columns (kept for :meth:`accept`).
        """
        C = len(j)
        rows = np.arange(C)
        xj = self.XT[j]
        g = _rowdot(self.XS, xj[:, None, :])  # (C, s): X_S^T x_j
        g[rows, pos] = self.score.col_sq[j] + self.lam
        G = self.G.copy()
        G[rows, pos, :] = g
        G[rows, :, pos] = g
        c = self.c.copy()
        c[rows, pos] = self.score.c[j]
        return G, c, xj

    def proposal_scores(self, pos, j):
        """R(S', D) of each chain's proposal, plus the blocks needed to accept it."""
        G, c, xj = self.proposal_blocks(pos, j)
        return self.solve(G, c), G, c, xj

    def accept(self, mask, pos, j, G, c, xj, new_scores):
        """Move the chains in ``mask`` to their proposals."""
        a = np.flatnonzero(mask)
        if a.size:
            pa = pos[a]
            self.S[a, pa] = j[a]
            self.XS[a, pa] = xj[a]
            self.G[a] = G[a]
            self.c[a] = c[a]
            self.scores[a] = new_scores[a]


class LossChainState:
    """Chains of a loss without the ridge structure: proposals scored by ``trial.score`` (batched).

    Same interface as :class:`ChainState` (``S``, ``scores``, :meth:`propose`,
    :meth:`proposal_scores`, :meth:`accept`); used for every loss but least squares.
    """

    def __init__(self, score, supports):
        self.score = score
        self.S = np.array(supports, dtype=np.int64, copy=True)
        self.scores = np.asarray(score(np.sort(self.S, axis=1)), dtype=np.float64)

    propose = ChainState.propose

    def proposal_scores(self, pos, j):
        S_new = self.S.copy()
        S_new[np.arange(len(j)), pos] = j
        return np.asarray(self.score(np.sort(S_new, axis=1))), None, None, None

    def accept(self, mask, pos, j, G, c, xj, new_scores):
        a = np.flatnonzero(mask)
        if a.size:
            self.S[a, pos[a]] = j[a]
            self.scores[a] = new_scores[a]


def chain_state(trial, init, l1_bound=None):
    """The incremental least-squares :class:`ChainState` (ridge or l1 score), or
    :class:`LossChainState` for another loss (which has no l1 variant)."""
    if getattr(trial, "loss_plugin", None) is None:
        return ChainState(design_transposed(trial), trial.score, init, l1_bound=l1_bound)
    if l1_bound is not None:
        raise UserInputError("mcmc.score=l1 is Roy & Tewari's least-squares score; use it with --loss least-squares")
    return LossChainState(trial.score, init)


def design_transposed(trial) -> np.ndarray:
    """``X^T`` of the trial's clipped data as a C-contiguous (p, n) array, cached per trial."""
    return trial.shared("XT_contiguous", lambda: np.ascontiguousarray(trial.score.X.T))


def chain_sensitivity(trial, l1_bound=None) -> float:
    """Delta of the chain's score: the trial's (ridge) Delta, or ``(b_y + b_x B)^2`` for l1."""
    return trial.sensitivity if l1_bound is None else l1_sensitivity(trial.b_x, trial.b_y, l1_bound)


def run_chains(trial, epsilon, init, iterations, generators, *, trace_chain=0, l1_bound=None):
    """Advance a batch of Metropolis–Hastings chains in lockstep (docs/methods/mcmc.md).

    Parameters
    ----------
    trial : dpbench.Trial
    epsilon : float
        Privacy parameter; the target is pi(S) ∝ exp(-epsilon R(S) / (2 Delta)).
    init : ndarray of shape (C, s), int64
        Starting support of each chain.
    iterations : int
        Proposals per chain (>= 0).
    generators : list of numpy.random.Generator, length C
        One stream per chain; step t of chain k uses only ``generators[k]``, so a chain's
        path does not depend on the other chains.
    trace_chain : int or None
        Index (into this batch) of the chain whose score is recorded at every step.
    l1_bound : float, optional
        Use the l1-bounded score with this bound (and its sensitivity) instead of the ridge score.

    Returns
    -------
    final : ndarray of shape (C, s), int64
        Sorted final supports.
    accepted : ndarray of shape (C,), int64
        Accepted proposals per chain.
    trace : ndarray of shape (iterations + 1,) or None
        Scores of the traced chain, starting with its initial score.
    """
    eps = check_epsilon(epsilon)
    p, s = trial.p, trial.s
    state = chain_state(trial, init, l1_bound)
    sensitivity = chain_sensitivity(trial, l1_bound)
    C = len(generators)
    if state.S.shape[0] != C:
        raise ValueError(f"{state.S.shape[0]} initial supports for {C} generators")
    accepted = np.zeros(C, dtype=np.int64)
    trace = None
    if trace_chain is not None:
        trace = np.empty(iterations + 1)
        trace[0] = state.scores[trace_chain]
    n_out = p - s
    t = 0
    while t < iterations:
        # Per-chain randomness for a whole block in three calls per chain: the member
        # position, the rank of the entering non-member and the acceptance uniform.
        pos_b = np.empty((C, RANDOM_BLOCK), dtype=np.int64)
        rank_b = np.empty((C, RANDOM_BLOCK), dtype=np.int64)
        logu_b = np.empty((C, RANDOM_BLOCK))
        for k, g in enumerate(generators):
            pos_b[k] = g.integers(0, s, RANDOM_BLOCK)
            rank_b[k] = g.integers(0, n_out, RANDOM_BLOCK)
            logu_b[k] = g.random(RANDOM_BLOCK)
        with np.errstate(divide="ignore"):  # u = 0 gives log u = -inf: always accept
            np.log(logu_b, out=logu_b)
        for b in range(min(RANDOM_BLOCK, iterations - t)):
            pos = pos_b[:, b]
            j = state.propose(pos, rank_b[:, b])
            new, G, c, xj = state.proposal_scores(pos, j)
            ok = logu_b[:, b] < log_acceptance(state.scores, new, eps, sensitivity)
            state.accept(ok, pos, j, G, c, xj, new)
            accepted += ok
            t += 1
            if trace is not None:
                trace[t] = state.scores[trace_chain]
    return np.sort(state.S, axis=1), accepted, trace


def one_step_transition(trial, epsilon, support, l1_bound=None) -> dict[tuple, float]:
    """Exact one-step transition probabilities of the sampler from ``support``.

    Enumerates every (position, non-member rank) pair the sampler can draw, each with
    probability ``1 / (s (p - s))``, maps it to a proposal with the sampler's own
    :meth:`ChainState.propose`, scores it with the sampler's incremental
    :meth:`ChainState.proposal_scores` and weights it by the acceptance probability
    ``min(1, exp(log_acceptance))`` (Roy & Tewari 2023, eq. (10)). Used by the tests to
    build the full transition matrix on tiny problems (p small).

    Returns
    -------
    dict
        Sorted support tuple -> probability (including the probability of staying).
    """
    eps = check_epsilon(epsilon)
    p, s = trial.p, trial.s
    S0 = np.asarray(support, dtype=np.int64)
    m = s * (p - s)
    pos = np.repeat(np.arange(s), p - s)
    ranks = np.tile(np.arange(p - s), s)
    state = chain_state(trial, np.repeat(S0[None, :], m, axis=0), l1_bound)
    j = state.propose(pos, ranks)
    new, *_ = state.proposal_scores(pos, j)
    acc = np.exp(np.minimum(0.0, log_acceptance(state.scores, new, eps, chain_sensitivity(trial, l1_bound))))
    out: dict[tuple, float] = {}
    S_new = state.S.copy()
    S_new[np.arange(m), pos] = j
    S_new.sort(axis=1)
    for row, a in zip(map(tuple, S_new.tolist()), acc / m):
        out[row] = out.get(row, 0.0) + float(a)
    key = tuple(np.sort(S0).tolist())
    out[key] = out.get(key, 0.0) + 1.0 - float(acc.sum() / m)
    return out


def correlation_start(trial) -> np.ndarray:
    """The s features with the largest |x_j^T y| / ||x_j|| (marginal correlation screening)."""
    sc = trial.score
    corr = np.abs(sc.c) / np.sqrt(np.maximum(sc.col_sq, 1e-300))
    order = np.argsort(-corr, kind="stable")
    return np.sort(order[: trial.s])


def lasso_start(trial) -> np.ndarray:
    """The first s features to enter the lasso path (LARS-lasso, scikit-learn ``lars_path``).

    If fewer than s features are ever active the rest are filled by marginal correlation.
    """
    from sklearn.linear_model import lars_path

    s = trial.s
    X, y = trial.score.X, trial.score.y
    _, active, coefs = lars_path(X, y, method="lasso", max_iter=4 * s, return_path=True)
    chosen: list[int] = []
    # Walk the knots and keep the first s distinct features that become non-zero.
    for k in range(coefs.shape[1]):
        for f in np.flatnonzero(coefs[:, k]):
            if int(f) not in chosen:
                chosen.append(int(f))
    for f in list(active) + correlation_start(trial).tolist() + list(range(trial.p)):
        if len(chosen) >= s:
            break
        if int(f) not in chosen:
            chosen.append(int(f))
    return np.sort(np.array(chosen[:s], dtype=np.int64))


def _trace_summary(trace: np.ndarray) -> dict:
    T = len(trace) - 1
    idx = np.unique(np.linspace(0, T, min(TRACE_POINTS, T + 1)).round().astype(int))
    return {
        "initial": float(trace[0]),
        "final": float(trace[-1]),
        "min": float(trace.min()),
        "first_step_at_min": int(np.argmin(trace)),
        "last_change_step": int(np.flatnonzero(np.diff(trace))[-1] + 1) if np.any(np.diff(trace)) else 0,
        "quantiles_over_last_half": [float(q) for q in np.quantile(trace[T // 2:], [0.1, 0.5, 0.9])],
        "thinned": {"steps": idx.tolist(), "scores": [float(v) for v in trace[idx]]},
    }


@dataclass(frozen=True, eq=False)
class MCMCPrepared:
    """The preparation of ``mcmc`` for one trial.

    Attributes
    ----------
    start : ndarray of shape (s,), int64, or None
        The data-driven starting support of every chain (``init`` correlation or lasso); None
        for uniform random starts.
    """

    start: np.ndarray | None


class MCMC(Selector):
    """Metropolis–Hastings double-swap sampler of the exponential mechanism (approximate DP)."""

    name = "mcmc"
    summary = ("Metropolis-Hastings on supports (double swap), target the exhaustive EM; "
               "approximate (eps, delta)-DP only after mixing (Roy & Tewari 2023, Cor. 1)")
    dp_type = "approximate"
    source = "Roy & Tewari 2023, section 4 and Corollary 1; docs/methods/mcmc.md"
    prepared_type = MCMCPrepared
    params = {
        "iterations": Param(1000, "Metropolis-Hastings steps per chain (authors' NeurIPS experiments: 1000); "
                                  "the output is the final state", int, interval=(0, None, "left")),
        "init": Param("random", "starting support: random (uniform, as in the paper), correlation "
                                "(top-s |x_j^T y|/||x_j||) or lasso (first s on the LARS-lasso path); "
                                "correlation/lasso are non-private functions of the data, so before "
                                "mixing the output leaks them",
                      str, ("random", "correlation", "lasso")),
        "score": Param("ridge", "ridge: the shared score of exhaustive/topr (same target as exhaustive); l1: "
                                "Roy & Tewari's code, min ||y - X_S b||^2 over ||b||_1 <= l1_bound, "
                                "Delta = (b_y + b_x l1_bound)^2", str, ("ridge", "l1")),
        "l1_bound": Param(0.5, "B of the l1 score (Roy & Tewari's main.py: 0.5; the NeurIPS code: 3.5)", float,
                          interval=(0.0, None, "neither")),
    }

    @property
    def l1_bound(self):
        """The l1 bound B when ``score = l1``, else None (the ridge score)."""
        return self.config["l1_bound"] if self.config["score"] == "l1" else None

    def prepare(self, trial, rng):
        """Epsilon-independent work: X^T (contiguous) and a data-driven start if requested."""
        design_transposed(trial)
        init = self.config["init"]
        start = None
        if init == "correlation":
            start = correlation_start(trial)
        elif init == "lasso":
            start = lasso_start(trial)
        return MCMCPrepared(start)

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        eps = check_epsilon(epsilon)
        if prepared is None:
            prepared = self.prepare(trial, rng)
        p, s, n = trial.p, trial.s, trial.n
        iterations = self.config["iterations"]
        # One integer from the caller's stream names all chains; chain k's stream depends
        # only on it and k, so results do not depend on n_draws or on the grouping below.
        base = int(rng.integers(2**63))
        group = max(1, _GROUP_BYTES // (8 * s * n))
        supports = np.empty((n_draws, s), dtype=np.int64)
        accepted = np.zeros(n_draws, dtype=np.int64)
        trace = None
        t0 = time.perf_counter()
        for a in range(0, n_draws, group):
            ks = range(a, min(n_draws, a + group))
            gens = chain_generators(base, ks)
            if prepared.start is None:
                init = np.concatenate([uniform_supports(g, p, s, 1) for g in gens])
            else:
                init = np.repeat(prepared.start[None, :], len(ks), axis=0)
            final, acc, tr = run_chains(trial, eps, init, iterations, gens,
                                        trace_chain=0 if a == 0 else None, l1_bound=self.l1_bound)
            supports[a:a + len(ks)] = final
            accepted[a:a + len(ks)] = acc
            if tr is not None:
                trace = tr
        seconds = time.perf_counter() - t0
        proposals = n_draws * iterations
        diagnostics = {
            "chains": int(n_draws),
            "iterations": int(iterations),
            "init": self.config["init"],
            "score": self.config["score"],
            "sensitivity": chain_sensitivity(trial, self.l1_bound),
            "acceptance_rate": float(accepted.sum() / proposals) if proposals else None,
            "acceptance_rate_per_chain": ({"min": float(accepted.min() / iterations),
                                           "median": float(np.median(accepted) / iterations),
                                           "max": float(accepted.max() / iterations)}
                                          if proposals else {}),
            "proposals_per_second": float(proposals / seconds) if seconds > 0 else None,
            "seconds": float(seconds),
            "score_trace_chain0": _trace_summary(trace) if trace is not None else {},
            "requested_delta": trial.delta,
            "privacy": "approximate (epsilon, delta)-DP only after mixing (Roy & Tewari 2023, "
                       "Corollary 1): delta = (1 + e^eps) eta needs t >= C t_mix(eta) with an unspecified "
                       "universal constant C and Assumption 2 on every neighbour, so no delta is computable "
                       f"for {iterations} iterations"
                       + ("" if self.config["init"] == "random" else
                          "; the start is a non-private function of the data"),
        }
        # delta is unknown (it depends on the unverified mixing time), so it is reported as
        # NaN rather than 0, which would read as pure DP.
        return Draws(supports, delta=math.nan, no_guarantee="mixing not established", diagnostics=diagnostics)


@hookimpl
def dpbench_selectors():
    return [MCMC]
