"""Tail nodes (``child_batch``): a node with three or more features left pushes only its first open
children and the rest of its candidates as one node bounded by its own relaxation.

Exact answers from brute force over all C(p, s) supports: optima, overlap levels and threshold
lists are the same with the tail nodes on (several batch sizes) and off, and the tails really ran
(the search visits different nodes). The default is the documented one.
"""

import numpy as np
import pytest

from dpbench.bench.registry import registry
from dpbench.core.oracle.limits import CHILD_BATCH, TIE_RTOL, canonical_minimum
from dpbench.core.oracle.options import OracleOptions
from dpbench.testing.reference import all_supports
from helpers.solvers import level_nodes_match_brute_force, make_problem, noise_problem

S_SIZE = 5


def _session(score, child_batch):
    """Branch and bound to the nodes with two features left (enum_limit = 0, leaf_limit = 1), every node
    of every call relaxed from the first (so a tail node always gets its own relaxation)."""
    sess = registry().solver("highs")(enum_limit=0, leaf_limit=1, pair_leaf_limit=0, child_batch=child_batch).session(score, S_SIZE)
    sess.relax_after, sess.relax_bnb, sess.relax_cand = 0, 1000, 0
    sess.relax_overlap_after = 0
    return sess


def _problem(kind, seed, lam):
    """Noise (about 70-170 nodes at lam = 0.1 without tails, half as many with them) or a planted problem."""
    return noise_problem(seed, lam) if kind == "noise" else make_problem(kind, seed, n=40, p=18, lam=lam)


def test_the_default_is_the_documented_one_and_a_solver_parameter():
    assert OracleOptions().child_batch == CHILD_BATCH == 8
    highs = registry().solver("highs")
    assert highs.params["child_batch"].default == CHILD_BATCH
    score = make_problem("corr", 0, n=30, p=12, lam=1.0)
    assert highs(child_batch=3).session(score, S_SIZE).child_batch == 3


@pytest.mark.parametrize("kind,seed,lam", [("noise", 0, 0.1), ("noise", 1, 0.1), ("noise", 3, 1.0), ("corr", 0, 0.5),
                                           ("indep", 2, 2.0), ("ties", 3, 1.0)])
def test_optimum_and_overlap_levels_match_brute_force_with_and_without_tails(kind, seed, lam):
    score = _problem(kind, seed, lam)
    S = all_supports(score.p, S_SIZE)
    sc = score(S)
    S1, v1 = canonical_minimum(S, sc)
    nodes = {}
    for batch in (0, 1, 2):
        res = _session(score, batch).solve()
        assert res.status == "optimal"
        np.testing.assert_array_equal(np.sort(res.support), S1)
        np.testing.assert_allclose(res.objective, v1, rtol=TIE_RTOL)
        nodes[batch] = [res.iterations] + level_nodes_match_brute_force(
            lambda **kw: _session(score, batch).solve(**kw), S, sc, S1, (2, 3, 4, 5))
    if kind == "noise":  # the tails ran: the searches with them visit other nodes than the one without
        assert nodes[1] != nodes[0] and nodes[2] != nodes[0]


@pytest.mark.parametrize("kind,seed,lam", [("noise", 2, 0.1), ("corr", 4, 1.0), ("ties", 5, 3.0)])
@pytest.mark.parametrize("quantile", [0.002, 0.02])
def test_threshold_lists_match_brute_force_with_and_without_tails(kind, seed, lam, quantile):
    score = _problem(kind, seed, lam)
    S = all_supports(score.p, S_SIZE)
    sc = score(S)
    S1 = S[np.argmin(sc)]
    for t in (None, 3, 5):
        lvl = np.ones(len(S), bool) if t is None else (S_SIZE - np.isin(S, S1).sum(axis=1)) == t
        tau = float(np.quantile(sc[lvl], quantile))
        want = {tuple(r) for r in S[lvl & (sc <= tau)].tolist()}
        for batch in (0, 1):
            overlap = None if t is None else (S1, S_SIZE - t)
            got = _session(score, batch).supports_below(tau, overlap=overlap)
            assert got.certified
            assert {tuple(r) for r in np.sort(got.supports, axis=1).tolist()} == want
            assert got.lower_bound > tau
