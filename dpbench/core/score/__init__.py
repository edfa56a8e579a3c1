"""The shared score R(S, D) of every exponential-mechanism selector and oracle."""

from dpbench.core.score.l1 import solve_l1_blocks
from dpbench.core.score.ridge import GRAM_LIMIT, RidgeScore, solve_blocks

__all__ = ["GRAM_LIMIT", "RidgeScore", "solve_blocks", "solve_l1_blocks"]
