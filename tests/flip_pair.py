"""A neighbouring pair on which the optimum S1 flips (twin columns 2 and 3; docs/methods/mistakes.md).

p = 7, s = 2, n = 53, Lambda = 1, b_x = b_y = 0.5, r = 1.1: columns 2 and 3 are near copies,
so R({0, 2}) and R({0, 3}) almost tie; replacing row 0 by the corner vector
x = (-1, -1, 1, -1, -1, 1, -1)/2, y = -1/2 moves S1 from {0, 2} to {0, 3}. Found by scanning
the 2^8 corner rows of seeds 0..11 for the largest privacy loss of plain ``mistakes`` at
epsilon = 1 (1.51 epsilon; the tests re-check the flip and the loss).
"""

import numpy as np

from dpbench.api import Problem
from dpbench.bench.trial import Trial
from dpbench.bench.registry import PluginInstances

B, RR, LAM = 0.5, 1.1, 1.0
CORNER = np.array([-0.5, -0.5, 0.5, -0.5, -0.5, 0.5, -0.5])
CORNER_Y = -0.5


def flip_pair(seed=9, n=53, p=7):
    """The two neighbouring (clipped) problems (replace-one: row 0 differs)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * 0.5
    X[:, 3] = X[:, 2] + 0.02 * rng.standard_normal(n)
    y = 2 * (X[:, 0] + X[:, 2]) / np.sqrt(2) + 0.1 * rng.standard_normal(n)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = CORNER, CORNER_Y
    return (Problem(X, y, 2, true_support=[0, 2]).clipped(B, B),
            Problem(X2, y2, 2, true_support=[0, 2]).clipped(B, B))


def trial_of(problem, lam=LAM, delta=0.0):
    return Trial(problem, b_x=B, b_y=B, r=RR, lam=lam, solver="enumerate", delta=delta, instances=PluginInstances())
