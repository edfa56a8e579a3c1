"""dpbench: benchmark differentially private best-subset (variable) selection.

The host: plugin hooks (:mod:`dpbench.hookspecs`), the shared score
(:mod:`dpbench.score`), log-space mechanism utilities (:mod:`dpbench.privacy.exponential`),
seeding (:mod:`dpbench.seeding`), the runner, the results store and the CLI.
"""

from .base import (DP_TYPES, REPLACE_ONE, Dataset, DatasetArrays, Draws, Generator, OracleResult, OracleSession, Param, Selector, Solver)
from .trial import Trial
from .errors import DPBenchError, UnknownNameError, UserInputError
from .hookspecs import hookimpl
from .problem import Problem, as_support
from .score import RidgeScore
from .privacy.sensitivity import sensitivity

__version__ = "0.1.0"

__all__ = [
    "DP_TYPES", "REPLACE_ONE", "Dataset", "DatasetArrays", "Draws", "Generator", "OracleResult",
    "OracleSession", "Param", "Selector", "Solver", "Trial", "DPBenchError", "UnknownNameError",
    "UserInputError", "hookimpl", "Problem", "as_support", "RidgeScore", "sensitivity",
]


def __getattr__(name):
    # The Python API imports scikit-learn; load it only when asked for.
    if name in ("select", "DPSubsetSelector", "SelectionResult"):
        from . import estimator

        return getattr(estimator, name)
    raise AttributeError(f"module 'dpbench' has no attribute {name!r}")
