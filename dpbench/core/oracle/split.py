"""One long branch-and-bound search on the machine's cores: its open nodes dealt out into parts.

Issue 22, item 3 ("node evaluation on the machine's cores ... results identical to a serial
run"). The roots of a level already run side by side (:mod:`dpbench.core.oracle.parallel`),
but a search with one root -- every optimum call, a level with all of S1 fixed out -- ran on one
core. Here a search that is still open after ``split_after`` nodes stops, and its open nodes,
in heap order (bound, then push order), are dealt round-robin into ``split_parts`` parts. The
nodes of a best-first search are disjoint sets of supports, so each part is a search of its
own, continued by the same loop (:meth:`~dpbench.core.oracle.branch_and_bound.BranchAndBound._bnb_walk`)
from the state of the split:

* its own copy of the target (the incumbent or the threshold at the split; a better incumbent
  or a lower rank threshold found by one part does not reach the others);
* an equal share of the nodes left under ``node_limit`` and of the node relaxations left;
* a copy of the session's caches as they were at the split (:func:`_detached`), so it reads
  the same numbers in a forked process, a dask task or this one.

A part is therefore a deterministic function of the split, and the parts run on up to
``workers`` processes (:func:`~dpbench.core.oracle.parallel.map_calls`) with the same
answer, node counts and certification for any number of workers. The parts' targets are
merged into the search's (:meth:`~dpbench.core.oracle.targets._BestTarget.merge`): the
canonical optimum among every part's ties, or the union of every part's supports below the
threshold. Dealing the heap round-robin balances the parts because a long search's open nodes
are many small subtrees (gravier's optimum, ``standardize``, Lambda = 10: after 3 000 nodes the
heap holds 21 933 nodes, and none of their subtrees takes more than 495 of the 38 016 nodes left;
dealt into two parts they take 18 900 and 19 116; docs/performance.md, session 21).
"""

from __future__ import annotations

import copy
import itertools

import numpy as np

from dpbench.core.oracle.limits import SPLIT_PARTS_MAX
from dpbench.core.oracle.parallel import map_calls

__all__ = ["search_parts"]

#: Worst status first: a search is as uncertified as its least certified part.
_STATUS_ORDER = ("time_limit", "work_limit", "stopped", "done")


def _detached(session):
    """A shallow copy of ``session`` whose caches and warm starts are its own copies.

    A search writes to its session only these (value caches filled on demand, the warm-start
    window and the relaxation budget); everything else it reads. Giving each part a copy taken
    at the split makes a part in this process see exactly what a forked part sees.
    """
    part = copy.copy(session)
    for name in ("_row_cache", "_fcuts", "_fdiag", "_tops_cache"):
        setattr(part, name, dict(getattr(session, name)))
    part._relax_alphas = list(session._relax_alphas)
    return part


def _run_part(session, entries, tick0, target, budget, relax_budget, leaf_limit, nodes):
    """One part of a split search: ``(target, status, nodes, rest)`` (module docstring)."""
    part = _detached(session)
    part._relax_budget = relax_budget
    target = target.part()
    heap = list(entries)  # sorted, so already a heap
    status, nodes, pruned = part._bnb_walk(heap, itertools.count(tick0), target, budget, leaf_limit, nodes, np.inf)
    return target, status, nodes, min(heap[0][0] if heap else np.inf, pruned)


def search_parts(session, heap, tick0, target, budget, leaf_limit, nodes, pruned):
    """Finish a search that stopped with status ``"split"`` in ``session.split_parts`` parts (at most
    :data:`~dpbench.core.oracle.limits.SPLIT_PARTS_MAX` and the number of open nodes).

    Parameters
    ----------
    session : OASession
        The searching session (read: ``split_parts``, ``workers``, ``_relax_budget``).
    heap : list
        Its open nodes (entries of :meth:`~dpbench.core.oracle.branch_and_bound.BranchAndBound._bnb_search`).
    tick0 : int
        A push counter value not used by any entry of ``heap``.
    target : _BestTarget or _BelowTarget
        The search's target; the parts' targets are merged into it.
    budget : Budget
        The search's limits; each part gets an equal share of the nodes left.
    leaf_limit : int
    nodes : int
        Nodes done before the split.
    pruned : float
        Smallest bound discarded before the split.

    Returns
    -------
    rest, status, nodes
        As :meth:`~dpbench.core.oracle.branch_and_bound.BranchAndBound._bnb_search`: the smallest
        bound left by any part, the least certified part's status, all nodes done.
    """
    k = min(session.split_parts, SPLIT_PARTS_MAX, len(heap))  # no empty part
    entries = sorted(heap)  # bound, then the unique push counter: a total order
    share, extra = divmod(max(budget.node_limit - nodes, 0), k)
    relax, relax_extra = divmod(max(session._relax_budget, 0), k)
    args = []
    for i in range(k):
        part_budget = copy.copy(budget)
        part_budget.node_limit = nodes + share + (i < extra)
        args.append((session, entries[i::k], tick0, target, part_budget, relax + (i < relax_extra), leaf_limit, nodes))
    results = map_calls(_run_part, args, session.workers)
    rest, done, statuses = pruned, nodes, []
    for part_target, status, part_nodes, part_rest in results:
        target.merge(part_target)
        rest = min(rest, part_rest)
        done += part_nodes - nodes
        statuses.append(status)
    status = min(statuses, key=_STATUS_ORDER.index)
    return rest, status, done
