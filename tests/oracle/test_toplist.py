"""The seeded bar and the per-root threshold enumeration of the top-R list, against brute force.

Expected values come from enumerating all C(p, s) supports with the shared score
(:func:`dpbench.testing.brute_force_scores`), independently of the code under test.
"""

import math
import os

import numpy as np
import pytest

from dpbench.core import toplist as _swaps
from dpbench.core.toplist import levels as _levels, roots as _roots
from dpbench_plugins.selectors.swaps.topr import auto_r

from helpers.exact import copies_problem, enumerate_all, exact_top_list, highs_trial, thresholded_levels_match


@pytest.mark.parametrize("seed,p,s,lam", [(0, 24, 4, 2.0), (2, 20, 4, 5.0), (4, 22, 3, 0.5)])
@pytest.mark.parametrize("per_level", [0, 12, 60, 10_000])
def test_seed_bar_bounds_the_rth_score(seed, p, s, lam, per_level):
    """U is >= the true R-th score, and equals it (within the tie window) when the pools cover every level."""
    trial = highs_trial(copies_problem(seed, p=p, s=s), lam)
    S, sc = enumerate_all(trial)
    singles = _swaps.single_swap_scores(trial)
    for R in (auto_r(p, s), 40, 300):
        U, scored = _roots.seed_bar(trial, singles, R, per_level)
        assert U >= sc[R - 1]
        sizes = [_swaps.level_size(p, s, t) for t in range(2, _swaps.max_level(p, s) + 1)]
        assert scored <= per_level * len(sizes)
        if per_level >= max(sizes):
            assert scored == sum(sizes)
            assert U <= sc[R - 1] * (1 + 2e-9)
        if per_level == 0 and R > 1 + len(singles.scores):
            assert U == math.inf


@pytest.mark.parametrize("seed,p,s,lam", [(0, 24, 4, 2.0), (1, 30, 3, 120.0), (3, 18, 4, 0.5)])
@pytest.mark.parametrize("R", ["auto", 300])
@pytest.mark.parametrize("per_level", [0, 25])
@pytest.mark.parametrize("oracle", [{}, {"enum_limit": 0, "leaf_limit": 1, "pair_leaf_limit": 0}], ids=["leaf-enum", "bnb-deep"])
def test_top_list_with_partial_seed_is_the_R_smallest(seed, p, s, lam, R, per_level, oracle, monkeypatch):
    """With pools far smaller than the levels (or none), the bar is loose and the per-root
    enumerations must still return exactly the R smallest supports in canonical order."""
    monkeypatch.setattr(_roots, "SEED_SUPPORTS", per_level)
    trial = highs_trial(copies_problem(seed, p=p, s=s), lam, **oracle)
    R = auto_r(p, s) if R == "auto" else R
    lst, S, sc = exact_top_list(trial, R)
    d = lst.diagnostics
    if d["levels_thresholded"]:
        assert d["seeded_bar"] >= sc[R - 1]
    for info in thresholded_levels_match(lst, S, sc, R):
        assert info["calls"] == 0
    # levels listed first with members under their threshold give R_t without an oracle call:
    # the brute-force minimum and its canonical support
    levels = s - np.isin(S, lst.supports[0]).sum(axis=1)
    for t in d["levels_first"]:
        if not d["levels_thresholded"][str(t)]["members_below"]:
            continue
        res = _swaps.level_optimum(trial, t)
        assert res.message == _levels.FROM_THRESHOLD and res.certified
        low = sc[levels == t].min()
        tied = S[(levels == t) & (sc <= low * (1 + 1e-9))]
        assert res.support.tolist() == tied[np.lexsort(tied.T[::-1])[0]].tolist()
        assert res.objective == pytest.approx(low, rel=1e-12)


