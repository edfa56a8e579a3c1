"""Best-subset oracle backends against exhaustive enumeration with the shared score.

Every backend (highs, pyomo, gurobi OA, gurobi MISOCP) must return the enumeration optimum
on small random problems (independent, strongly correlated and near-tied designs), the
same k-th best objectives through no-good cuts, the same best objective with exactly t
mistakes, and honour fixed-in/-out constraints. Objectives are compared with the oracle's
relative gap tolerance (1e-6); supports only where the optimum is unique by a margin.
"""

import argparse
import json
import math

import numpy as np
import pytest

from dpbench.bench.trial import Trial
from dpbench.core.errors import SolverLimitError, UserInputError
from dpbench.core.oracle import ConstraintSet, dual_cuts, perspective_relaxation
from dpbench.bench.registry import registry
from dpbench.core.problem import Problem
from dpbench.core.score import RidgeScore
from dpbench.core.supports import iter_supports
from dpbench.testing import all_supports
from helpers.solvers import BACKENDS, HAS_GUROBI, HAS_PYOMO, make_problem
from dpbench.bench.registry import PluginInstances

TOL = 2e-6  # relative: the oracle's default gap_tol 1e-6 plus rounding


def enum_all(score, s):
    S = all_supports(score.p, s)
    return S, score(S)


def session(backend, score, s):
    name, params = backend
    return registry().solver(name)(**params).session(score, s)


def close(a, b):
    return abs(a - b) <= TOL * max(abs(b), 1e-12) + 1e-12


CASES = [("indep", 0, 5.0, 1.1), ("corr", 1, 2.0, 1.1), ("ties", 2, 5.0, 0.4), ("indep", 3, 120.0, 1.1),
         ("corr", 4, 1.0, 0.3), ("ties", 5, 20.0, np.inf)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_optimum_kth_best_and_mistakes_match_enumeration(backend, case):
    kind, seed, lam, r = case
    s = 3
    score = make_problem(kind, seed, lam=lam, r=r)
    S_all, v_all = enum_all(score, s)
    order = np.argsort(v_all, kind="stable")
    sess = session(backend, score, s)

    # Unconstrained optimum, recomputed with the shared score, with a valid certificate.
    res = sess.solve()
    assert res.status == "optimal", res
    assert close(res.objective, v_all[order[0]])
    assert res.lower_bound <= v_all[order[0]] + 1e-9
    assert math.isclose(res.objective, float(score(res.support)[0]), rel_tol=0, abs_tol=1e-12)
    if v_all[order[1]] - v_all[order[0]] > 1e-4 * v_all[order[0]]:
        assert res.support.tolist() == S_all[order[0]].tolist()

    # k-th best through no-good cuts on the backend's own previous answers.
    excluded = [res.support]
    for k in range(1, 4):
        rk = sess.solve(exclude=excluded)
        assert rk.status == "optimal", (k, rk)
        assert close(rk.objective, v_all[order[k]]), (k, rk.objective, v_all[order[k]])
        assert tuple(rk.support) not in {tuple(e) for e in excluded}
        excluded.append(rk.support)

    # Best support with exactly t mistakes relative to the optimum: |S ∩ S1| = s - t.
    S1 = res.support
    inter = np.isin(S_all, S1).sum(axis=1)
    for t in range(0, s + 1):
        rt = sess.solve(overlap=(S1, s - t))
        want = v_all[inter == s - t].min()
        assert rt.status == "optimal"
        assert np.isin(rt.support, S1).sum() == s - t
        assert close(rt.objective, want), (t, rt.objective, want)

    # Fixed in / fixed out, and an overlap with an arbitrary reference plus a no-good cut.
    fin, fout = [5], [0, 2]
    ok = np.isin(S_all, fin).any(axis=1) & ~np.isin(S_all, fout).any(axis=1)
    rf = sess.solve(fixed_in=fin, fixed_out=fout)
    assert rf.status == "optimal" and 5 in rf.support and not set(fout) & set(rf.support.tolist())
    assert close(rf.objective, v_all[ok].min())
    ref = np.array([1, 3, 7])
    ok = (np.isin(S_all, ref).sum(axis=1) == 1)
    best = S_all[ok][np.argmin(v_all[ok])]
    ok2 = ok & ~np.all(S_all == best, axis=1)
    ro = sess.solve(overlap=(ref, 1), exclude=[best])
    assert ro.status == "optimal" and close(ro.objective, v_all[ok2].min())


@pytest.mark.parametrize("backend", BACKENDS)
def test_infeasible_constraints_are_certified(backend):
    score = make_problem("indep", 7)
    sess = session(backend, score, 3)
    assert sess.solve(fixed_in=[1, 2, 3, 4]).status == "infeasible"
    assert sess.solve(fixed_in=[1], fixed_out=[1]).status == "infeasible"
    r = sess.solve(overlap=([0, 1], 3))  # cannot share 3 features with a 2-feature set
    assert r.status == "infeasible" and r.support is None
    # Excluding every support with |S ∩ {0,1,2}| = 3 leaves the overlap infeasible.
    assert sess.solve(overlap=([0, 1, 2], 3), exclude=[[0, 1, 2]]).status == "infeasible"


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b.id in ("highs", "gurobi-misocp")])
def test_tiny_time_limit_never_reports_optimal(backend):
    score = make_problem("corr", 11, n=60, p=40, lam=0.05)
    S_all, v_all = enum_all(score, 4)
    opt = v_all.min()
    res = session(backend, score, 4).solve(time_limit=1e-6)
    assert res.status in ("time_limit", "error")
    assert res.status != "optimal"
    assert res.lower_bound <= opt + 1e-9
    if res.support is not None:
        assert res.objective >= opt - 1e-9
        assert math.isclose(res.objective, float(score(res.support)[0]))


