"""Independent oracle calls of one trial on the machine's cores (issue 22, "use both cores").

The roots of a swap level (:func:`dpbench.core.toplist.roots.threshold_by_roots`) are
disjoint subproblems: given the same threshold and known scores, each root's search is a
deterministic function of its own arguments. :func:`map_calls` runs such calls on up to
``workers`` forked processes and returns their results in argument order, so the answer, the
node counts and the certification are the same for any ``workers`` and any scheduling.

Processes, not threads: a node's Python-level work holds the GIL. ``fork`` copies the trial's
session (its score, Gram-row and cut caches) without pickling it; the children only compute,
and what a threshold search changes in a session is caches, so running a call in a child or
in the caller gives the same result. The number of processes is bounded by ``workers``, the
number of calls and the machine's CPU count. They are a ``multiprocessing`` pool's daemonic
workers: they ignore SIGINT (a terminal's Ctrl-C reaches the whole process group), and when
the caller stops (Ctrl-C, SIGTERM, an error) the pool terminates them at once instead of
waiting for their calls. A map inside one of their calls (a split search in one of a level's
roots) forks its other calls with ``os.fork`` (on Linux, in processes that end with it), so that
a long root's parts use the cores its short neighbours have left.

Inside a task of a dask.distributed cluster (``dpbench compare --backend dask``) the calls
become tasks of that cluster instead (issue 22, item 3: a trial's subtrees spread over the
cluster's workers): the function and its arguments are sent once (pickled in band, the session
with its caches as a fork would copy it, so that its arrays arrive aligned: :func:`in_band`), at
most ``workers`` of the calls run at a time, and the task that asked waits outside the worker's
thread pool (``distributed.worker_client``), so its slot serves the calls. Elsewhere where
forking is unavailable or unsafe -- no ``fork`` start method (Windows), a daemonic process (a
multiprocessing worker may not have children), a thread other than the main one -- the calls run
one after another, with the same results.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import pickle
import signal
import sys
import threading

__all__ = ["can_fork", "in_band", "in_dask_task", "map_calls", "map_calls_beside", "map_session_calls",
           "usable_workers"]

#: (function, argument tuples) of the running map, read by the forked children.
_TASK = None

#: True in a process forked by a map inside a map's call (:func:`_map_in_child`): it forks no further.
_NESTED = False

#: Linux's prctl option that signals a process when its parent ends (``PR_SET_PDEATHSIG``).
_PR_SET_PDEATHSIG = 1


def _call(payload, i):
    """Call ``i`` of a map (``payload`` = (function, argument tuples)), in a child or a cluster task."""
    fn, args = payload
    return fn(*args[i])


def _run(i):
    return _call(_TASK, i)  # forked children read the map from the copied module global


def in_band(obj) -> bytes:
    """``obj`` pickled into one bytes object, the data of its arrays inside the stream.

    What a dask worker receives, dask pickles with each numpy array as a frame of its own, and
    a frame may start at any byte of a received message: an array whose data is not 8-byte
    aligned makes numpy and the compiled kernels take other code paths, whose rounding differs
    in the last bit, and a branch and bound then takes other steps (276 nodes instead of 272 in
    ``tests/oracle/test_split_search.py``: the results would depend on the transport). Unpickled
    with :func:`pickle.loads`, each array gets a buffer of its own, which Python's allocator
    aligns to 16 bytes. Send an object this way wherever its results must not depend on the backend.

    Parameters
    ----------
    obj : object
        Anything :mod:`pickle` can pickle (module-level functions by name).

    Returns
    -------
    bytes
        Its pickle, protocol 5 without out-of-band buffers; :func:`pickle.loads` restores it.
    """
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _call_in_band(blob, i):
    """Call ``i`` of a map sent in band (a cluster task); its result goes back in band too."""
    return in_band(_call(pickle.loads(blob), i))


def _quiet_child():
    """Initializer of a map's forked processes: the caller alone answers Ctrl-C and SIGTERM.

    A terminal's Ctrl-C reaches the whole process group. A child that inherited the caller's
    handlers raised in its task and printed a traceback of its own; here it ignores SIGINT,
    and SIGTERM (what the caller's pool sends when it stops) ends it silently.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _pool(n):
    """``n`` forked processes; leaving the ``with`` block terminates them at once, so a Ctrl-C or a
    SIGTERM of the caller ends the map without waiting for the calls still running."""
    return mp.get_context("fork").Pool(n, initializer=_quiet_child)


def in_dask_task() -> bool:
    """Whether this code runs in a task of a dask.distributed worker.

    A worker has imported ``distributed``; a process that has not is not one, and is spared
    the import (about a second, and its logging set-up) on every run without dask.
    """
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return False
    try:
        distributed.get_worker()
    except ValueError:  # "No worker found": not inside a task
        return False
    return True


def _map_on_dask(fn, args, workers: int) -> list:
    """``[fn(*a) for a in args]`` as tasks of the dask cluster running the current task.

    At most ``workers`` calls are submitted at a time; the results come back in argument
    order, and the first call that raised re-raises here (the calls not yet finished are
    cancelled).
    """
    from distributed import as_completed, worker_client

    with worker_client() as client:  # secede: this task's thread slot serves the calls meanwhile
        [payload] = client.scatter([in_band((fn, args))], hash=False)
        order = iter(range(len(args)))
        index = {}

        def submit(i):
            fut = client.submit(_call_in_band, payload, i, pure=False)
            index[fut.key] = i
            return fut

        running = as_completed([submit(i) for i in itertools.islice(order, workers)])
        results = [None] * len(args)
        try:
            for fut in running:
                results[index[fut.key]] = pickle.loads(fut.result())  # re-raises the call's exception
                nxt = next(order, None)
                if nxt is not None:
                    running.add(submit(nxt))
        except BaseException:
            client.cancel(list(running.futures))
            raise
        return results


def can_fork() -> bool:
    """Whether this call may fork workers: the ``fork`` start method exists, the process is not
    daemonic, this is its main thread (a fork copies only the calling thread, so a task
    thread of a dask worker, with other threads holding locks, stays serial), and no map of this
    module is running here or in a parent (a forked child inherits ``_TASK``): the calls of a map
    fill the processes it asked for. A map inside one of them (a split search in one of a level's
    roots, :mod:`dpbench.core.oracle.split`) forks its own way instead (:func:`_can_fork_nested`)."""
    return ("fork" in mp.get_all_start_methods() and not mp.current_process().daemon
            and threading.current_thread() is threading.main_thread() and _TASK is None)


def _can_fork_nested() -> bool:
    """Whether a map inside one of a map's forked calls may fork too (:func:`_map_in_child`).

    A level's roots run on a map's processes, and a long root splits its search into parts
    (:mod:`dpbench.core.oracle.split`). When the level's other roots are short, their process
    falls idle while the long root's parts run one after another (gravier's level 4 at the
    defaults: one root of five runs alone for about four of its five minutes). Only in a map's
    own process (a daemonic pool worker, where multiprocessing forbids children), only on Linux,
    where a process forked here can be made to end with its parent, and not again in a process
    forked for a part.
    """
    return (_TASK is not None and not _NESTED and sys.platform.startswith("linux")
            and mp.current_process().daemon and threading.current_thread() is threading.main_thread())


def _end_with_parent(parent: int) -> None:
    """In a process forked by :func:`_map_in_child`: be killed when ``parent`` ends (a stopped map
    terminates its pool processes, not their children), and end now if it already has."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _map_in_child(fn, args, n):
    """``[fn(*a) for a in args]`` in a map's process: calls ``j, j + n, ...`` on the j-th of ``n - 1``
    processes forked here (``os.fork``; results pickled back through a pipe), the others here.

    The calls are deterministic functions of their arguments, so the results equal those of the
    calls run one after another. At most ``n - 1`` processes are added to the map's (``n`` is the
    nested map's own ``workers``, capped by the CPU count), and they fork no further.
    """
    global _NESTED
    parent = os.getpid()
    forked = []
    try:
        for j in range(1, n):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the forked process: its calls, then its results down the pipe, then exit
                os.close(r)
                code = 0
                try:
                    _end_with_parent(parent)
                    _NESTED = True
                    try:
                        out = ("ok", [fn(*a) for a in args[j::n]])
                    except Exception as exc:  # sent back and raised by the map's process
                        out = ("error", exc)
                    with os.fdopen(w, "wb") as pipe:
                        pickle.dump(out, pipe, protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)  # never return into the caller's stack, nor run its exit handlers
            os.close(w)
            forked.append((pid, r))
        results = [None] * len(args)
        results[0::n] = [fn(*a) for a in args[0::n]]
        for j, (pid, r) in enumerate(forked, start=1):
            forked[j - 1] = (pid, None)  # its pipe is closed here, whatever happens
            with os.fdopen(r, "rb") as pipe:
                try:
                    status, out = pickle.load(pipe)
                except (EOFError, pickle.UnpicklingError):  # it ended without writing all (killed)
                    status, out = "error", RuntimeError("a forked part of a split search ended without a result")
            os.waitpid(pid, 0)
            if status == "error":
                raise out
            results[j::n] = out
        return results
    finally:
        for pid, r in forked:
            if r is not None:  # stopped early (an error here): end and reap the processes still running
                os.close(r)
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass


def usable_workers(workers: int, calls: int) -> int:
    """Processes :func:`map_calls` would use: ``workers`` capped by ``calls`` and the CPU count, 1 without fork."""
    n = max(1, min(int(workers), int(calls), os.cpu_count() or 1))
    return n if n > 1 and can_fork() else 1


def map_calls(fn, args, workers: int = 1) -> list:
    """``[fn(*a) for a in args]``, on up to ``workers`` forked processes.

    Parameters
    ----------
    fn : callable
        A deterministic function of its arguments (it may read, not rely on changing, the
        caller's objects: a child's changes are not seen by the caller).
    args : sequence of tuple
    workers : int
        Most processes to use (see :func:`usable_workers`); 1 runs in this process. Inside a
        dask task, the most calls running at a time on the cluster (not capped by this
        machine's CPU count: the cluster's workers bound them).

    Returns
    -------
    list
        The results in the order of ``args`` (pickled back from the children or the cluster).

    Raises
    ------
    Exception
        Whatever ``fn`` raised, re-raised here.
    """
    global _TASK
    args = list(args)
    if min(int(workers), len(args)) > 1 and in_dask_task():
        return _map_on_dask(fn, args, min(int(workers), len(args)))
    n = usable_workers(workers, len(args))
    if n == 1:
        nested = min(int(workers), len(args), os.cpu_count() or 1)
        if nested > 1 and _can_fork_nested():
            return _map_in_child(fn, args, nested)
        return [fn(*a) for a in args]
    _TASK = (fn, args)
    try:
        with _pool(n) as pool:
            return pool.map(_run, range(len(args)), chunksize=1)
    finally:
        _TASK = None


def map_calls_beside(fn, args, workers: int, here):
    """``(here(), [fn(*a) for a in args])``, the calls on up to ``workers - 1`` forked processes
    while ``here()`` runs in this process.

    For a call whose effects on the caller's objects must stay (an optimum call adds cuts to
    its session that later calls read) beside calls that change nothing but caches: the
    caller's objects then end as after a serial run, for any ``workers``. The calls' processes
    are forked before ``here()`` starts, so they see the caller's objects as ``here()`` found
    them; run in this process (one worker, no fork, or inside a dask task, where the calls are
    the cluster's tasks), the calls come first, for the same reason.

    Parameters
    ----------
    fn, args
        As for :func:`map_calls`.
    workers : int
        Processes in all, this one included.
    here : callable
        Called with no arguments, in this process.

    Returns
    -------
    tuple
        ``here()``'s result and the calls' results in the order of ``args``.
    """
    global _TASK
    args = list(args)
    n = min(int(workers) - 1, len(args), (os.cpu_count() or 1) - 1)
    if n < 1 or not can_fork() or in_dask_task():
        results = map_calls(fn, args, workers)
        return here(), results
    _TASK = (fn, args)
    try:
        with _pool(n) as pool:  # forked now, before here() runs
            pending = [pool.apply_async(_run, (i,)) for i in range(len(args))]
            out = here()
            return out, [r.get() for r in pending]
    finally:
        _TASK = None


def _keeping_caches(fn, session, *args):
    """``fn(session, *args)`` and what it added to the session's data caches (a copy's are lost)."""
    caches = getattr(session, "data_caches", lambda: {})  # optional: a wrapper session may lack it
    before = caches()
    out = fn(session, *args)
    # only what this call added: what the copy inherited is not sent back again
    return out, {k: v for k, v in caches().items() if k not in before}


def map_session_calls(session, fn, args, workers: int = 1, here=None):
    """``[fn(session, *a) for a in args]`` by :func:`map_calls`, keeping what the calls learn of the data.

    A call in a forked child or a cluster task runs on a copy of ``session``; what it computed
    from the data alone (``session.data_caches()``, e.g. Gram-row tops over all p) comes back and
    is installed in ``session`` (``adopt_data_caches``), so later calls do not compute it again.
    Results are those of :func:`map_calls`, in the order of ``args``; with ``here`` (a callable
    of no arguments), ``(here(), results)`` by :func:`map_calls_beside`.
    """
    calls = [(fn, session, *a) for a in args]
    if here is None:
        out, results = None, map_calls(_keeping_caches, calls, workers)
    else:
        out, results = map_calls_beside(_keeping_caches, calls, workers, here)
    adopt = getattr(session, "adopt_data_caches", None)  # optional: a wrapper session may lack it
    for _, caches in results:
        if caches and adopt is not None:
            adopt(caches)
    results = [res for res, _ in results]
    return results if here is None else (out, results)
