"""The shared score R(S, D) (docs/methods/score.md) against independent exact solves, and Delta.

Reference solution per support, computed with scipy only (no code shared with
dpbench.core.score): the unconstrained minimiser is the minimum-norm least-squares solution of
the ridge-augmented system ``[X_S; sqrt(lam) I] beta = [y; 0]`` (scipy.linalg.lstsq); if its
norm exceeds r the constraint is active and ``beta = (G + mu I)^{-1} c`` with mu the root of
``||beta(mu)|| = r``, bracketed and found by scipy.optimize.brentq to machine precision.
Every returned minimiser is also checked against the KKT conditions, which certify
optimality of this convex problem exactly.
"""

import math

import numpy as np
import pytest
import scipy.linalg
import scipy.optimize

from dpbench.core.errors import UserInputError
from dpbench.core.score import RidgeScore, solve_blocks
from dpbench.core.privacy.sensitivity import sensitivity
from dpbench.testing import all_supports

RTOL = 1e-9  # relative agreement demanded between the batched and the reference score


def reference_solve(X, y, support, lam, r):
    """Exact R(S, D) and minimiser of one support, by lstsq + brentq on the secular equation."""
    XS = X[:, support]
    s = len(support)
    A = np.vstack([XS, math.sqrt(lam) * np.eye(s)])
    b = np.concatenate([y, np.zeros(s)])
    beta, *_ = scipy.linalg.lstsq(A, b, lapack_driver="gelsd", cond=1e-12)
    if np.linalg.norm(beta) > r:
        G = XS.T @ XS + lam * np.eye(s)
        c = XS.T @ y

        def excess(mu):
            return np.linalg.norm(scipy.linalg.solve(G + mu * np.eye(s), c, assume_a="pos")) - r

        hi = np.linalg.norm(c) / r  # ||beta(hi)|| <= ||c|| / hi = r
        lo = 1e-14 * max(1.0, np.trace(G))
        if excess(lo) > 0:
            mu = scipy.optimize.brentq(excess, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
            beta = scipy.linalg.solve(G + mu * np.eye(s), c, assume_a="pos")
        # else: the constraint binds only in the limit mu -> 0 (singular G): keep lstsq's
    resid = y - XS @ beta
    return float(resid @ resid + lam * beta @ beta), beta


def kkt_violation(X, y, support, lam, r, beta):
    """Largest relative violation of the KKT conditions of min ||y - X_S b||^2 + lam||b||^2, ||b|| <= r."""
    XS = X[:, support]
    G = XS.T @ XS + lam * np.eye(len(support))
    c = XS.T @ y
    grad = G @ beta - c  # half the gradient of the objective
    scale = 1.0 + np.linalg.norm(c) + np.linalg.norm(G) * np.linalg.norm(beta)
    nb = np.linalg.norm(beta)
    feas = max(0.0, nb - r) / r
    if nb < r * (1 - 1e-9) or nb == 0:
        return max(feas, np.linalg.norm(grad) / scale)
    # active: grad + mu beta = 0 with mu >= 0
    mu = -(beta @ grad) / (nb * nb)
    return max(feas, max(0.0, -mu) * nb / scale, np.linalg.norm(grad + mu * beta) / scale)


def check_against_reference(X, y, lam, r, supports, gram="auto"):
    score = RidgeScore(X, y, lam=lam, r=r, gram=gram)
    got, betas = score.solve(supports)
    np.testing.assert_allclose(score(supports), got, rtol=0, atol=0)
    scale = 1.0 + y @ y
    n_active = 0
    for S, g, b in zip(supports, got, betas):
        want, bref = reference_solve(X, y, S, lam, r)
        assert abs(g - want) <= RTOL * scale, (S, g, want)
        assert kkt_violation(X, y, S, lam, r, b) < 1e-8, S
        resid = y - X[:, S] @ b
        # the returned minimiser attains the returned score
        assert abs(resid @ resid + lam * b @ b - g) <= RTOL * scale
        n_active += np.linalg.norm(bref) > r * (1 - 1e-9)
    return n_active


@pytest.mark.parametrize("gram", ["full", "columns"])
@pytest.mark.parametrize("lam", [0.0, 0.7, 25.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_batched_score_matches_exact_per_support_solve(seed, lam, gram):
    rng = np.random.default_rng(seed)
    n, p, s = 25, 8, 3
    X = rng.standard_normal((n, p))
    y = X[:, :3] @ np.array([2.0, -1.5, 1.0]) + 0.3 * rng.standard_normal(n)
    supports = all_supports(p, s)
    # r large: constraint never binds; r small: binds for every support; r mid: mixed
    unconstrained = np.array([np.linalg.norm(reference_solve(X, y, S, lam, np.inf)[1]) for S in supports])
    for r in (np.inf, 10 * unconstrained.max(), float(np.median(unconstrained)), 0.05):
        active = check_against_reference(X, y, lam, r, supports, gram)
        assert active == np.sum(unconstrained > r * (1 - 1e-9))
    assert 0 < np.sum(unconstrained > np.median(unconstrained)) < len(supports)


@pytest.mark.parametrize("lam", [0.0, 0.5])
def test_singular_blocks_n_less_than_s(lam):
    rng = np.random.default_rng(5)
    n, p, s = 3, 7, 5  # every block has rank <= 3 < s
    X = rng.standard_normal((n, p))
    y = rng.standard_normal(n)
    supports = all_supports(p, s)
    for r in (np.inf, 0.1, 1.0):
        check_against_reference(X, y, lam, r, supports)
    if lam == 0.0:
        # n < s with lam = 0: y is interpolated exactly whenever the constraint is slack
        sc = RidgeScore(X, y, lam=0.0, r=np.inf)(supports)
        np.testing.assert_allclose(sc, 0.0, atol=1e-9 * (y @ y))


@pytest.mark.parametrize("lam", [0.0, 2.0])
def test_duplicated_and_zero_columns(lam):
    rng = np.random.default_rng(7)
    n, p, s = 30, 7, 3
    X = rng.standard_normal((n, p))
    X[:, 3] = X[:, 1]  # duplicated column
    X[:, 5] = -2.0 * X[:, 0]  # collinear column
    X[:, 6] = 0.0  # zero column
    y = X[:, 1] + 0.5 * X[:, 2] + 0.1 * rng.standard_normal(n)
    supports = all_supports(p, s)
    for r in (np.inf, 0.3, 1.2):
        check_against_reference(X, y, lam, r, supports)


def test_singular_block_equals_reduced_support():
    """A duplicated column adds nothing when lam = 0 and the constraint is slack."""
    rng = np.random.default_rng(11)
    X = rng.standard_normal((40, 4))
    X[:, 3] = X[:, 0]
    y = rng.standard_normal(40)
    score = RidgeScore(X, y, lam=0.0, r=np.inf)
    two = score(np.array([[0, 1]]))[0]
    np.testing.assert_allclose(score(np.array([[0, 1, 3]]))[0], two, rtol=1e-10)
    # ... but with the l2 bound active the duplicate halves the norm needed: score drops
    b = RidgeScore(X, y, lam=0.0, r=0.01)
    assert b(np.array([[0, 1, 3]]))[0] < b(np.array([[0, 1]]))[0]


def test_solve_blocks_public_entry_point():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((20, 6))
    y = rng.standard_normal(20)
    supports = all_supports(6, 4)
    for lam, r in ((0.0, np.inf), (1.5, 0.2)):
        score = RidgeScore(X, y, lam=lam, r=r)
        G, c = score.blocks(supports)
        assert G.shape == (len(supports), 4, 4) and c.shape == (len(supports), 4)
        sc, be = solve_blocks(G, c, score.yy, r)
        ref, rbe = score.solve(supports)
        np.testing.assert_allclose(sc, ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(be, rbe, rtol=1e-9, atol=1e-10)


def test_large_s_uses_lapack_path_and_stays_exact():
    rng = np.random.default_rng(4)
    n, p, s = 30, 15, 13
    X = rng.standard_normal((n, p))
    X[:, 14] = X[:, 2]
    y = rng.standard_normal(n)
    supports = all_supports(p, s)[::7]
    for lam, r in ((0.0, np.inf), (0.3, 0.5)):
        check_against_reference(X, y, lam, r, supports)


def test_batch_larger_than_inner_block_and_shapes():
    """Many supports (crossing the internal block boundary) and the single-support shape."""
    rng = np.random.default_rng(9)
    n, p, s = 50, 24, 4
    X = np.clip(rng.standard_normal((n, p)), -1, 1)
    y = np.clip(X[:, 0] - X[:, 5] + rng.standard_normal(n), -1, 1)
    S = all_supports(p, s)  # 10626 supports
    G, c = RidgeScore(X, y, lam=0.5).blocks(S)
    ref = np.linalg.solve(G, c[..., None])[..., 0]
    r = float(np.quantile(np.linalg.norm(ref, axis=1), 0.7))
    score = RidgeScore(X, y, lam=0.5, r=r)
    sc, be = score.solve(S)
    slack = np.einsum("bi,bi->b", ref, ref) <= r * r
    assert 0.6 < slack.mean() < 0.8  # both paths exercised
    np.testing.assert_allclose(be[slack], ref[slack], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sc[slack], score.yy - np.einsum("bi,bi->b", c, ref)[slack], rtol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(be[~slack], axis=1), r, rtol=1e-9)
    assert score(S[3]).shape == (1,)
    assert score(S[:0]).shape == (0,)
    np.testing.assert_allclose(score(S[3]), sc[3:4], rtol=1e-14)
    for k in (0, 4095, 4096, 4097, len(S) - 1):
        want, _ = reference_solve(X, y, S[k], 0.5, r)
        assert abs(sc[k] - want) <= RTOL * (1 + score.yy)


def test_slsqp_cannot_beat_the_closed_form():
    """An independent general-purpose optimiser (SLSQP) never finds a better feasible point."""
    rng = np.random.default_rng(13)
    n, p, s = 15, 6, 3
    X = rng.standard_normal((n, p))
    y = 3 * rng.standard_normal(n)
    lam, r = 0.2, 0.4
    score = RidgeScore(X, y, lam=lam, r=r)
    for S in all_supports(p, s)[::4]:
        XS = X[:, S]
        res = scipy.optimize.minimize(
            lambda b: np.sum((y - XS @ b) ** 2) + lam * b @ b, np.zeros(s),
            jac=lambda b: -2 * XS.T @ (y - XS @ b) + 2 * lam * b,
            constraints=[{"type": "ineq", "fun": lambda b: r * r - b @ b, "jac": lambda b: -2 * b}],
            method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
        ours = score(S)[0]
        assert ours <= res.fun + 1e-9 * (1 + abs(res.fun))
        assert abs(ours - res.fun) <= 1e-6 * (1 + abs(res.fun))


def test_rejects_bad_parameters():
    X = np.ones((3, 2))
    with pytest.raises(UserInputError):
        RidgeScore(X, np.ones(3), lam=-1.0)
    with pytest.raises(UserInputError):
        RidgeScore(X, np.ones(3), r=0.0)
    with pytest.raises(UserInputError):
        RidgeScore(X, np.ones(3), gram="dense")


# --------------------------------------------------------------------------- Delta


def test_sensitivity_formulas_and_paper_bound_is_looser():
    assert sensitivity(5, 0.5, 0.5, 1.1) == pytest.approx((0.5 + 0.5 * 1.1 * math.sqrt(5)) ** 2)
    assert sensitivity(5, 0.5, 0.5, 1.1, "paper") == pytest.approx(2 * 0.25 + 2 * 0.25 * 1.21 * 5)
    rng = np.random.default_rng(0)
    for _ in range(500):
        s = int(rng.integers(1, 50))
        b_x, b_y, r = rng.uniform(0.01, 5, size=3)
        # (a + b)^2 <= 2a^2 + 2b^2 with equality iff a = b
        assert sensitivity(s, b_x, b_y, r, "paper") >= sensitivity(s, b_x, b_y, r, "tight") * (1 - 1e-12)
    # equality case b_y = b_x r sqrt(s)
    assert sensitivity(4, 1.0, 2.2, 1.1, "paper") == pytest.approx(sensitivity(4, 1.0, 2.2, 1.1, "tight"))
    with pytest.raises(UserInputError):
        sensitivity(3, 0.5, 0.5, 1.1, "loose")
    with pytest.raises(UserInputError):
        sensitivity(3, -0.5, 0.5, 1.1)


@pytest.mark.parametrize("lam", [0.0, 3.0])
@pytest.mark.parametrize("s", [1, 2, 3])
def test_replace_one_never_moves_score_by_more_than_delta(s, lam):
    """|R(S, D) - R(S, D')| <= Delta for random neighbours, all supports, worst-case rows."""
    rng = np.random.default_rng(100 + s)
    p, b_x, b_y, r = 6, 0.5, 0.5, 1.1
    delta = sensitivity(s, b_x, b_y, r, "tight")
    supports = all_supports(p, s)
    worst = 0.0
    for trial in range(12):
        n = int(rng.integers(4, 15))
        X = np.clip(rng.standard_normal((n, p)) * rng.uniform(0.2, 2), -b_x, b_x)
        beta = rng.standard_normal(p) * (rng.random(p) < 0.5)
        y = np.clip(X @ beta + 0.2 * rng.standard_normal(n), -b_y, b_y)
        base = RidgeScore(X, y, lam=lam, r=r)(supports)
        for _ in range(8):
            i = int(rng.integers(n))
            X2, y2 = X.copy(), y.copy()
            # a worst-case replacement: every feature and the response at a clipping bound
            X2[i] = b_x * rng.choice([-1.0, 1.0], size=p)
            y2[i] = b_y * rng.choice([-1.0, 1.0])
            other = RidgeScore(X2, y2, lam=lam, r=r)(supports)
            worst = max(worst, np.max(np.abs(base - other)))
    assert worst <= delta * (1 + 1e-9), (worst, delta)
    # the bound is not vacuous: neighbours do move the score by a sizeable part of it
    assert worst > 0.2 * delta


def test_delta_bound_is_attained_up_to_rounding():
    """A construction reaching (b_y + b_x r sqrt(s))^2: the tight bound cannot be lowered."""
    s, b_x, b_y, r = 3, 0.1, 1.0, 1.1
    delta = sensitivity(s, b_x, b_y, r)
    # m identical rows whose unconstrained fit has norm b_y / (b_x sqrt(s)) > r pin beta at
    # r u (u = 1/sqrt(s)); D' adds a zero row, D instead a row with residual b_y + b_x r sqrt(s)
    m = 4000
    u = np.ones(s) / math.sqrt(s)
    X2 = np.vstack([np.tile(b_x * np.ones(s), (m, 1)), np.zeros(s)])
    y2 = np.concatenate([np.full(m, b_y), [0.0]])
    X, y = X2.copy(), y2.copy()
    X[-1], y[-1] = -b_x * np.ones(s), b_y
    S = np.arange(s)[None, :]
    diff = RidgeScore(X, y, r=r)(S)[0] - RidgeScore(X2, y2, r=r)(S)[0]
    assert diff <= delta * (1 + 1e-9)
    assert diff >= 0.99 * delta
    np.testing.assert_allclose(RidgeScore(X2, y2, r=r).solve(S)[1][0], r * u, rtol=1e-9)


def test_unconverged_newton_rows_fall_back_to_eigen_path(monkeypatch):
    """The active-constraint Newton iteration capped at 2 steps: rows it leaves unconverged
    must still get the exact answer (from the eigen path)."""
    import dpbench.core.score.ridge as score_mod

    real = score_mod._cm_trust_region
    seen = []

    def capped(T0, C0, yy, r, iters=60):
        out = real(T0, C0, yy, r, iters=2)
        seen.append(int((~out[2]).sum()))
        return out

    monkeypatch.setattr(score_mod, "_cm_trust_region", capped)
    rng = np.random.default_rng(21)
    X = rng.standard_normal((20, 7))
    y = 4 * rng.standard_normal(20)
    check_against_reference(X, y, 0.3, 0.02, all_supports(7, 3))
    assert sum(seen) > 0  # the fallback really ran


@pytest.mark.parametrize("B", [1, 2, 5000])
def test_inputs_are_not_modified(B):
    rng = np.random.default_rng(B)
    X = rng.standard_normal((12, 9))
    y = rng.standard_normal(12)
    score = RidgeScore(X, y, lam=0.1, r=0.3)
    S = np.sort(np.argsort(rng.random((B, 9)), axis=1)[:, :4], axis=1)
    S0 = S.copy()
    G, c = score.blocks(S)
    G0, c0 = G.copy(), c.copy()
    solve_blocks(G, c, score.yy, score.r)
    score.solve(S)
    score(S)
    np.testing.assert_array_equal(G, G0)
    np.testing.assert_array_equal(c, c0)
    np.testing.assert_array_equal(S, S0)


@pytest.mark.parametrize("p", [5, 300, 700])
def test_cached_gram_is_exactly_symmetric(p):
    """The cached Gram is exactly symmetric (the leaf scan reads a pair's entry from either
    feature's row), and mirroring keeps the upper triangle bit for bit: an asymmetric matrix
    gets its upper triangle reflected, a symmetric one is left as it was."""
    from dpbench.core.score.ridge import _symmetric

    rng = np.random.default_rng(p)
    X = rng.normal(size=(40, p))
    G = RidgeScore(X, rng.normal(size=40), 1.0, gram="full").cached_gram()
    assert np.array_equal(G, G.T) and np.array_equal(G, X.T @ X)
    A = rng.normal(size=(p, p))
    B = _symmetric(A.copy())
    assert np.array_equal(B, B.T) and np.array_equal(np.triu(B), np.triu(A))
