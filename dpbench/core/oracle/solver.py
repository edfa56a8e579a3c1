"""The base class of the outer-approximation backends: parameters and session declared once."""

from __future__ import annotations

from dpbench.core.contracts.oracle import Solver
from dpbench.core.params import Param
from dpbench.core.oracle.constraints import require_positive_lam
from dpbench.core.oracle.limits import PAIR_LEAF_MAX, SPLIT_PARTS_MAX
from dpbench.core.oracle.options import OracleOptions
from dpbench.core.oracle.session import OASession

#: The range of a count parameter (a work limit or a size): negative values are refused when the
#: solver is configured, before any trial (0 is allowed: no nodes, no relaxations, ...).
COUNT = (0, None, "both")

#: Parameters of every outer-approximation backend (``highs``, ``gurobi``, ``pyomo``): the user-facing
#: :class:`OracleOptions`, with their defaults taken from it.
OA_PARAMS = {
    "screen": Param(OracleOptions.screen, "safe screening of features that cannot enter an optimal support", bool),
    "max_cut_mb": Param(OracleOptions.max_cut_mb, "memory cap (MB) of the global cut pool kept across calls", float),
    "master_cuts": Param(OracleOptions.master_cuts, "pool cuts seeded into each master MILP (strongest at the incumbent)",
                         int, interval=COUNT),
    "enum_limit": Param(OracleOptions.enum_limit, "calls with at most this many feasible supports are enumerated exactly",
                        int, interval=COUNT),
    "leaf_limit": Param(OracleOptions.leaf_limit, "branch-and-bound nodes with at most this many completions are scored "
                        "exhaustively instead of branching (tests and tuning)", int, interval=COUNT),
    "pair_leaf_limit": Param(OracleOptions.pair_leaf_limit, "a branch-and-bound node with two features left and at "
                             "most this many pairs scans them all from the cached Gram instead of branching "
                             "(0 = leaf_limit alone decides; at most 2^24, which bounds a leaf's memory; deterministic)", int,
                             interval=(0, PAIR_LEAF_MAX, "both")),
    "open_pairs": Param(OracleOptions.open_pairs, "a branch-and-bound node with two features left scores its open "
                        "children's pairs itself when they are at most this many (0 = its children become nodes; "
                        "deterministic)", int, interval=COUNT),
    "child_batch": Param(OracleOptions.child_batch, "a branch-and-bound node with three or more features left pushes "
                         "at most max(child_batch, k/4) of its k open children and the rest as one tail node that "
                         "solves its own relaxation (0 = every open child; deterministic)", int, interval=COUNT),
    "gershgorin": Param(OracleOptions.gershgorin, "Schur-complement/Gershgorin ridge bound in the branch and bound of overlap "
                        "calls (completion_bounds); off = cut bounds only (ablation)", bool),
    "gershgorin_nodes": Param(OracleOptions.gershgorin_nodes, "work limit: nodes of the Schur/Gershgorin branch and bound "
                              "an unconstrained call tries when the k-support relaxation leaves a gap "
                              "(0 = never; deterministic)", int, interval=COUNT),
    "node_limit": Param(OracleOptions.node_limit, "work limit: branch-and-bound nodes per oracle call (deterministic; "
                        "a call that reaches it returns status work_limit, uncertified)", int, interval=COUNT),
    "master_iterations": Param(OracleOptions.master_iterations, "work limit: outer-approximation master solves per "
                               "oracle call (deterministic; status work_limit)", int, interval=COUNT),
    "master_node_limit": Param(OracleOptions.master_node_limit, "work limit: MILP nodes of one master solve, passed to "
                               "the backend (deterministic with one thread)", int, interval=COUNT),
    "relax_nodes": Param(OracleOptions.relax_nodes, "work limit: nodes of one call's branch and bound (optimum calls, "
                         "threshold searches) that solve their own k-support relaxation; later nodes reuse their "
                         "parent's dual point (deterministic; default: every node)", int, interval=COUNT),
    "relax_overlap_nodes": Param(OracleOptions.relax_overlap_nodes, "work limit: the same for calls with an overlap "
                                 "constraint (the swap levels of topr and mistakes; deterministic)", int, interval=COUNT),
    "relax_method": Param(OracleOptions.relax_method, "node relaxation of the branch and bound: 'prox' (active-set FISTA with the "
                          "exact k-support prox, warm-started from the parent) or 'pg' (the former projected "
                          "gradient on the relaxed indicators; comparisons)", str),
    "split_parts": Param(OracleOptions.split_parts, "a branch-and-bound search still open after split_after nodes "
                         "finishes in this many parts, each with an equal share of the nodes left (0 or 1 = never "
                         "split; at most 64; deterministic)", int, interval=(0, SPLIT_PARTS_MAX, "both")),
    "split_after": Param(OracleOptions.split_after, "nodes a branch-and-bound search runs before it splits "
                         "(deterministic)", int, interval=COUNT),
    "workers": Param(OracleOptions.workers, "processes that run a split search's parts, at most the machine's CPUs "
                     "(0 or 1 = one after another in the calling process; the results do not depend on it)", int,
                     interval=COUNT),
    "safety_time_limit": Param(OracleOptions.safety_time_limit, "wall-clock safety net in seconds per oracle call; only "
                               "for runaway calls, reported as status time_limit (machine-dependent)", float),
}

#: What the ``dpbench list`` summary of an OA backend says about where the work happens.
OA_SPLIT = ("runs in dpbench: enumeration, branch and bound, screening, swap search, cuts, certification; "
            "runs in the backend: only the OA master MILP")


class OASolver(Solver):
    """Base of the outer-approximation backends: the parameters and the session, once.

    A subclass sets ``name``/``summary`` and implements :meth:`master_solver`, which returns
    the function solving one :class:`MasterMILP`; everything else (enumeration, branch and
    bound, screening, cuts, certification) is :class:`OASession`. Requires lam > 0.
    """

    handles_lam_zero = False
    params = dict(OA_PARAMS)

    def master_solver(self):
        """A callable ``(MasterMILP, time_limit, gap, node_limit) -> MasterResult``.

        ``time_limit``: seconds left on the safety net (None: no limit); ``gap``: the
        relative gap the master must close; ``node_limit``: MILP nodes (deterministic).
        """
        raise NotImplementedError

    def session(self, score, s):
        require_positive_lam(score, self.name)
        return OASession(score, s, self.name, self.master_solver(), OracleOptions(**{k: self.config[k] for k in OA_PARAMS}))
