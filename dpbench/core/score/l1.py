"""The l1-bounded least-squares score of Roy & Tewari's released code, batched and exact.

    R_1(S, D) = min_{beta in R^s, ||beta||_1 <= B}  ||y - X_S beta||_2^2

(roysaptaumich/DP-BSS, ``DP_BSS.py``, ``regOLS_pred_and_pi_n``, which calls cvxpy once per
proposal). Here every support of a batch is solved exactly from its Gram block by the
homotopy (LARS-lasso) path of Osborne, Presnell & Turlach (2000) and Efron et al. (2004):
a handful of s x s linear solves per support, all supports of a batch in one numpy call.
Its sensitivity under replace-one is :func:`dpbench.core.privacy.sensitivity.l1_sensitivity`.
"""

from __future__ import annotations

import numpy as np

# Events closer than this (relative) to the current penalty are the event just processed.
_REL_TOL = 1e-10


def solve_l1_blocks(G, c, yy, bound, *, max_steps: int | None = None):
    """Score many supports under the l1 bound: ``min_{||beta||_1 <= B} b^T G b - 2 c^T b + yy``.

    Parameters
    ----------
    G : ndarray of shape (K, s, s), float64
        ``X_S^T X_S`` of each of K supports (positive definite for the exact path; a
        singular block falls back to :func:`_projected_gradient`).
    c : ndarray of shape (K, s), float64
        ``X_S^T y``.
    yy : float
        ``y^T y``.
    bound : float
        The l1 bound B > 0.
    max_steps : int, optional
        Path segments per support before the fallback (default ``8 s + 8``).

    Returns
    -------
    scores : ndarray of shape (K,)
        ``R_1(S, D)``; the residual sum of squares at the constrained minimiser.
    beta : ndarray of shape (K, s)
        The minimisers.

    Notes
    -----
    The constrained problem equals the Lasso ``min 1/2 b^T G b - c^T b + lam ||b||_1`` at the
    ``lam >= 0`` where ``||b(lam)||_1 = B`` (``lam = 0``: the least-squares solution is
    feasible). The Lasso solution is piecewise linear in lam: on a segment with active set A
    and signs sigma, ``b_A(lam) = G_AA^{-1} (c_A - lam sigma_A)``. Starting from
    ``lam = max_j |c_j|`` (b = 0), each step moves lam down to the next event -- an inactive
    j whose correlation ``|c_j - G_jA b_A|`` reaches lam joins, an active coefficient that
    reaches 0 leaves -- unless ``||b(lam)||_1 = sigma^T b_A(lam)``, which grows linearly as lam
    decreases, reaches B first. Inactive coordinates are carried as identity rows so that every
    support of the batch solves one s x s system per step.
    """
    G = np.asarray(G, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    K, s = c.shape
    bound = float(bound)
    if not bound > 0:
        raise ValueError(f"l1 bound must be positive, got {bound}")
    beta = np.zeros((K, s))
    if K == 0:
        return np.empty(0), beta
    max_steps = 8 * s + 8 if max_steps is None else max_steps
    # Fast path: where the least-squares solution lies in the ball it is the answer (in an
    # MCMC over supports most proposals are such poor fits); only the others follow the path.
    ls, ls_ok = _batched_solve(G, c[:, :, None])
    ls = ls[..., 0]
    inside = ls_ok & (np.abs(ls).sum(axis=1) <= bound)
    beta[inside] = ls[inside]
    active = np.zeros((K, s), dtype=bool)
    sign = np.zeros((K, s))
    lam = np.abs(c).max(axis=1)
    open_ = (lam > 0) & ~inside  # c = 0: beta = 0 is optimal
    j0 = np.abs(c).argmax(axis=1)
    rows = np.arange(K)
    active[rows, j0] = True
    sign[rows, j0] = np.sign(c[rows, j0])
    eye = np.eye(s, dtype=bool)
    for _ in range(max_steps):
        idx = np.flatnonzero(open_)
        if idx.size == 0:
            break
        Gi, ci, A, sg, lm = G[idx], c[idx], active[idx], sign[idx], lam[idx]
        # G_AA on the active block, identity elsewhere: one batched solve for all supports
        M = np.where(A[:, :, None] & A[:, None, :], Gi, 0.0) + (eye & ~A[:, :, None])
        rhs = np.stack([np.where(A, ci, 0.0), sg], axis=2)
        sol, ok = _batched_solve(M, rhs)
        b, d = sol[..., 0], sol[..., 1]
        sb, sd = (sg * b).sum(axis=1), (sg * d).sum(axis=1)
        ok &= sd > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            lam_bound = (sb - bound) / sd
            ceiling = lm * (1 - _REL_TOL)
            leave = np.where(A & (d != 0), b / d, -np.inf)
            leave = np.where((leave > 0) & (leave < ceiling[:, None]), leave, -np.inf)
            u = ci - np.einsum("kij,kj->ki", Gi, b)
            v = np.einsum("kij,kj->ki", Gi, d)
            up = u / (1 - v)       # c_j - G_jA b_A(lam) = +lam
            down = -u / (1 + v)    # ... = -lam
            up = np.where(~A & (up > 0) & (up < ceiling[:, None]), up, -np.inf)
            down = np.where(~A & (down > 0) & (down < ceiling[:, None]), down, -np.inf)
        join = np.maximum(up, down)
        lam_next = np.maximum(np.maximum(leave.max(axis=1), join.max(axis=1)), 0.0)
        stop = ok & ((lam_bound >= lam_next) | (lam_next <= 0))
        final = np.maximum(lam_bound, 0.0)
        done_idx = idx[stop]
        beta[done_idx] = b[stop] - final[stop][:, None] * d[stop]
        open_[done_idx] = False
        bad = idx[~ok]
        open_[bad] = False
        go = ok & ~stop
        if np.any(go):
            g = np.flatnonzero(go)
            k = idx[g]
            lam[k] = lam_next[g]
            by_leave = leave[g].max(axis=1) >= join[g].max(axis=1)
            jl = leave[g].argmax(axis=1)
            jj = join[g].argmax(axis=1)
            kl, kj = k[by_leave], k[~by_leave]
            active[kl, jl[by_leave]] = False
            sign[kl, jl[by_leave]] = 0.0
            gj = g[~by_leave]
            jj = jj[~by_leave]
            active[kj, jj] = True
            sign[kj, jj] = np.where(up[gj, jj] >= down[gj, jj], 1.0, -1.0)
        if bad.size:
            beta[bad] = np.nan
    unfinished = np.flatnonzero(open_ | np.isnan(beta).any(axis=1))
    if unfinished.size:
        beta[unfinished] = _projected_gradient(G[unfinished], c[unfinished], bound)
    scores = yy - 2 * np.einsum("ki,ki->k", c, beta) + np.einsum("ki,kij,kj->k", beta, G, beta)
    return np.maximum(scores, 0.0), beta


def _batched_solve(M, rhs):
    """Solve each system; systems that are singular are flagged (ok False) instead of raising."""
    try:
        return np.linalg.solve(M, rhs), np.ones(len(M), dtype=bool)
    except np.linalg.LinAlgError:
        out = np.zeros_like(rhs)
        ok = np.ones(len(M), dtype=bool)
        for i in range(len(M)):
            try:
                out[i] = np.linalg.solve(M[i], rhs[i])
            except np.linalg.LinAlgError:
                ok[i] = False
        return out, ok


def project_l1_ball(v, bound):
    """Euclidean projection of each row of ``v`` (shape (K, s)) onto ``{||x||_1 <= bound}``.

    Duchi, Shalev-Shwartz, Singer & Chandra (2008), Figure 1: sort |v|, find the threshold
    theta, soft-threshold.
    """
    v = np.asarray(v, dtype=np.float64)
    a = np.abs(v)
    inside = a.sum(axis=1) <= bound
    u = -np.sort(-a, axis=1)
    css = np.cumsum(u, axis=1) - bound
    k = np.arange(1, v.shape[1] + 1)
    rho = (u - css / k > 0).sum(axis=1)
    theta = css[np.arange(len(v)), np.maximum(rho, 1) - 1] / np.maximum(rho, 1)
    out = np.sign(v) * np.maximum(a - theta[:, None], 0.0)
    return np.where(inside[:, None], v, out)


def _projected_gradient(G, c, bound, iterations: int = 20000):
    """Accelerated projected gradient (FISTA) for supports whose Gram block is singular.

    Converges for any positive semidefinite G (Beck & Teboulle 2009); the step is
    ``1 / (2 lambda_max(G))``. Used only where the exact path cannot run (collinear columns
    or n < s), so its cost does not matter for the MCMC inner loop.
    """
    L = 2 * np.maximum(np.linalg.eigvalsh(G)[:, -1], 1e-300)
    x = np.zeros_like(c)
    z, t = x.copy(), 1.0
    for _ in range(iterations):
        grad = 2 * (np.einsum("kij,kj->ki", G, z) - c)
        x_new = project_l1_ball(z - grad / L[:, None], bound)
        t_new = (1 + np.sqrt(1 + 4 * t * t)) / 2
        z = x_new + ((t - 1) / t_new) * (x_new - x)
        if np.max(np.abs(x_new - x)) < 1e-15:
            x = x_new
            break
        x, t = x_new, t_new
    return x
