"""The shared best-subset score R(S, D) (docs/methods/score.md); its sensitivity is in :mod:`dpbench.core.privacy.sensitivity`.

    R(S, D) = min_{beta in R^s, ||beta||_2 <= r}  ||y - X_S beta||_2^2 + lam ||beta||_2^2

Every exponential-mechanism selector (exhaustive, topr, mistakes, mcmc) and every solver
backend recomputes objectives with this one implementation. It is batched: one numpy call
scores many supports, which is the inner loop of enumeration, MCMC and the single-swap
neighbourhood.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpbench.core.errors import UserInputError

#: Largest p for which the full p x p Gram matrix X^T X is formed and cached (200 MB).
GRAM_LIMIT = 5000


def _symmetric(G):
    """``G`` with its upper triangle mirrored into its lower one, in place, and returned.

    ``X^T X`` of a C-contiguous X is computed by a symmetric rank-n update, exactly symmetric;
    this makes sure of it whatever the BLAS, since the leaf kernels read the pair {u, v}'s entry
    from the row of whichever feature they visit first (``node_kernels.leaf_pair_scan``) and must
    get the same bits either way. In blocks of rows: no temporary of size p^2.
    """
    p = G.shape[0]
    for i0 in range(0, p, 256):
        i1 = min(i0 + 256, p)
        G[i0:i1, :i0] = G[:i0, i0:i1].T
        d = G[i0:i1, i0:i1]
        low = np.tril_indices(i1 - i0, -1)
        d[low] = d.T[low]
    return G


# Bytes of gathered columns per block when Gram blocks are assembled from columns of X
# (gram="columns"): about the size of an L2 cache, so the batched matmul reads them from cache.
_COLUMN_GATHER_BYTES = 512 * 2**10
#: Columns mode forms X^T (a copy of the data) only for batches with B s >= p / _XT_BATCH_FACTOR.
_XT_BATCH_FACTOR = 64


def solve_blocks(G, c, yy, r, *, lam_added=True):
    """Score many supports from their Gram blocks: the closed form of docs/methods/score.md.

    Parameters
    ----------
    G : ndarray of shape (B, s, s)
        ``X_S^T X_S + lam I`` for each of B supports (ridge already added).
    c : ndarray of shape (B, s)
        ``X_S^T y`` for each support.
    yy : float
        ``y^T y``.
    r : float
        l2 bound on the coefficients (``np.inf`` for none).

    Returns
    -------
    scores : ndarray of shape (B,)
        ``R(S, D)`` for each support.
    beta : ndarray of shape (B, s)
        The minimisers.

    Notes
    -----
    With ``beta_0 = G^{-1} c``: if ``||beta_0|| <= r`` it is optimal and
    ``R = y^T y - c^T beta_0 = y^T y - ||L^{-1} c||^2`` (``G = L L^T``). Otherwise the
    constraint is active and ``beta = (G + mu I)^{-1} c`` with ``mu > 0`` the root of the
    secular equation ``||(G + mu I)^{-1} c|| = r`` (Moré & Sorensen 1983), found by a
    safeguarded Newton iteration on ``1/||beta(mu)|| - 1/r`` in the eigenbasis of G.
    Singular G (lam = 0, collinear columns or n < s) takes the same eigen path, with the
    minimum-norm least-squares solution at mu = 0.
    """
    G = np.asarray(G, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    B, s = c.shape
    scores = np.empty(B)
    beta = np.empty((B, s))
    ok = np.zeros(B, dtype=bool)
    if B:
        chol = _batched_cholesky_solve(G, c)
        if chol is not None:
            b0, good = chol
            norm2 = np.einsum("bi,bi->b", b0, b0)
            ok = good & (norm2 <= r * r)
            beta[ok] = b0[ok]
            scores[ok] = yy - np.einsum("bi,bi->b", c[ok], b0[ok])
    rest = np.flatnonzero(~ok)
    if rest.size:
        sc, be = _eigen_trust_region(G[rest], c[rest], yy, r)
        scores[rest] = sc
        beta[rest] = be
    return scores, beta


# Largest s handled by the component-major Cholesky below; beyond it the O(s^3) Python-level
# loop costs more than numpy's stacked LAPACK calls.
_CM_MAX_S = 12
# Supports per inner block of the component-major kernel: each of its (block,) vectors is
# 32 kB, so the whole working set (about (s^2 + 3 s) vectors) stays in the L2 cache instead
# of streaming every intermediate through main memory.
_CM_BLOCK = 4096


@functools.lru_cache(maxsize=None)
def _tri_layout(s):
    """Row-major lower-triangle layout: (I, J) index arrays and pos[i][j] -> row (i >= j)."""
    I, J = np.tril_indices(s)
    pos = [[-1] * s for _ in range(s)]
    for t, (i, j) in enumerate(zip(I.tolist(), J.tolist())):
        pos[i][j] = t
    diag = np.array([pos[j][j] for j in range(s)])
    return I, J, pos, diag


def _cm_cholesky_solve(T, C):
    """In-place Cholesky solve of many SPD systems stored component-major.

    Parameters
    ----------
    T : ndarray of shape (s (s + 1) / 2, b)
        Lower triangle of each ``G = X_S^T X_S + lam I``, row ``pos[i][j]`` holding
        ``G_ij`` (i >= j) for all b systems. Overwritten by the Cholesky factor L.
    C : ndarray of shape (s, b)
        Right-hand sides ``c``. Overwritten by ``beta_0 = G^{-1} c``.

    Returns
    -------
    zz : ndarray of shape (b,)
        ``c^T G^{-1} c = ||L^{-1} c||^2``, so that ``R = y^T y - zz`` when unconstrained.
    norm2 : ndarray of shape (b,)
        ``||beta_0||^2``.
    good : ndarray of shape (b,), bool
        False where a pivot fell below ``1e-12 * trace(G)`` (numerically singular); the
        other outputs are meaningless there and the caller takes the eigen path.

    Notes
    -----
    Every operation is one numpy ufunc call over the b systems (vectorised over the batch,
    O(s^3) calls), writing into preallocated buffers; numpy's stacked LAPACK costs about a
    microsecond per matrix instead.
    """
    s, b = C.shape
    _, _, pos, diag = _tri_layout(s)
    tmp = np.empty(b)
    inv = np.empty((s, b))
    good = np.ones(b, dtype=bool)
    thr = T[diag].sum(axis=0)
    np.abs(thr, out=thr)
    np.maximum(thr, 1e-300, out=thr)
    thr *= 1e-12
    flag = np.empty(b, dtype=bool)
    for j in range(s):
        row_j = pos[j]
        d = T[row_j[j]]
        for k in range(j):
            np.multiply(T[row_j[k]], T[row_j[k]], out=tmp)
            np.subtract(d, tmp, out=d)
        # A relative pivot threshold catches numerically singular blocks; they go to the
        # eigen path, which handles rank deficiency exactly. Clamping keeps the rest finite.
        np.greater(d, thr, out=flag)
        np.logical_and(good, flag, out=good)
        np.maximum(d, thr, out=d)
        np.sqrt(d, out=d)
        np.divide(1.0, d, out=inv[j])
        for i in range(j + 1, s):
            row_i = pos[i]
            e = T[row_i[j]]
            for k in range(j):
                np.multiply(T[row_i[k]], T[row_j[k]], out=tmp)
                np.subtract(e, tmp, out=e)
            np.multiply(e, inv[j], out=e)
    # forward substitution L z = c (in place in C)
    zz = np.zeros(b)
    for i in range(s):
        zi = C[i]
        row_i = pos[i]
        for k in range(i):
            np.multiply(T[row_i[k]], C[k], out=tmp)
            np.subtract(zi, tmp, out=zi)
        np.multiply(zi, inv[i], out=zi)
        np.multiply(zi, zi, out=tmp)
        np.add(zz, tmp, out=zz)
    # back substitution L^T beta = z (in place in C)
    norm2 = np.zeros(b)
    for i in reversed(range(s)):
        xi = C[i]
        for k in range(i + 1, s):
            np.multiply(T[pos[k][i]], C[k], out=tmp)
            np.subtract(xi, tmp, out=xi)
        np.multiply(xi, inv[i], out=xi)
        np.multiply(xi, xi, out=tmp)
        np.add(norm2, tmp, out=norm2)
    return zz, norm2, good


def _cm_forward(T, V, out, tmp):
    """Solve L q = V for the component-major factor L in T (s(s+1)/2, b) (unit: rows of V)."""
    s = V.shape[0]
    _, _, pos, diag = _tri_layout(s)
    out[...] = V
    for i in range(s):
        qi = out[i]
        for k in range(i):
            np.multiply(T[pos[i][k]], out[k], out=tmp)
            np.subtract(qi, tmp, out=qi)
        np.divide(qi, T[diag[i]], out=qi)
    return out


def _cm_trust_region(T0, C0, yy, r, iters=60):
    """Active-constraint solution for positive definite blocks, component-major.

    Newton's method on ``phi(mu) = 1/||beta(mu)|| - 1/r`` with ``beta(mu) = (G + mu I)^{-1} c``
    (Moré & Sorensen 1983; Nocedal & Wright, Algorithm 4.3), each step one batched Cholesky
    of ``G + mu I``: ``mu <- mu + (||beta|| / ||q||)^2 (||beta|| - r) / r`` with
    ``q = L^{-1} beta``. phi is concave and increasing, so from ``mu = 0`` (where
    ``||beta|| > r``) the iterates increase monotonically to the root and every
    ``G + mu I`` stays positive definite.

    Parameters
    ----------
    T0 : ndarray of shape (s(s+1)/2, b)
        Lower triangles of positive definite ``G = X_S^T X_S + lam I`` with ``||G^{-1} c|| > r``.
    C0 : ndarray of shape (s, b)
        ``c = X_S^T y``.
    yy, r : float

    Returns
    -------
    scores : ndarray of shape (b,)
        ``R = y^T y - c^T beta - mu ||beta||^2`` (using ``beta^T G beta = c^T beta - mu ||beta||^2``).
    beta : ndarray of shape (s, b)
    converged : ndarray of shape (b,), bool
        ``| ||beta|| - r | <= 1e-12 r`` and every pivot positive; the caller sends the
        rest to the eigen path.
    """
    s, b = C0.shape
    _, _, _, diag = _tri_layout(s)
    mu = np.zeros(b)
    tmp = np.empty(b)
    q = np.empty((s, b))
    conv = np.zeros(b, dtype=bool)
    for _ in range(iters):
        T = T0.copy()
        T[diag] += mu
        C = C0.copy()
        zz, norm2, good = _cm_cholesky_solve(T, C)
        nrm = np.sqrt(norm2)
        conv = good & (np.abs(nrm - r) <= 1e-12 * r)
        if conv.all():
            break
        _cm_forward(T, C, q, tmp)
        qq = np.einsum("ib,ib->b", q, q)
        step = (norm2 / qq) * (nrm - r) / r
        # converged rows keep their mu; a non-finite step (failed pivot) freezes the row
        mu = np.where(conv | ~np.isfinite(step), mu, mu + step)
    scores = yy - zz - mu * norm2
    return scores, C, conv


def _batched_cholesky_solve(G, c):
    """Solve G beta = c for a stack of small SPD matrices (B, s, s), vectorised over the batch.

    Returns (beta (B, s), positive_definite_mask (B,)), or None when a large-s LAPACK
    factorisation fails.
    """
    B, s = c.shape
    if s > _CM_MAX_S:
        try:
            L = np.linalg.cholesky(G)
        except np.linalg.LinAlgError:
            return None
        z = np.linalg.solve(L, c[..., None])
        return np.linalg.solve(np.swapaxes(L, 1, 2), z)[..., 0], np.ones(B, dtype=bool)
    I, J, _, _ = _tri_layout(s)
    beta = np.empty((B, s))
    good = np.empty(B, dtype=bool)
    with np.errstate(all="ignore"):
        for a in range(0, B, _CM_BLOCK):
            sl = slice(a, a + _CM_BLOCK)
            T = np.ascontiguousarray(G[sl, I, J].T)
            # An explicit copy: for a one-row block c[sl].T is already contiguous, so
            # ascontiguousarray would return a view and the in-place solve would
            # overwrite the caller's c with beta.
            C = c[sl].T.copy()
            _, _, good[sl] = _cm_cholesky_solve(T, C)
            beta[sl] = C.T
    return beta, good


def _eigen_trust_region(G, c, yy, r, iters=100):
    """Exact solution of the l2-constrained problem in the eigenbasis of G (see solve_blocks)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _eigen_trust_region_impl(G, c, yy, r, iters)


