"""A long search finished in parts (``split_parts``, ``split_after``, ``workers``; dpbench.core.oracle.split).

Exact answers from brute force over all C(p, s) supports: optima, overlap levels and threshold
lists (with and without ``rank``) are the same split into two or three parts as unsplit, and the
split really ran. The answer, the node count, the bound and the certification are the same on
one process and on two (the forked path), and a node limit too small for the parts stops them
alike on both.
"""

import os
import sys
import time

import numpy as np
import pytest

from dpbench.bench.registry import registry
from dpbench.core.oracle import split
from dpbench.core.errors import UserInputError
from dpbench.core.oracle.limits import SPLIT_AFTER, SPLIT_PARTS, SPLIT_PARTS_MAX, TIE_RTOL, canonical_minimum
from dpbench.core.oracle.options import OracleOptions
from dpbench.core.oracle import parallel
from dpbench.testing.reference import all_supports
from helpers.solvers import level_nodes_match_brute_force, make_problem, noise_problem

S_SIZE = 5


def _session(score, parts, after=5, workers=1, **kw):
    """Branch and bound to the nodes with two features left (enum_limit = 0, leaf_limit = 1), split after
    ``after`` nodes, every node of every call relaxed from the first."""
    sess = registry().solver("highs")(enum_limit=0, leaf_limit=1, pair_leaf_limit=0, split_parts=parts, split_after=after,
                                      workers=workers, **kw).session(score, S_SIZE)
    sess.relax_after, sess.relax_bnb, sess.relax_cand = 0, 1000, 0
    sess.relax_overlap_after = 0
    return sess


def _problem(kind, seed, lam):
    return noise_problem(seed, lam) if kind == "noise" else make_problem(kind, seed, n=40, p=18, lam=lam)


@pytest.fixture
def splits(monkeypatch):
    """Counts the searches that split (the wrapped function runs unchanged)."""
    seen = []
    real = split.search_parts

    def counting(*args):
        seen.append(args[0].split_parts)
        return real(*args)

    monkeypatch.setattr("dpbench.core.oracle.branch_and_bound.search_parts", counting)
    return seen


def test_the_defaults_are_the_documented_ones_and_solver_parameters():
    opts = OracleOptions()
    assert (opts.split_parts, opts.split_after, opts.workers) == (SPLIT_PARTS, SPLIT_AFTER, SPLIT_PARTS) == (2, 500, 2)
    highs = registry().solver("highs")
    assert highs.params["split_parts"].default == SPLIT_PARTS and highs.params["split_after"].default == SPLIT_AFTER
    sess = highs(split_parts=3, split_after=7, workers=1).session(make_problem("corr", 0, n=30, p=12, lam=1.0), S_SIZE)
    assert (sess.split_parts, sess.split_after, sess.workers) == (3, 7, 1)
    with pytest.raises(UserInputError, match="split_parts"):  # each part copies caches: bounded
        highs.params["split_parts"].convert("split_parts", str(SPLIT_PARTS_MAX + 1))


@pytest.mark.parametrize("kind,seed,lam", [("noise", 0, 0.1), ("noise", 1, 0.1), ("corr", 0, 0.5), ("ties", 3, 1.0)])
def test_optimum_and_overlap_levels_match_brute_force_split_or_not(kind, seed, lam, splits):
    score = _problem(kind, seed, lam)
    S = all_supports(score.p, S_SIZE)
    sc = score(S)
    S1, v1 = canonical_minimum(S, sc)
    for parts, after in ((1, 5), (2, 1), (2, 5), (3, 3)):
        res = _session(score, parts, after).solve()
        assert res.status == "optimal"
        np.testing.assert_array_equal(np.sort(res.support), S1)
        np.testing.assert_allclose(res.objective, v1, rtol=TIE_RTOL)
        assert res.lower_bound <= v1 * (1 + 1e-9)
        level_nodes_match_brute_force(lambda **kw: _session(score, parts, after).solve(**kw), S, sc, S1, (2, 3, 4, 5))
    assert 2 in splits and 3 in splits  # the parts ran, not only the unsplit search
    assert 1 not in splits  # split_parts = 1 never splits


