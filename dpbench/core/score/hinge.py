"""The hinge-loss score R(S, D) of sparse classification, batched over supports.

    R(S, D) = min_{beta in R^s, ||beta||_2 <= r}  (1/n) sum_i max(0, 1 - y_i x_{i,S}^T beta)
                                                   + (Lambda / n) ||beta||_2^2

with labels y_i in {-1, +1}: the objective of the hinge experiment of the NeurIPS 2025 paper
(Prastakos, Behdin & Mazumder; the ``least_squares`` / ``hinge_loss_backsolve`` functions of
the authors' ``hinge_neurips.py`` use exactly this scaling, 1/n on both terms).

Each support's problem is a small strongly convex program. It is solved through its dual by
dual coordinate ascent (Hsieh, Chang, Lin, Keerthi & Sundararajan 2008; Shalev-Shwartz & Zhang
2013), vectorised over a batch of supports (one numpy step per data row serves every support),
and every returned score carries a **duality-gap certificate**:

    D(alpha) <= R(S, D) <= P(beta) = returned score,   P(beta) - D(alpha) <= gap_tol.

Dual (a_i = y_i x_{i,S}, w = sum_i alpha_i a_i, alpha in [0, 1]^n): writing the hinge as
``max_{alpha_i in [0,1]} alpha_i (1 - a_i^T beta)`` and minimising over the ball first,

    D(alpha) = (1/n) (sum_i alpha_i - h(||w||)),
    h(t) = t^2 / (4 Lambda)          if t <= 2 Lambda r      (beta(w) = w / (2 Lambda)),
    h(t) = r t - Lambda r^2          otherwise               (beta(w) = r w / ||w||).

h(||.||) has gradient beta(w) and is (1 / (2 Lambda))-smooth (the conjugate of the
2 Lambda-strongly convex ``Lambda ||beta||^2`` restricted to the ball), so the coordinate step
``alpha_i <- clip(alpha_i + 2 Lambda (1 - a_i^T beta(w)) / ||a_i||^2, 0, 1)`` never decreases D
(it is the exact coordinate maximiser while ||w|| <= 2 Lambda r).
"""

from __future__ import annotations

import numpy as np

from dpbench.core.errors import UserInputError

#: Supports solved together: the gathered signed rows (n, batch, s) stay around 8 MB (about 70
#: supports at n = 3000, s = 5): small batches keep the union of rows that still move short.
_GATHER_BYTES = 8 * 2**20