def _eigen_trust_region_impl(G, c, yy, r, iters):
    w, Q = np.linalg.eigh(G)  # (B, s), (B, s, s)
    ct = np.einsum("bji,bj->bi", Q, c)  # Q^T c
    tol = 1e-10 * np.maximum(w[:, -1:], 1e-300)
    pos = w > tol
    # Minimum-norm least-squares solution at mu = 0: c lies in the range of X_S^T, so its
    # components on (numerically) zero eigenvalues are rounding noise and are dropped.
    inv0 = np.where(pos, 1.0 / np.where(pos, w, 1.0), 0.0)
    bt0 = ct * inv0
    norm0 = np.sqrt(np.einsum("bi,bi->b", bt0, bt0))
    mu = np.zeros(len(c))
    active = norm0 > r
    if np.any(active):
        a = np.flatnonzero(active)
        wa, ca = w[a], ct[a]
        lo = np.zeros(a.size)
        hi = np.sqrt(np.einsum("bi,bi->b", ca, ca)) / r  # ||beta(hi)|| <= ||c|| / hi = r
        m = np.zeros(a.size)
        for _ in range(iters):
            den = np.maximum(wa + m[:, None], 1e-300)
            nrm2 = np.sum(ca**2 / den**2, axis=1)
            nrm = np.sqrt(nrm2)
            f = 1.0 / nrm - 1.0 / r  # increasing in mu, root where ||beta|| = r
            lo = np.where(f < 0, m, lo)
            hi = np.where(f >= 0, m, hi)
            dn = -np.sum(ca**2 / den**3, axis=1) / nrm  # d||beta||/dmu
            step = -f / (-dn / nrm2)  # Newton on f: f' = -dn / ||beta||^2
            m_new = m + step
            bad = ~np.isfinite(m_new) | (m_new <= lo) | (m_new >= hi)
            m_new = np.where(bad, 0.5 * (lo + hi), m_new)
            if np.all(np.abs(m_new - m) <= 1e-13 * np.maximum(1.0, m)):
                m = m_new
                break
            m = m_new
        mu[a] = m
    den = w + mu[:, None]
    inv = np.where(pos | (mu[:, None] > 0), 1.0 / np.where(den > 0, den, 1.0), 0.0)
    bt = ct * inv
    # R = yy - 2 c^T beta + beta^T G beta, evaluated in the eigenbasis.
    scores = yy - 2 * np.sum(ct * bt, axis=1) + np.sum(w * bt * bt, axis=1)
    beta = np.einsum("bij,bj->bi", Q, bt)
    return scores, beta


