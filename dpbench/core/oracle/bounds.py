"""Node bounds and safe screening, with the one Gram-row cache they share.

Valid lower bounds on R(S) over the supports below a branch-and-bound node (F fixed in, m
more from C): cuts built at F, the exact ridge decrease of one more feature, and the
Schur-complement/Gershgorin bound of :func:`completion_bounds`; safe screening drops the
features whose bound with them forced in exceeds the incumbent. :class:`NodeBounds` is the
part of :class:`~dpbench.core.oracle.session.OASession` that owns the Gram rows of X^T X.
"""

from __future__ import annotations

import numpy as np

from dpbench.core.score import RidgeScore, solve_blocks
from dpbench.core.oracle.constraints import ConstraintSet
from dpbench.core.oracle.cuts import _multiplier

def _topm_prefix(w_sorted_desc, m):
    """s_i = sum of w[i : i + m] for sorted-descending w (the best m-sum from position i on)."""
    cs = np.concatenate([[0.0], np.cumsum(w_sorted_desc)])
    L = w_sorted_desc.size
    i = np.arange(max(L - m + 1, 0))
    return cs[i + m] - cs[i]


#: Largest p for which :meth:`OASession._ridge_node` computes :func:`gram_row_tops` (O(n p^2)
#: flops, about 3 s at n = 800, p = 10 000 on 2 cores, and not interruptible by a time limit);
#: above it branch and bound uses the cut bounds only.
GERSHGORIN_MAX_P = 40_000


def gram_row_tops(score: RidgeScore, q: int, block_bytes: float = 32 * 2**20, universe=None) -> np.ndarray:
    """Upper bounds on the sums of the largest off-diagonal Gram entries of every row.

    Parameters
    ----------
    score : RidgeScore
    q : int
        How many largest entries (q >= 1; in use q = s - 1).
    block_bytes : float
        Memory of one tile of the Gram matrix (no p x p matrix is formed unless the score
        caches it anyway).
    universe : int array or None
        Restrict rows *and* columns to these features (None: all p). The bounds then hold
        for every support inside the universe, which is all a branch and bound over
        candidates screened to that universe needs.

    Returns
    -------
    ndarray of shape (p, q)
        ``E[i, j] >= sum of the (j + 1) largest |x_i^T x_k| over k != i`` (k in the universe),
        for i in the universe; ``inf`` for rows outside it.

    Notes
    -----
    When the score caches X^T X (``gram_mode == "full"``) the float64 entries are used;
    otherwise the Gram tiles are computed in float32 (half the cost of float64 at
    p = 10 000) and each selected entry is raised by the rigorous rounding bound
    ``1.1 (n + 3) u ||x_i|| max_k ||x_k||``, u = 2^-24 (float32 conversion of X plus any
    summation order of an n-term dot product, Higham, *Accuracy and Stability*, eq. 3.5;
    u = 2^-53 for the cached float64 Gram), so the result is an upper bound whatever the
    BLAS does. Only the tiles on and above the diagonal are formed (the Gram matrix is
    symmetric: a tile's row tops serve its rows, its column tops the rows of the mirrored
    tile), so O(n u^2 / 2) flops for a universe of u features, once per session.
    """
    X = score.X
    n, p = X.shape
    U = np.arange(p) if universe is None else np.unique(np.asarray(universe, dtype=np.int64))
    u = U.size
    E = np.full((p, max(1, q)), np.inf)
    q = int(max(1, q))
    if u < 2:
        E[U] = 0.0
        return E
    norms = np.sqrt(score.col_sq)
    full = score.gram_mode == "full"
    eps = (n + 3) * 2.0 ** (-53 if full else -24) * 1.1
    XU = None if full else np.asfortranarray(X[:, U].astype(np.float32))
    t = max(q + 1, int(np.sqrt(block_bytes / 4)))  # tile side
    qq = min(q, u - 1)
    best = np.zeros((u, qq), dtype=np.float64)  # running q largest |G_ik| of each row (unsorted)

    def merge(rows, cand):  # cand (len(rows), k): keep the qq largest of best[rows] and cand
        both = np.concatenate([best[rows], cand], axis=1)
        w = both.shape[1]
        best[rows] = np.partition(both, w - qq, axis=1)[:, w - qq:]

    def tops(B, axis):  # the (at most qq) largest entries along axis, as rows
        return _row_tops(B if axis == 1 else np.ascontiguousarray(B.T), qq)

    for a in range(0, u, t):
        I = np.arange(a, min(u, a + t))
        for b in range(a, u, t):
            K = np.arange(b, min(u, b + t))
            B = score.gram(U[I], U[K]) if full else XU[:, I].T @ XU[:, K]
            np.abs(B, out=B)
            if a == b:
                B[np.arange(I.size), np.arange(I.size)] = 0.0  # k != i (0 never exceeds a true |entry|)
            merge(I, tops(B, 1))
            if a != b:
                merge(K, tops(B, 0))
    top = -np.sort(-best, axis=1)
    if qq < q:  # fewer other features than q: the missing terms are 0
        top = np.concatenate([top, np.zeros((u, q - qq))], axis=1)
    # The sum of the j largest of (|G^_ik| + err_ik) is at most the sum of the j largest
    # |G^_ik| plus j max_k err_ik: the rounding bound is added once per term.
    err = eps * norms[U] * norms[U].max()
    E[U] = np.cumsum(top, axis=1) + err[:, None] * np.arange(1, q + 1)[None, :]
    return E