def test_highs_with_screening_matches_enumeration_at_p120():
    """A larger problem where screening removes most features: still the exact optimum and k-th best."""
    score = make_problem("corr", 21, n=150, p=120, lam=10.0)
    S_all, v_all = enum_all(score, 3)
    order = np.argsort(v_all)
    sess = session(("highs", {}), score, 3)
    res = sess.solve()
    assert res.status == "optimal" and close(res.objective, v_all[order[0]])
    r2 = sess.solve(exclude=[res.support])
    assert r2.status == "optimal" and close(r2.objective, v_all[order[1]])
    S1 = res.support
    inter = np.isin(S_all, S1).sum(axis=1)
    r3 = sess.solve(overlap=(S1, 1))
    assert r3.status == "optimal" and close(r3.objective, v_all[inter == 1].min())


# ---------------------------------------------------------------- the mathematics of the cuts


@pytest.mark.parametrize("r", [np.inf, 1.1, 0.2])
def test_danskin_gradient_matches_finite_differences(r):
    score = make_problem("corr", 31, n=30, p=8, lam=3.0, r=r)
    rng = np.random.default_rng(0)
    for _ in range(3):
        z = rng.uniform(0.2, 0.9, score.p)
        f0, g = perspective_relaxation(score, z)
        h = 1e-6
        fd = np.array([(perspective_relaxation(score, z + h * e)[0] - perspective_relaxation(score, z - h * e)[0])
                       / (2 * h) for e in np.eye(score.p)])
        np.testing.assert_allclose(g, fd, rtol=1e-4, atol=1e-7)
        assert np.all(g <= 0)  # adding a feature never increases f
    # At binary z the relaxation equals the shared score, and the gradient is finite at z_i = 0.
    z = np.zeros(score.p)
    z[[1, 4, 6]] = 1
    f, g = perspective_relaxation(score, z)
    assert math.isclose(f, float(score([1, 4, 6])[0]), rel_tol=1e-10)
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("r", [np.inf, 1.1, 0.2])
def test_binary_cuts_are_global_lower_bounds_exact_at_their_point(r):
    score = make_problem("indep", 41, n=30, p=9, lam=2.0, r=r)
    S_all, v_all = enum_all(score, 3)
    gen = S_all[[0, 17, 40]]
    obj, const, W = dual_cuts(score, gen)
    np.testing.assert_allclose(obj, v_all[[0, 17, 40]], rtol=1e-12)
    for k in range(len(gen)):
        lower = const[k] - W[k][S_all].sum(axis=1)
        assert np.all(lower <= v_all + 1e-9 * np.abs(v_all))
        assert math.isclose(const[k] - W[k][gen[k]].sum(), obj[k], rel_tol=1e-9)
        # The binary cut dominates the tangent (Danskin) cut at every binary point.
        z0 = np.zeros(score.p)
        z0[gen[k]] = 1
        f0, g = perspective_relaxation(score, z0)
        Z = np.zeros((len(S_all), score.p))
        np.put_along_axis(Z, S_all, 1.0, axis=1)
        tangent = f0 + (Z - z0) @ g
        assert np.all(lower >= tangent - 1e-9 * np.abs(v_all))


