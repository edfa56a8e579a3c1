"""The best support of a swap level from its roots, with an incumbent (dpbench.core.oracle.threshold).

With a known member of the level, only the incumbent's root is solved; the other roots are
listed below the tie window of the best score so far. Answers are compared with brute force
on small problems: the level's minimum and its canonical support, or None where the tie spans
roots (the caller then asks the joint call), and a box that holds the exact minimum when a
work limit stops a root.
"""

import math
import os

import numpy as np
import pytest

from dpbench.api import OracleResult
from dpbench.core.oracle.limits import tie_bar
from dpbench.core.oracle.threshold import overlap_by_roots
from helpers.exact import copies_problem, duplicates_problem, enumerate_all, highs_trial, three_pairs_problem


class _Counting:
    """Forwards ``solve`` and ``supports_below`` to a session and records which was called."""

    def __init__(self, inner):
        self.inner, self.log = inner, []
        self.s = inner.s

    def solve(self, **kw):
        self.log.append("solve")
        return self.inner.solve(**kw)

    def supports_below(self, threshold, **kw):
        self.log.append("list")
        return self.inner.supports_below(threshold, **kw)


def _level(S, sc, center, t):
    """Members of level t (rows of S), their scores, the minimum and the canonical support."""
    s = center.size
    lvl = s - np.isin(S, center).sum(axis=1) == t
    Sl, scl = S[lvl], sc[lvl]
    vmin = scl.min()
    tied = np.flatnonzero(scl <= tie_bar(vmin))
    canon = Sl[tied[np.lexsort(Sl[tied].T[::-1])[0]]]
    return Sl, scl, vmin, canon


@pytest.mark.parametrize("problem,lam", [
    (copies_problem(0, p=16, s=4), 2.0), (copies_problem(2, p=12, s=4), 0.5), (duplicates_problem(0), 2.0),
    (three_pairs_problem(0), 2.0)], ids=["copies-4", "copies-4-lam0.5", "dups-0", "ties-across-roots"])
