"""The compiled kernels of dpbench.core.oracle.kernels against their numpy references.

Each kernel runs the algorithm of a numpy function (dpbench.core.oracle.ksupport, .relaxation)
loop for loop, so on random inputs -- ties, zeros, need >= L, need = 0, fixed features, two
groups, finite and infinite r, lam from 0.1 to 120 -- they agree to rounding (1e-9 relative,
far below any difference a wrong formula or index would make). Validity of the bounds against
brute force is tested through the session in test_ksupport.py / test_child_bounds.py, which
run these kernels by default; here the node relaxation with and without them is compared on
the same nodes.
"""

import numpy as np
import pytest

from dpbench.core.oracle import kernels as K
from dpbench.core.oracle import ksupport as ks
from dpbench.core.oracle import relaxation as rx
from dpbench.core.oracle import working_set as WS
from dpbench.core.score import RidgeScore

RTOL = 1e-9


def _vectors(rng, count=60):
    """Random vectors with exact zeros and ties (the water-filling's edge cases)."""
    for _ in range(count):
        L = int(rng.integers(1, 12))
        v = rng.normal(size=L)
        v[rng.random(L) < 0.25] = 0.0
        if L > 2 and rng.random() < 0.3:
            v[1] = -v[0]  # a tie in magnitude
        yield v, int(rng.integers(0, L + 2))


def test_round_margin_is_the_relaxations():
    assert K.ROUND_MARGIN == rx.ROUND_MARGIN


@pytest.mark.parametrize("upper", [WS.lambda_max_upper, WS.lambda_max_upper_numpy], ids=["compiled", "numpy"])
def test_lambda_max_upper_bounds_the_largest_eigenvalue(upper):
    """FISTA's step needs a value >= lambda_max: always, within POWER_MARGIN when power iteration
    converged, exact when it cannot have (start orthogonal to the top eigenvector, zero matrix)."""
    rng = np.random.default_rng(5)
    for w, n in [(1, 3), (2, 5), (7, 4), (30, 60), (100, 168)]:
        A = rng.normal(size=(n, w)) + 0.5 * rng.normal(size=(n, 1))  # correlated columns, as real data
        G = np.ascontiguousarray(A.T @ A)
        top = np.linalg.eigvalsh(G)[-1]
        assert top <= upper(G) <= WS.POWER_MARGIN * top * (1 + 1e-12)
    # the all-ones start is the eigenvector of 1, the top eigenvalue 3 is never seen: the
    # Cholesky check must refuse 1.05 and fall back to the exact value
    G = np.array([[2.0, -1.0], [-1.0, 2.0]])
    assert upper(G) == pytest.approx(3.0, rel=1e-12)
    G = np.array([[1.0, -1.0], [-1.0, 1.0]])  # G @ ones = 0
    assert upper(G) == pytest.approx(2.0, rel=1e-12)
    assert upper(np.zeros((3, 3))) == 0.0


def test_prox_and_norm_match_numpy():
    rng = np.random.default_rng(11)
    for v, need in _vectors(rng):
        for tau in (0.01, 0.3, 2.0):
            b, z = K.prox_sq_ksupport(v, need, tau)
            b0, z0 = ks.prox_sq_ksupport(v, need, tau)
            np.testing.assert_allclose(b, b0, rtol=RTOL, atol=1e-14)
            np.testing.assert_allclose(z, z0, rtol=RTOL, atol=1e-14)
        if need >= 1:
            assert K.sq_ksupport(v, need) == pytest.approx(ks.sq_ksupport(v, need), rel=RTOL, abs=1e-14)
    assert K.sq_ksupport(np.array([1.0, 1.0, 1.0]), 1) == pytest.approx(9.0)  # (l1 norm)^2 for k = 1
    assert K.sq_ksupport(np.zeros(3), 0) == 0.0 and K.sq_ksupport(np.ones(3), 0) == np.inf


def test_pattern_matches_numpy():
    rng = np.random.default_rng(12)
    for v, need in _vectors(rng):
        if need < 1:
            continue
        H, T, k = K._pattern(v, need)
        H0, T0, k0 = ks._pattern(v, need)
        assert k == k0
        np.testing.assert_array_equal(H, H0)
        np.testing.assert_array_equal(T, T0)


