"""Solver ``generic``: the certified branch-and-bound oracle for losses with a dual bound.

The session is :class:`dpbench.core.oracle.generic.GenericSession` (host, layer 4). It serves the
losses whose ``oracle`` kind is ``"generic"`` (the hinge loss); a trial with such a loss and
a least-squares-only ``--solver`` uses it automatically (:meth:`dpbench.bench.trial.Trial.oracle`).
"""

from dpbench.api import GenericSession, Param, Solver, hookimpl


class Generic(Solver):
    """Depth-first branch and bound with separable dual bounds; deterministic node limit."""

    name = "generic"
    summary = ("branch and bound on the loss's separable dual bound with leaf enumeration "
               "(hinge loss); deterministic node limit")
    handles_lam_zero = False
    losses = ("generic",)
    params = {
        "max_nodes": Param(100_000, "nodes per call before it stops uncertified (deterministic)", int),
        "leaf_size": Param(4096, "enumerate nodes with at most this many completions", int),
        "pool": Param(8, "dual vectors kept for the bounds", int),
    }

    def session(self, score, s):
        c = self.config
        return GenericSession(score, s, max_nodes=c["max_nodes"], leaf_size=c["leaf_size"], pool=c["pool"])


@hookimpl
def dpbench_solvers():
    return [Generic]
