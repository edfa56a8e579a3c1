"""Independent oracle calls of one trial on the machine's cores (issue 22, "use both cores").

The roots of a swap level (:func:`dpbench.core.toplist.roots.threshold_by_roots`) are
disjoint subproblems: given the same threshold and known scores, each root's search is a
deterministic function of its own arguments. :func:`map_calls` runs such calls on up to
``workers`` forked processes and returns their results in argument order, so the answer, the
node counts and the certification are the same for any ``workers`` and any scheduling.

Processes, not threads: a node's Python-level work holds the GIL. ``fork`` copies the trial's
session (its score, Gram-row and cut caches) without pickling it; the children only compute,
and what a threshold search changes in a session is caches, so running a call in a child or
in the caller gives the same result. Where forking is unavailable or unsafe -- no ``fork``
start method (Windows), a daemonic process (a dask or multiprocessing worker may not have
children), a thread other than the main one (a dask worker's task threads) -- the calls run
one after another, with the same results.
The number of processes is bounded by ``workers``, the number of calls and the machine's
CPU count.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from concurrent.futures import ProcessPoolExecutor

__all__ = ["can_fork", "map_calls", "usable_workers"]

#: (function, argument tuples) of the running map, read by the forked children.
_TASK = None


def _run(i):
    fn, args = _TASK
    return fn(*args[i])


def can_fork() -> bool:
    """Whether this call may fork workers: the ``fork`` start method exists, the process is not
    daemonic, and this is its main thread (a fork copies only the calling thread, so a task
    thread of a dask worker, with other threads holding locks, stays serial)."""
    return ("fork" in mp.get_all_start_methods() and not mp.current_process().daemon
            and threading.current_thread() is threading.main_thread())


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
        Most processes to use (see :func:`usable_workers`); 1 runs in this process.

    Returns
    -------
    list
        The results in the order of ``args`` (pickled back from the children).

    Raises
    ------
    Exception
        Whatever ``fn`` raised, re-raised here.
    """
    global _TASK
    args = list(args)
    n = usable_workers(workers, len(args))
    if n == 1:
        return [fn(*a) for a in args]
    _TASK = (fn, args)
    try:
        with ProcessPoolExecutor(n, mp_context=mp.get_context("fork")) as ex:
            return list(ex.map(_run, range(len(args))))
    finally:
        _TASK = None