class RidgeScore:
    """Batched evaluator of the shared score R(S, D) for one (clipped) data set.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        Design matrix (after clipping).
    y : ndarray of shape (n,)
        Response (after clipping).
    lam : float
        Ridge penalty Lambda >= 0.
    r : float
        l2 bound on the coefficients, r > 0 (``np.inf`` for none).
    gram : {"auto", "full", "columns"}
        ``"full"`` caches the p x p Gram matrix (fast gathers); ``"columns"`` assembles each
        s x s block from columns of X and never forms a p x p matrix; ``"auto"`` picks
        ``"full"`` when ``p <= GRAM_LIMIT``.

    Raises
    ------
    UserInputError
        If lam < 0 or r <= 0.

    Notes
    -----
    Scoring (docs/methods/score.md) runs in blocks of a few thousand supports laid out
    component-major: the s(s+1)/2 lower-triangle entries of each Gram block are gathered by
    flat index from the cached X^T X, factorised by a Cholesky written as O(s^3) numpy
    calls over the block, and ``R = y^T y - ||L^{-1} c||^2`` when ``||G^{-1} c|| <= r``.
    Blocks with an active l2 bound take batched Newton steps on the secular equation
    (:func:`_cm_trust_region`); numerically singular blocks (lam = 0 with collinear columns
    or n < s) take the exact eigen path. All paths are exact to rounding (float64).

    Examples
    --------
    >>> score = RidgeScore(X, y, lam=0.0, r=1.1)
    >>> score(np.array([[0, 1, 2], [0, 1, 3]]))   # doctest: +SKIP
    array([...])
    """

    def __init__(self, X, y, lam=0.0, r=np.inf, gram="auto"):
        if lam < 0 or not np.isfinite(lam):
            raise UserInputError(f"ridge penalty lam = {lam} must be finite and >= 0")
        if not r > 0:
            raise UserInputError(f"coefficient bound r = {r} must be > 0")
        # aligned: numpy and the compiled kernels round differently on data that is not 8-byte
        # aligned (a memory map, a buffer at an odd offset), and a search would take other steps
        self.X = np.require(X, dtype=np.float64, requirements=["C", "A"])
        self.y = np.require(y, dtype=np.float64, requirements=["A"])
        self.lam = float(lam)
        self.r = float(r)
        self.n, self.p = self.X.shape
        self.yy = float(self.y @ self.y)
        self.c = self.X.T @ self.y  # (p,)
        self.col_sq = np.einsum("ij,ij->j", self.X, self.X)  # diag of X^T X
        if gram == "auto":
            gram = "full" if self.p <= GRAM_LIMIT else "columns"
        if gram not in ("full", "columns"):
            raise UserInputError(f"unknown gram mode {gram!r}; use 'auto', 'full' or 'columns'")
        self.gram_mode = gram
        self._G = _symmetric(self.X.T @ self.X) if gram == "full" else None
        # Raveled view for the flat-index gather of the lower triangles in _solve.
        self._Gflat = self._G.ravel() if self._G is not None else None
        self._XT = None  # X^T, made on first use in columns mode

    def __setstate__(self, state):
        # an unpickled array may sit at any byte offset of a received message (dask sends arrays as
        # frames of their own): copied to aligned memory, as in __init__, bit for bit
        self.__dict__.update({k: np.require(v, requirements=["A"]) if isinstance(v, np.ndarray) else v
                              for k, v in state.items()})

    def transposed(self) -> np.ndarray:
        """X^T as a C-contiguous array of shape (p, n), float64: row j is column j of X, contiguous.

        Made on first use and kept: a copy of the data (8 n p bytes), so callers that only need a
        few columns gather them from X instead unless they come back often (the column blocks of
        large batches, the node products of :mod:`dpbench.core.oracle.working_set`).
        """
        if self._XT is None:
            self._XT = np.ascontiguousarray(self.X.T)
        return self._XT

    def cached_gram(self) -> np.ndarray | None:
        """The cached ``X^T X``, shape (p, p), float64, in ``gram_mode == "full"``; None otherwise.

        The score's own array (not a copy): callers read it and never write to it.
        """
        return self._G

    def gram(self, rows, cols) -> np.ndarray:
        """Entries of X^T X (no ridge): ``G[rows][:, cols]`` of shape (len(rows), len(cols))."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        if self._G is not None:
            return self._G[np.ix_(rows, cols)]
        return self.X[:, rows].T @ self.X[:, cols]

    def _column_blocks(self, S):
        """``X_S^T X_S`` (B, s, s) from columns of X, for p too large to cache X^T X."""
        B, s = S.shape
        if self._XT is None and B * s * _XT_BATCH_FACTOR < self.p:
            # A small batch: gather its columns straight from X. Copying all of X^T (the
            # whole data again: 1.6 GB and seconds at p = 10^6) pays only for large batches.
            # Contiguous (B, s, n) as in the gather below, so the matmul (and every score) is
            # bitwise the same whichever path a batch takes.
            XS = np.ascontiguousarray(self.X[:, S.ravel()].T).reshape(B, s, self.n)
            G = np.empty((B, s, s))
            np.matmul(XS, XS.transpose(0, 2, 1), out=G)
            return G
        # Rows of X^T are the columns of X: gathering them reads contiguous memory,
        # where X[:, S] touches one cache line per element.
        XT = self.transposed()
        G = np.empty((B, s, s))
        # small blocks keep the gathered (step, s, n) columns in cache for the matmul
        step = max(1, _COLUMN_GATHER_BYTES // (8 * self.n * s))
        buf = np.empty((min(step, B), s, self.n))
        for a in range(0, B, step):
            Sb = S[a : a + step]
            XS = buf[: len(Sb)]
            np.take(XT, Sb, axis=0, out=XS)
            np.matmul(XS, XS.transpose(0, 2, 1), out=G[a : a + step])
        return G

    def blocks(self, supports) -> tuple[np.ndarray, np.ndarray]:
        """Gram blocks ``X_S^T X_S + lam I`` (B, s, s) and ``X_S^T y`` (B, s) of each support."""
        S = np.asarray(supports, dtype=np.int64)
        B, s = S.shape
        if self._G is not None:
            G = self._G[S[:, :, None], S[:, None, :]]
        else:
            G = self._column_blocks(S)
        if self.lam:
            G = G + self.lam * np.eye(s)
        return G, self.c[S]

    def solve(self, supports) -> tuple[np.ndarray, np.ndarray]:
        """Scores (B,) and minimisers (B, s) of a batch of supports (B, s)."""
        return self._solve(_as_supports(supports), want_beta=True)

    def __call__(self, supports) -> np.ndarray:
        """Scores R(S, D) of a batch of supports: (B, s) int array in, (B,) floats out.

        A single support of shape (s,) gives an array of shape (1,).
        """
        return self._solve(_as_supports(supports), want_beta=False)[0]

    def _gather_cm(self, S, T, C):
        """Fill T (s(s+1)/2, b) with the lower triangles of ``X_S^T X_S + lam I`` and C (s, b)
        with ``X_S^T y``, component-major (see :func:`_cm_cholesky_solve`)."""
        b, s = S.shape
        I, J, _, diag = _tri_layout(s)
        ST = np.ascontiguousarray(S.T)
        if self._Gflat is not None:
            # Only the s(s+1)/2 lower-triangle entries are gathered, by flat index into the
            # raveled Gram matrix, straight into the layout the kernel wants.
            idx = ST[I]
            idx *= self.p
            idx += ST[J]
            np.take(self._Gflat, idx, out=T)
        else:
            T[...] = self._column_blocks(S)[:, I, J].T
        if self.lam:
            T[diag] += self.lam
        np.take(self.c, ST, out=C)

    def _solve(self, S, want_beta):
        """Scores and (optionally) minimisers of supports S (B, s); see :func:`solve_blocks`."""
        B, s = S.shape
        if s > _CM_MAX_S or B == 0:
            G, c = self.blocks(S)
            return solve_blocks(G, c, self.yy, self.r)
        scores = np.empty(B)
        beta = np.empty((B, s)) if want_beta else None
        ok = np.empty(B, dtype=bool)
        good_all = np.empty(B, dtype=bool)
        r2 = self.r * self.r
        ntri = s * (s + 1) // 2
        with np.errstate(all="ignore"):
            for a in range(0, B, _CM_BLOCK):
                Sb = S[a : a + _CM_BLOCK]
                b = Sb.shape[0]
                T = np.empty((ntri, b))
                C = np.empty((s, b))
                self._gather_cm(Sb, T, C)
                zz, norm2, good = _cm_cholesky_solve(T, C)
                np.subtract(self.yy, zz, out=scores[a : a + b])
                okb = ok[a : a + b]
                np.less_equal(norm2, r2, out=okb)
                np.logical_and(okb, good, out=okb)
                good_all[a : a + b] = good
                if want_beta:
                    beta[a : a + b] = C.T
        rest = np.flatnonzero(~ok & good_all)
        if rest.size:
            # Active l2 constraint on a positive definite block: batched Newton on mu.
            done = np.zeros(B, dtype=bool)
            with np.errstate(all="ignore"):
                for a in range(0, rest.size, _CM_BLOCK):
                    idx = rest[a : a + _CM_BLOCK]
                    T = np.empty((ntri, idx.size))
                    C = np.empty((s, idx.size))
                    self._gather_cm(S[idx], T, C)
                    sc, be, conv = _cm_trust_region(T, C, self.yy, self.r)
                    idx = idx[conv]
                    scores[idx] = sc[conv]
                    if want_beta:
                        beta[idx] = be[:, conv].T
                    done[idx] = True
            ok |= done
        rest = np.flatnonzero(~ok)
        if rest.size:
            # Numerically singular block (or no Newton convergence): the exact eigen path.
            G, c = self.blocks(S[rest])
            sc, be = _eigen_trust_region(G, c, self.yy, self.r)
            scores[rest] = sc
            if want_beta:
                beta[rest] = be
        return scores, beta


def _as_supports(supports) -> np.ndarray:
    """Supports as a (B, s) int64 array (a single support of shape (s,) becomes (1, s))."""
    S = np.asarray(supports, dtype=np.int64)
    if S.ndim == 1:
        S = S[None, :]
    return S
