"""The compiled partial-support quantities against their numpy reference (NodeBounds._partial_numpy)."""

import numpy as np
import pytest

from dpbench.core.score import RidgeScore
from dpbench.core.oracle.session import OASession
from dpbench.core.oracle.partial_kernels import partial_quantities


def _session(seed, n, p, lam, r):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) / np.sqrt(n)
    X[:, 1] = X[:, 0] + 1e-3 * rng.normal(size=n)  # near-collinear pair
    y = X[:, :3] @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=n)
    return OASession(RidgeScore(X, y, lam=lam, r=r), 4, "highs", None)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam,r", [(0.5, np.inf), (0.5, 0.3), (10.0, 1.1), (1e-3, 0.05)],
                         ids=["unbounded", "ball-active", "lam10", "tiny-lam-active"])
@pytest.mark.parametrize("F", [[0], [0, 1], [2, 5, 7], [1, 3, 4, 9]], ids=lambda F: f"F{len(F)}")
def test_kernel_matches_numpy_reference(seed, lam, r, F):
    sess = _session(seed, 30, 40, lam, r)
    F = np.array(F, dtype=np.int64)
    ((const, W), (R0, h)), m = sess._partial_numpy(F)
    sc = sess.score
    ok, const_k, W_k, R0_k, h_k, m_k = partial_quantities(sess._rows(F), F, sc.c, float(sc.yy), sc.col_sq,
                                                          float(sc.lam), float(sc.r))
    assert ok
    tol = dict(rtol=1e-8, atol=1e-10 * max(1.0, abs(float(sc.yy))))
    np.testing.assert_allclose(const_k, const, **tol)
    np.testing.assert_allclose(W_k, W, **tol)
    np.testing.assert_allclose(R0_k, R0, **tol)
    np.testing.assert_allclose(h_k, h, **tol)
    np.testing.assert_allclose(m_k, m, **tol)


@pytest.mark.parametrize("lam,r", [(0.5, 0.3), (10.0, 1.1)])
def test_kernel_cut_is_a_lower_bound_on_every_support(lam, r):
    """The cut at F bounds R(S) for every support S (weak duality), checked on all C(12, 4) supports."""
    from itertools import combinations

    sess = _session(7, 25, 12, lam, r)
    sc = sess.score
    F = np.array([0, 2], dtype=np.int64)
    ok, const, W, R0, h, _ = partial_quantities(sess._rows(F), F, sc.c, float(sc.yy), sc.col_sq, float(sc.lam),
                                                float(sc.r))
    assert ok
    S = np.array(list(combinations(range(12), 4)))
    scores = sc(S)
    assert np.all(const - W[S].sum(axis=1) <= scores + 1e-9 * np.abs(scores))
    # the ridge decrease of one more feature is exact for the unbounded ridge score
    ridge = RidgeScore(sc.X, sc.y, lam=lam, r=np.inf)
    for b in (1, 5, 11):
        assert np.isclose(R0 - h[b], ridge(np.sort(np.r_[F, b])[None])[0], rtol=1e-10)