def _working_set(rng, w, n, groups, nfix, r, lam):
    """A random working-set problem: (G, c, yy, fpos, gptr, gidx, needs, gw, reference groups)."""
    X = rng.normal(size=(n, w))
    X[:, 1] = X[:, 0]  # duplicate columns: G singular, ties in the pattern
    y = X[:, :3] @ rng.normal(size=3) + 0.3 * rng.normal(size=n)
    G, c = X.T @ X, X.T @ y
    gw = np.full(w, -1, dtype=np.int64)
    free = np.arange(nfix, w)
    gw[free] = rng.integers(0, groups, size=free.size)
    needs = np.array([int(rng.integers(1, 4)) for _ in range(groups)], dtype=np.int64)
    order = np.argsort(gw, kind="stable")
    gidx = order[gw[order] >= 0]
    gptr = np.searchsorted(gw[gidx], np.arange(groups + 1)).astype(np.int64)
    return G, c, float(y @ y), np.arange(nfix, dtype=np.int64), gptr, gidx, needs, gw


@pytest.mark.parametrize("lam,r", [(0.1, np.inf), (1.0, 1.1), (10.0, 0.3), (120.0, np.inf), (10.0, 1.1)])
def test_working_set_solve_matches_numpy(lam, r):
    """Same counts, same tests: the compiled solve ends where the numpy one does (to rounding),
    from zero, from a random start and with a positive start multiplier."""
    rng = np.random.default_rng(int(lam * 10) + (0 if np.isinf(r) else int(r * 10)))
    for trial in range(8):
        w, n = int(rng.integers(6, 30)), int(rng.integers(8, 40))
        G, c, yy, fpos, gptr, gidx, needs, gw = _working_set(rng, w, n, 1 + trial % 2, trial % 3, r, lam)
        groups = [(None, int(m)) for m in needs]
        beta0 = np.where(rng.random(w) < 0.5, rng.normal(size=w), 0.0) if trial % 2 else np.zeros(w)
        mu0 = 0.5 * trial if np.isfinite(r) else 0.0
        b, mu, gap = K.solve_working_set(G, c, yy, lam, r, mu0, beta0.copy(), fpos, gptr, gidx, needs, 200, 10,
                                         1e-7, 8)
        b0, mu_0 = ks._solve_w_numpy(G, c, yy, lam, r, mu0, fpos, gw, groups, beta0.copy(), 200, 10, 1e-7)
        scale = max(1.0, float(np.abs(b0).max()))
        np.testing.assert_allclose(b, b0, rtol=1e-7, atol=1e-7 * scale)
        assert mu == pytest.approx(mu_0, rel=1e-6, abs=1e-9)
        gl = [(np.flatnonzero(gw == g), m) for g, (_, m) in enumerate(groups)]
        assert gap == pytest.approx(ks._w_gap(G, c, yy, lam + mu, fpos, gl, b), rel=1e-6, abs=1e-12)
        assert K.w_gap(G, c, yy, lam + mu, fpos, gptr, gidx, needs, b) == pytest.approx(gap, rel=1e-12, abs=1e-15)


def _dual_case(rng, p, groups):
    a = rng.normal(size=p)
    a[rng.random(p) < 0.1] = 0.0
    if p > 3:
        a[2] = -a[1]  # ties
    perm = rng.permutation(p)
    fixed = np.sort(perm[: int(rng.integers(0, 3))]).astype(np.int64)
    rest = perm[fixed.size:]
    cut = int(rng.integers(1, rest.size)) if groups == 2 and rest.size > 1 else rest.size
    gl = [(np.sort(rest[:cut]).astype(np.int64), int(rng.integers(0, 4)))]
    if groups == 2 and cut < rest.size:
        gl.append((np.sort(rest[cut:]).astype(np.int64), int(rng.integers(0, 3))))
    return a, fixed, gl


