"""The path an unconstrained OA call takes (issue 15: microarray certification), against brute force.

* When the k-support relaxation leaves many survivors (more than ``relax_bnb``) and the
  Schur/Gershgorin search does not certify, the call finishes by the survivors' branch and
  bound (``relax_bnb_max``), not by the OA master loop: no master is solved, and the answer
  is the brute-force optimum, canonical among exact ties, with a valid lower bound.
* A master solved before the relaxation is a probe capped at ``first_master_nodes`` MILP
  nodes (a count); a probe stopped by that cap hands over to the relaxation and the call
  still certifies the brute-force optimum.
* No wall-clock limit decides a result: while the safety net does not fire, supports,
  objectives, bounds, statuses, iteration counts and messages are identical whatever its
  value (``inf``, the default, or a week).
"""

import math

import numpy as np
import pytest

from dpbench.core.oracle.constraints import ConstraintSet
from dpbench.core.oracle.limits import tie_bar
from dpbench.bench.registry import registry
from dpbench.core.score import RidgeScore
from dpbench.testing import all_supports


def _problem(seed, n=40, p=24, lam=1.0, r=1.1, dup=True):
    """Clipped data with a 3-sparse signal; ``dup``: column 1 duplicates column 0 (exact ties)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, p))
    if dup:
        X[:, 1] = X[:, 0]
    beta = np.zeros(p)
    beta[[0, 5, 9]] = [0.9, -0.7, 0.6]
    y = np.clip(X @ beta + 0.3 * rng.standard_normal(n), -0.5, 0.5)
    return RidgeScore(X, y, lam=lam, r=r)


def _session(score, s, masters=None, **kw):
    """A highs session whose master solves are recorded in ``masters`` (node limits)."""
    sess = registry().solver("highs")(**kw).session(score, s)
    if masters is not None:
        inner = sess.solve_master

        def record(master, time_limit, gap, node_limit):
            res = inner(master, time_limit, gap, node_limit)
            masters.append((node_limit, res.status))
            return res

        sess.solve_master = record
    return sess


def _brute(score, s, **kw):
    """(canonical optimum, its score) over the supports feasible for ``kw``."""
    S = all_supports(score.p, s)
    vals = score(S)
    cons = ConstraintSet.build(score.p, s, kw.get("exclude", ()), None, kw.get("fixed_in", ()),
                               kw.get("fixed_out", ()))
    ok = cons.feasible_mask(S)
    S, vals = S[ok], vals[ok]
    v = vals.min()
    tied = S[vals <= tie_bar(v)]
    return tied[np.lexsort(tied.T[::-1])[0]], v


def _check(res, score, s, kw):
    best, v = _brute(score, s, **kw)
    assert res.status == "optimal", res
    assert abs(res.objective - v) <= 1e-9 * max(1.0, v), (res, v)
    assert res.support.tolist() == best.tolist(), (res.support, best)
    assert res.lower_bound <= v + 1e-9 * max(1.0, v)


@pytest.mark.parametrize("lam,r", [(0.3, 1.1), (1.0, math.inf), (10.0, 0.3)])
def test_many_survivors_take_the_branch_and_bound_instead_of_the_master_loop(lam, r):
    s = 3
    seen_search = False
    for seed in range(2):
        score = _problem(seed, p=20, lam=lam, r=r)
        rng = np.random.default_rng(seed)
        for kw in ({}, {"fixed_in": [int(rng.integers(score.p))]}, {"exclude": [_brute(score, s)[0]]}):
            for gnodes in (0, 1):  # no Gershgorin search / one that stops after one node
                masters = []
                sess = _session(score, s, masters, enum_limit=0, leaf_limit=4, pair_leaf_limit=0, gershgorin_nodes=gnodes)
                sess.relax_after, sess.relax_bnb = 0, 0  # relaxation first; never "few survivors"
                res = sess.solve(**kw)
                _check(res, score, s, kw)
                if "k-support branch and bound" in res.message:
                    seen_search = True
                    assert masters == []  # the master loop was never entered
                else:  # certified before the search: by the root bound or the Gershgorin search
                    assert "relaxation bound" in res.message or "Gershgorin" in res.message, res.message
    assert seen_search  # the new route really ran


def test_probe_master_is_capped_and_hands_over_to_the_relaxation():
    s = 3
    capped = False
    for seed in range(3):
        score = _problem(seed, n=30, p=30, lam=0.5, r=1.1)
        for cap in (0, 1, 10**6):
            masters = []
            sess = _session(score, s, masters, enum_limit=0, leaf_limit=4, pair_leaf_limit=0)
            sess.first_master_nodes = cap
            res = sess.solve()
            _check(res, score, s, {})
            if masters:
                # Only the master before the relaxation (the probe) gets the cap.
                assert masters[0][0] == min(cap, sess.master_node_limit)
                assert all(nl == sess.master_node_limit for nl, _ in masters[1:])
                capped |= masters[0][1] == "work_limit"
    assert capped  # some probe really stopped at its cap and the call still certified


def test_result_does_not_depend_on_the_safety_net_when_it_does_not_fire():
    s = 3
    paths = set()
    for seed in range(2):
        for lam in (0.5, 120.0):
            score = _problem(seed, n=30, p=30, lam=lam)
            outs = []
            for net in (math.inf, 3600.0, 7 * 86400.0):
                sess = _session(score, s, enum_limit=0, leaf_limit=4, pair_leaf_limit=0, safety_time_limit=net)
                rows = []
                for kw in ({}, {"fixed_in": [2]}, {"fixed_out": [0, 5]}):
                    r = sess.solve(**kw)
                    rows.append((r.support.tolist(), r.objective, r.lower_bound, r.status, r.iterations, r.message))
                outs.append(rows)
                paths |= {row[5].split(" over")[0] for row in rows}
            assert outs[0] == outs[1] == outs[2]
            assert all(row[3] == "optimal" for row in outs[0])
    assert len(paths) >= 2, paths  # more than one path of the call was exercised