@pytest.mark.parametrize("which", ["best", "median", "worst"])
def test_incumbent_roots_match_brute_force(problem, lam, which):
    """Whatever member of the level is the incumbent, the answer is the level's canonical optimum
    (or None on a tie across roots), one root is solved and every other root is listed."""
    trial = highs_trial(problem, lam, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
    S, sc = enumerate_all(trial)
    center = S[0]
    s = trial.s
    for t in range(2, min(s, trial.p - s) + 1):
        Sl, scl, vmin, canon = _level(S, sc, center, t)
        pick = {"best": 0, "median": len(scl) // 2, "worst": len(scl) - 1}[which]
        inc = OracleResult(Sl[pick], float(scl[pick]), -np.inf, "work_limit", 0, 0.0)
        sess = _Counting(trial.oracle("highs"))
        res = overlap_by_roots(sess, center, s - t, incumbent=inc)
        n_roots = math.comb(s, s - t)
        assert sess.log == ["list"] * (n_roots - 1) + ["solve"]  # the listed roots first, then the solved one
        # a tie that spans roots is the joint call's to break (None), as without an incumbent
        plain = overlap_by_roots(trial.oracle("highs"), center, s - t)
        if res is None:
            assert plain is None
            continue
        assert res.certified and res.status == "optimal"
        np.testing.assert_array_equal(res.support, canon)
        np.testing.assert_allclose(res.objective, vmin, rtol=1e-12)
        assert res.lower_bound <= res.objective and np.isclose(res.lower_bound, res.objective, rtol=1e-12)
        assert plain is not None and np.array_equal(plain.support, res.support)


def test_incumbent_roots_work_limit_box_holds_the_minimum():
    """Roots stopped by a one-node work limit leave the level uncertified, with a lower bound at or
    below the exact minimum and an answer (an upper bound) at or above it."""
    trial = highs_trial(copies_problem(0, p=16, s=4), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0, open_pairs=0)
    S, sc = enumerate_all(trial)
    center = S[0]
    Sl, scl, vmin, _ = _level(S, sc, center, 2)
    inc = OracleResult(Sl[-1], float(scl[-1]), -np.inf, "work_limit", 0, 0.0)
    res = overlap_by_roots(trial.oracle("highs"), center, 2, node_limit=1, incumbent=inc)
    assert not res.certified and res.status == "work_limit"
    assert res.lower_bound <= vmin <= res.objective


def test_session_without_listing_solves_every_root():
    """A session that only wraps ``solve`` gets one optimum call per root, as before incumbents."""

    class SolveOnly:
        def __init__(self, inner):
            self.inner, self.calls = inner, 0

        def solve(self, **kw):
            self.calls += 1
            return self.inner.solve(**kw)

    trial = highs_trial(copies_problem(0, p=16, s=4), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
    S, sc = enumerate_all(trial)
    Sl, scl, vmin, canon = _level(S, sc, S[0], 2)
    sess = SolveOnly(trial.oracle("highs"))
    inc = OracleResult(Sl[-1], float(scl[-1]), -np.inf, "work_limit", 0, 0.0)
    res = overlap_by_roots(sess, S[0], 2, incumbent=inc)
    assert sess.calls == 6  # C(4, 2) roots
    np.testing.assert_array_equal(res.support, canon)


def test_root_with_too_many_members_is_solved_instead(monkeypatch):
    """A root whose listing would exceed ROOT_LIST_MAX members gets its optimum call: with a cap of
    0, any root holding a member below the incumbent's window is solved, and the answer is still
    brute force's."""
    from dpbench.core.oracle import threshold

    monkeypatch.setattr(threshold, "ROOT_LIST_MAX", 0)
    trial = highs_trial(copies_problem(0, p=16, s=4), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0, open_pairs=0)
    S, sc = enumerate_all(trial)
    center = S[0]
    Sl, scl, vmin, canon = _level(S, sc, center, 2)
    inc = OracleResult(Sl[-1], float(scl[-1]), -np.inf, "work_limit", 0, 0.0)
    sess = _Counting(trial.oracle("highs"))
    res = overlap_by_roots(sess, center, 2, incumbent=inc)
    assert sess.log.count("solve") >= 2  # the worst member's window holds members of other roots
    np.testing.assert_array_equal(res.support, canon)
    np.testing.assert_allclose(res.objective, vmin, rtol=1e-12)


def test_session_listing_by_calls_solves_every_root():
    """A session whose listing is repeated optimum calls (``threshold_by_calls``) keeps one optimum
    call per root: listing a root would cost at least that call."""
    trial = highs_trial(copies_problem(0, p=16, s=4), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
    S, sc = enumerate_all(trial)
    Sl, scl, vmin, canon = _level(S, sc, S[0], 2)
    sess = _Counting(trial.oracle("highs"))
    sess.threshold_by_calls = True
    inc = OracleResult(Sl[-1], float(scl[-1]), -np.inf, "work_limit", 0, 0.0)
    res = overlap_by_roots(sess, S[0], 2, incumbent=inc)
    assert sess.log == ["solve"] * 6  # C(4, 2) roots, none listed
    np.testing.assert_array_equal(res.support, canon)


@pytest.mark.parametrize("list_max", [10_000, 0], ids=["listed", "optimum-calls"])
def test_roots_on_two_processes_give_the_serial_answer_and_work(monkeypatch, list_max):
    """The roots' calls are independent (tau from the incumbent alone): run on two forked processes
    they give the same support, bounds, status and work count as one after another, and leave the
    same cuts in the session, also when a listed root falls back to its optimum call (list_max 0)."""
    from dpbench.core.oracle import threshold
    from dpbench.core.oracle.parallel import map_session_calls, usable_workers

    monkeypatch.setattr(threshold, "ROOT_LIST_MAX", list_max)

    problem = copies_problem(0, p=16, s=4)
    checked = 0
    for which in ("best", "worst"):
        trial = highs_trial(problem, 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
        S, sc = enumerate_all(trial)
        center = S[0]
        Sl, scl, vmin, canon = _level(S, sc, center, 2)
        pick = 0 if which == "best" else len(scl) - 1
        inc = OracleResult(Sl[pick], float(scl[pick]), -np.inf, "work_limit", 0, 0.0)
        one = trial.oracle("highs")
        serial = overlap_by_roots(one, center, 2, incumbent=inc)
        fresh = highs_trial(problem, 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
        sess = fresh.oracle("highs")
        both = overlap_by_roots(sess, center, 2, incumbent=inc,
                                beside=lambda fn, args, here: map_session_calls(sess, fn, args, 2, here))
        assert (serial is None) == (both is None)
        if serial is None:
            continue
        np.testing.assert_array_equal(both.support, serial.support)
        np.testing.assert_array_equal(both.support, canon)
        assert (both.objective, both.lower_bound, both.status, both.iterations) == \
            (serial.objective, serial.lower_bound, serial.status, serial.iterations)
        # the solved root's cuts stayed in the session as in the serial run: a later call does the same work
        assert len(sess.pool) == len(one.pool) > 0
        later = [x.solve(overlap=(center, 1)) for x in (one, sess)]
        assert later[0].iterations == later[1].iterations and np.array_equal(later[0].support, later[1].support)
        checked += 1
    assert checked and usable_workers(2, 6) == min(2, os.cpu_count() or 1)