# ---------------------------------------------------------------- errors and limits


@pytest.mark.parametrize("name", ["highs", "pyomo", "gurobi"])
def test_lam_zero_is_refused_by_oa_backends_with_alternatives(name):
    score = make_problem("indep", 51, lam=0.0)
    with pytest.raises(UserInputError, match="enumerate") as ei:
        registry().solver(name)().session(score, 3)
    assert "misocp" in str(ei.value) and "lam" in str(ei.value)


@pytest.mark.skipif(not HAS_GUROBI, reason="no gurobi")
def test_gurobi_misocp_handles_lam_zero():
    score = make_problem("corr", 52, lam=0.0, r=0.8)
    S_all, v_all = enum_all(score, 3)
    res = registry().solver("gurobi")(formulation="misocp").session(score, 3).solve()
    assert res.status == "optimal" and close(res.objective, v_all.min())


@pytest.mark.skipif(not HAS_GUROBI, reason="no gurobi")
def test_gurobi_size_limit_gives_clear_error():
    # Without screening the master has p + 1 = 2101 variables: over the pip licence's 2000
    # (gershgorin_nodes = 0: the Gershgorin branch and bound would certify before any master).
    score = make_problem("indep", 53, n=20, p=2100, lam=1.0)
    sess = registry().solver("gurobi")(screen=False, gershgorin_nodes=0).session(score, 2)
    with pytest.raises(SolverLimitError, match="--solver highs") as ei:
        sess.solve()
    assert "size-limited licence" in str(ei.value)


def test_pyomo_missing_solver_lists_available_ones():
    score = make_problem("indep", 54)
    with pytest.raises(SolverLimitError, match="not available; Pyomo finds:") as ei:
        registry().solver("pyomo")(solver="no_such_solver_xyz").session(score, 3)
    if HAS_PYOMO:
        assert "appsi_highs" in str(ei.value)


def test_bad_constraint_input_is_a_user_error():
    with pytest.raises(UserInputError):
        ConstraintSet.build(10, 3, exclude=[[0, 1]])
    with pytest.raises(UserInputError):
        ConstraintSet.build(10, 3, fixed_in=[12])


# ---------------------------------------------------------------- bss selector and CLI


def test_bss_selector_returns_cached_certified_optimum():
    score = make_problem("indep", 61)
    prob = Problem(score.X, score.y, 3)
    trial = Trial(prob, lam=5.0, r=1.1, solver="highs", instances=PluginInstances())
    S_all, v_all = enum_all(trial.score, 3)
    sel = registry().selector("bss")()
    prepared = sel.prepare(trial, np.random.default_rng(0))
    d = sel.draw(trial, prepared, 1.0, 4, np.random.default_rng(1))
    assert d.certified and d.supports.shape == (4, 3)
    assert (d.supports == S_all[np.argmin(v_all)]).all()
    # Shared with topr / mistakes under ("optimum", solver) and the same oracle session.
    assert trial.cache[("optimum", "highs")] is prepared
    assert sel.describe()["dp_type"] == "none"
    assert sel.log_prob(trial, prepared, 1.0, d.supports[0]) == 0.0


def test_bss_selector_uncertified_when_oracle_is_not():
    score = make_problem("indep", 62)
    trial = Trial(Problem(score.X, score.y, 3), lam=5.0, solver="highs", instances=PluginInstances())
    from dpbench.core.contracts.oracle import OracleResult

    trial.cache[("optimum", "highs")] = OracleResult(np.array([0, 1, 2]), 1.0, 0.5, "time_limit")
    sel = registry().selector("bss")()
    d = sel.draw(trial, sel.prepare(trial, None), 1.0, 2, None)
    assert not d.certified and (d.supports == [0, 1, 2]).all()