class HingeScore:
    """Batched hinge-loss score R(S, D) with a duality-gap certificate per support.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        Clipped design (``|x_ij| <= b_x``).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    lam : float
        Lambda > 0 (the dual needs strong convexity; the NeurIPS 2025 hinge experiment uses 100).
    r : float
        l2 bound on the coefficients (finite).
    gap_tol : float
        Absolute duality-gap tolerance that decides "certified": every returned score is
        within ``gap_tol`` above the exact R(S, D). Default ``1e-6 / n``; the loss adds it to
        the sensitivity (:meth:`dpbench.core.score.loss.Hinge.sensitivity`).
    max_epochs : int
        Deterministic work limit: passes over the rows per batch. A support whose gap is still
        above ``gap_tol`` after it is counted in :attr:`uncertified` and its score (still the
        primal value, an upper bound) flagged by :meth:`solve`.

    Raises
    ------
    UserInputError
        If labels are not +-1, Lambda <= 0 or r is not finite.
    """

    #: Swap levels with more members than this are searched by the oracle instead of scored
    #: one by one (:func:`dpbench.core.toplist.level_optimum`): a hinge score costs about a
    #: millisecond at n = 3000, some thousand times the ridge closed form.
    level_enum_limit = 4096

    def __init__(self, X, y, lam=100.0, r=1.1, gap_tol=None, max_epochs=500):
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.n, self.p = self.X.shape
        if not np.all(np.abs(self.y) == 1.0):
            raise UserInputError("the hinge loss needs labels y in {-1, +1}; use --generator classification "
                                 "or a data set with a two-class target")
        if not (np.isfinite(lam) and lam > 0):
            raise UserInputError(f"the hinge loss needs --lam > 0 (got {lam}); the authors use 100")
        if not (np.isfinite(r) and r > 0):
            raise UserInputError(f"the hinge loss needs a finite --r > 0 (got {r})")
        self.lam = float(lam)
        self.r = float(r)
        self.gap_tol = float(gap_tol) if gap_tol is not None else 1e-6 / self.n
        self.max_epochs = int(max_epochs)
        # Signed rows a_i = y_i x_i: the dual only ever sees these.
        self.A = self.X * self.y[:, None]
        self.uncertified = 0
        self.max_gap = 0.0
        # A fixed row order (not a random one) keeps every score a deterministic function of (S, D).
        self._order = np.random.default_rng(0).permutation(self.n)

    def __call__(self, supports) -> np.ndarray:
        """Scores R(S, D) of supports (B, s) int -> (B,) float64 (certified upper bounds)."""
        return self.solve(supports)[0]

    def solve(self, supports):
        """Scores, minimisers, dual lower bounds and certificates of a batch of supports.

        Parameters
        ----------
        supports : array_like of shape (B, s), int

        Returns
        -------
        scores : ndarray of shape (B,)
            Primal values P(beta) (upper bounds on R within ``gap_tol`` when certified).
        beta : ndarray of shape (B, s)
        lower : ndarray of shape (B,)
            Dual values D(alpha), valid lower bounds on R(S, D) whatever the gap.
        certified : ndarray of shape (B,), bool
            ``scores - lower <= gap_tol``.
        """
        S = np.atleast_2d(np.asarray(supports, dtype=np.int64))
        B, s = S.shape
        scores, lower = np.empty(B), np.empty(B)
        beta = np.empty((B, s))
        cert = np.zeros(B, dtype=bool)
        step = max(1, _GATHER_BYTES // (8 * max(1, s) * self.n))
        for a in range(0, B, step):
            sl = slice(a, min(B, a + step))
            scores[sl], beta[sl], lower[sl], cert[sl], _ = self._solve_batch(S[sl])
        if B:
            self.uncertified += int((~cert).sum())
            self.max_gap = max(self.max_gap, float((scores - lower).max()))
        return scores, beta, lower, cert

    def _beta(self, w):
        nw = np.sqrt(np.einsum("bs,bs->b", w, w))
        return w / np.maximum(2.0 * self.lam, nw / self.r)[:, None], nw

    def _values(self, Z, alpha, w):
        """Primal value at beta(w), dual value at alpha (both (B,))."""
        n, lam, r = self.n, self.lam, self.r
        beta, nw = self._beta(w)
        margins = np.einsum("nbs,bs->nb", Z, beta)
        primal = np.maximum(0.0, 1.0 - margins).sum(axis=0) / n + lam / n * np.einsum("bs,bs->b", beta, beta)
        h = np.where(nw <= 2 * lam * r, nw * nw / (4 * lam), r * nw - lam * r * r)
        dual = (alpha.sum(axis=0) - h) / n
        return primal, dual, beta

    def _solve_batch(self, S):
        B, s = S.shape
        Z = self.A[:, S]  # (n, B, s)
        qn = np.einsum("nbs,nbs->nb", Z, Z)
        # Rows with a_i = 0 have dual gradient 1/n > 0: alpha_i = 1 is optimal; the safe
        # divisor keeps their (unused) step finite.
        inv = np.where(qn > 0, 2.0 * self.lam / np.where(qn > 0, qn, 1.0), np.inf)
        # Start from alpha = 1 (every margin violated), the solution when Lambda is large.
        alpha = np.ones((self.n, B))
        w = Z.sum(axis=0)
        active = np.arange(B)
        primal, dual, beta = self._values(Z, alpha, w)
        done = primal - dual <= self.gap_tol
        out_p, out_d, out_b = primal.copy(), dual.copy(), beta.copy()
        out_alpha = alpha
        for _ in range(self.max_epochs):
            if done.all():
                break
            keep = np.flatnonzero(~done)
            if keep.size < active.size:  # drop certified supports from the working set
                if out_alpha is alpha:
                    out_alpha = alpha.copy()
                out_alpha[:, active] = alpha
                active, Z, qn, inv, alpha, w = (active[keep], Z[:, keep], qn[:, keep], inv[:, keep],
                                                alpha[:, keep], w[keep])
            # Only rows violating the box KKT conditions for some support of the batch can
            # move (alpha_i = 1 with margin < 1, or alpha_i = 0 with margin > 1, is a fixed
            # point of its coordinate step), so an epoch visits just those rows; the duality
            # gap below certifies the result whatever rows were skipped.
            bw, _ = self._beta(w)
            M = np.einsum("nbs,bs->nb", Z, bw)
            viol = ((alpha < 1.0) & (M < 1.0)) | ((alpha > 0.0) & (M > 1.0))
            rows = self._order[viol[self._order].any(axis=1)]
            for i in rows:
                ai = Z[i]
                bw, _ = self._beta(w)
                m = np.einsum("bs,bs->b", ai, bw)
                new = np.clip(alpha[i] + (1.0 - m) * inv[i], 0.0, 1.0)
                d = new - alpha[i]
                alpha[i] = new
                w += d[:, None] * ai
            primal, dual, beta = self._values(Z, alpha, w)
            out_p[active], out_d[active], out_b[active] = primal, dual, beta
            done = primal - dual <= self.gap_tol
        if out_alpha is not alpha:
            out_alpha[:, active] = alpha
        gap_ok = out_p - out_d <= self.gap_tol
        return out_p, out_b, out_d, gap_ok, out_alpha

    # ------------------------------------------------------------ bounds for branch and bound

    def dual_point(self, support) -> np.ndarray:
        """The dual vector alpha in [0, 1]^n of one support's certified solve (shape (n,))."""
        S = np.sort(np.asarray(support, dtype=np.int64))[None, :]
        return self._solve_batch(S)[4][:, 0].copy()

    def separable_bound(self, alpha):
        """Pieces of the dual bound valid for **every** support: ``(const, u)``.

        For any alpha in [0, 1]^n and any support S, weak duality gives
        ``R(S, D) >= D_S(alpha) = bound_value(const, sum_{j in S} u_j)`` with
        ``const = sum_i alpha_i``, ``u_j = (A^T alpha)_j^2`` (A = signed rows) since
        ``||w_S||^2 = sum_{j in S} u_j``. ``bound_value`` decreases in its second argument, so
        a relaxation that over-estimates the sum (top picks of u) still gives a valid bound.

        Returns
        -------
        const : float
        u : ndarray of shape (p,)
        """
        alpha = np.asarray(alpha, dtype=np.float64)
        w = self.A.T @ alpha
        return float(alpha.sum()), w * w

    def bound_value(self, const, usum):
        """``(const - h(sqrt(usum))) / n`` (see the module docstring), vectorised over usum."""
        t = np.sqrt(np.maximum(np.asarray(usum, dtype=np.float64), 0.0))
        lam, r = self.lam, self.r
        h = np.where(t <= 2 * lam * r, t * t / (4 * lam), r * t - lam * r * r)
        return (const - h) / self.n
