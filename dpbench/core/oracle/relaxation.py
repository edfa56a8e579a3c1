"""Certified lower bounds for best-subset ridge from the dual of its k-support relaxation.

The problem (docs/methods/score.md): over the feasible supports S (``|S| = s``, a fixed-in set
``F ⊆ S``, fixed-out features excluded, optionally ``|S ∩ S0| = k``),

    R(S) = min_{supp beta ⊆ S, ||beta||_2 <= r}  ||y - X beta||^2 + lam ||beta||^2 .

The bound (weak duality, elementary)
------------------------------------
Take **any** ``alpha in R^n`` and put ``a = X^T alpha``. For a feasible S and any beta
supported on S with ``||beta|| <= r``:

* ``||u||^2 >= 2 alpha^T u - ||alpha||^2`` for every u (expand ``||u - alpha||^2 >= 0``),
  so ``||y - X beta||^2 >= 2 alpha^T y - ||alpha||^2 - 2 a_S^T beta_S``;
* ``a_S^T beta_S <= ||a_S|| ||beta|| <= T(a) ||beta||`` (Cauchy-Schwarz), with
  ``T(a)^2 = max_{S feasible} sum_{i in S} a_i^2`` (``sum_F a_i^2`` plus the largest
  ``a_i^2`` of each overlap group, a greedy choice);
* with ``t = ||beta|| in [0, r]``: ``lam t^2 - 2 T t >= -psi(T)``, where

      psi(T) = max_{0 <= t <= r} (2 T t - lam t^2) = T^2 / lam        if T <= lam r,
                                                   = 2 r T - lam r^2  otherwise.

Hence for every feasible S

    R(S) >= D(alpha) = 2 alpha^T y - ||alpha||^2 - psi(T(X^T alpha)).          (*)

``D`` is the Fenchel dual of the convex relaxation

    min_beta ||y - X beta||^2 + lam ||beta||_Z^2   s.t.  ||beta||_Z <= r,

where ``||.||_Z`` is the gauge of the convex hull of the feasible s-sparse unit vectors
(without fixed or overlap constraints, the k-support norm of Argyriou, Foygel & Srebro
2012, whose dual norm is the l2 norm of the s largest ``|a_i|``; its unit ball is the
convex hull of ``{||beta||_0 <= s, ||beta||_2 <= 1}``). The maximiser of D is the residual
``y - X beta*`` of the relaxation (strong duality: beta = 0 is strictly feasible). Unlike
the perspective bound with the plain l2 ball, D does not vanish as lam -> 0 when r is
finite (``psi(T) -> 2 r T``). Because (*) holds for every alpha, an *inexact* first-order
solution still yields a certified bound: :func:`relaxation_alpha` only chooses alpha, the
validity never depends on its accuracy. Scaling alpha by the best ``t >= 0`` (a concave
1-D problem, :func:`dual_bounds`) can only raise the bound.

Relation to the OA cuts of :mod:`dpbench.core.oracle.cuts`: with ``mu = max(0, T / r - lam)`` the binary
cut ``const - sum_i z_i a_i^2 / (lam + mu)``, ``const = 2 alpha^T y - ||alpha||^2 - mu r^2``,
has minimum exactly ``D(alpha)`` over the feasible binary z (:func:`dual_cut`). So D is the
best single OA cut at alpha, and the relaxation's alpha is a cut that no support's residual
provides: it can be added to the OA cut pool and used for screening unchanged.

Safe screening: forcing feature j into S replaces T by ``T_j`` (the greedy with j taken),
and ``D_j(alpha) = 2 alpha^T y - ||alpha||^2 - psi(T_j)`` bounds every feasible support
containing j (:func:`dual_bounds` with ``per_feature=True``).

Constraints are passed as ``(fixed, groups)``: ``fixed`` the fixed-in features and
``groups`` a list of ``(idx, need)`` (free features of a group and how many more of them
a support takes): one group without an overlap constraint, two with one (:func:`groups_of`),
or a branch-and-bound node ``(F, [(C, m)])``.
"""

from __future__ import annotations

import numpy as np

from dpbench.core.oracle.blas import one_blas_thread
from dpbench.core.oracle.children import tie_order_numpy
from dpbench.core.oracle.working_set import product_on
from dpbench.core.score import solve_blocks