def test_cli_bss_json(capsys):
    from dpbench.cli import bss as cli_bss

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    cli_bss.add_parser(sub)
    args = parser.parse_args(["bss", "--n", "200", "--p", "300", "--s", "3", "--json"])
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "optimal" and len(out["support"]) == 3
    assert out["lower_bound"] <= out["objective"] + 1e-12


def test_large_p_one_mistake_is_enumerated_exactly():
    """At p >= 500 an overlap call with few feasible supports is scored exhaustively."""
    score = make_problem("indep", 71, n=60, p=600, lam=10.0)
    S_all, v_all = enum_all(score, 2)
    sess = session(("highs", {}), score, 2)
    res = sess.solve()
    assert res.status == "optimal" and close(res.objective, v_all.min())
    inter = np.isin(S_all, res.support).sum(axis=1)
    r1 = sess.solve(overlap=(res.support, 1), fixed_out=[int(res.support[0])])
    ok = (inter == 1) & ~np.isin(S_all, res.support[0]).any(axis=1)
    assert r1.status == "optimal" and close(r1.objective, v_all[ok].min())


# ---------------------------------------------------------------- enumeration fallback and branch and bound


def _overlap_levels_match(sess, S_all, v_all, S1, levels):
    """Yield (t, mask of the level, result) after checking that ``solve(overlap=(S1, s - t))`` is
    optimal with the brute-force minimum of its level and a lower bound at most that minimum."""
    s = S_all.shape[1]
    inter = np.isin(S_all, S1).sum(axis=1)
    for t in levels:
        ok = inter == s - t
        res = sess.solve(overlap=(S1, s - t))
        assert res.status == "optimal", (t, res)
        assert close(res.objective, v_all[ok].min()) and res.lower_bound <= v_all[ok].min() + 1e-9
        yield t, ok, res


def _bnb_session(score, s, **kw):
    from dpbench.core.oracle import OASession
    from dpbench_plugins.solvers.highs import solve_master_highs

    return OASession(score, s, "highs", solve_master_highs, **kw)


@pytest.mark.parametrize("case", [("indep", 81, 5.0, 1.1), ("corr", 82, 1.0, 0.3), ("ties", 83, 20.0, np.inf),
                                  ("corr", 84, 120.0, 1.1)], ids=lambda c: f"{c[0]}-{c[1]}")
@pytest.mark.parametrize("limits", [dict(enum_limit=0, leaf_limit=1, pair_leaf_limit=0), dict(enum_limit=0, leaf_limit=30, pair_leaf_limit=0),
                                    dict(enum_limit=0, leaf_limit=1), dict(enum_limit=10**6)],
                         ids=["bnb-deep", "bnb-leaves", "bnb-pair-leaves", "enumerate"])
def test_branch_and_bound_and_enumeration_match_brute_force(case, limits):
    """Every overlap level, with fixed sets and no-good cuts, against brute force (p = 13, s = 4)."""
    kind, seed, lam, r = case
    s = 4
    score = make_problem(kind, seed, n=40, p=13, lam=lam, r=r)
    S_all, v_all = enum_all(score, s)
    sess = _bnb_session(score, s, **limits)
    S1 = sess.solve().support
    for t, ok, res in _overlap_levels_match(sess, S_all, v_all, S1, range(0, s + 1)):
        # The next two of the level through no-good cuts (topr's streams).
        ex = [res.support]
        for _ in range(2):
            rk = sess.solve(overlap=(S1, s - t), exclude=ex)
            mask = ok.copy()
            for e in ex:
                mask &= ~np.all(S_all == np.sort(e), axis=1)
            if not mask.any():
                assert rk.status == "infeasible"
                break
            assert rk.status == "optimal" and close(rk.objective, v_all[mask].min()), (t, rk)
            ex.append(rk.support)
    inter = np.isin(S_all, S1).sum(axis=1)
    fin, fout = [int(S1[0])], [int(S1[1]), 12]
    mask = (inter == 2) & np.isin(S_all, fin).any(axis=1) & ~np.isin(S_all, fout).any(axis=1)
    rf = sess.solve(overlap=(S1, 2), fixed_in=fin, fixed_out=fout)
    assert rf.status == "optimal" and close(rf.objective, v_all[mask].min())


