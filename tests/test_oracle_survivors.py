"""The oracle's large-p paths (issue 15, p = 10^6): the swap neighbourhood in closed form and the
branch and bound over screened survivors on their own columns, against brute force."""

import numpy as np
import pytest

from dpbench.core.oracle import session as session_mod
from dpbench.core.oracle.constraints import ConstraintSet
from dpbench.bench.registry import registry
from dpbench.core.supports import iter_supports

from test_solvers import make_problem


@pytest.mark.parametrize("r", [np.inf, 1.1, 0.2])
@pytest.mark.parametrize("kind,lam", [("indep", 5.0), ("corr", 0.1), ("ties", 20.0)])
def test_neighbourhood_scores_every_feasible_swap_exactly(kind, lam, r):
    """Block-elimination scores (l2 bound inactive) and solve_blocks (active) both equal the shared score."""
    score = make_problem(kind, 7, n=40, p=20, lam=lam, r=r)
    s = 4
    sess = registry().solver("highs")().session(score, s)
    S = np.array([0, 2, 4, 9])
    S_all = np.concatenate(list(iter_supports(score.p, s)))
    near = S_all[np.isin(S_all, S).sum(axis=1) == s - 1]  # every support at swap distance 1 from S
    for cons in (ConstraintSet.build(score.p, s),
                 ConstraintSet.build(score.p, s, fixed_in=[2], fixed_out=[5, 6]),
                 ConstraintSet.build(score.p, s, overlap=(np.array([0, 2, 4, 11]), 3))):
        rows, val = sess._neighbourhood(S, cons)
        got = rows(np.arange(val.size))
        want = near[cons.feasible_mask(near)]
        assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, want.tolist()))
        np.testing.assert_allclose(val, score(got), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind,seed,lam", [("indep", 3, 10.0), ("corr", 21, 10.0), ("ties", 5, 20.0)])
def test_survivor_branch_and_bound_on_own_columns_matches_brute_force(monkeypatch, kind, seed, lam):
    """Forcing the survivors' search onto their own columns: the same certified optimum, k-th best
    and canonical ties as the full session and as brute force."""
    score = make_problem(kind, seed, n=150, p=120, lam=lam)
    s = 3
    S_all = np.concatenate(list(iter_supports(score.p, s)))
    v_all = score(S_all)
    order = np.argsort(v_all, kind="stable")
    out = {}
    for factor in (1, 10**9):  # 1: always on its own columns; 10**9: never
        monkeypatch.setattr(session_mod, "RESTRICT_FACTOR", factor)
        sess = registry().solver("highs")(enum_limit=0).session(score, s)
        res = sess.solve()
        r2 = sess.solve(exclude=[res.support])
        r3 = sess.solve(fixed_in=[int(res.support[0])], fixed_out=[int(res.support[1])])
        out[factor] = (res, r2, r3)
        assert res.status == r2.status == r3.status == "optimal"
        assert res.objective == pytest.approx(v_all[order[0]], rel=1e-9)
        assert r2.objective == pytest.approx(v_all[order[1]], rel=1e-9)
        mask = np.isin(S_all, res.support[0]).any(axis=1) & ~np.isin(S_all, res.support[1]).any(axis=1)
        assert r3.objective == pytest.approx(v_all[mask].min(), rel=1e-9)
    for a, b in zip(out[1], out[10**9]):
        assert a.support.tolist() == b.support.tolist()
    assert "screened features" in out[1][0].message  # the survivors' path was taken
