"""The children's order of a relaxed node (dpbench.core.oracle.children): ties of a^2 broken by a key.

* the compiled child bounds agree with the numpy reference (``relaxation.child_bounds``), with
  and without planted ties;
* a tie (values within ``TIE_A2_RTOL``) is ordered by decreasing key, then by position in C, and
  the order does not move when the tied values are perturbed in their last bits (what the
  search needs: the same tree whatever the rounding of ``X^T alpha``);
* the search's key is the relaxed solution's |beta_j| (the relaxation's indicator), from the
  relaxation whose dual point orders the children;
* validity, with a key as without: ``test_child_bounds.py`` (brute force).
"""

import numpy as np
import pytest

from dpbench.core.oracle import children as CH
from dpbench.core.oracle import relaxation as rx


def _case(rng, p):
    """a (p,) with a planted run of near-equal |a| (relative 1e-13), fixed features and candidates."""
    a = rng.normal(size=p)
    run = rng.choice(p, size=min(p, int(rng.integers(2, 8))), replace=False)
    a[run] = np.sign(rng.normal(size=run.size)) * abs(a[run[0]]) * (1 + 1e-13 * rng.normal(size=run.size))
    perm = rng.permutation(p)
    fixed = np.sort(perm[: int(rng.integers(0, 3))]).astype(np.int64)
    C = np.sort(perm[fixed.size:]).astype(np.int64)
    return a, fixed, C


@pytest.mark.parametrize("lam,r", [(0.1, np.inf), (1.0, 1.1), (10.0, 0.3), (120.0, 1.1)])
def test_child_bounds_match_numpy(lam, r):
    rng = np.random.default_rng(int(lam * 13))
    for _ in range(40):
        p = int(rng.integers(4, 40))
        a, fixed, C = _case(rng, p)
        key = rng.normal(size=p)
        m = int(rng.integers(1, min(4, C.size) + 1))
        ay, aa = float(rng.normal() * 3), float(rng.uniform(0.1, 5))
        Cs0, b0 = rx.child_bounds(a, ay, aa, lam, r, fixed, C, m, key)
        Cs, bk = CH.child_bounds(a, ay, aa, lam, r, fixed, C, m, key)
        np.testing.assert_array_equal(Cs, Cs0)
        np.testing.assert_allclose(bk, b0, rtol=1e-9, atol=1e-12)
        assert np.all(np.diff(bk) >= 0)


def test_a_tie_is_ordered_by_key_and_stays_put_under_rounding():
    C = np.array([0, 2, 3, 5, 7, 8], dtype=np.int64)
    a2 = np.array([4.0, 9.0, 4.0 * (1 + 1e-14), 1.0, 4.0 * (1 - 1e-14), 4.0])  # a tie of four at 4
    key = np.zeros(9)
    key[[0, 3, 7, 8]] = [1.0, 3.0, 2.0, 1.0]  # feature 0 and 8 tie in key too: position in C decides
    order, w = CH.tie_order(a2, C, key, CH.TIE_A2_RTOL)
    assert C[order].tolist() == [2, 3, 7, 0, 8, 5]
    assert w.tolist() == [9.0, a2[2], a2[2], a2[2], a2[2], 1.0]  # the run counts with its largest value
    order0, w0 = CH.tie_order_numpy(a2, C, key)
    assert order0.tolist() == order.tolist() and w0.tolist() == w.tolist()
    rng = np.random.default_rng(0)
    for _ in range(20):  # the last bits of the tied values move: the order does not
        jitter = a2 * (1 + 4e-16 * rng.integers(-8, 9, size=a2.size))
        assert CH.tie_order(jitter, C, key, CH.TIE_A2_RTOL)[0].tolist() == order.tolist()
    # without the tie rule the order follows the last bits (what this rule is for)
    assert C[np.argsort(-a2, kind="stable")].tolist() == [2, 3, 0, 8, 7, 5]


def test_the_search_orders_a_tie_by_the_relaxed_solutions_beta(monkeypatch):
    """Every children's order of a relaxed search uses, as its tie key, |beta_j| of the primal
    solution of the relaxation that gave its dual point (zero off its working set), and the
    search still finds the brute-force optimum."""
    from dpbench.bench.registry import registry
    from dpbench.core.oracle.branch_and_bound import BranchAndBound
    from dpbench.core.oracle.limits import canonical_minimum
    from dpbench.core.oracle.session import OASession
    from dpbench.testing.reference import all_supports
    from helpers.solvers import noise_problem

    score = noise_problem(0, 0.1)
    warm_of, keys = {}, []
    relax, dual_children = OASession._relax_node, BranchAndBound._dual_children

    def spy_relax(self, *args, **kw):
        out = relax(self, *args, **kw)
        warm_of[id(self._relax_a[0])] = (self._relax_a[0], out[2])  # the alpha kept alive with its warm
        return out

    def spy_children(self, alpha, F, C, m, key):
        keys.append((alpha, np.array(key)))
        return dual_children(self, alpha, F, C, m, key)

    monkeypatch.setattr(OASession, "_relax_node", spy_relax)
    monkeypatch.setattr(BranchAndBound, "_dual_children", spy_children)
    sess = registry().solver("highs")(enum_limit=0, leaf_limit=1, pair_leaf_limit=0).session(score, 5)
    sess.relax_after, sess.relax_bnb, sess.relax_cand = 0, 1000, 0
    res = sess.solve()
    S = all_supports(score.p, 5)
    S1, _ = canonical_minimum(S, score(S))
    np.testing.assert_array_equal(np.sort(res.support), S1)
    assert len(keys) >= 10
    for alpha, key in keys:
        _, (W, beta, _mu) = warm_of[id(alpha)]
        want = np.zeros(score.p)
        want[W] = np.abs(beta)
        np.testing.assert_array_equal(key, want)
    assert any(np.count_nonzero(key) > 5 for _, key in keys)  # a tail: more than s features used