@pytest.mark.parametrize("lam,r", [(0.1, np.inf), (1.0, 1.1), (10.0, 0.3), (120.0, 1.1)])
def test_dual_bounds_match_numpy(lam, r):
    rng = np.random.default_rng(int(lam * 7))
    for trial in range(40):
        p = int(rng.integers(3, 30))
        a, fixed, gl = _dual_case(rng, p, 1 + trial % 2)
        ay, aa = float(rng.normal() * 3), float(rng.uniform(0.1, 5))
        ref_b, ref_per = rx.dual_bounds(a[None], ay, aa, lam, r, fixed, gl, per_feature=True)
        gptr = np.concatenate([[0], np.cumsum([i.size for i, _ in gl])]).astype(np.int64)
        gidx = np.concatenate([i for i, _ in gl]).astype(np.int64)
        needs = np.array([m for _, m in gl], dtype=np.int64)
        b, per, T2 = K.dual_bounds_1(a, ay, aa, lam, r, fixed, gptr, gidx, needs, True)
        assert b == pytest.approx(float(ref_b[0]), rel=RTOL, abs=1e-12)
        np.testing.assert_allclose(per, ref_per[0], rtol=RTOL, atol=1e-12)
        T = rx.dual_norm(a[None], fixed, gl)[0]
        assert np.sqrt(T2) == pytest.approx(T, rel=RTOL, abs=1e-12) or (np.isinf(T) and np.isinf(T2))
        v, t = K.best_scale(ay, aa, float(np.sqrt(T2)), lam, r)
        v0, t0 = rx._best_scale(ay, aa, T, lam, r)
        assert t == pytest.approx(float(t0), rel=RTOL, abs=1e-14)
    # no feasible support: every bound infinite
    b, per, T2 = K.dual_bounds_1(np.ones(4), 1.0, 1.0, 1.0, 1.1, np.zeros(0, dtype=np.int64),
                                 np.array([0, 2], dtype=np.int64), np.arange(2, dtype=np.int64),
                                 np.array([3], dtype=np.int64), True)
    assert b == np.inf and T2 == np.inf and np.all(per == np.inf)


@pytest.mark.parametrize("lam,r", [(0.1, 1.1), (1.0, np.inf), (10.0, 1.1), (120.0, 0.3)])
def test_node_relaxation_compiled_matches_numpy(lam, r):
    """relaxation_bound(method="prox") with the compiled kernels and with the numpy functions:
    the same bound, dual point, per-feature bounds and warm start, cold and warm-started."""
    rng = np.random.default_rng(int(lam) + 5)
    for trial in range(6):
        n, p = 25, 60
        X = rng.normal(size=(n, p))
        # a near-duplicate (an exact one makes some polish systems exactly singular, where the two
        # LAPACK builds, numpy's and scipy's, may disagree on failing: both valid, not comparable)
        X[:, 7] = X[:, 3] + 0.05 * rng.normal(size=n)
        y = X[:, [3, 10, 20]] @ rng.normal(size=3) + 0.5 * rng.normal(size=n)
        score = RidgeScore(X, y, lam=lam, r=r)
        fixed = np.arange(trial % 3, dtype=np.int64) * 5
        C = np.setdiff1d(np.arange(p), fixed)
        groups = [(C, 4 - fixed.size)]
        warm = None
        for _ in range(2):
            out = {}
            for compiled in (True, False):
                out[compiled] = rx.relaxation_bound(score, fixed, groups, per_feature=True, method="prox",
                                                    with_warm=True, warm=warm, width=8, compiled=compiled)
            (b1, al1, per1, (w1, a1)), (b0, al0, per0, (w0, a0)) = out[True], out[False]
            assert b1 == pytest.approx(b0, rel=1e-8)
            np.testing.assert_allclose(per1, per0, rtol=1e-8)
            np.testing.assert_allclose(al1, al0, rtol=1e-7, atol=1e-9)
            np.testing.assert_allclose(a1, score.X.T @ al1, rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(w1[0], w0[0])
            warm = w1
            fixed = np.append(fixed, C[trial]).astype(np.int64)  # a child node, warm-started from its parent
            C = np.setdiff1d(C, fixed)
            groups = [(C, 4 - fixed.size)]
            if groups[0][1] < 1:
                break
