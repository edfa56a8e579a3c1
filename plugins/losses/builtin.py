"""Losses ``least-squares`` and ``hinge``: the two built-in scores (issue 16).

The implementations live in the host (:mod:`dpbench.core.score.loss`, layer 2) because the trial
and the oracles of the host use them; this module only registers them, exactly as a third
party would register its own loss.
"""

from dpbench.api import Hinge, LeastSquares, hookimpl


@hookimpl
def dpbench_losses():
    return [LeastSquares, Hinge]
