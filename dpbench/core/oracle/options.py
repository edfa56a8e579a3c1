"""The options of an outer-approximation oracle session, in one frozen dataclass."""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpbench.core.oracle.limits import (CHILD_BATCH, FIRST_MASTER_NODES, GERSHGORIN_NODES, MASTER_ITERATIONS,
                                        MASTER_NODE_LIMIT, NODE_LIMIT, OPEN_PAIRS, PAIR_LEAF, RELAX_EVERY_NODE, RELAX_NODES,
                                        SAFETY_TIME_LIMIT, SPLIT_AFTER, SPLIT_PARTS)


@dataclass(frozen=True)
class OracleOptions:
    """The options of an outer-approximation session, each written once (the backends' ``OA_PARAMS``
    expose the user-facing ones as ``--param SOLVER.KEY=VALUE``).

    Every limit is a count, so results never depend on the machine's speed or load; only
    ``safety_time_limit`` is wall-clock, and a call that reaches it is reported uncertified.

    Parameters
    ----------
    screen : bool
        Safe screening on/off (off: the master runs over all p features).
    max_cut_mb : float
        Memory cap (MB) of the global cut pool, the Gram-row cache and the node cuts.
    master_cuts : int
        Pool cuts seeded into each master MILP (the strongest at the incumbent).
    screen_cuts, neighbour_cuts : int
        Cuts used for screening; cuts added at neighbours of a new incumbent.
    max_swaps : int
        Rounds of the swap local search.
    enum_limit : int
        Calls with at most this many feasible supports are enumerated exactly.
    leaf_limit : int
        Branch-and-bound nodes with at most this many completions are scored exhaustively.
    pair_leaf_limit : int
        A node with two features left and at most this many pairs is a leaf: its pairs are scanned
        whole from the cached Gram (when the score has one and the bar is finite) instead of the
        node solving its relaxation and branching (0: ``leaf_limit`` alone decides).
    open_pairs : int
        A node with two features left scores the pairs of its open children itself when they are
        at most this many (0: its children become nodes with one feature left).
    child_batch : int
        A node with at least three features left and k open children pushes
        max(child_batch, ceil(k / TAIL_SHARE)) of them (TAIL_SHARE = 4) and the rest of its
        candidates as one tail node, which solves its own relaxation (only while the call's
        relaxation budget lasts; 0: every open child is pushed).
    node_limit, master_iterations, master_node_limit, gershgorin_nodes, first_master_nodes : int
        Work limits: branch-and-bound nodes per call, OA master solves per call, MILP nodes of one
        master solve, nodes of the Schur/Gershgorin search, MILP nodes of the probe master
        (:mod:`dpbench.core.oracle.limits`).
    safety_time_limit : float
        Wall-clock safety net in seconds per call (runaway calls only; status ``time_limit``).
    gershgorin : bool
        Schur-complement/Gershgorin ridge bound in the overlap branch and bound.
    relax_after, relax_cand, relax_bnb, relax_bnb_max, relax_overlap_after
        When the k-support relaxation runs (counts).
    relax_nodes, relax_overlap_nodes : int
        Nodes per call of the survivors' branch and bound (optimum calls and threshold searches
        without an overlap constraint), resp. of overlap calls, that solve their own k-support
        relaxation; later nodes are bounded from their parent's dual point only (O(n p), no
        solve), which leaves their bounds close to the parent's. Counts: deterministic.
        Defaults: :data:`RELAX_EVERY_NODE` (every node; since issue 22's eleventh session) and
        :data:`RELAX_NODES` (20 000; 2 000 until the eighth session; see docs/performance.md).
    relax_method : {"prox", "pg"}
        Node relaxation: active-set FISTA with the exact k-support prox, or the former projected gradient.
    split_parts, split_after : int
        A branch-and-bound search still open after ``split_after`` nodes finishes in
        ``split_parts`` parts, each with an equal share of the nodes left (1: never split;
        :mod:`~dpbench.core.oracle.split`). Counts: the answer, the node counts and the
        certification do not depend on ``workers``.
    workers : int
        Processes that run a split search's parts (at most the machine's CPUs; 1: one after
        another in the calling process).
    """

    screen: bool = True
    max_cut_mb: float = 200.0
    master_cuts: int = 40
    screen_cuts: int = 16
    neighbour_cuts: int = 4
    max_swaps: int = 100
    enum_limit: int = 1_500_000
    leaf_limit: int = 20_000
    pair_leaf_limit: int = PAIR_LEAF
    open_pairs: int = OPEN_PAIRS
    child_batch: int = CHILD_BATCH
    node_limit: int = NODE_LIMIT
    master_iterations: int = MASTER_ITERATIONS
    master_node_limit: int = MASTER_NODE_LIMIT
    safety_time_limit: float = SAFETY_TIME_LIMIT
    gershgorin: bool = True
    relax_after: int = 1
    relax_cand: int = 200
    relax_bnb: int = 1000
    relax_bnb_max: float = math.inf
    relax_nodes: int = RELAX_EVERY_NODE
    relax_overlap_nodes: int = RELAX_NODES
    relax_overlap_after: int = 300
    gershgorin_nodes: int = GERSHGORIN_NODES
    first_master_nodes: int = FIRST_MASTER_NODES
    relax_method: str = "prox"
    split_parts: int = SPLIT_PARTS
    split_after: int = SPLIT_AFTER
    workers: int = SPLIT_PARTS

    def __post_init__(self):
        for name in ("node_limit", "master_iterations", "master_node_limit", "gershgorin_nodes", "first_master_nodes",
                     "split_parts", "split_after", "workers"):
            object.__setattr__(self, name, int(getattr(self, name)))
