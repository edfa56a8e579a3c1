"""Canonical ties (issue 15): every backend returns the lexicographically smallest support
among those whose scores agree within TIE_RTOL (relative) of the constrained optimum.

Design with exact duplicate columns (0 = 1 and 5 = 6), so that exchanging a duplicate
gives exactly tied supports at the optimum, at every k-th best and at every mistakes level.
The reference is brute force over all C(p, s) supports with the same tie rule.
"""

import numpy as np
import pytest

from dpbench.bench.trial import Trial
from dpbench.core.supports import iter_supports
from dpbench.core.oracle import TIE_RTOL
from dpbench.bench.registry import registry
from dpbench.core.problem import Problem
from dpbench.core.score import RidgeScore

from helpers.solvers import GUROBI, PYOMO
from dpbench.bench.registry import PluginInstances

BACKENDS = [
    pytest.param(("enumerate", {}), id="enumerate"),
    pytest.param(("highs", {}), id="highs"),
    pytest.param(("highs", {"enum_limit": 0}), id="highs-oa-master"),
    pytest.param(("highs", {"enum_limit": 0, "leaf_limit": 1, "pair_leaf_limit": 0}), id="highs-bnb-deep"),
    pytest.param(("highs", {"enum_limit": 0, "leaf_limit": 1}), id="highs-bnb-pair-leaves"),
    pytest.param(("pyomo", {"enum_limit": 0}), id="pyomo-oa-master", marks=PYOMO),
    pytest.param(("gurobi", {"enum_limit": 0}), id="gurobi-oa-master", marks=GUROBI),
    pytest.param(("gurobi", {"formulation": "misocp"}), id="gurobi-misocp", marks=GUROBI),
]


def duplicate_problem(seed=0, n=60, p=10, s=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, 1] = X[:, 0]
    X[:, 6] = X[:, 5]
    beta = np.zeros(p)
    beta[[1, 2, 8]] = 0.6  # the truth uses the second copy: a naive first-found answer differs
    y = X @ beta + 0.3 * rng.standard_normal(n)
    return Problem(X, y, s, true_support=np.array([1, 2, 8])).clipped(0.5, 0.5)


def canonical(S_all, v_all, mask):
    """Brute force with the documented rule: lexicographic minimum among the TIE_RTOL-ties."""
    vmin = v_all[mask].min()
    tied = np.flatnonzero(mask & (v_all <= vmin + TIE_RTOL * abs(vmin)))
    return S_all[tied[np.lexsort(S_all[tied].T[::-1])[0]]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_optimum_kth_best_and_levels_are_canonical(backend):
    name, params = backend
    prob = duplicate_problem()
    s = prob.s
    score = RidgeScore(prob.X, prob.y, lam=2.0, r=1.1)
    S_all = np.concatenate(list(iter_supports(score.p, s)))
    v_all = score(S_all)
    sess = registry().solver(name)(**params).session(score, s)
    # The optimum and the next four in canonical order (each excludes the ones before).
    mask = np.ones(len(S_all), dtype=bool)
    taken = []
    for k in range(5):
        want = canonical(S_all, v_all, mask)
        res = sess.solve(exclude=taken)
        assert res.status == "optimal", (k, res)
        assert res.support.tolist() == want.tolist(), k
        taken.append(want)
        mask &= ~(S_all == want).all(axis=1)
    ties = np.sum(v_all <= v_all.min() * (1 + TIE_RTOL))
    assert ties >= 2  # the design really ties at the optimum
    S1 = taken[0]
    for t in range(1, s + 1):
        lvl = np.isin(S_all, S1).sum(axis=1) == s - t
        res = sess.solve(overlap=(S1, s - t))
        assert res.status == "optimal", (t, res)
        assert res.support.tolist() == canonical(S_all, v_all, lvl).tolist(), t


def _mistakes_and_topr(solver, params):
    prob = duplicate_problem(seed=1)
    trial = Trial(prob, lam=2.0, solver=solver, solver_params=params, instances=PluginInstances())
    out = []
    for method, kw in (("mistakes", {}), ("topr", {"enum_limit": 0})):
        sel = registry().selector(method)(**kw)
        prep = sel.prepare(trial, np.random.default_rng(0))
        d = sel.draw(trial, prep, 2.0, 200, np.random.default_rng(1))
        out.append((method, d.certified, d.supports.tolist()))
    return out


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b.id != "enumerate"])
def test_mistakes_and_topr_outputs_identical_across_backends(backend):
    name, params = backend
    assert _mistakes_and_topr(name, params) == _mistakes_and_topr("enumerate", {})