def test_count_feasible_matches_brute_force():
    from dpbench.core.oracle import count_feasible

    S_all = np.concatenate(list(iter_supports(12, 4)))
    rng = np.random.default_rng(3)
    for _ in range(30):
        S0 = rng.choice(12, size=rng.integers(1, 6), replace=False)
        k = int(rng.integers(0, 5))
        fin = rng.choice(12, size=rng.integers(0, 3), replace=False)
        fout = np.setdiff1d(rng.choice(12, size=rng.integers(0, 4), replace=False), fin)
        cons = ConstraintSet.build(12, 4, overlap=(S0, k), fixed_in=fin, fixed_out=fout)
        assert count_feasible(cons) == int(cons.feasible_mask(S_all).sum())
        cons = ConstraintSet.build(12, 4, fixed_in=fin, fixed_out=fout)
        assert count_feasible(cons) == int(cons.feasible_mask(S_all).sum())


@pytest.mark.parametrize("r", [np.inf, 1.1, 0.2])
@pytest.mark.parametrize("kind", ["indep", "corr", "ties"])
def test_partial_support_bounds_are_valid_over_all_supports(kind, r):
    """Cut at a partial support F <= R(S) for every S; R0(F) - h_b <= R(F ∪ b), equal without the l2 bound."""
    score = make_problem(kind, 91, n=30, p=10, lam=2.0, r=r)
    sess = _bnb_session(score, 4)
    S_all, v_all = enum_all(score, 4)
    for F in ([], [0], [1, 3], [0, 2, 4]):
        F = np.array(F, dtype=np.int64)
        (const, W), (R0, h) = sess._partial(F)
        lower = const - W[S_all].sum(axis=1)
        assert np.all(lower <= v_all + 1e-9 * np.abs(v_all))
        others = np.setdiff1d(np.arange(score.p), F)
        sup = np.sort(np.concatenate([np.repeat(F[None], others.size, 0), others[:, None]], axis=1), axis=1)
        exact = score(sup)
        assert np.all(R0 - h[others] <= exact + 1e-9 * np.abs(exact))
        if not np.isfinite(r):
            np.testing.assert_allclose(R0 - h[others], exact, rtol=1e-9)
        # The node bound of branch and bound over all completions of F.
        m = 4 - F.size
        comp = np.array([np.isin(F, row).all() for row in S_all])
        node = const - W[F].sum() - np.sort(W[others])[::-1][:m].sum()
        assert node <= v_all[comp].min() + 1e-9


