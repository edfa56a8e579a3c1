"""The node-relaxation budget of a call (``relax_nodes``, ``relax_overlap_nodes``; limits.RELAX_NODES).

A call's branch and bound solves the k-support relaxation at its first ``relax_nodes`` nodes and
bounds later ones from their parent's dual point. The budget is a count: exactly
min(budget, eligible nodes) relaxations run, whatever the machine, and the answer is the brute-force
optimum (and threshold list) for every budget, since every bound is valid either way.
"""

import itertools

import numpy as np
import pytest

from dpbench.bench.registry import registry
from dpbench.core.errors import UserInputError
from dpbench.core.oracle.constraints import ConstraintSet
from dpbench.core.oracle.limits import RELAX_EVERY_NODE, RELAX_NODES
from dpbench.core.oracle.options import OracleOptions
from dpbench.core.score import RidgeScore
from helpers.relaxation import tied_problem

S_SIZE = 3


def _session(score, **params):
    """A highs session whose optimum calls take the survivors' branch and bound from the first master
    (as test_child_bounds does), with node relaxations counted in ``sess.relaxed``."""
    sess = registry().solver("highs")(enum_limit=0, leaf_limit=5, pair_leaf_limit=0, gershgorin=False, **params).session(score, S_SIZE)
    sess.relax_after, sess.relax_bnb, sess.relax_cand = 0, 1000, 0
    sess.relaxed = 0
    inner = sess._relax_node

    def counted(*a, **kw):
        sess.relaxed += 1
        return inner(*a, **kw)

    sess._relax_node = counted
    return sess


def _brute(score, p, **cons):
    S = np.array(list(itertools.combinations(range(p), S_SIZE)), dtype=np.int64)
    vals = score(S)
    ok = ConstraintSet.build(p, S_SIZE, **cons).feasible_mask(S)
    return S[ok], vals[ok]


def test_the_default_budget_is_the_documented_one_and_a_solver_parameter():
    assert OracleOptions().relax_overlap_nodes == RELAX_NODES == 20_000
    assert OracleOptions().relax_nodes == RELAX_EVERY_NODE >= 10**9  # calls without an overlap: every node
    highs = registry().solver("highs")
    assert highs.params["relax_overlap_nodes"].default == RELAX_NODES
    assert highs.params["relax_nodes"].default == RELAX_EVERY_NODE
    X, y = tied_problem(0, n=20, p=12, dup=False)
    sess = highs(relax_nodes=7, relax_overlap_nodes=9).session(RidgeScore(X, y, lam=1.0, r=1.1), S_SIZE)
    assert (sess.relax_nodes, sess.relax_overlap_nodes) == (7, 9)


@pytest.mark.parametrize("name", ["relax_nodes", "relax_overlap_nodes", "node_limit", "leaf_limit", "master_cuts"])
def test_a_negative_count_is_refused_when_the_solver_is_configured(name):
    highs = registry().solver("highs")
    with pytest.raises(UserInputError, match=rf"highs\.{name}='-1' must lie in \[0, inf\)"):
        highs(**{name: "-1"})
    assert highs(**{name: 0}).config[name] == 0  # zero is a count too (no relaxations, no nodes)


