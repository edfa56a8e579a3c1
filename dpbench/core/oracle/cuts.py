"""Outer approximation (OA) for best-subset selection: the formulation, once for every backend.

docs/solvers.md (Bertsimas & Van Parys 2020; Algorithm 2 of the NeurIPS 2025 paper).
With binary ``z`` (``z_i = 1`` iff feature i is in the support),

    f(z) = min_beta ||y - X beta||^2 + lam sum_i beta_i^2 / z_i   s.t. ||beta||^2 <= r^2

equals the shared score R(S, D) of the support S = {i : z_i = 1} and is convex in
``z in [0, 1]^p`` (perspective of the ridge term). Backends only solve the *master* MILP
the package builds (:class:`~dpbench.core.oracle.cuts.MasterMILP`); screening, cuts, the
heuristic, the status logic and certification live in dpbench. This module states the
mathematics once and builds the cuts and the master; a backend implements
:class:`MasterSolver`: solve one :class:`MasterMILP` and return a :class:`MasterResult`.

Duality (why the cuts are valid)
--------------------------------
Writing ``||y - X beta||^2 = max_alpha 2 alpha^T (y - X beta) - ||alpha||^2`` and
dualising ``||beta||^2 <= r^2`` with ``mu >= 0`` gives, for **every** ``alpha in R^n`` and
``mu >= 0`` (weak duality),

    f(z) >= h(z; alpha, mu) = 2 alpha^T y - ||alpha||^2 - mu r^2
                              - sum_i z_i (x_i^T alpha)^2 / (lam + mu z_i),

with equality at the optimal pair: ``alpha* = y - X beta*`` (the residual) and ``mu*`` the
multiplier of the l2 constraint, scaled as in ``(X_S^T X_S + (lam + mu) I) beta_S = X_S^T y``
(the secular equation of :func:`dpbench.core.score.solve_blocks`). Danskin's theorem gives the
gradient of docs/solvers.md,

    d f / d z_i = -lam (x_i^T alpha*)^2 / (lam + mu* z_i)^2,

finite at ``z_i = 0`` (:func:`perspective_relaxation` computes both; the tests check it
against finite differences). The OA cut ``eta >= f(z_k) + grad f(z_k)^T (z - z_k)`` is the
tangent of ``h(.; alpha*, mu*)`` at ``z_k``. Because ``h`` is convex and separable, on
*binary* points the chord ``z_i (x_i^T alpha)^2 / (lam + mu)`` dominates the tangent, so we
use the (never weaker) binary cut

    eta >= c_k - sum_i w_{k,i} z_i,   c_k = 2 alpha^T y - ||alpha||^2 - mu r^2,
                                      w_{k,i} = (x_i^T alpha)^2 / (lam + mu),

which is exact at ``z_k`` (complementary slackness) and a valid lower bound on R(S, D) for
every support S whatever (alpha, mu) it was built from: rounding in beta* weakens it but
cannot invalidate it. Cuts depend on the data only, so a session keeps them across calls.

Safe screening
--------------
For one cut and a feature j, ``min { c_k - sum_{i in S} w_{k,i} : j in S, S feasible }``
over the cardinality, overlap and fixed-in/-out constraints (ignoring no-good cuts, a
relaxation) is solved exactly by a greedy choice of the largest weights in each overlap
group. The maximum over several cuts, ``LB_j``, bounds R(S) for every feasible support
containing j. If ``LB_j`` exceeds the incumbent's score, no optimal support contains j and
z_j is fixed to 0. The master then runs on the surviving candidates C, and the certified
lower bound of the **full** problem is ``min(master bound over C, min_{j screened} LB_j)``.

Requires lam > 0: as lam -> 0 the weights ``(x_i^T alpha)^2 / lam`` of non-selected
features blow up and the relaxation says nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from dpbench.core.score import RidgeScore, solve_blocks
from dpbench.core.oracle.constraints import ConstraintSet

def _multiplier(G, c, beta, r):
    """mu >= 0 of the l2 constraint from a solution of (G + mu I) beta = c, G = X_S^T X_S + lam I.

    Parameters
    ----------
    G : ndarray (B, s, s);  c, beta : ndarray (B, s);  r : float

    Returns
    -------
    ndarray (B,)
        ``beta^T (c - G beta) / ||beta||^2`` where the constraint is active, else 0. Any
        mu >= 0 yields a valid cut (weak duality); only its tightness depends on accuracy.
    """
    nb2 = np.einsum("bi,bi->b", beta, beta)
    resid = c - np.einsum("bij,bj->bi", G, beta)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = np.einsum("bi,bi->b", beta, resid) / nb2
    active = np.isfinite(r) & (nb2 >= (r * r) * (1 - 1e-8))
    return np.where(active & np.isfinite(mu), np.maximum(mu, 0.0), 0.0)


def dual_cuts(score: RidgeScore, supports):
    """Scores and binary OA cuts of a batch of supports (module docstring, "Duality").

    Parameters
    ----------
    score : RidgeScore
        The shared score (lam > 0).
    supports : int array of shape (B, s)

    Returns
    -------
    objective : ndarray (B,)
        R(S, D) from the shared score.
    const : ndarray (B,)
        ``c_k = 2 alpha^T y - ||alpha||^2 - mu r^2``.
    weights : ndarray (B, p)
        ``w_{k,i} = (x_i^T alpha)^2 / (lam + mu)``; the cut is ``eta >= c_k - w_k^T z``.

    Notes
    -----
    Costs one ``X^T A`` product, O(n p B); no p x p matrix is formed.
    """
    S = np.atleast_2d(np.asarray(supports, dtype=np.int64))
    G, c = score.blocks(S)
    obj, beta = solve_blocks(G, c, score.yy, score.r)
    mu = _multiplier(G, c, beta, score.r)
    # alpha_k = y - X_S beta, assembled for the whole batch as an (n, B) matrix.
    A = score.y[:, None] - np.einsum("nbs,bs->nb", score.X[:, S], beta)
    a = score.X.T @ A  # (p, B): x_i^T alpha_k for all i
    r2 = score.r * score.r if np.isfinite(score.r) else 0.0
    const = 2.0 * (score.y @ A) - np.einsum("nb,nb->b", A, A) - mu * r2
    weights = (a * a).T / (score.lam + mu)[:, None]
    return obj, const, weights


def perspective_relaxation(score: RidgeScore, z):
    """Value and Danskin gradient of the continuous relaxation f(z), z in [0, 1]^p.

    Parameters
    ----------
    score : RidgeScore
        Shared score (lam > 0).
    z : ndarray (p,)
        Relaxed indicator; features with ``z_i = 0`` are forced to ``beta_i = 0``.

    Returns
    -------
    value : float
        ``f(z) = min ||y - X beta||^2 + lam sum beta_i^2 / z_i``, ``||beta|| <= r``.
    grad : ndarray (p,)
        ``-lam (x_i^T alpha)^2 / (lam + mu z_i)^2`` (docs/solvers.md).

    Notes
    -----
    Forms a |{z > 0}|-square matrix: meant for tests and diagnostics on small problems.
    """
    z = np.asarray(z, dtype=np.float64)
    Z = np.flatnonzero(z > 0)
    XZ = score.X[:, Z]
    G = XZ.T @ XZ + np.diag(score.lam / z[Z])
    c = score.c[Z]
    val, beta = solve_blocks(G[None], c[None], score.yy, score.r)
    mu = _multiplier(G[None], c[None], beta, score.r)[0]
    alpha = score.y - XZ @ beta[0]
    a = score.X.T @ alpha
    grad = -score.lam * a * a / (score.lam + mu * z) ** 2
    return float(val[0]), grad


# --------------------------------------------------------------------------- the master MILP


@dataclass
class MasterMILP:
    """The OA master problem as plain arrays, for a backend to solve.

    Variables ``x = (z_0 .. z_{m-1}, eta)``: ``z`` binary over the candidate features,
    ``eta`` continuous. Minimise ``eta`` subject to ``row_lo <= A x <= row_hi`` (A in CSR
    form) and the column bounds.

    Attributes
    ----------
    m : int
        Number of binary variables.
    start, index, value : ndarrays
        CSR rows of A over the m + 1 columns.
    row_lo, row_hi : ndarrays
        Row bounds (+-inf allowed).
    col_lo, col_hi : ndarrays (m + 1,)
        Column bounds.
    """

    m: int
    start: np.ndarray
    index: np.ndarray
    value: np.ndarray
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray

    @property
    def n_rows(self) -> int:
        return len(self.row_lo)

    def dense_rows(self):
        """Yield (indices, values, lo, hi) row by row (for modelling-language backends)."""
        for r in range(self.n_rows):
            a, b = self.start[r], self.start[r + 1]
            yield self.index[a:b], self.value[a:b], self.row_lo[r], self.row_hi[r]


@dataclass
class MasterResult:
    """What a backend returns: status, binary z over the candidates (or None), a dual bound."""

    status: str  # "optimal" | "infeasible" | "work_limit" | "time_limit" | "error"
    z: np.ndarray | None
    bound: float
    message: str = ""


class MasterSolver(Protocol):
    """What a backend provides: ``(master, time_limit, gap, node_limit) -> MasterResult``.

    ``time_limit``: seconds left on the safety net (None: none); ``gap``: relative gap the
    master must close; ``node_limit``: MILP nodes (deterministic with one thread). Status
    "work_limit" for a count limit, "time_limit" for the clock only.
    """

    def __call__(self, master: MasterMILP, time_limit: float | None, gap: float,
                 node_limit: int | None = None) -> MasterResult: ...


def build_master(cand, const, W, cons: ConstraintSet, eta_lo=0.0) -> MasterMILP:
    """Assemble the master over candidate features ``cand`` with cuts (const, W[:, cand]).

    Parameters
    ----------
    cand : int array (m,)
        Candidate features (screened survivors, fixed-in included, fixed-out excluded).
    const : ndarray (K,);  W : ndarray (K, p)
        Cuts ``eta >= const_k - W_k^T z`` (restricted to ``cand``: features outside are 0).
    cons : ConstraintSet
    eta_lo : float
        A valid lower bound on eta (R >= 0 always).
    """
    m = len(cand)
    pos = np.full(cons.p, -1, dtype=np.int64)
    pos[cand] = np.arange(m)
    rows_idx, rows_val, lo, hi = [], [], [], []
    allc = np.arange(m + 1)
    for k in range(len(const)):
        rows_idx.append(allc)
        rows_val.append(np.append(W[k, cand], 1.0))
        lo.append(const[k])
        hi.append(np.inf)
    rows_idx.append(np.arange(m))
    rows_val.append(np.ones(m))
    lo.append(cons.s)
    hi.append(cons.s)
    if cons.group is not None:
        g = np.flatnonzero(cons.group[cand] == 1)
        rows_idx.append(g)
        rows_val.append(np.ones(g.size))
        lo.append(cons.k)
        hi.append(cons.k)
    for S in cons.exclude:
        q = pos[np.asarray(S)]
        if np.all(q >= 0):  # otherwise a feature of S is screened out and the cut holds
            rows_idx.append(q)
            rows_val.append(np.ones(q.size))
            lo.append(-np.inf)
            hi.append(cons.s - 1)
    start = np.zeros(len(rows_idx) + 1, dtype=np.int64)
    start[1:] = np.cumsum([len(i) for i in rows_idx])
    col_lo = np.zeros(m + 1)
    col_hi = np.ones(m + 1)
    col_lo[m], col_hi[m] = eta_lo, np.inf
    fin = pos[cons.fixed_in]
    col_lo[fin[fin >= 0]] = 1.0
    return MasterMILP(m, start, np.concatenate(rows_idx).astype(np.int32),
                      np.concatenate(rows_val).astype(np.float64), np.array(lo, float),
                      np.array(hi, float), col_lo, col_hi)


class _CutPool:
    """Global cuts ``eta >= const_k - W_k^T z`` learned for one data set (capped in memory)."""

    def __init__(self, p, max_bytes):
        self.p = p
        self.cap = max(8, int(max_bytes // (8 * max(p, 1))))
        self.const = np.zeros(0)
        self.W = np.zeros((0, p))
        self.keys: list[tuple] = []
        self.index: dict[tuple, int] = {}

    def __len__(self):
        return len(self.keys)

    def add(self, keys, const, W):
        new = [i for i, k in enumerate(keys) if k not in self.index]
        if not new:
            return
        keys = [keys[i] for i in new]
        self.const = np.concatenate([self.const, const[new]])
        self.W = np.concatenate([self.W, W[new]])
        self.keys += keys
        if len(self.keys) > self.cap:  # drop the oldest: they are still valid, only memory-bound
            drop = len(self.keys) - self.cap
            self.const, self.W, self.keys = self.const[drop:], self.W[drop:], self.keys[drop:]
        self.index = {k: i for i, k in enumerate(self.keys)}

    def values(self, S):
        """Lower bounds the cuts give for support S (K,)."""
        return self.const - self.W[:, np.asarray(S)].sum(axis=1)