def test_branch_and_bound_time_limit_is_honest():
    score = make_problem("corr", 95, n=60, p=60, lam=0.5)
    sess = _bnb_session(score, 4, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
    S_all, v_all = enum_all(score, 4)
    S1 = S_all[np.argmin(v_all)]
    ok = np.isin(S_all, S1).sum(axis=1) == 0
    res = sess.solve(overlap=(S1, 0), time_limit=1e-4)
    assert res.status != "optimal"
    assert res.lower_bound <= v_all[ok].min() + 1e-9
    if res.support is not None:
        assert res.objective >= v_all[ok].min() - 1e-9


# ---------------------------------------------------------------- Schur / Gershgorin completion bound


def _completions(score, F, m):
    """All supports F ∪ T, |T| = m, T outside F, with their ridge-only scores (r = inf)."""
    others = np.setdiff1d(np.arange(score.p), F)
    T = np.concatenate(list(iter_supports(others.size, m)))
    S = np.sort(np.concatenate([np.repeat(F[None], len(T), 0), others[T]], axis=1), axis=1)
    ridge = RidgeScore(score.X, score.y, lam=score.lam, r=np.inf)
    return others, T, S, ridge(S)


@pytest.mark.parametrize("r", [np.inf, 0.3])
@pytest.mark.parametrize("kind", ["indep", "corr", "ties"])
def test_gershgorin_completion_bounds_valid_over_every_support(kind, r):
    """R0(F) - node <= R(F ∪ T) for every T; R0(F) - per[j] <= R(F ∪ T) for every T containing j."""
    from dpbench.core.oracle import gram_row_tops

    score = make_problem(kind, 97, n=30, p=11, lam=3.0, r=r)
    s = 4
    sess = _bnb_session(score, s)
    E = gram_row_tops(score, s - 1)
    G = np.abs(score.X.T @ score.X)
    np.fill_diagonal(G, 0.0)
    exact = np.cumsum(-np.sort(-G, axis=1)[:, : s - 1], axis=1)
    assert np.all(E >= exact) and np.all(E <= exact + 1e-9 * (1 + exact))
    for F in ([], [0], [2, 5]):
        F = np.array(F, dtype=np.int64)
        for m in range(2, s - F.size + 1):
            others, T, S, ridge_vals = _completions(score, F, m)
            R0, h, node, per, rho = sess._ridge_node(F, others, m)
            vals = score(S)  # the shared score (l2 bound r) is never below the ridge score
            assert np.all(vals >= ridge_vals - 1e-9 * np.abs(ridge_vals))
            if np.isfinite(node):
                assert np.all(R0 - node <= ridge_vals + 1e-9 * np.abs(ridge_vals)), (kind, F, m)
                for j in range(others.size):
                    has = (T == j).any(axis=1)
                    assert np.all(R0 - per[j] <= ridge_vals[has] + 1e-9 * np.abs(ridge_vals[has]))


def test_gershgorin_factor_is_needed_for_a_suppressor_pair():
    """y = x0 + x1 with x0, x1 strongly anti-correlated: each alone explains little, the pair almost all.

    The sum of single-feature decreases (rho = 0) would be an invalid bound; the Gershgorin
    factor 1 / (1 - rho) restores validity.
    """
    from dpbench.core.oracle import completion_bounds

    rng = np.random.default_rng(5)
    n = 200
    z = rng.standard_normal(n)
    x0 = z + 0.45 * rng.standard_normal(n)
    x1 = -z + 0.45 * rng.standard_normal(n)
    X = np.column_stack([x0, x1, rng.standard_normal((n, 3))]) * 0.1
    y = X[:, 0] + X[:, 1] + 0.01 * rng.standard_normal(n)
    score = RidgeScore(X, y, lam=0.05)
    sess = _bnb_session(score, 2)
    F = np.zeros(0, dtype=np.int64)
    C = np.arange(5)
    R0, h, node, per, rho = sess._ridge_node(F, C, 2)
    decrease = R0 - float(score(np.array([[0, 1]]))[0])
    assert h[0] + h[1] < 0.5 * decrease  # the pair explains much more than its parts
    assert 0 < rho < 1 and node >= decrease and per[0] >= decrease and per[1] >= decrease
    # Direct use of the formula: rho = 0 would undercut the true decrease.
    node0, per0, _ = completion_bounds(h[C], np.full(5, 1.0), np.zeros(5), 2)
    assert node0 < decrease


@pytest.mark.parametrize("gersh", [True, False], ids=["gershgorin", "cuts-only"])
@pytest.mark.parametrize("case", [("indep", 101, 120.0, 1.1), ("corr", 102, 2.0, 0.5), ("ties", 103, 20.0, np.inf)],
                         ids=lambda c: f"{c[0]}-{c[1]}")
def test_screened_branch_and_bound_matches_brute_force(case, gersh):
    """Overlap levels at p = 40, s = 4 through the screened branch and bound (no leaf enumeration
    above 40 completions), with and without the Gershgorin bound, against brute force."""
    kind, seed, lam, r = case
    s = 4
    score = make_problem(kind, seed, n=60, p=40, lam=lam, r=r)
    S_all, v_all = enum_all(score, s)
    sess = _bnb_session(score, s, enum_limit=0, leaf_limit=40, pair_leaf_limit=0, gershgorin=gersh)
    S1 = S_all[np.argmin(v_all)]
    for _ in _overlap_levels_match(sess, S_all, v_all, S1, range(1, s + 1)):
        pass


# ---------------------------------------------------------------- threshold enumeration (supports_below)


def copies_problem(seed, n=60, p=30, s=4, lam=2.0, r=1.1, noise=0.05):
    """s true features and near copies of each (columns s .. 2s-1): many 2-swaps are cheap,
    so the authors' check (best 2-swap >= worst single swap) fails."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, s:2 * s] = X[:, :s] + noise * rng.standard_normal((n, s))
    y = X[:, :s].sum(axis=1) / math.sqrt(s) + 0.1 * rng.standard_normal(n)
    X, y = np.clip(X, -0.5, 0.5), np.clip(y, -0.5, 0.5)
    return RidgeScore(X, y, lam=lam, r=r)


def _below_brute(S_all, v_all, ok, tau):
    """Supports with ok and score <= tau, ordered by (score, support), and the smallest score above."""
    sel = ok & (v_all <= tau)
    S, v = S_all[sel], v_all[sel]
    order = np.lexsort([S[:, j] for j in range(S.shape[1] - 1, -1, -1)] + [v])
    rest = v_all[ok & (v_all > tau)]
    return S[order], v[order], (rest.min() if rest.size else np.inf)


@pytest.mark.parametrize("case", [("copies", 121, 2.0, 1.1), ("copies", 122, 120.0, 1.1), ("corr", 123, 1.0, 0.3),
                                  ("ties", 124, 20.0, np.inf)], ids=lambda c: f"{c[0]}-{c[1]}")
@pytest.mark.parametrize("limits", [dict(enum_limit=0, leaf_limit=1, pair_leaf_limit=0), dict(enum_limit=0, leaf_limit=40, pair_leaf_limit=0),
                                    dict(enum_limit=0, leaf_limit=1), dict(enum_limit=10**6)],
                         ids=["bnb-deep", "bnb-leaves", "bnb-pair-leaves", "enumerate"])
def test_supports_below_matches_brute_force(case, limits):
    """Every support of an overlap level with score <= tau, for several tau, with no-good cuts."""
    kind, seed, lam, r = case
    s = 4
    score = (copies_problem(seed, lam=lam, r=r) if kind == "copies"
             else make_problem(kind, seed, n=50, p=16, lam=lam, r=r))
    S_all, v_all = enum_all(score, s)
    S1 = S_all[np.argmin(v_all)]
    inter = np.isin(S_all, S1).sum(axis=1)
    sess = _bnb_session(score, s, **limits)
    singles = v_all[inter == s - 1]
    if kind == "copies":
        assert v_all[inter == s - 2].min() < singles.max()  # the authors' check fails here
    for t in (2, 3):
        ok = inter == s - t
        lvl = np.sort(v_all[ok])
        for tau in (lvl[0] - 1e-3, lvl[0], lvl[min(5, lvl.size - 1)], singles.max(), lvl[lvl.size // 3]):
            res = sess.supports_below(tau, overlap=(S1, s - t))
            S, v, rest = _below_brute(S_all, v_all, ok, tau)
            assert res.certified and res.status == "complete" and res.threshold == tau
            np.testing.assert_array_equal(res.supports, S)
            np.testing.assert_allclose(res.scores, v, rtol=1e-12)
            assert tau < res.lower_bound <= rest + 1e-9 * abs(rest)
            sup, sc, cert, lb = res  # unpacks as the documented 4-tuple
            assert cert and lb == res.lower_bound
        # No-good cuts: the excluded supports are neither returned nor bound the rest.
        ex = S_all[ok][np.argsort(v_all[ok])[:3]]
        tau = lvl[min(10, lvl.size - 1)]
        res = sess.supports_below(tau, overlap=(S1, s - t), exclude=ex)
        mask = ok & ~(S_all[:, None, :] == ex[None]).all(axis=2).any(axis=1)
        S, v, _ = _below_brute(S_all, v_all, mask, tau)
        assert res.certified
        np.testing.assert_array_equal(res.supports, S)


@pytest.mark.parametrize("seed", [131, 132])
def test_supports_below_rank_tightening_matches_brute_force(seed):
    """With rank R and known scores the threshold falls to the R-th smallest of known ∪ level."""
    s = 4
    score = copies_problem(seed)
    S_all, v_all = enum_all(score, s)
    S1 = S_all[np.argmin(v_all)]
    inter = np.isin(S_all, S1).sum(axis=1)
    ok = inter == 2
    known = v_all[inter <= 1]  # S1 and the single swaps: distinct supports outside level 2
    sess = _bnb_session(score, s, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
    for R in (3, known.size + 2, known.size + 40, known.size + 400):
        res = sess.supports_below(np.inf, overlap=(S1, 2), rank=R, known_scores=known)
        tau = np.partition(np.concatenate([known, v_all[ok]]), R - 1)[R - 1]
        S, v, rest = _below_brute(S_all, v_all, ok, tau)
        assert res.certified and res.threshold == tau
        np.testing.assert_array_equal(res.supports, S)
        assert tau < res.lower_bound <= rest + 1e-9 * abs(rest)


def test_supports_below_time_limit_and_max_count_are_honest():
    score = make_problem("corr", 95, n=60, p=60, lam=0.5)
    s = 4
    S_all, v_all = enum_all(score, s)
    S1 = S_all[np.argmin(v_all)]
    ok = np.isin(S_all, S1).sum(axis=1) == 1
    tau = np.quantile(v_all[ok], 0.01)
    sess = _bnb_session(score, s, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
    res = sess.supports_below(tau, overlap=(S1, 1), time_limit=1e-4)
    assert not res.certified and res.status == "time_limit"
    got = {tuple(r) for r in res.supports.tolist()}
    missing = np.array([ok[i] and tuple(S_all[i]) not in got for i in range(len(S_all))])
    assert res.lower_bound <= v_all[missing].min() + 1e-9  # still a valid bound on the rest
    assert np.all(res.scores <= tau)
    res = sess.supports_below(tau, overlap=(S1, 1), max_count=5)
    assert not res.certified and res.status == "max_count"
    assert res.lower_bound <= tau  # more than 5 supports lie below tau
    full = sess.supports_below(tau, overlap=(S1, 1))
    assert full.certified and len(full.scores) == int((ok & (v_all <= tau)).sum()) > 5


def test_supports_below_by_calls_matches_brute_force():
    """The call-based supports_below (one solve per support) on the enumerate oracle."""
    from dpbench.core.oracle.threshold import ThresholdByCalls

    s = 3
    score = copies_problem(141, p=14, s=s)
    S_all, v_all = enum_all(score, s)
    S1 = S_all[np.argmin(v_all)]
    inter = np.isin(S_all, S1).sum(axis=1)
    sess = session(("enumerate", {}), score, s)
    assert type(sess).supports_below is ThresholdByCalls.supports_below
    ok = inter == 1
    lvl = np.sort(v_all[ok])
    for tau in (lvl[0] - 1.0, lvl[3], lvl[-1]):
        res = sess.supports_below(tau, overlap=(S1, 1))
        S, v, rest = _below_brute(S_all, v_all, ok, tau)
        assert res.certified and res.calls == len(v) + 1  # the last call finds a support above tau, or none
        np.testing.assert_array_equal(res.supports, S)
        assert res.lower_bound == rest
    known = v_all[inter >= 2]
    res = sess.supports_below(np.inf, overlap=(S1, 1), rank=10, known_scores=known)
    tau = np.partition(np.concatenate([known, v_all[ok]]), 9)[9]
    S, v, _ = _below_brute(S_all, v_all, ok, tau)
    assert res.certified and res.threshold == tau
    np.testing.assert_array_equal(res.supports, S)


@pytest.mark.skipif(not HAS_GUROBI, reason="no gurobi")
@pytest.mark.parametrize("gurobi_seed", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("case", [c for c in CASES if c[:2] in (("corr", 4), ("indep", 3), ("ties", 5))],
                         ids=lambda c: f"{c[0]}-{c[1]}")
def test_gurobi_misocp_certifies_whatever_its_search_path(case, gurobi_seed):
    """Gurobi's Seed changes its search path the way another CPU's code path does. Before the
    residual formulation with NumericFocus, these tiny ill-conditioned problems ended SUBOPTIMAL
    for some seeds (and on some CPUs), so the optimum must be certified for every seed."""
    kind, seed, lam, r = case
    score = make_problem(kind, seed, lam=lam, r=r)
    S_all, v_all = enum_all(score, 3)
    best = v_all.min()
    sess = registry().solver("gurobi")(formulation="misocp", seed=gurobi_seed).session(score, 3)
    res = sess.solve()
    assert res.status == "optimal", res
    assert close(res.objective, best) and res.lower_bound <= best + 1e-9
    S1 = res.support
    inter = np.isin(S_all, S1).sum(axis=1)
    for t in range(4):
        rt = sess.solve(overlap=(S1, 3 - t))
        assert rt.status == "optimal", (t, rt)
        assert close(rt.objective, v_all[inter == 3 - t].min())