def test_levels_first_happens_and_a_listing_gives_a_minimum_only_when_it_holds_the_ties():
    """Issue 22, item 2: on a design whose check fails, the large levels are listed first (no
    optimum call for them); a listing that is uncertified, empty, or whose threshold cuts
    through the minimum's tie window (with no bound above it) gives no minimum."""
    from dpbench.core.contracts.oracle import ThresholdResult

    trial = highs_trial(copies_problem(0, p=24, s=4), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
    R = 300
    lst, S, sc = exact_top_list(trial, R)
    assert lst.diagnostics["levels_first"], lst.diagnostics
    fresh = highs_trial(copies_problem(0, p=24, s=4), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
    _swaps.single_swap_scores(fresh)
    one = np.array([[0, 1, 2, 3]])

    def listing(scores, certified=True, threshold=5.0, lower=6.0):
        return ThresholdResult(np.repeat(one, len(scores), axis=0), np.array(scores, dtype=float), certified,
                               lower, threshold, "complete", 0, 0, 0.0, "")

    assert _levels.level_minimum_from_list(fresh, None, 2, listing([1.0], certified=False)) is None
    assert _levels.level_minimum_from_list(fresh, None, 2, listing([])) is None
    assert _levels.level_minimum_from_list(fresh, None, 2, listing([5.0], threshold=5.0, lower=5.0 + 1e-12)) is None
    assert ("swap_level", "highs", 2) not in fresh.cache


@pytest.mark.parametrize("seed,p,s,t", [(0, 16, 4, 2), (1, 14, 3, 2), (2, 12, 4, 3), (3, 13, 4, 4)])
@pytest.mark.parametrize("rank", [None, 7])
@pytest.mark.parametrize("few", [0, 1000], ids=["threshold", "stall-calls"])
def test_threshold_by_roots_matches_enumeration(seed, p, s, t, rank, few, monkeypatch):
    """Every level-t member <= tau, tau tightened by rank across roots, taken members excluded;
    also when each root's first search stalls (one node) and is redone by optimum calls
    (few members) or by the full threshold search (more than ``few`` found)."""
    monkeypatch.setattr(_roots, "ROOT_FIRST_NODES", 1)
    trial = highs_trial(copies_problem(seed, p=p, s=s), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0, open_pairs=0)
    S, sc = enumerate_all(trial)
    center = S[0]
    lvl = np.flatnonzero(s - np.isin(S, center).sum(axis=1) == t)
    taken = S[lvl[:1]]  # the level's optimum, as the merge has taken it
    rest = lvl[1:]
    tau0 = float(sc[rest[min(len(rest) - 1, 10)]])
    known = sc[:3] if rank else ()
    res = _roots.threshold_by_roots(trial.oracle("highs"), center, t, tau0, exclude=taken, rank=rank,
                                    known_scores=known, few_by_calls=few, node_limit=10_000)
    pool = np.concatenate([np.asarray(known, dtype=float), sc[rest]])
    tau = tau0 if rank is None else min(tau0, float(np.sort(pool)[rank - 1]))
    assert res.certified and res.status == "complete"
    if few == 0:
        assert res.calls == 0
    if few == 1000:
        assert res.calls > 0  # a root stalls at its first node unless it is tiny
    np.testing.assert_allclose(res.threshold, tau, rtol=1e-12)
    want = rest[sc[rest] <= res.threshold]
    np.testing.assert_array_equal(res.supports, S[want])
    left = np.setdiff1d(rest, want)
    if left.size:
        assert res.threshold < res.lower_bound <= sc[left].min() * (1 + 1e-12)


def test_threshold_by_roots_work_limit_keeps_a_valid_bound():
    """Roots stopped by their node limit: uncertified, and the bound holds for every member not returned."""
    trial = highs_trial(copies_problem(0, p=16, s=4), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
    S, sc = enumerate_all(trial)
    center = S[0]
    lvl = np.flatnonzero(s_lvl := (4 - np.isin(S, center).sum(axis=1) == 2))
    assert s_lvl.any()
    res = _roots.threshold_by_roots(trial.oracle("highs"), center, 2, math.inf, node_limit=1)
    assert not res.certified and res.status == "work_limit"
    got = {tuple(r) for r in res.supports.tolist()}
    missed = [i for i in lvl if tuple(S[i].tolist()) not in got]
    assert missed and res.lower_bound <= sc[missed].min()


def test_threshold_by_roots_stalled_root_with_more_members_falls_back_to_the_search(monkeypatch):
    """few_by_calls = 1: roots that look small go to optimum calls, which stop at 4 members and
    hand over to the full threshold search; the result is still exactly the level below tau."""
    monkeypatch.setattr(_roots, "ROOT_FIRST_NODES", 1)
    trial = highs_trial(copies_problem(1, p=14, s=3), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0, open_pairs=0)
    S, sc = enumerate_all(trial)
    center = S[0]
    lvl = np.flatnonzero(3 - np.isin(S, center).sum(axis=1) == 2)
    tau = float(sc[lvl[20]])
    res = _roots.threshold_by_roots(trial.oracle("highs"), center, 2, tau, few_by_calls=1, node_limit=10_000)
    assert res.certified and res.calls > 0
    np.testing.assert_array_equal(res.supports, S[lvl[sc[lvl] <= tau]])


def test_threshold_by_roots_gives_the_same_answer_for_any_workers():
    """Issue 22, both cores: the roots run on forked processes with the same result, node counts included."""
    from dpbench.core.oracle import parallel

    trial = highs_trial(copies_problem(2, p=16, s=4), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
    S, sc = enumerate_all(trial)
    center = S[0]
    out = [_roots.threshold_by_roots(trial.oracle("highs"), center, 2, float(sc[60]), rank=30, known_scores=sc[:3],
                                     node_limit=10_000, workers=w) for w in (1, 2)]
    if os.cpu_count() >= 2:
        assert parallel.usable_workers(2, 6) == 2  # the forked path ran
    a, b = out
    assert a.certified and b.certified
    np.testing.assert_array_equal(a.supports, b.supports)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert (a.nodes, a.calls, a.threshold, a.lower_bound) == (b.nodes, b.calls, b.threshold, b.lower_bound)
    lvl = np.flatnonzero(4 - np.isin(S, center).sum(axis=1) == 2)
    np.testing.assert_array_equal(a.supports, S[lvl[sc[lvl] <= a.threshold]])


def _square_or_fail(x):
    if x == 3:
        raise ValueError("three")
    return x * x


def test_map_calls_keeps_order_raises_and_stays_serial_where_it_cannot_fork(monkeypatch):
    from dpbench.core.oracle import parallel

    assert parallel.map_calls(_square_or_fail, [(i,) for i in (5, 1, 4, 2)], workers=2) == [25, 1, 16, 4]
    with pytest.raises(ValueError, match="three"):
        parallel.map_calls(_square_or_fail, [(1,), (3,)], workers=2)
    assert parallel.usable_workers(8, 1) == 1 and parallel.usable_workers(1, 8) == 1
    assert parallel.usable_workers(10 ** 6, 10 ** 6) <= os.cpu_count()  # bounded by the machine
    import threading

    seen = []
    worker = threading.Thread(target=lambda: seen.append(parallel.can_fork()))
    worker.start()
    worker.join()
    assert seen == [False]  # not from a task thread (a dask worker's)
    monkeypatch.setattr(parallel, "can_fork", lambda: False)  # e.g. inside a daemonic dask worker
    assert parallel.usable_workers(2, 6) == 1
    assert parallel.map_calls(_square_or_fail, [(2,), (6,)], workers=2) == [4, 36]


def _pid_and(x):
    return os.getpid(), x


def test_map_calls_beside_runs_here_in_this_process_and_the_calls_in_forked_ones(monkeypatch):
    """``here`` (an optimum call whose cuts must stay) runs in the caller; the calls (listings) on forked
    processes started before it, or, when none can be forked, first and in the caller."""
    from dpbench.core.oracle import parallel

    order = []
    here = lambda: order.append("here") or os.getpid()  # noqa: E731
    out, res = parallel.map_calls_beside(_pid_and, [(i,) for i in (3, 1, 2)], 2, here)
    assert out == os.getpid() and [x for _, x in res] == [3, 1, 2]
    if parallel.can_fork() and (os.cpu_count() or 1) > 1:
        assert all(pid != os.getpid() for pid, _ in res)
    with pytest.raises(ValueError, match="three"):
        parallel.map_calls_beside(_square_or_fail, [(1,), (3,)], 2, here)
    order.clear()
    calls_first = lambda x: order.append(x) or x  # noqa: E731  (in this process: seen in order)
    monkeypatch.setattr(parallel, "can_fork", lambda: False)
    out, res = parallel.map_calls_beside(calls_first, [(7,), (8,)], 2, here)
    assert order == [7, 8, "here"] and res == [7, 8] and out == os.getpid()


def test_inside_a_dask_task_the_roots_become_cluster_tasks_with_the_serial_answer():
    """Issue 22, item 3: under ``--backend dask`` a level's roots spread over the cluster's workers
    (one task per root, at most ``workers`` at a time) and give the serial answer, node counts included."""
    import functools
    import operator

    distributed = pytest.importorskip("dask.distributed")
    from dpbench.core.oracle import parallel

    trial = highs_trial(copies_problem(2, p=16, s=4), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)
    S, sc = enumerate_all(trial)
    center = S[0]
    session = trial.oracle("highs")
    args = (center, 2, float(sc[60]))
    kw = dict(rank=30, known_scores=sc[:3], node_limit=10_000)
    serial = _roots.threshold_by_roots(session, *args, workers=1, **kw)
    assert not parallel.in_dask_task()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream:
            # (client.submit's own ``workers`` keyword places tasks: the call's goes through partial)
            call = functools.partial(_roots.threshold_by_roots, workers=2, **kw)
            spread = client.submit(call, session, *args, pure=False).result()
        roots = [t for t in stream.data if str(t["key"]).startswith("_call_in_band-")]
        assert len({t["key"] for t in roots}) == math.comb(4, 2)  # one cluster task per root
        squares = client.submit(functools.partial(parallel.map_calls, workers=3), operator.mul,
                                [(i, i) for i in (5, 1, 4, 2)], pure=False)
        assert squares.result() == [25, 1, 16, 4]  # argument order, whatever finished first
        failing = client.submit(functools.partial(parallel.map_calls, workers=2), operator.truediv,
                                [(1, 1), (1, 0), (2, 1)], pure=False)
        with pytest.raises(ZeroDivisionError):
            failing.result()
    assert spread.certified and serial.certified
    np.testing.assert_array_equal(spread.supports, serial.supports)
    np.testing.assert_array_equal(spread.scores, serial.scores)
    assert (spread.nodes, spread.calls, spread.threshold, spread.lower_bound) == \
        (serial.nodes, serial.calls, serial.threshold, serial.lower_bound)


@pytest.mark.parametrize("seed,p,s,lam", [(0, 24, 4, 2.0), (4, 22, 3, 0.5)])
def test_a_short_level_search_is_kept_only_when_certified(seed, p, s, lam, monkeypatch):
    """level_optimum_within: a search stopped by its small limit is returned but not cached, so the
    level's optimum is searched again with the full limit; a certified one is cached as the
    level's optimum. Both optima are the brute-force minimum and its canonical support."""
    monkeypatch.setattr(_levels, "LEVEL_ENUM_LIMIT", 0)
    trial = highs_trial(copies_problem(seed, p=p, s=s), lam, enum_limit=0, leaf_limit=1, pair_leaf_limit=0)  # branch to the leaves
    S, sc = enumerate_all(trial)
    levels = s - np.isin(S, S[0]).sum(axis=1)
    stopped = []
    for t in range(2, _swaps.max_level(p, s) + 1):
        short = _swaps.level_optimum_within(trial, t, node_limit=1)
        key = ("swap_level", trial.solver, t)
        assert (key in trial.cache) == short.certified
        stopped += [t] if not short.certified else []
        full = _swaps.level_optimum(trial, t)
        assert full.certified and full.objective == pytest.approx(sc[levels == t].min(), rel=1e-12)
        assert full.support.tolist() == S[levels == t][0].tolist()  # canonical order: first of its level
        if not short.certified:  # its box holds the optimum
            assert short.lower_bound <= full.objective * (1 + 1e-9) and full.objective <= short.objective * (1 + 1e-12)
        assert _swaps.level_optimum_within(trial, t, node_limit=1) is full  # cached now
    assert stopped  # the limit of one node stops at least one level


_SLOW_MAP = """
import signal, time
from dpbench.core.oracle import parallel
class Stop(Exception):
    pass
def stop(signum, frame):  # as the command line's handlers do (dpbench.bench.signals)
    raise Stop(signal.Signals(signum).name)
signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)
def slow(i):
    time.sleep(60)
    return i
print("started", flush=True)
parallel.map_calls(slow, [(0,), (1,)], workers=2)
"""


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two CPUs")
@pytest.mark.parametrize("to_group", [False, True])
def test_an_interrupt_ends_a_forked_map_at_once_without_child_tracebacks(to_group):
    """SIGINT to the caller alone (``kill``) or to its whole process group (a terminal's Ctrl-C): the
    caller raises, its pool terminates the map's processes at once instead of waiting for their
    calls (60 s here), and they print nothing of their own (they ignore SIGINT)."""
    import signal
    import subprocess
    import sys
    import time

    from dpbench.core.oracle import parallel

    if not parallel.can_fork():
        pytest.skip("no fork here")
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_MAP], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == "started"
    time.sleep(1.5)  # the pool's processes are running their calls
    t0 = time.monotonic()
    (os.killpg if to_group else os.kill)(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert time.monotonic() - t0 < 10
    assert proc.returncode != 0 and err.count("Traceback") == 1 and "Stop: SIGINT" in err, err
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # nothing of the group is left
