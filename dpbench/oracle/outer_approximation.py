"""Outer approximation (OA) for best-subset selection: the formulation, once for every backend.

design.md section 5 (Bertsimas & Van Parys 2020; Algorithm 2 of the NeurIPS 2025 paper).
With binary ``z`` (``z_i = 1`` iff feature i is in the support),

    f(z) = min_beta ||y - X beta||^2 + lam sum_i beta_i^2 / z_i   s.t. ||beta||^2 <= r^2

equals the shared score R(S, D) of the support S = {i : z_i = 1} and is convex in
``z in [0, 1]^p`` (perspective of the ridge term). Backends only solve the *master* MILP
this module builds (:class:`MasterMILP`); screening, cuts, the heuristic, the status logic
and certification live here.

Duality (why the cuts are valid)
--------------------------------
Writing ``||y - X beta||^2 = max_alpha 2 alpha^T (y - X beta) - ||alpha||^2`` and
dualising ``||beta||^2 <= r^2`` with ``mu >= 0`` gives, for **every** ``alpha in R^n`` and
``mu >= 0`` (weak duality),

    f(z) >= h(z; alpha, mu) = 2 alpha^T y - ||alpha||^2 - mu r^2
                              - sum_i z_i (x_i^T alpha)^2 / (lam + mu z_i),

with equality at the optimal pair: ``alpha* = y - X beta*`` (the residual) and ``mu*`` the
multiplier of the l2 constraint, scaled as in ``(X_S^T X_S + (lam + mu) I) beta_S = X_S^T y``
(the secular equation of :func:`dpbench.score.solve_blocks`). Danskin's theorem gives the
gradient of design.md section 5,

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

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..base import OracleResult, OracleSession
from ..errors import UserInputError
from ..problem import as_support
from ..score import RidgeScore, solve_blocks

#: Supports rescored per batch when a threshold enumeration returns.
_CHUNK = 200_000

__all__ = ["THRESHOLD_MARGIN", "ConstraintSet", "MasterMILP", "OASession", "completion_bounds", "dual_cuts", "gram_row_tops",
           "perspective_relaxation", "require_positive_lam"]


def require_positive_lam(score: RidgeScore, backend: str) -> None:
    """Refuse Lambda = 0 for an OA backend with a message that names the alternatives.

    Raises
    ------
    UserInputError
        If ``score.lam == 0``.
    """
    if score.lam <= 0:
        raise UserInputError(
            f"solver {backend!r} uses outer approximation, which needs a ridge penalty lam > 0 "
            f"(got lam = {score.lam}); use --lam > 0, or a backend that handles lam = 0: "
            "solver 'gurobi' with formulation=misocp (small p) or solver 'enumerate' (small C(p, s))")


# --------------------------------------------------------------------------- the mathematics


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
        ``-lam (x_i^T alpha)^2 / (lam + mu z_i)^2`` (design.md section 5).

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


# --------------------------------------------------------------------------- constraints


@dataclass
class ConstraintSet:
    """The constraints of one oracle call (see :class:`dpbench.base.OracleSession`).

    Attributes
    ----------
    p, s : int
    fixed_in, fixed_out : int arrays
    group : int8 array (p,) or None
        1 for features of S0, 0 otherwise, when an overlap constraint is given.
    k : int
        Required ``|S ∩ S0|``.
    exclude : set of tuples
        Excluded supports.
    infeasible : str
        Non-empty when the constraints are provably contradictory (the reason).
    """

    p: int
    s: int
    fixed_in: np.ndarray
    fixed_out: np.ndarray
    group: np.ndarray | None = None
    k: int = 0
    exclude: set = field(default_factory=set)
    infeasible: str = ""

    @classmethod
    def build(cls, p, s, exclude=(), overlap=None, fixed_in=(), fixed_out=()):
        """Validate the arguments of ``OracleSession.solve``.

        Raises
        ------
        UserInputError
            For indices outside 0..p-1 or supports of the wrong size.
        """
        fin = as_support(fixed_in, p) if len(fixed_in) else np.zeros(0, np.int64)
        fout = as_support(fixed_out, p) if len(fixed_out) else np.zeros(0, np.int64)
        ex = set()
        for S in exclude:
            S = as_support(S, p)
            if S.size != s:
                raise UserInputError(f"excluded support {S.tolist()} has {S.size} indices; supports have s = {s}")
            ex.add(tuple(S.tolist()))
        cons = cls(p, s, fin, fout, exclude=ex)
        if np.intersect1d(fin, fout).size:
            cons.infeasible = "a feature is both fixed in and fixed out"
        elif fin.size > s:
            cons.infeasible = f"{fin.size} features fixed in but s = {s}"
        if overlap is not None:
            S0, k = overlap
            S0 = as_support(S0, p)
            if int(k) != k:
                raise UserInputError(f"overlap size k = {k} must be an integer")
            cons.group = np.zeros(p, dtype=np.int8)
            cons.group[S0] = 1
            cons.k = int(k)
        if not cons.infeasible:
            for g, need in cons._needs():
                if need < 0 or need > g.size:
                    cons.infeasible = "the overlap and fixed-in/-out constraints cannot hold together"
        return cons

    def _needs(self):
        """[(free indices of a group, how many more must be chosen from it)], groups of the overlap."""
        free = np.ones(self.p, dtype=bool)
        free[self.fixed_in] = False
        free[self.fixed_out] = False
        if self.group is None:
            return [(np.flatnonzero(free), self.s - self.fixed_in.size)]
        out = []
        for gv, total in ((1, self.k), (0, self.s - self.k)):
            inside = self.group == gv
            out.append((np.flatnonzero(free & inside), total - int(inside[self.fixed_in].sum())))
        return out

    def feasible_mask(self, supports) -> np.ndarray:
        """Which rows of an (N, s) support array satisfy every constraint."""
        S = np.asarray(supports, dtype=np.int64)
        ok = np.ones(len(S), dtype=bool)
        if self.infeasible:
            return ~ok
        for j in self.fixed_in:
            ok &= (S == j).any(axis=1)
        if self.fixed_out.size:
            ok &= ~np.isin(S, self.fixed_out).any(axis=1)
        if self.group is not None:
            ok &= self.group[S].sum(axis=1) == self.k
        if self.exclude:
            ok &= np.array([tuple(row) not in self.exclude for row in S.tolist()], dtype=bool)
        return ok


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

    status: str  # "optimal" | "infeasible" | "time_limit" | "error"
    z: np.ndarray | None
    bound: float
    message: str = ""


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


# --------------------------------------------------------------------------- branch and bound


def _empty_cut(score: RidgeScore):
    """The binary cut built at the empty support: alpha = y, mu = 0 (module docstring).

    ``R(S) >= y^T y - sum_{i in S} (x_i^T y)^2 / lam`` for every support S.
    """
    return float(score.yy), score.c * score.c / score.lam


def roots(cons: ConstraintSet):
    """Split the feasible set of a call into disjoint subproblems (F, C, m).

    Each subproblem is "F fixed in, choose exactly m more features from the candidates C";
    together they cover every feasible support exactly once (no-good cuts aside). Without
    an overlap constraint there is one subproblem (F = fixed_in). With ``|S ∩ S0| = k`` the
    call decomposes by the kept subset K of S0 (design note: K fixed in, S0 \\ K fixed
    out, the rest chosen outside S0), so subproblem bounds see the exact cost of dropping
    S0's features instead of the weak bound a cut at S0 gives them.

    Returns
    -------
    list of (F : int array, C : int array, m : int)
    """
    import itertools

    free = np.ones(cons.p, dtype=bool)
    free[cons.fixed_out] = False
    free[cons.fixed_in] = False
    fin = np.sort(cons.fixed_in)
    if cons.group is None:
        return [(fin, np.flatnonzero(free), cons.s - fin.size)]
    in0 = cons.group == 1
    G1 = np.flatnonzero(free & in0)
    need1 = cons.k - int(in0[fin].sum())
    C = np.flatnonzero(free & ~in0)
    m = cons.s - cons.k - int((~in0[fin]).sum())
    if need1 < 0 or need1 > G1.size or m < 0 or m > C.size:
        return []
    return [(np.sort(np.concatenate([fin, np.array(K, dtype=np.int64)])), C, m)
            for K in itertools.combinations(G1.tolist(), need1)]


def count_feasible(cons: ConstraintSet) -> int:
    """Exact number of supports satisfying the fixed and overlap constraints (no-good cuts ignored)."""
    if cons.infeasible:
        return 0
    return sum(math.comb(C.size, m) for _, C, m in roots(cons))


def _topm_prefix(w_sorted_desc, m):
    """s_i = sum of w[i : i + m] for sorted-descending w (the best m-sum from position i on)."""
    cs = np.concatenate([[0.0], np.cumsum(w_sorted_desc)])
    L = w_sorted_desc.size
    i = np.arange(max(L - m + 1, 0))
    return cs[i + m] - cs[i]


# --------------------------------------------------------------------------- Schur / Gershgorin bound


#: Largest p for which :meth:`OASession._ridge_node` computes :func:`gram_row_tops` (O(n p^2)
#: flops, about 3 s at n = 800, p = 10 000 on 2 cores, and not interruptible by a time limit);
#: above it branch and bound uses the cut bounds only.
GERSHGORIN_MAX_P = 40_000


def gram_row_tops(score: RidgeScore, q: int, block_bytes: float = 32 * 2**20) -> np.ndarray:
    """Upper bounds on the sums of the largest off-diagonal Gram entries of every row.

    Parameters
    ----------
    score : RidgeScore
    q : int
        How many largest entries (q >= 1; in use q = s - 1).
    block_bytes : float
        Memory of one block of rows of the Gram matrix (no p x p matrix is formed unless
        the score caches it anyway).

    Returns
    -------
    ndarray of shape (p, q)
        ``E[i, j] >= sum of the (j + 1) largest |x_i^T x_k| over k != i`` (all k).

    Notes
    -----
    When the score caches X^T X (``gram_mode == "full"``) the float64 entries are used;
    otherwise the Gram rows are computed in float32 (half the cost of float64 at
    p = 10 000) and each selected entry is raised by the rigorous rounding bound
    ``1.1 (n + 3) u ||x_i|| max_k ||x_k||``, u = 2^-24 (float32 conversion of X plus any
    summation order of an n-term dot product, Higham, *Accuracy and Stability*, eq. 3.5;
    u = 2^-53 for the cached float64 Gram), so the result is an upper bound whatever the
    BLAS does. O(n p^2) flops, once per session.
    """
    X = score.X
    n, p = X.shape
    q = int(max(1, min(q, p - 1)))
    norms = np.sqrt(score.col_sq)
    full = score.gram_mode == "full"
    eps = (n + 3) * 2.0 ** (-53 if full else -24) * 1.1
    if not full:
        X32 = np.asfortranarray(X.astype(np.float32))
    rows = max(1, int(block_bytes // (4 * max(p, 1))))
    E = np.empty((p, q))
    allc = np.arange(p)
    for a in range(0, p, rows):
        idx = np.arange(a, min(p, a + rows))
        B = score.gram(idx, allc) if full else X32[:, idx].T @ X32
        np.abs(B, out=B)
        B[np.arange(idx.size), idx] = 0.0  # k != i (0 never exceeds a true |entry|)
        top = np.partition(B, B.shape[1] - q, axis=1)[:, B.shape[1] - q:] if q < p else B
        top = -np.sort(-top.astype(np.float64), axis=1)
        # The sum of the j largest of (|G^_ik| + err_ik) is at most the sum of the j largest
        # |G^_ik| plus j max_k err_ik: the rounding bound is added once per term.
        err = eps * norms[idx] * norms.max()
        E[idx] = np.cumsum(top, axis=1) + err[:, None] * np.arange(1, q + 1)[None, :]
    return E


def completion_bounds(h, Mdiag, rowsum, m):
    """Upper bounds on the ridge decrease when m features T ⊂ C are added to a fixed set F.

    For a fixed set F and the ridge-only score (no l2 bound, which can only raise the
    score, so every bound below is also valid for the shared score R), adding T ⊂ C lowers
    ``R0(F) = min ||y - X_F b||^2 + lam ||b||^2`` by exactly ``u_T^T M_T^{-1} u_T``, where
    ``u_b = x_b^T r_F`` (ridge residual r_F) and ``M = X_C^T X_C + lam I - G_CF (G_FF + lam I)^{-1} G_FC``
    is the Schur complement of ``X^T X + lam I`` on C given F (block elimination; M >= lam I).
    With ``D = diag(M_T)`` and ``N = D^{-1/2} M_T D^{-1/2} - I``,

        u_T^T M_T^{-1} u_T = v^T (I + N)^{-1} v <= ||v||^2 / lambda_min(I + N)
                           <= (sum_{b in T} h_b) / (1 - rho),

    ``v = D^{-1/2} u_T``, ``||v||^2 = sum_T h_b`` with ``h_b = u_b^2 / M_bb`` the exact single-
    feature decreases, and ``rho >= max_{i in T} sum_{k in T, k != i} |N_ik|`` (Gershgorin's
    disc theorem), valid whenever ``rho < 1``. Here
    ``rho = max_{i in C} rowsum_i / sqrt(M_ii min_{k in C} M_kk)``. Dropping the Gershgorin
    factor (``rho = 0``) is *not* valid: a suppressor pair explains far more than the sum
    of its single decreases (tests).

    Parameters
    ----------
    h : ndarray (c,)
        Exact single-feature decreases given F.
    Mdiag : ndarray (c,)
        Schur diagonals ``M_bb`` (>= lam > 0).
    rowsum : ndarray (c,)
        ``rowsum_i >= sum_{k in T, k != i} |M_ik|`` for every T ⊂ C with |T| = m containing i
        (unnormalised; :meth:`OASession._ridge_node` builds it from :func:`gram_row_tops`).
    m : int
        Number of features to add (>= 1).

    Returns
    -------
    node : float
        ``>= max_{T ⊂ C, |T| = m} u_T^T M_T^{-1} u_T`` (inf when rho >= 1 or |C| < m).
    per : ndarray (c,)
        ``per[j] >=`` the same maximum over the T that contain j (inf where unavailable).
    rho : float
        The normalised Gershgorin radius used.
    """
    h = np.asarray(h, dtype=np.float64)
    c = h.size
    if c < m or m < 1:
        return -np.inf if c < m else 0.0, np.full(c, -np.inf), 0.0
    if m == 1:
        return float(h.max()), h.copy(), 0.0
    mmin = float(np.min(Mdiag))
    rho = float(np.max(np.asarray(rowsum) / np.sqrt(np.asarray(Mdiag) * mmin)))
    if not rho < 1.0:
        return np.inf, np.full(c, np.inf), rho
    excl, full = _top_sum_excluding(h, np.arange(c), m - 1)
    scale = 1.0 / (1.0 - rho)
    top_m = float(np.partition(h, c - m)[c - m:].sum())
    # One ulp-level relative margin per term: the bound is compared with scores in float64.
    per = (h + excl) * scale * (1 + 1e-12)
    return top_m * scale * (1 + 1e-12), per, rho


# --------------------------------------------------------------------------- the session


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


def _top_sum_excluding(w, idx, need):
    """For each j in idx: the sum of the ``need`` largest w over idx minus j (and the total).

    Returns
    -------
    excl : ndarray (len(idx),)
        Best sum of ``need`` weights from idx without j (-inf when impossible).
    full : float
        Best sum of ``need`` weights from idx (-inf when impossible).
    """
    m = idx.size
    wi = w[idx]
    if need <= 0:
        return np.where(need == 0, 0.0, -np.inf) * np.ones(m), (0.0 if need == 0 else -np.inf)
    if need > m:
        return np.full(m, -np.inf), -np.inf
    order = np.argpartition(-wi, need - 1)[:need] if need < m else np.arange(m)
    full = float(wi[order].sum())
    excl = np.full(m, full)
    if need < m:
        # j in the top set: replace it by the (need+1)-th largest.
        rest = np.ones(m, dtype=bool)
        rest[order] = False
        nxt = wi[rest].max()
        excl[order] = full - wi[order] + nxt
    else:
        excl[:] = -np.inf  # every j is needed, so "without j" is impossible
    return excl, full


class _BestTarget:
    """Branch-and-bound target of an optimum call: the incumbent and its gap-tolerant bar."""

    def __init__(self, S_inc, ub, gap_tol, excl):
        if S_inc is not None and tuple(S_inc.tolist()) in excl:
            S_inc, ub = None, np.inf
        self.S, self.ub, self.gap_tol, self.excl = S_inc, ub, gap_tol, excl

    def bar(self):
        if self.S is None:
            return np.inf
        ub = self.ub
        return ub - (self.gap_tol * abs(ub) + 1e-12 * max(1.0, abs(ub)))

    def incumbent(self):
        return self.S

    def stop(self):
        return False

    def offer(self, S, vals):
        for i in np.argsort(vals, kind="stable"):
            if vals[i] >= self.ub:
                return
            if not self.excl or tuple(S[i].tolist()) not in self.excl:
                self.S, self.ub = S[i].copy(), float(vals[i])
                return


#: Relative rounding margin of threshold enumerations: a node is closed only when its bound
#: exceeds tau by this much, far above the float64 error of the bounds and of the scores
#: assembled from cached Gram rows (both ~1e-13 relative), so no support <= tau is lost.
THRESHOLD_MARGIN = 1e-9


class _BelowTarget:
    """Branch-and-bound target of :meth:`OASession.supports_below`: every support <= tau.

    Keeps the offered supports with value below the bar ``tau + margin``; with ``rank``,
    tau is lowered to the rank-th smallest of ``known`` and the values found so far (see
    :meth:`dpbench.base.OracleSession.supports_below`). ``above`` is the smallest value of
    any offered, non-excluded support that was not kept (part of the bound on the rest).
    """

    def __init__(self, tau, rank, known, excl, max_count, s):
        from .threshold import rank_threshold

        known = np.asarray(known, dtype=np.float64).ravel()
        self.tau = rank_threshold(tau, rank, known)
        self.rank, self.excl, self.max_count = rank, excl, max_count
        self.pool = known[known <= self.tau] if rank is not None else known[:0]
        self.S, self.v = [np.zeros((0, s), dtype=np.int64)], [np.zeros(0)]
        self.count = 0
        self.above = np.inf
        self.full = False

    def bar(self):
        return self.tau + THRESHOLD_MARGIN * max(1.0, abs(self.tau))

    def incumbent(self):
        return None

    def stop(self):
        return self.full

    def offer(self, S, vals):
        if self.excl:
            keep = np.array([tuple(r) not in self.excl for r in np.sort(S, axis=1).tolist()], dtype=bool)
            S, vals = S[keep], vals[keep]
        ok = vals < self.bar()
        if (~ok).any():
            self.above = min(self.above, float(vals[~ok].min()))
        if not ok.any():
            return
        S, vals = S[ok], vals[ok]
        self.S.append(np.sort(S, axis=1))
        self.v.append(np.asarray(vals, dtype=np.float64))
        self.count += len(vals)
        if self.rank is not None:
            self.pool = np.concatenate([self.pool, vals])
            if self.pool.size >= self.rank:
                tau = float(np.partition(self.pool, self.rank - 1)[self.rank - 1])
                if tau < self.tau:
                    self.tau = tau
                    self.pool = self.pool[self.pool <= self.bar()]
            if self.count > 2 * self.rank + 100_000:
                self._trim()
        if self.count > self.max_count:
            self._trim()
            self.full = self.count > self.max_count

    def _trim(self):
        S, v = self.result()
        ok = v < self.bar()
        if (~ok).any():
            self.above = min(self.above, float(v[~ok].min()))
        self.S, self.v, self.count = [S[ok]], [v[ok]], int(ok.sum())

    def result(self):
        """(supports (m, s), values (m,)) kept so far."""
        if len(self.S) > 1:
            self.S, self.v = [np.concatenate(self.S)], [np.concatenate(self.v)]
        return self.S[0], self.v[0]


class OASession(OracleSession):
    """Outer-approximation oracle session; a backend supplies ``solve_master``.

    Parameters
    ----------
    score : RidgeScore
        Shared score (lam > 0, else UserInputError).
    s : int
        Support size.
    backend : str
        Name used in messages.
    solve_master : callable (MasterMILP, time_limit, gap) -> MasterResult
    screen : bool
        Safe screening on/off (off: the master runs over all p features).
    max_cut_mb : float
        Memory cap of the global cut pool.
    master_cuts : int
        Pool cuts seeded into each master (the strongest at the incumbent).
    """

    def __init__(self, score, s, backend, solve_master, *, screen=True, max_cut_mb=200.0, master_cuts=40,
                 screen_cuts=16, neighbour_cuts=4, max_swaps=100, enum_limit=1_500_000, leaf_limit=20_000,
                 default_time_limit=None, gershgorin=True, relax_after=1,
                 relax_cand=200, relax_bnb=1000, relax_nodes=2000, relax_overlap_nodes=2000,
                 relax_overlap_after=300):
        super().__init__(score, s)
        require_positive_lam(score, backend)
        self.backend = backend
        self.solve_master = solve_master
        self.screen = screen
        self.master_cuts = master_cuts
        self.screen_cuts = screen_cuts
        self.neighbour_cuts = neighbour_cuts
        self.max_swaps = max_swaps
        self.pool_cap = 8192
        self.enum_limit = enum_limit
        self.leaf_limit = leaf_limit
        self.default_time_limit = default_time_limit
        # Cuts built at partial supports F (branch-and-bound nodes), memory-capped.
        self._fcuts: dict[tuple, tuple] = {}
        self._fdiag: dict[tuple, np.ndarray] = {}  # Schur diagonals M_bb of the same F
        self.gershgorin = gershgorin
        self._tops = None  # gram_row_tops(score, s - 1), computed on first use
        self._row_cache: dict[int, np.ndarray] = {}
        self._row_cap = max(64, int(max_cut_mb * 2**20 / 4 // (8 * max(score.p, 1))))
        self._fcut_cap = max(16, int(max_cut_mb * 2**20 / 4 // (8 * max(score.p, 1))))
        self.cuts = _CutPool(score.p, max_cut_mb * 2**20)
        self.pool: dict[tuple, float] = {}  # evaluated supports -> score (heuristic memory)
        self.calls = 0
        p = score.p
        # Single-feature ridge gain, the cheap start of the swap search.
        self._gain = score.c**2 / (score.col_sq + score.lam)
        self._all = np.arange(p)
        self.relax_after = relax_after
        self.relax_cand = relax_cand
        self.relax_bnb = relax_bnb
        self.relax_nodes = relax_nodes
        self.relax_overlap_nodes = relax_overlap_nodes
        self.relax_overlap_after = relax_overlap_after
        self._relax_delay = 0  # nodes a search processes before its first node relaxation
        self._relax_budget = 0  # node relaxations left in the current branch and bound
        self._relax_alphas: list = []  # recent node dual points (warm starts, all valid)
        self._relax_lb = None  # per-feature k-support bounds of the current call (_relax_root)

    # ------------------------------------------------------------- cuts and scores
    def _add_cuts(self, supports):
        S = np.atleast_2d(np.asarray(supports, dtype=np.int64))
        keys = [tuple(row) for row in S.tolist()]
        fresh = [i for i, k in enumerate(keys) if k not in self.cuts.index]
        if fresh:
            obj, const, W = dual_cuts(self.score, S[fresh])
            self.cuts.add([keys[i] for i in fresh], const, W)
            for i, o in zip(fresh, obj):
                self.pool[keys[i]] = float(o)
        return [self.cuts.index[k] for k in keys if k in self.cuts.index]

    def _gram_rows(self, S):
        """X_S^T X of shape (s, p), O(n p s), no p x p matrix in columns mode."""
        sc = self.score
        if sc.gram_mode == "full":
            return sc.gram(S, self._all)
        return sc.X[:, S].T @ sc.X

    def _neighbourhood(self, S, cons: ConstraintSet):
        """Scores of all feasible single swaps of S (shared closed form on assembled blocks).

        Returns (supports (N, s), scores (N,)) of the swap neighbours that respect the
        fixed and overlap constraints (no-good cuts are checked by the caller).
        """
        sc = self.score
        s = S.size
        GS = self._gram_rows(S)
        inS = np.zeros(sc.p, dtype=bool)
        inS[S] = True
        allowed = ~inS
        allowed[cons.fixed_out] = False
        fixed = np.zeros(sc.p, dtype=bool)
        fixed[cons.fixed_in] = True
        outs, scores = [], []
        for a in range(s):
            if fixed[S[a]]:
                continue
            J = allowed if cons.group is None else allowed & (cons.group == cons.group[S[a]])
            J = np.flatnonzero(J)
            if not J.size:
                continue
            keep = np.delete(np.arange(s), a)
            m = J.size
            G = np.empty((m, s, s))
            G[:, : s - 1, : s - 1] = GS[np.ix_(keep, S[keep])]
            cross = GS[keep][:, J].T  # (m, s-1)
            G[:, : s - 1, s - 1] = cross
            G[:, s - 1, : s - 1] = cross
            G[:, s - 1, s - 1] = sc.col_sq[J]
            if sc.lam:
                G[:, np.arange(s), np.arange(s)] += sc.lam
            c = np.empty((m, s))
            c[:, : s - 1] = sc.c[S[keep]]
            c[:, s - 1] = sc.c[J]
            val, _ = solve_blocks(G, c, sc.yy, sc.r)
            sup = np.empty((m, s), dtype=np.int64)
            sup[:, : s - 1] = S[keep]
            sup[:, s - 1] = J
            outs.append(sup)
            scores.append(val)
        if not outs:
            return np.zeros((0, s), np.int64), np.zeros(0)
        sup = np.sort(np.concatenate(outs), axis=1)
        return sup, np.concatenate(scores)

    def _start(self, cons: ConstraintSet):
        """A feasible start: best feasible pooled support, else the largest single-feature gains."""
        if self.pool:
            keys = list(self.pool)
            arr = np.array(keys, dtype=np.int64)
            ok = cons.feasible_mask(arr)
            if ok.any():
                vals = np.array([self.pool[k] for k in keys])
                i = np.flatnonzero(ok)[np.argmin(vals[ok])]
                return arr[i]
        chosen = list(cons.fixed_in)
        for idx, need in cons._needs():
            if need > 0:
                top = idx[np.argsort(-self._gain[idx], kind="stable")[:need]]
                chosen += list(top)
        return np.sort(np.array(chosen, dtype=np.int64))

    def _local_search(self, S, cons, deadline):
        """Best-improvement swap search respecting the constraints; returns (S, score) or (None, inf)."""
        key = tuple(S.tolist())
        cur = float(self.score(S)[0]) if key not in cons.exclude else np.inf
        best_neigh = None
        for _ in range(self.max_swaps):
            sup, val = self._neighbourhood(S, cons)
            if not len(val):
                break
            order = np.argsort(val, kind="stable")
            # Remember the best neighbours: they seed later constrained calls (k-th best).
            for i in order[:32]:
                self.pool.setdefault(tuple(sup[i].tolist()), float(val[i]))
            pick = None
            bar = cur - 1e-12 * max(1.0, abs(cur)) if np.isfinite(cur) else np.inf
            for i in order:
                if val[i] >= bar:
                    break
                if not cons.exclude or tuple(sup[i].tolist()) not in cons.exclude:
                    pick = i
                    break
            best_neigh = sup[order[: self.neighbour_cuts]]
            if pick is None or time.perf_counter() > deadline:
                break
            S, cur = sup[pick], float(val[pick])
        if len(self.pool) > self.pool_cap:
            keep = sorted(self.pool.items(), key=lambda kv: kv[1])[: self.pool_cap // 2]
            self.pool = dict(keep)
        if not np.isfinite(cur):
            return None, np.inf, best_neigh
        cur = float(self.score(S)[0])  # the shared score, recomputed on the final support
        self.pool[tuple(S.tolist())] = cur
        return S, cur, best_neigh

    # ------------------------------------------------------------- screening
    def _screen(self, cons: ConstraintSet, incumbent, ub):
        """Safe screening (module docstring): returns (candidates, min LB over screened features)."""
        p = self.score.p
        free = np.ones(p, dtype=bool)
        free[cons.fixed_out] = False
        if not self.screen or incumbent is None or not len(self.cuts) or not np.isfinite(ub):
            return np.flatnonzero(free), np.inf
        vals = self.cuts.values(incumbent)
        use = np.argsort(-vals, kind="stable")[: self.screen_cuts]
        lb = np.full(p, -np.inf)
        fixed_free = free.copy()
        fixed_free[cons.fixed_in] = False
        needs = cons._needs()
        for k in use:
            w = self.cuts.W[k]
            base = self.cuts.const[k] - w[cons.fixed_in].sum()
            parts = [_top_sum_excluding(w, idx, need) for idx, need in needs]
            total_full = sum(full for _, full in parts)
            for gi, (idx, need) in enumerate(needs):
                excl_j, _ = _top_sum_excluding(w, idx, need - 1)
                others = total_full - parts[gi][1]
                bound = base - w[idx] - excl_j - others
                bound = np.where(np.isfinite(bound), bound, np.inf)  # j cannot be chosen at all
                lb[idx] = np.maximum(lb[idx], bound)
        if self._relax_lb is not None:  # k-support relaxation hook (see _relax_root)
            lb = np.maximum(lb, self._relax_lb)
        margin = 1e-9 * max(1.0, abs(ub))
        screened = fixed_free & (lb > ub + margin)
        cand = np.flatnonzero(free & ~screened)
        min_lb = float(lb[screened].min()) if screened.any() else np.inf
        return cand, min_lb

    # ------------------------------------------------------------- Gram rows and exact partial bounds
    def _rows(self, F):
        """Rows of X^T X for the features F, shape (|F|, p), cached per feature (O(n p) each)."""
        F = np.asarray(F, dtype=np.int64)
        miss = [int(f) for f in F.tolist() if f not in self._row_cache]
        if miss:
            sc = self.score
            if len(self._row_cache) + len(miss) > self._row_cap:
                self._row_cache.clear()
            R = sc.gram(miss, self._all) if sc.gram_mode == "full" else sc.X[:, miss].T @ sc.X
            for f, row in zip(miss, R):
                self._row_cache[f] = row
        if not F.size:
            return np.zeros((0, self.score.p))
        return np.stack([self._row_cache[int(f)] for f in F.tolist()])

    def _partial(self, F):
        """Quantities of a partial support F used by the node bounds (cached per F).

        Returns
        -------
        cut : (const, W)
            The binary cut built at F (module docstring): ``R(S) >= const - W[S].sum()``
            for every support S, computed from Gram rows in O(p |F|^2).
        ridge : (R0, h)
            ``R0 = min_beta ||y - X_F beta||^2 + lam ||beta||^2`` (no l2 bound) and, for every
            feature b outside F, the exact decrease ``h_b = (x_b^T r_F)^2 / m_b`` of that
            ridge score when b is added, ``m_b = ||x_b||^2 + lam - g_bF^T (G_F + lam I)^{-1} g_bF``
            (Schur complement; design brief direction 3). Since the l2 bound only raises
            the score, ``R(F ∪ {b}) >= R0 - h_b`` exactly, a valid and tight bound.
        """
        key = tuple(np.asarray(F).tolist())
        hit = self._fcuts.get(key)
        if hit is not None:
            return hit
        sc = self.score
        lam, r = sc.lam, sc.r
        if not F.size:
            a = sc.c
            const, W = float(sc.yy), a * a / lam
            m = sc.col_sq + lam
            R0, h = float(sc.yy), a * a / m
        else:
            RF = self._rows(F)
            Gx = RF[:, F]
            G = Gx + lam * np.eye(F.size)
            cF = sc.c[F]
            _, beta = solve_blocks(G[None], cF[None], sc.yy, r)
            mu = float(_multiplier(G[None], cF[None], beta, r)[0])
            beta = beta[0]
            a = sc.c - RF.T @ beta  # X^T alpha, alpha = y - X_F beta
            ay = sc.yy - beta @ cF
            aa = sc.yy - 2.0 * (beta @ cF) + beta @ Gx @ beta
            r2 = r * r if np.isfinite(r) else 0.0
            const = float(2.0 * ay - aa - mu * r2)
            W = a * a / (lam + mu)
            L = np.linalg.cholesky(G)
            b0 = np.linalg.solve(G, cF)
            R0 = float(sc.yy - cF @ b0)
            g = sc.c - RF.T @ b0
            V = np.linalg.solve(L, RF)  # (|F|, p)
            m = sc.col_sq + lam - np.einsum("ij,ij->j", V, V)
            h = g * g / np.maximum(m, lam)  # m >= lam exactly; the max guards rounding
            h[F] = 0.0
        out = ((const, W), (R0, h))
        if len(self._fcuts) >= self._fcut_cap:
            self._fcuts.clear()
            self._fdiag.clear()
        self._fcuts[key] = out
        self._fdiag[key] = np.maximum(m, lam)
        return out

    def _ridge_node(self, F, C, m):
        """Schur/Gershgorin completion bounds at a node (F fixed, m more from C); see
        :func:`completion_bounds`.

        Off-diagonal Schur entries are bounded without forming them:
        ``|M_ik| <= |x_i^T x_k| + sqrt(a_i a_k)`` with ``a_i = g_iF^T (G_FF + lam I)^{-1} g_iF
        = ||x_i||^2 + lam - M_ii >= 0`` (Cauchy-Schwarz in the (G_FF + lam I)^{-1} inner
        product), so ``rowsum_i = E[i, m-2] + (m - 1) sqrt(a_i max_C a)`` with E from
        :func:`gram_row_tops` (computed once per session).

        Returns
        -------
        R0, h, node, per, rho
            ``R0 - node`` is a valid lower bound on R(F ∪ T) for every T ⊂ C, |T| = m, and
            ``R0 - per[j]`` for those containing C[j].
        """
        sc = self.score
        _, (R0, h) = self._partial(F)
        if sc.p > GERSHGORIN_MAX_P:
            return R0, h, np.inf, np.full(C.size, np.inf), np.inf
        Md = self._fdiag[tuple(np.asarray(F).tolist())]
        if self._tops is None:
            self._tops = gram_row_tops(sc, max(1, self.s - 1))
        hC, MC = h[C], Md[C]
        aC = np.maximum(sc.col_sq[C] + sc.lam - MC, 0.0)
        rowsum = self._tops[C, m - 2] + (m - 1) * np.sqrt(aC * aC.max())
        node, per, rho = completion_bounds(hC, MC, rowsum, m)
        return R0, h, node, per, rho

    def _score_with(self, F, C, A, GCC=None):
        """Scores of the supports F ∪ C[A_row] (A: (B, m) indices into C) from cached Gram rows."""
        sc = self.score
        f, m = F.size, A.shape[1]
        s = f + m
        B = A.shape[0]
        RF = self._rows(F)
        idx = C[A]  # (B, m)
        G = np.empty((B, s, s))
        G[:, :f, :f] = RF[:, F]
        cross = RF[:, idx]  # (f, B, m)
        G[:, :f, f:] = cross.transpose(1, 0, 2)
        G[:, f:, :f] = cross.transpose(1, 2, 0)
        if m == 1:
            G[:, f, f] = sc.col_sq[idx[:, 0]]
        else:
            G[:, f:, f:] = GCC[A[:, :, None], A[:, None, :]]
        G[:, np.arange(s), np.arange(s)] += sc.lam
        c = np.concatenate([np.broadcast_to(sc.c[F], (B, f)), sc.c[idx]], axis=1)
        vals, _ = solve_blocks(G, c, sc.yy, sc.r)
        S = np.concatenate([np.broadcast_to(F, (B, f)), idx], axis=1)
        S.sort(axis=1)
        return S, vals

    # ------------------------------------------------------------- branch and bound
    def _branch_and_bound(self, cons, S_inc, ub, deadline, gap_tol, leaf_limit):
        """Exact best-first branch and bound over the subproblems of :func:`roots`.

        A node (F, C, m) stands for the supports F ∪ A, A ⊂ C, |A| = m. Bounds (all valid
        lower bounds on R, so pruning never loses the optimum):

        * m = 1: ``max(R0(F) - h_b, cut at F)`` per candidate b (:meth:`_partial`), exact for
          the ridge-only score; candidates are scored with the shared closed form in
          increasing order of that bound until the bound reaches the incumbent.
        * m >= 2: ``const - W[F].sum() - (sum of the m largest W over C)`` for the cut built
          at F and the incumbent's cut when it contains F. (Sums of single-feature ridge
          decreases are *not* valid for m >= 2: a pair can explain more than its parts.)
          Features whose bound with them forced in exceeds the incumbent are dropped
          (safe screening per node). With ``gershgorin`` on, also
          ``R0(F) - (sum of the m largest h over C) / (1 - rho)`` (:meth:`_ridge_node`,
          :func:`completion_bounds`: Schur complement + Gershgorin, about 2.3x tighter than
          the cut weights, whose denominator is lam instead of ||x_b||^2 + lam), with per-
          feature screening repeated while it removes candidates; children are then taken
          in decreasing h when that leaves fewer open. A node with at most ``leaf_limit`` completions is
          scored exhaustively; otherwise it branches on its candidates sorted by weight:
          child i takes the i-th candidate and completes among the later ones (a partition).

        Returns
        -------
        S, ub, lb, status, nodes
            Best support (or None), its score, a valid lower bound on the constrained
            optimum, "optimal" / "infeasible" / "time_limit", and nodes processed.
        """
        target = _BestTarget(S_inc, ub, gap_tol, cons.exclude)
        rest, status, nodes = self._bnb_search(cons, target, deadline, leaf_limit)
        if status == "time_limit":
            return target.S, target.ub, min(rest, target.ub), "time_limit", nodes
        if target.S is None:
            return None, np.inf, np.inf, "infeasible", nodes
        return target.S, target.ub, min(rest, target.ub), "optimal", nodes

    def _bnb_search(self, cons, target, deadline, leaf_limit):
        """The best-first traversal behind :meth:`_branch_and_bound` and :meth:`supports_below`.

        ``target`` decides what is kept and when a node is closed: a node (or candidate) with
        a valid lower bound ``lb`` stays open iff ``lb < target.bar()``; every scored support
        goes to ``target.offer``. For the optimum the bar is the incumbent's score minus the
        gap tolerance (:class:`_BestTarget`); for a threshold enumeration it is the threshold
        plus a rounding margin (:class:`_BelowTarget`). The bounds are those documented in
        :meth:`_branch_and_bound`.

        Returns
        -------
        rest : float
            A valid lower bound on the score of every feasible support never offered to the
            target (the smallest bound of anything closed or left open).
        status : {"done", "time_limit", "stopped"}
            "stopped" when ``target.stop()`` asked to end the search (e.g. ``max_count``).
        nodes : int
        """
        import heapq
        import itertools

        from ..supports import iter_supports

        tick = itertools.count()
        heap = [(-np.inf, next(tick), F, C, 0, m) for F, C, m in roots(cons)]
        heapq.heapify(heap)
        pruned = np.inf  # smallest bound of anything discarded by bound
        nodes = 0
        bar = target.bar

        def open_(lb):  # a node with bound lb may still hold a support the target wants
            return lb < bar()

        while heap:
            top = heap[0][0]
            if not open_(top):
                break
            if time.perf_counter() > deadline:
                return min(top, pruned), "time_limit", nodes
            if target.stop():
                return min(top, pruned), "stopped", nodes
            lb_parent, _, F, Cfull, start, m = heapq.heappop(heap)
            C = Cfull[start:]
            nodes += 1
            if m == 0:
                target.offer(F[None], self.score(F[None]))
                continue
            (const, W), (R0, h) = self._partial(F)
            cuts = [(const, W)]
            S_inc = target.incumbent()
            if S_inc is not None and len(self.cuts):
                ki = self.cuts.index.get(tuple(S_inc.tolist()))
                if ki is not None and set(F.tolist()) <= set(self.cuts.keys[ki]):
                    cuts.append((float(self.cuts.const[ki]), self.cuts.W[ki]))
            if m == 1:
                lbb = R0 - h[C]
                for cst, Wk in cuts:
                    lbb = np.maximum(lbb, cst - Wk[F].sum() - Wk[C])
                order = np.argsort(lbb, kind="stable")
                for a in range(0, order.size, 4096):
                    chunk = order[a:a + 4096]
                    if not open_(lbb[chunk[0]]):
                        pruned = min(pruned, float(lbb[chunk[0]]))
                        break
                    S, vals = self._score_with(F, C, chunk[:, None])
                    target.offer(S, vals)
                continue
            if math.comb(C.size, m) <= leaf_limit:
                GCC = self._gcc(C)
                for chunk in iter_supports(C.size, m, chunk_size=max(1, 131_072 // m)):
                    S, vals = self._score_with(F, C, chunk, GCC)
                    target.offer(S, vals)
                continue
            lb, best_cut = lb_parent, 0
            best_val = -np.inf
            for j, (cst, Wk) in enumerate(cuts):
                w = Wk[C]
                val = cst - Wk[F].sum() - np.partition(w, w.size - m)[w.size - m:].sum()
                if val > best_val:
                    best_cut, best_val = j, val
            lb = max(lb, best_val)
            if not open_(lb):
                pruned = min(pruned, lb)
                continue
            ridge = None
            if self.gershgorin:
                # Schur/Gershgorin bound (completion_bounds), screening repeated while it
                # removes candidates: the radius rho is a maximum over the survivors.
                for _ in range(4):
                    R0, h, node, per, rho = self._ridge_node(F, C, m)
                    if not np.isfinite(node):
                        break
                    ridge = (R0, h, rho)
                    lb = max(lb, R0 - node)
                    if not open_(lb):
                        break
                    if not np.isfinite(bar()):
                        break
                    drop = R0 - per >= bar()
                    if not drop.any():
                        break
                    pruned = min(pruned, float((R0 - per[drop]).min()))
                    C = C[~drop]
                    if C.size < m:
                        break
                if not open_(lb):
                    pruned = min(pruned, lb)
                    continue
                if C.size < m:
                    continue
            if self._relax_budget > 0 and nodes > self._relax_delay and m >= 2 and math.comb(C.size, m) > leaf_limit:
                # k-support relaxation hook (see _relax_node): node bound and per-feature screening.
                self._relax_budget -= 1
                rb, per = self._relax_node(F, C, m)
                lb = max(lb, rb)
                if not open_(lb):
                    pruned = min(pruned, lb)
                    continue
                drop = per[C] >= bar()
                if drop.any():
                    pruned = min(pruned, float(per[C][drop].min()))
                    C = C[~drop]
                if C.size < m:
                    continue
            if np.isfinite(bar()):
                # Safe screening inside the node: drop b when forcing it in cannot reach the bar.
                lbb = np.full(C.size, -np.inf)
                for cst, Wk in cuts:
                    ex, _ = _top_sum_excluding(Wk, C, m - 1)
                    lbb = np.maximum(lbb, cst - Wk[F].sum() - Wk[C] - ex)
                drop = lbb >= bar()
                if drop.any():
                    pruned = min(pruned, float(lbb[drop].min()))
                    C = C[~drop]
                if C.size < m:
                    continue
                if math.comb(C.size, m) <= leaf_limit:
                    heapq.heappush(heap, (lb, next(tick), F, C, 0, m))
                    continue
            cst, Wk = cuts[best_cut]
            Cs = C[np.argsort(-Wk[C], kind="stable")]
            child = cst - Wk[F].sum() - _topm_prefix(Wk[Cs], m)  # child i: Cs[i] in, rest from Cs[i+1:]
            if ridge is not None:
                R0, h, rho = ridge
                if rho < 1.0:
                    # Children in decreasing h: child i's bound R0 - (h_i + best m-1 of the later
                    # ones) / (1 - rho) is nondecreasing in i (rho of the parent's C covers them).
                    Cr = C[np.argsort(-h[C], kind="stable")]
                    child_r = R0 - _topm_prefix(h[Cr], m) / (1.0 - rho) * (1 + 1e-12)
                    b_ = bar()
                    if not np.isfinite(b_) or (np.maximum(child_r, lb) < b_).sum() < (np.maximum(child, lb) < b_).sum():
                        Cs, child = Cr, child_r  # the order with fewer open children
            for i in range(child.size):
                b = max(lb, float(child[i]))
                if not open_(b):
                    pruned = min(pruned, b)
                    break  # child bounds are nondecreasing in i
                heapq.heappush(heap, (b, next(tick), np.sort(np.append(F, Cs[i])), Cs, i + 1, m - 1))
        return min(heap[0][0] if heap else np.inf, pruned), "done", nodes

    def _gcc(self, C):
        sc = self.score
        return sc.gram(C, C) if sc.gram_mode == "full" else sc.X[:, C].T @ sc.X[:, C]

    # ------------------------------------------------------------- the oracle
    def solve(self, *, exclude=(), overlap=None, fixed_in=(), fixed_out=(), time_limit=None, gap_tol=1e-6):
        t0 = time.perf_counter()
        if time_limit is None:
            time_limit = self.default_time_limit
        deadline = t0 + (time_limit if time_limit is not None else math.inf)
        self.calls += 1
        cons = ConstraintSet.build(self.score.p, self.s, exclude, overlap, fixed_in, fixed_out)
        self._relax_lb = None

        def result(S, ub, lb, status, it, msg=""):
            obj = float(self.score(S)[0]) if S is not None else np.inf
            if S is not None and status == "optimal" and not self._closed(obj, lb, gap_tol):
                status, msg = "time_limit", msg or "recomputed objective outside the gap tolerance"
            return OracleResult(None if S is None else np.asarray(S, dtype=np.int64), obj,
                                float(min(lb, obj)), status, it, time.perf_counter() - t0, msg)

        if cons.infeasible:
            return result(None, np.inf, np.inf, "infeasible", 0, cons.infeasible)
        count = count_feasible(cons)
        if count == 0:
            return result(None, np.inf, np.inf, "infeasible", 0, "no support satisfies the constraints")
        if count <= self.enum_limit or cons.group is not None:
            # Few feasible supports: score them all (certified by construction). Overlap
            # calls: branch and bound over the kept subsets of S0 (see _branch_and_bound),
            # whose per-subproblem cuts are far tighter than cuts built around S0.
            S, ub = None, np.inf
            if count > self.enum_limit:
                S, ub, _ = self._local_search(self._start(cons), cons, deadline)
            leaf = self.enum_limit if count <= self.enum_limit else self.leaf_limit
            self._relax_budget = self.relax_overlap_nodes if count > self.enum_limit else 0  # relaxation hook
            self._relax_delay = self.relax_overlap_after
            S, ub, lb, status, nodes = self._branch_and_bound(cons, S, ub, deadline, gap_tol, leaf)
            self._relax_budget = 0
            if status == "infeasible":
                return result(None, np.inf, np.inf, "infeasible", nodes, "no support satisfies the constraints")
            if count > self.enum_limit:
                self._add_cuts(S[None])
            how = "enumerated" if count <= self.enum_limit else f"branch and bound, {nodes} nodes"
            return result(S, ub, lb, status, nodes, how if status == "optimal" else "time limit reached")

        S, ub, neigh = self._local_search(self._start(cons), cons, deadline)
        if S is not None:
            self._add_cuts(S[None])
            if neigh is not None and len(neigh):
                self._add_cuts(neigh)
        it = 0
        lb = -np.inf
        seen = set()
        cand, min_lb = self._screen(cons, S, ub)
        active = set(self._seed_cuts(S))  # cut keys (pool indices shift when the pool is capped)
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return result(S, ub, max(lb, 0.0), "time_limit", it, "time limit reached")
            if (S is not None and self._relax_lb is None  # k-support relaxation hook (see _relax_root)
                    and (it == self.relax_after or cand.size > self.relax_cand)):
                key, rb = self._relax_root(cons, S)
                if key is not None:
                    active.add(key)
                    lb = max(lb, rb)
                    cand, min_lb = self._screen(cons, S, ub)
                    if self._closed(ub, lb, gap_tol):
                        return result(S, ub, lb, "optimal", it, "k-support relaxation bound")
                    if cons.group is None and cand.size <= self.relax_bnb:
                        # Few survivors: branch and bound over them with relaxation node bounds.
                        sub = ConstraintSet.build(self.score.p, self.s, cons.exclude, None, cons.fixed_in,
                                                  np.setdiff1d(self._all, cand))
                        self._relax_budget = self.relax_nodes
                        self._relax_delay = 0
                        S2, ub2, lb2, status, nodes = self._branch_and_bound(sub, S, ub, deadline, gap_tol,
                                                                             self.leaf_limit)
                        self._relax_budget = 0
                        lb2 = min(lb2, min_lb)
                        return result(S2, ub2, lb2, status if status != "infeasible" else "error", it + nodes,
                                      f"k-support branch and bound over {cand.size} screened features, {nodes} nodes"
                                      if status == "optimal" else "time limit reached")
            rows = [self.cuts.index[k] for k in active if k in self.cuts.index]
            master = build_master(cand, self.cuts.const[rows], self.cuts.W[rows], cons)
            res = self.solve_master(master, None if not math.isfinite(remaining) else remaining, gap_tol)
            it += 1
            if res.status == "infeasible":
                if S is None:  # nothing was screened: the master covered the full problem
                    return result(None, np.inf, np.inf, "infeasible", it, "no support satisfies the constraints")
                return result(S, ub, max(lb, 0.0), "error", it, "master infeasible although a support is known")
            if res.status == "error":
                return result(S, ub, max(lb, 0.0), "error", it, res.message)
            lb = max(lb, min(res.bound, min_lb))
            if S is not None and self._closed(ub, lb, gap_tol):
                return result(S, ub, lb, "optimal", it)
            if res.z is None:
                return result(S, ub, max(lb, 0.0), "time_limit", it, res.message or "master stopped")
            Z = np.sort(cand[np.flatnonzero(res.z > 0.5)])
            key = tuple(Z.tolist())
            if key in seen:
                return result(S, ub, max(lb, 0.0), "error", it,
                              "outer approximation repeated a point (numerical trouble in the master)")
            seen.add(key)
            new = [key]
            self._add_cuts(Z[None])
            val = self.pool[key]
            if val < ub:
                S, ub = Z, val
                S2, ub2, neigh = self._local_search(S, cons, deadline)
                if S2 is not None and ub2 < ub:
                    S, ub = S2, ub2
                    self._add_cuts(S[None])
                    new.append(tuple(S.tolist()))
                if neigh is not None and len(neigh):
                    self._add_cuts(neigh)
                    new += [tuple(r) for r in neigh.tolist()]
                cand, min_lb = self._screen(cons, S, ub)
                if self._closed(ub, lb, gap_tol):
                    return result(S, ub, lb, "optimal", it)
            active |= set(new) | set(self._seed_cuts(S))

    # ------------------------------------------------------------- threshold enumeration
    def supports_below(self, threshold, *, overlap=None, exclude=(), fixed_in=(), fixed_out=(), time_limit=None,
                       max_count=2_000_000, rank=None, known_scores=()):
        """Every feasible support with score <= ``threshold``, by threshold branch and bound.

        The interface and result are those of :meth:`dpbench.base.OracleSession.supports_below`.
        The search is the best-first branch and bound of :meth:`_branch_and_bound` over the
        same subproblems (:func:`roots`) and the same valid node bounds, with the incumbent
        replaced by the threshold: a node is closed when its lower bound exceeds
        ``tau (1 + THRESHOLD_MARGIN)``, and every support reaching a leaf is scored exactly;
        with ``rank``, tau falls to the rank-th smallest of ``known_scores`` and the scores
        found so far as the search proceeds. The supports kept are rescored with the shared
        score before the final comparison with tau. Complete (``certified``) unless the
        time limit or ``max_count`` stops it; ``lower_bound`` is then the smallest bound of
        the nodes left open, still a valid bound on everything not returned.

        Raises
        ------
        UserInputError
            For a NaN threshold or invalid constraints.
        """
        from ..base import ThresholdResult
        from .threshold import _order_supports, rank_threshold

        t0 = time.perf_counter()
        if threshold != threshold:
            raise UserInputError("supports_below: the threshold is NaN; pass a number (inf for no threshold)")
        if time_limit is None:
            time_limit = self.default_time_limit
        deadline = t0 + (time_limit if time_limit is not None else math.inf)
        self.calls += 1
        cons = ConstraintSet.build(self.score.p, self.s, exclude, overlap, fixed_in, fixed_out)
        known = np.asarray(known_scores, dtype=np.float64).ravel()
        empty = np.zeros((0, self.s), dtype=np.int64)
        count = 0 if cons.infeasible else count_feasible(cons)
        if count == 0:
            return ThresholdResult(empty, np.zeros(0), True, np.inf, rank_threshold(threshold, rank, known),
                                   "complete", 0, 0, time.perf_counter() - t0, "no support satisfies the constraints")
        target = _BelowTarget(float(threshold), rank, known, cons.exclude, int(max_count), self.s)
        leaf = self.enum_limit if count <= self.enum_limit else self.leaf_limit
        self._relax_budget = self.relax_overlap_nodes if count > self.enum_limit else 0  # relaxation hook
        self._relax_delay = self.relax_overlap_after
        rest, status, nodes = self._bnb_search(cons, target, deadline, leaf)
        self._relax_budget = 0
        S, v = target.result()
        sc = (np.concatenate([self.score(S[a:a + _CHUNK]) for a in range(0, len(S), _CHUNK)]) if len(S)
              else np.zeros(0))
        tau = rank_threshold(float(threshold), rank, known, sc)
        keep = sc <= tau
        rest = min(rest, target.above, float(sc[~keep].min()) if (~keep).any() else np.inf)
        S, sc = S[keep], sc[keep]
        order = _order_supports(S, sc)
        status = {"done": "complete", "stopped": "max_count"}.get(status, status)
        certified = status == "complete" and (rest > tau or rest == np.inf)  # inf: nothing left unreturned
        msg = {"complete": f"threshold branch and bound, {nodes} nodes",
               "time_limit": "time limit reached", "max_count": f"more than max_count = {max_count} supports"}.get(
                   status, status)
        if status == "complete" and not certified:
            status, msg = "error", "rest bound not above the threshold (numerical trouble)"
        return ThresholdResult(S[order], sc[order], certified, float(rest), float(tau), status, 0, nodes,
                               time.perf_counter() - t0, msg)

    @staticmethod
    def _closed(ub, lb, gap_tol):
        """Certified gap: (ub - lb) <= gap_tol |ub|, plus rounding slack of the float64 cuts."""
        return ub - lb <= gap_tol * abs(ub) + 1e-12 * max(1.0, abs(ub))

    def _small_feasible_set(self, cons: ConstraintSet):
        """All supports of an overlap-constrained call when there are at most ``enum_limit`` (else None).

        Only for large p (>= 500); small problems go through the master, which is cheap there.
        """
        import itertools

        from ..supports import iter_supports, n_supports

        if cons.group is None or self.score.p < 500 or self.enum_limit <= 0:
            return None
        inside = np.flatnonzero(cons.group == 1)
        outside = np.setdiff1d(np.flatnonzero(cons.group == 0), cons.fixed_out)
        k, t = cons.k, self.s - cons.k
        if t > outside.size or k > inside.size:
            return None
        count = n_supports(inside.size, k) * n_supports(outside.size, t)
        if count > self.enum_limit:
            return None
        ins = np.array(list(itertools.combinations(inside.tolist(), k)), dtype=np.int64).reshape(-1, k)
        outs = (np.concatenate([outside[c] for c in iter_supports(outside.size, t)]) if t > 0
                else np.zeros((1, 0), dtype=np.int64))
        S = np.concatenate([np.repeat(ins, len(outs), axis=0), np.tile(outs, (len(ins), 1))], axis=1)
        return np.sort(S, axis=1)

    def _seed_cuts(self, S):
        """Pool cuts strongest at S (plus S's own cut): the master's initial rows."""
        if not len(self.cuts):
            return []
        if S is None:
            return self.cuts.keys[-self.master_cuts:]
        vals = self.cuts.values(S)
        return [self.cuts.keys[i] for i in np.argsort(-vals, kind="stable")[: self.master_cuts]]

    # ------------------------------------------------------------- k-support relaxation hook
    # Integration of dpbench/oracle/relaxation.py (issue 15). Once per OA call -- before the
    # first master when the cut screening leaves more than ``relax_cand`` candidates, else
    # after ``relax_after`` master solves without certification -- the loop adds the k-support
    # dual bound (valid for every feasible support whatever the accuracy of its dual point),
    # its per-feature bounds to the safe screening (max with the cut bounds: a max of valid
    # bounds is valid) and its dual point as one more master cut. When at most ``relax_bnb``
    # features survive, the call finishes by branch and bound over them with node relaxations
    # (``_relax_node``, at most ``relax_nodes`` per call). Overlap calls and threshold
    # enumerations with more than ``enum_limit`` feasible supports use node relaxations too,
    # after ``relax_overlap_after`` nodes (easy calls finish before; at most
    # ``relax_overlap_nodes``). All limits are counts: deterministic.
    def _relax_root(self, cons, S):
        """Root k-support dual bound of one call; returns (cut key or None, bound).

        Sets ``self._relax_lb`` (p,): for each feature a valid lower bound on R over the
        feasible supports that contain it (inf where none does).
        """
        from .relaxation import dual_cut, dual_norm, groups_of, relaxation_bound

        sc = self.score
        fixed, groups = groups_of(cons)
        bound, alpha, per = relaxation_bound(sc, fixed, groups, start=S, per_feature=True)
        self._relax_lb = per
        a = sc.X.T @ alpha
        const, W = dual_cut(a, float(alpha @ sc.y), float(alpha @ alpha), sc.lam, sc.r,
                            float(dual_norm(a[None], fixed, groups)[0]))
        key = ("relax", self.calls)
        self.cuts.add([key], np.array([const]), W[None])
        return (key if key in self.cuts.index else None), bound

    def _relax_node(self, F, C, m):
        """k-support dual bound of a branch-and-bound node (F fixed in, m more from C).

        Warm-started from the last dual points (any alpha is valid, so the pool only affects
        strength). Returns (bound, per (p,)): ``per[j]`` bounds the node's supports containing j.
        """
        from .relaxation import relaxation_bound

        b, alpha, per = relaxation_bound(self.score, F, [(C, m)], alphas=self._relax_alphas[-3:], per_feature=True,
                                         width=20, rounds=3, iters=30)
        self._relax_alphas = (self._relax_alphas + [alpha])[-3:]
        return b, per