__all__ = ["child_bounds", "dual_bounds", "dual_cut", "dual_norm", "groups_of", "psi", "relaxation_alpha", "relaxation_bound"]

#: Relative rounding margin subtracted from every bound: the terms of (*) are sums of
#: O(p) float64 products, whose relative error is far below 1e-12 of their magnitudes.
ROUND_MARGIN = 1e-11


def psi(T, lam, r):
    """``max_{0 <= t <= r} (2 T t - lam t^2)`` elementwise (module docstring).

    Parameters
    ----------
    T : ndarray (any shape), float64 >= 0
    lam : float >= 0
    r : float > 0 (``np.inf`` allowed)

    Returns
    -------
    ndarray, same shape as T (``inf`` when lam = 0, r = inf and T > 0).
    """
    T = np.asarray(T, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = np.where(T > 0, T * T / lam, 0.0) if lam > 0 else np.where(T > 0, np.inf, 0.0)
        if np.isfinite(r):
            outer = 2.0 * r * T - lam * r * r
            return np.where(T <= lam * r, inner, outer)
    return inner


def groups_of(cons):
    """``(fixed, groups)`` of an oracle constraint set.

    Parameters
    ----------
    cons : object with attributes ``p, s, fixed_in, fixed_out, group, k``
        E.g. :class:`dpbench.core.oracle.cuts.ConstraintSet` (read only; no import of it here).

    Returns
    -------
    fixed : int64 array
    groups : list of (int64 array, int)
        Free features of each group and how many more of them a feasible support takes.
    """
    free = np.ones(cons.p, dtype=bool)
    fixed = np.asarray(cons.fixed_in, dtype=np.int64)
    free[fixed] = False
    free[np.asarray(cons.fixed_out, dtype=np.int64)] = False
    if cons.group is None:
        return fixed, [(np.flatnonzero(free), cons.s - fixed.size)]
    out = []
    for gv, total in ((1, cons.k), (0, cons.s - cons.k)):
        inside = np.asarray(cons.group) == gv
        out.append((np.flatnonzero(free & inside), total - int(inside[fixed].sum())))
    return fixed, out


def _top(v, need):
    """Sum of the ``need`` largest entries of each row of v (B, L) and the need-th largest."""
    B, L = v.shape
    if need <= 0:
        return np.zeros(B), np.full(B, np.inf)
    part = np.partition(v, L - need, axis=1)[:, L - need:] if need < L else v
    return part.sum(axis=1), part.min(axis=1)


def dual_norm(a, fixed, groups):
    """``T(a) = max_{S feasible} ||a_S||`` for each row of a (B, p): the greedy of the module docstring.

    Returns
    -------
    ndarray (B,), ``inf`` when no support is feasible.
    """
    a2 = np.atleast_2d(np.asarray(a, dtype=np.float64)) ** 2
    T2 = a2[:, np.asarray(fixed, dtype=np.int64)].sum(axis=1)
    for idx, need in groups:
        if need < 0 or need > idx.size:
            return np.full(a2.shape[0], np.inf)
        T2 = T2 + _top(a2[:, idx], need)[0]
    return np.sqrt(T2)


def _best_scale(b, q, T, lam, r):
    """``max_{t >= 0} 2 t b - t^2 q - psi(t T)`` and its argmax, elementwise (concave in t).

    The maximiser is one of: the stationary point of the inner branch, of the outer branch,
    or the kink ``t T = lam r``; each candidate's value is itself a valid bound, so taking
    the largest is valid whatever rounding does.
    """
    b, q, T = np.broadcast_arrays(np.asarray(b, float), np.asarray(q, float), np.asarray(T, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        cands = [np.ones_like(T)]
        if lam > 0:
            cands.append(b / (q + T * T / lam))
        if np.isfinite(r):
            cands.append((b - r * T) / q)
            cands.append(np.where(T > 0, lam * r / T, 0.0))
    best = np.full(T.shape, -np.inf)
    arg = np.zeros(T.shape)
    for t in cands:
        t = np.where(np.isfinite(t) & (t > 0), t, 0.0)
        with np.errstate(invalid="ignore"):
            val = 2.0 * t * b - t * t * q - psi(t * T, lam, r)
        val = np.where(np.isnan(val), -np.inf, val)
        better = val > best
        best = np.where(better, val, best)
        arg = np.where(better, t, arg)
    return best, arg


def _bound_at(T2, ay, aa, lam, r, scale=True):
    """The bound (*) (scaled by its best t when ``scale``) for given ``T^2``, minus the rounding
    margin, floored at 0 (R >= 0 always); elementwise."""
    T = np.sqrt(np.maximum(T2, 0.0))
    if scale:
        val, _ = _best_scale(ay, aa, T, lam, r)
    else:
        val = 2.0 * ay - aa - psi(T, lam, r)
    mag = np.abs(2.0 * ay) + aa + psi(T, lam, r)
    out = val - ROUND_MARGIN * np.where(np.isfinite(mag), mag, 0.0)
    return np.maximum(out, 0.0)


def child_bounds(a, ay, aa, lam, r, fixed, C, m, key=None):
    """Bounds (*) of all partition children of a node from one dual point, in closed form.

    A node (F = ``fixed`` in, m more from C) is partitioned, with C sorted by decreasing
    ``a_j^2`` into Cs (with ``key``, each tie by decreasing key:
    :mod:`~dpbench.core.oracle.children`), into the children i = 0, 1, ..: ``Cs[i]`` in, ``Cs[:i]`` out, the other
    m - 1 from ``Cs[i+1:]``. Every support of child i has
    ``||a_S||^2 <= sum_F a^2 + a_{Cs[i]}^2 + (the m - 1 largest a^2 of Cs[i+1:])
    = sum_F a^2 + sum_{k=i}^{i+m-1} a_{Cs[k]}^2``, so (*) with that T bounds the whole child
    without a solve (the "fixing changes T(a) in closed form" of the module docstring). T is
    nonincreasing in i, so the bounds are nondecreasing: the children past the first one that
    reaches the incumbent are all closed. ``a`` may come from any dual point (the node's own
    relaxation or its parent's): any alpha gives a valid bound.

    Parameters
    ----------
    a : ndarray (p,) float64
        ``X^T alpha``.
    ay, aa : float
        ``alpha^T y`` and ``||alpha||^2``.
    lam, r : float
        Ridge penalty (> 0) and l2 bound (inf allowed).
    fixed : int array
        F.
    C : int array
        Candidates of the node (|C| >= m >= 1).
    m : int
    key : ndarray (p,) float64 or None
        The order within a tie of ``a^2`` (largest first;
        :func:`~dpbench.core.oracle.children.tie_order`), the members of which then count with
        the tie's largest ``a^2``. None: exact ``a^2`` order, ties by position in C.

    Returns
    -------
    Cs : int64 array (|C|,)
        C in decreasing ``a^2`` (stable: ties by position in C).
    bounds : ndarray (|C| - m + 1,)
        ``bounds[i] <= R(S)`` for every support S of child i, nondecreasing in i.
    """
    a2 = np.asarray(a, dtype=np.float64) ** 2
    C = np.asarray(C, dtype=np.int64)
    if key is None:
        Cs = C[np.argsort(-a2[C], kind="stable")]
        w = a2[Cs]
    else:
        order, w = tie_order_numpy(a2[C], C, np.asarray(key, dtype=np.float64))
        Cs = C[order]
    L = w.size - m + 1
    if L <= 0:
        return Cs, np.zeros(0)
    # Window sums added term by term (m is small): no long cumulative sums, whose rounding
    # (O(|C|) ulps of the total) the margin of _bound_at would not cover.
    T2 = np.full(L, float(a2[np.asarray(fixed, dtype=np.int64)].sum()))
    for k in range(m):
        T2 = T2 + w[k:k + L]
    out = _bound_at(T2, float(ay), float(aa), lam, r)
    # Nondecreasing exactly (rounding could break it by ulps; a search stops at the first
    # closed child): a suffix minimum only lowers bounds, so they stay valid.
    return Cs, np.minimum.accumulate(out[::-1])[::-1]


def dual_bounds(a, ay, aa, lam, r, fixed, groups, *, per_feature=False, scale=True):
    """The bound (*) of the module docstring for a batch of dual points.

    Parameters
    ----------
    a : ndarray (B, p) float64
        ``X^T alpha_b`` for B dual points alpha_b (any alpha is allowed).
    ay, aa : ndarray (B,) float64
        ``alpha_b^T y`` and ``||alpha_b||^2``.
    lam : float >= 0
        Ridge penalty.
    r : float > 0 or inf
        l2 bound on the coefficients.
    fixed : int array
        Fixed-in features.
    groups : list of (int array, int)
        Free features of each group and how many a support takes from it (:func:`groups_of`).
    per_feature : bool
        Also return, for every free feature j, the bound over the supports that contain j.
    scale : bool
        Maximise over the scaling ``t alpha_b``, ``t >= 0`` (never lowers the bound).

    Returns
    -------
    bound : ndarray (B,)
        ``<= min R(S)`` over the feasible supports (``-inf`` never; 0 is the trivial floor,
        and ``inf`` when no support is feasible).
    per : ndarray (B, p), only with ``per_feature``
        ``per[b, j] <= min R(S)`` over the feasible S containing j; ``inf`` where j cannot
        be in a feasible support (fixed out, or its group is full); fixed-in features get
        ``bound``.

    Notes
    -----
    O(B p) after the products ``X^T alpha``; validity proof in the module docstring
    (Cauchy-Schwarz on the support plus ``||u||^2 >= 2 alpha^T u - ||alpha||^2``).
    """
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    B, p = a.shape
    ay = np.broadcast_to(np.asarray(ay, dtype=np.float64), (B,))
    aa = np.broadcast_to(np.asarray(aa, dtype=np.float64), (B,))
    a2 = a * a
    fixed = np.asarray(fixed, dtype=np.int64)
    T2 = a2[:, fixed].sum(axis=1)
    tops = []
    for idx, need in groups:
        if need < 0 or need > idx.size:
            inf = np.full(B, np.inf)
            return (inf, np.full((B, p), np.inf)) if per_feature else inf
        tops.append(_top(a2[:, idx], need))
    T2 = T2 + sum(t for t, _ in tops)

    def _finish(T2x, by, qx):
        return _bound_at(T2x, by, qx, lam, r, scale)

    bound = _finish(T2, ay, aa)
    if not per_feature:
        return bound
    per = np.full((B, p), np.inf)
    per[:, fixed] = bound[:, None]
    for (idx, need), (tsum, vneed) in zip(groups, tops):
        if need < 1 or not idx.size:
            continue  # no free feature of this group can be added
        t1 = _top(a2[:, idx], need - 1)[0] if need > 1 else np.zeros(B)
        # best need-subset containing j: (need-1) largest without j plus a_j^2, which is
        # t_{need-1} + min(a_j^2, v_need) (j of rank < need: the top need; else t_{need-1} + a_j^2)
        best_j = t1[:, None] + np.minimum(a2[:, idx], vneed[:, None])
        T2j = (T2 - tsum)[:, None] + best_j
        per[:, idx] = _finish(T2j, ay[:, None], aa[:, None])
    return bound, per


def dual_cut(a, ay, aa, lam, r, T):
    """The binary OA cut whose minimum over the feasible supports is the bound at alpha.

    Parameters
    ----------
    a : ndarray (p,)
        ``X^T alpha`` (alpha already scaled).
    ay, aa : float
        ``alpha^T y``, ``||alpha||^2``.
    lam : float > 0
    r : float > 0 or inf
    T : float
        ``T(a)`` under the constraints the cut is tuned for (any T gives a valid cut).

    Returns
    -------
    const : float
    weights : ndarray (p,)
        ``R(S) >= const - sum_{i in S} weights_i`` for every support S, with
        ``mu = max(0, T / r - lam)``, ``const = 2 ay - aa - mu r^2``,
        ``weights = a^2 / (lam + mu)`` (dual of the l2-constrained ridge on S with
        multiplier mu: module docstring of :mod:`dpbench.core.oracle.cuts`).
    """
    mu = max(0.0, T / r - lam) if np.isfinite(r) else 0.0
    r2 = r * r if np.isfinite(r) else 0.0
    const = 2.0 * ay - aa - mu * r2
    return float(const - ROUND_MARGIN * (abs(2.0 * ay) + aa + mu * r2)), a * a / (lam + mu)


def _project_capped(v, need):
    """Euclidean projection of v onto ``{z in [0, 1]^L : sum z = need}``.

    ``z = clip(v - tau, 0, 1)`` with ``f(tau) = sum clip(v - tau, 0, 1) = need``; f is
    piecewise linear and nonincreasing with breakpoints at ``v_i`` and ``v_i - 1``, so tau is
    found exactly by evaluating f at the sorted breakpoints and interpolating (O(L^2) numpy,
    L the working-set size of one group).
    """
    if need <= 0:
        return np.zeros_like(v)
    if need >= v.size:
        return np.ones_like(v)
    b = np.unique(np.concatenate([v, v - 1.0]))
    f = np.clip(v[None, :] - b[:, None], 0.0, 1.0).sum(axis=1)  # nonincreasing in b
    k = int(np.searchsorted(-f, -need, side="right")) - 1  # last breakpoint with f >= need
    k = min(max(k, 0), b.size - 2)
    f0, f1 = f[k], f[k + 1]
    tau = b[k] + (f0 - need) * (b[k + 1] - b[k]) / (f0 - f1) if f0 > f1 else b[k]
    return np.clip(v - tau, 0.0, 1.0)


def _relaxed_value(GW, cW, yy, lam, r, z):
    """F(z) = min_gamma ||y - X_W diag(sqrt z) gamma||^2 + lam ||gamma||^2, ||gamma|| <= r,
    and the coefficients ``beta = sqrt(z) gamma`` (the relaxation at a fractional z)."""
    d = np.sqrt(z)
    G = GW * d[:, None] * d[None, :]
    G.flat[:: G.shape[0] + 1] += lam  # the diagonal (diag_indices_from cost 6 % of a node relaxation)
    val, gamma = solve_blocks(G[None], (cW * d)[None], yy, r)
    return float(val[0]), d * gamma[0]


def relaxation_alpha(score, fixed, groups, *, start=(), width=40, rounds=4, iters=60):
    """A dual point alpha close to the maximiser of D (module docstring), by active sets.

    Projected gradient on the relaxed indicator z over ``{z in [0, 1], group sums fixed}``
    restricted to a working set W (as L0BnB restricts its first-order node solves to active
    sets), with ``F(z) = min_beta ||y - X_W beta||^2 + lam sum beta_i^2 / z_i`` subject to
    ``sum beta_i^2 / z_i <= r^2`` (convex in z; gradient ``-(x_i^T alpha)^2 / (lam + mu)``
    by Danskin, with alpha the residual and mu the multiplier), Armijo backtracking. W starts
    from the fixed features, ``start`` and the ``width`` largest single-feature gains per
    group, and grows by the features outside W whose ``(x_j^T alpha)^2`` would enter the
    greedy of T (KKT violations). Work is bounded by counts (``rounds``, ``iters``): the
    result is deterministic and, since any alpha gives a valid bound, accuracy only affects
    strength.

    Parameters
    ----------
    score : RidgeScore
        Shared score (lam > 0).
    fixed, groups : see :func:`dual_bounds`
    start : int array
        Features to include in W from the start (e.g. the incumbent support).
    width : int
        Initial working-set features per group beyond ``need``.

    Returns
    -------
    alpha : ndarray (n,)
        The residual ``y - X_W beta`` of the last relaxed solution.
    """
    # The loop below makes hundreds of small dense solves (|W| x |W|, W the working set): with
    # a multithreaded BLAS on a busy machine each one pays thread hand-offs that cost 10-100x
    # the arithmetic (measured: 14 s of 20 s in eigh at load 13 on 2 cores), so one thread.
    with one_blas_thread():
        return _relaxation_alpha(score, fixed, groups, start, width, rounds, iters)


def _relaxation_alpha(score, fixed, groups, start, width, rounds, iters):
    """The body of :func:`relaxation_alpha` (same arguments)."""
    lam, r = score.lam, score.r
    fixed = np.asarray(fixed, dtype=np.int64)
    gain = score.c ** 2 / (score.col_sq + lam)
    inW = np.zeros(score.p, dtype=bool)
    inW[fixed] = True
    inW[np.asarray(start, dtype=np.int64)] = True
    allowed = np.zeros(score.p, dtype=bool)
    allowed[fixed] = True
    for idx, need in groups:
        allowed[idx] = True
        top = idx[np.argsort(-gain[idx], kind="stable")[: need + width]]
        inW[top] = True
    inW &= allowed
    z_prev = {}
    alpha = score.y.copy()
    for _ in range(rounds):
        W = np.flatnonzero(inW)
        GW = score.gram(W, W)
        cW = score.c[W]
        pos = {int(j): i for i, j in enumerate(W.tolist())}
        gl = [(np.array([pos[int(j)] for j in idx if inW[j]], dtype=np.int64), need) for idx, need in groups]
        fpos = np.array([pos[int(j)] for j in fixed.tolist()], dtype=np.int64)
        z = np.zeros(W.size)
        z[fpos] = 1.0
        for gi, need in gl:
            warm = np.array([z_prev.get(int(W[i]), 0.0) for i in gi])
            z[gi] = _project_capped(warm + need / max(gi.size, 1), need) if gi.size else 0.0
        val, beta = _relaxed_value(GW, cW, score.yy, lam, r, z)
        step = 1.0
        for _ in range(iters):
            res_a = cW - GW @ beta  # X_W^T alpha
            nb = float(np.sum(np.divide(beta ** 2, z, out=np.zeros_like(z), where=z > 0)))
            mu = 0.0
            if np.isfinite(r) and nb >= r * r * (1 - 1e-8):
                # multiplier of the weighted l2 constraint from the stationarity beta_i = z_i a_i / (lam + mu)
                on = z > 1e-12
                num = float(np.sum(z[on] * res_a[on] ** 2))
                mu = max(0.0, np.sqrt(num) / r - lam) if num > 0 else 0.0
            grad = -res_a ** 2 / (lam + mu)
            scale = max(float(np.abs(grad).max()), 1e-300)
            moved = False
            for _ls in range(20):
                zn = z.copy()
                for gi, need in gl:
                    if gi.size:
                        zn[gi] = _project_capped(z[gi] - step * grad[gi] / scale, need)
                vn, bn = _relaxed_value(GW, cW, score.yy, lam, r, zn)
                if vn <= val - 1e-4 * float(grad @ (z - zn)):
                    # converged when the accepted step barely moves z (a count-free, deterministic test)
                    moved = float(np.abs(zn - z).max()) > 1e-7
                    z, val, beta = zn, vn, bn
                    step *= 2.0
                    break
                step *= 0.5
            if not moved or step < 1e-12:
                break
        z_prev = {int(W[i]): float(z[i]) for i in range(W.size)}
        alpha = score.y - score.X[:, W] @ beta
        a = score.X.T @ alpha
        a2 = a * a
        grow = np.zeros(score.p, dtype=bool)
        for idx, need in groups:
            if need < 1:
                continue
            inside = idx[inW[idx]]
            thr = np.partition(a2[inside], inside.size - need)[inside.size - need] if inside.size >= need else 0.0
            out = idx[~inW[idx]]
            viol = out[a2[out] > thr]
            grow[viol[np.argsort(-a2[viol], kind="stable")[:max(20, 4 * need)]]] = True
        if not grow.any():
            break
        inW |= grow
    return alpha


def relaxation_bound(score, fixed, groups, *, alphas=(), start=(), per_feature=False, method="pg", warm=None,
                     with_warm=False, **kw):
    """Best bound (*) over the relaxation's alpha and any extra dual points.

    Parameters
    ----------
    score : RidgeScore
    fixed, groups : see :func:`dual_bounds`
    alphas : sequence of ndarray (n,)
        Extra dual points (e.g. a parent node's alpha: warm start). Always valid.
    start : int array
        Passed to :func:`relaxation_alpha`.
    per_feature : bool
        Also return the per-feature bounds of :func:`dual_bounds` (max over the points).
    method : {"pg", "prox"}
        How the relaxation's own alpha is chosen: ``"pg"`` the projected gradient on the
        relaxed indicators (:func:`relaxation_alpha`), ``"prox"`` the active-set FISTA with the
        exact k-support prox (:func:`dpbench.core.oracle.ksupport.ksupport_alpha`, about ten times
        cheaper per node). Both are valid for any accuracy; they differ in cost and strength.
    warm : (int array, ndarray, float) or None
        ``"prox"`` only: a previous ``(W, beta_W, mu)`` (e.g. the parent node's) to start from.
    with_warm : bool
        Also return, last, ``(warm, a)``: the ``(W, beta_W, mu)`` of this solve (``"prox"``;
        None for ``"pg"``) and ``X^T alpha`` (p,) of the returned alpha (saves a product).
    **kw
        Passed to :func:`relaxation_alpha` or :func:`~dpbench.core.oracle.ksupport.ksupport_alpha`.

    Returns
    -------
    bound : float
    alpha : ndarray (n,)
        The dual point achieving the bound, scaled by its best t (reuse it as a warm start
        or turn it into an OA cut with :func:`dual_cut`).
    per : ndarray (p,), only with ``per_feature``
    (warm, a) : only with ``with_warm``
    """
    if method == "prox":
        # One BLAS thread for the whole node, the O(n p) products included: on the shared 2-core
        # machine their thread hand-offs cost more than the arithmetic (see relaxation_alpha).
        with one_blas_thread():
            return _relaxation_bound(score, fixed, groups, alphas, start, per_feature, method, warm, with_warm, kw)
    return _relaxation_bound(score, fixed, groups, alphas, start, per_feature, method, warm, with_warm, kw)


def _relaxation_bound(score, fixed, groups, alphas, start, per_feature, method, warm, with_warm, kw):
    """The body of :func:`relaxation_bound` (same arguments)."""
    new_warm = None
    if method == "prox":
        from dpbench.core.oracle.ksupport import group_csr, ksupport_alpha

        if kw.get("compiled", True) and not len(alphas):
            csr = group_csr(groups)  # once for the solve's rounds and the final bounds
            own, new_warm, a = ksupport_alpha(score, fixed, groups, start=start, warm=warm, with_product=True, csr=csr,
                                              **kw)
            return _prox_bound_compiled(score, fixed, csr, own[0], a, per_feature, new_warm, with_warm,
                                        kw.get("close_at"))
        own, new_warm = ksupport_alpha(score, fixed, groups, start=start, warm=warm, **kw)
    elif method == "pg":
        own = [relaxation_alpha(score, fixed, groups, start=start, **kw)]
    else:
        raise ValueError(f"relaxation_bound: unknown method {method!r} (use 'pg' or 'prox')")
    A = own + [np.asarray(x, float) for x in alphas]
    A = np.stack(A, axis=1)  # (n, B)
    a = (score.X.T @ A).T
    ay = score.y @ A
    aa = np.einsum("nb,nb->b", A, A)
    out = dual_bounds(a, ay, aa, score.lam, score.r, fixed, groups, per_feature=per_feature)
    b = out[0] if per_feature else out
    i = int(np.argmax(b))
    # the scaled point (for warm starts / cuts)
    _, t = _best_scale(ay[i], aa[i], dual_norm(a[i][None], fixed, groups)[0], score.lam, score.r)
    alpha = A[:, i] * float(t)
    ret = (float(b[i]), alpha) + ((out[1].max(axis=0),) if per_feature else ())
    return ret + ((new_warm, a[i] * float(t)),) if with_warm else ret


def _prox_bound_compiled(score, fixed, csr, alpha, a, per_feature, new_warm, with_warm, close_at=None):
    """The tail of :func:`_relaxation_bound` for one dual point alpha (and ``a = X^T alpha`` when
    already known, else None), with the compiled bounds (:func:`dpbench.core.oracle.kernels.dual_bounds_1`:
    the same formula (*) and rounding margin as :func:`dual_bounds` and :func:`_best_scale`,
    without numpy's per-call overhead on the survivors' vector); ``csr`` is the groups'
    :func:`~dpbench.core.oracle.ksupport.group_csr`. With ``close_at`` (the caller's bar), a
    bound at or above it gives every feature of the node that bound as its per-feature bound
    (valid, and never read: the caller closes the node)."""
    from dpbench.core.oracle.kernels import best_scale, dual_bounds_1

    fixed = np.asarray(fixed, dtype=np.int64)
    if a is None:  # no KKT check ran (the working set held every feature): the node's own product
        a = product_on(score, alpha, np.union1d(fixed, csr[1]))
    ay, aa = float(score.y @ alpha), float(alpha @ alpha)
    # a node whose bound reaches close_at is closed by its caller, which then never reads per
    b, per, T2 = dual_bounds_1(a, ay, aa, float(score.lam), float(score.r), fixed, *csr, bool(per_feature),
                               np.inf if close_at is None else float(close_at))
    # the scaled point (for warm starts / cuts), as _relaxation_bound scales it
    t = best_scale(ay, aa, float(np.sqrt(T2)), float(score.lam), float(score.r))[1]
    ret = (float(b), alpha * t) + ((per,) if per_feature else ())
    return ret + ((new_warm, a * t),) if with_warm else ret