@pytest.mark.parametrize("lam,r", [(0.1, 1.1), (1.0, np.inf)])
def test_exactly_the_budget_of_nodes_is_relaxed_and_the_answer_is_brute_force(lam, r):
    p = 30
    checked = 0
    for seed in range(3):
        X, y = tied_problem(seed, n=25, p=p, dup=seed % 2 == 0)
        score = RidgeScore(X, y, lam=lam, r=r)
        S, vals = _brute(score, p)
        opt = float(vals.min())
        canonical = S[vals <= opt * (1 + 1e-9)]
        canonical = canonical[np.lexsort(canonical.T[::-1])[0]].tolist()
        every = _session(score, relax_nodes=10**9)
        assert every.solve().support.tolist() == canonical
        eligible = every.relaxed  # every node that takes a relaxation when the budget allows all
        for budget in sorted({1, max(1, eligible // 2), eligible, 10**9}):
            sess = _session(score, relax_nodes=budget)
            got = sess.solve()
            # The runs coincide node for node until the budget is spent, so a budget below the
            # eligible count is spent exactly; a larger one relaxes every eligible node.
            assert sess.relaxed == min(budget, eligible)
            assert got.status == "optimal" and abs(got.objective - opt) <= 1e-9 * max(1.0, opt), (got, opt)
            assert got.support.tolist() == canonical
            assert got.lower_bound <= opt + 1e-9 * max(1.0, opt)
        checked += eligible > 2
    assert checked > 0  # some search needed more than two relaxed nodes: the budget was exercised


def test_overlap_budget_bounds_the_relaxations_of_a_threshold_search():
    p = 30
    X, y = tied_problem(1, n=25, p=p, dup=False)
    score = RidgeScore(X, y, lam=0.1, r=1.1)
    overlap = (np.arange(5), 1)
    S, vals = _brute(score, p, overlap=overlap)
    tau = float(np.sort(_brute(score, p)[1])[60])
    want = {tuple(row) for row in S[vals <= tau].tolist()}  # the level's members below tau
    counts = {}
    for budget in (1, 3, 10**9):
        sess = _session(score, relax_overlap_nodes=budget)
        sess.relax_overlap_after = 0
        below = sess.supports_below(tau, overlap=overlap)
        assert below.certified
        assert {tuple(row) for row in below.supports.tolist()} == want
        counts[budget] = sess.relaxed
    assert counts[1] <= 1 and counts[3] <= 3
    assert counts[10**9] > 3  # the search has more eligible nodes than the small budgets allow


@pytest.mark.parametrize("lam,r", [(0.1, 1.1), (1.0, np.inf), (0.3, 0.3)])
def test_closing_a_node_at_its_first_bound_over_the_bar_changes_no_answer(lam, r, monkeypatch):
    """A node relaxation stops at the first working-set round whose bound reaches the search's bar
    (``close_at``). Every node relaxed: the optimum and a threshold list are the brute-force ones
    and the same as when every relaxation runs to its end, and fewer working sets are solved."""
    from dpbench.core.oracle import kernels

    p = 30
    solves = [0]
    inner_solve = kernels.solve_working_set

    def counted_solve(*a):
        solves[0] += 1
        return inner_solve(*a)

    monkeypatch.setattr(kernels, "solve_working_set", counted_solve)
    saved = 0
    for seed in range(3):
        X, y = tied_problem(30 + seed, n=25, p=p, dup=seed % 2 == 0)
        score = RidgeScore(X, y, lam=lam, r=r)
        S, vals = _brute(score, p)
        tau = float(np.sort(vals)[20])
        runs, work = [], []
        for close in (True, False):
            sess = _session(score, relax_nodes=10**9, relax_overlap_nodes=10**9)
            sess.relax_overlap_after = 0
            # narrow first working sets, so that relaxations take several rounds at this small p
            sess.PROX_NODE = {**sess.PROX_NODE, "width": 0, "grow_min": 1}
            if not close:
                relax = sess._relax_node
                sess._relax_node = lambda F, C, m, warm=None, close_at=None: relax(F, C, m, warm)
            solves[0] = 0
            got = sess.solve()
            below = sess.supports_below(tau)
            runs.append((got.status, got.support.tolist(), got.objective, below.certified,
                         sorted(map(tuple, below.supports.tolist()))))
            work.append(solves[0])
        assert runs[0] == runs[1]
        opt = float(vals.min())
        assert runs[0][0] == "optimal" and abs(runs[0][2] - opt) <= 1e-9 * max(1.0, opt)
        assert runs[0][3] and runs[0][4] == sorted(map(tuple, S[vals <= tau].tolist()))
        assert work[0] <= work[1]
        saved += work[1] - work[0]
    assert saved > 0  # some relaxation did stop early