def _row_tops(B, k, g=32):
    """The k largest entries of each row of B (r, L), float64 (r, min(k, L)), in any order.

    Exact, and about 5x cheaper than a row partition: the row is cut into g groups (entries
    j, j + w, j + 2w, ... with w = L // g, so that the group maxima are elementwise maxima of
    g contiguous slices); a group holding one of the k largest entries has a maximum >= the
    k-th largest, so those entries lie in the k groups with the largest maxima (ties give
    equal values), and only those k g entries (plus the L mod g tail) are partitioned.
    """
    r, L = B.shape
    k = min(k, L)
    if L < 4 * g * k:
        return np.partition(B, L - k, axis=1)[:, L - k:].astype(np.float64)
    w = L // g
    V = B[:, : g * w].reshape(r, g, w)
    gmax = V.max(axis=1)
    sel = np.argpartition(gmax, w - k, axis=1)[:, w - k:]
    cand = V[np.arange(r)[:, None, None], np.arange(g)[None, :, None], sel[:, None, :]].reshape(r, g * k)
    if g * w < L:
        cand = np.concatenate([cand, B[:, g * w:]], axis=1)
    return np.partition(cand, cand.shape[1] - k, axis=1)[:, cand.shape[1] - k:].astype(np.float64)


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


class NodeBounds:
    """Gram rows (cached), partial-support quantities, node bounds and safe screening.

    A mixin of :class:`~dpbench.core.oracle.session.OASession`: it uses ``score``, ``s``,
    ``cuts``, ``screen``, ``screen_cuts`` and the caches the session creates
    (``_row_cache``/``_row_cap``, ``_fcuts``/``_fdiag``/``_fcut_cap``, ``_tops``/``_tops_in``/``_tops_cache``/
    ``_tops_universe``, ``_all``).
    """

    #: Partial-support quantities from the compiled kernel (:mod:`~dpbench.core.oracle.node_kernels`);
    #: False: the numpy reference :meth:`_partial_numpy` (tests compare the two).
    partial_compiled = True

    def _gram_rows(self, S):
        """X_S^T X of shape (s, p), O(n p s), no p x p matrix in columns mode."""
        sc = self.score
        if sc.gram_mode == "full":
            return sc.gram(S, self._all)
        return sc.X[:, S].T @ sc.X

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
        if self._relax_lb is not None:  # k-support relaxation hook (see OASession._relax_root)
            lb = np.maximum(lb, self._relax_lb)
        margin = 1e-9 * max(1.0, abs(ub))
        screened = fixed_free & (lb > ub + margin)
        cand = np.flatnonzero(free & ~screened)
        min_lb = float(lb[screened].min()) if screened.any() else np.inf
        return cand, min_lb

    # ------------------------------------------------------------- Gram rows and exact partial bounds
    def _rows(self, F, cols=None):
        """Rows of X^T X for the features F, shape (|F|, p), cached per feature (O(n p) each).

        With ``cols`` (an int array of any shape), only the entries ``[:, cols]``, shape
        (|F|,) + cols.shape: a leaf or a block of pairs reads a few hundred columns of rows that
        span all p, and stacking the whole rows first cost gravier's topr preparation 11 of its
        417 profiled seconds (740 000 calls)."""
        F = [int(f) for f in np.asarray(F, dtype=np.int64).tolist()]
        if not F:
            return np.zeros((0, self.score.p) if cols is None else (0,) + np.shape(cols))
        # This call's rows are collected first: evicting the cache must not lose hits (issue 15's KeyError).
        rows = {f: self._row_cache[f] for f in F if f in self._row_cache}
        miss = list(dict.fromkeys(f for f in F if f not in rows))
        if miss:
            sc = self.score
            R = sc.gram(miss, self._all) if sc.gram_mode == "full" else sc.X[:, miss].T @ sc.X
            rows.update(zip(miss, R))
            if len(self._row_cache) + len(miss) > self._row_cap:
                self._row_cache.clear()
                self._row_cache.update(rows)  # keep this call's rows: the next node usually shares them
            else:
                self._row_cache.update(zip(miss, R))
        out = np.empty((len(F), self.score.p) if cols is None else (len(F),) + np.shape(cols))
        for i, f in enumerate(F):  # np.stack's checks cost more than these copies (level 5: 8 of 292 s)
            out[i] = rows[f] if cols is None else rows[f][cols]
        return out

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
        out, m = None, None
        if F.size and self.partial_compiled:
            from dpbench.core.oracle.node_kernels import partial_quantities

            sc = self.score
            ok, const, W, R0, h, m = partial_quantities(self._rows(F), np.asarray(F, dtype=np.int64), sc.c,
                                                        float(sc.yy), sc.col_sq, float(sc.lam), float(sc.r))
            if ok:
                out = ((float(const), W), (float(R0), h))
        if out is None:
            out, m = self._partial_numpy(F)
        if len(self._fcuts) >= self._fcut_cap:
            self._fcuts.clear()
            self._fdiag.clear()
        self._fcuts[key] = out
        self._fdiag[key] = m
        return out

    def _partial_numpy(self, F):
        """The numpy reference of :meth:`_partial` (uncached): (cut, ridge) and ``max(m, lam)``."""
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
        return ((const, W), (R0, h)), np.maximum(m, lam)

    def _ridge_node(self, F, C, m):
        """Schur/Gershgorin completion bounds at a node (F fixed, m more from C); see
        :func:`completion_bounds`.

        Off-diagonal Schur entries are bounded without forming them:
        ``|M_ik| <= |x_i^T x_k| + sqrt(a_i a_k)`` with ``a_i = g_iF^T (G_FF + lam I)^{-1} g_iF
        = ||x_i||^2 + lam - M_ii >= 0`` (Cauchy-Schwarz in the (G_FF + lam I)^{-1} inner
        product), so ``rowsum_i = E[i, m-2] + (m - 1) sqrt(a_i max_C a)`` with E from
        :func:`gram_row_tops` (of the search's universe, :meth:`_ensure_tops`).

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
        if not self._tops_cover(C):
            U = self._tops_universe  # the running search's candidates
            self._ensure_tops(C if U is None else U)
        hC, MC = h[C], Md[C]
        aC = np.maximum(sc.col_sq[C] + sc.lam - MC, 0.0)
        rowsum = self._tops[C, m - 2] + (m - 1) * np.sqrt(aC * aC.max())
        node, per, rho = completion_bounds(hC, MC, rowsum, m)
        return R0, h, node, per, rho

    def _gershgorin_floor(self, F, C, m, rows=64):
        """A lower bound on the radius rho that :meth:`_ridge_node` ``(F, C, m)`` would use.

        From the exact Gram rows of the ``rows`` candidates with the largest h: their sums of
        the m - 1 largest off-diagonal ``|x_i^T x_k|``, k in C, are at most the row sums the
        node bound uses (those add rounding and Schur terms >= 0). O(n rows |C|): a cheap test
        whether the bound can work at all (rho >= 1 makes it infinite) before
        :func:`gram_row_tops` pays O(n |C|^2).
        """
        if m < 2 or C.size < m:
            return 0.0
        sc = self.score
        _, (_, h) = self._partial(F)
        Md = self._fdiag[tuple(np.asarray(F).tolist())]
        top = C[np.argsort(-h[C], kind="stable")[:rows]]
        G = np.abs(sc.X[:, top].T @ sc.X)[:, C]  # no copy of X[:, C]
        G[C[None, :] == top[:, None]] = 0.0  # k != i
        sums = _row_tops(G, m - 1).sum(axis=1)
        return float(np.max(sums / np.sqrt(Md[top] * Md[C].min())))

    #: A search universe of at most this fraction of p gets the tops over itself (O(n |U|^2), at
    #: most 1/16 of the full computation); a larger one the tops over all p (once per session).
    TOPS_OWN_UNIVERSE = 0.25
    #: Restricted universes whose tops a session keeps.
    TOPS_CACHED = 8

    def _ensure_tops(self, U):
        """Make ``self._tops`` the :func:`gram_row_tops` (q = s - 1) of the search universe U.

        They are a function of the data and U alone, whatever ran before in the session or
        in another process (so a root's bounds are the same in a forked child, a cluster task
        or the caller): over U itself when ``|U| <= TOPS_OWN_UNIVERSE p``, else over all p.
        Each universe's tops are computed once (the full ones for the session's life, the
        last :attr:`TOPS_CACHED` restricted ones kept). A search calls this with the union of
        its roots' candidates; its nodes' candidate sets lie inside it.
        """
        sc = self.score
        U = np.unique(np.asarray(U, dtype=np.int64))
        key = "all" if U.size > self.TOPS_OWN_UNIVERSE * sc.p else U.tobytes()
        cache = self._tops_cache
        if key not in cache:
            q = max(1, self.s - 1)
            cache[key] = gram_row_tops(sc, q) if key == "all" else gram_row_tops(sc, q, universe=U)
            restricted = [k for k in cache if k != "all"]
            for old in restricted[:-self.TOPS_CACHED]:
                del cache[old]
        self._tops = cache[key]
        if key == "all":
            self._tops_in = None
        else:
            self._tops_in = np.zeros(sc.p, dtype=bool)
            self._tops_in[U] = True

    def _tops_cover(self, C) -> bool:
        """Whether ``self._tops`` holds for every support inside C."""
        return self._tops is not None and (self._tops_in is None or bool(self._tops_in[C].all()))

    def data_caches(self) -> dict:
        """The tops over all p when computed (:meth:`OracleSession.data_caches`)."""
        full = self._tops_cache.get("all")
        return {} if full is None else {"gram_row_tops": full}

    def adopt_data_caches(self, caches: dict) -> None:
        """Install tops over all p computed by a copy of this session (:meth:`data_caches`)."""
        full = caches.get("gram_row_tops")
        if full is not None and "all" not in self._tops_cache:
            self._tops_cache["all"] = full

    def _score_with(self, F, C, A, GCC=None, cutoff=np.inf):
        """Scores of the supports F ∪ C[A_row] (A: (B, m) indices into C) from cached Gram rows.

        A support whose bound from the cut at F (:meth:`_partial`, ``R(S) >= const - W[S].sum()``)
        or, with two or three features left, from the closed form of :meth:`_closed_form_bounds` is
        already >= ``cutoff`` gets that bound instead of its score: a search only compares a value
        at or above its bar with the bar, so the solve is skipped (gravier's optimum: pair scoring
        35 -> 5.5 s). Every other value is the shared score (:func:`~dpbench.core.score.solve_blocks`).
        With two features left, a finite cutoff, ``GCC`` and the compiled partial quantities, the
        first two steps run in :func:`~dpbench.core.oracle.node_kernels.leaf_pairs`.

        Parameters
        ----------
        F : int64 ndarray (f,), sorted
        C : int64 ndarray (c,)
        A : int64 ndarray (B, m)
            Positions in C of each completion.
        GCC : float64 ndarray (c, c) or None
            ``X_C^T X_C`` (needed for m >= 2).
        cutoff : float

        Returns
        -------
        S : int array (B, s), rows sorted
        vals : ndarray (B,)
        """
        sc = self.score
        f, m = F.size, A.shape[1]
        s = f + m
        B = A.shape[0]
        if m == 2 and np.isfinite(cutoff) and self.partial_compiled and GCC is not None:
            # the same three steps (cut bound, pair bound, batched solve of the rest) with the
            # first two and the sorted supports in one compiled pass
            from dpbench.core.oracle.node_kernels import leaf_pairs

            const, W = self._partial(F)[0]
            R0, t, mC, U = self._pair_terms(F, C)
            S, vals, need = leaf_pairs(np.asarray(F, dtype=np.int64), np.asarray(C, dtype=np.int64),
                                       np.ascontiguousarray(A, dtype=np.int64), np.ascontiguousarray(GCC), t, mC, U,
                                       R0, float(sc.lam), float(const - W[F].sum()), W, float(cutoff))
            rows = np.flatnonzero(need)
            if rows.size:
                vals[rows] = self._solve_rows(F, C, A[rows], GCC)
            return S, vals
        idx = C[A]  # (B, m)
        S = np.concatenate([np.broadcast_to(F, (B, f)), idx], axis=1)
        S.sort(axis=1)
        vals = np.empty(B)
        rows = np.arange(B)
        if np.isfinite(cutoff):
            const, W = self._partial(F)[0]
            lb = (const - W[F].sum()) - W[idx].sum(axis=1)
            done = lb >= cutoff
            vals[done] = lb[done]
            rows = np.flatnonzero(~done)
        if m in (2, 3) and rows.size and np.isfinite(cutoff):
            # the exact ridge score of each pair or triple (no l2 bound) in closed form: most of a
            # leaf's completions stop here instead of in a batched solve
            lb = self._closed_form_bounds(F, C, A[rows], GCC)
            done = lb >= cutoff
            vals[rows[done]] = lb[done]
            rows = rows[~done]
        if rows.size:
            vals[rows] = self._solve_rows(F, C, A[rows], GCC)
        return S, vals

    def _solve_rows(self, F, C, A, GCC):
        """The shared scores of the supports F ∪ C[A_row] (:func:`~dpbench.core.score.solve_blocks` on
        systems assembled from cached Gram rows): ndarray (B,). ``GCC``: ``X_C^T X_C``, its rows
        of the pairs' first features, or each row's own block (B, m, m)."""
        sc = self.score
        f, m = F.size, A.shape[1]
        s = f + m
        idx = C[A]
        rows = np.arange(A.shape[0])
        RFU = self._rows(F, np.concatenate([F, idx.ravel()]))  # one pass over F's cached rows
        G = np.empty((rows.size, s, s))
        G[:, :f, :f] = RFU[:, :f]
        cross = RFU[:, f:].reshape(f, *idx.shape)  # (f, b, m)
        G[:, :f, f:] = cross.transpose(1, 0, 2)
        G[:, f:, :f] = cross.transpose(1, 2, 0)
        if m == 1:
            G[:, f, f] = sc.col_sq[idx[:, 0]]
        elif GCC.ndim == 3:  # each row's own block (B, m, m)
            G[:, f:, f:] = GCC
        elif GCC.shape[0] < C.size:  # only the rows of the pairs' first features (m = 2)
            G[:, f, f], G[:, f + 1, f + 1] = sc.col_sq[idx[:, 0]], sc.col_sq[idx[:, 1]]
            G[:, f, f + 1] = G[:, f + 1, f] = GCC[A[:, 0], A[:, 1]]
        else:
            G[:, f:, f:] = GCC[A[:, :, None], A[:, None, :]]
        G[:, np.arange(s), np.arange(s)] += sc.lam
        c = np.concatenate([np.broadcast_to(sc.c[F], (rows.size, f)), sc.c[idx]], axis=1)
        return solve_blocks(G, c, sc.yy, sc.r)[0]

    def _closed_form_bounds(self, F, C, A, GCC):
        """Lower bounds on ``R(F ∪ C[A[t]])`` per row t of A (int64 (B, 2) or (B, 3), positions in C;
        ``GCC = X_C^T X_C``): ridge scores without the l2 bound in closed form (ndarray (B,);
        :func:`~dpbench.core.oracle.node_kernels.pair_bounds`, :mod:`~dpbench.core.oracle.triple_kernels`)."""
        from dpbench.core.oracle import node_kernels, triple_kernels

        R0, t, mC, U = self._pair_terms(F, C)
        if A.shape[1] == 2:
            return node_kernels.pair_bounds(GCC, A, t, mC, U, R0, self.score.lam)
        bounds = triple_kernels.triple_bounds if self.partial_compiled else triple_kernels.triple_bounds_numpy
        return bounds(np.ascontiguousarray(GCC), np.ascontiguousarray(A, dtype=np.int64), t, mC, U, R0, self.score.lam)

    def _pair_terms(self, F, C):
        """The per-candidate terms of :meth:`_closed_form_bounds`: ``(R0, t (c,), diag(M) (c,), U (f, c))``
        with ``U = L^{-1} X_F^T X_C`` (:func:`~dpbench.core.oracle.node_kernels.pair_terms`, compiled
        with the compiled partial quantities, else its numpy reference ``pair_terms_numpy``)."""
        from dpbench.core.oracle.node_kernels import pair_terms, pair_terms_numpy

        sc = self.score
        (_, _), (R0, _) = self._partial(F)
        if not F.size:
            return float(R0), sc.c[C], sc.col_sq[C] + sc.lam, np.zeros((0, C.size))
        args = (self._rows(F, np.concatenate([F, C])), sc.c[F], sc.c[C], sc.col_sq[C], float(sc.lam))
        ok, t, mC, U = pair_terms(*args) if self.partial_compiled else (False, None, None, None)
        if not ok:
            t, mC, U = pair_terms_numpy(*args)
        return float(R0), t, mC, U

    def _gcc(self, C):
        sc = self.score
        if sc.gram_mode == "full":
            return sc.gram(C, C)
        XC = sc.X[:, C]
        return XC.T @ XC  # one gather, and numpy's syrk for a matrix times its own transpose
