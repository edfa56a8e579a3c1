"""The shared best-subset score R(S, D) and its sensitivity (design.md section 3).

    R(S, D) = min_{beta in R^s, ||beta||_2 <= r}  ||y - X_S beta||_2^2 + lam ||beta||_2^2

Every exponential-mechanism selector (exhaustive, topr, mistakes, mcmc) and every solver
backend recomputes objectives with this one implementation. It is batched: one numpy call
scores many supports, which is the inner loop of enumeration, MCMC and the single-swap
neighbourhood.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import UserInputError

#: Largest p for which the full p x p Gram matrix X^T X is formed and cached (200 MB).
GRAM_LIMIT = 5000

# Supports scored per chunk when Gram blocks are assembled from columns of X, so that the
# (n, chunk, s) gather stays around 64 MB whatever the batch size.
_GATHER_BYTES = 64 * 2**20


def sensitivity(s: int, b_x: float, b_y: float, r: float, kind: str = "tight") -> float:
    """Global sensitivity Delta of the score under replace-one neighbouring data sets.

    Parameters
    ----------
    s : int
        Sparsity level.
    b_x, b_y : float
        Clipping bounds, ``|x_ij| <= b_x`` and ``|y_i| <= b_y``.
    r : float
        l2 bound on the coefficients.
    kind : {"tight", "paper"}
        ``"tight"`` (default): ``(b_y + b_x r sqrt(s))^2``, the bound the proof of Lemma 2
        of behdin2024-dp-bss-iclr-workshop actually establishes, since
        ``|y_n - x_{n,S}^T beta| <= b_y + ||x_{n,S}||_2 ||beta||_2 <= b_y + b_x sqrt(s) r``.
        ``"paper"``: the looser ``2 b_y^2 + 2 b_x^2 r^2 s`` stated in Lemma 2.
        The ridge term does not depend on the data and cancels.

    Returns
    -------
    float
        Delta, in units of the (unscaled) score.

    Raises
    ------
    UserInputError
        For an unknown ``kind`` or non-positive bounds.
    """
    if min(b_x, b_y, r) <= 0 or s < 1:
        raise UserInputError(f"b_x, b_y, r must be positive and s >= 1 (got b_x={b_x}, b_y={b_y}, r={r}, s={s})")
    if kind == "tight":
        return (b_y + b_x * r * math.sqrt(s)) ** 2
    if kind == "paper":
        return 2 * b_y**2 + 2 * b_x**2 * r**2 * s
    raise UserInputError(f"unknown sensitivity kind {kind!r}; use 'tight' or 'paper'")


def solve_blocks(G, c, yy, r, *, lam_added=True):
    """Score many supports from their Gram blocks: the closed form of design.md section 3.

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
    ``R = y^T y - c^T beta_0``. Otherwise the constraint is active and
    ``beta = (G + mu I)^{-1} c`` with ``mu > 0`` the root of the secular equation
    ``||(G + mu I)^{-1} c|| = r`` (Moré & Sorensen 1983), found by a safeguarded Newton
    iteration on ``1/||beta(mu)|| - 1/r`` in the eigenbasis of G. Singular G (lam = 0,
    collinear columns or n < s) takes the same eigen path, with the minimum-norm
    least-squares solution at mu = 0.
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


def _batched_cholesky_solve(G, c):
    """Solve G beta = c for a stack of small SPD matrices, vectorised over the batch.

    numpy's stacked LAPACK calls cost about a microsecond per matrix; for the small s of
    best-subset selection a Cholesky written as O(s^3) vector operations over the batch is
    several times faster. Returns (beta, positive_definite_mask) or None for large s.
    """
    B, s = c.shape
    if s > 12:
        try:
            L = np.linalg.cholesky(G)
        except np.linalg.LinAlgError:
            return None
        z = np.linalg.solve(L, c[..., None])
        return np.linalg.solve(np.swapaxes(L, 1, 2), z)[..., 0], np.ones(B, dtype=bool)
    L = np.zeros((s, s, B))
    good = np.ones(B, dtype=bool)
    scale = np.maximum(np.abs(np.einsum("bii->b", G)), 1e-300)
    for j in range(s):
        d = G[:, j, j] - sum(L[j, k] * L[j, k] for k in range(j))
        # A relative pivot threshold catches numerically singular blocks; they go to the
        # eigen path, which handles rank deficiency exactly.
        good &= d > 1e-12 * scale
        d = np.sqrt(np.where(good, d, 1.0))
        L[j, j] = d
        for i in range(j + 1, s):
            L[i, j] = (G[:, i, j] - sum(L[i, k] * L[j, k] for k in range(j))) / d
    z = np.empty((s, B))
    for i in range(s):
        z[i] = (c[:, i] - sum(L[i, k] * z[k] for k in range(i))) / L[i, i]
    x = np.empty((s, B))
    for i in reversed(range(s)):
        x[i] = (z[i] - sum(L[k, i] * x[k] for k in range(i + 1, s))) / L[i, i]
    return x.T.copy(), good


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
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
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
        self._G = self.X.T @ self.X if gram == "full" else None

    def gram(self, rows, cols) -> np.ndarray:
        """Entries of X^T X (no ridge): ``G[rows][:, cols]`` of shape (len(rows), len(cols))."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        if self._G is not None:
            return self._G[np.ix_(rows, cols)]
        return self.X[:, rows].T @ self.X[:, cols]

    def blocks(self, supports) -> tuple[np.ndarray, np.ndarray]:
        """Gram blocks ``X_S^T X_S + lam I`` (B, s, s) and ``X_S^T y`` (B, s) of each support."""
        S = np.asarray(supports, dtype=np.int64)
        B, s = S.shape
        if self._G is not None:
            G = self._G[S[:, :, None], S[:, None, :]]
        else:
            G = np.empty((B, s, s))
            step = max(1, _GATHER_BYTES // (8 * self.n * s))
            for a in range(0, B, step):
                XS = self.X[:, S[a : a + step]]  # (n, b, s)
                G[a : a + step] = np.einsum("nbi,nbj->bij", XS, XS)
        if self.lam:
            G = G + self.lam * np.eye(s)
        return G, self.c[S]

    def solve(self, supports) -> tuple[np.ndarray, np.ndarray]:
        """Scores (B,) and minimisers (B, s) of a batch of supports (B, s)."""
        S = np.asarray(supports, dtype=np.int64)
        if S.ndim == 1:
            S = S[None, :]
        G, c = self.blocks(S)
        return solve_blocks(G, c, self.yy, self.r)

    def __call__(self, supports) -> np.ndarray:
        """Scores R(S, D) of a batch of supports: (B, s) int array in, (B,) floats out.

        A single support of shape (s,) gives an array of shape (1,).
        """
        return self.solve(supports)[0]
