"""The contract of a loss plugin (hook ``dpbench_losses``; issue 16).

Re-exported by :mod:`dpbench.api`: the plugin manager checks registered loss
classes against it. The built-in losses (least squares, hinge) are in
:mod:`dpbench.core.score.loss`.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from dpbench.core.params import Configurable
from dpbench.core.problem import Problem


class Loss(Configurable):
    """A loss whose best-subset score the exponential mechanisms use (plugin kind ``loss``).

    Subclasses set ``name``, ``summary``, ``response`` (``"real"`` or ``"binary"``: labels in
    {-1, +1}), ``oracle`` and implement :meth:`score` and :meth:`sensitivity`.
    """

    kind: ClassVar[str] = "loss"
    response: ClassVar[str] = "real"
    oracle: ClassVar[str] = "generic"

    def prepare(self, problem: Problem, b_x: float, b_y: float) -> Problem:
        """The clipped problem the score is computed on (default: clip X to b_x and y to b_y)."""
        return problem.clipped(b_x, b_y)

    def score(self, X: np.ndarray, y: np.ndarray, lam: float, r: float):
        """The batched score on clipped data: ``score(supports (B, s)) -> (B,)``."""
        raise NotImplementedError

    def sensitivity(self, s: int, n: int, b_x: float, b_y: float, r: float, kind: str = "tight") -> float:
        """Global sensitivity Delta of the score under replace-one neighbouring data sets."""
        raise NotImplementedError

    def score_bound(self, n: int, b_y: float) -> float:
        """An upper bound on R(S, D) for every support and every (clipped) data set."""
        raise NotImplementedError

    @classmethod
    def describe(cls) -> dict:
        d = super().describe()
        d.update(response=cls.response, oracle=cls.oracle)
        return d