@pytest.mark.parametrize("kind,seed,lam", [("noise", 2, 0.1), ("corr", 4, 1.0), ("ties", 5, 3.0)])
@pytest.mark.parametrize("quantile", [0.002, 0.02])
def test_threshold_lists_match_brute_force_split_or_not(kind, seed, lam, quantile, splits):
    score = _problem(kind, seed, lam)
    S = all_supports(score.p, S_SIZE)
    sc = score(S)
    tau = float(np.quantile(sc, quantile))
    want = {tuple(r) for r in S[sc <= tau].tolist()}
    rank = max(1, len(want) // 2)
    ranked = {tuple(r) for r in S[sc <= np.sort(sc)[rank - 1]].tolist()}
    lists = []
    for parts, after in ((1, 5), (2, 2), (3, 4), (2, 12), (3, 25)):
        res = _session(score, parts, after).supports_below(tau)
        assert res.certified
        assert {tuple(r) for r in np.sort(res.supports, axis=1).tolist()} == want and len(res.supports) == len(want)
        top = _session(score, parts, after).supports_below(np.inf, rank=rank)
        assert top.certified
        # each support once: a support found before the split and counted again per part would
        # also count twice towards rank and push a member out of the list
        assert {tuple(r) for r in np.sort(top.supports, axis=1).tolist()} == ranked and len(top.supports) == len(ranked)
        lists.append((res.supports.tolist(), res.scores.tolist(), top.supports.tolist(), top.scores.tolist()))
    assert all(x == lists[0] for x in lists)  # the same lists, in the same order, split or not
    assert 2 in splits and 3 in splits


def _outcome(res):
    if hasattr(res, "supports"):
        return (res.supports.tolist(), res.scores.tolist(), res.lower_bound, res.status, res.nodes)
    return (None if res.support is None else res.support.tolist(), res.objective, res.lower_bound, res.status,
            res.message)


@pytest.mark.skipif((os.cpu_count() or 1) < 2 or not parallel.can_fork(), reason="needs two CPUs and fork")
@pytest.mark.parametrize("node_limit", [100_000, 40])
def test_one_process_or_two_give_the_same_answer_nodes_and_certification(node_limit, splits):
    """The forked path (two workers) and the serial one (one) on the same calls, also when the node
    limit stops the parts: identical supports, scores, bounds, statuses and node counts."""
    assert parallel.usable_workers(2, 2) == 2
    score = noise_problem(7, 0.1, n=30, p=20)
    out = {}
    for workers in (1, 2):
        sess = _session(score, 2, 10, workers, node_limit=node_limit)
        first = sess.solve()
        out[workers] = [_outcome(first), _outcome(sess.supports_below(first.objective * 1.02)),
                        _outcome(sess.solve(overlap=(first.support, 2)))]
    assert out[1] == out[2]
    statuses = [o[3] for o in out[1]]
    if node_limit == 40:  # too few nodes for the parts: uncertified, with a valid bound, on both
        assert "work_limit" in statuses
    else:
        assert statuses == ["optimal", "complete", "optimal"]
    assert splits


def _can_fork_here(_):
    return parallel.can_fork()


@pytest.mark.skipif((os.cpu_count() or 1) < 2 or not parallel.can_fork(), reason="needs two CPUs and fork")
def test_a_call_inside_a_map_does_not_start_a_pool_of_its_own():
    """Inside one of a map's processes no pool is started (multiprocessing forbids a daemonic
    process children); a map there forks its own way (the next test)."""
    assert parallel.map_calls(_can_fork_here, [(0,), (1,)], workers=2) == [False, False]
    assert parallel.can_fork()


def _square_where(i):
    return i * i, os.getpid(), parallel._can_fork_nested()


def _inner_map(k, fail):
    if fail:
        return parallel.map_calls(_fail_on_three, [(i,) for i in range(5)], workers=2)
    return os.getpid(), parallel.map_calls(_square_where, [(10 * k + i,) for i in range(5)], workers=2)


def _fail_on_three(i):
    if i == 3:
        raise ValueError("part 3 failed")
    return i


@pytest.mark.skipif((os.cpu_count() or 1) < 2 or not parallel.can_fork() or not sys.platform.startswith("linux"),
                    reason="needs two CPUs, fork and Linux")
def test_a_map_inside_a_maps_call_forks_its_other_calls_with_the_serial_results():
    """A split search inside one of a level's forked roots runs its parts on that process and one
    forked beside it (a long root's parts then use the core its short neighbours left): the
    results in argument order, as one after another; the forked process forks no further; an
    exception of a forked call is raised in the map's process."""
    out = parallel.map_calls(_inner_map, [(0, False), (1, False)], workers=2)
    for k, (pid, inner) in enumerate(out):
        assert [sq for sq, _, _ in inner] == [(10 * k + i) ** 2 for i in range(5)]
        here = {where for _, where, _ in inner[0::2]}
        beside = {where for _, where, _ in inner[1::2]}
        assert here == {pid} and len(beside) == 1 and beside != here  # calls 1, 3 on one forked process
        assert not any(nested for _, where, nested in inner if where != pid)
    with pytest.raises(ValueError, match="part 3 failed"):
        parallel.map_calls(_inner_map, [(0, True), (1, True)], workers=2)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_top_r_list_split_or_not_is_the_brute_force_one(workers, splits):
    """The whole top-R list (levels, their roots on ``workers`` forked processes, the split searches
    inside them run one after another) equals the R smallest of the brute-force enumeration, in
    canonical order, split or not."""
    from dpbench.core import toplist as _swaps
    from helpers.exact import copies_problem, enumerate_all, highs_trial

    problem = copies_problem(3, p=16, s=4)
    R = 120
    out = []
    for parts in (1, 2):
        trial = highs_trial(problem, 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0, split_parts=parts, split_after=3,
                            workers=workers)
        lst = _swaps.top_list(trial, R, enum_limit=0, workers=workers)
        assert lst.certified, lst.diagnostics
        out.append(lst)
    S, sc = enumerate_all(trial)
    for lst in out:
        np.testing.assert_array_equal(lst.supports, S[:R])
        np.testing.assert_allclose(lst.scores, sc[:R], rtol=1e-12)
    assert splits  # searches of this process split (those of forked roots cannot report here)


def _split_outcome(score, workers):
    return _outcome(_session(score, 2, 10, workers).solve())


def test_inside_a_dask_task_the_parts_become_cluster_tasks_with_the_serial_answer():
    """Under ``--backend dask`` the parts of a split search are tasks of the cluster (two per split),
    with the answer, bound, status and node count of the parts run one after another, in a task
    or in this process.

    What a task is sent travels in band (:func:`dpbench.core.oracle.parallel.in_band`): sent as
    dask's own frames, an array could arrive at an odd byte offset, and this search then took 276
    nodes in a worker instead of 272 here (issue 22, sessions 21-23).
    """
    distributed = pytest.importorskip("dask.distributed")
    score = noise_problem(7, 0.1, n=30, p=20)
    here = _split_outcome(score, 1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        serial = client.submit(_split_outcome, score, 1, pure=False).result()
        with distributed.get_task_stream(client) as stream:
            spread = client.submit(_split_outcome, score, 2, pure=False).result()
        parts = {t["key"] for t in stream.data if str(t["key"]).startswith("_call_in_band-")}
    assert parts and len(parts) % 2 == 0
    assert spread == serial == here and serial[3] == "optimal"



def _wait_for(path):
    for _ in range(600):
        if os.path.exists(path):
            return
        time.sleep(0.05)


def _note_pid(note):
    """Write this process's pid to ``note`` whole (written aside, then renamed): a reader that sees
    the file sees the pid."""
    with open(note + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(note + ".tmp", note)


def _gone(pid):
    for _ in range(100):  # the kernel signals at once; allow the reaping
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _part_or_stop(i, note):
    if i == 1:  # the forked part: say where it runs, then outlive any test
        _note_pid(note)
        time.sleep(120)
        return i
    _wait_for(note)  # the map's own part fails while the forked one runs
    raise RuntimeError("stop the parts")


def _inner_stops(note):
    return parallel.map_calls(_part_or_stop, [(0, note), (1, note)], workers=2)


@pytest.mark.skipif((os.cpu_count() or 1) < 2 or not parallel.can_fork() or not sys.platform.startswith("linux"),
                    reason="needs two CPUs, fork and Linux")
def test_a_part_forked_in_a_maps_process_ends_when_its_process_stops(tmp_path):
    """When the map's own part raises, the part it forked is killed at once (not awaited); and a
    part whose process ends (a stopped map terminates its processes) is killed by the kernel
    (``PR_SET_PDEATHSIG``): no process is left running after a Ctrl-C, a SIGTERM or an error."""
    import multiprocessing as mp

    note = str(tmp_path / "pid")
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match="stop the parts"):
        parallel.map_calls(_inner_stops, [(note,), (str(tmp_path / "unused"),)], workers=2)
    assert time.perf_counter() - t0 < 60 and _gone(int(open(note).read()))

    orphan = str(tmp_path / "orphan")
    proc = mp.get_context("fork").Process(target=_fork_and_end, args=(orphan,))
    proc.start()
    proc.join(30)
    _wait_for(orphan)
    assert _gone(int(open(orphan).read()))


def _fork_and_end(note):
    """A process that forks a part as a map's process would, then ends at once."""
    parent = os.getpid()
    if os.fork() == 0:
        parallel._end_with_parent(parent)
        _note_pid(note)
        time.sleep(120)
        os._exit(0)
    _wait_for(note)
    os._exit(0)
